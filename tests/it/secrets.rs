//! Secrets sealed at rest (`--secrets-key-file`, docs/operating/running.md): no secret or
//! passphrase in any file of the data directory or of a backup; HMAC verification across a
//! restart; a wrong key or none refused at start; records written before the key sealed at
//! the first start that has it.

use std::path::Path;

use serde_json::{json, Value};

use crate::support::*;

/// Every file under `dir`, raw.
fn files(dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push((p.display().to_string(), std::fs::read(&p).unwrap()));
        }
    }
}

/// The secrets among `texts` found in a file under `dir`, with the file.
fn leaks(dir: &Path, texts: &[String]) -> Vec<(String, String)> {
    let mut all = Vec::new();
    files(dir, &mut all);
    let mut found = Vec::new();
    for (name, bytes) in &all {
        for t in texts {
            if bytes.windows(t.len()).any(|w| w == t.as_bytes()) {
                found.push((name.clone(), t.clone()));
            }
        }
    }
    found
}

/// Writes `text` to a new file readable by its owner only, as a key file must be.
fn private_file(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

fn key_file(dir: &Path) -> std::path::PathBuf {
    let f = dir.join("secrets.key");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_predex"))
        .args(["admin", "secrets-key", "--out", f.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    f
}

/// Credentials of every kind, their secrets and passphrases.
fn credentials(s: &Server, t: &Trader) -> Vec<String> {
    let mut secrets = vec![t.secret.clone(), t.passphrase.clone()];
    let made: [(&str, Option<Value>); 3] = [
        ("/auth/builder-api-key", Some(json!({"builderId": format!("b{}", &t.address[2..8])}))),
        ("/relayer/api-key", None),
        ("/auth/readonly-api-key", None),
    ];
    for (path, body) in made {
        let (st, c) = t.l2(s, "POST", path, body.as_ref());
        assert_eq!(st, 200, "{path}: {c}");
        for field in ["secret", "passphrase"] {
            if let Some(x) = c[field].as_str() {
                secrets.push(x.to_string());
            }
        }
    }
    assert!(secrets.len() >= 6, "{secrets:?}");
    secrets
}

fn start_err(config: predex::config::Config) -> String {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    match rt.block_on(predex::App::start(config)) {
        Ok(_) => panic!("the server started"),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn sealed_secrets_are_in_no_file_and_still_verify_after_a_restart() {
    let work = tempfile::tempdir().unwrap();
    let key = key_file(work.path());
    let data = work.path().join("data");
    let mut config = test_config(&data);
    config.secrets_key_file = Some(key.clone());
    config.backup_dir = Some(work.path().to_path_buf());
    let s = Server::start_with(config.clone());
    s.create_market(COND, YES, NO, "0.01", false);
    let (a, b) = (s.trader(m("10")), s.trader(m("10")));
    let mut secrets = credentials(&s, &a);
    secrets.extend(credentials(&s, &b));
    let backup = work.path().join("backup");
    let (st, r) = s.internal_post("/internal/backup", &json!({"to": backup.to_str().unwrap()}));
    assert_eq!(st, 200, "{r}");
    drop(s);
    assert_eq!(leaks(&data, &secrets), vec![], "the data directory");
    assert_eq!(leaks(&backup, &secrets), vec![], "the backup");

    // The same key: every key verifies as before.
    let s = Server::start_with(config.clone());
    for t in [&a, &b] {
        assert_eq!(t.l2(&s, "GET", "/auth/api-keys", None).0, 200);
    }
    drop(s);

    // Another key, or none: refused, one line each.
    let other = work.path().join("other.key");
    private_file(&other, &predex::store::Sealer::generate());
    let wrong = predex::config::Config { secrets_key_file: Some(other), ..config.clone() };
    assert!(start_err(wrong).contains("does not open this data directory's secrets"));
    let none = predex::config::Config { secrets_key_file: None, ..config.clone() };
    assert!(start_err(none).contains("secrets are sealed: start with --secrets-key-file"));
    private_file(&work.path().join("bad.key"), "not hex");
    let bad = predex::config::Config { secrets_key_file: Some(work.path().join("bad.key")), ..config.clone() };
    assert!(start_err(bad).contains("64 hex digits"));
    // The right key, but readable by others: refused before it is read.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = start_err(config);
    assert!(e.contains("secrets key file") && e.contains("readable by other users"), "{e}");
}

#[test]
fn credentials_written_before_the_key_are_sealed_at_the_first_start_with_it() {
    let work = tempfile::tempdir().unwrap();
    let data = work.path().join("data");
    let s = Server::start_with(test_config(&data));
    let t = s.trader(m("10"));
    let secrets = credentials(&s, &t);
    drop(s);
    assert!(!leaks(&data, &secrets).is_empty(), "stored plain without a key");

    let mut config = test_config(&data);
    config.secrets_key_file = Some(key_file(work.path()));
    config.backup_dir = Some(work.path().to_path_buf());
    let s = Server::start_with(config);
    assert_eq!(t.l2(&s, "GET", "/auth/api-keys", None).0, 200, "the key still verifies");
    let backup = work.path().join("backup");
    assert_eq!(s.internal_post("/internal/backup", &json!({"to": backup.to_str().unwrap()})).0, 200);
    drop(s);
    // Compacted out of the table files; a backup taken from then on holds none.
    let tables: Vec<(String, String)> =
        leaks(&data, &secrets).into_iter().filter(|(f, _)| f.ends_with(".sst")).collect();
    assert_eq!(tables, vec![], "the table files");
    assert_eq!(leaks(&backup, &secrets), vec![], "a backup after sealing");
}
