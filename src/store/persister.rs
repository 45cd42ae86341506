//! The persister thread: group commit. It takes every job queued while the previous sync
//! ran (up to a cap), writes them as one synced WriteBatch, then runs each job's
//! completion — the HTTP reply and the book-snapshot publication — in order. So throughput
//! does not collapse under fsync, and nothing is acknowledged before it is durable. A failed
//! write aborts the process (see `run`).

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

pub fn spawn(store: Arc<Store>, metrics: Arc<PersistMetrics>) -> (Sender<Job>, std::thread::JoinHandle<()>) {
    let (tx, rx) = crossbeam_channel::unbounded::<Job>();
    let h = std::thread::Builder::new()
        .name("persister".into())
        .spawn(move || run(store, rx, metrics))
        .expect("spawn persister");
    (tx, h)
}

fn run(store: Arc<Store>, rx: Receiver<Job>, metrics: Arc<PersistMetrics>) {
    let mut group: Vec<Job> = Vec::with_capacity(256);
    while let Ok(first) = rx.recv() {
        group.push(first);
        while group.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(j) => group.push(j),
                Err(_) => break,
            }
        }
        let start = Instant::now();
        if let Err(e) = store.write(group.iter().map(|j| &j.batch), true) {
            // The engine has already applied these commands in memory, and later commands
            // may build on them: memory is ahead of disk, and only the disk is consistent.
            // Answer nothing and stop, as a kill -9 would (which loses nothing
            // acknowledged); the service manager restarts from disk.
            tracing::error!(error = %e, jobs = group.len(), "group commit failed; aborting to restart from disk");
            std::process::abort();
        }
        let micros = start.elapsed().as_micros() as u64;
        metrics.commits.fetch_add(1, Ordering::Relaxed);
        metrics.jobs.fetch_add(group.len() as u64, Ordering::Relaxed);
        metrics.sync_micros_total.fetch_add(micros, Ordering::Relaxed);
        metrics.last_batch_jobs.store(group.len() as u64, Ordering::Relaxed);
        metrics.last_sync_micros.store(micros, Ordering::Relaxed);
        metrics.batch_jobs.observe(group.len() as f64);
        metrics.sync_seconds.observe(micros as f64 / 1e6);
        for j in group.drain(..) {
            (j.done)(true);
        }
    }
}
