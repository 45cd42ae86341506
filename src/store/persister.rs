//! The persister: group commit in two stages on two threads. The *preparer* takes every
//! job queued while the previous group was being written (up to a cap) and encodes them
//! into one WriteBatch; the *writer* writes it with a synced WAL, then runs each job's
//! completion — the HTTP reply and the book-snapshot publication — in order. Encoding the
//! next group overlaps the write and fsync of the current one, so throughput does not
//! collapse under fsync, and nothing is acknowledged (or readable) before it is durable:
//! one thread writes, in the order the groups were prepared. A failed write aborts the
//! process (see `write_groups`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};

use super::{Batch, Store};

/// Runs after the batch is durable (`true`); `false` only when the persister is gone.
pub type Completion = Box<dyn FnOnce(bool) + Send>;

pub struct Job {
    pub batch: Batch,
    pub done: Completion,
}

/// Counters a bench or an operator can read, and the histograms of `/metrics`.
#[derive(Debug)]
pub struct PersistMetrics {
    pub commits: AtomicU64,
    pub jobs: AtomicU64,
    /// Bytes of the write batches committed (what the WAL grew by).
    pub bytes: prometheus_client::metrics::counter::Counter,
    pub sync_micros_total: AtomicU64,
    pub last_batch_jobs: AtomicU64,
    pub last_sync_micros: AtomicU64,
    pub batch_jobs: prometheus_client::metrics::histogram::Histogram,
    pub sync_seconds: prometheus_client::metrics::histogram::Histogram,
}

impl PersistMetrics {
    /// Counters that also feed the exported histograms.
    pub fn exported(m: &crate::metrics::Metrics) -> PersistMetrics {
        PersistMetrics {
            commits: AtomicU64::new(0),
            jobs: AtomicU64::new(0),
            bytes: m.write_bytes.clone(),
            sync_micros_total: AtomicU64::new(0),
            last_batch_jobs: AtomicU64::new(0),
            last_sync_micros: AtomicU64::new(0),
            batch_jobs: m.batch_jobs.clone(),
            sync_seconds: m.sync_seconds.clone(),
        }
    }
}

impl Default for PersistMetrics {
    fn default() -> Self {
        PersistMetrics::exported(&crate::metrics::Metrics::new())
    }
}

/// The most jobs folded into one WriteBatch.
const MAX_GROUP: usize = 4096;

/// Starts the two threads. The handle returned finishes once every job sent before the
/// sender was dropped is durable and completed.
pub fn spawn(store: Arc<Store>, metrics: Arc<PersistMetrics>) -> (Sender<Job>, std::thread::JoinHandle<()>) {
    let (tx, rx) = crossbeam_channel::unbounded::<Job>();
    // A rendezvous: the preparer holds at most one encoded group while the writer is busy,
    // and jobs arriving meanwhile wait in `rx` to form the next, larger group.
    let (prepared_tx, prepared_rx) = crossbeam_channel::bounded::<Group>(0);
    let writer = {
        let store = store.clone();
        std::thread::Builder::new()
            .name("persister".into())
            .spawn(move || write_groups(store, prepared_rx, metrics))
            .expect("spawn persister")
    };
    let h = std::thread::Builder::new()
        .name("persist-prepare".into())
        .spawn(move || {
            prepare_groups(store, rx, prepared_tx);
            let _ = writer.join();
        })
        .expect("spawn persister");
    (tx, h)
}

/// A group encoded and waiting for the writer.
struct Group {
    batch: super::Prepared,
    done: Vec<Completion>,
}

fn prepare_groups(store: Arc<Store>, rx: Receiver<Job>, out: Sender<Group>) {
    let mut jobs: Vec<Job> = Vec::with_capacity(256);
    while let Ok(first) = rx.recv() {
        jobs.push(first);
        while jobs.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(j) => jobs.push(j),
                Err(_) => break,
            }
        }
        let batch = store.prepare(jobs.iter().map(|j| &j.batch));
        // The records are encoded: drop them here, not on the writer's thread.
        let done = jobs.drain(..).map(|j| j.done).collect();
        if out.send(Group { batch, done }).is_err() {
            return;
        }
    }
}

fn write_groups(store: Arc<Store>, rx: Receiver<Group>, metrics: Arc<PersistMetrics>) {
    while let Ok(group) = rx.recv() {
        let bytes = group.batch.bytes() as u64;
        let start = Instant::now();
        if let Err(e) = store.commit(group.batch, true) {
            // The engine has already applied these commands in memory, and later commands
            // may build on them: memory is ahead of disk, and only the disk is consistent.
            // Answer nothing and stop, as a kill -9 would (which loses nothing
            // acknowledged); the service manager restarts from disk.
            tracing::error!(error = %e, jobs = group.done.len(), "group commit failed; aborting to restart from disk");
            std::process::abort();
        }
        let micros = start.elapsed().as_micros() as u64;
        let n = group.done.len() as u64;
        metrics.commits.fetch_add(1, Ordering::Relaxed);
        metrics.jobs.fetch_add(n, Ordering::Relaxed);
        metrics.bytes.inc_by(bytes);
        metrics.sync_micros_total.fetch_add(micros, Ordering::Relaxed);
        metrics.last_batch_jobs.store(n, Ordering::Relaxed);
        metrics.last_sync_micros.store(micros, Ordering::Relaxed);
        metrics.batch_jobs.observe(n as f64);
        metrics.sync_seconds.observe(micros as f64 / 1e6);
        for done in group.done {
            done(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::cf;
    use parking_lot::Mutex;

    /// Completions run in the order the jobs were sent, each after its write is readable,
    /// across however many groups the two threads form; and the handle returns only once
    /// every job sent before the sender was dropped has been written and completed.
    #[test]
    fn jobs_complete_in_order_after_their_write_and_the_handle_waits_for_all() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path()).unwrap());
        let metrics = Arc::new(PersistMetrics::default());
        let (tx, handle) = spawn(store.clone(), metrics.clone());
        let seen = Arc::new(Mutex::new(Vec::new()));
        const N: u32 = 2_000;
        for i in 0..N {
            let mut batch = Batch::default();
            // Every job rewrites one key: only the last write in commit order survives.
            batch.put(cf::META, b"test_last".to_vec(), i.to_be_bytes().to_vec());
            batch.put(cf::META, format!("test_{i}").into_bytes(), vec![1]);
            let (store, seen) = (store.clone(), seen.clone());
            let done: Completion = Box::new(move |ok| {
                assert!(ok);
                assert!(store.get_raw(cf::META, format!("test_{i}").as_bytes()).unwrap().is_some());
                seen.lock().push(i);
            });
            tx.send(Job { batch, done }).unwrap();
        }
        drop(tx);
        handle.join().unwrap();
        assert_eq!(*seen.lock(), (0..N).collect::<Vec<_>>());
        assert_eq!(store.get_raw(cf::META, b"test_last").unwrap(), Some((N - 1).to_be_bytes().to_vec()));
        assert_eq!(metrics.jobs.load(Ordering::Relaxed), N as u64);
        assert!(metrics.commits.load(Ordering::Relaxed) >= 1);
        assert!(metrics.bytes.get() > 0);
    }
}
