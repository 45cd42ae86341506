//! Chain mode's records.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A transaction predex signs — a settlement, a wallet transaction the relayer sends, or a
/// resolved market's payouts reported —
/// recorded (synced) before it is broadcast and deleted in the batch that applies its
/// outcome, so the records held at any moment are exactly the transactions sent, or about
/// to be, whose outcome is not applied yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainTx {
    /// Its account's nonce.
    pub nonce: u64,
    /// Its hash (32 bytes).
    pub hash: [u8; 32],
    /// The signed transaction as broadcast (EIP-2718 bytes): sent again unchanged.
    pub raw: Vec<u8>,
    /// The trades it settles (one taker and its makers), in the order they matched.
    pub trades: Vec<Uuid>,
    /// The last of them, by sequence.
    pub last_seq: u64,
    /// UNIX seconds of its signing (of its replacement, once replaced).
    pub sent_at: u64,
    /// The relayer's transaction it sends (then `trades` is empty), for a wallet.
    pub relay: Option<Uuid>,
    /// The account that signed it when it is not the operator (a relayer key of its own).
    pub account: Option<[u8; 20]>,
    /// The resolved market whose payouts it reports (then `trades` is empty), by condition
    /// id.
    pub report: Option<String>,
    /// The hashes of the transactions it replaced (its nonce signed at lower fees, left in
    /// the node's pool), oldest first: until one is mined, any of them may be.
    pub replaced: Vec<[u8; 32]>,
}

impl ChainTx {
    /// Who sent it and its nonce: the order its account's transactions are decided in
    /// (the operator's, `None`, first).
    pub fn key(&self) -> (Option<[u8; 20]>, u64) {
        (self.account, self.nonce)
    }
}

/// A resolved market's payouts as reported to the chain (chain mode): due from the moment
/// the market resolves, sent by the settlement worker in a recorded transaction
/// (ConditionalTokens' `reportPayouts`, or the negative-risk adapter's `reportOutcome`),
/// and followed as a settlement is: PENDING, MINED, CONFIRMED or FAILED.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PayoutReport {
    pub condition_id: String,
    /// The winning outcome's index (0: YES).
    pub winner: u8,
    pub state: ReportState,
    /// The transaction that reports it, once signed (and recorded with it).
    pub hash: Option<[u8; 32]>,
    /// Why it failed.
    pub error: Option<String>,
}

/// Where a [`PayoutReport`] stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReportState {
    Pending,
    Mined,
    Confirmed,
    Failed,
}

impl ReportState {
    /// As a trade's status is shown.
    pub fn as_str(self) -> &'static str {
        match self {
            ReportState::Pending => "PENDING",
            ReportState::Mined => "MINED",
            ReportState::Confirmed => "CONFIRMED",
            ReportState::Failed => "FAILED",
        }
    }
}
