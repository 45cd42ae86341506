//! What the engine publishes for readers: per-market book snapshots behind `ArcSwap`, so
//! `/book`, `/price` and friends never take a lock the engine holds. Snapshots are swapped
//! in by the persister after the command that produced them is durable.

use std::collections::HashMap;
use std::sync::Arc;

use arc_swap::ArcSwap;

use crate::domain::{Market, Side, PRICE_ONE};

/// Aggregated levels: (price, size), best first.
pub type Levels = Vec<(u32, u64)>;

/// One market's book, aggregated, in YES-price space.
#[derive(Debug, Clone, Default)]
pub struct BookSnapshot {
    /// (YES price, size), best first.
    pub bids: Vec<(u32, u64)>,
    pub asks: Vec<(u32, u64)>,
    /// Last trade: YES price and the taker's side in YES terms.
    pub last_trade: Option<(u32, Side)>,
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
            let flip = |v: &Vec<(u32, u64)>| v.iter().map(|&(p, s)| (PRICE_ONE - p, s)).collect();
            (flip(&self.asks), flip(&self.bids))
        }
    }

    /// Best bid and ask of a token.
    pub fn best(&self, outcome: u8) -> (Option<u32>, Option<u32>) {
        let (b, a) = (self.bids.first().map(|x| x.0), self.asks.first().map(|x| x.0));
        if outcome == 0 {
            (b, a)
        } else {
            (a.map(|p| PRICE_ONE - p), b.map(|p| PRICE_ONE - p))
        }
    }

    pub fn last_trade(&self, outcome: u8) -> Option<(u32, Side)> {
        self.last_trade.map(|(p, s)| {
            if outcome == 0 {
                (p, s)
            } else {
                let flip = match s {
                    Side::Buy => Side::Sell,
                    Side::Sell => Side::Buy,
                };
                (PRICE_ONE - p, flip)
            }
        })
    }
}

/// A market and its latest published book.
#[derive(Debug)]
pub struct MarketView {
    pub market: Market,
    pub book: ArcSwap<BookSnapshot>,
}

impl MarketView {
    pub fn new(market: Market, book: BookSnapshot) -> MarketView {
        MarketView { market, book: ArcSwap::from_pointee(book) }
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
