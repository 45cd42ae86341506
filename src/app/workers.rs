//! Background workers (SPEC §1.4), each on its own OS thread so none of them can stall a
//! tokio worker or be stalled by one: settlement, GTD expiration, the heartbeat monitor,
//! the liquidity-reward sampler, the reward and rebate payouts, resolution and RFQ
//! expiration.
//! Each is a [`Worker`]: it runs at its configured interval, logs a line for every run that
//! did work, counts its runs, and exits promptly when [`Workers::stop`] is called. Adding
//! one is a type and a line in [`Workers::start`].
//!
//! Workers change state only through engine commands, so each change is durable before it
//! is visible, like any request's.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use crate::app::chain_settlement::ChainSettler;
use crate::app::settlement::LedgerSettlement;
use crate::app::AppState;
use crate::config::Config;
use crate::engine::EngineHandle;
use crate::metrics::Metrics;

pub struct Workers {
    stop: Option<Sender<()>>,
    threads: Vec<JoinHandle<()>>,
}

impl Workers {
    /// Starts every worker; fails when chain mode's settlement cannot start (a chain-mode
    /// venue that would match trades and never settle them must not run).
    pub fn start(state: &Arc<AppState>) -> anyhow::Result<Workers> {
        let (engine, stats) = (state.engine.clone(), state.exported.clone());
        // Chain mode settles on chain, never in the ledger alone.
        let settlement = match state.chain {
            Some(_) => Settlement::Chain(Box::new(
                ChainSettler::new(state.clone()).map_err(|e| e.context("chain settlement cannot start"))?,
            )),
            None => Settlement::Ledger(LedgerSettlement { engine: engine.clone(), stats: stats.clone() }),
        };
        let workers: Vec<Box<dyn Worker>> = vec![
            Box::new(settlement),
            Box::new(GtdExpiration { engine: engine.clone(), stats: stats.clone() }),
            Box::new(RewardSampler(state.clone())),
            Box::new(Payouts(state.clone())),
            Box::new(Resolution(state.clone())),
            Box::new(RfqExpiration(state.clone())),
            Box::new(HeartbeatMonitor { heartbeats: state.keys.heartbeats.clone(), engine, stats: stats.clone() }),
        ];
        let (stop, rx) = crossbeam_channel::bounded::<()>(0);
        let threads = workers
            .into_iter()
            .map(|w| {
                let every = Duration::from_millis(w.every_ms(&state.config));
                spawn(w, stats.clone(), every, rx.clone())
            })
            .collect();
        Ok(Workers { stop: Some(stop), threads })
    }

    /// Stops every worker after its current run and waits for it.
    pub fn stop(mut self) {
        drop(self.stop.take());
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Runs `run` every `every` until `stop` fires or is dropped. A run that panics is logged
/// and counted (`predex_worker_panics_total`), and the worker runs again at its next interval: unwinding would end the thread (a
/// heartbeat monitor that silently stops cancelling), and aborting, as the essential threads
/// do (`crate::essential`), would restart the exchange into the same panic at the worker's
/// first run. A run changes state through engine commands and synced writes, so one cut
/// short leaves what a crash at that point would, and later runs take up what is still due.
fn spawn(mut worker: Box<dyn Worker>, stats: Arc<Metrics>, every: Duration, stop: Receiver<()>) -> JoinHandle<()> {
    let name = worker.name();
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || loop {
            match stop.recv_timeout(every) {
                Err(RecvTimeoutError::Timeout) => {
                    stats.worker_ran(name);
                    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| worker.run())) {
                        Ok(Some(msg)) => tracing::info!(worker = name, "{msg}"),
                        Ok(None) => {}
                        Err(_) => {
                            stats.worker_panicked(name);
                            tracing::error!(worker = name, "run panicked; the worker runs again next interval");
                        }
                    }
                }
                _ => return,
            }
        })
        .expect("spawn worker")
}

/// A background job: its name (the thread's, and its label in logs and metrics), its
/// interval from the settings, and one run, which says what it did if it did something.
pub trait Worker: Send + 'static {
    fn name(&self) -> &'static str;
    fn every_ms(&self, c: &Config) -> u64;
    fn run(&mut self) -> Option<String>;
}

/// Settles matched trades: in the ledger, or on chain in chain mode.
enum Settlement {
    Ledger(LedgerSettlement),
    Chain(Box<ChainSettler>),
}

impl Worker for Settlement {
    fn name(&self) -> &'static str {
        "settlement"
    }
    fn every_ms(&self, c: &Config) -> u64 {
        c.settlement_interval_ms
    }
    fn run(&mut self) -> Option<String> {
        match self {
            Settlement::Ledger(l) => l.pass(),
            Settlement::Chain(c) => c.run_pass(),
        }
    }
}

/// Cancels GTD orders past their expiration.
struct GtdExpiration {
    engine: EngineHandle,
    stats: Arc<Metrics>,
}

impl Worker for GtdExpiration {
    fn name(&self) -> &'static str {
        "gtd-expiration"
    }
    fn every_ms(&self, c: &Config) -> u64 {
        c.gtd_interval_ms
    }
    fn run(&mut self) -> Option<String> {
        match self.engine.blocking().expire() {
            Ok(ids) if ids.is_empty() => None,
            Ok(ids) => {
                self.stats.worker_cancelled(self.name(), ids.len());
                Some(format!("cancelled {} expired GTD orders", ids.len()))
            }
            Err(e) => Some(format!("expiration failed: {e:?}")),
        }
    }
}

