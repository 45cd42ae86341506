//! The event stream's outbox: every durable order, trade and market write, numbered, kept
//! until the stream's server has acknowledged it.
//!
//! Once [`Store::stream_events`] is called (`--events-to`), [`Store::prepare`] derives one
//! event from each order ([`Op::Order`](super::Op::Order)), trade and market write of a
//! group and puts it in [`cf::STREAM_OUTBOX`] under the next event sequence, in the same
//! WriteBatch: an event is exactly as durable as the write it describes, and the sequence
//! follows the order the persister commits in — the engine's order. Nothing about
//! publishing is on that path: the publisher (`app::events`) reads the outbox after the
//! last sequence the server acknowledged, and records each acknowledgement with
//! [`Store::events_acked`], which deletes the entries it covers a few thousand at a time.
//!
//! The outbox holds the records themselves, not their rendering: the publisher renders
//! each event as it sends it, off the persister's threads.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};

use rocksdb::WriteBatch;
use serde::{Deserialize, Serialize};

use super::batch::{Entries, Op, Stored};
use super::{cf, decode, encode, meta, Store, StoreError};
use crate::domain::{Market, OrderRecord, TradeRecord};

/// What one event records: the record as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Recorded<'a> {
    /// An order written; `placed` when the write created it.
    Order { placed: bool, order: Cow<'a, OrderRecord> },
    /// A trade written: created (PENDING) or with a new settlement status.
    Trade(Cow<'a, TradeRecord>),
    /// A market created, or its status or tick size changed.
    Market(Cow<'a, Market>),
}

/// One event of the outbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamEvent<'a> {
    /// When the persister took the write (ms since the epoch).
    pub at_ms: u64,
    pub what: Recorded<'a>,
}

/// The outbox's counters, present while the stream is on.
pub(super) struct Outbox {
    /// The sequence the next event gets.
    next: AtomicU64,
    /// The outbox holds no entry through this sequence.
    dropped: AtomicU64,
    /// The last sequence written and synced.
    durable: tokio::sync::watch::Sender<u64>,
}

impl Outbox {
    /// The event an op stands for, if it stands for one.
    fn event_of(op: &Op, at_ms: u64) -> Option<StreamEvent<'_>> {
        let what = match op {
            Op::Order(o, stored) => Recorded::Order { placed: *stored == Stored::New, order: Cow::Borrowed(o) },
            Op::Trade(t) => Recorded::Trade(Cow::Borrowed(t)),
            Op::Market(m) => Recorded::Market(Cow::Borrowed(m)),
            _ => return None,
        };
        Some(StreamEvent { at_ms, what })
    }

    /// Puts the events of a group's ops into the outbox under the next sequences, in the
    /// order given; returns the last sequence used (0: none).
    pub(super) fn number<'a>(&self, ops: impl Iterator<Item = &'a Op>, out: &mut Entries) -> u64 {
        let at_ms = crate::domain::now_millis();
        let mut last = 0;
        for e in ops.filter_map(|op| Self::event_of(op, at_ms)) {
            last = self.next.fetch_add(1, Ordering::Relaxed);
            out.put(cf::STREAM_OUTBOX, last.to_be_bytes(), encode(&e));
        }
        last
    }

    /// Marks the events through `last` durable.
    pub(super) fn synced(&self, last: u64) {
        self.durable.send_if_modified(|d| {
            let grew = last > *d;
            *d = (*d).max(last);
            grew
        });
    }
}

