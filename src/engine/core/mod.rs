//! The matching core: books, open orders and the ledger, mutated by one thread.
// Hot path: no I/O, no locks shared with HTTP, no logging above debug.
//!
//! Priority rule: price, then acceptance sequence (FIFO per level). Execution is at the
//! resting (maker) order's price. A taker sweeps the opposite side of its market's single
//! YES-space book, so it meets complementary orders, mint partners (BUY vs BUY of the other
//! outcome) and merge partners (SELL vs SELL) in one priority queue.
//!
//! Amounts: a fill of q tokens at YES price P moves, per order of its own token price p,
//! BUY: −cost collateral, +q tokens; SELL: −q tokens, +proceeds. Complementary fills use
//! one amount floor(q·p) for both sides; mint and merge give the maker floor(q·p_maker)
//! and the taker the rest of q, so collateral and tokens are conserved exactly.
//! Fees follow the CTF exchange: BUY pays bps·min(p,1−p)·q/p in tokens, SELL pays
//! bps·min(p,1−p)·q in collateral, both to the fee account.
//!
//! Self-trade prevention: a taker never fills against a resting order of its own maker
//! address; the sweep cancels that resting order and goes on to the orders behind it
//! ("expire maker"), so one address cannot trade with itself (or farm maker rebates).
//!
//! Complexity: insert/cancel O(1) (plus a best-price scan over empty levels), each fill
//! O(1) plus a hash lookup of the maker record; a FOK's (and a FAK's) check walks the
//! crossing orders it would meet. Not handled here: cross-market negative-risk conversion.

mod commands;
mod memo;
mod open;
mod reads;
mod settle;
#[cfg(test)]
mod tests;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;

use foldhash::{HashMap, HashMapExt};
use uuid::Uuid;

use super::book::{Book, BookSide, Meet, NIL};
use crate::domain::*;
use crate::ledger::{Acct, AssetId, Ledger};
use crate::store::{Batch, Stored};
pub use memo::RestoreMemo;
use memo::{AccountMemo, NonceMemo};
use open::{fee_account, OrderAccounts};
pub use open::{Open, OpenOrders};
pub use reads::Overview;
pub use settle::Verdict;
use settle::{expect_receipts, Pending};

/// Why the engine refused an order: an outcome, not an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reject {
    UnknownMarket,
    Duplicated,
    InvalidNonce,
    NotEnoughBalance,
    PostOnlyCrosses,
    FokNotFilled,
    FakNoMatch,
    NotOwner,
    MarketClosed,
}

/// The result of placing one order.
#[derive(Debug, Clone)]
pub struct Placed {
    pub order: Arc<OrderRecord>,
    pub trades: Vec<Arc<TradeRecord>>,
    /// What the order gave and received so far (collateral or tokens, micro-units).
    pub making: Amount,
    pub taking: Amount,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Canceled {
    /// In line for one id: most cancels name one order, and the list is built on the
    /// matching thread.
    pub canceled: smallvec::SmallVec<[Uuid; 1]>,
    pub not_canceled: Vec<(String, String)>,
}

/// The outcome of one settlement pass.
#[derive(Debug, Clone, Default)]
pub struct Settled {
    /// How many trades became CONFIRMED (their records went to the write batch).
    pub confirmed: usize,
    pub failed: Vec<Arc<TradeRecord>>,
    /// Open orders cancelled because a failed trade took away what they relied on:
    /// (order, market).
    pub canceled: Vec<(Uuid, u32)>,
}

/// A negotiated trade between a requester (the taker) and a quoter (the maker), each an
/// (API key, wallet address) pair; see [`Core::block_trade`].
#[derive(Debug, Clone)]
pub struct BlockTrade {
    pub request_id: Uuid,
    pub quote_id: Uuid,
    pub token_id: String,
    /// The requester's side.
    pub side: Side,
    pub size: Amount,
    /// In the token's own price.
    pub price: Price,
    pub taker: (Uuid, Arc<str>),
    pub maker: (Uuid, Arc<str>),
    /// The version of the orders the parties signed.
    pub version: u8,
}

/// One market's liquidity-reward scores at one sample (see [`Core::reward_scores`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewardScores {
    /// Twice the midpoint YES price (1e-4 units).
    pub midpoint2: u32,
    /// Twice the max spread (1e-4 units): a score is at most spread2² · size.
    pub spread2: u32,
    /// Per maker address: (bid-side, ask-side) scores, by address.
    pub makers: Vec<(Arc<str>, [u128; 2])>,
}