/// Pays each sample's share of the liquidity rewards to the resting orders that qualify.
struct RewardSampler(Arc<AppState>);

impl Worker for RewardSampler {
    fn name(&self) -> &'static str {
        "reward-sampler"
    }
    fn every_ms(&self, c: &Config) -> u64 {
        c.reward_sample_ms
    }
    fn run(&mut self) -> Option<String> {
        let every = self.0.config.reward_sample_ms;
        crate::app::rewards::sample(&self.0, every, crate::domain::now_secs())
            .err()
            .map(|e| format!("reward sample failed: {e}"))
    }
}

/// Pays rewards and rebates for finished days.
struct Payouts(Arc<AppState>);

impl Worker for Payouts {
    fn name(&self) -> &'static str {
        "payouts"
    }
    fn every_ms(&self, c: &Config) -> u64 {
        c.payout_check_ms
    }
    fn run(&mut self) -> Option<String> {
        match crate::app::rewards::run_due(&self.0) {
            Ok(days) if days.is_empty() => None,
            Ok(days) => Some(format!(
                "paid rewards and rebates for {} days through {}",
                days.len(),
                crate::app::rewards::day_str(days[days.len() - 1].day)
            )),
            Err(e) => Some(format!("payout failed: {e}")),
        }
    }
}

/// Resolves markets whose undisputed proposals are past the cooldown.
struct Resolution(Arc<AppState>);

impl Worker for Resolution {
    fn name(&self) -> &'static str {
        "resolution"
    }
    fn every_ms(&self, c: &Config) -> u64 {
        c.resolution_interval_ms
    }
    fn run(&mut self) -> Option<String> {
        match crate::app::resolution::run_due(&self.0) {
            Ok(done) if done.is_empty() => None,
            Ok(done) => Some(format!("resolved {} markets: {}", done.len(), done.join(", "))),
            Err(e) => Some(format!("resolution failed: {e}")),
        }
    }
}

/// Expires RFQ requests and quotes past their TTL.
struct RfqExpiration(Arc<AppState>);

impl Worker for RfqExpiration {
    fn name(&self) -> &'static str {
        "rfq-expiration"
    }
    fn every_ms(&self, c: &Config) -> u64 {
        c.rfq_interval_ms
    }
    fn run(&mut self) -> Option<String> {
        match crate::app::rfq::expire_due(&self.0, crate::domain::now_secs()) {
            Ok((0, 0)) => None,
            Ok((r, q)) => Some(format!("expired {r} RFQ requests and {q} quotes")),
            Err(e) => Some(format!("RFQ expiration failed: {e}")),
        }
    }
}

/// Cancels the orders of keys that missed their heartbeat.
struct HeartbeatMonitor {
    heartbeats: Arc<super::keys::Heartbeats>,
    engine: EngineHandle,
    stats: Arc<Metrics>,
}

impl Worker for HeartbeatMonitor {
    fn name(&self) -> &'static str {
        "heartbeat-monitor"
    }
    fn every_ms(&self, c: &Config) -> u64 {
        c.heartbeat_check_ms
    }
    fn run(&mut self) -> Option<String> {
        let silent = self.heartbeats.take_silent(Instant::now(), super::keys::HEARTBEAT_TIMEOUT);
        if silent.is_empty() {
            return None;
        }
        let mut n = 0;
        for key in &silent {
            match self.engine.blocking().cancel_where(*key) {
                Ok(c) => n += c.canceled.len(),
                Err(e) => return Some(format!("heartbeat cancel failed: {e:?}")),
            }
        }
        self.stats.worker_cancelled(self.name(), n);
        Some(format!("{} API keys missed their heartbeat: cancelled {n} orders", silent.len()))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    /// A run that panics does not end its worker: the next interval runs again, and the
    /// worker still stops when told.
    #[test]
    fn a_panicking_run_is_followed_by_the_next() {
        let runs = Arc::new(AtomicU32::new(0));
        let (stop, rx) = crossbeam_channel::bounded::<()>(0);
        let counted = runs.clone();
        let stats = Arc::new(crate::metrics::Metrics::new());
        struct Flaky(Arc<AtomicU32>);
        impl super::Worker for Flaky {
            fn name(&self) -> &'static str {
                "worker-test"
            }
            fn every_ms(&self, _: &crate::config::Config) -> u64 {
                1
            }
            fn run(&mut self) -> Option<String> {
                if self.0.fetch_add(1, Ordering::Relaxed) == 0 {
                    panic!("the worker test's first run panics");
                }
                None
            }
        }
        let h = super::spawn(Box::new(Flaky(counted)), stats.clone(), Duration::from_millis(1), rx);
        let start = Instant::now();
        while runs.load(Ordering::Relaxed) < 3 && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(runs.load(Ordering::Relaxed) >= 3, "the worker stopped after its panicking run");
        drop(stop);
        h.join().unwrap();
        let panics = stats.worker_panics.get_or_create(&crate::metrics::WorkerLabels { worker: "worker-test" }).get();
        assert_eq!(panics, 1);
    }
}
