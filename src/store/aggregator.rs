//! A trade's wallet analytics, written behind it by a thread of their own.
//!
//! A trade's wallet analytics — its two `trades_by_wallet` entries and its legs' six
//! position counters (`positions`, `market_holders`, `wallet_days`) — are keys scattered
//! over the wallets: the dearest writes of fills spread over many wallets. So the group
//! commit writes, per trade that changes them (written PENDING: adds; FAILED: takes back), one entry of
//! [`cf::ANALYTICS_LOG`] instead: a key the store assigns in commit order, appended, as
//! durable as the trade. After its commit each event comes here, and this thread sums the
//! counters per key; every [`INTERVAL`], or sooner when a reader asks, it writes the
//! period's wallet-trade entries in key order (puts, so writing one twice changes
//! nothing), then one batch holding each key's sum and a range delete of the log entries
//! it applied. Those writes are not synced: the persister's next sync makes them durable,
//! and a crash before it leaves their log entries, which the next start applies
//! ([`Store::open`](super::Store::open)) before anything reads.
//!
//! A read of those families first waits until every event handed over before it began is
//! written ([`Aggregator::settle`]), so a client that was told its order filled reads the
//! trade in its history and positions, as when they were written with the trade.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use parking_lot::{Condvar, Mutex};
use rocksdb::{WriteBatch, WriteOptions, DB};
use uuid::Uuid;

use super::log_roll::LogRoll;
use super::{cf, index, StoreError};
use crate::domain::TradeRecord;

/// How long counters are summed in memory before they are written. A start after a crash
/// applies at most about this much of the log again (a point read of each trade).
const INTERVAL: Duration = Duration::from_millis(500);

/// Wallet-trade entries per write: a write holds RocksDB's write queue while its entries go
/// into the memtable, and the persister's synced writes wait behind it.
const CHUNK: usize = 2048;

/// Most events summed before they are written whatever the time.
const MAX_PENDING: usize = 1 << 17;

/// One trade that changes the wallet analytics, under its log sequence.
pub struct Event {
    pub seq: u64,
    pub trade: Arc<TradeRecord>,
    /// +1: the trade was written PENDING; −1: it FAILED.
    pub sign: i64,
}

impl Event {
    /// The event's `analytics_log` value: its sign, then the trade's id (whose record holds
    /// the rest, and whose legs never change).
    pub fn log_value(&self) -> [u8; 17] {
        let mut v = [0u8; 17];
        v[0] = u8::from(self.sign < 0);
        v[1..].copy_from_slice(self.trade.id.as_bytes());
        v
    }

    /// The sign and trade id of an `analytics_log` value.
    pub fn parse_log_value(v: &[u8]) -> Option<(i64, Uuid)> {
        let (&sign, id) = v.split_first()?;
        let id = Uuid::from_slice(id).ok()?;
        match sign {
            0 => Some((1, id)),
            1 => Some((-1, id)),
            _ => None,
        }
    }
}

enum Request {
    /// Write what is summed now (a reader waits for it).
    Flush,
    /// Write what is summed and stop.
    Stop,
}

/// The log sequence below which every event is written, and a condition to wait on it.
#[derive(Default)]
struct Applied {
    below: Mutex<u64>,
    changed: Condvar,
}

