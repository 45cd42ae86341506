//! Ledger settlement: PENDING trades settled in the embedded ledger by engine commands, a
//! chunk at a time (chain mode settles on chain instead: `chain_settlement`).

use std::sync::Arc;

use crate::engine::{EngineError, EngineHandle};
use crate::metrics::Metrics;

/// Trades settled per engine command: bounds how long one settlement command holds the
/// engine, so its group commit stays light beside the order flow (docs/internals/performance.md);
/// a pass repeats until the queue is empty.
pub const SETTLE_CHUNK: usize = 128;

/// Settles every PENDING trade now; returns (confirmed, failed).
pub fn settle_all(engine: &EngineHandle) -> Result<(usize, usize), EngineError> {
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

/// The settlement worker of ledger mode.
pub struct LedgerSettlement {
    pub engine: EngineHandle,
    pub stats: Arc<Metrics>,
}

impl LedgerSettlement {
    /// One pass; a line for the log when something happened.
    pub fn pass(&mut self) -> Option<String> {
        match settle_all(&self.engine) {
            Ok((0, 0)) => None,
            Ok((c, f)) => {
                self.stats.settled(c, f);
                Some(format!("settled {} trades: {c} confirmed, {f} failed", c + f))
            }
            Err(e) => Some(format!("settlement stopped: {e:?}")),
        }
    }
}
