//! The persister: group commit in two stages on two threads. The *preparer* takes every
//! job queued while the previous group was being written (up to a cap) and encodes them
//! into one WriteBatch; the *writer* writes it with a synced WAL, then runs what follows
//! each job ([`After`]) in order. Encoding the
//! next group overlaps the write and fsync of the current one, so throughput does not
//! collapse under fsync, and nothing is acknowledged (or readable) before it is durable.
//!
//! When nothing is queued behind a group and the writer has finished every group it was
//! handed, the preparer writes the group itself: at low rates a group is one or two jobs,
//! and handing it over would only add a thread wake-up to each request's path. Groups are
//! still written and completed one at a time, in the order they were taken (see
//! `prepare_groups`). A failed write aborts the process (see `write`), and so does a panic
//! on either thread (`crate::essential`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};

use super::After;
use crate::store::{Batch, Prepared, Store};

/// A synced write at least this slow is counted apart ([`PersistMetrics::slow_syncs`]): far
/// beyond a healthy disk's sync, and what a shared host's disk now and then takes, holding
/// every request behind it. Counting those tells a tail the disk caused from one predex
/// caused.
pub const SLOW_SYNC_MICROS: u64 = 10_000;

/// A batch to write, and what follows once it is durable.
pub struct Job {
    pub batch: Batch,
    pub after: After,
}

/// Counters a bench or an operator can read, and the histograms of `/metrics`.
#[derive(Debug)]
pub struct PersistMetrics {
    pub commits: AtomicU64,
    /// Of `commits`, the groups the preparer wrote itself (nothing queued, writer idle).
    pub inline_commits: prometheus_client::metrics::counter::Counter,
    pub jobs: AtomicU64,
    /// Bytes of the write batches committed (what the WAL grew by).
    pub bytes: prometheus_client::metrics::counter::Counter,
    pub sync_micros_total: AtomicU64,
    pub last_batch_jobs: AtomicU64,
    pub last_sync_micros: AtomicU64,
    /// Groups whose synced write took at least [`SLOW_SYNC_MICROS`], and their time.
    pub slow_syncs: AtomicU64,
    pub slow_sync_micros_total: AtomicU64,
    pub batch_jobs: prometheus_client::metrics::histogram::Histogram,
    pub sync_seconds: prometheus_client::metrics::histogram::Histogram,
}

impl PersistMetrics {
    /// Counters that also feed the exported histograms.
    pub fn exported(m: &crate::metrics::Metrics) -> PersistMetrics {
        PersistMetrics {
            commits: AtomicU64::new(0),
            inline_commits: m.inline_groups.clone(),
            jobs: AtomicU64::new(0),
            bytes: m.write_bytes.clone(),
            sync_micros_total: AtomicU64::new(0),
            last_batch_jobs: AtomicU64::new(0),
            last_sync_micros: AtomicU64::new(0),
            slow_syncs: AtomicU64::new(0),
            slow_sync_micros_total: AtomicU64::new(0),
            batch_jobs: m.batch_jobs.clone(),
            sync_seconds: m.sync_seconds.clone(),
        }
    }

