//! Secrets sealed at rest (docs/operating/running.md, "Secrets"): with a key, the records that hold
//! credentials — API keys (secret, passphrase) and builder, relayer and read-only keys —
//! are stored encrypted with XChaCha20-Poly1305, each bound to its family and key (the
//! AEAD's associated data) so a sealed value cannot be moved to another record.
//!
//! A sealed value is [`SEALED`], a random 24-byte nonce, then the ciphertext of the
//! record's plain encoding. Plain encodings start with a codec version byte (1 to 3), so the
//! two never mix up. `meta/secrets_check` holds a sealed known text: a start with a
//! different key, or with none, is refused before anything is read.

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};

use super::{cf, keys, meta, Batch, Store, StoreError};

/// First byte of a sealed value.
const SEALED: u8 = 0xA5;
const CHECK_TEXT: &[u8] = b"predex sealed secrets";

/// The secrets key, from its file: 64 hex digits (32 bytes).
pub struct Sealer(XChaCha20Poly1305);

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer(..)")
    }
}

/// Why a start with (or without) a secrets key is refused.
#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    #[error(
        "the secrets key file must hold 64 hex digits (32 bytes); `predex admin secrets-key --out FILE` makes one"
    )]
    BadKey,
    #[error("the secrets key does not open this data directory's secrets (another key file?)")]
    WrongKey,
    #[error("this data directory's secrets are sealed: start with --secrets-key-file")]
    KeyNeeded,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Sealer {
    pub fn from_hex(text: &str) -> Result<Sealer, SecretsError> {
        let text = text.trim();
        if text.len() != 64 {
            return Err(SecretsError::BadKey);
        }
        let mut key = [0u8; 32];
        for (i, b) in key.iter_mut().enumerate() {
            *b = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|_| SecretsError::BadKey)?;
        }
        Ok(Sealer(XChaCha20Poly1305::new(&key.into())))
    }

    /// A new random key, as the text of its file.
    pub fn generate() -> String {
        let mut key = [0u8; 32];
        getrandom::getrandom(&mut key).expect("the OS random source");
        key.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn seal(&self, family: &str, key: &[u8], plain: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; 24];
        getrandom::getrandom(&mut nonce).expect("the OS random source");
        let aad = [family.as_bytes(), b"/", key].concat();
        let sealed = self
            .0
            .encrypt(XNonce::from_slice(&nonce), Payload { msg: plain, aad: &aad })
            .expect("XChaCha20-Poly1305 seals any length");
        [&[SEALED][..], &nonce, &sealed].concat()
    }

    fn open(&self, family: &str, key: &[u8], value: &[u8]) -> Option<Vec<u8>> {
        let (nonce, sealed) = value.get(1..)?.split_at_checked(24)?;
        let aad = [family.as_bytes(), b"/", key].concat();
        self.0.decrypt(XNonce::from_slice(nonce), Payload { msg: sealed, aad: &aad }).ok()
    }
}

fn is_sealed(v: &[u8]) -> bool {
    v.first() == Some(&SEALED)
}

impl Store {
    /// A secret record's value as written: sealed when the store has a key.
    pub(super) fn seal_value(&self, family: &str, key: &[u8], plain: &[u8]) -> Vec<u8> {
        match &self.sealer {
            Some(s) => s.seal(family, key, plain),
            None => plain.to_vec(),
        }
    }

    /// A secret record's plain encoding, opened if sealed.
    pub(super) fn unseal<'a>(
        &self,
        family: &'static str,
        key: &[u8],
        value: &'a [u8],
    ) -> Result<std::borrow::Cow<'a, [u8]>, StoreError> {
        if !is_sealed(value) {
            return Ok(value.into());
        }
        let corrupt = || StoreError::Corrupt { cf: family, msg: "a sealed secret that this key does not open".into() };
        let s = self.sealer.as_ref().ok_or_else(corrupt)?;
        s.open(family, key, value).map(Into::into).ok_or_else(corrupt)
    }

    /// Sets the secrets key (None: secrets stay plain) before the store is shared: checks
    /// it against the data directory's, and seals every credential record written plain
    /// before it (their plain versions are then compacted out of the table files).
    /// Returns how many records it sealed.
    pub fn set_secrets(&mut self, sealer: Option<Sealer>) -> Result<usize, SecretsError> {
        let check = self.get_raw(cf::META, meta::SECRETS_CHECK)?;
        let Some(sealer) = sealer else {
            return match check {
                Some(_) => Err(SecretsError::KeyNeeded),
                None => Ok(0),
            };
        };
        match &check {
            Some(v) if sealer.open(cf::META, meta::SECRETS_CHECK, v).as_deref() != Some(CHECK_TEXT) => {
                return Err(SecretsError::WrongKey);
            }
            _ => {}
        }
        self.sealer = Some(sealer);
        let mut batch = Batch::default();
        if check.is_none() {
            batch.put_secret(cf::META, meta::SECRETS_CHECK.to_vec(), CHECK_TEXT.to_vec());
        }
        let mut sealed = 0;
        for (family, prefix) in [(cf::API_KEYS, &b""[..]), (cf::BUILDERS, keys::builders::KEY_PREFIX)] {
            for (k, v) in self.scan_prefix(family, prefix, &[], usize::MAX)? {
                if !is_sealed(&v) {
                    batch.put_secret(family, k, v);
                    sealed += 1;
                }
            }
        }
        self.write([&batch], true)?;
        if sealed > 0 {
            // The plain versions: out of the memtables, then out of every table file.
            self.compact_away(&[cf::API_KEYS, cf::BUILDERS])?;
        }
        Ok(sealed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_value_opens_only_with_its_key_family_and_record() {
        let s = Sealer::from_hex(&Sealer::generate()).unwrap();
        let v = s.seal("api_keys", b"k1", b"\x03secret");
        assert!(is_sealed(&v) && !v.windows(6).any(|w| w == b"secret"));
        assert_eq!(s.open("api_keys", b"k1", &v).as_deref(), Some(&b"\x03secret"[..]));
        assert!(s.open("api_keys", b"k2", &v).is_none(), "another record");
        assert!(s.open("builders", b"k1", &v).is_none(), "another family");
        let other = Sealer::from_hex(&Sealer::generate()).unwrap();
        assert!(other.open("api_keys", b"k1", &v).is_none(), "another key");
        assert!(matches!(Sealer::from_hex("abc"), Err(SecretsError::BadKey)));
        assert!(matches!(Sealer::from_hex(&"zz".repeat(32)), Err(SecretsError::BadKey)));
    }
}
