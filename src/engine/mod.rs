//! The matching engine: one OS thread owns every book and the ledger (see `core`), fed by
//! a crossbeam channel; HTTP handlers reach it only through [`EngineHandle`].
//!
//! One thread rather than one per market group: collateral is one balance shared by every
//! market, so reservation checks must be serialised across markets; a single writer does
//! that without locks, and a command costs it far less than the request's HTTP, HMAC and
//! signature recovery cost the tokio workers, which run in parallel.
//!
//! Each command's writes go to the persister as one batch; its reply and the book
//! snapshots it changed are released only after that batch is durable.

pub mod book;
mod claims;
mod commands;
pub mod core;
mod handle;
#[cfg(test)]
mod proptests;
mod recovery;
mod thread;
mod tick_rule;

pub use crate::domain::NonceState;
pub use commands::{Command, EngineError, LedgerChange};
pub use core::{BlockTrade, Canceled, Core, Overview, Placed, Reject, RewardScores, Settled, Verdict};
pub use handle::{Blocking, EngineHandle};
pub use recovery::recover;
pub use thread::spawn;
pub use tick_rule::finer_tick;