/// Writes a crossing order's batch has room for before its first write (see
/// [`Core::execute`]).
const CROSSING_WRITES: usize = 9;

/// What a taker's pass over the book produced: its trades, and what it gave and received.
#[derive(Debug, Default)]
struct Matched {
    trades: Vec<Arc<TradeRecord>>,
    making: Amount,
    taking: Amount,
}

pub struct MarketState {
    pub market: Market,
    pub book: Book,
    pub last_trade: LastTrade,
    /// The fee account's handles for what this market's orders receive: collateral, then
    /// each outcome token.
    fee_accounts: Vec<Acct>,
    /// The ledger's numbers of the outcome tokens.
    assets: [AssetId; 2],
    /// What this market's orders hold as their token, per outcome: one allocation shared by
    /// every order placed on it.
    pub order_tokens: [Arc<OrderToken>; 2],
    /// What this market's trades hold as each side's token, per outcome (sharing the order
    /// tokens' strings).
    pub trade_tokens: [Arc<TradeToken>; 2],
    /// The fee description version 2 takers pay by (none: no fee).
    pub fees: Option<FeeSchedule>,
}

/// The whole matching state.
pub struct Core {
    pub markets: Vec<MarketState>,
    tokens: HashMap<String, (u32, u8)>,
    conditions: HashMap<String, u32>,
    /// Open orders (LIVE resting, or DEFERRED). Shared with the persister's batches:
    /// updates go through `Arc::make_mut`, which copies only while a batch still holds the
    /// previous version.
    /// A map that grows a few entries a command ([`IncrementalMap`]), never all at once.
    pub orders: OpenOrders,
    pub ledger: Ledger,
    /// The ledger's number of the collateral.
    collateral: AssetId,
    /// Recent makers' accounts, by the address of their shared string.
    memo: AccountMemo,
    /// Exchange nonce per maker address (incrementNonce bumps it); absent = 0.
    nonces: HashMap<String, NonceState>,
    /// Recent makers' nonces, by the address of their shared string.
    nonce_memo: NonceMemo,
    /// The latest `since_trade` of any nonce: a trade matched at or after it was matched
    /// with every maker's current nonce, so settlement skips the per-address lookups.
    nonces_since: u64,
    /// Trades matched but not yet settled, in match order. What each party pays stays
    /// reserved in the ledger (a hold) until the settlement worker applies the transfers.
    pending: VecDeque<Pending>,
    /// (expiration, order id) of open GTD orders, soonest first; entries of orders that
    /// closed earlier are skipped when they come due.
    expiries: BinaryHeap<Reverse<(u64, Uuid)>>,
    pub next_order_seq: u64,
    pub next_trade_seq: u64,
    /// The address fees are paid to.
    pub fee_address: String,
    /// Random per-process half of trade IDs (the other half is the trade sequence), so IDs
    /// are unique without a syscall per trade.
    id_prefix: u64,
}

fn book_side(outcome: u8, side: Side) -> BookSide {
    match (outcome, side) {
        (0, Side::Buy) | (1, Side::Sell) => BookSide::Bid,
        _ => BookSide::Ask,
    }
}

/// Own-token price → YES price, and back (the book is kept in YES prices).
fn yes_price(outcome: u8, p: Price) -> Price {
    if outcome == 0 {
        p
    } else {
        p.complement()
    }
}

impl Core {
    pub fn new(fee_address: String) -> Core {
        let mut ledger = Ledger::default();
        let collateral = ledger.asset(COLLATERAL);
        Core {
            markets: Vec::new(),
            tokens: HashMap::new(),
            conditions: HashMap::new(),
            orders: OpenOrders::default(),
            ledger,
            collateral,
            memo: AccountMemo::new(),
            nonces: HashMap::new(),
            nonce_memo: NonceMemo::new(),
            nonces_since: 0,
            pending: VecDeque::new(),
            expiries: BinaryHeap::new(),
            next_order_seq: 1,
            next_trade_seq: 1,
            fee_address,
            id_prefix: Uuid::new_v4().as_u64_pair().0,
        }
    }

    pub fn market_of_token(&self, token_id: &str) -> Option<(u32, u8)> {
        self.tokens.get(token_id).copied()
    }

