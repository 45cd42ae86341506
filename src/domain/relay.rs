//! The relayer's records: a wallet transaction its owner signed and predex executed for it
//! (docs/reference/relay.md), in the shape Polymarket's relayer answers.

use alloy_primitives::Address;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Polygon's USDC.e, ConditionalTokens, negative-risk adapter and Safe MultiSend: the
/// contracts a Polymarket client calls, and the relayer's defaults in ledger mode.
pub const POLYGON_COLLATERAL: &str = "0x2791Bca1f2de4661ED88A30C99A7a9449Aa84174";
pub const POLYGON_CTF: &str = "0x4D97DCd97eC945f40cF65F87097ACe5EA0476045";
pub const POLYGON_NEG_RISK_ADAPTER: &str = "0xd91E80cF2E7be2e162c6513ceD06f1dD0dA35296";
pub const POLYGON_SAFE_MULTISEND: &str = "0xA238CBeb142c10Ef7Ad8442C6D1f9E89e07e7761";
/// Polygon's relay hub (GSN v1), through which a proxy wallet's calls are relayed.
pub const POLYGON_RELAY_HUB: &str = "0xD216153c06E857cD7f72665E0aF1d7D82172F494";

/// The venue's contracts a relayed call may reach.
#[derive(Debug, Clone)]
pub struct RelayContracts {
    pub collateral: Address,
    pub ctf: Address,
    pub adapter: Address,
    /// Both versions' exchanges, standard and negative risk, version 1's first.
    pub exchanges: Vec<Address>,
    pub multisend: Address,
    pub safe_factory: Address,
    pub proxy_factory: Address,
    pub relay_hub: Address,
    /// The account that relays proxy-wallet calls (`GET /relay-payload`): none in ledger
    /// mode (the zero address).
    pub relay: Address,
}

impl RelayContracts {
    /// Who may be given an allowance or an operator's approval: the exchanges, the adapter
    /// and ConditionalTokens (which `splitPosition` pulls collateral into).
    pub fn spender(&self, a: Address) -> bool {
        a == self.ctf || a == self.adapter || self.exchanges.contains(&a)
    }
}

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
