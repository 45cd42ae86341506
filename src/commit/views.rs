//! The market views readers see. The engine sends each durable command's level
//! changes ([`BookDelta`]); the commit stage applies them to the market's [`MarketView`] once
//! the command is durable. Readers (`/book`, `/price`, feed snapshots) take an
//! `Arc<BookSnapshot>`, built from the view on the first read after a change and shared
//! until the next. The view's lock is shared by the persister and readers, never by the
//! engine, and the engine's cost per command follows the levels it changed, not the depth
//! of the book.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use parking_lot::Mutex;

use smallvec::SmallVec;

use crate::domain::{Amount, LastTrade, Market, OrderToken, Price, Side};

/// Aggregated levels: (price, size), best first.
pub type Levels = Vec<(Price, Amount)>;

/// One market's book, aggregated, in YES-price space.
#[derive(Debug, Clone, Default)]
pub struct BookSnapshot {
    /// (YES price, size), best first.
    pub bids: Levels,
    pub asks: Levels,
    /// Last trade: YES price and the taker's side in YES terms.
    pub last_trade: LastTrade,
    pub timestamp_ms: u64,
    /// Publication sequence of this market's book (since start): each snapshot is one more
    /// than the last, so a feed client detects a gap.
    pub seq: u64,
}

impl BookSnapshot {
    /// The book as seen from one outcome token: the YES book itself, or its mirror for NO
    /// (a YES bid at p is a NO ask at 1−p). Returns (bids best first, asks best first).
    pub fn view(&self, outcome: u8) -> (Levels, Levels) {
        if outcome == 0 {
            (self.bids.clone(), self.asks.clone())
        } else {
            let flip = |v: &Levels| v.iter().map(|&(p, s)| (p.complement(), s)).collect();
            (flip(&self.asks), flip(&self.bids))
        }
    }

    /// Best bid and ask of a token.
    pub fn best(&self, outcome: u8) -> Best {
        best_of((self.bids.first().map(|x| x.0), self.asks.first().map(|x| x.0)), outcome)
    }

    pub fn last_trade(&self, outcome: u8) -> LastTrade {
        self.last_trade.map(|(p, s)| mirror(outcome, p, s))
    }
}

/// One side's changed levels, as (YES price, new total; 0 = the level emptied), ascending
/// price. Held in line up to two levels: a resting order or a cancel changes one, and the
/// engine takes these after every command, so most commands allocate nothing for them.
pub type Changed = SmallVec<[(Price, Amount); 2]>;

/// One durable command's effect on a market's book: the levels whose total changed (YES
/// price, new total; 0 = emptied), ascending price per side, and the last trade after it.
#[derive(Debug, Clone, Default)]
pub struct BookDelta {
    pub bids: Changed,
    pub asks: Changed,
    pub last_trade: LastTrade,
    pub timestamp_ms: u64,
    /// The market's publication sequence: one more than the previous delta's.
    pub seq: u64,
    /// The tick moved with this change: (old, new).
    pub tick: Option<(Price, Price)>,
}

/// A price and taker side between YES terms and a token's own (the same both ways).
pub fn mirror(outcome: u8, price: Price, side: Side) -> (Price, Side) {
    if outcome == 0 {
        (price, side)
    } else {
        (price.complement(), side.opposite())
    }
}

/// Best YES bid and ask.
pub type Best = (Option<Price>, Option<Price>);

/// Best bid and ask as one outcome token sees them (NO mirrors YES).
pub fn best_of(best: Best, outcome: u8) -> Best {
    if outcome == 0 {
        best
    } else {
        (best.1.map(Price::complement), best.0.map(Price::complement))
    }
}

/// A market's aggregated book as of its last applied delta.
#[derive(Debug, Default)]
struct Live {
    bids: BTreeMap<Price, Amount>,
    asks: BTreeMap<Price, Amount>,
    last_trade: LastTrade,
    timestamp_ms: u64,
    seq: u64,
    /// The snapshot of this state, once a reader asked for it.
    cached: Option<Arc<BookSnapshot>>,
}

impl Live {
    fn best(&self) -> Best {
        (self.bids.keys().next_back().copied(), self.asks.keys().next().copied())
    }
}

/// A market and its published book.
#[derive(Debug)]
pub struct MarketView {
    /// The market as created; its current tick is [`MarketView::tick`].
    pub market: Market,
    tick: AtomicU32,
    live: Mutex<Live>,
    /// What an order placed on each outcome holds as its token (shared, not built per order).
    order_tokens: [Arc<OrderToken>; 2],
    /// The fee description version 2 takers pay by, as of the last durable change.
    fees: Mutex<Option<crate::domain::FeeSchedule>>,
}

