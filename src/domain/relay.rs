//! The relayer's records: a wallet transaction its owner signed and predex executed for it
//! (docs/reference/relay.md), in the shape Polymarket's relayer answers.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// What a relayed transaction does: deploy the owner's Safe, or run calls from it (or from
/// the owner's proxy wallet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RelayKind {
    Safe,
    SafeCreate,
    Proxy,
}

impl RelayKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RelayKind::Safe => "SAFE",
            RelayKind::SafeCreate => "SAFE-CREATE",
            RelayKind::Proxy => "PROXY",
        }
    }

    pub fn parse(s: &str) -> Option<RelayKind> {
        match s {
            "SAFE" => Some(RelayKind::Safe),
            "SAFE-CREATE" => Some(RelayKind::SafeCreate),
            "PROXY" => Some(RelayKind::Proxy),
            _ => None,
        }
    }
}

/// Where a relayed transaction is: Polymarket's relayer states. Ledger mode writes a
/// transaction CONFIRMED (or FAILED) in the command that applies it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RelayState {
    New,
    Executed,
    Mined,
    Confirmed,
    Failed,
}

impl RelayState {
    pub fn as_str(self) -> &'static str {
        match self {
            RelayState::New => "STATE_NEW",
            RelayState::Executed => "STATE_EXECUTED",
            RelayState::Mined => "STATE_MINED",
            RelayState::Confirmed => "STATE_CONFIRMED",
            RelayState::Failed => "STATE_FAILED",
        }
    }
}

/// A relayed transaction as recorded: what the owner signed, and its outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelayTx {
    pub id: Uuid,
    pub hash: [u8; 32],
    pub kind: RelayKind,
    /// The owner who signed (lowercase 0x).
    pub from: String,
    /// The contract called: the Safe factory, the called contract or MultiSend, the proxy
    /// factory (lowercase 0x).
    pub to: String,
    /// The owner's wallet (lowercase 0x).
    pub wallet: String,
    /// The call data (0x hex).
    pub data: String,
    /// The wallet's nonce the owner signed with (empty for SAFE-CREATE).
    pub nonce: String,
    pub signature: String,
    pub state: RelayState,
    /// Who submitted it: the builder, relayer or L2 key's id.
    pub owner: String,
    pub metadata: String,
    /// UNIX milliseconds.
    pub created_at: u64,
    pub updated_at: u64,
    pub error: Option<String>,
}