    pub fn has_condition(&self, c: &str) -> bool {
        self.conditions.contains_key(c)
    }

    pub fn market_idx(&self, c: &str) -> Option<u32> {
        self.conditions.get(c).copied()
    }

    /// Adds a market (its idx must be the next one).
    pub fn add_market(&mut self, m: Market) {
        debug_assert_eq!(m.idx as usize, self.markets.len());
        for (i, t) in m.tokens.iter().enumerate() {
            self.tokens.insert(t.token_id.clone(), (m.idx, i as u8));
        }
        self.conditions.insert(m.condition_id.clone(), m.idx);
        let fee_accounts = std::iter::once(COLLATERAL)
            .chain(m.tokens.iter().map(|t| &*t.token_id))
            .map(|asset| self.ledger.acct(&self.fee_address, asset))
            .collect();
        let order_tokens = [0, 1].map(|i| OrderToken::of(&m, i));
        let trade_tokens = order_tokens.each_ref().map(|t| TradeToken::of(t));
        let assets = [0, 1].map(|i| self.ledger.asset(&m.tokens[i].token_id));
        self.markets.push(MarketState {
            book: Book::new(m.tick.units()),
            market: m,
            last_trade: None,
            fee_accounts,
            assets,
            order_tokens,
            trade_tokens,
            fees: None,
        });
    }

    /// Sets a market's fee description for version 2 takers (None: no fee), from the next
    /// match on.
    pub fn set_fees(&mut self, idx: u32, fees: Option<FeeSchedule>, batch: &mut Batch) {
        let ms = &mut self.markets[idx as usize];
        ms.fees = fees;
        batch.put_market_fees(&ms.market.condition_id, fees);
    }

    /// What a version 2 BUY reserves beyond its price for the fee it may pay as a taker:
    /// the market's fee on the whole order at its limit (a fill at a better price costs
    /// less; what a fill owes past the reservation comes from the free balance).
    fn fee_reserve(&self, o: &OrderRecord) -> Amount {
        match (o.version, o.side, self.markets[o.token.market_idx as usize].fees) {
            (2, Side::Buy, Some(s)) => s.fee(o.original_size, o.price, o.maker_amount),
            _ => Amount::ZERO,
        }
    }

    pub fn nonce_of(&self, maker: &str) -> u64 {
        self.nonces.get(maker).map_or(0, |n| n.nonce)
    }

    /// [`Core::nonce_of`] for a placement's maker, through the makers' memo.
    fn placing_nonce(&mut self, maker: &Arc<str>) -> u64 {
        if self.nonces.is_empty() {
            return 0;
        }
        let nonces = &self.nonces;
        self.nonce_memo.get(maker, || nonces.get(&**maker).map_or(0, |n| n.nonce))
    }

    /// Loads an address's nonce at startup.
    pub fn restore_nonce(&mut self, maker: String, n: NonceState) {
        self.nonces_since = self.nonces_since.max(n.since_trade);
        self.nonces.insert(maker, n);
        self.nonce_memo.invalidate();
    }

    /// Re-queues a PENDING trade at startup (oldest first): holds what its parties pay and
    /// expects what they receive.
    pub fn restore_pending(&mut self, mut t: TradeRecord) {
        // Each side's token shared with the market's, as a match's are.
        self.share_token(&mut t.token);
        for m in &mut t.maker_orders {
            self.share_token(&mut m.token);
        }
        let accounts = t.legs().each_ref().map(|l| self.leg_accounts(l));
        let pending = Pending::new(Arc::new(t), accounts);
        // Held from the flows settlement releases.
        for f in &pending.flows {
            self.ledger.reserve_at(f.accounts.pay, f.pays);
        }
        expect_receipts(&mut self.ledger, &pending.flows);
        self.pending.push_back(pending);
    }

    /// `t` replaced by its market's shared token, when it is one of the catalogue's.
    fn share_token(&self, t: &mut Arc<TradeToken>) {
        if let Some(&(midx, i)) = self.tokens.get(&*t.token_id) {
            let shared = &self.markets[midx as usize].trade_tokens[i as usize];
            if **shared == **t {
                *t = shared.clone();
            }
        }
    }

