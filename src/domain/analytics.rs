//! What the analytics indexes hold: a trade's tick, a wallet's running position sums, and
//! a wallet's non-trade activity. The store keeps their layouts (`store::index`).

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Amount, Price, Side};

/// Seconds in a UTC day.
pub const DAY: u64 = 86_400;

/// What `trades_by_market` holds per trade: enough for price history without reading the
/// trade itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tick {
    pub id: Uuid,
    /// The taker's token, price (1e-4) and side.
    #[serde(with = "super::packed")]
    pub asset_id: String,
    pub price: Price,
    pub size: Amount,
    pub side: Side,
}

impl Tick {
    /// The price of `token` at this trade (the other token of a binary market is 1 − p).
    pub fn price_of(&self, token: &str) -> Price {
        if self.asset_id == token {
            self.price
        } else {
            self.price.complement()
        }
    }
}

/// One wallet's running sums in one token, in micro-units. Tokens come in by buying
/// (`bought`, paying `cost` in collateral, fees included) and go out by selling (`sold`,
/// receiving `proceeds` net of fees); `size` is what is held.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Position {
    pub size: i64,
    pub bought: i64,
    pub cost: i64,
    pub sold: i64,
    pub proceeds: i64,
}

impl Position {
    pub fn negated(&self) -> Position {
        Position {
            size: -self.size,
            bought: -self.bought,
            cost: -self.cost,
            sold: -self.sold,
            proceeds: -self.proceeds,
        }
    }
    pub fn add(&mut self, o: &Position) {
        self.size += o.size;
        self.bought += o.bought;
        self.cost += o.cost;
        self.sold += o.sold;
        self.proceeds += o.proceeds;
    }
}

/// A wallet's non-trade activity: split, merge, redeem, conversion (SPEC §1.6) and reward
/// payouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CtfKind {
    Split,
    Merge,
    Redeem,
    /// A liquidity-reward payout (size and usdc_size are the amount paid).
    Reward,
    /// A negative-risk conversion (convertPositions).
    Conversion,
}

impl CtfKind {
    pub fn name(self) -> &'static str {
        match self {
            CtfKind::Split => "SPLIT",
            CtfKind::Merge => "MERGE",
            CtfKind::Redeem => "REDEEM",
            CtfKind::Reward => "REWARD",
            CtfKind::Conversion => "CONVERSION",
        }
    }
}

/// What `activity` holds per operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CtfActivity {
    pub kind: CtfKind,
    pub condition_id: String,
    pub market_idx: u32,
    /// Outcome tokens made (split) or burned (merge, redeem).
    pub size: Amount,
    /// Collateral paid in (split) or out (merge, redeem).
    pub usdc_size: Amount,
    pub tx_hash: [u8; 32],
    pub time: u64,
}

impl CtfActivity {
    /// The operation's id as a 0x transaction hash.
    pub fn tx_hex(&self) -> String {
        format!("0x{}", alloy_primitives::hex::encode(self.tx_hash))
    }
}
