//! Opening the store: RocksDB's options per family, the format check, and the log files
//! written ahead.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rocksdb::{BlockBasedOptions, Cache, ColumnFamilyDescriptor, Options, DB};

use super::*;

/// Shared RocksDB block cache.
const BLOCK_CACHE_BYTES: usize = 256 << 20;

/// Memtable size of the families in `cf::SCATTERED` (RocksDB's default, kept by the
/// families keyed by sequence, is 64 MB). An insert of a scattered key walks the skip list's
/// levels through cache misses, and fills spread over many wallets are mostly such inserts,
/// which a shorter list makes cheaper. Smaller still does not pay: these keys are all
/// distinct, so every flush adds its whole size to the compactions.
const SCATTERED_WRITE_BUFFER_BYTES: usize = 16 << 20;

/// Memtable size of the counter families and the ledger, whose few keys (a wallet's balance
/// of an asset, a position) are rewritten or merged with every fill: a memtable holds every
/// version, a flush keeps one, so small memtables cost little compaction and keep the skip
/// list shallow (docs/internals/performance.md, "The levers that matter").
const REWRITTEN_WRITE_BUFFER_BYTES: usize = 4 << 20;

/// Memtable sizes of the two families every new resting order writes, by sequence: its
/// record (≈ 200 bytes) and its signature (≈ 65). A start after kill -9 reads the log back
/// to the oldest write any memtable still held, inserts again what the unflushed memtables
/// held, and flushes them before the store opens: at RocksDB's default of 64 MB each these
/// two would be most of that work, and the signatures' (three times as many orders as the
/// records' at the same size) would reach furthest back. Sized to hold about as many orders as
/// each other, the first start after kill -9 replays less and holds less memory, at no cost
/// to durable throughput.
const LIVE_ORDERS_WRITE_BUFFER_BYTES: usize = 32 << 20;
/// See [`LIVE_ORDERS_WRITE_BUFFER_BYTES`].
const SIGNATURES_WRITE_BUFFER_BYTES: usize = 16 << 20;

/// Memtables a family with smaller ones (the sizes above) may hold, the one written and
/// those waiting for the flush thread. With RocksDB's default of two, a small memtable
/// fills while the one before waits behind other families' flushes (one flush thread on
/// two cores), and every write stops until it is flushed (commits of hundreds of ms under
/// fills spread over many wallets); with three, writes do not stop. At most 152 MB more
/// memtable, held only while flushes lag (and less
/// than `live_orders` and `order_signatures` could hold at RocksDB's default sizes).
const SMALL_MEMTABLES: i32 = 3;

/// Bound on the write-ahead log kept on disk. A log file is deleted only once every family
/// with writes in it has flushed them, and RocksDB's default bound (four times the sum of
/// every family's write buffers, gigabytes here) lets a rarely written family pin every
/// log since its last write, all of which a start after kill -9 reads back. Past this size
/// RocksDB flushes the families that hold the oldest log. Under steady writes the log
/// stays between about half the bound and the bound, which keeps the replay after kill -9
/// short (docs/internals/performance.md). A smaller bound forces flushes that cost the durable writes more than
/// the shorter replay saves.
const MAX_WAL_BYTES: u64 = 128 << 20;

/// Obsolete write-ahead log files kept for reuse. A sync of a log that grows must also
/// journal the file's new size (on ext4 about half as dear again as the same write inside
/// a file's existing size); a recycled log is overwritten in
/// place, so most syncs write data only. Logs become obsolete often enough for this since
/// [`MAX_WAL_BYTES`] bounds them. The
/// bundled RocksDB (10.4) recovers recycled logs in point-in-time mode, the mode used here:
/// a recycled record carries its log's number, and replay stops at the first record of the
/// file's previous life. Only logs retired since the open are reused: with log files written
/// ahead ([`log_roll`]) the store keeps as many as it wrote.
const RECYCLED_WAL_FILES: usize = 4;

/// The database's options: the log's size and recycling, two background jobs.
fn db_options(logs_ahead: usize) -> Options {
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    opts.set_max_background_jobs(2);
    opts.set_max_total_wal_size(MAX_WAL_BYTES);
    opts.set_recycle_log_file_num(RECYCLED_WAL_FILES.max(logs_ahead));
    // Obsolete files are deleted, and the memtables a flush retired are freed, on a
    // background thread instead of the thread that let go of them last: the open
    // after a crash deleted every replayed log before returning, and the writer freed
    // a retired memtable (tens of MB) between two groups.
    opts.set_avoid_unnecessary_blocking_io(true);
    opts
}

/// A column family's options: its tables, filters, merge and compaction, and memtable size.
fn family_options(n: &str, table: &BlockBasedOptions) -> Options {
    let mut o = Options::default();
    o.set_block_based_table_factory(table);
    // Tables compressed (LZ4: records repeat their market's ids): a flush writes
    // fewer bytes on the disk the log's syncs wait on.
    o.set_compression_type(rocksdb::DBCompressionType::Lz4);
    // The same for the memtable of the family a fresh order's duplicate check
    // reads (a point read that misses, which would otherwise walk a skip list).
    // Elsewhere a memtable filter only costs: every write adds its key to it, and
    // nothing on the request path reads those families by point.
    if n == cf::ORDERS {
        o.set_memtable_prefix_bloom_ratio(0.02);
        o.set_memtable_whole_key_filtering(true);
    }
    if n == cf::NOTIFICATIONS {
        o.set_compaction_filter("drop_expired", notifications::drop_expired);
        o.set_periodic_compaction_seconds(notifications::REWRITTEN_WITHIN_SECS);
    }
    if cf::COUNTERS.contains(&n) {
        o.set_merge_operator_associative("sum_i64", index::sum_counters);
    }
    let memtable = if cf::COUNTERS.contains(&n) || n == cf::LEDGER {
        Some(REWRITTEN_WRITE_BUFFER_BYTES)
    } else if cf::SCATTERED.contains(&n) {
        Some(SCATTERED_WRITE_BUFFER_BYTES)
    } else if n == cf::LIVE_ORDERS {
        Some(LIVE_ORDERS_WRITE_BUFFER_BYTES)
    } else if n == cf::ORDER_SIGNATURES {
        Some(SIGNATURES_WRITE_BUFFER_BYTES)
    } else {
        None // RocksDB's default, 64 MB
    };
    if let Some(bytes) = memtable {
        o.set_write_buffer_size(bytes);
        o.set_max_write_buffer_number(SMALL_MEMTABLES);
    }
    o
}

