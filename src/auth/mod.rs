//! Authentication: L1 (EIP-712 ClobAuth wallet signatures), L2 (HMAC over the request), and
//! EIP-712 order signatures. Pure functions; the API layer looks keys up and maps errors.

pub mod eip712;
pub mod hmac;
pub mod relay;
pub mod wallets;

pub use eip712::{
    order_hash, order_hash_v2, order_id, recover_clob_auth, recover_order_signer, recover_signer, OrderDomains,
    OrderFields, OrderFieldsV2, SignedOrderFields, POLYMARKET_ORDER_DOMAIN,
};
pub use hmac::{build_hmac_signature, l2_headers, verify_hmac, L2Creds};

/// The fixed message of the ClobAuth typed data, as every official client signs it (no
/// final period). SPEC §5.1 prints it at the end of a sentence, with a period; a signature
/// over that spelling is accepted too ([`CLOB_AUTH_MESSAGES`]).
/// Timestamp drift allowed on authenticated requests (SPEC §5.4).
pub const MAX_DRIFT_SECS: i64 = 30;

pub const CLOB_AUTH_MESSAGE: &str = "This message attests that I control the given wallet";
/// Every accepted spelling of the ClobAuth message.
pub const CLOB_AUTH_MESSAGES: [&str; 2] = [CLOB_AUTH_MESSAGE, "This message attests that I control the given wallet."];

/// Lowercase 0x-hex form of an address: the one spelling predex stores and compares.
pub fn normalize_address(s: &str) -> Option<String> {
    let a: alloy_primitives::Address = s.trim().parse().ok()?;
    Some(format!("{a:#x}"))
}

/// Constant-time byte comparison.
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A new key's secret (32 random bytes, URL-safe base64) and passphrase (32 random bytes,
/// hex): the shape of every credential predex issues.
pub fn new_secrets() -> Result<(String, String), getrandom::Error> {
    let (mut secret, mut passphrase) = ([0u8; 32], [0u8; 32]);
    getrandom::getrandom(&mut secret)?;
    getrandom::getrandom(&mut passphrase)?;
    Ok((
        base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE, secret),
        alloy_primitives::hex::encode(passphrase),
    ))
}