impl Store {
    /// Turns the outbox on: from now on every order, trade and market write is also an
    /// event. The sequence continues after the last one written or acknowledged. Returns
    /// a receiver of the last durable sequence, and the last acknowledged one.
    pub fn stream_events(&self) -> Result<(tokio::sync::watch::Receiver<u64>, u64), StoreError> {
        let acked = self.meta_u64(meta::EVENTS_ACKED)?.unwrap_or(0);
        let mut it = self.db.raw_iterator_cf(self.handle(cf::STREAM_OUTBOX));
        it.seek_to_last();
        let last = it.key().and_then(|k| k.try_into().ok()).map(u64::from_be_bytes).unwrap_or(0);
        it.status()?;
        let last = last.max(acked);
        let (durable, rx) = tokio::sync::watch::channel(last);
        let outbox = Outbox { next: AtomicU64::new(last + 1), dropped: AtomicU64::new(0), durable };
        if self.outbox.set(outbox).is_err() {
            panic!("the event outbox is turned on once");
        }
        Ok((rx, acked))
    }

    /// Up to `limit` events from sequence `from` on, stopping at the first one missing (one
    /// prepared and not yet written).
    pub fn events_from(&self, from: u64, limit: usize) -> Result<Vec<(u64, StreamEvent<'static>)>, StoreError> {
        let mut out = Vec::new();
        let mut it = self.db.raw_iterator_cf(self.handle(cf::STREAM_OUTBOX));
        it.seek(from.to_be_bytes());
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            let Some(seq) = k.try_into().ok().map(u64::from_be_bytes) else {
                return Err(StoreError::Corrupt { cf: cf::STREAM_OUTBOX, msg: "key is not a sequence".into() });
            };
            if seq != from + out.len() as u64 || out.len() >= limit {
                break;
            }
            out.push((seq, decode(cf::STREAM_OUTBOX, v)?));
            it.next();
        }
        it.status()?;
        Ok(out)
    }

    /// Records that the stream's server has every event through `seq`, and drops them from
    /// the outbox once [`DROP_EVERY`] have gathered. Not synced: a start that finds an older
    /// acknowledgement asks the server for its last event.
    pub fn events_acked(&self, seq: u64) -> Result<(), StoreError> {
        let mut wb = WriteBatch::default();
        wb.put_cf(self.handle(cf::META), meta::EVENTS_ACKED, seq.to_be_bytes());
        let drop = self.outbox.get().map(|o| &o.dropped).filter(|d| seq >= d.load(Ordering::Relaxed) + DROP_EVERY);
        if drop.is_some() {
            wb.delete_range_cf(self.handle(cf::STREAM_OUTBOX), 0u64.to_be_bytes(), (seq + 1).to_be_bytes());
        }
        self.write_batch(wb, false)?;
        if let Some(dropped) = drop {
            dropped.store(seq, Ordering::Relaxed);
        }
        Ok(())
    }
}

