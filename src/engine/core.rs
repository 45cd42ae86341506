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
//! Complexity: insert/cancel O(1) (plus a best-price scan over empty levels), each fill
//! O(1) plus a hash lookup of the maker record. Not handled here: self-trade prevention
//! (self-matching is allowed, as on Polymarket's CLOB), and cross-market negative-risk
//! conversion.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap as StdHashMap, VecDeque};

use foldhash::{HashMap, HashMapExt};

use std::sync::Arc;

use uuid::Uuid;

use super::book::{Book, BookSide, Meet, NIL};
use super::LedgerChange;
use crate::domain::*;
use crate::ledger::{Acct, AssetId, Ledger};
use crate::spread_map::SpreadMap;
use crate::store::{Batch, Stored};

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
    pub making: u64,
    pub taking: u64,
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
    pub size: u64,
    /// In the token's own price, 1e-4 units.
    pub price: u32,
    pub taker: (Uuid, Arc<str>),
    pub maker: (Uuid, Arc<str>),
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

/// An open order: its record and, while it rests, its slot in its market's book (one map
/// entry per order, so placing, cancelling and filling hash its ID once).
#[derive(Debug, Clone)]
pub struct Open {
    pub rec: Arc<OrderRecord>,
    /// [`NIL`] while DEFERRED.
    slot: u32,
    /// Its market (the record's `token.market_idx`), here so that a cancel finds the book
    /// node without waiting for the record's line: the two loads overlap.
    market: u32,
    /// The ledger accounts it pays from and receives into, resolved once at placement: a
    /// fill moves balances by handle. Its fee account is its market's for what it
    /// receives ([`fee_acct`]), so the entry stays 24 bytes.
    pay: Acct,
    recv: Acct,
}

// With its 8-byte key, a map entry of 32 bytes: what a cancel's probe reads.
const _: () = assert!(std::mem::size_of::<(u64, Open)>() == 32);

/// The open orders by id. The map's key is the id's two halves folded into one `u64`, and a
/// lookup compares the full id in the record a hit reads next anyway: an entry is 32 bytes,
/// within one cache line in a table that starts on a 32-byte boundary, where the 16-byte id
/// as the key made it 40 and six entries in ten straddled two lines.
/// Two ids that fold alike are two entries under one key, told apart by their records.
#[derive(Default)]
pub struct OpenOrders(SpreadMap<u64, Open>);

/// The open-order map's key of an order id.
fn fold(id: &Uuid) -> u64 {
    let (hi, lo) = id.as_u64_pair();
    hi ^ lo
}

impl OpenOrders {
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn reserve(&mut self, n: usize) {
        self.0.reserve(n)
    }

    pub fn get(&self, id: &Uuid) -> Option<&Open> {
        self.0.get_where(&fold(id), |o| o.rec.id == *id)
    }

    pub fn contains_key(&self, id: &Uuid) -> bool {
        self.get(id).is_some()
    }

    fn find_entry(&mut self, id: &Uuid) -> Option<crate::spread_map::Entry<'_, u64, Open>> {
        self.0.find_entry_where(&fold(id), |o| o.rec.id == *id)
    }

    /// Enters `open` under its record's id, in place of that id's entry if it has one.
    fn insert(&mut self, open: Open) -> Option<Open> {
        let id = open.rec.id;
        self.0.insert_where(fold(&id), open, |o| o.rec.id == id)
    }

    /// Enters `open`, whose id has no entry (`place` refused it otherwise): without
    /// looking for one to replace.
    fn insert_new(&mut self, open: Open) {
        debug_assert!(!self.contains_key(&open.rec.id), "an open order entered twice");
        self.0.insert_unique(fold(&open.rec.id), open)
    }

    fn remove(&mut self, id: &Uuid) -> Option<Open> {
        self.0.remove_where(&fold(id), |o| o.rec.id == *id)
    }

    /// Every open order, in no order.
    pub fn values(&self) -> impl Iterator<Item = &Open> {
        self.0.values()
    }
}

impl Open {
    fn new(rec: Arc<OrderRecord>, slot: u32, accts: Accts) -> Open {
        Open { market: rec.token.market_idx, rec, slot, pay: accts.pay, recv: accts.recv }
    }

    /// Its accounts, the fee account found in `markets`.
    fn accts(&self, markets: &[MarketState]) -> Accts {
        self.accts_in(&markets[self.rec.token.market_idx as usize].fee_accts)
    }

    /// [`Open::accts`] given its market's fee accounts.
    fn accts_in(&self, fee_accts: &[Acct]) -> Accts {
        Accts { pay: self.pay, recv: self.recv, fee: fee_acct(fee_accts, &self.rec) }
    }
}

/// The fee account of what an order receives, among its market's `fee_accts`: the one for
/// the collateral (a SELL) or for its outcome token (a BUY).
fn fee_acct(fee_accts: &[Acct], o: &OrderRecord) -> Acct {
    match o.side {
        Side::Buy => fee_accts[1 + o.token.outcome_index as usize],
        Side::Sell => fee_accts[0],
    }
}

/// What a matched trade will deliver, noted as expected on the receivers' and the fee
/// accounts: usable at once, credited at settlement.
fn expect_receipts(ledger: &mut Ledger, flows: &[Flow; 2]) {
    for f in flows {
        ledger.expect_at(f.accts.recv, f.net);
        ledger.expect_at(f.accts.fee, f.fee);
    }
}

/// The ledger accounts an order (or a trade's leg) touches: what it pays from, what it
/// receives into, and the fee account of what it receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Accts {
    pay: Acct,
    recv: Acct,
    fee: Acct,
}

/// Startup's memo of the ledger accounts already resolved for restored orders, keyed by
/// the addresses of the order's maker string and its token (the scan interns both, so a
/// maker's orders in one market share them): a lookup hashes two pointers instead of a
/// 42-character address. Each entry keeps both alive, so an address cannot be reused by
/// another value while the memo lives; equal values at two addresses only make two entries.
#[derive(Default)]
pub struct RestoreMemo(HashMap<MemoKey, (Accts, Arc<str>, Arc<OrderToken>)>);

/// Where the maker's string and the token are, and the order's side.
type MemoKey = (usize, usize, Side);

impl RestoreMemo {
    fn accts(&mut self, core: &mut Core, o: &OrderRecord) -> Accts {
        let maker = Arc::as_ptr(&o.maker) as *const u8 as usize;
        self.0
            .entry((maker, Arc::as_ptr(&o.token) as usize, o.side))
            .or_insert_with(|| (core.accts_indexed(o), o.maker.clone(), o.token.clone()))
            .0
    }
}

/// The ledger accounts of recent (maker, outcome token) pairs, found by the address of the
/// maker's string: the API hands every order of one API key's wallet the key's own shared
/// address (`ApiKeyRecord::address`), so a placement compares a pointer instead of hashing
/// and comparing a 42-character address in the ledger's index. Direct-mapped and bounded: a slot holds its maker's
/// string, so no other string can take that address while the slot keeps it, and a
/// collision only replaces the slot. An address not shared (a proxy wallet's, or a caller
/// that builds the string per order) only misses and falls back to the ledger's index.
struct AcctMemo(Box<[Option<MemoSlot>]>);

struct MemoSlot {
    maker: Arc<str>,
    token: AssetId,
    /// The maker's (collateral, token) accounts.
    accts: [Acct; 2],
}

/// Writes a crossing order's batch has room for before its first write (see
/// [`Core::place`]).
const CROSSING_WRITES: usize = 9;

/// Slots of [`AcctMemo`], [`NonceMemo`] and [`ProxyMemo`]: a power of two.
const MEMO_BITS: u32 = 10;

/// A makers' memo's slots, all empty.
fn empty_slots<T>() -> Box<[Option<T>]> {
    (0..1 << MEMO_BITS).map(|_| None).collect()
}

/// The slot of a makers' memo for the address of the maker's string, mixed with `salt`.
fn memo_slot(maker: &Arc<str>, salt: u64) -> usize {
    let key = (Arc::as_ptr(maker) as *const u8 as u64) ^ salt;
    (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - MEMO_BITS)) as usize
}

impl AcctMemo {
    fn new() -> AcctMemo {
        AcctMemo(empty_slots())
    }

    fn slot(maker: &Arc<str>, token: AssetId) -> usize {
        memo_slot(maker, (token.number() as u64) << 48)
    }

