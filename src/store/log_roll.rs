//! Write-ahead log files overwritten in place from the first write.
//!
//! A synced write that makes its log file grow also commits the file's new size through the
//! filesystem's journal; one inside the file's existing size writes data only (ext4 on the
//! build machines: an append plus `fdatasync` 119–207 µs, the same write in place 82–141
//! µs). RocksDB reuses retired log files ([`RECYCLED_WAL_FILES`](super::RECYCLED_WAL_FILES)),
//! but only those retired since the database was opened, and under load the first log
//! retires after ≈ 128 MB of writes: until then every group commit appends. So at open,
//! with `logs` > 0, the store writes that many log files of [`LOG_BYTES`] ahead and leaves a
//! reused one live, and from then on starts the next log (onto the next reused file) each
//! time [`SWITCH_BYTES`] more were written, before the live one outgrows its file — if the
//! log took [`MIN_SYNCS`] synced writes meanwhile (docs/performance.md, "Logs overwritten in
//! place from the first write, built").
//!
//! Writing ahead costs each start `logs` × 16 MB of writes (≈ 0.2 s for eight on the build
//! machine) and keeps that much disk in reused log files. A log written ahead holds only
//! log-data records (`WriteBatch::put_log_data`, which no replay applies) and is synced
//! before it is reused; replay of a reused file stops at the first record of its previous
//! life, which carries the old log number (RocksDB's recyclable record format, replayed in
//! point-in-time mode).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rocksdb::{FlushOptions, Options, WriteBatch, WriteOptions, DB};

use super::{cf, StoreError};

/// Size of a log file written ahead.
pub const LOG_BYTES: u64 = 16 << 20;

/// Bytes written to a log before the store starts the next one: a megabyte short of
/// [`LOG_BYTES`], so what other threads write before the switch takes effect still fits.
pub const SWITCH_BYTES: u64 = LOG_BYTES - (1 << 20);

/// A family that exists only while logs are written ahead: its one key, never flushed,
/// keeps every log from the first one on alive until it is dropped, so each log written
/// ahead retires to the reuse list at the end instead of being reused at once. Dropped at
/// open if a crash left it behind.
pub const PIN: &str = "log_pin";

/// The `meta` key whose deletion gives `meta`'s memtable something to flush, so flushing it
/// switches memtables (and so logs) even when nothing else was written to `meta`.
const SWITCH_KEY: &[u8] = b"log_switch";

/// The size of each log-data record written ahead.
const CHUNK: usize = 1 << 20;

/// Counts the bytes written to the log and starts the next log every [`SWITCH_BYTES`].
pub struct LogRoll {
    on: bool,
    written: AtomicU64,
    /// Synced writes since the count last passed a multiple of [`SWITCH_BYTES`].
    syncs: AtomicU64,
    /// A switch is due and not yet made (see [`LogRoll::wrote`]).
    due: AtomicBool,
}

impl LogRoll {
    /// The store as RocksDB runs it alone: no log written ahead, logs switched by RocksDB.
    pub fn off() -> LogRoll {
        LogRoll::new(false)
    }

    fn new(on: bool) -> LogRoll {
        LogRoll { on, written: AtomicU64::new(0), syncs: AtomicU64::new(0), due: AtomicBool::new(false) }
    }

    /// Writes `logs` log files of [`LOG_BYTES`] ahead on a store just opened (nothing else
    /// written yet, every memtable empty), the last of them left live; `logs` = 0 leaves
    /// the store as RocksDB runs it ([`LogRoll::off`]). The store must keep at least
    /// `logs` retired log files for reuse.
    pub fn write_ahead(db: &mut DB, logs: usize) -> Result<LogRoll, StoreError> {
        if logs == 0 {
            return Ok(LogRoll::off());
        }
        assert!(logs >= 2, "log files written ahead: 0, or at least 2");
        db.create_cf(PIN, &Options::default())?;
        for i in 0..logs - 2 {
            // The pin is written into the first log only: RocksDB keeps every log from the
            // oldest one holding unflushed data.
            let pin = if i == 0 { db.cf_handle(PIN) } else { None };
            fill(db, pin)?;
            switch(db, true)?;
        }
        db.drop_cf(PIN)?;
        // The switch after this log retires it and every pinned log (its new log is a new
        // file, as nothing had retired when it was made)...
        fill(db, None)?;
        switch(db, true)?;
        // ...and the one after this takes the first reused file, this new one joining the
        // others for reuse once `meta`'s flush finishes.
        fill(db, None)?;
        switch(db, true)?;
        Ok(LogRoll::new(true))
    }

