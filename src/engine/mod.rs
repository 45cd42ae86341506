//! The matching engine: one OS thread owns every book and the ledger (see `core`), fed by
//! a crossbeam channel; HTTP handlers reach it only through [`EngineHandle`].
//!
//! One thread rather than one per market group: collateral is one balance shared by every
//! market, so reservation checks must be serialised across markets; a single writer does
//! that without locks, and at ~1 µs a command it is far from the bottleneck on a 2-core
//! machine (HTTP, HMAC and signature recovery run on the tokio workers in parallel).
//!
//! Each command's writes go to the persister as one batch; its reply and the book
//! snapshots it changed are released only after that batch is durable.

pub mod book;
pub mod core;
#[cfg(test)]
mod proptests;

use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};
use tokio::sync::oneshot;
use uuid::Uuid;

use crate::commit::bus::Feeds;
use crate::commit::persister::Job;
use crate::commit::views::{BookDelta, BookSnapshot, MarketView, Registry};
use crate::commit::{After, Visible};
pub use crate::domain::NonceState;
use crate::domain::{now_millis, now_secs, Amount, LastTrade, Market, OrderRecord, Price};
use crate::ledger::Account;
use crate::store::{Batch, Store, StoreError};
pub use core::{BlockTrade, Canceled, Core, Overview, Placed, Reject, RewardScores, Settled, Verdict};

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