    /// The maker's (collateral, token) accounts, from the slot or else from `lookup`.
    fn get(&mut self, maker: &Arc<str>, token: AssetId, lookup: impl FnOnce() -> [Acct; 2]) -> [Acct; 2] {
        let slot = &mut self.0[Self::slot(maker, token)];
        match slot {
            Some(s) if Arc::ptr_eq(&s.maker, maker) && s.token == token => s.accts,
            _ => {
                let accts = lookup();
                *slot = Some(MemoSlot { maker: maker.clone(), token, accts });
                accts
            }
        }
    }
}

/// Recent makers' nonces, found by the address of the maker's string as [`AcctMemo`] finds
/// their accounts. Once any maker has raised its nonce the nonce map is not empty, and a
/// placement would hash and compare its maker's 42-character address in it. Every
/// change of a nonce starts a new generation, and a slot of an older one is a miss, so no
/// slot answers with a nonce that has since moved.
struct NonceMemo {
    slots: Box<[Option<NonceSlot>]>,
    generation: u64,
}

struct NonceSlot {
    maker: Arc<str>,
    generation: u64,
    nonce: u64,
}

impl NonceMemo {
    fn new() -> NonceMemo {
        NonceMemo { slots: empty_slots(), generation: 0 }
    }

    /// The maker's nonce, from its slot or else from `lookup`.
    fn get(&mut self, maker: &Arc<str>, lookup: impl FnOnce() -> u64) -> u64 {
        let slot = &mut self.slots[memo_slot(maker, 0)];
        match slot {
            Some(s) if s.generation == self.generation && Arc::ptr_eq(&s.maker, maker) => s.nonce,
            _ => {
                let nonce = lookup();
                *slot = Some(NonceSlot { maker: maker.clone(), generation: self.generation, nonce });
                nonce
            }
        }
    }

    /// Forgets every slot: a nonce changed.
    fn invalidate(&mut self) {
        self.generation += 1;
    }
}

/// Proxy wallets already checked against the signer of an order naming them, found by the
/// address of the maker's string as [`AcctMemo`] finds accounts (the API hands every order
/// of a key the key's one proxy string, `api::orders::maker_string`). A proxy stays bound
/// to the first signer of its orders, so a slot holding (proxy, signer) answers for every
/// later order naming those two strings; a binding replaced by [`Core::bind_proxy`] forgets
/// every slot. Without it a proxy order looks its 42-character maker up in the proxies'
/// map twice.
struct ProxyMemo(Box<[Option<ProxyPair>]>);

/// A proxy's string and the string of the signer its binding was checked against.
type ProxyPair = (Arc<str>, Arc<str>);

impl ProxyMemo {
    fn new() -> ProxyMemo {
        ProxyMemo(empty_slots())
    }

    /// Whether this (proxy, signer) pair was checked against the binding.
    fn bound(&self, maker: &Arc<str>, signer: &Arc<str>) -> bool {
        matches!(&self.0[memo_slot(maker, 0)], Some((m, s)) if Arc::ptr_eq(m, maker) && Arc::ptr_eq(s, signer))
    }

    fn remember(&mut self, maker: &Arc<str>, signer: &Arc<str>) {
        self.0[memo_slot(maker, 0)] = Some((maker.clone(), signer.clone()));
    }

    fn forget(&mut self) {
        self.0.iter_mut().for_each(|s| *s = None);
    }
}

/// What a taker's pass over the book produced: its trades, and what it gave and received.
#[derive(Debug, Default)]
struct Matched {
    trades: Vec<Arc<TradeRecord>>,
    making: u64,
    taking: u64,
}

/// A matched trade waiting for settlement, with what its legs (taker, maker) move and
/// where: settlement applies these without reading the record, which was matched long
/// before and has left the cache.
#[derive(Debug)]
struct Pending {
    trade: Arc<TradeRecord>,
    /// The trade's sequence, for the nonce check.
    seq: u64,
    flows: [Flow; 2],
}

/// One leg of a pending trade: its accounts, what it pays (held until settlement), what it
/// receives net of the fee, and the fee.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Flow {
    accts: Accts,
    pays: u64,
    net: u64,
    fee: u64,
}

impl Pending {
    fn new(trade: Arc<TradeRecord>, accts: [Accts; 2]) -> Pending {
        let legs = trade.legs();
        let flow = |l: &Leg<'_>, accts: Accts| {
            let (_, net, fee) = l.receives();
            Flow { accts, pays: l.pays().1, net, fee }
        };
        let flows = [flow(&legs[0], accts[0]), flow(&legs[1], accts[1])];
        Pending { seq: trade.seq, trade, flows }
    }
}

impl std::ops::Deref for Open {
    type Target = OrderRecord;
    fn deref(&self) -> &OrderRecord {
        &self.rec
    }
}

pub struct MarketState {
    pub market: Market,
    pub book: Book,
    pub last_trade: LastTrade,
    /// The fee account's handles for what this market's orders receive: collateral, then
    /// each outcome token.
    fee_accts: Vec<Acct>,
    /// The ledger's numbers of the outcome tokens.
    assets: [AssetId; 2],
    /// What this market's orders hold as their token, per outcome: one allocation shared by
    /// every order placed on it.
    pub order_tokens: [Arc<OrderToken>; 2],
    /// What this market's trades hold as each side's token, per outcome (sharing the order
    /// tokens' strings).
    pub trade_tokens: [Arc<TradeToken>; 2],
}

