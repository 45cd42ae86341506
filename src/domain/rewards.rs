//! Incentive records (docs/rewards.md): a market's reward program, a maker's paid rewards
//! and its maker rebate for a day.

use serde::{Deserialize, Serialize};

/// A market's liquidity-reward program.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewardConfig {
    pub condition_id: String,
    /// Collateral paid out per UTC day across the market's makers, micro-units.
    pub rate_per_day: u64,
    /// Smallest resting order that scores, token micro-units.
    pub min_size: u64,
    /// Farthest from the midpoint an order scores, 1e-4 price units.
    pub max_spread: u32,
    /// The program's window, UNIX seconds (None: open-ended).
    pub start: Option<u64>,
    pub end: Option<u64>,
}

impl RewardConfig {
    pub fn active(&self, now: u64) -> bool {
        self.rate_per_day > 0 && self.start.is_none_or(|s| now >= s) && self.end.is_none_or(|e| now < e)
    }
}

/// A maker's paid rewards for a day.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewardPaid {
    pub day: u32,
    pub amount: u64,
    pub paid_at: u64,
}

/// A maker's rebate for a day.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rebate {
    pub day: u32,
    /// Settled maker volume, collateral micro-units.
    pub volume: u64,
    pub bps: u32,
    pub amount: u64,
    pub paid_at: u64,
}
