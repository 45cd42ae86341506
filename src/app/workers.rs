//! Background workers (SPEC §1.4), each on its own OS thread so none of them can stall a
//! tokio worker or be stalled by one: settlement, GTD expiration, the heartbeat monitor,
//! the liquidity-reward sampler, the reward and rebate payouts, resolution and RFQ
//! expiration.
//! Each runs at its configured interval, logs a line for every run that did work, counts
//! its runs, and exits promptly when [`Workers::stop`] is called.
//!
//! Workers change state only through engine commands, so each change is durable before it
//! is visible, like any request's.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use parking_lot::Mutex;
use uuid::Uuid;

use crate::app::AppState;
use crate::engine::EngineHandle;

/// Trades settled per engine command: bounds how long one settlement command holds the
/// engine (a pass repeats until the queue is empty).
/// 128 keeps each group commit light: at 1,000 a settlement pass added ~20 ms to the open
/// loop's p99 (loadgen, 5,000 orders/s), at 128 it stays at ≈ 3 ms.
pub const SETTLE_CHUNK: usize = 128;

/// More than this without a heartbeat cancels an enrolled key's orders (SPEC §4.2).
pub const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(10);

/// API keys enrolled in heartbeat monitoring, with their last heartbeat.
#[derive(Debug, Default)]
pub struct Heartbeats(Mutex<std::collections::HashMap<Uuid, Instant>>);

impl Heartbeats {
    /// Enrols the key on its first heartbeat; later ones reset its countdown.
    pub fn beat(&self, key: Uuid) {
        self.0.lock().insert(key, Instant::now());
    }

    /// Removes and returns the keys silent for longer than `timeout`.
    pub fn take_silent(&self, now: Instant, timeout: Duration) -> Vec<Uuid> {
        let mut m = self.0.lock();
        let silent: Vec<Uuid> =
            m.iter().filter(|(_, t)| now.saturating_duration_since(**t) > timeout).map(|(k, _)| *k).collect();
        for k in &silent {
            m.remove(k);
        }
        silent
    }

    pub fn is_enrolled(&self, key: &Uuid) -> bool {
        self.0.lock().contains_key(key)
    }
}

pub struct Workers {
    stop: Option<Sender<()>>,
    threads: Vec<JoinHandle<()>>,
}

/// Settles every PENDING trade now; returns (confirmed, failed).
pub fn settle_all(engine: &EngineHandle) -> Result<(usize, usize), crate::engine::EngineError> {
    let (mut c, mut f) = (0, 0);
    loop {
        let (dc, df) = engine.blocking().settle(SETTLE_CHUNK)?;
        c += dc;
        f += df;
        if dc + df < SETTLE_CHUNK {
            return Ok((c, f));
        }
    }
}

