//! The engine's sending side ([`EngineHandle`]): each call is a command sent to the
//! engine thread and its reply awaited (or, from a worker's OS thread, blocked on).

use std::sync::Arc;

use crossbeam_channel::Sender;
use tokio::sync::oneshot;
use uuid::Uuid;

use super::claims::Claims;
use super::commands::{Command, EngineError, LedgerChange, Reply};
use super::{BlockTrade, Canceled, Overview, Placed, Reject, RewardScores, Verdict};
use crate::domain::{now_secs, Amount, Market, OrderRecord};
use crate::ledger::Account;
use crate::store::Batch;

/// The sending side, cloned into every handler.
#[derive(Clone)]
pub struct EngineHandle {
    pub(super) tx: Sender<Command>,
    pub(super) claims: Arc<Claims>,
}

impl EngineHandle {
    async fn call<T>(&self, make: impl FnOnce(Reply<T>) -> Command) -> Result<T, EngineError> {
        self.request(make)?.await.map_err(|_| EngineError::Down)?
    }

    pub async fn submit(&self, order: OrderRecord, defer: bool) -> Result<Placed, EngineError> {
        self.submit_with(order, defer, Batch::default()).await
    }
    /// Submits an order to the engine unless one with its id was sent in the last minute or two (see
    /// [`Claims`]); a refused order's id may be sent again.
    pub async fn submit_with(&self, order: OrderRecord, defer: bool, records: Batch) -> Result<Placed, EngineError> {
        let id = order.id;
        if !self.claims.claim(id, now_secs()) {
            return Err(EngineError::Rejected(Reject::Duplicated));
        }
        let placed = self.call(|reply| Command::Place { order: Arc::new(order), defer, records, reply }).await;
        // Only a refusal gives the id back: an order the engine may have accepted (no reply)
        // keeps it.
        if let Err(EngineError::Rejected(_)) = placed {
            self.claims.release(&id);
        }
        placed
    }
    pub async fn cancel(&self, owner: Uuid, ids: Vec<Uuid>) -> Result<Canceled, EngineError> {
        self.call(|reply| Command::Cancel { owner, ids, reply }).await
    }
    pub async fn cancel_where(
        &self,
        owner: Uuid,
        market: Option<String>,
        asset: Option<String>,
    ) -> Result<Canceled, EngineError> {
        self.call(|reply| Command::CancelWhere { owner, market, asset, reply }).await
    }
    pub async fn create_market(&self, market: Market) -> Result<Market, EngineError> {
        self.call(|reply| Command::CreateMarket { market: Box::new(market), reply }).await
    }
    pub async fn credit(&self, address: String, asset: String, amount: Amount) -> Result<Account, EngineError> {
        let accounts = self.transfer(address, vec![(asset, LedgerChange::Credit(amount))], Batch::default()).await?;
        Ok(accounts[0])
    }
    pub async fn transfer(
        &self,
        address: String,
        changes: Vec<(String, LedgerChange)>,
        records: Batch,
    ) -> Result<Vec<Account>, EngineError> {
        self.call(|reply| Command::Transfer { address, changes, records, reply }).await
    }
    pub async fn release_deferred(&self, ids: Option<Vec<Uuid>>) -> Result<Vec<Placed>, EngineError> {
        self.call(|reply| Command::ReleaseDeferred { ids, reply }).await
    }
    pub async fn settle_decided(
        &self,
        decided: Vec<(Uuid, Verdict)>,
        records: Batch,
    ) -> Result<(usize, usize), EngineError> {
        self.call(|reply| Command::SettleDecided { decided, records, reply }).await
    }
    pub async fn pending_after(
        &self,
        seq: u64,
        max: usize,
    ) -> Result<Vec<Arc<crate::domain::TradeRecord>>, EngineError> {
        self.call(|reply| Command::PendingAfter { seq, max, reply }).await
    }
    pub async fn accounts(&self, address: String) -> Result<Vec<(String, Account)>, EngineError> {
        self.call(|reply| Command::Accounts { address, reply }).await
    }
    pub async fn overview(&self) -> Result<Overview, EngineError> {
        self.call(|reply| Command::Overview { reply }).await
    }
    pub async fn check(&self) -> Result<Result<(), String>, EngineError> {
        self.call(|reply| Command::Check { reply }).await
    }
    pub async fn expire(&self) -> Result<Vec<Uuid>, EngineError> {
        self.call(|reply| Command::Expire { reply }).await
    }
    pub async fn block_trade(
        &self,
        trade: BlockTrade,
        records: Batch,
    ) -> Result<Arc<crate::domain::TradeRecord>, EngineError> {
        self.call(|reply| Command::BlockTrade { trade: Box::new(trade), records, reply }).await
    }
    pub async fn increment_nonce(&self, address: String, records: Batch) -> Result<(u64, Vec<Uuid>), EngineError> {
        self.call(|reply| Command::IncrementNonce { address, records, reply }).await
    }
    pub async fn raise_nonce(&self, address: String, nonce: u64) -> Result<(u64, Vec<Uuid>), EngineError> {
        self.call(|reply| Command::RaiseNonce { address, nonce, reply }).await
    }
    pub async fn cancel_maker(&self, address: String) -> Result<Vec<Uuid>, EngineError> {
        self.call(|reply| Command::CancelMaker { address, reply }).await
    }
    pub async fn cancel_own(&self, maker: String, ids: Vec<Uuid>, records: Batch) -> Result<Vec<Uuid>, EngineError> {
        self.call(|reply| Command::CancelOwn { maker, ids, records, reply }).await
    }
    pub async fn cancel_signed(&self, ids: Vec<Uuid>) -> Result<Vec<Uuid>, EngineError> {
        self.call(|reply| Command::CancelSigned { ids, reply }).await
    }
    pub async fn mark_mined(&self, ids: Vec<Uuid>, hash: String) -> Result<usize, EngineError> {
        self.call(|reply| Command::MarkMined { ids, hash, reply }).await
    }
    pub async fn reward_scores(&self, queries: Vec<(u32, u32, u64)>) -> Result<Vec<Option<RewardScores>>, EngineError> {
        self.call(|reply| Command::RewardScores { queries, reply }).await
    }
    pub async fn open_makers(&self) -> Result<Vec<(String, u64)>, EngineError> {
        self.call(|reply| Command::OpenMakers { reply }).await
    }
    /// Sets a market's fee description for version 2 takers; replies once it is durable.
    pub async fn set_fees(
        &self,
        condition_id: String,
        fees: Option<crate::domain::FeeSchedule>,
    ) -> Result<(), EngineError> {
        self.call(|reply| Command::SetFees { condition_id, fees, reply }).await
    }

