//! Files that hold a secret — the operator's key, the secrets key, the internal server's
//! token — read only when no one but predex's user can read them, and the internal token
//! made at first start. What they hold is never logged.

use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

/// The contents of the secret file `path` (the setting `setting` names it), trimmed;
/// refused when its group or other users may read it. A file in systemd's credentials
/// directory is exempt: systemd restricts it to the unit's user (by an ACL, which shows in
/// the group bits).
pub fn read_private(path: &Path, setting: &str) -> anyhow::Result<String> {
    let meta = std::fs::metadata(path).with_context(|| format!("read the {setting} {}", path.display()))?;
    if meta.mode() & 0o044 != 0 && !in_credentials_directory(path) {
        bail!(
            "the {setting} {} is readable by other users (mode {:o}): chmod 600 it, or pass it as a systemd credential",
            path.display(),
            meta.mode() & 0o777
        );
    }
    let text = std::fs::read_to_string(path).with_context(|| format!("read the {setting} {}", path.display()))?;
    Ok(text.trim().to_string())
}

fn in_credentials_directory(path: &Path) -> bool {
    let Some(dir) = std::env::var_os("CREDENTIALS_DIRECTORY") else { return false };
    let (Ok(dir), Ok(path)) = (std::fs::canonicalize(dir), std::fs::canonicalize(path)) else { return false };
    path.starts_with(dir)
}

/// The shortest internal token accepted from a file (characters).
pub const MIN_TOKEN: usize = 32;

/// The internal server's bearer token: read from `path` (as [`read_private`]) when it
/// exists, else, when `create`, a new random one written there readable by its owner only.
pub fn internal_token(path: &Path, create: bool) -> anyhow::Result<String> {
    const SETTING: &str = "internal token file";
    if !path.exists() && create {
        let mut bytes = [0u8; 32];
        getrandom::getrandom(&mut bytes).context("random token")?;
        let token = alloy_primitives::hex::encode(bytes);
        write_new_private(path, &token).with_context(|| format!("create the {SETTING} {}", path.display()))?;
        return Ok(token);
    }
    let token = read_private(path, SETTING)?;
    if token.len() < MIN_TOKEN || !token.bytes().all(|b| b.is_ascii_graphic()) {
        bail!("the {SETTING} {} must hold one token of at least {MIN_TOKEN} printable characters", path.display());
    }
    Ok(token)
}

/// Writes `text` and a newline to a new file (never over one) readable by its owner only,
/// synced.
pub fn write_new_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    writeln!(f, "{text}")?;
    f.sync_all()
}

/// Where the internal token is kept unless a file is given: in the data directory.
pub fn default_token_path(data_dir: &Path) -> PathBuf {
    data_dir.join("internal.token")
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn secret_files_readable_by_others_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("key");
        std::fs::write(&p, "  k3y-XYZ\n").unwrap();
        for mode in [0o644, 0o640, 0o604] {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            let e = read_private(&p, "secrets key file").unwrap_err().to_string();
            assert!(e.contains("readable by other users"), "{mode:o}: {e}");
            assert!(!e.contains("k3y-XYZ"), "the contents are not shown: {e}");
        }
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_private(&p, "secrets key file").unwrap(), "k3y-XYZ");
    }

    #[test]
    fn the_internal_token_is_made_once_private_then_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let p = default_token_path(dir.path());
        assert!(internal_token(&p, false).is_err(), "not made unless asked");
        let t = internal_token(&p, true).unwrap();
        assert_eq!(t.len(), 64);
        assert_eq!(std::fs::metadata(&p).unwrap().mode() & 0o777, 0o600);
        assert_eq!(internal_token(&p, true).unwrap(), t, "kept across starts");
        std::fs::write(&p, "short").unwrap();
        assert!(internal_token(&p, true).is_err());
    }
}