impl Workers {
    /// Starts every worker; fails when chain mode's settlement cannot start (a chain-mode
    /// venue that would match trades and never settle them must not run).
    pub fn start(state: &Arc<AppState>) -> anyhow::Result<Workers> {
        let config = &state.config;
        let (engine, heartbeats, stats) = (state.engine.clone(), state.heartbeats.clone(), state.exported.clone());
        let (stop, rx) = crossbeam_channel::bounded::<()>(0);
        let ms = Duration::from_millis;
        let mut threads = Vec::new();
        // Chain mode settles on chain, never in the ledger alone.
        if state.chain.is_some() {
            let mut settler = crate::app::chain_settlement::ChainSettler::new(state.clone())
                .map_err(|e| e.context("chain settlement cannot start"))?;
            let stats = stats.clone();
            threads.push(spawn(
                "chain-settlement",
                stats.clone(),
                ms(config.settlement_interval_ms),
                rx.clone(),
                move || {
                    stats.worker_ran("settlement");
                    settler.run()
                },
            ));
        } else {
            let (engine, stats) = (engine.clone(), stats.clone());
            threads.push(spawn(
                "settlement",
                stats.clone(),
                ms(config.settlement_interval_ms),
                rx.clone(),
                move || {
                    stats.worker_ran("settlement");
                    match settle_all(&engine) {
                        Ok((0, 0)) => None,
                        Ok((c, f)) => {
                            stats.settled(c, f);
                            Some(format!("settled {} trades: {c} confirmed, {f} failed", c + f))
                        }
                        Err(e) => Some(format!("settlement stopped: {e:?}")),
                    }
                },
            ));
        }
        {
            let (engine, stats) = (engine.clone(), stats.clone());
            threads.push(spawn("gtd-expiration", stats.clone(), ms(config.gtd_interval_ms), rx.clone(), move || {
                stats.worker_ran("gtd-expiration");
                match engine.blocking().expire() {
                    Ok(ids) if ids.is_empty() => None,
                    Ok(ids) => {
                        stats.worker_cancelled("gtd-expiration", ids.len());
                        Some(format!("cancelled {} expired GTD orders", ids.len()))
                    }
                    Err(e) => Some(format!("expiration failed: {e:?}")),
                }
            }));
        }
        {
            let (s, stats, every) = (state.clone(), stats.clone(), config.reward_sample_ms);
            threads.push(spawn("reward-sampler", stats.clone(), ms(every), rx.clone(), move || {
                stats.worker_ran("reward-sampler");
                match crate::app::incentives::sample(&s, every, crate::domain::now_secs()) {
                    Ok(_) => None,
                    Err(e) => Some(format!("reward sample failed: {e}")),
                }
            }));
        }
        {
            let (s, stats) = (state.clone(), stats.clone());
            threads.push(spawn("payouts", stats.clone(), ms(config.payout_check_ms), rx.clone(), move || {
                stats.worker_ran("payouts");
                match crate::app::incentives::run_due(&s) {
                    Ok(days) if days.is_empty() => None,
                    Ok(days) => Some(format!(
                        "paid rewards and rebates for {} days through {}",
                        days.len(),
                        crate::app::incentives::day_str(days[days.len() - 1].day)
                    )),
                    Err(e) => Some(format!("payout failed: {e}")),
                }
            }));
        }
        {
            let (s, stats) = (state.clone(), stats.clone());
            threads.push(spawn(
                "resolution",
                stats.clone(),
                ms(config.resolution_interval_ms),
                rx.clone(),
                move || {
                    stats.worker_ran("resolution");
                    match crate::app::resolution::run_due(&s) {
                        Ok(done) if done.is_empty() => None,
                        Ok(done) => Some(format!("resolved {} markets: {}", done.len(), done.join(", "))),
                        Err(e) => Some(format!("resolution failed: {e}")),
                    }
                },
            ));
        }
        {
            let (s, stats) = (state.clone(), stats.clone());
            threads.push(spawn("rfq-expiration", stats.clone(), ms(config.rfq_interval_ms), rx.clone(), move || {
                stats.worker_ran("rfq-expiration");
                match crate::app::rfq::expire_due(&s, crate::domain::now_secs()) {
                    Ok((0, 0)) => None,
                    Ok((r, q)) => Some(format!("expired {r} RFQ requests and {q} quotes")),
                    Err(e) => Some(format!("RFQ expiration failed: {e}")),
                }
            }));
        }
        threads.push(spawn("heartbeat-monitor", stats.clone(), ms(config.heartbeat_check_ms), rx, move || {
            stats.worker_ran("heartbeat-monitor");
            let silent = heartbeats.take_silent(Instant::now(), HEARTBEAT_TIMEOUT);
            if silent.is_empty() {
                return None;
            }
            let mut n = 0;
            for key in &silent {
                match engine.blocking().cancel_where(*key) {
                    Ok(c) => n += c.canceled.len(),
                    Err(e) => return Some(format!("heartbeat cancel failed: {e:?}")),
                }
            }
            stats.worker_cancelled("heartbeat-monitor", n);
            Some(format!("{} API keys missed their heartbeat: cancelled {n} orders", silent.len()))
        }));
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
/// heartbeat monitor that silently stops cancelling), and aborting, as the vital threads
/// do (`crate::vital`), would restart the exchange into the same panic at the worker's
/// first run. A run changes state through engine commands and synced writes, so one cut
/// short leaves what a crash at that point would, and later runs take up what is still due.
fn spawn(
    name: &'static str,
    stats: Arc<crate::metrics::Metrics>,
    every: Duration,
    stop: Receiver<()>,
    mut run: impl FnMut() -> Option<String> + Send + 'static,
) -> JoinHandle<()> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || loop {
            match stop.recv_timeout(every) {
                Err(RecvTimeoutError::Timeout) => {
                    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(&mut run)) {
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
        let h = super::spawn("worker-test", stats.clone(), Duration::from_millis(1), rx, move || {
            if counted.fetch_add(1, Ordering::Relaxed) == 0 {
                panic!("the worker test's first run panics");
            }
            None
        });
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
