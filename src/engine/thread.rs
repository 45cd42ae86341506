//! The engine thread: it takes commands in turn, applies each to the core, and hands the
//! command's batch to the persister with what follows it once durable (the changed books'
//! deltas, the feeds, the reply).

use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};
use uuid::Uuid;

use super::claims::Claims;
use super::commands::{Command, EngineError, Reply};
use super::handle::EngineHandle;
use super::tick_rule::finer_tick;
use super::{book, Core, Reject};
use crate::commit::bus::Feeds;
use crate::commit::persister::Job;
use crate::commit::views::{BookDelta, BookSnapshot, MarketView, Registry};
use crate::commit::{After, Visible};
use crate::domain::{now_millis, now_secs, LastTrade, Market};
use crate::store::Batch;

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
        let mut out = Downstream { seqs: vec![0; views.len()], last_trade, views, persist, events };
        run(&mut core, rx, registry, &mut out, &metrics)
    });
    (EngineHandle { tx, claims: Arc::<Claims>::default() }, h)
}

/// Where a command's results go: the persister, then the readers' snapshots and the feeds.
struct Downstream {
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
    let view = MarketView::new(ms.market.clone(), ms.order_tokens.clone(), snapshot_of(core, idx, 0));
    view.set_fees(ms.fees);
    Arc::new(view)
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
fn publish(
    core: &mut Core,
    out: &mut Downstream,
    idxs: &[u32],
    batch: &mut Batch,
) -> Vec<(Arc<MarketView>, BookDelta)> {
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
    out: &mut Downstream,
    metrics: &crate::metrics::Metrics,
) {
    while let Ok(cmd) = rx.recv() {
        let mut batch = Batch::for_command();
        match cmd {
            Command::Place { order, defer, records, reply } => match core.execute(order, defer, now_secs(), &mut batch)
            {
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
            Command::ReleaseDeferred { ids, reply } => {
                let placed = core.release_deferred(ids.as_deref(), now_secs(), &mut batch);
                metrics.matches.inc_by(placed.iter().map(|p| p.trades.len() as u64).sum());
                let markets: Vec<u32> = placed.iter().map(|p| p.order.token.market_idx).collect();
                let trades = placed.iter().flat_map(|p| p.trades.iter().cloned()).collect();
                finish(core, out, batch, &markets, trades, None, reply, placed);
            }
            Command::SetFees { condition_id, fees, reply } => {
                let Some(idx) = core.market_idx(&condition_id) else {
                    let _ = reply.send(Err(EngineError::Rejected(Reject::UnknownMarket)));
                    continue;
                };
                core.set_fees(idx, fees, &mut batch);
                finish(core, out, batch, &[], Vec::new(), None, reply, ());
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
            Command::Expire { reply } => {
                let gone = core.expire(now_secs(), &mut batch);
                let (ids, markets) = split_touched(gone);
                finish(core, out, batch, &markets, Vec::new(), None, reply, ids);
            }
            Command::IncrementNonce { address, records, reply } => {
                let (nonce, gone) = core.increment_nonce(&address, &mut batch);
                batch.ops.extend(records.ops);
                let (ids, markets) = split_touched(gone);
                finish(core, out, batch, &markets, Vec::new(), None, reply, (nonce, ids));
            }
            Command::RaiseNonce { address, nonce, reply } => {
                let (nonce, gone) = core.raise_nonce(&address, nonce, &mut batch);
                let (ids, markets) = split_touched(gone);
                finish(core, out, batch, &markets, Vec::new(), None, reply, (nonce, ids));
            }
            Command::CancelMaker { address, reply } => {
                let gone = core.cancel_maker(&address, &mut batch);
                let (ids, markets) = split_touched(gone);
                finish(core, out, batch, &markets, Vec::new(), None, reply, ids);
            }
            Command::CancelOwn { maker, ids, records, reply } => match core.cancel_own(&maker, &ids, &mut batch) {
                Ok(gone) => {
                    batch.ops.extend(records.ops);
                    let (ids, markets) = split_touched(gone);
                    finish(core, out, batch, &markets, Vec::new(), None, reply, ids);
                }
                Err(r) => {
                    let _ = reply.send(Err(EngineError::Rejected(r)));
                }
            },
            Command::CancelSigned { ids, reply } => {
                let gone = core.cancel_signed(&ids, &mut batch);
                let (ids, markets) = split_touched(gone);
                finish(core, out, batch, &markets, Vec::new(), None, reply, ids);
            }
            Command::CreateMarket { market, reply } => create_market(core, *market, &registry, out, batch, reply),
            Command::Transfer { address, changes, records, reply } => {
                if let Err(r) = core.transfer(&address, &changes, &mut batch) {
                    let _ = reply.send(Err(EngineError::Rejected(r)));
                    continue;
                }
                batch.ops.extend(records.ops);
                let accounts = changes.iter().map(|(asset, _)| core.ledger.account(&address, asset)).collect();
                finish(core, out, batch, &[], Vec::new(), None, reply, accounts);
            }
            Command::Accounts { address, reply } => {
                let _ = reply.send(Ok(core.ledger.accounts_of(&address)));
            }
            Command::RewardScores { queries, reply } => {
                let _ = reply.send(Ok(queries.iter().map(|&(m, v, min)| core.reward_scores(m, v, min)).collect()));
            }
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
        metrics.pending_oldest.set(core.oldest_pending().unwrap_or(0) as i64);
    }
}

/// Adds a market unless its condition or a token of it exists; the readers and the feeds
/// see it once it is durable.
fn create_market(
    core: &mut Core,
    mut m: Market,
    registry: &Arc<Registry>,
    out: &mut Downstream,
    mut batch: Batch,
    reply: Reply<Market>,
) {
    if core.has_condition(&m.condition_id) || m.tokens.iter().any(|t| core.market_of_token(&t.token_id).is_some()) {
        let _ = reply.send(Err(EngineError::Exists));
        return;
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
    out: &mut Downstream,
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