type Reply<T> = oneshot::Sender<Result<T, EngineError>>;

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
        reply: Reply<(u64, Vec<Uuid>)>,
    },
    /// A maker's nonce as the exchange holds it (`Core::raise_nonce`).
    RaiseNonce {
        address: String,
        nonce: u64,
        reply: Reply<(u64, Vec<Uuid>)>,
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

/// The sending side, cloned into every handler.
#[derive(Clone)]
pub struct EngineHandle {
    tx: Sender<Command>,
    claims: Arc<Claims>,
}

/// Seconds a generation of [`Claims`] covers: far beyond any group commit's latency.
const CLAIM_SECS: u64 = 60;

/// The ids of the orders sent to the engine in the last one to two minutes: duplicate
/// detection for an order resubmitted before its first acceptance is durable (the handler's
/// store lookup cannot see it yet) or while it is still on its way. An order accepted longer
/// ago is in the store, and an open one in the engine's own map, which the engine checks.
///
/// The request's worker claims the id before sending the order and gives it back if the
/// engine refuses the order, so of two submissions of one signed order only one reaches
/// the engine at a time. The check used to run on the engine thread, where each placement
/// paid a cold probe of a table of millions of ids (≈ 25–45 ns of the matching thread's
/// serial time); here it runs on the workers, in parallel, under a lock the engine never
/// takes. Two generations, the older dropped every [`CLAIM_SECS`], keep it bounded.
#[derive(Debug, Default)]
struct Claims(parking_lot::Mutex<Generations>);

#[derive(Debug, Default)]
struct Generations {
    current: foldhash::HashSet<Uuid>,
    previous: foldhash::HashSet<Uuid>,
    since: u64,
}

impl Claims {
    /// Claims `id` at `now` (seconds); false when it is claimed already.
    fn claim(&self, id: Uuid, now: u64) -> bool {
        let mut g = self.0.lock();
        if now >= g.since + CLAIM_SECS {
            // The expired generation's table becomes the new one, emptied but keeping its
            // capacity: at a steady rate a generation never grows (rehashes) again.
            let g = &mut *g;
            std::mem::swap(&mut g.current, &mut g.previous);
            g.current.clear();
            g.since = now;
        }
        if g.previous.contains(&id) {
            return false;
        }
        g.current.insert(id)
    }

    /// Gives back a claim whose order the engine refused.
    fn release(&self, id: &Uuid) {
        let mut g = self.0.lock();
        if !g.current.remove(id) {
            g.previous.remove(id);
        }
    }
}

impl EngineHandle {
    async fn call<T>(&self, make: impl FnOnce(Reply<T>) -> Command) -> Result<T, EngineError> {
        self.request(make)?.await.map_err(|_| EngineError::Down)?
    }

    pub async fn place(&self, order: OrderRecord, defer: bool) -> Result<Placed, EngineError> {
        self.place_with(order, defer, Batch::default()).await
    }
    /// Places an order unless one with its id was sent in the last minute or two (see
    /// [`Claims`]); a refused order's id may be sent again.
    pub async fn place_with(&self, order: OrderRecord, defer: bool, records: Batch) -> Result<Placed, EngineError> {
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
    pub async fn increment_nonce(&self, address: String) -> Result<(u64, Vec<Uuid>), EngineError> {
        self.call(|reply| Command::IncrementNonce { address, reply }).await
    }
    pub async fn raise_nonce(&self, address: String, nonce: u64) -> Result<(u64, Vec<Uuid>), EngineError> {
        self.call(|reply| Command::RaiseNonce { address, nonce, reply }).await
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

/// Rebuilds the core from the store: markets, balances, nonces, and every open order in
/// its original priority. Signatures are not re-verified: the recovered signer is stored.
pub fn recover(store: &Store, fee_address: String) -> Result<Core, StoreError> {
    let mut core = Core::new(fee_address);
    let mut markets = store.markets()?;
    markets.sort_by_key(|m| m.idx);
    for m in markets {
        let idx = m.idx;
        core.add_market(m);
        core.markets[idx as usize].last_trade = store.last_trade(idx)?;
    }
    for (addr, asset, bal) in store.balances()? {
        core.ledger.load(&addr, &asset, bal);
    }
    for (maker, n) in store.nonces()? {
        core.restore_nonce(maker, n);
    }
    core.reserve(store.estimate_open_orders());
    let mut memo = self::core::RestoreMemo::default();
    store.for_each_open_order(|o| core.restore(o, &mut memo))?;
    for t in store.pending_trades()? {
        core.restore_pending(t);
    }
    (core.next_order_seq, core.next_trade_seq) = store.next_sequences()?;
    Ok(core)
}

/// Starts the engine thread over a recovered core.
pub fn spawn(
    mut core: Core,
    registry: Arc<Registry>,
    persist: Sender<Job>,
    events: Feeds,
    metrics: Arc<crate::metrics::Metrics>,
) -> (EngineHandle, std::thread::JoinHandle<()>) {
    let (tx, rx) = crossbeam_channel::bounded::<Command>(65_536);
    let mut views: Vec<Arc<MarketView>> = Vec::new();
    for ms in &core.markets {
        let v = view_of(&core, ms.market.idx);
        registry.add(v.clone());
        views.push(v);
    }
    let h = crate::essential::spawn("engine", move || {
        for ms in &mut core.markets {
            // The views start from the reloaded books; later changes come as deltas.
            ms.book.take_changes();
        }
        let last_trade = core.markets.iter().map(|m| m.last_trade).collect();
        let mut out = Outlets { seqs: vec![0; views.len()], last_trade, views, persist, events };
        run(&mut core, rx, registry, &mut out, &metrics)
    });
    (EngineHandle { tx, claims: Arc::default() }, h)
}

/// Where a command's results go: the persister, then the readers' snapshots and the feeds.
struct Outlets {
    views: Vec<Arc<MarketView>>,
    /// Publication sequence per market, and the last trade published.
    seqs: Vec<u64>,
    last_trade: Vec<LastTrade>,
    persist: Sender<Job>,
    events: Feeds,
}

/// A market's view for the readers, from the engine's state: its book as it stands and the
/// tokens the engine shares with every order placed on it.
fn view_of(core: &Core, idx: u32) -> Arc<MarketView> {
    let ms = &core.markets[idx as usize];
    Arc::new(MarketView::new(ms.market.clone(), ms.order_tokens.clone(), snapshot_of(core, idx, 0)))
}

fn snapshot_of(core: &Core, idx: u32, seq: u64) -> BookSnapshot {
    let ms = &core.markets[idx as usize];
    BookSnapshot {
        bids: ms.book.depth(book::BookSide::Bid),
        asks: ms.book.depth(book::BookSide::Ask),
        last_trade: ms.last_trade,
        timestamp_ms: now_millis(),
        seq,
    }
}

/// The fine tick a market moves to (Polymarket's rule): when its YES price passes 0.96 or
/// 0.04 — a best bid above 0.96, a best ask below 0.04, or a last trade beyond either — a
/// market on a coarser tick moves to 0.001. It never moves back: every price on the coarse
/// tick stays on the fine one, so no resting order or client quote becomes invalid.
pub fn finer_tick(tick: Price, best: (Option<u32>, Option<u32>), last_trade: Option<Price>) -> Option<Price> {
    const FINE: u32 = 10;
    const HIGH: u32 = 9_600;
    const LOW: u32 = 400;
    let extreme = best.0.is_some_and(|b| b > HIGH)
        || best.1.is_some_and(|a| a < LOW)
        || last_trade.is_some_and(|p| !(LOW..=HIGH).contains(&p.units()));
    let tick = tick.units();
    (tick > FINE && tick.is_multiple_of(FINE) && extreme).then_some(Price(FINE))
}

/// Sends a batch to the persister with what follows it; with nothing to write, that
/// follows at once.
fn commit(persist: &Sender<Job>, batch: Batch, after: After) {
    if batch.is_empty() {
        after.run(true);
        return;
    }
    if let Err(e) = persist.send(Job { batch, after }) {
        e.into_inner().after.run(false);
    }
}

/// The reply of an engine command once its write is durable, or its failure.
fn reply_with<T: Send + 'static>(reply: Reply<T>, result: T) -> crate::commit::Reply {
    Box::new(move |ok| {
        let _ = reply.send(if ok { Ok(result) } else { Err(EngineError::Storage) });
    })
}

/// The book changes of the markets a command touched — only of those whose book or last
/// trade changed, so each sequence number stands for a visible change.
///
/// A change that takes the market's price past the tick rule's bounds moves the market to
/// the fine tick here, in the same batch, so the new tick is durable with the change that
/// caused it and its feed message follows that change's.
fn publish(core: &mut Core, out: &mut Outlets, idxs: &[u32], batch: &mut Batch) -> Vec<(Arc<MarketView>, BookDelta)> {
    let mut v = Vec::with_capacity(idxs.len());
    for &i in idxs {
        let i = i as usize;
        let ms = &mut core.markets[i];
        let changes = ms.book.take_changes();
        if changes.is_empty() && ms.last_trade == out.last_trade[i] {
            continue;
        }
        let best = (ms.book.best(book::BookSide::Bid), ms.book.best(book::BookSide::Ask));
        let tick = finer_tick(ms.market.tick, best, ms.last_trade.map(|t| t.0)).map(|fine| {
            let old = ms.market.tick;
            ms.book.retick(fine.units());
            ms.market.tick = fine;
            batch.put_market(&ms.market);
            (old, fine)
        });
        out.seqs[i] += 1;
        out.last_trade[i] = ms.last_trade;
        let delta = BookDelta {
            bids: changes.bids,
            asks: changes.asks,
            last_trade: ms.last_trade,
            timestamp_ms: now_millis(),
            seq: out.seqs[i],
            tick,
        };
        v.push((out.views[i].clone(), delta));
    }
    v
}

fn run(
    core: &mut Core,
    rx: Receiver<Command>,
    registry: Arc<Registry>,
    out: &mut Outlets,
    metrics: &crate::metrics::Metrics,
) {
    while let Ok(cmd) = rx.recv() {
        let mut batch = Batch::for_command();
        match cmd {
            Command::Place { order, defer, records, reply } => match core.place(order, defer, now_secs(), &mut batch) {
                Ok(placed) => {
                    batch.ops.extend(records.ops);
                    metrics.matches.inc_by(placed.trades.len() as u64);
                    let idx = placed.order.token.market_idx;
                    let (trades, id) = (placed.trades.clone(), placed.order.id);
                    finish(core, out, batch, &[idx], trades, Some(id), reply, placed);
                }
                Err(r) => {
                    let _ = reply.send(Err(EngineError::Rejected(r)));
                }
            },
            Command::Cancel { owner, ids, reply } => {
                let markets = touched(core, &ids);
                let canceled = core.cancel(owner, &ids, &mut batch);
                finish(core, out, batch, &markets, Vec::new(), None, reply, canceled);
            }
            Command::CancelWhere { owner, market, asset, reply } => {
                let ids = core.open_ids(owner, market.as_deref(), asset.as_deref());
                let markets = touched(core, &ids);
                let canceled = core.cancel(owner, &ids, &mut batch);
                finish(core, out, batch, &markets, Vec::new(), None, reply, canceled);
            }
            Command::CreateMarket { market, reply } => {
                let mut m = *market;
                if core.has_condition(&m.condition_id)
                    || m.tokens.iter().any(|t| core.market_of_token(&t.token_id).is_some())
                {
                    let _ = reply.send(Err(EngineError::Exists));
                    continue;
                }
                m.idx = core.markets.len() as u32;
                batch.put_market(&m);
                core.add_market(m.clone());
                let view = view_of(core, m.idx);
                out.views.push(view.clone());
                out.seqs.push(0);
                out.last_trade.push(None);
                let visible = Visible {
                    books: Vec::new(),
                    trades: Vec::new(),
                    taker: None,
                    orders: Vec::new(),
                    written: Vec::new(),
                    listed: Some((registry.clone(), view)),
                    bus: out.events.clone(),
                };
                commit(&out.persist, batch, After::Command(visible, reply_with(reply, m)));
            }
            Command::Transfer { address, changes, records, reply } => {
                if let Err(r) = core.transfer(&address, &changes, &mut batch) {
                    let _ = reply.send(Err(EngineError::Rejected(r)));
                    continue;
                }
                batch.ops.extend(records.ops);
                let accounts = changes.iter().map(|(asset, _)| core.ledger.account(&address, asset)).collect();
                finish(core, out, batch, &[], Vec::new(), None, reply, accounts);
            }
            Command::ReleaseDeferred { ids, reply } => {
                let placed = core.release_deferred(ids.as_deref(), now_secs(), &mut batch);
                metrics.matches.inc_by(placed.iter().map(|p| p.trades.len() as u64).sum());
                let markets: Vec<u32> = placed.iter().map(|p| p.order.token.market_idx).collect();
                let trades = placed.iter().flat_map(|p| p.trades.iter().cloned()).collect();
                finish(core, out, batch, &markets, trades, None, reply, placed);
            }
            Command::Accounts { address, reply } => {
                let _ = reply.send(Ok(core.ledger.accounts_of(&address)));
            }
            Command::RewardScores { queries, reply } => {
                let _ = reply.send(Ok(queries.iter().map(|&(m, v, min)| core.reward_scores(m, v, min)).collect()));
            }
            Command::CloseMarket { condition_id, reply } => {
                let Some(idx) = core.market_idx(&condition_id) else {
                    let _ = reply.send(Err(EngineError::Rejected(Reject::UnknownMarket)));
                    continue;
                };
                let gone = core.close_market(idx, &mut batch);
                let (ids, _) = split_touched(gone);
                finish(core, out, batch, &[idx], Vec::new(), None, reply, ids);
            }
            Command::BlockTrade { trade, records, reply } => match core.block_trade(&trade, now_secs(), &mut batch) {
                Ok(t) => {
                    batch.ops.extend(records.ops);
                    metrics.matches.inc();
                    let idx = t.token.market_idx;
                    finish(core, out, batch, &[idx], vec![t.clone()], None, reply, t);
                }
                Err(r) => {
                    let _ = reply.send(Err(EngineError::Rejected(r)));
                }
            },
            Command::Overview { reply } => {
                let _ = reply.send(Ok(core.overview()));
            }
            Command::Check { reply } => {
                let _ = reply.send(Ok(core.check()));
            }
            Command::Ping { reply } => {
                let _ = reply.send(Ok(()));
            }
            Command::Settle { max, reply } => {
                let s = core.settle(now_secs(), max, &mut batch);
                let (_, markets) = split_touched(s.canceled);
                finish(core, out, batch, &markets, Vec::new(), None, reply, (s.confirmed, s.failed.len()));
            }
            Command::SettleDecided { decided, records, reply } => {
                let s = core.settle_decided(now_secs(), &decided, &mut batch);
                batch.ops.extend(records.ops);
                let (_, markets) = split_touched(s.canceled);
                finish(core, out, batch, &markets, Vec::new(), None, reply, (s.confirmed, s.failed.len()));
            }
            Command::PendingAfter { seq, max, reply } => {
                // Answered behind every earlier write: a trade the engine holds may still be
                // in a group the persister has not synced, and a reader of the list (the chain
                // settler) reads its orders from the store.
                let trades = core.pending_after(seq, max);
                let after = After::Reply(reply_with(reply, trades));
                if let Err(e) = out.persist.send(Job { batch: Batch::default(), after }) {
                    e.into_inner().after.run(false);
                }
            }
            Command::Expire { reply } => {
                let gone = core.expire(now_secs(), &mut batch);
                let (ids, markets) = split_touched(gone);
                finish(core, out, batch, &markets, Vec::new(), None, reply, ids);
            }
            Command::IncrementNonce { address, reply } => {
                let (nonce, gone) = core.increment_nonce(&address, &mut batch);
                let (ids, markets) = split_touched(gone);
                finish(core, out, batch, &markets, Vec::new(), None, reply, (nonce, ids));
            }
            Command::RaiseNonce { address, nonce, reply } => {
                let (nonce, gone) = core.raise_nonce(&address, nonce, &mut batch);
                let (ids, markets) = split_touched(gone);
                finish(core, out, batch, &markets, Vec::new(), None, reply, (nonce, ids));
            }
            Command::CancelSigned { ids, reply } => {
                let gone = core.cancel_signed(&ids, &mut batch);
                let (ids, markets) = split_touched(gone);
                finish(core, out, batch, &markets, Vec::new(), None, reply, ids);
            }
            Command::MarkMined { ids, hash, reply } => {
                let n = core.mark_mined(now_secs(), &ids, &hash, &mut batch);
                finish(core, out, batch, &[], Vec::new(), None, reply, n);
            }
            Command::OpenMakers { reply } => {
                let _ = reply.send(Ok(core.open_makers()));
            }
        }
        // Gauges are atomics: no lock is shared with the handlers that render them.
        metrics.open_orders.set(core.orders.len() as i64);
        metrics.books.set(core.markets.len() as i64);
        metrics.pending_trades.set(core.pending_len() as i64);
    }
}

/// Order IDs, and the markets they were in (sorted, once each).
fn split_touched(v: Vec<(Uuid, u32)>) -> (Vec<Uuid>, Vec<u32>) {
    let (ids, mut markets): (Vec<Uuid>, Vec<u32>) = v.into_iter().unzip();
    markets.sort_unstable();
    markets.dedup();
    (ids, markets)
}

fn touched(core: &Core, ids: &[Uuid]) -> Vec<u32> {
    let mut v: Vec<u32> = ids.iter().filter_map(|id| core.orders.get(id)).map(|o| o.token.market_idx).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Commits a command's batch; once it is durable, the commit stage makes the changed
/// markets' deltas, its records and its trades visible, then replies (`commit::After`).
#[allow(clippy::too_many_arguments)]
fn finish<T: Send + 'static>(
    core: &mut Core,
    out: &mut Outlets,
    mut batch: Batch,
    markets: &[u32],
    trades: Vec<Arc<crate::domain::TradeRecord>>,
    taker: Option<Uuid>,
    reply: Reply<T>,
    result: T,
) {
    let books = publish(core, out, markets, &mut batch);
    // The orders and trades this command wrote, for the user feed.
    let (mut orders, mut written) = (Vec::new(), Vec::new());
    for op in &batch.ops {
        match op {
            crate::store::Op::Order(o, _) => orders.push(o.clone()),
            crate::store::Op::Trade(t) => written.push(t.clone()),
            _ => {}
        }
    }
    let visible = Visible { books, trades, taker, orders, written, listed: None, bus: out.events.clone() };
    commit(&out.persist, batch, After::Command(visible, reply_with(reply, result)));
}

#[cfg(test)]
mod claims {
    use super::{Claims, CLAIM_SECS};
    use uuid::Uuid;

    #[test]
    fn a_claim_holds_for_one_to_two_windows_unless_given_back() {
        let (a, b, c) = (Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3));
        let claims = Claims::default();
        assert!(claims.claim(a, 1_000));
        assert!(!claims.claim(a, 1_000), "claimed already");
        assert!(claims.claim(b, 1_000 + CLAIM_SECS)); // rotates: a moves to the previous generation
        assert!(!claims.claim(a, 1_000 + CLAIM_SECS + 1));
        assert!(claims.claim(c, 1_000 + 2 * CLAIM_SECS)); // rotates again: a is forgotten
        assert!(claims.claim(a, 1_000 + 2 * CLAIM_SECS));
        // Given back from either generation, an id can be claimed again.
        claims.release(&b);
        claims.release(&a);
        assert!(claims.claim(b, 1_000 + 2 * CLAIM_SECS) && claims.claim(a, 1_000 + 2 * CLAIM_SECS));
        let g = claims.0.lock();
        assert_eq!(g.current.len() + g.previous.len(), 3, "bounded by two windows");
        drop(g);
        // A generation's table is reused, emptied, two windows later: no regrowth.
        let t = 1_000 + 3 * CLAIM_SECS;
        (10..1_010).for_each(|i| assert!(claims.claim(Uuid::from_u128(i), t)));
        let grown = claims.0.lock().current.capacity();
        claims.claim(a, t + CLAIM_SECS);
        claims.claim(b, t + 2 * CLAIM_SECS);
        let g = claims.0.lock();
        assert!(g.current.capacity() >= grown && g.current.len() == 1 && !g.previous.contains(&Uuid::from_u128(10)));
    }
}

#[cfg(test)]
mod tick_rule {
    use super::{finer_tick, Price};

    #[test]
    fn coarse_ticks_move_to_the_fine_one_past_the_bounds_and_never_back() {
        // Inside the bounds nothing moves, including exactly 0.96 and 0.04.
        assert_eq!(finer_tick(Price(100), (Some(9600), Some(400)), Some(Price(9600))), None);
        assert_eq!(finer_tick(Price(100), (Some(300), Some(9900)), Some(Price(400))), None);
        // Past them, by the best bid, the best ask or the last trade.
        assert_eq!(finer_tick(Price(100), (Some(9700), None), None), Some(Price(10)));
        assert_eq!(finer_tick(Price(100), (None, Some(300)), None), Some(Price(10)));
        assert_eq!(finer_tick(Price(1000), (None, None), Some(Price(9700))), Some(Price(10)));
        assert_eq!(finer_tick(Price(100), (None, None), Some(Price(300))), Some(Price(10)));
        // Already fine (or finer): no change.
        assert_eq!(finer_tick(Price(10), (Some(9900), Some(9950)), Some(Price(9990))), None);
        assert_eq!(finer_tick(Price(1), (Some(9900), Some(9950)), Some(Price(9990))), None);
    }
}