    /// The ledger accounts a trade's leg pays from and receives into, and its fee account.
    fn leg_accounts(&mut self, l: &Leg<'_>) -> OrderAccounts {
        let (recv, ..) = l.receives();
        OrderAccounts {
            pay: self.ledger.acct(l.address, l.pays().0),
            recv: self.ledger.acct(l.address, recv),
            fee: self.ledger.acct(&self.fee_address, l.fee_asset()),
        }
    }

    /// An order's market and outcome. The API's market view hands over the market's shared
    /// token, which says where it is: found by pointer, the order's 77-digit token id is
    /// neither hashed nor compared. Any other token is looked up by its id.
    fn market_of_order(&self, token: &Arc<OrderToken>) -> Option<(u32, u8)> {
        let (midx, outcome) = (token.market_idx, token.outcome_index);
        let shared = self.markets.get(midx as usize).and_then(|ms| ms.order_tokens.get(outcome as usize));
        if shared.is_some_and(|t| Arc::ptr_eq(t, token)) {
            return Some((midx, outcome));
        }
        self.tokens.get(&*token.token_id).copied()
    }

    /// Resolves an order's ledger accounts (its market and outcome already set), through
    /// the makers' memo.
    fn accounts_of(&mut self, o: &OrderRecord) -> OrderAccounts {
        let token = self.token_asset(o);
        let (ledger, collateral) = (&mut self.ledger, self.collateral);
        let pair = self.memo.get(&o.maker, token, || ledger.accounts_by(&o.maker, [collateral, token]));
        self.accounts_from(o, pair)
    }

    /// [`Core::accounts_of`] from the ledger's index alone: startup has its own memo.
    fn accounts_indexed(&mut self, o: &OrderRecord) -> OrderAccounts {
        let token = self.token_asset(o);
        let pair = self.ledger.accounts_by(&o.maker, [self.collateral, token]);
        self.accounts_from(o, pair)
    }

    /// The ledger's number of the outcome token an order trades.
    fn token_asset(&self, o: &OrderRecord) -> AssetId {
        self.markets[o.token.market_idx as usize].assets[o.token.outcome_index as usize]
    }

    /// An order's accounts from its maker's (collateral, token) accounts.
    fn accounts_from(&self, o: &OrderRecord, [coll, tok]: [Acct; 2]) -> OrderAccounts {
        let (pay, recv) = match o.side {
            Side::Buy => (coll, tok),
            Side::Sell => (tok, coll),
        };
        OrderAccounts { pay, recv, fee: fee_account(&self.markets[o.token.market_idx as usize].fee_accounts, o) }
    }

    /// Trades waiting for settlement.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// When the oldest trade not yet settled matched (UNIX seconds).
    pub fn oldest_pending(&self) -> Option<u64> {
        self.pending.front().map(|p| p.trade.match_time)
    }

    /// Room for `n` more open orders, so startup does not rehash its maps as it restores;
    /// and in each book room for its share of them, so the books' node arrays do not grow
    /// by doubling (at startup all books grow together, so every smaller array they leave
    /// behind stays touched, about twice the nodes' memory).
    pub fn reserve(&mut self, n: usize) {
        self.orders.reserve(n);
        let share = n / self.markets.len().max(1);
        for ms in &mut self.markets {
            ms.book.reserve(share);
        }
    }

    /// Re-inserts an accepted open order at startup, in its original priority.
    pub fn restore(&mut self, o: Arc<OrderRecord>, memo: &mut RestoreMemo) {
        let accounts = memo.accounts(self, &o);
        self.ledger.reserve_at(accounts.pay, o.reserved);
        let mut slot = NIL;
        if o.status == OrderStatus::Live {
            let ms = &mut self.markets[o.token.market_idx as usize];
            slot = ms.book.insert(
                book_side(o.token.outcome_index, o.side),
                yes_price(o.token.outcome_index, o.price).units(),
                o.id,
                o.remaining().units(),
            );
            ms.book.forget_changes();
        }
        if o.expiration != 0 {
            self.expiries.push(Reverse((o.expiration, o.id)));
        }
        self.orders.insert(Open::new(o, slot, accounts));
    }