impl Store {
    /// Opens (or creates) the store at `path`, with no log file written ahead.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::open_with(path, 0)
    }

    /// Opens the store with `logs_ahead` log files written ahead, so the log's syncs
    /// overwrite files in place from the first write (0, or at least 2; see [`log_roll`]).
    ///
    /// The files are written on a thread of their own, started once the open is done (the
    /// writes are mostly the disk's work, where the engine's recovery after it is the
    /// CPU's): reads may go on meanwhile, but nothing should be written before
    /// [`Store::wait_logs_ahead`] returns — a write would be correct, but its family's
    /// memtable would keep the files from retiring together, so that some syncs appended.
    pub fn open_with(path: &Path, logs_ahead: usize) -> Result<Store, StoreError> {
        let opts = db_options(logs_ahead);
        // One block cache for every family, and bloom filters: most point reads on the
        // request path are misses (is this order ID new?), which a filter answers without
        // reading a data block.
        let cache = Cache::new_lru_cache(BLOCK_CACHE_BYTES);
        let mut table = BlockBasedOptions::default();
        table.set_block_cache(&cache);
        table.set_bloom_filter(10.0, false);
        let cfs = cf::ALL.iter().map(|n| ColumnFamilyDescriptor::new(*n, family_options(n, &table)));
        let db = Arc::new(DB::open_cf_descriptors(&opts, path, cfs)?);
        let logs = Arc::new(log_roll::LogRoll::off());
        let s = Store {
            analytics: aggregator::Aggregator::spawn(db.clone(), logs.clone()),
            next_log: AtomicU64::new(0),
            logs,
            db,
            open: Default::default(),
            next_order_seq: AtomicU64::new(1),
            next_trade_seq: AtomicU64::new(1),
            ahead: Default::default(),
            sealer: None,
            outbox: Default::default(),
        };
        s.next_order_seq.store(s.meta_u64(meta::NEXT_ORDER_SEQ)?.unwrap_or(1), Ordering::Relaxed);
        s.next_trade_seq.store(s.meta_u64(meta::NEXT_TRADE_SEQ)?.unwrap_or(1), Ordering::Relaxed);
        upgrade::to_current(&s)?;
        s.apply_log()?;
        if logs_ahead > 0 {
            let (db, logs) = (s.db.clone(), s.logs.clone());
            *s.ahead.lock() = Some(crate::essential::spawn("log-ahead", move || {
                let started = std::time::Instant::now();
                logs.write_ahead(&db, logs_ahead)?;
                let ms = started.elapsed().as_millis() as u64;
                let mb = logs_ahead as u64 * (log_roll::LOG_BYTES >> 20);
                tracing::info!(logs = logs_ahead, mb, ms, "log files written ahead");
                Ok(())
            }));
        }
        Ok(s)
    }

    /// Waits until the log files [`Store::open_with`] writes ahead are written (at once if
    /// it writes none, or once they are), and says whether that failed.
    pub fn wait_logs_ahead(&self) -> Result<(), StoreError> {
        match self.ahead.lock().take() {
            Some(h) => h.join().expect("an essential thread aborts the process when it panics"),
            None => Ok(()),
        }
    }

    /// Writes the wallet analytics of the trades a crash left in the log (see
    /// [`aggregator`]), and continues the log's sequence after them.
    pub(super) fn apply_log(&self) -> Result<(), StoreError> {
        let log = self.all_raw(cf::ANALYTICS_LOG)?;
        let unreadable = || StoreError::Corrupt { cf: cf::ANALYTICS_LOG, msg: "unreadable entry".into() };
        let mut events = Vec::with_capacity(log.len());
        for (k, v) in log {
            let seq = u64::from_be_bytes(k.as_slice().try_into().map_err(|_| unreadable())?);
            let (sign, id) = aggregator::Event::parse_log_value(&v).ok_or_else(unreadable)?;
            let trade = self
                .get_trade(&id)?
                .ok_or_else(|| StoreError::Corrupt { cf: cf::ANALYTICS_LOG, msg: format!("trade {id} not found") })?;
            events.push(aggregator::Event { seq, trade: Arc::new(trade), sign });
        }
        let Some(last) = events.last() else { return Ok(()) };
        self.next_log.store(last.seq + 1, Ordering::Relaxed);
        let trades = events.len();
        self.analytics.hand_over(events);
        self.analytics.settle();
        tracing::info!(trades, "wallet analytics of the trades left in the log written");
        Ok(())
    }

    /// Waits until what a read of `family` should find is written, when the family is
    /// written behind the trades (see [`aggregator`]).
    pub(super) fn settle(&self, family: &str) {
        if cf::WRITTEN_BEHIND.contains(&family) {
            self.analytics.settle();
        }
    }
}
