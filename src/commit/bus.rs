//! The event bus behind the WebSocket feeds.
//!
//! The persister's completion of each command (so: durable, and in engine order) hands the
//! changed markets' level changes ([`BookDelta`], the levels whose total changed), their
//! best prices before and after, and the command's trades to one publisher thread
//! ([`Published`]). The publisher renders each change once per outcome
//! token — a `price_change` with the levels that changed and a `last_trade_price` per
//! trade, as Polymarket's market channel sends them — and queues each frame for the
//! connections subscribed to that token ([`Topics`]). Every connection has its own bounded
//! queue: one whose queue is full is cut off, never slowing the engine, the persister or
//! anyone else. A token nobody subscribes to is not rendered; a connection wakes only for
//! the tokens (or, on the user channel, the API key) it subscribed to.
//!
//! Each market's deltas carry a sequence (`BookDelta::seq`, the `seq` of the snapshot they
//! lead to); a frame carries it, so a client that applied the `book` snapshot at sequence S
//! applies exactly the frames after S, and sees a gap if one is missing.

use std::hash::Hash;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crossbeam_channel::Sender;
use foldhash::{HashMap, HashMapExt};
use parking_lot::Mutex;
use prometheus_client::metrics::counter::Counter;
use serde_json::{json, Value};
use tokio::sync::{mpsc, Notify};

use crate::commit::views::{best_of, mirror, Best, BookDelta, MarketView};
use crate::domain::{Amount, OrderRecord, OrderStatus, Price, TradeRecord, TradeStatus};

/// What the engine's durable commands hand to the publisher.
pub enum Published {
    Book {
        view: Arc<MarketView>,
        delta: BookDelta,
        /// Best YES bid and ask before and after the change.
        best: (Best, Best),
        trades: Vec<Arc<TradeRecord>>,
        /// When the change became durable (µs since the epoch): frames carry it as
        /// `published_us`, so a client can measure commit → receipt.
        durable_us: u64,
    },
    /// Every order and trade record a command wrote; `taker` is the order it placed.
    User { taker: Option<uuid::Uuid>, orders: Vec<Arc<OrderRecord>>, trades: Vec<Arc<TradeRecord>> },
}

/// One user-channel frame, for one API key.
#[derive(Debug)]
pub struct UserFrame {
    pub owner: uuid::Uuid,
    /// Condition ID, for a connection's market filter.
    pub market: Arc<str>,
    pub text: Arc<str>,
}

/// The user channel's topics: an API key's frames go to that key's connections only.
pub type UserBus = Topics<uuid::Uuid, Arc<UserFrame>>;

/// One WebSocket text frame for the subscribers of one outcome token of one market.
#[derive(Debug)]
pub struct Frame {
    pub market: u32,
    pub outcome: u8,
    /// The book snapshot sequence this frame leads to.
    pub seq: u64,
    pub text: Arc<str>,
    /// The same messages plus a `best_bid_ask`, when the change moved the token's best bid
    /// or ask: what connections with `custom_feature_enabled` get instead of `text`.
    pub custom: Option<Arc<str>>,
}

/// The market channel's topics: one per (market, outcome token).
pub type Bus = Topics<(u32, u8), Arc<Frame>>;

/// One connection's bounded queue, as the publisher sees it.
pub struct Outbox<T> {
    tx: mpsc::Sender<T>,
    /// Set, and `cut` notified, when the queue was first found full (counted once, though
    /// the connection may be in several topics): the connection is to be closed.
    lagged: AtomicBool,
    pub cut: Notify,
}

/// Subscriptions by key (a market's token, an API key) to connections' queues.
pub struct Topics<K, T> {
    subs: Mutex<HashMap<K, Vec<Arc<Outbox<T>>>>>,
    window: usize,
    /// Connections cut off because their queue was full.
    cut: Counter,
}

impl<K: Hash + Eq + Clone, T: Clone> Topics<K, T> {
    pub fn new(window: usize, cut: Counter) -> Topics<K, T> {
        Topics { subs: Mutex::new(HashMap::new()), window: window.max(1), cut }
    }

    /// A new connection's queue of `window` items, and its receiving end.
    pub fn outbox(&self) -> (Arc<Outbox<T>>, mpsc::Receiver<T>) {
        let (tx, rx) = mpsc::channel(self.window);
        (Arc::new(Outbox { tx, lagged: AtomicBool::new(false), cut: Notify::new() }), rx)
    }