/// The whole matching state.
pub struct Core {
    pub markets: Vec<MarketState>,
    tokens: HashMap<String, (u32, u8)>,
    conditions: HashMap<String, u32>,
    /// Open orders (LIVE resting, or DEFERRED). Shared with the persister's batches:
    /// updates go through `Arc::make_mut`, which copies only while a batch still holds the
    /// previous version.
    /// A map that grows a few entries a command ([`SpreadMap`]), never all at once.
    pub orders: OpenOrders,
    pub ledger: Ledger,
    /// The ledger's number of the collateral.
    collateral: AssetId,
    /// Recent makers' accounts, by the address of their shared string.
    memo: AcctMemo,
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
    /// Proxy maker → the signer it is bound to (signature types 1 and 2).
    proxies: HashMap<String, String>,
    /// Recent (proxy, signer) pairs checked against `proxies`.
    proxy_memo: ProxyMemo,
    /// Signer → the first proxy bound to it (the wallet GET /balance-allowance reads for
    /// signature types 1 and 2).
    proxy_of: HashMap<String, String>,
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

/// Own-token price → YES price.
fn yes_price(outcome: u8, p: u32) -> u32 {
    if outcome == 0 {
        p
    } else {
        PRICE_ONE - p
    }
}

/// Fee of a fill in the unit the order pays it in (tokens for BUY, collateral for SELL).
pub fn fee(side: Side, bps: u32, p: u32, q: u64) -> u64 {
    if bps == 0 || p == 0 || p >= PRICE_ONE {
        return 0;
    }
    let m = p.min(PRICE_ONE - p) as u128;
    let (bps, q, p) = (bps as u128, q as u128, p as u128);
    let one = PRICE_ONE as u128;
    (match side {
        Side::Buy => bps * m * q / (p * one),
        Side::Sell => bps * m * q / (one * one),
    }) as u64
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
            memo: AcctMemo::new(),
            nonces: HashMap::new(),
            nonce_memo: NonceMemo::new(),
            nonces_since: 0,
            pending: VecDeque::new(),
            expiries: BinaryHeap::new(),
            proxies: HashMap::new(),
            proxy_memo: ProxyMemo::new(),
            proxy_of: HashMap::new(),
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
        let fee_accts = std::iter::once(COLLATERAL)
            .chain(m.tokens.iter().map(|t| &*t.token_id))
            .map(|asset| self.ledger.acct(&self.fee_address, asset))
            .collect();
        let order_tokens = [0, 1].map(|i| OrderToken::of(&m, i));
        let trade_tokens = order_tokens.each_ref().map(|t| TradeToken::of(t));
        let assets = [0, 1].map(|i| self.ledger.asset(&m.tokens[i].token_id));
        self.markets.push(MarketState {
            book: Book::new(m.tick),
            market: m,
            last_trade: None,
            fee_accts,
            assets,
            order_tokens,
            trade_tokens,
        });
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

    /// Binds a proxy maker to its signer (first order through it, or at startup).
    pub fn bind_proxy(&mut self, proxy: String, signer: String) {
        self.proxy_of.entry(signer.clone()).or_insert_with(|| proxy.clone());
        if self.proxies.get(&proxy).is_some_and(|bound| *bound != signer) {
            self.proxy_memo.forget();
        }
        self.proxies.insert(proxy, signer);
    }

    /// The proxy wallet bound to a signer, if it traded through one.
    pub fn proxy_of(&self, signer: &str) -> Option<&str> {
        self.proxy_of.get(signer).map(String::as_str)
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
        let accts = t.legs().each_ref().map(|l| self.leg_accts(l));
        let pending = Pending::new(Arc::new(t), accts);
        // Held from the flows settlement releases.
        for f in &pending.flows {
            self.ledger.reserve_at(f.accts.pay, f.pays);
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
    fn leg_accts(&mut self, l: &Leg<'_>) -> Accts {
        let (recv, ..) = l.receives();
        Accts {
            pay: self.ledger.acct(l.address, l.pays().0),
            recv: self.ledger.acct(l.address, recv),
            fee: self.ledger.acct(&self.fee_address, recv),
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
    fn accts_of(&mut self, o: &OrderRecord) -> Accts {
        let token = self.token_asset(o);
        let (ledger, collateral) = (&mut self.ledger, self.collateral);
        let pair = self.memo.get(&o.maker, token, || ledger.accts_by(&o.maker, [collateral, token]));
        self.accts_from(o, pair)
    }

    /// [`Core::accts_of`] from the ledger's index alone: startup has its own memo.
    fn accts_indexed(&mut self, o: &OrderRecord) -> Accts {
        let token = self.token_asset(o);
        let pair = self.ledger.accts_by(&o.maker, [self.collateral, token]);
        self.accts_from(o, pair)
    }

    /// The ledger's number of the outcome token an order trades.
    fn token_asset(&self, o: &OrderRecord) -> AssetId {
        self.markets[o.token.market_idx as usize].assets[o.token.outcome_index as usize]
    }

    /// An order's accounts from its maker's (collateral, token) accounts.
    fn accts_from(&self, o: &OrderRecord, [coll, tok]: [Acct; 2]) -> Accts {
        let (pay, recv) = match o.side {
            Side::Buy => (coll, tok),
            Side::Sell => (tok, coll),
        };
        Accts { pay, recv, fee: fee_acct(&self.markets[o.token.market_idx as usize].fee_accts, o) }
    }

    /// Trades waiting for settlement.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Room for `n` more open orders, so startup does not rehash its maps as it restores;
    /// and in each book room for its share of them, so the books' node arrays do not grow
    /// by doubling (at startup all books grow together, so every smaller array they leave
    /// behind stays touched: ≈ 2× the nodes' memory).
    pub fn reserve(&mut self, n: usize) {
        self.orders.reserve(n);
        let share = n / self.markets.len().max(1);
        for ms in &mut self.markets {
            ms.book.reserve(share);
        }
    }

    /// Re-inserts an accepted open order at startup, in its original priority.
    pub fn restore(&mut self, o: Arc<OrderRecord>, memo: &mut RestoreMemo) {
        let accts = memo.accts(self, &o);
        self.ledger.reserve_at(accts.pay, o.reserved);
        let mut slot = NIL;
        if o.status == OrderStatus::Live {
            let ms = &mut self.markets[o.token.market_idx as usize];
            slot = ms.book.insert(
                book_side(o.token.outcome_index, o.side),
                yes_price(o.token.outcome_index, o.price),
                o.id,
                o.remaining(),
            );
            ms.book.forget_changes();
        }
        if o.expiration != 0 {
            self.expiries.push(Reverse((o.expiration, o.id)));
        }
        self.orders.insert(Open::new(o, slot, accts));
    }

    /// Places an order: checks what only the engine can (an open order with its id, nonce,
    /// proxy binding, balance), then matches and rests the remainder. On acceptance,
    /// `batch` holds every write of the command. The record arrives allocated (by the
    /// request's handler) and unshared, so the engine thread updates it in place and never
    /// copies it.
    pub fn place(
        &mut self,
        mut order: Arc<OrderRecord>,
        defer: bool,
        now: u64,
        batch: &mut Batch,
    ) -> Result<Placed, Reject> {
        let o = Arc::make_mut(&mut order);
        let Some((midx, outcome)) = self.market_of_order(&o.token) else { return Err(Reject::UnknownMarket) };
        if !self.markets[midx as usize].market.accepting_orders || self.markets[midx as usize].market.closed {
            return Err(Reject::MarketClosed);
        }
        // Orders accepted recently but closed already are refused before they get here: the
        // handle claims every id it sends ([`super::Claims`]).
        if self.orders.contains_key(&o.id) {
            return Err(Reject::Duplicated);
        }
        if o.nonce != self.placing_nonce(&o.maker) {
            return Err(Reject::InvalidNonce);
        }
        // Compared once: a 42-character address each.
        let proxied = o.maker != o.signer;
        // A proxy not bound yet is bound to this signer once the order is accepted.
        let mut unbound = false;
        if proxied && !self.proxy_memo.bound(&o.maker, &o.signer) {
            match self.proxies.get(&*o.maker) {
                Some(bound) if **bound != *o.signer => return Err(Reject::NotOwner),
                Some(_) => self.proxy_memo.remember(&o.maker, &o.signer),
                None => unbound = true,
            }
        }
        // The market's shared token: the API's market view hands the same one over (nothing
        // to do), other callers may pass a copy.
        let shared = &self.markets[midx as usize].order_tokens[outcome as usize];
        if !Arc::ptr_eq(&o.token, shared) {
            o.token = shared.clone();
        }
        let bside = book_side(outcome, o.side);
        let limit = yes_price(outcome, o.price);
        let book = &self.markets[midx as usize].book;
        let opp = bside.opposite();
        let would_cross = book.head_crossing(bside, limit).is_some();
        if !defer {
            if o.post_only && would_cross {
                return Err(Reject::PostOnlyCrosses);
            }
            if o.order_type == OrderType::Fok && book.fillable(opp, limit, o.original_size) < o.original_size {
                return Err(Reject::FokNotFilled);
            }
            if o.order_type == OrderType::Fak && !would_cross {
                return Err(Reject::FakNoMatch);
            }
        }
        let accts = self.accts_of(o);
        if !self.ledger.try_reserve_at(accts.pay, o.maker_amount) {
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
        o.reserved = o.maker_amount;
        o.seq = self.next_order_seq;
        self.next_order_seq += 1;
        o.created_at = now;
        // The signature is written once, apart, and not held with the open order: nothing
        // on the request path reads it.
        let signature = std::mem::take(&mut o.signature);
        if !signature.as_bytes().is_empty() {
            batch.put_signature(o.seq, signature);
        }
        if unbound {
            self.bind_proxy(o.maker.to_string(), o.signer.to_string());
            self.proxy_memo.remember(&o.maker, &o.signer);
            batch.put_proxy(&o.maker, &o.signer);
        }
        if defer {
            o.status = OrderStatus::Deferred;
            if o.expiration != 0 {
                self.expiries.push(Reverse((o.expiration, o.id)));
            }
            batch.put_order(order.clone(), Stored::New);
            self.orders.insert_new(Open::new(order.clone(), NIL, accts));
            self.flush_ledger(batch);
            return Ok(Placed { order, trades: vec![], making: 0, taking: 0 });
        }
        o.status = OrderStatus::Live;
        let matched = if would_cross { self.match_taker(o, accts, now, batch) } else { Matched::default() };
        let slot = self.rest_or_close(o, accts, false);
        Ok(self.finish_taker(order, accts, slot, matched, false, batch))
    }

    /// After matching: rests the remainder (GTC/GTD) and returns its book slot, or closes
    /// the order (FOK/FAK, filled) and releases what it still reserved. Takes the record the
    /// caller already holds mutably, so the order's `Arc` is checked for uniqueness once.
    fn rest_or_close(&mut self, o: &mut OrderRecord, accts: Accts, released: bool) -> u32 {
        let remaining = o.remaining();
        if remaining > 0 && o.order_type.rests() && o.reserved > 0 {
            let ms = &mut self.markets[o.token.market_idx as usize];
            let slot = ms.book.insert(
                book_side(o.token.outcome_index, o.side),
                yes_price(o.token.outcome_index, o.price),
                o.id,
                remaining,
            );
            o.status = OrderStatus::Live;
            // A released DEFERRED order's expiry is queued already.
            if o.expiration != 0 && !released {
                self.expiries.push(Reverse((o.expiration, o.id)));
            }
            slot
        } else {
            o.status = if o.size_matched > 0 { OrderStatus::Matched } else { OrderStatus::Canceled };
            release_rest(&mut self.ledger, accts.pay, o);
            NIL
        }
    }

    /// After [`Self::rest_or_close`]: keeps a resting taker open and writes the command's
    /// order, balances and last trade price.
    fn finish_taker(
        &mut self,
        o: Arc<OrderRecord>,
        accts: Accts,
        slot: u32,
        Matched { trades, making, taking }: Matched,
        released: bool,
        batch: &mut Batch,
    ) -> Placed {
        // A new order's id has no entry, nor has a released DEFERRED order's, taken out
        // before it was matched.
        if o.status == OrderStatus::Live {
            self.orders.insert_new(Open::new(o.clone(), slot, accts));
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
    fn match_taker(&mut self, t: &mut OrderRecord, ta: Accts, now: u64, batch: &mut Batch) -> Matched {
        let midx = t.token.market_idx as usize;
        let bside = book_side(t.token.outcome_index, t.side);
        let limit = yes_price(t.token.outcome_index, t.price);
        let mut trades = Vec::new();
        let (mut making, mut taking) = (0u64, 0u64);
        // The fields the sweep needs, borrowed apart: the book is swept in place while the
        // records, the ledger and the settlement queue change beside it.
        let Core { markets, orders, ledger, pending, next_trade_seq, id_prefix, .. } = self;
        let MarketState { book, last_trade, fee_accts, trade_tokens, .. } = &mut markets[midx];
        book.sweep(bside, limit, t.remaining(), |node, q, px| {
            let maker_id = node.id;
            let maker_done = q == node.remaining;
            let Some(mut entry) = orders.find_entry(&maker_id) else {
                unreachable!("resting order {maker_id} has no record")
            };
            if entry.get().expiration != 0 && entry.get().expiration <= now {
                // An expired GTD order never trades: it leaves the book here, before the
                // expiry sweep gets to it.
                let Open { rec: mut m_arc, pay, .. } = entry.remove();
                let m = Arc::make_mut(&mut m_arc);
                m.status = OrderStatus::Canceled;
                release_rest(ledger, pay, m);
                batch.put_order(m_arc, Stored::Open);
                return Meet::Remove;
            }
            let m = entry.get();
            let ma = m.accts_in(fee_accts);
            // Amounts in each order's own token price.
            let pm = yes_price(m.token.outcome_index, px); // maker's own price
            let pt = yes_price(t.token.outcome_index, px); // taker's own price
            let same_token = m.token.outcome_index == t.token.outcome_index;
            let (maker_amt, taker_amt, match_type) = if same_token {
                let c = mul_div_floor(q, pm as u64, PRICE_ONE as u64);
                (c, c, MatchType::Complementary)
            } else {
                let c = mul_div_floor(q, pm as u64, PRICE_ONE as u64);
                let mt = if m.side == Side::Buy { MatchType::Mint } else { MatchType::Merge };
                (c, q - c, mt)
            };
            // A taker BUY may owe a micro-unit more than its reservation after rounding in a
            // mint; it must come from its free balance, or the sweep stops here.
            if t.side == Side::Buy && taker_amt > t.reserved {
                let extra = taker_amt - t.reserved;
                if ledger.get(ta.pay).available() < extra {
                    return Meet::Stop;
                }
                ledger.reserve_at(ta.pay, extra);
                t.reserved += extra;
            }
            // Copies the record only while a batch in flight still holds this version.
            let m = Arc::make_mut(&mut entry.get_mut().rec);
            let maker_fee = fill(ledger, ma.pay, m, q, pm, maker_amt);
            let taker_fee = fill(ledger, ta.pay, t, q, pt, taker_amt);
            match t.side {
                Side::Buy => {
                    making += taker_amt;
                    taking += q - taker_fee;
                }
                Side::Sell => {
                    making += q;
                    taking += taker_amt - taker_fee;
                }
            }
            let trade = TradeRecord {
                id: Uuid::from_u64_pair(*id_prefix, *next_trade_seq),
                seq: *next_trade_seq,
                taker_order_id: t.id,
                token: trade_tokens[t.token.outcome_index as usize].clone(),
                side: t.side,
                size: q,
                price: pt,
                fee_rate_bps: t.fee_rate_bps,
                status: TradeStatus::Pending,
                match_time: now,
                last_update: now,
                bucket_index: trades.len() as u32,
                owner: t.owner,
                maker_address: t.maker.clone(),
                maker_orders: vec![MakerFill {
                    order_id: m.id,
                    owner: m.owner,
                    maker_address: m.maker.clone(),
                    matched_amount: q,
                    price: pm,
                    token: trade_tokens[m.token.outcome_index as usize].clone(),
                    side: m.side,
                    fee_rate_bps: m.fee_rate_bps,
                    fee: maker_fee,
                }],
                transaction_hash: String::new(),
                taker_fee,
                error_msg: None,
                match_type,
            };
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
                [taker_amt, maker_amt],
                "settlement recomputes the amounts matched"
            );
            let trade = Arc::new(trade);
            let settling = Pending::new(trade.clone(), [ta, ma]);
            expect_receipts(ledger, &settling.flows);
            pending.push_back(settling);
            batch.put_trade(trade.clone());
            let taker_yes_side = if bside == BookSide::Bid { Side::Buy } else { Side::Sell };
            *last_trade = Some((px, taker_yes_side));
            trades.push(trade);
            Meet::Fill
        });
        // The taker's trade ids in one step, at their final size (pushed per fill, a sweep's
        // list grew from one held in line by doubling).
        t.associate_trades.extend(trades.iter().map(|tr| tr.id));
        Matched { trades, making, taking }
    }

    /// Settles up to `max` PENDING trades, oldest first. A trade's transfers apply to the
    /// ledger together — payments out of the holds, receipts net of fees, fees to the fee
    /// account — and it becomes CONFIRMED. It becomes FAILED, and nothing moves (holds
    /// return to the payers, expected receipts are void), when it cannot apply: an order
    /// signed with a nonce invalidated since the match (the exchange contract would revert),
    /// or a payer whose settled balance no longer covers its payment (it spent a receipt of
    /// an earlier trade that failed). Every party's API key gets a notification.
    pub fn settle(&mut self, now: u64, max: usize, batch: &mut Batch) -> Settled {
        // Room for the chunk's writes up front: grown by doubling, the list was copied
        // several times a chunk, into memory not touched before. A trade's record, and the
        // balances it changed (written once each at the end, up to six a trade, far fewer
        // when the chunk's trades share wallets): one more copy of the whole list, just
        // for the balances, was ≈ 5% of the mix's cache write misses at depth 10,000.
        let n = self.pending.len().min(max);
        batch.reserve(2 * n + 16);
        let mut out = Settled::default();
        while out.confirmed + out.failed.len() < max {
            let Some(Pending { trade: mut rec, seq, flows }) = self.pending.pop_front() else { break };
            for f in &flows {
                self.ledger.release_at(f.accts.pay, f.pays);
                self.ledger.unexpect_at(f.accts.recv, f.net);
                self.ledger.unexpect_at(f.accts.fee, f.fee);
            }
            // In place, unless a batch not yet written still holds the PENDING record.
            let t = Arc::make_mut(&mut rec);
            t.last_update = now;
            match self.cannot_settle(t, seq, &flows) {
                Some(why) => {
                    for l in &t.legs() {
                        self.cover(l.address, l.receives().0, &mut out.canceled, batch);
                    }
                    t.status = TradeStatus::Failed;
                    t.error_msg = Some(why);
                    // The persister writes each party's notification with the record.
                    batch.put_trade(rec.clone());
                    out.failed.push(rec);
                }
                None => {
                    for f in &flows {
                        self.ledger.debit_at(f.accts.pay, f.pays);
                        self.ledger.credit_at(f.accts.recv, f.net);
                        self.ledger.credit_at(f.accts.fee, f.fee);
                    }
                    t.status = TradeStatus::Confirmed;
                    batch.put_trade(rec);
                    out.confirmed += 1;
                }
            }
        }
        self.flush_ledger(batch);
        out
    }

    /// After a failed trade voided receipts: if the address's open orders now reserve more
    /// of `asset` than it has, they are cancelled (as an exchange cancels orders whose
    /// balance is gone). Holds of its own PENDING trades stay; those fail in turn.
    fn cover(&mut self, address: &str, asset: &str, canceled: &mut Vec<(Uuid, u32)>, batch: &mut Batch) {
        let acc = self.ledger.account(address, asset);
        if acc.reserved <= acc.balance.saturating_add(acc.incoming) {
            return;
        }
        for (id, m) in self.open_where(|o| *o.maker == *address && o.spend_key() == asset) {
            self.close(&id, batch);
            canceled.push((id, m));
        }
    }

    /// Why a trade's transfers cannot apply now, if they cannot. Reads the record only
    /// when a nonce changed since the trade matched, or to name the party that fails.
    fn cannot_settle(&self, t: &TradeRecord, seq: u64, flows: &[Flow; 2]) -> Option<String> {
        if seq < self.nonces_since {
            let legs = t.legs();
            if let Some(l) = legs.iter().find(|l| self.nonces.get(l.address).is_some_and(|n| n.since_trade > seq)) {
                return Some(format!("order of {} was signed with a nonce invalidated before settlement", l.address));
            }
        }
        // What each paying account owes; both legs may pay from one (a self-trade's mint).
        let [f0, f1] = flows;
        let short = |f: &Flow, owed: u64| self.ledger.get(f.accts.pay).balance < owed;
        let failing = if f0.accts.pay == f1.accts.pay {
            short(f0, f0.pays + f1.pays).then_some(0)
        } else if short(f0, f0.pays) {
            Some(0)
        } else {
            short(f1, f1.pays).then_some(1)
        };
        failing.map(|i| {
            let l = &t.legs()[i];
            let what = if l.pays().0 == COLLATERAL { "collateral" } else { "tokens" };
            format!("{} no longer holds the {what} it pays", l.address)
        })
    }

    /// incrementNonce for `maker`: every open order it signed with the old nonce is
    /// cancelled, and trades of those orders still PENDING will fail settlement.
    pub fn increment_nonce(&mut self, maker: &str, batch: &mut Batch) -> (u64, Vec<(Uuid, u32)>) {
        let state = NonceState { nonce: self.nonce_of(maker) + 1, since_trade: self.next_trade_seq };
        self.nonces.insert(maker.to_string(), state);
        self.nonce_memo.invalidate();
        self.nonces_since = self.nonces_since.max(state.since_trade);
        batch.put_nonce(maker, &state);
        let ids = self.open_where(|o| *o.maker == *maker);
        for (id, _) in &ids {
            self.close(id, batch);
        }
        self.flush_ledger(batch);
        (state.nonce, ids)
    }

    /// Stops trading on a market (it resolved): closed, not accepting orders, and every
    /// open order in it cancelled, whoever owns it. Returns the cancelled (order, market).
    pub fn close_market(&mut self, idx: u32, batch: &mut Batch) -> Vec<(Uuid, u32)> {
        let m = &mut self.markets[idx as usize].market;
        if !m.closed || m.accepting_orders {
            m.closed = true;
            m.accepting_orders = false;
            batch.put_market(m);
        }
        let ids = self.open_where(|o| o.token.market_idx == idx);
        for (id, _) in &ids {
            self.close(id, batch);
        }
        self.flush_ledger(batch);
        ids
    }

    /// A negotiated (RFQ) trade: the requester takes `side` of `size` tokens at `price` from
    /// the quoter, off the book. Both parties' payments are held from their free balances
    /// and the trade joins the settlement queue as PENDING, exactly like a book match, so
    /// the settlement worker confirms or fails it the same way. No fee; the book's last
    /// trade price does not move (a block trade's price is not a book price).
    pub fn block_trade(&mut self, f: &BlockTrade, now: u64, batch: &mut Batch) -> Result<Arc<TradeRecord>, Reject> {
        let (midx, outcome) = self.market_of_token(&f.token_id).ok_or(Reject::UnknownMarket)?;
        let m = &self.markets[midx as usize].market;
        if m.closed || !m.accepting_orders {
            return Err(Reject::MarketClosed);
        }
        let token = self.markets[midx as usize].trade_tokens[outcome as usize].clone();
        let maker_side = match f.side {
            Side::Buy => Side::Sell,
            Side::Sell => Side::Buy,
        };
        let trade = TradeRecord {
            id: Uuid::from_u64_pair(self.id_prefix, self.next_trade_seq),
            seq: self.next_trade_seq,
            taker_order_id: f.request_id,
            token: token.clone(),
            side: f.side,
            size: f.size,
            price: f.price,
            fee_rate_bps: 0,
            status: TradeStatus::Pending,
            match_time: now,
            last_update: now,
            bucket_index: 0,
            owner: f.taker.0,
            maker_address: f.taker.1.clone(),
            maker_orders: vec![MakerFill {
                order_id: f.quote_id,
                owner: f.maker.0,
                maker_address: f.maker.1.clone(),
                matched_amount: f.size,
                price: f.price,
                token,
                side: maker_side,
                fee_rate_bps: 0,
                fee: 0,
            }],
            transaction_hash: String::new(),
            taker_fee: 0,
            error_msg: None,
            match_type: MatchType::Complementary,
        };
        let legs = trade.legs();
        let accts = legs.each_ref().map(|l| self.leg_accts(l));
        if accts[0].pay == accts[1].pay {
            return Err(Reject::NotOwner);
        }
        if legs.iter().zip(&accts).any(|(l, a)| self.ledger.get(a.pay).available() < l.pays().1) {
            return Err(Reject::NotEnoughBalance);
        }
        for (l, a) in legs.iter().zip(&accts) {
            self.ledger.reserve_at(a.pay, l.pays().1);
        }
        self.next_trade_seq += 1;
        let trade = Arc::new(trade);
        let pending = Pending::new(trade.clone(), accts);
        expect_receipts(&mut self.ledger, &pending.flows);
        self.pending.push_back(pending);
        batch.put_trade(trade.clone());
        self.flush_ledger(batch);
        Ok(trade)
    }

    /// Cancels every open order whose GTD expiration has passed; returns (order, market).
    pub fn expire(&mut self, now: u64, batch: &mut Batch) -> Vec<(Uuid, u32)> {
        let mut out = Vec::new();
        while let Some(&Reverse((exp, id))) = self.expiries.peek() {
            if exp > now {
                break;
            }
            self.expiries.pop();
            if let Some(m) = self.orders.get(&id).filter(|o| o.expiration == exp).map(|o| o.token.market_idx) {
                self.close(&id, batch);
                out.push((id, m));
            }
        }
        self.flush_ledger(batch);
        out
    }

    /// Cancels one open order, whoever owns it (the caller has decided it may).
    fn close(&mut self, id: &Uuid, batch: &mut Batch) {
        if let Some(open) = self.orders.remove(id) {
            self.close_open(open, batch);
        }
    }

    /// Cancels an open order already taken out of the open-order map.
    fn close_open(&mut self, Open { rec: mut arc, slot, market, pay, .. }: Open, batch: &mut Batch) {
        // The book first: its node's load need not wait for the record's (make_mut's
        // atomic orders every load after it).
        if slot != NIL {
            self.markets[market as usize].book.remove(slot);
        }
        let o = Arc::make_mut(&mut arc);
        o.status = OrderStatus::Canceled;
        release_rest(&mut self.ledger, pay, o);
        batch.put_order(arc, Stored::Open);
    }

    /// Cancels open orders of `owner` (LIVE or DEFERRED).
    pub fn cancel(&mut self, owner: Uuid, ids: &[Uuid], batch: &mut Batch) -> Canceled {
        let mut out = Canceled::default();
        for id in ids {
            // One probe of the map finds, checks and removes the order.
            match self.orders.find_entry(id) {
                Some(e) if e.get().owner == owner => {
                    let open = e.remove();
                    self.close_open(open, batch);
                    out.canceled.push(*id);
                }
                _ => out.not_canceled.push((id.to_string(), "order not found or already canceled".into())),
            }
        }
        self.flush_ledger(batch);
        out
    }

    /// IDs of the open orders of `owner`, optionally only in one market or token.
    pub fn open_ids(&self, owner: Uuid, market: Option<&str>, asset: Option<&str>) -> Vec<Uuid> {
        self.open_where(|o| {
            o.owner == owner
                && market.is_none_or(|m| *o.token.condition_id == *m)
                && asset.is_none_or(|a| *o.token.token_id == *a)
        })
        .into_iter()
        .map(|x| x.0)
        .collect()
    }

    /// Open orders matching `f`, in acceptance order: (id, market).
    fn open_where(&self, f: impl Fn(&OrderRecord) -> bool) -> Vec<(Uuid, u32)> {
        let mut v: Vec<(u64, Uuid, u32)> =
            self.orders.values().filter(|o| f(o)).map(|o| (o.seq, o.id, o.token.market_idx)).collect();
        v.sort_unstable();
        v.into_iter().map(|x| (x.1, x.2)).collect()
    }

    /// Moves DEFERRED orders into matching, in acceptance order.
    pub fn release_deferred(&mut self, ids: Option<&[Uuid]>, now: u64, batch: &mut Batch) -> Vec<Placed> {
        let mut deferred: Vec<(u64, Uuid)> = self
            .orders
            .values()
            .filter(|o| o.status == OrderStatus::Deferred)
            .filter(|o| ids.is_none_or(|ids| ids.contains(&o.id)))
            .map(|o| (o.seq, o.id))
            .collect();
        deferred.sort();
        let mut out = Vec::new();
        for (_, id) in deferred {
            let open = self.orders.remove(&id).expect("present");
            let accts = open.accts(&self.markets);
            let Open { rec: mut order, .. } = open;
            let o = Arc::make_mut(&mut order);
            o.status = OrderStatus::Live;
            let matched = self.match_taker(o, accts, now, batch);
            let slot = self.rest_or_close(o, accts, true);
            out.push(self.finish_taker(order, accts, slot, matched, true, batch));
        }
        out
    }

    /// Credits the ledger (the testnet faucet).
    pub fn credit(&mut self, address: &str, asset: &str, amount: u64, batch: &mut Batch) {
        self.ledger.credit(address, asset, amount);
        self.flush_ledger(batch);
    }

    /// Credits and debits accounts of `address`, all or none. A debit takes only what the
    /// account holds settled and not reserved (receipts of unsettled trades and what open
    /// orders hold stay put); debits of one asset add up.
    pub fn transfer(
        &mut self,
        address: &str,
        changes: &[(String, LedgerChange)],
        batch: &mut Batch,
    ) -> Result<(), Reject> {
        for (asset, change) in changes {
            let LedgerChange::Debit(_) = change else { continue };
            let wanted: u64 = changes
                .iter()
                .filter(|(a, _)| a == asset)
                .map(|(_, c)| if let LedgerChange::Debit(n) = c { *n } else { 0 })
                .fold(0u64, u64::saturating_add);
            let acc = self.ledger.account(address, asset);
            if acc.balance.saturating_sub(acc.reserved) < wanted {
                return Err(Reject::NotEnoughBalance);
            }
        }
        for (asset, change) in changes {
            let a = self.ledger.acct(address, asset);
            match *change {
                LedgerChange::Credit(n) => self.ledger.credit_at(a, n),
                LedgerChange::Debit(n) => self.ledger.debit_at(a, n),
            }
        }
        self.flush_ledger(batch);
        Ok(())
    }

    /// Liquidity-reward scores of one market's resting orders (docs/rewards.md): for each
    /// maker address, per book side (bids, asks), the sum over its orders of at least
    /// `min_size` resting within `max_spread` of the midpoint of (v − s)² · size, with v
    /// the max spread and s the order's distance from the midpoint, both in half price
    /// units (the midpoint may fall between two units). None when a side is empty or the
    /// market is not trading.
    pub fn reward_scores(&self, market: u32, max_spread: u32, min_size: u64) -> Option<RewardScores> {
        let ms = self.markets.get(market as usize)?;
        if ms.market.closed || !ms.market.accepting_orders {
            return None;
        }
        let (bid, ask) = (ms.book.best(BookSide::Bid)?, ms.book.best(BookSide::Ask)?);
        let (mid2, v2) = (bid + ask, 2 * max_spread);
        let mut by: StdHashMap<Arc<str>, [u128; 2]> = StdHashMap::new();
        for side in [BookSide::Bid, BookSide::Ask] {
            for (p, _) in ms.book.depth(side) {
                let s2 = (2 * p).abs_diff(mid2);
                if s2 >= v2 {
                    break;
                }
                let w = ((v2 - s2) as u128).pow(2);
                for (id, remaining) in ms.book.level_orders(side, p) {
                    if remaining < min_size {
                        continue;
                    }
                    if let Some(o) = self.orders.get(&id) {
                        by.entry(o.maker.clone()).or_default()[side as usize] += w * remaining as u128;
                    }
                }
            }
        }
        let mut makers: Vec<_> = by.into_iter().collect();
        makers.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Some(RewardScores { midpoint2: mid2, spread2: v2, makers })
    }

    /// Structural check of every book plus the ledger reservations against open orders.
    pub fn check(&self) -> Result<(), String> {
        for ms in &self.markets {
            ms.book.check()?;
        }
        // (address, asset) → [reserved by open orders, held by pending trades].
        let mut want: StdHashMap<(String, String), [u64; 2]> = StdHashMap::new();
        for o in self.orders.values() {
            want.entry((o.maker.to_string(), o.spend_key().to_string())).or_default()[0] += o.reserved;
            if o.status == OrderStatus::Live {
                if o.slot == NIL {
                    return Err(format!("live order {} not resting", o.id));
                }
                if o.market != o.token.market_idx {
                    return Err(format!("open order {} filed under market {}", o.id, o.market));
                }
                let n = self.markets[o.token.market_idx as usize].book.node(o.slot);
                if n.id != o.id || n.remaining != o.remaining() {
                    return Err(format!("book node out of step with order {}", o.id));
                }
            }
        }
        let mut incoming: StdHashMap<(String, String), u64> = StdHashMap::new();
        for t in &self.pending {
            let again = Pending::new(t.trade.clone(), t.flows.map(|f| f.accts));
            if (again.seq, again.flows) != (t.seq, t.flows) {
                return Err(format!("pending trade {} out of step with its record", t.trade.id));
            }
            for l in t.trade.legs() {
                let (asset, amount) = l.pays();
                want.entry((l.address.to_string(), asset.to_string())).or_default()[1] += amount;
                let (asset, net, fee) = l.receives();
                *incoming.entry((l.address.to_string(), asset.to_string())).or_default() += net;
                *incoming.entry((self.fee_address.clone(), asset.to_string())).or_default() += fee;
            }
        }
        for ((addr, asset), n) in incoming {
            let acc = self.ledger.account(&addr, &asset);
            if acc.incoming != n {
                return Err(format!("incoming {addr}/{asset}: ledger {} trades {n}", acc.incoming));
            }
        }
        for ((addr, asset), [orders, held]) in want {
            let acc = self.ledger.account(&addr, &asset);
            if acc.reserved != orders + held {
                return Err(format!("reserved {addr}/{asset}: ledger {} orders {orders} trades {held}", acc.reserved));
            }
            // Holds of trades that will fail may exceed what is left after an earlier
            // failure; open orders never may (they are cancelled then).
            if orders > 0 && acc.reserved > acc.balance + acc.incoming {
                return Err(format!("over-reserved {addr}/{asset}"));
            }
        }
        Ok(())
    }
}

/// Releases what an order still reserves (it closed) from its paying account.
fn release_rest(ledger: &mut Ledger, pay: Acct, o: &mut OrderRecord) {
    ledger.release_at(pay, o.reserved);
    o.reserved = 0;
}

/// Applies one order's side of a fill to the order: what it pays moves from the order's
/// reservation to the trade's hold (the ledger's reserved total is unchanged) until
/// settlement transfers it. `amt` is the collateral the order pays (BUY) or receives
/// before fees (SELL). Returns its fee.
fn fill(ledger: &mut Ledger, pay_acct: Acct, o: &mut OrderRecord, q: u64, p: u32, amt: u64) -> u64 {
    let f = fee(o.side, o.fee_rate_bps, p, q);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Startup's memo hands every restored order the accounts a lookup by its strings would,
    /// whichever of its keys (maker, token, side) it shares with earlier orders, and when
    /// equal values arrive at two addresses (as from the two scan threads' interners).
    #[test]
    fn restored_orders_get_their_own_accounts_through_the_memo() {
        let tok = |id: &str, outcome: &str| Token { token_id: id.into(), outcome: outcome.into() };
        let mut core = Core::new("0xfee".into());
        core.add_market(Market::binary("0xc", tok("1", "Yes"), tok("2", "No"), 100, 1));
        let (a, b, a_again): (Arc<str>, Arc<str>, Arc<str>) = ("0xa".into(), "0xb".into(), "0xa".into());
        let m = &core.markets[0].market;
        let (yes, no, yes_again) = (OrderToken::of(m, 0), OrderToken::of(m, 1), OrderToken::of(m, 0));
        let orders = [
            (&a, &yes, Side::Buy, 10),
            (&a, &yes, Side::Sell, 20),
            (&a, &no, Side::Buy, 40),
            (&b, &yes, Side::Buy, 80),
            (&a_again, &yes_again, Side::Buy, 160),
            (&a, &yes, Side::Buy, 320),
        ];
        let mut memo = RestoreMemo::default();
        for (n, (maker, token, side, reserved)) in orders.into_iter().enumerate() {
            let o = record(n, maker, token, side, reserved);
            core.restore(Arc::new(o), &mut memo);
        }
        // Restored orders rest, and the book notes no change for them: the readers' views
        // start from a snapshot of the rebuilt book.
        assert_eq!(core.markets[0].book.len(), 6);
        assert!(core.markets[0].book.take_changes().is_empty());
        let restored: Vec<_> = core.orders.values().map(|o| (o.rec.clone(), o.accts(&core.markets))).collect();
        for (rec, accts) in restored {
            assert_eq!(accts, core.accts_of(&rec), "order {}", rec.id);
        }
        let reserved = |addr: &str, asset: &str| core.ledger.account(addr, asset).reserved;
        assert_eq!(reserved("0xa", COLLATERAL), 10 + 40 + 160 + 320);
        assert_eq!(reserved("0xa", "1"), 20);
        assert_eq!(reserved("0xb", COLLATERAL), 80);
        assert_eq!(memo.0.len(), 5, "the equal values at other addresses took their own entry");
    }

    /// The open-order map keys an id by its two halves folded: ids that fold alike are
    /// entries under one key, each found, cancelled and left by its own id, and an id that
    /// folds alike but was never placed is not found.
    #[test]
    fn ids_that_fold_alike_are_told_apart() {
        let tok = |id: &str, outcome: &str| Token { token_id: id.into(), outcome: outcome.into() };
        let mut core = Core::new("0xfee".into());
        core.add_market(Market::binary("0xc", tok("1", "Yes"), tok("2", "No"), 100, 1));
        let maker: Arc<str> = "0xa".into();
        let yes = OrderToken::of(&core.markets[0].market, 0);
        let ids = [Uuid::from_u64_pair(1, 2), Uuid::from_u64_pair(3, 0), Uuid::from_u64_pair(7, 4)];
        let stranger = Uuid::from_u64_pair(0, 3);
        assert!(ids.iter().chain([&stranger]).all(|id| fold(id) == 3));
        let mut memo = RestoreMemo::default();
        for (n, id) in ids.iter().enumerate() {
            let mut o = record(n, &maker, &yes, Side::Buy, 10);
            o.id = *id;
            core.restore(Arc::new(o), &mut memo);
        }
        assert_eq!(core.orders.len(), 3);
        assert!(ids.iter().all(|id| core.orders.get(id).is_some_and(|o| o.rec.id == *id)));
        assert!(core.orders.get(&stranger).is_none());
        let owner = Uuid::from_u128(7);
        let mut batch = Batch::default();
        let out = core.cancel(owner, &[stranger, ids[1]], &mut batch);
        assert_eq!(out.canceled.as_slice(), &[ids[1]]);
        assert_eq!(out.not_canceled.len(), 1);
        assert!(core.orders.get(&ids[1]).is_none());
        assert!([ids[0], ids[2]].iter().all(|id| core.orders.get(id).is_some_and(|o| o.rec.id == *id)));
        assert_eq!(core.markets[0].book.len(), 2);
    }

    /// A LIVE GTC order of `maker` at 0.40.
    fn record(n: usize, maker: &Arc<str>, token: &Arc<OrderToken>, side: Side, reserved: u64) -> OrderRecord {
        OrderRecord {
            id: Uuid::from_u128(n as u128 + 1),
            seq: n as u64 + 1,
            status: OrderStatus::Live,
            owner: Uuid::from_u128(7),
            maker: maker.clone(),
            signer: maker.clone(),
            taker: "".into(),
            token: token.clone(),
            side,
            price: 4_000,
            original_size: 1_000_000,
            size_matched: 0,
            maker_amount: 400_000,
            taker_amount: 1_000_000,
            fee_rate_bps: 0,
            expiration: 0,
            nonce: 0,
            salt: 0,
            signature_type: 0,
            signature: "".into(),
            order_type: OrderType::Gtc,
            post_only: false,
            reserved,
            associate_trades: Default::default(),
            created_at: 0,
        }
    }

    /// A placement's accounts come from the makers' memo when the maker's string is one
    /// seen before, and from the ledger's index otherwise: either way they are the accounts
    /// a lookup by text finds, also after colliding makers replaced a slot and for equal
    /// strings at other addresses; and each slot holds what the index says.
    #[test]
    fn makers_accounts_by_pointer_are_the_ledgers() {
        let tok = |id: usize, outcome: &str| Token { token_id: id.to_string(), outcome: outcome.into() };
        let mut core = Core::new("0xfee".into());
        // Four outcome tokens per slot: one maker's tokens share slots.
        for i in 0..2 << MEMO_BITS {
            let mut m = Market::binary(&format!("0x{i:x}"), tok(2 * i + 1, "Yes"), tok(2 * i + 2, "No"), 100, 1);
            m.idx = i as u32;
            core.add_market(m);
        }
        let tokens: Vec<_> = core.markets.iter().flat_map(|m| m.order_tokens.clone()).collect();
        let makers: Vec<Arc<str>> = (0..4).map(|i| format!("0x{i:040x}").into()).collect();
        // Each token by every maker in turn: some makers' entries for a token share a slot.
        for round in 0..3 {
            for (t, token) in tokens.iter().enumerate() {
                for (n, shared) in makers.iter().enumerate() {
                    let copy: Arc<str> = (**shared).into();
                    let maker = if round == 1 && n % 2 == 0 { &copy } else { shared };
                    let side = if (n + t) % 3 == 0 { Side::Buy } else { Side::Sell };
                    let accts = core.accts_of(&record(n, maker, token, side, 0));
                    let [coll, own] = core.ledger.accts(shared, [COLLATERAL, &token.token_id]);
                    let want = if side == Side::Buy { (coll, own) } else { (own, coll) };
                    assert_eq!((accts.pay, accts.recv), want, "round {round}, maker {n}, token {t}");
                }
            }
        }
        // What the slots hold is what the ledger's index says for their maker and token.
        let names: Vec<_> = tokens.iter().map(|t| (core.ledger.asset(&t.token_id), t.token_id.clone())).collect();
        let mut held = 0;
        for slot in core.memo.0.iter().flatten() {
            let name = &names.iter().find(|n| n.0 == slot.token).expect("an outcome token").1;
            assert_eq!(slot.accts, core.ledger.accts(&slot.maker, [COLLATERAL, name]));
            held += 1;
        }
        assert!(held > 1 << (MEMO_BITS - 1), "{held} slots in use");
    }

    /// One market ("1" Yes, "2" No) and five wallets funded with collateral and "1".
    fn market_and_wallets() -> (Core, Vec<Arc<str>>) {
        let tok = |id: &str, outcome: &str| Token { token_id: id.into(), outcome: outcome.into() };
        let mut core = Core::new("0xfee".into());
        core.add_market(Market::binary("0xc", tok("1", "Yes"), tok("2", "No"), 100, 1));
        let wallets: Vec<Arc<str>> = (1..=5).map(|i| format!("0x{i:040x}").into()).collect();
        let mut setup = Batch::default();
        for w in &wallets {
            core.credit(w, COLLATERAL, 1 << 40, &mut setup);
            core.credit(w, "1", 1 << 40, &mut setup);
        }
        (core, wallets)
    }

    /// Order `n` of wallet `w` for `size` of the market's first token at 0.40.
    fn order_of(core: &Core, wallets: &[Arc<str>], n: usize, w: usize, side: Side, size: u64) -> Arc<OrderRecord> {
        let mut o = record(n, &wallets[w], &core.markets[0].order_tokens[0], side, 0);
        let cost = size * 4 / 10;
        (o.original_size, o.maker_amount, o.taker_amount) =
            if side == Side::Buy { (size, cost, size) } else { (size, size, cost) };
        o.signature = "0x01".into();
        Arc::new(o)
    }

    /// A resting order's writes fit the list a command's batch starts with, and a crossing
    /// order's, for one to three fills, the room it reserves: neither list grows.
    #[test]
    fn placements_write_into_the_room_their_batch_has() {
        let (mut core, wallets) = market_and_wallets();
        let order = |core: &Core, n, w, side, size| order_of(core, &wallets, n, w, side, size);
        // Three makers offer one token at 0.40 twice each.
        for n in 0..6 {
            let mut batch = Batch::for_command();
            let placed = core.place(order(&core, n, n % 3, Side::Sell, 1_000_000), false, 1, &mut batch).unwrap();
            assert!(placed.trades.is_empty());
            assert!(batch.ops.len() <= 4, "a resting order wrote {}", batch.ops.len());
            assert_eq!(batch.ops.capacity(), Batch::for_command().ops.capacity());
        }
        // Takers of one fill, two and three (the largest sweep the room is for).
        for (n, w, size, fills) in [(10, 3, 1_000_000, 1), (11, 4, 2_000_000, 2), (12, 3, 3_000_000, 3)] {
            let mut batch = Batch::for_command();
            let placed = core.place(order(&core, n, w, Side::Buy, size), false, 1, &mut batch).unwrap();
            assert_eq!(placed.trades.len(), fills);
            // The taker lists every trade it took part in, in match order.
            let ids: Vec<Uuid> = placed.trades.iter().map(|t| t.id).collect();
            assert_eq!(placed.order.associate_trades[..], ids[..]);
            let (len, cap) = (batch.ops.len(), batch.ops.capacity());
            assert!(len <= CROSSING_WRITES && cap == CROSSING_WRITES, "{fills} fills: {len} writes, room {cap}");
        }
        assert_eq!(core.markets[0].book.len(), 0, "every offer was taken");
    }

    /// A taker meets an expired order in the middle of a level: it leaves the book
    /// canceled, its reservation released, and the taker trades on with the orders behind
    /// it; a taker that stops inside the level leaves the rest of the queue in place.
    #[test]
    fn a_sweep_passes_an_expired_order_in_the_middle_of_a_level() {
        let (mut core, wallets) = market_and_wallets();
        let mut batch = Batch::default();
        let mut ids = Vec::new();
        // Four offers at 0.40; the second expires at 5.
        for (n, w, expiration) in [(0, 0, 0), (1, 1, 5), (2, 2, 0), (3, 0, 0)] {
            let mut o = order_of(&core, &wallets, n, w, Side::Sell, 1_000_000);
            Arc::make_mut(&mut o).expiration = expiration;
            ids.push(o.id);
            core.place(o, false, 1, &mut batch).unwrap();
        }
        let reserved = |core: &Core, w: usize| core.ledger.account(&wallets[w], "1").reserved;
        assert_eq!(reserved(&core, 1), 1_000_000);
        let placed = core.place(order_of(&core, &wallets, 10, 3, Side::Buy, 2_500_000), false, 10, &mut batch).unwrap();
        let fills: Vec<(Uuid, u64)> =
            placed.trades.iter().map(|t| (t.maker_orders[0].order_id, t.maker_orders[0].matched_amount)).collect();
        assert_eq!(fills, [(ids[0], 1_000_000), (ids[2], 1_000_000), (ids[3], 500_000)]);
        assert!(core.orders.get(&ids[1]).is_none(), "the expired order left the open orders");
        assert_eq!(reserved(&core, 1), 0, "its reservation went back");
        let book = &core.markets[0].book;
        assert_eq!(book.len(), 1);
        assert_eq!(book.level_orders(BookSide::Ask, 4_000), vec![(ids[3], 500_000)]);
        assert_eq!(book.depth(BookSide::Ask), vec![(4_000, 500_000)]);
        core.check().unwrap();
    }

    /// A maker's nonce comes from the memo while it holds and never after it moved: with
    /// one string shared by the maker's orders (as the API shares a key's address), an
    /// order signed with the old nonce is refused right after `increment_nonce` and one
    /// with the new nonce accepted; a nonce loaded at startup counts the same way.
    #[test]
    fn a_raised_nonce_refuses_the_next_order_of_a_shared_maker_string() {
        let (mut core, wallets) = market_and_wallets();
        let mut batch = Batch::default();
        // Another maker raised its nonce: the map is not empty, placements use the memo.
        core.increment_nonce(&wallets[4], &mut batch);
        let signed = |core: &Core, n, nonce| {
            let mut o = order_of(core, &wallets, n, 0, Side::Sell, 1_000_000);
            Arc::make_mut(&mut o).nonce = nonce;
            o
        };
        let mut place =
            |core: &mut Core, n, nonce| core.place(signed(core, n, nonce), false, 1, &mut batch).map(|_| ());
        place(&mut core, 1, 0).unwrap();
        assert_eq!(place(&mut core, 2, 1), Err(Reject::InvalidNonce));
        core.increment_nonce(&wallets[0], &mut Batch::default());
        assert_eq!(place(&mut core, 3, 0), Err(Reject::InvalidNonce));
        place(&mut core, 4, 1).unwrap();
        core.restore_nonce(wallets[0].to_string(), NonceState { nonce: 5, since_trade: 0 });
        assert_eq!(place(&mut core, 5, 1), Err(Reject::InvalidNonce));
        place(&mut core, 6, 5).unwrap();
    }

    /// A proxy wallet stays bound to the first signer of its orders. The memo that skips
    /// the map for a (proxy, signer) pair it has seen accepts neither another signer naming
    /// the same proxy string nor, once the proxy is bound to another signer (as startup
    /// binds what the store holds), the pair it remembered.
    #[test]
    fn a_proxy_is_refused_to_any_signer_but_the_one_it_is_bound_to() {
        let (mut core, wallets) = market_and_wallets();
        let (a, b): (Arc<str>, Arc<str>) = (format!("0x{:040x}", 0xa1).into(), format!("0x{:040x}", 0xb2).into());
        let mut batch = Batch::default();
        let mut place = |core: &mut Core, n, signer: &Arc<str>| {
            let mut o = order_of(core, &wallets, n, 0, Side::Sell, 1_000_000);
            let r = Arc::make_mut(&mut o);
            (r.signer, r.signature_type) = (signer.clone(), 2);
            core.place(o, false, 1, &mut batch).map(|_| ())
        };
        place(&mut core, 1, &a).unwrap();
        assert_eq!(core.proxy_of(&a), Some(&*wallets[0]));
        place(&mut core, 2, &a).unwrap();
        assert_eq!(place(&mut core, 3, &b), Err(Reject::NotOwner));
        place(&mut core, 4, &a).unwrap();
        core.bind_proxy(wallets[0].to_string(), b.to_string());
        assert_eq!(place(&mut core, 5, &a), Err(Reject::NotOwner));
        place(&mut core, 6, &b).unwrap();
    }

    /// A fill's two sides hold their market's shared tokens; a trade read back from the
    /// store holds tokens of its own, equal to them, and shares the market's again once
    /// restored at startup.
    #[test]
    fn trades_share_their_markets_tokens_and_get_them_back_at_startup() {
        let (mut core, wallets) = market_and_wallets();
        let mut batch = Batch::default();
        core.place(order_of(&core, &wallets, 0, 0, Side::Sell, 1_000_000), false, 1, &mut batch).unwrap();
        let placed = core.place(order_of(&core, &wallets, 1, 1, Side::Buy, 1_000_000), false, 1, &mut batch).unwrap();
        let trade = &placed.trades[0];
        let shared = &core.markets[0].trade_tokens[0];
        assert!(Arc::ptr_eq(&trade.token, shared) && Arc::ptr_eq(&trade.maker_orders[0].token, shared));
        assert_eq!(*trade.token.token_id, *core.markets[0].order_tokens[0].token_id);

        let stored: TradeRecord = crate::store::as_stored(&**trade);
        assert_eq!(stored, **trade);
        assert!(!Arc::ptr_eq(&stored.token, shared));
        let (mut restarted, _) = market_and_wallets();
        restarted.restore_pending(stored);
        let restored = &restarted.pending[0].trade;
        let shared = &restarted.markets[0].trade_tokens[0];
        assert!(Arc::ptr_eq(&restored.token, shared) && Arc::ptr_eq(&restored.maker_orders[0].token, shared));
        assert_eq!(**restored, **trade);
    }

    #[test]
    fn fee_formula() {
        // 100 tokens at 0.5 with 100 bps: SELL pays 0.01·0.5·100 = 0.5 USDC.
        assert_eq!(fee(Side::Sell, 100, 5000, 100_000_000), 500_000);
        // BUY pays in tokens: 0.01·0.5·100/0.5 = 1 token.
        assert_eq!(fee(Side::Buy, 100, 5000, 100_000_000), 1_000_000);
        assert_eq!(fee(Side::Buy, 0, 5000, 100_000_000), 0);
        // min(p, 1-p): at 0.9 the fee uses 0.1.
        assert_eq!(fee(Side::Sell, 100, 9000, 100_000_000), 100_000);
    }
}
