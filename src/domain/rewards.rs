//! Reward records (docs/reference/rewards.md): a market's reward program, a maker's paid rewards
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

/// How much an order resting at `price` (YES terms, 1e-4 units) weighs in a program of
/// `max_spread` around the midpoint `mid2` (best bid + best ask, i.e. twice the midpoint):
/// `(v − s)²` with v the max spread and s the order's distance from the midpoint, both in
/// half price units (the midpoint may fall between two units). None at or beyond the max
/// spread: the order does not score.
pub fn reward_weight(price: u32, mid2: u32, max_spread: u32) -> Option<u128> {
    let (s2, v2) = ((2 * price).abs_diff(mid2), 2 * max_spread);
    (s2 < v2).then(|| ((v2 - s2) as u128).pow(2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weight_falls_with_distance_and_ends_at_the_max_spread() {
        // Midpoint 0.45 (bid 0.40, ask 0.50), max spread 3¢.
        let mid2 = 4000 + 5000;
        assert_eq!(reward_weight(4500, mid2, 300), Some(600u128.pow(2)));
        assert_eq!(reward_weight(4400, mid2, 300), Some(400u128.pow(2)));
        assert_eq!(reward_weight(4600, mid2, 300), Some(400u128.pow(2)), "both sides alike");
        assert_eq!(reward_weight(4201, mid2, 300), Some(2u128.pow(2)));
        assert_eq!(reward_weight(4200, mid2, 300), None, "exactly the max spread scores nothing");
        assert_eq!(reward_weight(4000, mid2, 300), None);
    }
}