    /// From now on, items published under `key` are queued for `outbox` (once).
    pub fn add(&self, key: K, outbox: &Arc<Outbox<T>>) {
        let mut subs = self.subs.lock();
        let list = subs.entry(key).or_default();
        if !list.iter().any(|o| Arc::ptr_eq(o, outbox)) {
            list.push(outbox.clone());
        }
    }

    pub fn remove(&self, key: &K, outbox: &Arc<Outbox<T>>) {
        let mut subs = self.subs.lock();
        if let Some(list) = subs.get_mut(key) {
            list.retain(|o| !Arc::ptr_eq(o, outbox));
            if list.is_empty() {
                subs.remove(key);
            }
        }
    }

    pub fn has_subscribers(&self, key: &K) -> bool {
        self.subs.lock().contains_key(key)
    }

    pub fn is_empty(&self) -> bool {
        self.subs.lock().is_empty()
    }

    /// Queues the item for every subscriber of `key`. A subscriber whose queue is full is
    /// marked lagged, told through `cut`, and dropped from the topic; a closed one is dropped.
    pub fn publish(&self, key: &K, item: &T) {
        let mut subs = self.subs.lock();
        let Some(list) = subs.get_mut(key) else { return };
        list.retain(|o| match o.tx.try_send(item.clone()) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                if !o.lagged.swap(true, Ordering::AcqRel) {
                    self.cut.inc();
                }
                o.cut.notify_one();
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        });
        if list.is_empty() {
            subs.remove(key);
        }
    }
}

impl Bus {
    /// Whether each of market `m`'s two tokens has subscribers, under one lock.
    pub fn followed(&self, m: u32) -> [bool; 2] {
        let subs = self.subs.lock();
        [subs.contains_key(&(m, 0)), subs.contains_key(&(m, 1))]
    }
}

/// The publisher's inbox, with the topics it publishes to. A change no connection is
/// subscribed to is not handed over at all — the publisher would only drop it — so its
/// thread wakes (and the sender pays for waking it) only when someone listens: on a
/// venue where most books have no watcher, most commands skip a thread hand-off.
#[derive(Clone)]
pub struct Feeds {
    tx: Sender<Published>,
    bus: Arc<Bus>,
    user_bus: Arc<UserBus>,
}

impl Feeds {
    pub fn new(tx: Sender<Published>, bus: Arc<Bus>, user_bus: Arc<UserBus>) -> Feeds {
        Feeds { tx, bus, user_bus }
    }

    /// Whether a change of market `m` is wanted. Ask once the market's view has taken the
    /// change: a connection subscribes before it reads the view's snapshot, so one that
    /// subscribes after this answer finds the change in its snapshot.
    pub fn wants_book(&self, m: u32) -> bool {
        self.bus.followed(m).contains(&true)
    }

    /// Whether any connection follows the user channel.
    pub fn wants_user(&self) -> bool {
        !self.user_bus.is_empty()
    }

    /// Hands a change to the publisher (dropped once it has stopped).
    pub fn send(&self, p: Published) {
        let _ = self.tx.send(p);
    }
}

/// Starts the publisher; it exits when every [`Feeds`] is gone.
pub fn spawn(bus: Arc<Bus>, user_bus: Arc<UserBus>) -> (Feeds, std::thread::JoinHandle<()>) {
    let (tx, rx) = crossbeam_channel::unbounded::<Published>();
    let feeds = Feeds::new(tx, bus.clone(), user_bus.clone());
    let h = crate::essential::spawn("publisher", move || {
        for p in rx {
            match &p {
                Published::Book { view, .. } => {
                    let m = view.market.idx;
                    let wanted = bus.followed(m);
                    if wanted.contains(&true) {
                        for f in render(&p, wanted) {
                            bus.publish(&(f.market, f.outcome), &Arc::new(f));
                        }
                    }
                }
                Published::User { taker, orders, trades } if !user_bus.is_empty() => {
                    for f in render_user(*taker, orders, trades, |k| user_bus.has_subscribers(k)) {
                        let owner = f.owner;
                        user_bus.publish(&owner, &Arc::new(f));
                    }
                }
                _ => {}
            }
        }
    });
    (feeds, h)
}