    /// Counts a write of `bytes` (a WriteBatch's size) to the log, `synced` or not, and
    /// starts the next log when the count passes a multiple of [`SWITCH_BYTES`] — by
    /// flushing `meta` without waiting for the flush — if the log took at least
    /// [`MIN_SYNCS`] synced writes meanwhile. Called after every write by whichever thread
    /// made it.
    ///
    /// The write is durable by then, so nothing here fails it: a switch is an economy. It
    /// waits for a later write while `meta` still has a memtable to flush or too many
    /// level-0 files, or while RocksDB has stopped writes — when a flush request would
    /// block the writer until the flushes catch up, or fail — and when RocksDB refuses it
    /// all the same (the log then grows past its file by a little, appending).
    pub fn wrote(&self, db: &DB, bytes: usize, synced: bool) {
        if !self.on {
            return;
        }
        if synced {
            self.syncs.fetch_add(1, Ordering::Relaxed);
        }
        let before = self.written.fetch_add(bytes as u64, Ordering::Relaxed);
        if (before + bytes as u64) / SWITCH_BYTES > before / SWITCH_BYTES
            && self.syncs.swap(0, Ordering::Relaxed) >= MIN_SYNCS
        {
            self.due.store(true, Ordering::Relaxed);
        }
        // One thread at a time tries a due switch (read first: most writes find none due).
        if self.due.load(Ordering::Relaxed) && self.due.swap(false, Ordering::Relaxed) && !switch_now(db) {
            self.due.store(true, Ordering::Relaxed);
        }
    }
}

/// Synced writes a log must take in [`SWITCH_BYTES`] for a switch to pay (groups of under
/// ≈ 7.5 KB on average). A switch (a flush of `meta`: a table, a manifest write, a
/// compaction now and then, and the writer's wait to switch) costs more than the syncs of
/// large groups save in place: at `store/commit`'s rate, groups of ≈ 33 KB and ≈ 450 syncs
/// a log, switching every log cost ≈ 11% of the durable fills against never switching
/// (47,395 fills/s against 52,967–53,187), where the open loop's groups of ≈ 1 KB take ≈
/// 15,000 syncs a log (docs/performance.md, "Where the 2–4% goes"). Past its file, a log
/// that does not switch appends.
pub const MIN_SYNCS: u64 = 2_000;

/// `meta`'s level-0 files at which a switch waits for their compaction: well below
/// RocksDB's slowdown trigger (20), and above its compaction trigger (4).
const META_L0_FILES: u64 = 8;

/// Switches logs unless that would wait for RocksDB's flushes or compactions; false when it
/// did not.
fn switch_now(db: &DB) -> bool {
    let meta = db.cf_handle(cf::META).expect("column family created at open");
    let int = |cf: Option<&rocksdb::ColumnFamily>, name: &str| {
        let v = match cf {
            Some(cf) => db.property_int_value_cf(cf, name),
            None => db.property_int_value(name),
        };
        v.ok().flatten().unwrap_or(u64::MAX)
    };
    if int(Some(meta), "rocksdb.num-immutable-mem-table") > 0
        || int(Some(meta), "rocksdb.num-files-at-level0") >= META_L0_FILES
        || int(None, "rocksdb.is-write-stopped") > 0
    {
        return false;
    }
    match switch(db, false) {
        Ok(()) => true,
        Err(e) => {
            tracing::debug!(error = %e, "log switch put off");
            false
        }
    }
}

/// Writes [`LOG_BYTES`] of log-data records to the live log, the last write synced and
/// carrying the pin's key when given.
fn fill(db: &DB, pin: Option<&rocksdb::ColumnFamily>) -> Result<(), StoreError> {
    let chunk = vec![0u8; CHUNK];
    let chunks = LOG_BYTES as usize / CHUNK;
    let mut synced = WriteOptions::default();
    synced.set_sync(true);
    for i in 0..chunks {
        let mut b = WriteBatch::default();
        b.put_log_data(&chunk);
        if i + 1 < chunks {
            db.write_opt(b, &WriteOptions::default())?;
        } else {
            if let Some(pin) = pin {
                b.put_cf(pin, b"", b"");
            }
            db.write_opt(b, &synced)?;
        }
    }
    Ok(())
}