    /// The same calls from a worker's OS thread (never from a tokio worker): waits for the
    /// reply by blocking the thread.
    pub fn blocking(&self) -> Blocking<'_> {
        Blocking(self)
    }

    fn request<T>(
        &self,
        make: impl FnOnce(Reply<T>) -> Command,
    ) -> Result<oneshot::Receiver<Result<T, EngineError>>, EngineError> {
        let (tx, rx) = oneshot::channel();
        self.tx.send(make(tx)).map_err(|_| EngineError::Down)?;
        Ok(rx)
    }
}

/// Blocking engine calls for the workers' threads.
pub struct Blocking<'a>(&'a EngineHandle);

impl Blocking<'_> {
    fn call<T>(&self, make: impl FnOnce(Reply<T>) -> Command) -> Result<T, EngineError> {
        self.0.request(make)?.blocking_recv().map_err(|_| EngineError::Down)?
    }
    pub fn settle(&self, max: usize) -> Result<(usize, usize), EngineError> {
        self.call(|reply| Command::Settle { max, reply })
    }
    pub fn expire(&self) -> Result<Vec<Uuid>, EngineError> {
        self.call(|reply| Command::Expire { reply })
    }
    pub fn ping(&self) -> Result<(), EngineError> {
        self.call(|reply| Command::Ping { reply })
    }
    pub fn cancel_where(&self, owner: Uuid) -> Result<Canceled, EngineError> {
        self.call(|reply| Command::CancelWhere { owner, market: None, asset: None, reply })
    }
    pub fn close_market(&self, condition_id: String) -> Result<Vec<Uuid>, EngineError> {
        self.call(|reply| Command::CloseMarket { condition_id, reply })
    }
    pub fn reward_scores(&self, queries: Vec<(u32, u32, u64)>) -> Result<Vec<Option<RewardScores>>, EngineError> {
        self.call(|reply| Command::RewardScores { queries, reply })
    }
    pub fn transfer(
        &self,
        address: String,
        changes: Vec<(String, LedgerChange)>,
        records: Batch,
    ) -> Result<Vec<Account>, EngineError> {
        self.call(|reply| Command::Transfer { address, changes, records, reply })
    }
}