    /// Counts one group of `jobs` commands written (`bytes`) and synced in `micros`.
    fn count(&self, jobs: u64, bytes: u64, micros: u64) {
        self.commits.fetch_add(1, Ordering::Relaxed);
        self.jobs.fetch_add(jobs, Ordering::Relaxed);
        self.bytes.inc_by(bytes);
        self.sync_micros_total.fetch_add(micros, Ordering::Relaxed);
        self.last_batch_jobs.store(jobs, Ordering::Relaxed);
        self.last_sync_micros.store(micros, Ordering::Relaxed);
        if micros >= SLOW_SYNC_MICROS {
            self.slow_syncs.fetch_add(1, Ordering::Relaxed);
            self.slow_sync_micros_total.fetch_add(micros, Ordering::Relaxed);
        }
        self.batch_jobs.observe(jobs as f64);
        self.sync_seconds.observe(micros as f64 / 1e6);
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
    // Groups the writer has written and completed; the preparer counts those it handed over.
    let written = Arc::new(AtomicU64::new(0));
    let writer = {
        let (store, metrics, written) = (store.clone(), metrics.clone(), written.clone());
        crate::essential::spawn("persister", move || {
            while let Ok(group) = prepared_rx.recv() {
                write(&store, group, &metrics);
                // Release: the preparer that reads this count sees the group complete.
                written.fetch_add(1, Ordering::Release);
            }
        })
    };
    let h = crate::essential::spawn("persist-prepare", move || {
        prepare_groups(&store, rx, prepared_tx, &written, &metrics);
        let _ = writer.join();
    });
    (tx, h)
}

/// A group encoded and waiting for the writer.
struct Group {
    batch: Prepared,
    after: Vec<After>,
}

/// Takes the queued jobs, encodes them as one group, and either hands the group to the
/// writer or writes it here. It writes here only when it found the queue empty (it waited
/// for the group's first job: no load is building up behind it) and the writer has
/// written and completed every group handed to it — only this thread hands groups over,
/// so none can be handed meanwhile, and the groups are written and completed in the order
/// they were taken either way. A queue that filled up while a group was written here
/// goes to the writer, so this thread is free to take the jobs that arrive during that
/// write: under load the two stages overlap.
fn prepare_groups(store: &Store, rx: Receiver<Job>, out: Sender<Group>, written: &AtomicU64, metrics: &PersistMetrics) {
    let mut jobs: Vec<Job> = Vec::with_capacity(256);
    let mut handed = 0u64;
    loop {
        let (first, waited) = match rx.try_recv() {
            Ok(j) => (j, false),
            Err(crossbeam_channel::TryRecvError::Empty) => match rx.recv() {
                Ok(j) => (j, true),
                Err(_) => return,
            },
            Err(crossbeam_channel::TryRecvError::Disconnected) => return,
        };
        jobs.push(first);
        // A barrier ends its group: what is queued after it is written after it has run.
        while jobs.len() < MAX_GROUP && !matches!(jobs.last().map(|j| &j.after), Some(After::Barrier(_))) {
            match rx.try_recv() {
                Ok(j) => jobs.push(j),
                Err(_) => break,
            }
        }
        let batch = store.prepare(jobs.iter().map(|j| &j.batch));
        // The records are encoded: drop them here, not on the writer's thread.
        let after = jobs.drain(..).map(|j| j.after).collect();
        let group = Group { batch, after };
        if waited && written.load(Ordering::Acquire) == handed {
            metrics.inline_commits.inc();
            write(store, group, metrics);
            continue;
        }
        handed += 1;
        if out.send(group).is_err() {
            return;
        }
    }
}

/// Writes a group with a synced WAL, counts it, then runs what follows each job, in order.
fn write(store: &Store, group: Group, metrics: &PersistMetrics) {
    let bytes = group.batch.bytes() as u64;
    let start = Instant::now();
    if let Err(e) = store.commit(group.batch, true) {
        // The engine has already applied these commands in memory, and later commands
        // may build on them: memory is ahead of disk, and only the disk is consistent.
        // Answer nothing and stop, as a kill -9 would (which loses nothing
        // acknowledged); the service manager restarts from disk.
        tracing::error!(error = %e, jobs = group.after.len(), "group commit failed; aborting to restart from disk");
        std::process::abort();
    }
    metrics.count(group.after.len() as u64, bytes, start.elapsed().as_micros() as u64);
    for after in group.after {
        after.run(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;
    use std::time::Duration;

    /// A persister over a fresh store, and the list its test jobs' completions fill.
    struct Rig {
        _dir: tempfile::TempDir,
        store: Arc<Store>,
        metrics: Arc<PersistMetrics>,
        tx: Sender<Job>,
        handle: std::thread::JoinHandle<()>,
        seen: Arc<Mutex<Vec<u32>>>,
    }

    impl Rig {
        fn start() -> Rig {
            let _dir = tempfile::tempdir().unwrap();
            let store = Arc::new(Store::open(_dir.path()).unwrap());
            let metrics = Arc::new(PersistMetrics::default());
            let (tx, handle) = spawn(store.clone(), metrics.clone());
            Rig { _dir, store, metrics, tx, handle, seen: Arc::default() }
        }
    }

    /// Job `i`: rewrites one key (the payouts day; only the last write in commit order survives) and writes
    /// its own; its completion checks its write is readable, waits `hold`, and records `i`.
    fn job(store: &Arc<Store>, seen: &Arc<Mutex<Vec<u32>>>, i: u32, hold: std::time::Duration) -> Job {
        let mut batch = Batch::default();
        batch.put_payouts_through(i);
        batch.put_waitlist(&format!("test_{i}"), 1);
        let (store, seen) = (store.clone(), seen.clone());
        let after = After::reply(move |ok| {
            assert!(ok);
            assert!(store.on_waitlist(&format!("test_{i}")).unwrap());
            std::thread::sleep(hold);
            seen.lock().push(i);
        });
        Job { batch, after }
    }

    /// Completions run in the order the jobs were sent, each after its write is readable,
    /// across however many groups the two threads form; and the handle returns only once
    /// every job sent before the sender was dropped has been written and completed.
    #[test]
    fn jobs_complete_in_order_after_their_write_and_the_handle_waits_for_all() {
        let Rig { _dir, store, metrics, tx, handle, seen } = Rig::start();
        const N: u32 = 2_000;
        for i in 0..N {
            tx.send(job(&store, &seen, i, Duration::ZERO)).unwrap();
        }
        drop(tx);
        handle.join().unwrap();
        assert_eq!(*seen.lock(), (0..N).collect::<Vec<_>>());
        assert_eq!(store.payouts_through().unwrap(), Some(N - 1));
        assert_eq!(metrics.jobs.load(Ordering::Relaxed), N as u64);
        assert!(metrics.commits.load(Ordering::Relaxed) >= 1);
        assert!(metrics.bytes.get() > 0);
    }

    /// A barrier sees every job queued before it written and none queued after it, even
    /// when they queue up together behind a busy writer.
    #[test]
    fn a_barrier_runs_between_the_writes_before_and_after_it() {
        let Rig { _dir, store, metrics: _, tx, handle, seen } = Rig::start();
        // The first job holds the writer, so the rest queue up and are taken together.
        tx.send(job(&store, &seen, 0, Duration::from_millis(50))).unwrap();
        let ran = Arc::new(AtomicU64::new(0));
        for i in 1..100 {
            if i == 50 {
                let (store, ran) = (store.clone(), ran.clone());
                let after = After::Barrier(Box::new(move |ok| {
                    assert!(ok);
                    assert!(store.on_waitlist("test_49").unwrap());
                    assert!(!store.on_waitlist("test_50").unwrap(), "a later write went before the barrier");
                    ran.store(1, Ordering::SeqCst);
                }));
                tx.send(Job { batch: Batch::default(), after }).unwrap();
            }
            tx.send(job(&store, &seen, i, Duration::ZERO)).unwrap();
        }
        drop(tx);
        handle.join().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        assert_eq!(*seen.lock(), (0..100).collect::<Vec<_>>());
    }

    /// A group's sync of at least SLOW_SYNC_MICROS counts as slow, with its time; a
    /// faster one only in the totals.
    #[test]
    fn slow_syncs_are_counted_apart() {
        let m = PersistMetrics::default();
        m.count(3, 300, SLOW_SYNC_MICROS - 1);
        m.count(2, 200, SLOW_SYNC_MICROS);
        m.count(1, 100, 250_000);
        assert_eq!(m.commits.load(Ordering::Relaxed), 3);
        assert_eq!(m.jobs.load(Ordering::Relaxed), 6);
        assert_eq!(m.bytes.get(), 600);
        assert_eq!(m.sync_micros_total.load(Ordering::Relaxed), 2 * SLOW_SYNC_MICROS + 249_999);
        assert_eq!(m.slow_syncs.load(Ordering::Relaxed), 2);
        assert_eq!(m.slow_sync_micros_total.load(Ordering::Relaxed), SLOW_SYNC_MICROS + 250_000);
        assert_eq!(
            (m.last_batch_jobs.load(Ordering::Relaxed), m.last_sync_micros.load(Ordering::Relaxed)),
            (1, 250_000)
        );
    }

    /// A job sent alone to an idle persister is written by the preparer; jobs that queue up
    /// behind a group go to the writer, and so does a lone job while the writer is busy;
    /// the order of writes and completions holds across every switch.
    #[test]
    fn lone_jobs_are_written_by_the_preparer_and_a_queue_by_the_writer_in_order() {
        let Rig { _dir, store, metrics, tx, handle, seen } = Rig::start();
        let settle = Duration::from_millis(20);
        let lone = |i: u32| {
            // Idle: the preparer is back waiting on an empty queue.
            std::thread::sleep(settle);
            tx.send(job(&store, &seen, i, Duration::ZERO)).unwrap();
            while seen.lock().len() <= i as usize {
                std::thread::sleep(Duration::from_millis(1));
            }
        };
        for i in 0..5 {
            lone(i);
        }
        let inline_before_burst = metrics.inline_commits.get();
        // Job 5's completion holds the preparer while job 6 queues behind it; job 6 goes to
        // the writer, whose completion holds it in turn while job 7 arrives on an empty
        // queue: 7 must wait for the writer to finish 6, not be written beside it.
        std::thread::sleep(settle);
        tx.send(job(&store, &seen, 5, Duration::from_millis(50))).unwrap();
        std::thread::sleep(Duration::from_millis(10));
        tx.send(job(&store, &seen, 6, Duration::from_millis(100))).unwrap();
        std::thread::sleep(Duration::from_millis(70));
        tx.send(job(&store, &seen, 7, Duration::ZERO)).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        const BURST_END: u32 = 1_500;
        for i in 8..BURST_END {
            tx.send(job(&store, &seen, i, Duration::ZERO)).unwrap();
        }
        while seen.lock().len() < BURST_END as usize {
            std::thread::sleep(Duration::from_millis(1));
        }
        let (commits, inline) = (metrics.commits.load(Ordering::Relaxed), metrics.inline_commits.get());
        for i in BURST_END..BURST_END + 5 {
            lone(i);
        }
        drop(tx);
        handle.join().unwrap();
        let n = BURST_END + 5;
        assert_eq!(*seen.lock(), (0..n).collect::<Vec<_>>());
        assert_eq!(store.payouts_through().unwrap(), Some(n - 1));
        assert!(inline_before_burst >= 1, "no lone job was written by the preparer");
        assert!(commits > inline, "job 6, queued behind job 5, never went to the writer");
        assert!(metrics.inline_commits.get() > inline, "the preparer never wrote again after the burst");
    }
}
