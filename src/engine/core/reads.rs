//! What the core answers without changing: reward scores, the dashboard's overview and the
//! invariant check.

use std::collections::HashMap as StdHashMap;

use super::*;

/// What the operator's dashboard shows of the matching state: resting orders per market
/// (by market index), and the settlement backlog with its oldest trade's match time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overview {
    pub resting: Vec<usize>,
    pub pending: usize,
    pub oldest_pending: Option<u64>,
}

impl Core {
    pub fn overview(&self) -> Overview {
        Overview {
            resting: self.markets.iter().map(|m| m.book.len()).collect(),
            pending: self.pending.len(),
            oldest_pending: self.oldest_pending(),
        }
    }

    /// Liquidity-reward scores of one market's resting orders (docs/reference/rewards.md): for each
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
        let mid2 = bid + ask;
        let mut by: StdHashMap<Arc<str>, [u128; 2]> = StdHashMap::new();
        for side in [BookSide::Bid, BookSide::Ask] {
            for (p, _) in ms.book.depth(side) {
                let p = p.units();
                // Levels come best first: the first out of reach ends the side.
                let Some(w) = crate::domain::rewards::reward_weight(p, mid2, max_spread) else {
                    break;
                };
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
        Some(RewardScores { midpoint2: mid2, spread2: 2 * max_spread, makers })
    }

    /// Structural check of every book plus the ledger reservations against open orders.
    pub fn check(&self) -> Result<(), String> {
        for ms in &self.markets {
            ms.book.check()?;
        }
        // (address, asset) → [reserved by open orders, held by pending trades].
        let mut want: StdHashMap<(String, String), [Amount; 2]> = StdHashMap::new();
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
                if n.id != o.id || n.remaining != o.remaining().units() {
                    return Err(format!("book node out of step with order {}", o.id));
                }
            }
        }
        let mut incoming: StdHashMap<(String, String), Amount> = StdHashMap::new();
        for t in &self.pending {
            let again = Pending::new(t.trade.clone(), t.flows.map(|f| f.accounts));
            if (again.seq, again.flows) != (t.seq, t.flows) {
                return Err(format!("pending trade {} out of step with its record", t.trade.id));
            }
            for l in t.trade.legs() {
                let (asset, amount) = l.pays();
                want.entry((l.address.to_string(), asset.to_string())).or_default()[1] += amount;
                let (asset, net, fee) = l.receives();
                *incoming.entry((l.address.to_string(), asset.to_string())).or_default() += net;
                *incoming.entry((self.fee_address.clone(), l.fee_asset().to_string())).or_default() += fee;
            }
        }
        for ((addr, asset), n) in incoming {
            let acc = self.ledger.account(&addr, &asset);
            if acc.incoming != n {
                return Err(format!("incoming {addr}/{asset}: ledger {} trades {}", acc.incoming.units(), n.units()));
            }
        }
        for ((addr, asset), [orders, held]) in want {
            let acc = self.ledger.account(&addr, &asset);
            if acc.reserved != orders + held {
                let (ledger, orders, held) = (acc.reserved.units(), orders.units(), held.units());
                return Err(format!("reserved {addr}/{asset}: ledger {ledger} orders {orders} trades {held}"));
            }
            // Holds of trades that will fail may exceed what is left after an earlier
            // failure; open orders never may (they are cancelled then).
            if !orders.is_zero() && acc.reserved > acc.balance + acc.incoming {
                return Err(format!("over-reserved {addr}/{asset}"));
            }
        }
        Ok(())
    }
}
