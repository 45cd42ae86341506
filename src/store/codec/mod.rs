//! Values as stored: a version byte, then postcard (JSON for the first version, still read).

mod order;
mod trade;

use serde::{de::DeserializeOwned, Deserialize, Deserializer, Serialize, Serializer};

use super::cf;
use crate::domain::packed::{self, FromStored};
use crate::domain::OrderRecord;
pub use order::Interner;
#[cfg(test)]
pub(super) use order::OrderOut;
use order::OrderRef;

/// Value format versions: 1 = JSON (the first format, still read), 2 = postcard, a compact
/// binary serde format: about a third of the bytes, and the WAL is what bounds durable
/// throughput; 3 = postcard with records' hex and decimal strings as bytes
/// ([`crate::domain::packed`]). Version 2 values read through the same code (their strings
/// are plain text, which the packed form reads as itself); the new number makes an earlier
/// binary refuse version 3 values rather than misread them.
pub(super) const VERSION_JSON: u8 = 1;
pub(super) const VERSION_TEXT: u8 = 2;
const VERSION: u8 = 3;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("rocksdb: {0}")]
    Db(#[from] rocksdb::Error),
    #[error("corrupt record in {cf}: {msg}")]
    Corrupt { cf: &'static str, msg: String },
    /// The persister did not make a write durable (it failed, or it is gone).
    #[error("the write was not made durable")]
    NotDurable,
}

/// Encodes a record: version byte + postcard.
pub fn encode<T: Serialize>(v: &T) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.push(VERSION);
    postcard::to_extend(v, out).expect("records serialize")
}

pub(super) fn decode<T: DeserializeOwned>(cf: &'static str, bytes: &[u8]) -> Result<T, StoreError> {
    let corrupt = |msg: String| StoreError::Corrupt { cf, msg };
    match bytes.split_first() {
        Some((&(VERSION | VERSION_TEXT), rest)) => postcard::from_bytes(rest).map_err(|e| corrupt(e.to_string())),
        Some((&VERSION_JSON, rest)) => serde_json::from_slice(rest).map_err(|e| corrupt(e.to_string())),
        _ => Err(corrupt("unknown version".into())),
    }
}

/// An order record, its repeated strings shared through `interner` (postcard values decode
/// without allocating them; version-1 JSON goes the ordinary way).
pub fn decode_order(bytes: &[u8], interner: &mut Interner) -> Result<OrderRecord, StoreError> {
    match bytes.split_first() {
        Some((&(VERSION | VERSION_TEXT), rest)) => postcard::from_bytes::<OrderRef>(rest)
            .map(|r| r.into_shared_record(interner))
            .map_err(|e| StoreError::Corrupt { cf: cf::ORDERS, msg: e.to_string() }),
        _ => decode(cf::ORDERS, bytes),
    }
}

/// A value as it reads back from the store, for tests of what survives a restart.
#[cfg(test)]
pub fn as_stored<T: Serialize + DeserializeOwned>(v: &T) -> T {
    decode("test", &encode(v)).expect("a value decodes as it was encoded")
}

/// A string field written packed ([`packed`]): as bytes in postcard, as text in JSON.
pub(super) struct PackedText<S>(pub(super) S);

impl<S: AsRef<str>> Serialize for PackedText<S> {
    fn serialize<Z: Serializer>(&self, s: Z) -> Result<Z::Ok, Z::Error> {
        packed::serialize(&self.0, s)
    }
}

impl<'de, S: FromStored> Deserialize<'de> for PackedText<S> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        packed::deserialize(d).map(PackedText)
    }
}