pub struct Aggregator {
    events: Sender<Vec<Event>>,
    requests: Sender<Request>,
    /// One past the last log sequence handed over.
    sent: AtomicU64,
    applied: Arc<Applied>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Aggregator {
    /// Starts the thread.
    pub fn spawn(db: Arc<DB>, logs: Arc<LogRoll>) -> Aggregator {
        let (events, events_rx) = crossbeam_channel::unbounded();
        let (requests, requests_rx) = crossbeam_channel::unbounded();
        let applied = Arc::new(Applied { below: Mutex::new(0), changed: Condvar::new() });
        let thread = {
            let applied = applied.clone();
            crate::essential::spawn("analytics", move || run(&db, &logs, &events_rx, &requests_rx, &applied))
        };
        Aggregator { events, requests, sent: AtomicU64::new(0), applied, thread: Mutex::new(Some(thread)) }
    }

    /// Hands over the events of a commit, in log order, once it is written.
    pub fn hand_over(&self, events: Vec<Event>) {
        let Some(end) = events.last().map(|e| e.seq + 1) else { return };
        if self.events.send(events).is_ok() {
            // After the send: a reader that sees `end` asks for a flush that finds them.
            self.sent.fetch_max(end, Ordering::Release);
        }
    }

    /// Returns once every event handed over before this call is written (at once when
    /// none waits).
    pub fn settle(&self) {
        let target = self.sent.load(Ordering::Acquire);
        let mut below = self.applied.below.lock();
        if *below >= target || self.requests.send(Request::Flush).is_err() {
            return;
        }
        while *below < target {
            // The thread aborts the process if it cannot write, so it only stops with
            // the store; the timeout keeps a reader from outliving it.
            if self.applied.changed.wait_for(&mut below, Duration::from_secs(10)).timed_out() {
                tracing::warn!(target, applied = *below, "wallet analytics not written in time; reading without them");
                return;
            }
        }
    }

    /// Writes what is summed and stops the thread.
    pub fn stop(&self) {
        if let Some(t) = self.thread.lock().take() {
            let _ = self.requests.send(Request::Stop);
            let _ = t.join();
        }
    }
}

fn run(db: &DB, logs: &LogRoll, events: &Receiver<Vec<Event>>, requests: &Receiver<Request>, applied: &Applied) {
    let mut sums = Sums::default();
    loop {
        let request = requests.recv_timeout(INTERVAL);
        for batch in events.try_iter() {
            for e in &batch {
                sums.add(e);
            }
            if sums.events >= MAX_PENDING {
                write(db, logs, &mut sums, applied);
            }
        }
        write(db, logs, &mut sums, applied);
        if matches!(request, Ok(Request::Stop) | Err(RecvTimeoutError::Disconnected)) {
            return;
        }
    }
}

fn write(db: &DB, logs: &LogRoll, sums: &mut Sums, applied: &Applied) {
    let Some(end) = sums.end else { return };
    if let Err(e) = sums.write(db, logs) {
        // As the persister does: what is written is consistent (each event's log entry
        // stays until its sums are written), and a restart applies the rest.
        tracing::error!(error = %e, "writing wallet analytics failed; aborting to restart from disk");
        std::process::abort();
    }
    *applied.below.lock() = end;
    applied.changed.notify_all();
}

/// Events summed and not yet written.
#[derive(Default)]
struct Sums {
    counters: foldhash::HashMap<(&'static str, Vec<u8>), index::Position>,
    wallet_trades: Vec<(Vec<u8>, Uuid)>,
    /// The log sequences of the events summed: from `start` to before `end`.
    start: Option<u64>,
    end: Option<u64>,
    events: usize,
}

impl Sums {
    fn add(&mut self, e: &Event) {
        let t = &e.trade;
        let day = index::trade_day(t);
        for (role, leg) in t.legs().iter().enumerate() {
            let p = index::leg_position(leg, e.sign);
            for key in index::position_keys(t.token.market_idx, day, leg.address, leg.token) {
                self.counters.entry(key).or_default().add(&p);
            }
            // A trade enters its wallets' histories once, when written PENDING.
            if e.sign > 0 {
                self.wallet_trades.push((index::wallet_trade(leg.address, t.seq, role as u8), t.id));
            }
        }
        self.start.get_or_insert(e.seq);
        self.end = Some(e.seq + 1);
        self.events += 1;
    }

    /// Writes the sums and deletes the log entries they came from, then starts afresh.
    fn write(&mut self, db: &DB, logs: &LogRoll) -> Result<(), StoreError> {
        let (Some(start), Some(end)) = (self.start, self.end) else { return Ok(()) };
        let handle = |name| db.cf_handle(name).expect("column family created at open");
        let unsynced = WriteOptions::default();
        // In key order, so each insert starts next to the previous one in the skip list.
        self.wallet_trades.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let wallets = handle(cf::TRADES_BY_WALLET);
        for chunk in self.wallet_trades.chunks(CHUNK) {
            let mut wb = WriteBatch::default();
            for (k, id) in chunk {
                wb.put_cf(wallets, k, id.as_bytes());
            }
            let bytes = wb.size_in_bytes();
            db.write_opt(wb, &unsynced)?;
            logs.wrote(db, bytes, false);
        }
        // The sums and the log's deletion in one batch: a start finds either both or the
        // log entries, never sums without their entries gone.
        let mut counters: Vec<_> = self.counters.drain().collect();
        counters.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut wb = WriteBatch::default();
        for ((family, k), p) in counters {
            wb.merge_cf(handle(family), k, p.encode());
        }
        wb.delete_range_cf(handle(cf::ANALYTICS_LOG), start.to_be_bytes(), end.to_be_bytes());
        let bytes = wb.size_in_bytes();
        db.write_opt(wb, &unsynced)?;
        logs.wrote(db, bytes, false);
        self.wallet_trades.clear();
        (self.start, self.end, self.events) = (None, None, 0);
        Ok(())
    }
}
