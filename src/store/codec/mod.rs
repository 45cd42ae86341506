//! Values as stored: the format's tag byte, then postcard.

mod order;
mod trade;

use serde::{de::DeserializeOwned, Deserialize, Deserializer, Serialize, Serializer};

use super::cf;
use crate::domain::packed::{self, FromStored};
use crate::domain::OrderRecord;
pub use order::Interner;
use order::OrderRef;

/// The byte every value starts with: postcard, a compact binary serde format (the WAL's
/// bytes bound durable throughput), with records' hex and decimal strings as bytes
/// ([`crate::domain::packed`]). A value that does not start with it is corrupt; the store's
/// format as a whole is `meta`'s `format_version` ([`super::upgrade`]).
pub(super) const TAG: u8 = 3;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("rocksdb: {0}")]
    Db(#[from] rocksdb::Error),
    #[error("corrupt record in {cf}: {msg}")]
    Corrupt { cf: &'static str, msg: String },
    /// The persister did not make a write durable (it failed, or it is gone).
    #[error("the write was not made durable")]
    NotDurable,
    #[error("the data directory holds store format {found}, newer than this build reads ({reads}); run the predex that wrote it")]
    NewerFormat { found: u64, reads: u64 },
}

/// Encodes a record: tag byte + postcard.
pub fn encode<T: Serialize>(v: &T) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.push(TAG);
    postcard::to_extend(v, out).expect("records serialize")
}

/// What follows a value's tag byte; corrupt without it.
fn untag<'a>(cf: &'static str, bytes: &'a [u8]) -> Result<&'a [u8], StoreError> {
    match bytes.split_first() {
        Some((&TAG, rest)) => Ok(rest),
        _ => Err(StoreError::Corrupt { cf, msg: "unknown tag".into() }),
    }
}

pub(super) fn decode<T: DeserializeOwned>(cf: &'static str, bytes: &[u8]) -> Result<T, StoreError> {
    postcard::from_bytes(untag(cf, bytes)?).map_err(|e| StoreError::Corrupt { cf, msg: e.to_string() })
}

/// An order record, its repeated strings shared through `interner` (decoded without
/// allocating them).
pub fn decode_order(bytes: &[u8], interner: &mut Interner) -> Result<OrderRecord, StoreError> {
    postcard::from_bytes::<OrderRef>(untag(cf::ORDERS, bytes)?)
        .map(|r| r.into_shared_record(interner))
        .map_err(|e| StoreError::Corrupt { cf: cf::ORDERS, msg: e.to_string() })
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
