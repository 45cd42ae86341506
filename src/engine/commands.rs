//! What the engine thread is asked to do: its commands, their replies and its errors.

use std::sync::Arc;

use tokio::sync::oneshot;
use uuid::Uuid;

use super::{BlockTrade, Canceled, Overview, Placed, Reject, RewardScores, Verdict};
use crate::domain::{Amount, Market, OrderRecord};
use crate::ledger::Account;
use crate::store::Batch;

/// Why a command did not complete.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    #[error("rejected: {0:?}")]
    Rejected(Reject),
    /// The durable write failed; nothing was acknowledged.
    #[error("the write was not made durable")]
    Storage,
    /// The market already exists.
    #[error("market already exists")]
    Exists,
    /// The engine thread is gone.
    #[error("the engine is not running")]
    Down,
}

pub(super) type Reply<T> = oneshot::Sender<Result<T, EngineError>>;

/// A move of one ledger account (micro-units).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LedgerChange {
    Credit(Amount),
    Debit(Amount),
    /// The settled balance is this (chain mode: what the chain holds for the account).
    Set(Amount),
}

pub enum Command {
    /// Places an order; `records` (a builder's attribution) are written with it when it is
    /// accepted.
    Place {
        order: Arc<OrderRecord>,
        defer: bool,
        records: Batch,
        reply: Reply<Placed>,
    },
    Cancel {
        owner: Uuid,
        ids: Vec<Uuid>,
        reply: Reply<Canceled>,
    },
    CancelWhere {
        owner: Uuid,
        market: Option<String>,
        asset: Option<String>,
        reply: Reply<Canceled>,
    },
    CreateMarket {
        market: Box<Market>,
        reply: Reply<Market>,
    },
    /// Credits and debits accounts of one address, all or none, writing `records` (what
    /// explains the move: a bridge deposit or withdrawal, a split, merge or redeem) in the
    /// same atomic batch. A debit takes only what is settled and not reserved by open
    /// orders or unsettled trades. Replies the accounts after the change, in order.
    Transfer {
        address: String,
        changes: Vec<(String, LedgerChange)>,
        records: Batch,
        reply: Reply<Vec<Account>>,
    },
    ReleaseDeferred {
        ids: Option<Vec<Uuid>>,
        reply: Reply<Vec<Placed>>,
    },
    Accounts {
        address: String,
        reply: Reply<Vec<(String, Account)>>,
    },
    /// Answers at once: the watchdog's proof that the engine thread is taking commands.
    Ping {
        reply: Reply<()>,
    },
    /// Settles up to `max` PENDING trades; replies (confirmed, failed).
    Settle {
        max: usize,
        reply: Reply<(usize, usize)>,
    },
    /// Chain mode: settles the trades as the chain decided, writing `records` (the
    /// settlement transactions' records, done with) in the same batch; replies
    /// (confirmed, failed).
    SettleDecided {
        decided: Vec<(Uuid, Verdict)>,
        records: Batch,
        reply: Reply<(usize, usize)>,
    },
    /// PENDING trades matched after a trade sequence, oldest first; read-only.
    PendingAfter {
        seq: u64,
        max: usize,
        reply: Reply<Vec<Arc<crate::domain::TradeRecord>>>,
    },
    /// Cancels the open GTD orders whose expiration passed; replies their IDs.
    Expire {
        reply: Reply<Vec<Uuid>>,
    },
    /// incrementNonce for a maker address; replies the new nonce and the cancelled orders.
    IncrementNonce {
        address: String,
        /// Written with it (the relayer's record of the transaction that asked).
        records: Batch,
        reply: Reply<(u64, Vec<Uuid>)>,
    },
    /// A maker's nonce as the exchange holds it (`Core::raise_nonce`).
    RaiseNonce {
        address: String,
        nonce: u64,
        reply: Reply<(u64, Vec<Uuid>)>,
    },
    /// Every open version 2 order of a maker who paused itself on the exchange; replies
    /// the cancelled ones.
    CancelMaker {
        address: String,
        reply: Reply<Vec<Uuid>>,
    },
    /// A maker's own cancel of its open orders (`Core::cancel_own`), written with
    /// `records` (the relayer's record of the transaction that asked); replies them.
    CancelOwn {
        maker: String,
        ids: Vec<Uuid>,
        records: Batch,
        reply: Reply<Vec<Uuid>>,
    },
    /// Orders their makers cancelled on the exchange; replies the ones that were open.
    CancelSigned {
        ids: Vec<Uuid>,
        reply: Reply<Vec<Uuid>>,
    },
    /// Trades whose settlement transaction was mined (`Core::mark_mined`).
    MarkMined {
        ids: Vec<Uuid>,
        hash: String,
        reply: Reply<usize>,
    },
    /// The makers of open orders and their nonces; read-only.
    OpenMakers {
        reply: Reply<Vec<(String, u64)>>,
    },
    /// Liquidity-reward scores of markets' resting orders: (market, max spread, min size)
    /// each; read-only.
    RewardScores {
        queries: Vec<(u32, u32, u64)>,
        reply: Reply<Vec<Option<RewardScores>>>,
    },
    /// Sets a market's fee description for version 2 takers (None: no fee).
    SetFees {
        condition_id: String,
        fees: Option<crate::domain::FeeSchedule>,
        reply: Reply<()>,
    },
    /// Stops trading on a market and cancels its open orders; replies their IDs.
    CloseMarket {
        condition_id: String,
        reply: Reply<Vec<Uuid>>,
    },
    /// A negotiated (RFQ) trade, written with `records` (the RFQ's new state) in one atomic
    /// batch; replies the PENDING trade.
    BlockTrade {
        trade: Box<BlockTrade>,
        records: Batch,
        reply: Reply<Arc<crate::domain::TradeRecord>>,
    },
    /// Resting orders per market and the settlement backlog (the operator's dashboard).
    Overview {
        reply: Reply<Overview>,
    },
    /// Runs the invariant checks (tests and operators).
    Check {
        reply: Reply<Result<(), String>>,
    },
}
