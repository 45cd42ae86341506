//! Bridge records (SPEC §2.18, docs/reference/bridge.md): deposits and withdrawals, and what a
//! registered bridge address stands for.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TransferKind {
    Deposit,
    Withdrawal,
}

/// Polymarket's bridge statuses that ledger mode uses: a withdrawal is PROCESSING until the
/// operator completes or fails it; a confirmed deposit is COMPLETED at once (or FAILED when
/// it cannot be credited: below the minimum, or not covering the fees).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Status {
    Processing,
    Completed,
    Failed,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Processing => "PROCESSING",
            Status::Completed => "COMPLETED",
            Status::Failed => "FAILED",
        }
    }
}

/// What a registered bridge address stands for: a wallet's deposits, or a wallet's
/// withdrawals to one destination.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BridgeAddress {
    pub kind: TransferKind,
    pub owner: String,
}

/// One deposit or withdrawal.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Transfer {
    pub id: u64,
    pub kind: TransferKind,
    /// The exchange wallet credited or debited.
    pub owner: String,
    pub bridge_address: String,
    pub from_chain_id: String,
    pub from_token_address: String,
    pub from_amount: String,
    pub to_chain_id: String,
    pub to_token_address: String,
    pub to_amount: String,
    pub recipient: Option<String>,
    /// Collateral micro-units credited (deposit) or debited (withdrawal).
    pub ledger_amount: u64,
    pub status: Status,
    /// The source transaction of a deposit; the destination transaction of a withdrawal.
    pub tx_hash: Option<String>,
    pub reason: Option<String>,
    pub created_ms: u64,
    pub updated_ms: u64,
}