impl MarketView {
    /// `order_tokens` are the engine's for this market, so an order the API builds already
    /// holds the token the engine shares.
    pub fn new(market: Market, order_tokens: [Arc<OrderToken>; 2], book: BookSnapshot) -> MarketView {
        let live = Live {
            bids: book.bids.iter().copied().collect(),
            asks: book.asks.iter().copied().collect(),
            last_trade: book.last_trade,
            timestamp_ms: book.timestamp_ms,
            seq: book.seq,
            cached: Some(Arc::new(book)),
        };
        MarketView {
            tick: AtomicU32::new(market.tick.units()),
            market,
            live: Mutex::new(live),
            order_tokens,
            fees: Mutex::new(None),
        }
    }

    /// The fee description version 2 takers pay by (None: no fee).
    pub fn fees(&self) -> Option<crate::domain::FeeSchedule> {
        *self.fees.lock()
    }

    /// After the engine made a new fee description durable.
    pub fn set_fees(&self, fees: Option<crate::domain::FeeSchedule>) {
        *self.fees.lock() = fees;
    }

    /// Outcome `i`'s token, as an order on it holds it.
    pub fn order_token(&self, i: u8) -> Arc<OrderToken> {
        self.order_tokens[i as usize].clone()
    }

    /// The market's tick as of the last durable change (it only ever gets finer).
    pub fn tick(&self) -> Price {
        Price(self.tick.load(Ordering::Acquire))
    }

    /// The book as of the last durable change.
    pub fn snapshot(&self) -> Arc<BookSnapshot> {
        let mut l = self.live.lock();
        if let Some(s) = &l.cached {
            return s.clone();
        }
        let s = Arc::new(BookSnapshot {
            bids: l.bids.iter().rev().map(|(p, s)| (*p, *s)).collect(),
            asks: l.asks.iter().map(|(p, s)| (*p, *s)).collect(),
            last_trade: l.last_trade,
            timestamp_ms: l.timestamp_ms,
            seq: l.seq,
        });
        l.cached = Some(s.clone());
        s
    }

    /// Applies a durable delta (in sequence order); returns the best prices before and
    /// after it.
    pub fn apply(&self, d: &BookDelta) -> (Best, Best) {
        let mut guard = self.live.lock();
        let l = &mut *guard;
        debug_assert_eq!(d.seq, l.seq + 1, "deltas apply in sequence");
        let before = l.best();
        for (levels, changes) in [(&mut l.bids, &d.bids), (&mut l.asks, &d.asks)] {
            for &(p, size) in changes {
                if size.is_zero() {
                    levels.remove(&p);
                } else {
                    levels.insert(p, size);
                }
            }
        }
        if let Some((_, tick)) = d.tick {
            self.tick.store(tick.units(), Ordering::Release);
        }
        l.last_trade = d.last_trade;
        l.timestamp_ms = d.timestamp_ms;
        l.seq = d.seq;
        l.cached = None;
        (before, l.best())
    }
}

/// Lookup tables readers use; replaced wholesale when a market is added (rare).
#[derive(Debug, Default, Clone)]
pub struct Tables {
    pub by_token: HashMap<String, (Arc<MarketView>, u8)>,
    pub by_condition: HashMap<String, Arc<MarketView>>,
    /// In creation order.
    pub list: Vec<Arc<MarketView>>,
}

#[derive(Debug, Default)]
pub struct Registry {
    tables: ArcSwap<Tables>,
}

impl Registry {
    pub fn tables(&self) -> Arc<Tables> {
        self.tables.load_full()
    }

    pub fn token(&self, token_id: &str) -> Option<(Arc<MarketView>, u8)> {
        self.tables.load().by_token.get(token_id).cloned()
    }

    pub fn condition(&self, condition_id: &str) -> Option<Arc<MarketView>> {
        self.tables.load().by_condition.get(condition_id).cloned()
    }

    pub fn add(&self, view: Arc<MarketView>) {
        let mut t = Tables::clone(&self.tables.load());
        for (i, tok) in view.market.tokens.iter().enumerate() {
            t.by_token.insert(tok.token_id.clone(), (view.clone(), i as u8));
        }
        t.by_condition.insert(view.market.condition_id.clone(), view.clone());
        t.list.push(view);
        self.tables.store(Arc::new(t));
    }
}