/// User-channel frames: an `order` event per order written (PLACEMENT for the order the
/// command placed, CANCELLATION when cancelled, UPDATE otherwise) for its owner, and a
/// `trade` event per trade for every key that took part, as Polymarket's user channel.
/// Only keys that are `wanted` (subscribed) get frames rendered.
pub fn render_user(
    taker: Option<uuid::Uuid>,
    orders: &[Arc<OrderRecord>],
    trades: &[Arc<TradeRecord>],
    wanted: impl Fn(&uuid::Uuid) -> bool,
) -> Vec<UserFrame> {
    let ts = crate::domain::now_millis().to_string();
    let mut out = Vec::new();
    for o in orders.iter().filter(|o| wanted(&o.owner)) {
        let v = order_json(o, Some(o.id) == taker, &ts);
        out.push(UserFrame { owner: o.owner, market: o.token.condition_id.clone(), text: v.to_string().into() });
    }
    for t in trades {
        for owner in t.owners().into_iter().filter(|o| wanted(o)) {
            let v = trade_json(t, owner, &ts);
            out.push(UserFrame { owner, market: t.token.condition_id.clone(), text: v.to_string().into() });
        }
    }
    out
}

/// An order as the user channel's `order` event shows it: `type` PLACEMENT when the write
/// `placed` it, CANCELLATION when cancelled, UPDATE otherwise.
pub fn order_json(o: &OrderRecord, placed: bool, ts: &str) -> Value {
    let kind = if o.status == OrderStatus::Canceled {
        "CANCELLATION"
    } else if placed {
        "PLACEMENT"
    } else {
        "UPDATE"
    };
    json!({
        "event_type": "order", "type": kind, "id": o.id.to_string(), "owner": o.owner.to_string(),
        "market": o.token.condition_id, "asset_id": o.token.token_id, "side": o.side.as_str(), "price": o.price.short(),
        "original_size": o.original_size.fmt(), "size_matched": o.size_matched.fmt(),
        "outcome": o.token.outcome, "status": o.status.as_str(), "order_type": o.order_type.as_str(),
        "associate_trades": o.associate_trades.iter().map(|u| u.to_string()).collect::<Vec<_>>(),
        "timestamp": ts,
    })
}

/// A trade as the user channel's `trade` event shows it to `owner`, one of the API keys
/// that took part (PENDING reads MATCHED, and `type` is `TRADE`, as on Polymarket).
pub fn trade_json(t: &TradeRecord, owner: uuid::Uuid, ts: &str) -> Value {
    let status = match t.status {
        TradeStatus::Pending | TradeStatus::Matched => "MATCHED",
        other => other.as_str(),
    };
    json!({
        "event_type": "trade", "type": "TRADE", "id": t.id.to_string(), "taker_order_id": t.taker_order_id.to_string(),
        "market": t.token.condition_id, "asset_id": t.token.token_id, "side": t.side.as_str(),
        "size": t.size.fmt(), "price": t.price.short(), "status": status, "outcome": t.token.outcome,
        "owner": owner.to_string(), "trader_side": if owner == t.owner { "TAKER" } else { "MAKER" },
        "matchtime": t.match_time.to_string(), "last_update": t.last_update.to_string(),
        "transaction_hash": t.tx_hash(), "error_msg": t.error_msg, "timestamp": ts,
        "maker_orders": t.maker_orders.iter().map(|m| json!({
            "asset_id": m.token.token_id, "matched_amount": m.matched_amount.fmt(),
            "order_id": m.order_id.to_string(), "outcome": m.token.outcome, "owner": m.owner.to_string(),
            "price": m.price.short(), "side": m.side.as_str(),
        })).collect::<Vec<_>>(),
    })
}

/// A delta's level changes as one outcome token sees them: (price, size, side), by side
/// (BUY first) then ascending price. For NO, a YES ask at p is a NO bid at 1 − p.
fn token_changes(d: &BookDelta, outcome: u8) -> Vec<(Price, Amount, &'static str)> {
    let mut bids: Vec<(Price, Amount, &str)>;
    let mut asks: Vec<(Price, Amount, &str)>;
    if outcome == 0 {
        bids = d.bids.iter().map(|&(p, s)| (p, s, "BUY")).collect();
        asks = d.asks.iter().map(|&(p, s)| (p, s, "SELL")).collect();
    } else {
        bids = d.asks.iter().rev().map(|&(p, s)| (p.complement(), s, "BUY")).collect();
        asks = d.bids.iter().rev().map(|&(p, s)| (p.complement(), s, "SELL")).collect();
    }
    bids.append(&mut asks);
    bids
}