    /// Executes an order: checks what only the engine can (an open order with its id, nonce,
    /// proxy binding, balance), then matches and rests the remainder. On acceptance,
    /// `batch` holds every write of the command. The record arrives allocated (by the
    /// request's handler) and unshared, so the engine thread updates it in place and never
    /// copies it.
    pub fn execute(
        &mut self,
        mut order: Arc<OrderRecord>,
        defer: bool,
        now: u64,
        batch: &mut Batch,
    ) -> Result<Placed, Reject> {
        let o = Arc::make_mut(&mut order);
        let (midx, outcome) = self.admit(o)?;
        let bside = book_side(outcome, o.side);
        let limit = yes_price(outcome, o.price).units();
        let book = &self.markets[midx as usize].book;
        let opp = bside.opposite();
        let would_cross = book.head_crossing(bside, limit).is_some();
        if !defer {
            if o.post_only && would_cross {
                return Err(Reject::PostOnlyCrosses);
            }
            // The sweep cancels resting orders of the taker's own maker (self-trade
            // prevention) and expired ones instead of filling them: they count for neither
            // a FOK's fill nor a FAK's match.
            let orders = &self.orders;
            let fills = |n: &super::book::Node| {
                orders.get(&n.id).is_some_and(|m| *m.rec.maker != *o.maker && !m.rec.expired(now))
            };
            let size = o.original_size.units();
            if o.order_type == OrderType::Fok && book.fillable_where(opp, limit, size, fills) < size {
                return Err(Reject::FokNotFilled);
            }
            if o.order_type == OrderType::Fak && (!would_cross || book.fillable_where(opp, limit, 1, fills) == 0) {
                return Err(Reject::FakNoMatch);
            }
        }
        let accounts = self.accounts_of(o);
        let reserve = o.maker_amount + self.fee_reserve(o);
        if !self.ledger.try_reserve_at(accounts.pay, reserve) {
            return Err(Reject::NotEnoughBalance);
        }
        // Accepted from here on.
        if would_cross && !defer {
            // A crossing order writes its signature, its own record and the market's last
            // trade, and per fill the maker's order and the trade (balances are written by
            // settlement): room for three fills up front, instead of the list growing from
            // the four a resting order needs.
            batch.reserve(CROSSING_WRITES);
        }
        o.reserved = reserve;
        o.seq = self.next_order_seq;
        self.next_order_seq += 1;
        o.created_at = now;
        // The signature is written once, apart, and not held with the open order: nothing
        // on the request path reads it.
        let signature = std::mem::take(&mut o.signature);
        if !signature.as_bytes().is_empty() {
            batch.put_signature(o.seq, signature);
        }
        if defer {
            o.status = OrderStatus::Deferred;
            if o.expiration != 0 {
                self.expiries.push(Reverse((o.expiration, o.id)));
            }
            batch.put_order(order.clone(), Stored::New);
            self.orders.insert_new(Open::new(order.clone(), NIL, accounts));
            self.flush_ledger(batch);
            return Ok(Placed { order, trades: vec![], making: Amount::ZERO, taking: Amount::ZERO });
        }
        o.status = OrderStatus::Live;
        let matched = if would_cross { self.match_taker(o, accounts, now, batch) } else { Matched::default() };
        let slot = self.rest_or_close(o, accounts, false);
        Ok(self.finish_taker(order, accounts, slot, matched, false, batch))
    }

    /// The checks of an order before its book is looked at: its market takes orders, its id
    /// is not open, its nonce is the maker's current one. Returns its market and outcome,
    /// with the record holding the market's shared token.
    fn admit(&mut self, o: &mut OrderRecord) -> Result<(u32, u8), Reject> {
        let Some((midx, outcome)) = self.market_of_order(&o.token) else { return Err(Reject::UnknownMarket) };
        let market = &self.markets[midx as usize].market;
        if !market.accepting_orders || market.closed {
            return Err(Reject::MarketClosed);
        }
        // Orders accepted recently but closed already are refused before they get here: the
        // handle claims every id it sends ([`super::Claims`]).
        if self.orders.contains_key(&o.id) {
            return Err(Reject::Duplicated);
        }
        // Version 2 orders have no nonce (their exchange pauses a maker instead).
        if o.version == 1 && o.nonce != self.placing_nonce(&o.maker) {
            return Err(Reject::InvalidNonce);
        }
        // The market's shared token: the API's market view hands the same one over (nothing
        // to do), other callers may pass a copy.
        let shared = &self.markets[midx as usize].order_tokens[outcome as usize];
        if !Arc::ptr_eq(&o.token, shared) {
            o.token = shared.clone();
        }
        Ok((midx, outcome))
    }

