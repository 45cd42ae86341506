//! Bond records (docs/reference/resolution.md): agents' bonds, a market's proposed resolution, and
//! question auctions with their bids.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum BondStatus {
    Posted,
    Released,
    Slashed,
}

impl BondStatus {
    pub fn name(self) -> &'static str {
        match self {
            BondStatus::Posted => "POSTED",
            BondStatus::Released => "RELEASED",
            BondStatus::Slashed => "SLASHED",
        }
    }
}

/// An agent's bond on one market.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bond {
    pub agent: String,
    pub condition_id: String,
    pub cluster_id: u64,
    /// Escrowed collateral, micro-units.
    pub amount: u64,
    pub status: BondStatus,
    pub posted_at: u64,
}

/// A market's proposed resolution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    pub condition_id: String,
    pub outcome: u8,
    pub proposer: String,
    pub proposed_at: u64,
    pub disputed_by: Option<String>,
    pub disputed_at: Option<u64>,
    pub resolved: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Auction {
    pub condition_id: String,
    pub opened_at: u64,
    pub closes_at: u64,
    pub closed: bool,
    pub winner: Option<String>,
    pub winning_amount: u64,
}

/// An agent's bids on one auction, summed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bid {
    pub agent: String,
    pub amount: u64,
    pub last_bid_at: u64,
}
