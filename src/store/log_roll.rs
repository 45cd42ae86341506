//! Write-ahead log files overwritten in place from the first write.
//!
//! A synced write that makes its log file grow also commits the file's new size through the
//! filesystem's journal; one inside the file's existing size writes data only, which is
//! faster. RocksDB reuses retired log files ([`RECYCLED_WAL_FILES`](super::RECYCLED_WAL_FILES)),
//! but only those retired since the database was opened, and under load the first log
//! retires after ≈ 128 MB of writes: until then every group commit appends. So at open,
//! with `logs` > 0, the store writes that many log files of [`LOG_BYTES`] ahead and leaves a
//! reused one live, and from then on starts the next log (onto the next reused file) each
//! time [`SWITCH_BYTES`] more were written, before the live one outgrows its file — if the
//! log took [`MIN_SYNCS`] synced writes meanwhile.
//!
//! Writing ahead costs each start `logs` × 16 MB of writes and keeps that much disk in reused log files. The store writes them on a thread
//! of their own once it is open, while the engine's recovery reads it back (see
//! [`Store::open_with`](super::Store::open_with)). A log written ahead holds only
//! log-data records (`WriteBatch::put_log_data`, which no replay applies) and is synced
//! before it is reused; replay of a reused file stops at the first record of its previous
//! life, which carries the old log number (RocksDB's recyclable record format, replayed in
//! point-in-time mode).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rocksdb::{FlushOptions, WriteBatch, WriteOptions, DB};

use super::{cf, StoreError};

/// Size of a log file written ahead.
pub const LOG_BYTES: u64 = 16 << 20;

/// Bytes written to a log before the store starts the next one: a megabyte short of
/// [`LOG_BYTES`], so what other threads write before the switch takes effect still fits.
pub const SWITCH_BYTES: u64 = LOG_BYTES - (1 << 20);

/// The `meta` key whose deletion gives `meta`'s memtable something to flush, so flushing it
/// switches memtables (and so logs) even when nothing else was written to `meta`.
const SWITCH_KEY: &[u8] = b"log_switch";

/// The size of each log-data record written ahead.
const CHUNK: usize = 1 << 20;

/// Counts the bytes written to the log and starts the next log every [`SWITCH_BYTES`].
pub struct LogRoll {
    /// Set once the logs are written ahead: until then the count stays off.
    on: AtomicBool,
    written: AtomicU64,
    /// Synced writes since the count last passed a multiple of [`SWITCH_BYTES`].
    syncs: AtomicU64,
    /// A switch is due and not yet made (see [`LogRoll::wrote`]).
    due: AtomicBool,
}

impl LogRoll {
    /// The store as RocksDB runs it alone, until [`LogRoll::write_ahead`] (if ever): no
    /// log written ahead, logs switched by RocksDB.
    pub fn off() -> LogRoll {
        LogRoll {
            on: AtomicBool::new(false),
            written: AtomicU64::new(0),
            syncs: AtomicU64::new(0),
            due: AtomicBool::new(false),
        }
    }

    /// Writes `logs` log files of [`LOG_BYTES`] ahead on a store just opened (every
    /// memtable empty, and written by no other thread meanwhile: its reads may go on), the
    /// last of them left live, then starts counting; `logs` = 0 leaves the store as RocksDB
    /// runs it. The store must keep at least `logs` retired log files for reuse.
    pub fn write_ahead(&self, db: &DB, logs: usize) -> Result<(), StoreError> {
        if logs == 0 {
            return Ok(());
        }
        assert!(logs >= 2, "log files written ahead: 0, or at least 2");
        let pin = db.cf_handle(cf::LOG_PIN).expect("column family created at open");
        for i in 0..logs - 1 {
            // The pin is written into the first log only: RocksDB keeps every log from the
            // oldest one holding unflushed data, so each switch here makes a new file.
            fill(db, (i == 0).then_some(pin))?;
            switch(db, true)?;
        }
        // The live log is new and still empty, so the pin's flush switches to no new one:
        // it retires every log filled so far onto the reuse list at once...
        db.flush_cf(pin)?;
        // ...and the switch after the live log is filled takes the first of them, this one
        // joining the others for reuse once `meta`'s flush finishes.
        fill(db, None)?;
        switch(db, true)?;
        self.on.store(true, Ordering::Release);
        Ok(())
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
        if !self.on.load(Ordering::Relaxed) {
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

/// Synced writes a log must take in [`SWITCH_BYTES`] for a switch to pay (small groups on
/// average). A switch (a flush of `meta`: a table, a manifest write, a compaction now and
/// then, and the writer's wait to switch) costs more than the syncs of large groups save in
/// place, and large groups take few syncs a log. Past its file, a log that does not switch
/// appends.
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
    use rocksdb::Options;

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
        store.wait_logs_ahead().unwrap();
        let at_open = logs(dir.path());
        assert_eq!(at_open.len(), 3, "{at_open:?}");
        assert!(at_open.iter().all(|&(_, size)| size >= LOG_BYTES), "{at_open:?}");
        assert_eq!(pinned(&store.db), 0, "the pin's memtable was not flushed");

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
        store.wait_logs_ahead().unwrap();
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
            let db = DB::open_cf(&raw_options(3), dir.path(), cf::ALL).unwrap();
            let roll = LogRoll::off();
            roll.write_ahead(&db, 3).unwrap();
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

    /// Entries in the pin family's memtable: 1 while it holds the logs written ahead.
    fn pinned(db: &DB) -> u64 {
        let pin = db.cf_handle(cf::LOG_PIN).unwrap();
        db.property_int_value_cf(pin, "rocksdb.num-entries-active-mem-table").unwrap().unwrap()
    }

    /// A crash while logs were being written ahead leaves the pin's key unflushed in the
    /// log: the next open replays it, and the logs written ahead again all retire and are
    /// reused as at any start.
    #[test]
    fn a_pin_left_by_a_crash_holds_no_log_after_the_next_open() {
        let dir = tempfile::tempdir().unwrap();
        {
            let db = DB::open_cf(&raw_options(0), dir.path(), cf::ALL).unwrap();
            db.put_cf(db.cf_handle(cf::LOG_PIN).unwrap(), b"", b"").unwrap();
            // Closed without a flush: the key is in the log alone.
        }
        let store = Store::open_with(dir.path(), 2).unwrap();
        store.wait_logs_ahead().unwrap();
        assert_eq!(pinned(&store.db), 0);
        let at_open = logs(dir.path());
        assert_eq!(at_open.len(), 2, "{at_open:?}");
        assert!(at_open.iter().all(|&(_, size)| size >= LOG_BYTES), "{at_open:?}");
    }

    /// The files are written while the store is read: what was there before the open is
    /// found all along, and the count of the log's bytes is on once they are done.
    #[test]
    fn the_store_is_read_while_the_logs_are_written_ahead() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            write_meta(&store, 100, 100 * 1_000);
        }
        let store = Store::open_with(dir.path(), 4).unwrap();
        assert!(store.ahead.lock().is_some(), "no thread writes the logs ahead");
        for n in (0..1_000).cycle().take(20_000) {
            let key = format!("k{n}");
            assert_eq!(store.get_raw(cf::META, key.as_bytes()).unwrap().as_deref(), Some(&[7u8; 100][..]), "{key}");
        }
        store.wait_logs_ahead().unwrap();
        assert!(store.logs.on.load(Ordering::Relaxed));
        assert_eq!(logs(dir.path()).len(), 4);
    }
}