/// Starts a new log: `meta`'s memtable, given a tombstone so it is never empty, is switched
/// and flushed (`wait`: until the flush, and so the retirement of the logs it frees, is
/// done).
fn switch(db: &DB, wait: bool) -> Result<(), StoreError> {
    let meta = db.cf_handle(cf::META).expect("column family created at open");
    db.delete_cf(meta, SWITCH_KEY)?;
    let mut fo = FlushOptions::default();
    fo.set_wait(wait);
    db.flush_cf_opt(meta, &fo)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    /// The store's log files, (number, size), in number order: the last one is live.
    fn logs(dir: &std::path::Path) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| {
                let e = e.unwrap();
                let name = e.file_name().into_string().unwrap();
                let number = name.strip_suffix(".log")?.parse().ok()?;
                Some((number, e.metadata().unwrap().len()))
            })
            .collect();
        out.sort_unstable();
        out
    }

    fn raw_options(logs: usize) -> Options {
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        opts.set_recycle_log_file_num(logs);
        opts
    }

    /// After the open, every log file is one written ahead and the live one is among them
    /// (a new live log would be a few bytes long); the writes that fill it move the store
    /// on to the next such file, not to a new one.
    #[test]
    fn the_live_log_is_a_file_written_ahead_and_so_is_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_with(dir.path(), 3).unwrap();
        let at_open = logs(dir.path());
        assert_eq!(at_open.len(), 3, "{at_open:?}");
        assert!(at_open.iter().all(|&(_, size)| size >= LOG_BYTES), "{at_open:?}");
        assert!(store.db.cf_handle(PIN).is_none());

        // Small synced groups, as the open loop writes: enough syncs for a switch to pay.
        write_meta(&store, 4 << 10, SWITCH_BYTES + (1 << 20));
        let after = logs(dir.path());
        let (live_then, live_now) = (at_open.last().unwrap().0, after.last().unwrap());
        assert!(live_now.0 > live_then, "no new log: {at_open:?} then {after:?}");
        assert!(live_now.1 >= LOG_BYTES, "the new log is not a reused file: {after:?}");
        assert!(after.len() <= 3, "a log file beyond those written ahead: {after:?}");
    }

    /// Writes `total` bytes into `meta` as synced writes of `value` bytes each.
    fn write_meta(store: &Store, value: usize, total: u64) {
        let value = vec![7u8; value];
        let mut n = 0u32;
        while (n as u64) * (value.len() as u64) < total {
            let mut b = crate::store::Batch::default();
            b.put(cf::META, format!("k{n}").into_bytes(), value.clone());
            store.write([&b], true).unwrap();
            n += 1;
        }
    }

    /// Large groups take too few syncs for a switch to pay: the live log grows instead.
    #[test]
    fn a_log_of_large_groups_is_not_switched() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_with(dir.path(), 2).unwrap();
        let at_open = logs(dir.path());
        write_meta(&store, 64 << 10, SWITCH_BYTES + (1 << 20));
        let after = logs(dir.path());
        assert_eq!(after.last().unwrap().0, at_open.last().unwrap().0, "switched: {at_open:?} then {after:?}");
    }

    /// What was written into reused log files, synced and never flushed, is all back after
    /// the database closes without flushing (as after kill -9): replay stops at each file's
    /// old records instead of reading them or failing on them.
    #[test]
    fn writes_in_reused_logs_are_replayed_and_the_old_records_are_not() {
        let dir = tempfile::tempdir().unwrap();
        // Small enough that the log takes the syncs a switch needs.
        let value = vec![9u8; 4 << 10];
        let keys = (SWITCH_BYTES + (4 << 20)) / value.len() as u64;
        {
            let mut db = DB::open_cf(&raw_options(3), dir.path(), cf::ALL).unwrap();
            let roll = LogRoll::write_ahead(&mut db, 3).unwrap();
            let mut synced = WriteOptions::default();
            synced.set_sync(true);
            for k in 0..keys {
                let mut b = WriteBatch::default();
                b.put_cf(db.cf_handle(cf::LEDGER).unwrap(), k.to_be_bytes(), &value);
                let bytes = b.size_in_bytes();
                db.write_opt(b, &synced).unwrap();
                roll.wrote(&db, bytes, true);
            }
            // Closed without a flush of `ledger`: its keys are in the logs alone.
        }
        let db = DB::open_cf(&raw_options(3), dir.path(), cf::ALL).unwrap();
        let ledger = db.cf_handle(cf::LEDGER).unwrap();
        for k in 0..keys {
            assert_eq!(db.get_cf(ledger, k.to_be_bytes()).unwrap().as_deref(), Some(&value[..]), "key {k}");
        }
        assert_eq!(db.iterator_cf(ledger, rocksdb::IteratorMode::Start).count() as u64, keys);
    }

    /// A crash while logs were being written ahead leaves the pin's family behind: the next
    /// open drops it and writes the logs again.
    #[test]
    fn a_pin_left_by_a_crash_is_dropped_at_open() {
        let dir = tempfile::tempdir().unwrap();
        {
            let names = cf::ALL.iter().copied().chain([PIN]);
            let db = DB::open_cf(&raw_options(0), dir.path(), names).unwrap();
            db.put_cf(db.cf_handle(PIN).unwrap(), b"", b"").unwrap();
        }
        let store = Store::open_with(dir.path(), 2).unwrap();
        assert!(store.db.cf_handle(PIN).is_none());
        drop(store);
        let families = DB::list_cf(&Options::default(), dir.path()).unwrap();
        assert!(!families.iter().any(|f| f == PIN), "{families:?}");
    }
}
