//! The `notifications` family, typed: what an API key is told of its settled trades, kept
//! for [`NotificationRecord::KEPT_SECS`] and listed newest first, at most
//! [`NotificationRecord::LISTED`] of them.
//!
//! A key's notifications grow one per trade it takes part in, so what the family holds is
//! bounded by time, not by a count per key (a count would cost the persister a read per
//! notification): a read lists only the recent ones, and a compaction filter drops the
//! rest whenever RocksDB rewrites a table, which it does at least every
//! [`REWRITTEN_WITHIN_SECS`] for every table of the family.

use std::ops::ControlFlow;

use rocksdb::compaction_filter::Decision;
use uuid::Uuid;

use super::*;

/// The longest a table of the family goes without a compaction (RocksDB's periodic
/// compaction), so an expired notification is gone at most this long after it expired.
pub(super) const REWRITTEN_WITHIN_SECS: u64 = 24 * 3600;

/// Whether a stored notification is past its time at `now` (UNIX seconds).
fn expired(n: &NotificationRecord, now: u64) -> bool {
    n.time.saturating_add(NotificationRecord::KEPT_SECS) < now
}

/// The family's compaction filter: an expired notification is dropped; a value it cannot
/// read is kept (the read reports it).
pub(super) fn drop_expired(_level: u32, _key: &[u8], value: &[u8]) -> Decision {
    match decode::<NotificationRecord>(cf::NOTIFICATIONS, value) {
        Ok(n) if expired(&n, crate::domain::now_secs()) => Decision::Remove,
        _ => Decision::Keep,
    }
}

impl Store {
    /// An API key's notifications at `now`, newest first: the last
    /// [`NotificationRecord::LISTED`] it was given, without those past their time.
    pub fn notifications(&self, owner: &Uuid, now: u64) -> Result<Vec<NotificationRecord>, StoreError> {
        let mut out = Vec::new();
        let mut seen = 0;
        self.try_walk(cf::NOTIFICATIONS, owner.as_bytes(), None, true, |_, v| {
            seen += 1;
            let n: NotificationRecord = decode(cf::NOTIFICATIONS, v)?;
            if !expired(&n, now) {
                out.push(n);
            }
            Ok::<_, StoreError>(if seen < NotificationRecord::LISTED {
                ControlFlow::Continue(())
            } else {
                ControlFlow::Break(())
            })
        })?;
        Ok(out)
    }

    /// Drops every notification of a key, however many (one range deletion), synced.
    pub fn delete_notifications(&self, owner: &Uuid) -> Result<(), StoreError> {
        let mut wb = WriteBatch::default();
        // Trade sequences and kinds never reach their maxima: the end, exclusive, is past
        // every key the owner has.
        wb.delete_range_cf(
            self.handle(cf::NOTIFICATIONS),
            keys::notification(owner, 0, 0),
            keys::notification(owner, u64::MAX, u8::MAX),
        );
        self.write_batch(wb, true)
    }
}