    /// After matching: rests the remainder (GTC/GTD) and returns its book slot, or closes
    /// the order (FOK/FAK, filled) and releases what it still reserved. Takes the record the
    /// caller already holds mutably, so the order's `Arc` is checked for uniqueness once.
    fn rest_or_close(&mut self, o: &mut OrderRecord, accounts: OrderAccounts, released: bool) -> u32 {
        let remaining = o.remaining();
        if !remaining.is_zero() && o.order_type.rests() && !o.reserved.is_zero() {
            let ms = &mut self.markets[o.token.market_idx as usize];
            let slot = ms.book.insert(
                book_side(o.token.outcome_index, o.side),
                yes_price(o.token.outcome_index, o.price).units(),
                o.id,
                remaining.units(),
            );
            o.status = OrderStatus::Live;
            // A released DEFERRED order's expiry is queued already.
            if o.expiration != 0 && !released {
                self.expiries.push(Reverse((o.expiration, o.id)));
            }
            slot
        } else {
            o.status = if !o.size_matched.is_zero() { OrderStatus::Matched } else { OrderStatus::Canceled };
            release_rest(&mut self.ledger, accounts.pay, o);
            NIL
        }
    }

    /// After [`Self::rest_or_close`]: keeps a resting taker open and writes the command's
    /// order, balances and last trade price.
    fn finish_taker(
        &mut self,
        o: Arc<OrderRecord>,
        accounts: OrderAccounts,
        slot: u32,
        Matched { trades, making, taking }: Matched,
        released: bool,
        batch: &mut Batch,
    ) -> Placed {
        // A new order's id has no entry, nor has a released DEFERRED order's, taken out
        // before it was matched.
        if o.status == OrderStatus::Live {
            self.orders.insert_new(Open::new(o.clone(), slot, accounts));
        }
        // A released DEFERRED order was stored open; any other taker is new.
        batch.put_order(o.clone(), if released { Stored::Open } else { Stored::New });
        self.flush_ledger(batch);
        if !trades.is_empty() {
            let last = self.markets[o.token.market_idx as usize].last_trade;
            batch.put_last_trade(o.token.market_idx, last);
        }
        Placed { order: o, trades, making, taking }
    }

    fn flush_ledger(&mut self, batch: &mut Batch) {
        self.ledger.drain_dirty(|addr, asset, bal| batch.put_balance(addr, asset, bal));
    }