/// Acknowledged events dropped from the outbox at once. Each drop is a range deletion, and
/// every iterator over the family's memtable sorts the range deletions it holds when it is
/// made: dropping at each acknowledgement (every few events at a few thousand a second)
/// would make reading the outbox cost more CPU than the rest of an event's work.
pub const DROP_EVERY: u64 = 4096;

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::store::Batch;

    fn market(id: &str) -> Market {
        let token = |t: &str, o: &str| crate::domain::Token { token_id: t.into(), outcome: o.into() };
        Market::binary(id, token("1", "Yes"), token("2", "No"), crate::domain::Price(100), crate::domain::Amount(5))
    }

    /// Events are numbered in the order their writes were given, across batches and
    /// groups, only for orders, trades and markets; acknowledged ones leave the outbox;
    /// a reopened store continues the sequence after what it wrote or was acknowledged.
    #[test]
    fn writes_are_numbered_in_order_and_acknowledged_ones_leave() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            let (durable, acked) = store.stream_events().unwrap();
            assert_eq!((*durable.borrow(), acked), (0, 0));
            let mut a = Batch::default();
            a.put_market(&market("0xa"));
            a.put_waitlist("someone", 1);
            a.put_market(&market("0xb"));
            let mut b = Batch::default();
            b.put_market(&market("0xc"));
            store.write([&a, &b], true).unwrap();
            assert_eq!(*durable.borrow(), 3);
            let got = store.events_from(1, 10).unwrap();
            let ids: Vec<(u64, String)> = got
                .iter()
                .map(|(s, e)| match &e.what {
                    Recorded::Market(m) => (*s, m.condition_id.clone()),
                    other => panic!("{other:?}"),
                })
                .collect();
            assert_eq!(ids, [(1, "0xa".into()), (2, "0xb".into()), (3, "0xc".into())]);
            assert_eq!(store.events_from(2, 1).unwrap().len(), 1);
            assert!(store.events_from(4, 10).unwrap().is_empty());
            // Acknowledged ones stay until DROP_EVERY have gathered; reads start past them.
            store.events_acked(2).unwrap();
            assert_eq!(store.events_from(1, 10).unwrap().len(), 3);
            assert_eq!(store.events_from(3, 10).unwrap().len(), 1);
        }
        // Reopened: the sequence goes on after 3 (in the outbox), then after an
        // acknowledgement beyond what the outbox holds.
        let store = Store::open(dir.path()).unwrap();
        let (durable, acked) = store.stream_events().unwrap();
        assert_eq!((*durable.borrow(), acked), (3, 2));
        let mut c = Batch::default();
        c.put_market(&market("0xd"));
        store.write([&c], true).unwrap();
        assert_eq!(store.events_from(4, 10).unwrap().len(), 1);
        store.events_acked(4).unwrap();
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(*store.stream_events().unwrap().0.borrow(), 4);
        // DROP_EVERY acknowledged: every entry through the acknowledgement leaves.
        let mut many = Batch::default();
        for i in 0..DROP_EVERY {
            many.put_market(&market(&format!("0x{i:x}")));
        }
        store.write([&many], true).unwrap();
        store.events_acked(DROP_EVERY + 2).unwrap();
        assert!(store.events_from(1, 10).unwrap().is_empty(), "stops at the first missing");
        assert_eq!(store.events_from(DROP_EVERY + 3, 10).unwrap().len(), 2);
        assert_eq!(store.all_raw(cf::STREAM_OUTBOX).unwrap().len(), 2);
    }

    /// Without the outbox turned on nothing is written to it.
    #[test]
    fn nothing_is_numbered_while_the_stream_is_off() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut a = Batch::default();
        a.put_market(&market("0xa"));
        store.write([&a], true).unwrap();
        assert!(store.events_from(0, 10).unwrap().is_empty());
        assert!(store.all_raw(cf::STREAM_OUTBOX).unwrap().is_empty());
    }

    /// Each order, trade and market write reads back as the record written (owned), an
    /// order saying whether the write placed it.
    #[test]
    fn events_read_back_as_the_records_written() {
        use crate::domain::TradeStatus;
        use crate::store::tests::{indexes::trade, records::sample_order};
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store.stream_events().unwrap();
        let (order, m) = (sample_order(), market("0xa"));
        let (pending, confirmed) = (trade(1, TradeStatus::Pending), trade(1, TradeStatus::Confirmed));
        let mut a = Batch::default();
        a.put_market(&m);
        a.put_order(Arc::new(order.clone()), Stored::New);
        a.put_trade(Arc::new(pending.clone()));
        let mut b = Batch::default();
        b.put_order(Arc::new(order.clone()), Stored::Open);
        b.put_trade(Arc::new(confirmed.clone()));
        store.write([&a], true).unwrap();
        store.write([&b], true).unwrap();
        let got: Vec<Recorded> = store.events_from(1, 10).unwrap().into_iter().map(|(_, e)| e.what).collect();
        assert_eq!(
            got,
            [
                Recorded::Market(Cow::Owned(m)),
                Recorded::Order { placed: true, order: Cow::Owned(order.clone()) },
                Recorded::Trade(Cow::Owned(pending)),
                Recorded::Order { placed: false, order: Cow::Owned(order) },
                Recorded::Trade(Cow::Owned(confirmed)),
            ]
        );
    }
}