fn opt_price(p: Option<Price>) -> String {
    p.map(Price::short).unwrap_or_default()
}

/// The frames of one durable change: one per outcome token that is `wanted` and has
/// something to say.
pub fn render(p: &Published, wanted: [bool; 2]) -> Vec<Frame> {
    let Published::Book { view, delta: next, best: (before, after), trades, durable_us } = p else {
        return Vec::new();
    };
    let m = &view.market;
    let ts = next.timestamp_ms.to_string();
    let mut frames = Vec::new();
    for outcome in (0..2u8).filter(|o| wanted[*o as usize]) {
        let asset = &m.tokens[outcome as usize].token_id;
        let (best_bid, best_ask) = best_of(*after, outcome);
        let mut msgs: Vec<Value> = Vec::new();
        if let Some((old, new)) = next.tick {
            // First, so a client moves to the finer grid before it sees prices on it.
            msgs.push(json!({
                "event_type": "tick_size_change", "asset_id": asset, "market": m.condition_id,
                "old_tick_size": old.short(), "new_tick_size": new.short(), "timestamp": ts, "seq": next.seq,
            }));
        }
        let changes: Vec<Value> = token_changes(next, outcome)
            .into_iter()
            .map(|(price, size, side)| {
                json!({
                    "asset_id": asset, "price": price.short(), "size": size.fmt(), "side": side,
                    "hash": "", "best_bid": opt_price(best_bid), "best_ask": opt_price(best_ask),
                })
            })
            .collect();
        if !changes.is_empty() {
            msgs.push(json!({
                "event_type": "price_change", "market": m.condition_id, "timestamp": ts, "seq": next.seq,
                "published_us": durable_us, "price_changes": changes,
            }));
        }
        for t in trades {
            // The trade in YES terms, then as this token sees it.
            let taker_outcome = m.outcome_index(&t.token.token_id).unwrap_or(0);
            let (yes_price, yes_side) = mirror(taker_outcome, t.price, t.side);
            let (price, side) = mirror(outcome, yes_price, yes_side);
            msgs.push(json!({
                "event_type": "last_trade_price", "asset_id": asset, "market": m.condition_id,
                "price": price.fixed(), "size": t.size.fmt(), "fee_rate_bps": t.fee_rate_bps.to_string(),
                "side": side.as_str(), "timestamp": ts, "seq": next.seq, "published_us": durable_us,
            }));
        }
        if msgs.is_empty() {
            continue;
        }
        // One message as an object, several as an array (a slice serializes as one).
        let text = |msgs: &[Value]| -> Arc<str> {
            match msgs {
                [one] => one.to_string().into(),
                _ => serde_json::to_string(msgs).expect("JSON values serialize").into(),
            }
        };
        let custom = (before != after).then(|| {
            let spread = match (best_bid, best_ask) {
                (Some(b), Some(a)) => a.above(b).fixed(),
                _ => String::new(),
            };
            let mut all = msgs.clone();
            all.push(json!({
                "event_type": "best_bid_ask", "asset_id": asset, "market": m.condition_id,
                "best_bid": opt_price(best_bid), "best_ask": opt_price(best_ask), "spread": spread,
                "timestamp": ts, "seq": next.seq, "published_us": durable_us,
            }));
            text(&all)
        });
        frames.push(Frame { market: m.idx, outcome, seq: next.seq, text: text(&msgs), custom });
    }
    frames
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_no_token_sees_the_yes_changes_mirrored() {
        let d = BookDelta {
            bids: [(Price(4800), Amount(1)), (Price(5000), Amount::ZERO)].into(),
            asks: [(Price(5200), Amount(7))][..].into(),
            ..BookDelta::default()
        };
        assert_eq!(
            token_changes(&d, 0),
            vec![(Price(4800), Amount(1), "BUY"), (Price(5000), Amount(0), "BUY"), (Price(5200), Amount(7), "SELL")]
        );
        // A YES ask at 0.52 is a NO bid at 0.48; YES bids become NO asks, ascending.
        assert_eq!(
            token_changes(&d, 1),
            vec![(Price(4800), Amount(7), "BUY"), (Price(5000), Amount(0), "SELL"), (Price(5200), Amount(1), "SELL")]
        );
    }
}
