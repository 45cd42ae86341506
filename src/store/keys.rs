//! Key encodings: fixed-width big-endian parts so range scans are ordered.

use uuid::Uuid;

/// owner (16 bytes) + seq (8 bytes BE).
pub fn owner_seq(owner: &Uuid, seq: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(24);
    k.extend_from_slice(owner.as_bytes());
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

/// address + nonce (BE): the key of an API key by its wallet.
pub fn address_nonce(address: &str, nonce: u64) -> Vec<u8> {
    let mut k = super::index::wallet_prefix(address);
    k.extend_from_slice(&nonce.to_be_bytes());
    k
}

/// owner (16) + trade seq (8 BE) + kind (1): a notification, in trade order per key.
pub fn notification(owner: &Uuid, trade_seq: u64, kind: u8) -> Vec<u8> {
    let mut k = owner_seq(owner, trade_seq);
    k.push(kind);
    k
}
