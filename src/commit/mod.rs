//! The commit pipeline: what becomes of a command's writes after the engine.
//!
//! The engine hands each command's batch to the persister ([`persister`]) with what must
//! follow its durable write ([`After`]). The persister group-commits the batches with a
//! synced write, then, for each job in the order the engine sent them, runs [`After::run`],
//! whose steps keep their order: the command's records go to the user feed, each changed
//! market's view takes its book changes ([`views`]: readers see them) and the market feed
//! gets them ([`bus`]), and last the caller gets its reply. So nothing is visible or
//! acknowledged before it is durable, and the feeds see commands in engine order.
//!
//! Nothing here decides anything: the engine decided, and the store encodes.

pub mod bus;
pub mod persister;
pub mod views;

use std::sync::Arc;

use uuid::Uuid;

use crate::domain::{OrderRecord, TradeRecord};
use bus::{Feeds, Published};
use views::{BookDelta, MarketView, Registry};

/// The reply to a write: run with `true` once it is durable, `false` if it failed.
pub type Reply = Box<dyn FnOnce(bool) + Send>;

/// What follows a job's write.
pub enum After {
    /// A write of a handler or a worker: its reply alone.
    Reply(Reply),
    /// An engine command: what it changed made visible, then its reply.
    Command(Visible, Reply),
    /// Runs once every job queued before it is durable and visible, and before any job
    /// queued after it is written: the persister ends its group with this job. What it
    /// sees of the store and the views is exactly the state at its place in the queue
    /// (an online backup's checkpoint). It holds every later write while it runs.
    Barrier(Reply),
}

impl After {
    pub fn reply(f: impl FnOnce(bool) + Send + 'static) -> After {
        After::Reply(Box::new(f))
    }

    /// Runs the steps that follow the write, in their order; `ok` says it is durable.
    pub fn run(self, ok: bool) {
        match self {
            After::Reply(reply) | After::Barrier(reply) => reply(ok),
            After::Command(visible, reply) => {
                if ok {
                    visible.show();
                }
                reply(ok);
            }
        }
    }
}

/// What one engine command changed that readers and the feeds see once it is durable.
pub struct Visible {
    /// Each market whose book or last trade changed, with the levels it takes.
    pub books: Vec<(Arc<MarketView>, BookDelta)>,
    /// The command's trades, for the market feed's `last_trade_price`.
    pub trades: Vec<Arc<TradeRecord>>,
    /// The order the command placed, if it placed one.
    pub taker: Option<Uuid>,
    /// Every order and trade record the command wrote, for the user feed.
    pub orders: Vec<Arc<OrderRecord>>,
    pub written: Vec<Arc<TradeRecord>>,
    /// A market the command created, listed for the readers.
    pub listed: Option<(Arc<Registry>, Arc<MarketView>)>,
    pub bus: Feeds,
}

impl Visible {
    fn show(self) {
        let Visible { books, trades, taker, orders, written, listed, bus } = self;
        if let Some((registry, view)) = listed {
            registry.add(view);
        }
        if (!orders.is_empty() || !written.is_empty()) && bus.wants_user() {
            bus.send(Published::User { taker, orders, trades: written });
        }
        let durable_us = crate::domain::now_micros();
        for (view, delta) in books {
            let best = view.apply(&delta);
            // After the view took the change (see `Feeds::wants_book`).
            if bus.wants_book(view.market.idx) {
                let trades = trades.iter().filter(|t| t.token.market_idx == view.market.idx).cloned().collect();
                bus.send(Published::Book { view, delta, best, trades, durable_us });
            }
        }
    }
}