    /// Sweeps the opposite side while it crosses; returns trades and what the taker gave
    /// and received.
    fn match_taker(&mut self, t: &mut OrderRecord, ta: OrderAccounts, now: u64, batch: &mut Batch) -> Matched {
        let midx = t.token.market_idx as usize;
        let bside = book_side(t.token.outcome_index, t.side);
        let limit = yes_price(t.token.outcome_index, t.price).units();
        let mut trades = Vec::new();
        let (mut making, mut taking) = (Amount::ZERO, Amount::ZERO);
        // The fields the sweep needs, borrowed apart: the book is swept in place while the
        // records, the ledger and the settlement queue change beside it.
        let Core { markets, orders, ledger, pending, next_trade_seq, id_prefix, .. } = self;
        let MarketState { book, last_trade, fee_accounts, trade_tokens, fees, .. } = &mut markets[midx];
        let fees = if t.version == 2 { *fees } else { None };
        book.sweep(bside, limit, t.remaining().units(), |node, q, px| {
            let maker_id = node.id;
            let maker_done = q == node.remaining;
            let q = Amount(q);
            let Some(mut entry) = orders.find_entry(&maker_id) else {
                unreachable!("resting order {maker_id} has no record")
            };
            // An expired GTD order never trades: it leaves the book here, before the expiry
            // sweep gets to it. Nor does an order of the taker's own maker (self-trade
            // prevention, docs/reference/spec-choices.md): the resting one is cancelled and the taker
            // goes on to the orders behind it.
            if entry.get().rec.expired(now) || *entry.get().rec.maker == *t.maker {
                cancel_met(ledger, entry.remove(), batch);
                return Meet::Remove;
            }
            let ma = entry.get().accounts_in(fee_accounts);
            let mut f = Fill::terms(&entry.get().rec, t, q, px, trades.len() as u32);
            // A version 2 taker's fee, by the market's description, capped as the V2
            // exchange caps it: on what a BUY pays, on what a SELL is owed at its own limit.
            let v2_fee = fees.map_or(Amount::ZERO, |s| {
                let cash = match t.side {
                    Side::Buy => f.taker_amt,
                    Side::Sell => q.mul_div(t.taker_amount.units(), t.maker_amount.units()),
                };
                s.fee(q, f.taker_price, cash)
            });
            // A taker BUY may owe a micro-unit more than its reservation after rounding in a
            // mint, or a version 2 fee past what it reserved for fees; it must come from its
            // free balance, or the sweep stops here.
            let due = if t.side == Side::Buy { f.taker_amt + v2_fee } else { f.taker_amt };
            if t.side == Side::Buy && due > t.reserved {
                let extra = due - t.reserved;
                if ledger.get(ta.pay).available() < extra {
                    return Meet::Stop;
                }
                ledger.reserve_at(ta.pay, extra);
                t.reserved += extra;
            }
            // Copies the record only while a batch in flight still holds this version.
            let m = Arc::make_mut(&mut entry.get_mut().rec);
            // The maker's fee at its signed price, the taker's at this fill's own.
            f.maker_fee = fill(ledger, ma.pay, m, q, f.maker_amt, (m.maker_amount, m.taker_amount));
            let taker_price = match t.side {
                Side::Buy => (f.taker_amt, q),
                Side::Sell => (q, f.taker_amt),
            };
            f.taker_fee = fill(ledger, ta.pay, t, q, f.taker_amt, taker_price);
            if fees.is_some() {
                // A BUY's fee moves from its reservation to the trade's hold with its price.
                if t.side == Side::Buy {
                    t.reserved -= v2_fee;
                }
                f.taker_fee = v2_fee;
                f.taker_fee_bps = fee_bps(v2_fee, f.taker_amt);
            }
            let (gave, got) = f.taker_gives(t.side, t.version);
            making += gave;
            taking += got;
            let id = Uuid::from_u64_pair(*id_prefix, *next_trade_seq);
            let trade = f.trade(id, *next_trade_seq, t, m, trade_tokens, now);
            *next_trade_seq += 1;
            m.associate_trades.push(trade.id);
            if maker_done {
                m.status = OrderStatus::Matched;
                release_rest(ledger, ma.pay, m);
                batch.put_order(entry.remove().rec, Stored::Open);
            } else {
                batch.put_order(entry.get().rec.clone(), Stored::Open);
            }
            debug_assert_eq!(
                trade.legs().map(|l| l.amount),
                [f.taker_amt, f.maker_amt],
                "settlement recomputes the amounts matched"
            );
            let trade = Arc::new(trade);
            let settling = Pending::new(trade.clone(), [ta, ma]);
            expect_receipts(ledger, &settling.flows);
            pending.push_back(settling);
            batch.put_trade(trade.clone());
            let taker_yes_side = if bside == BookSide::Bid { Side::Buy } else { Side::Sell };
            *last_trade = Some((Price(px), taker_yes_side));
            trades.push(trade);
            Meet::Fill
        });
        // The taker's trade ids in one step, at their final size (pushed per fill, a sweep's
        // list grew from one held in line by doubling).
        t.associate_trades.extend(trades.iter().map(|tr| tr.id));
        Matched { trades, making, taking }
    }
}

/// One fill of a sweep: `size` tokens between the taker and one maker, each order's side
/// in its own token's price.
struct Fill {
    size: Amount,
    maker_price: Price,
    taker_price: Price,
    /// What each order pays for its side (collateral for a BUY, tokens for a SELL).
    maker_amt: Amount,
    taker_amt: Amount,
    match_type: MatchType,
    maker_fee: Amount,
    taker_fee: Amount,
    /// The taker's fee rate as the trade records it: the signed one (version 1), or what
    /// the fee came to in basis points of the fill's value (version 2).
    taker_fee_bps: u32,
    /// Its place among the sweep's trades.
    index: u32,
}

impl Fill {
    /// A fill of `q` at YES price `px`: complementary fills use one amount for both sides;
    /// mint and merge give the maker its cost at its price and the taker the rest of `q`.
    /// Fees are set as the orders fill.
    #[inline]
    fn terms(m: &OrderRecord, t: &OrderRecord, q: Amount, px: u32, index: u32) -> Fill {
        let maker_price = yes_price(m.token.outcome_index, Price(px));
        let taker_price = yes_price(t.token.outcome_index, Price(px));
        let c = maker_price.cost(q);
        let (taker_amt, match_type) = if m.token.outcome_index == t.token.outcome_index {
            (c, MatchType::Complementary)
        } else if m.side == Side::Buy {
            (q - c, MatchType::Mint)
        } else {
            (q - c, MatchType::Merge)
        };
        Fill {
            size: q,
            maker_price,
            taker_price,
            maker_amt: c,
            taker_amt,
            match_type,
            maker_fee: Amount::ZERO,
            taker_fee: Amount::ZERO,
            taker_fee_bps: t.fee_rate_bps,
            index,
        }
    }

