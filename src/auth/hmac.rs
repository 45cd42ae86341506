//! L2 request signatures (SPEC §5.3): base64url(HMAC-SHA256(base64url_decode(secret), msg)),
//! msg = timestamp + METHOD + path + body. Verification is constant-time.

use base64::engine::general_purpose::{STANDARD, URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Decodes a secret the way the clients do: base64url, with or without padding; standard
/// base64 is tolerated so a hand-copied secret still works.
fn decode_secret(secret: &str) -> Option<Vec<u8>> {
    URL_SAFE.decode(secret).or_else(|_| URL_SAFE_NO_PAD.decode(secret)).or_else(|_| STANDARD.decode(secret)).ok()
}

/// The MAC keyed with `secret` over the message's common prefix: timestamp, then METHOD.
fn keyed(secret: &[u8], timestamp: &str, method: &str) -> HmacSha256 {
    let mut m = HmacSha256::new_from_slice(secret).expect("HMAC takes any key length");
    m.update(timestamp.as_bytes());
    m.update(method.as_bytes());
    m
}

fn mac(secret: &[u8], timestamp: &str, method: &str, path: &str, body: &[u8]) -> HmacSha256 {
    let mut m = keyed(secret, timestamp, method);
    m.update(path.as_bytes());
    m.update(body);
    m
}

/// An API key's credentials, as a client holds them.
#[derive(Debug, Clone, Copy)]
pub struct L2Creds<'a> {
    pub address: &'a str,
    pub api_key: &'a str,
    pub secret: &'a str,
    pub passphrase: &'a str,
}

/// The five L2 headers a client sends with one request signed at `timestamp` (UNIX s).
pub fn l2_headers(c: &L2Creds, timestamp: i64, method: &str, path: &str, body: &str) -> Vec<(&'static str, String)> {
    let ts = timestamp.to_string();
    let sig = build_hmac_signature(c.secret, &ts, method, path, body);
    vec![
        ("SERVICE_ADDRESS", c.address.to_string()),
        ("SERVICE_SIGNATURE", sig),
        ("SERVICE_TIMESTAMP", ts),
        ("SERVICE_API_KEY", c.api_key.to_string()),
        ("SERVICE_PASSPHRASE", c.passphrase.to_string()),
    ]
}

/// Computes the L2 signature a client sends.
pub fn build_hmac_signature(secret: &str, timestamp: &str, method: &str, path: &str, body: &str) -> String {
    let key = decode_secret(secret).unwrap_or_default();
    URL_SAFE.encode(mac(&key, timestamp, method, path, body.as_bytes()).finalize().into_bytes())
}

/// Verifies an L2 signature in constant time. `paths` are the spellings the client may have
/// signed (with and without the query string); `bodies` likewise (the body as sent, and the
/// py/rs clients' form with `'` replaced by `"`).
pub fn verify_hmac(
    secret: &str,
    timestamp: &str,
    method: &str,
    paths: &[&str],
    bodies: &[&[u8]],
    signature: &str,
) -> bool {
    let Some(key) = decode_secret(secret) else { return false };
    let Ok(sig) = URL_SAFE.decode(signature.trim()).or_else(|_| URL_SAFE_NO_PAD.decode(signature.trim())) else {
        return false;
    };
    // The key's pads and the common prefix hashed once, each spelling from a copy.
    let head = keyed(&key, timestamp, method);
    let mut ok = false;
    for path in paths {
        let mut with_path = head.clone();
        with_path.update(path.as_bytes());
        for body in bodies {
            let mut m = with_path.clone();
            m.update(body);
            // verify_slice compares in constant time.
            ok |= m.verify_slice(&sig).is_ok();
        }
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The clients' published test vector (REFERENCE.md).
    #[test]
    fn known_vector() {
        let secret = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
        let sig = build_hmac_signature(secret, "1000000", "test-sign", "/orders", r#"{"hash": "0x123"}"#);
        assert_eq!(sig, "ZwAdJKvoYRlEKDkNMwd5BuwNNtg93kNaR_oU2HrfVvc=");
        assert!(verify_hmac(secret, "1000000", "test-sign", &["/orders"], &[br#"{"hash": "0x123"}"#], &sig));
        assert!(!verify_hmac(secret, "1000001", "test-sign", &["/orders"], &[br#"{"hash": "0x123"}"#], &sig));
        // Standard base64 or stripped padding is not what the spec asks for, but the digest
        // bytes are the same, so only a wrong digest fails.
        assert!(!verify_hmac(secret, "1000000", "test-sign", &["/orders"], &[b"{}"], &sig));
    }

    /// Any of the given spellings verifies, whatever its place in the lists; none other.
    #[test]
    fn any_spelling_verifies() {
        let secret = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
        let (paths, bodies): ([&str; 2], [&[u8]; 2]) = (["/a?q=1", "/a"], [b"{'x': 1}", b"{\"x\": 1}"]);
        for p in paths {
            for b in bodies {
                let sig = build_hmac_signature(secret, "7", "POST", p, std::str::from_utf8(b).unwrap());
                assert!(verify_hmac(secret, "7", "POST", &paths, &bodies, &sig), "{p} {b:?}");
                assert!(!verify_hmac(secret, "7", "DELETE", &paths, &bodies, &sig));
                assert!(!verify_hmac(secret, "8", "POST", &paths, &bodies, &sig));
            }
        }
        let other = build_hmac_signature(secret, "7", "POST", "/b", "{}");
        assert!(!verify_hmac(secret, "7", "POST", &paths, &bodies, &other));
        assert!(!verify_hmac(secret, "7", "POST", &paths, &bodies, "not base64!"));
    }
}
