//! RocksDB storage: the only module that imports `rocksdb`.
//!
//! One DB, one column family per record kind (names in [`cf`]), big-endian keys so range
//! scans come out ordered, values prefixed with a version byte. One logical change is one
//! [`Batch`]; the persister (`commit::persister`) group-commits batches with a synced WAL.

mod access;
mod aggregator;
pub mod analytics;
mod backup;
mod batch;
mod bridge;
mod builders;
mod catalogue;
mod chain;
mod codec;
mod database;
pub mod index;
pub mod keys;
mod log_roll;
mod notifications;
mod open_index;
mod outbox;
mod read;
mod relay;
mod resolution;
mod rewards;
mod rfq;
mod schema;
mod sealed;
#[cfg(test)]
mod tests;
mod upgrade;
mod write;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rocksdb::{Direction, IteratorMode, WriteBatch, WriteOptions, DB};
use serde::{de::DeserializeOwned, Serialize};
use uuid::Uuid;

pub use backup::Restored;
use batch::{coalesce, Entries, OpenState, WriteKind};
pub use batch::{Batch, Op, Prepared, Stored};
#[cfg(test)]
pub use codec::as_stored;
use codec::decode;
pub use codec::{decode_order, encode, Interner, StoreError};
pub use outbox::{Recorded, StreamEvent};
pub use read::KeyValues;
pub use schema::{cf, meta};
pub use sealed::{Sealer, SecretsError};

use crate::domain::{
    ApiKeyRecord, InviteRecord, Market, NotificationRecord, OrderRecord, OrderStatus, TradeRecord, TradeStatus,
};

/// The embedded database.
pub struct Store {
    db: Arc<DB>,
    /// Open order id → seq (see [`open_index`]).
    open: open_index::OpenIndex,
    /// Highest next-sequence values written to `meta` (or prepared for writing), so each
    /// group commit advances them once, only when they grow.
    next_order_seq: AtomicU64,
    next_trade_seq: AtomicU64,
    /// Writes the wallet analytics behind the trades; `next_log` is the next sequence of
    /// its log.
    analytics: aggregator::Aggregator,
    next_log: AtomicU64,
    /// Starts a new log before the live one outgrows its file (see [`log_roll`]).
    logs: Arc<log_roll::LogRoll>,
    /// The thread writing the log files ahead, until [`Store::wait_logs_ahead`] joins it.
    ahead: parking_lot::Mutex<Option<std::thread::JoinHandle<Result<(), StoreError>>>>,
    /// The secrets key, if any (see [`sealed`]).
    sealer: Option<Sealer>,
    /// The event stream's outbox, once turned on (see [`outbox`]).
    outbox: std::sync::OnceLock<outbox::Outbox>,
}

impl Drop for Store {
    fn drop(&mut self) {
        // The thread holds the database open: close it here, not whenever that ends.
        if let Err(e) = self.wait_logs_ahead() {
            tracing::warn!(error = %e, "writing the log files ahead failed");
        }
        self.analytics.stop();
        if let Err(e) = self.flush() {
            tracing::warn!(error = %e, "flush on close failed; the next start replays the WAL");
        }
    }
}

impl Store {
    fn handle(&self, name: &str) -> &rocksdb::ColumnFamily {
        self.db.cf_handle(name).expect("column family created at open")
    }
}