    /// What the taker gave and received in this fill, its fee deducted (version 1, and a
    /// SELL) or paid on top (a version 2 BUY).
    #[inline]
    fn taker_gives(&self, side: Side, version: u8) -> (Amount, Amount) {
        match side {
            Side::Buy if fee_in_collateral(side, version) => (self.taker_amt + self.taker_fee, self.size),
            Side::Buy => (self.taker_amt, self.size - self.taker_fee),
            Side::Sell => (self.size, self.taker_amt - self.taker_fee),
        }
    }

    /// The fill's trade, PENDING.
    #[inline]
    fn trade(
        &self,
        id: Uuid,
        seq: u64,
        t: &OrderRecord,
        m: &OrderRecord,
        tokens: &[Arc<TradeToken>; 2],
        now: u64,
    ) -> TradeRecord {
        TradeRecord {
            id,
            seq,
            taker_order_id: t.id,
            token: tokens[t.token.outcome_index as usize].clone(),
            side: t.side,
            size: self.size,
            price: self.taker_price,
            fee_rate_bps: self.taker_fee_bps,
            status: TradeStatus::Pending,
            match_time: now,
            last_update: now,
            bucket_index: self.index,
            owner: t.owner,
            maker_address: t.maker.clone(),
            maker_orders: vec![MakerFill {
                order_id: m.id,
                owner: m.owner,
                maker_address: m.maker.clone(),
                matched_amount: self.size,
                price: self.maker_price,
                token: tokens[m.token.outcome_index as usize].clone(),
                side: m.side,
                fee_rate_bps: m.fee_rate_bps,
                fee: self.maker_fee,
            }],
            transaction_hash: String::new(),
            taker_fee: self.taker_fee,
            error_msg: None,
            match_type: self.match_type,
            version: t.version,
        }
    }
}

/// A fee in basis points of the value it was charged on, rounded down.
fn fee_bps(fee: Amount, value: Amount) -> u32 {
    if value.is_zero() {
        return 0;
    }
    fee.mul_div(10_000, value.units()).units() as u32
}

/// Cancels a resting order a sweep met but may not fill (expired, or the taker's own).
#[inline]
fn cancel_met(ledger: &mut Ledger, open: Open, batch: &mut Batch) {
    let Open { rec: mut m_arc, pay, .. } = open;
    let m = Arc::make_mut(&mut m_arc);
    m.status = OrderStatus::Canceled;
    release_rest(ledger, pay, m);
    batch.put_order(m_arc, Stored::Open);
}

/// Releases what an order still reserves (it closed) from its paying account.
fn release_rest(ledger: &mut Ledger, pay: Acct, o: &mut OrderRecord) {
    ledger.release_at(pay, o.reserved);
    o.reserved = Amount::ZERO;
}

/// Applies one order's side of a fill to the order: what it pays moves from the order's
/// reservation to the trade's hold (the ledger's reserved total is unchanged) until
/// settlement transfers it. `amt` is the collateral the order pays (BUY) or receives
/// before fees (SELL). Returns its fee.
fn fill(
    ledger: &mut Ledger,
    pay_acct: Acct,
    o: &mut OrderRecord,
    q: Amount,
    amt: Amount,
    (maker_amount, taker_amount): (Amount, Amount),
) -> Amount {
    let f = exchange_fee(o.side, o.fee_rate_bps, q, maker_amount, taker_amount);
    let (f, pay) = match o.side {
        Side::Buy => (f.min(q), amt),
        Side::Sell => (f.min(amt), q),
    };
    if pay > o.reserved {
        // Not reached: reservations cover fills (the taker's rounding micro-unit is
        // reserved before its fill). Kept so the hold always matches the trade.
        ledger.reserve_at(pay_acct, pay - o.reserved);
        o.reserved = pay;
    }
    o.reserved -= pay;
    o.size_matched += q;
    f
}
