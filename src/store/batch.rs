//! Batches: the writes of one logical change, typed as the engine and the handlers make
//! them, and a group's writes by family, in key order and coalesced, as the persister
//! encodes them.

use std::borrow::Cow;
use std::sync::Arc;

use rocksdb::WriteBatch;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{aggregator, cf, encode, index};
use crate::domain::{Amount, Market, NonceState, OrderRecord, OrderStatus, TradeRecord};

/// One write in a batch. Records travel typed and are encoded by the persister, so the
/// engine thread never pays for serialisation.
#[derive(Debug, Clone)]
pub enum Op {
    Put(&'static str, Vec<u8>, Vec<u8>),
    Delete(&'static str, Vec<u8>),
    /// A merge operand for a counter family.
    Merge(&'static str, Vec<u8>, Vec<u8>),
    /// An order and its open-order index entries.
    Order(Arc<OrderRecord>, Stored),
    /// A trade and its per-owner index entries; once settled (CONFIRMED or FAILED), also a
    /// notification for each API key that took part.
    Trade(Arc<TradeRecord>),
    /// A ledger balance: (address, asset, balance).
    Balance(Arc<str>, Arc<str>, Amount),
    /// An accepted order's signature, under its sequence in `order_signatures` (the key is
    /// built by the persister, so the matching thread allocates nothing for it).
    Signature(u64, crate::domain::packed::PackedStr),
    /// A market's last trade (YES price, the taker's side in YES terms) under
    /// [`meta::last_trade`](super::meta::last_trade); key and value are built by the persister, as for signatures.
    LastTrade(u32, crate::domain::LastTrade),
    /// A record holding credentials: put as is, or sealed when the store has a secrets key
    /// (see `sealed`).
    Secret(&'static str, Vec<u8>, Vec<u8>),
    /// A market's record (typed, so the event stream can tell its writes: `outbox`).
    Market(Box<Market>),
}

/// What the store held of an order before an [`Op::Order`] writes it. The record and the
/// in-memory open-order index entries (`open_index`: by id, by owner) are written
/// when the order opens and deleted when it closes; in between, a fill or a status change
/// writes only what changed (`open_state`). An order that closes on arrival (a filled
/// taker) writes its record only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// Nothing: the order is new.
    New,
    /// The order as open (LIVE or DEFERRED), with its index entries.
    Open,
}

/// The writes of one logical change, applied atomically.
#[derive(Debug, Default, Clone)]
pub struct Batch {
    pub ops: Vec<Op>,
}

impl Batch {
    /// A matching-thread command's batch, with room for the writes most commands make (a
    /// resting order writes two, a cancel one or two): allocated once at the right size,
    /// not grown on the first write.
    pub fn for_command() -> Batch {
        Batch { ops: Vec::with_capacity(4) }
    }

    /// A market's record, written when it is created and when its tick, or whether it
    /// trades, changes.
    pub fn put_market(&mut self, m: &Market) {
        self.ops.push(Op::Market(Box::new(m.clone())));
    }

    /// The whole salt of an order whose salt does not fit its record's 64 bits (written in
    /// the order's own batch, with its record).
    pub fn put_order_salt(&mut self, id: &Uuid, salt: [u8; 32]) {
        self.put(cf::ORDER_SALTS, id.as_bytes().to_vec(), salt.to_vec());
    }

    /// What a version 2 order signs beside its record's fields (in the order's own batch).
    pub fn put_order_v2(
        &mut self,
        id: &Uuid,
        timestamp: alloy_primitives::U256,
        metadata: alloy_primitives::B256,
        builder: alloy_primitives::B256,
    ) {
        let mut v = Vec::with_capacity(96);
        v.extend_from_slice(&timestamp.to_be_bytes::<32>());
        v.extend_from_slice(metadata.as_slice());
        v.extend_from_slice(builder.as_slice());
        self.put(cf::ORDER_V2, id.as_bytes().to_vec(), v);
    }

    /// A maker's exchange nonce, after `incrementNonce`.
    pub fn put_nonce(&mut self, maker: &str, state: &NonceState) {
        self.put(cf::NONCES, maker.as_bytes().to_vec(), encode(state));
    }

    /// A wallet's non-trade activity row (split, merge, redeem, conversion, reward), at
    /// `micros`; rows of one operation share its hash, the time keeps them apart.
    pub fn add_activity(&mut self, wallet: &str, micros: u64, row: &super::index::CtfActivity) {
        self.put(cf::ACTIVITY, super::index::activity(wallet, micros, &row.tx_hash), encode(row));
    }

    /// The position counters of a wallet's change in a market's token on a day.
    pub fn move_position(&mut self, market: u32, day: u32, wallet: &str, token: &str, p: &super::index::Position) {
        let mut ops = Vec::new();
        super::index::position_ops(market, day, wallet, token, p, &mut ops);
        for (c, k, v) in ops {
            self.merge(c, k, v);
        }
    }

    /// Room for `n` more writes. A batch nothing was written to yet is given a new list of
    /// that size rather than grown: growing copies the old list, here for nothing.
    pub fn reserve(&mut self, n: usize) {
        if self.ops.is_empty() && self.ops.capacity() < n {
            self.ops = Vec::with_capacity(n);
        } else {
            self.ops.reserve(n);
        }
    }

    pub fn put(&mut self, cf: &'static str, key: impl Into<Vec<u8>>, value: Vec<u8>) {
        self.ops.push(Op::Put(cf, key.into(), value));
    }
    /// A record holding credentials (sealed at write when the store has a secrets key).
    pub fn put_secret(&mut self, cf: &'static str, key: impl Into<Vec<u8>>, value: Vec<u8>) {
        self.ops.push(Op::Secret(cf, key.into(), value));
    }
    pub fn delete(&mut self, cf: &'static str, key: impl Into<Vec<u8>>) {
        self.ops.push(Op::Delete(cf, key.into()));
    }
    pub fn merge(&mut self, cf: &'static str, key: impl Into<Vec<u8>>, operand: Vec<u8>) {
        self.ops.push(Op::Merge(cf, key.into(), operand));
    }
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Writes an order; the open-order indexes follow its status and what the store held
    /// of it. The persister also advances the stored order sequence past it.
    pub fn put_order(&mut self, o: Arc<OrderRecord>, stored: Stored) {
        self.ops.push(Op::Order(o, stored));
    }

    /// Writes a trade, indexed under every API key that took part.
    pub fn put_trade(&mut self, t: Arc<TradeRecord>) {
        self.ops.push(Op::Trade(t));
    }

    /// Writes an accepted order's signature apart from its record (see
    /// [`cf::ORDER_SIGNATURES`]).
    pub fn put_signature(&mut self, seq: u64, signature: crate::domain::packed::PackedStr) {
        self.ops.push(Op::Signature(seq, signature));
    }

    pub fn put_balance(&mut self, address: Arc<str>, asset: Arc<str>, balance: Amount) {
        self.ops.push(Op::Balance(address, asset, balance));
    }

    /// Writes a market's last trade (see [`Op::LastTrade`]).
    pub fn put_last_trade(&mut self, market_idx: u32, last: crate::domain::LastTrade) {
        self.ops.push(Op::LastTrade(market_idx, last));
    }
}

/// What one write does to one key, before it goes into the WriteBatch.
#[derive(Clone, Copy)]
pub(super) enum WriteKind {
    Put,
    Delete,
    Merge,
}

pub(super) struct KeyWrite {
    pub(super) key: Vec<u8>,
    pub(super) kind: WriteKind,
    pub(super) value: Vec<u8>,
}

/// A family's writes in key order, with the writes to one key (adjacent, in the order they
/// were made) reduced to what the group's atomic batch leaves: a put or a delete makes every
/// earlier write to its key moot, and in a counter family a run of merges (and merges onto
/// a put) sum into one write. Nothing between them is ever visible, so the result reads the
/// same, and each write saved is a memtable insert saved — the persister's largest cost
/// once the bytes were cut. Keys written many times per group are the hot ones: a market
/// maker's balances, its position counters, a market's totals, a resting order's state.
pub(super) fn coalesce(cf: &'static str, family: Vec<KeyWrite>) -> Vec<KeyWrite> {
    let counters = cf::COUNTERS.contains(&cf);
    let mut out: Vec<KeyWrite> = Vec::with_capacity(family.len());
    for e in family {
        let same = |o: &Vec<KeyWrite>| o.last().is_some_and(|l| l.key == e.key);
        match e.kind {
            WriteKind::Put | WriteKind::Delete => {
                while same(&out) {
                    out.pop();
                }
            }
            WriteKind::Merge if counters && same(&out) => {
                let last = out.last_mut().expect("same key");
                if matches!(last.kind, WriteKind::Put | WriteKind::Merge) {
                    last.value = index::add_counters(&last.value, &e.value);
                    continue;
                }
            }
            WriteKind::Merge => {}
        }
        out.push(e);
    }
    out
}

/// A group's writes by column family, collected so each family's can be put in key order
/// before they reach the WriteBatch.
#[derive(Default)]
pub(super) struct Entries {
    pub(super) families: Vec<(&'static str, Vec<KeyWrite>)>,
    pub(super) last: usize,
    /// Orders that open (id, seq, owner) and that close, in the order written.
    pub(super) opened: Vec<(Uuid, u64, Uuid)>,
    pub(super) closed: Vec<(Uuid, u64, Uuid)>,
    /// Trades whose wallet analytics change, with the change's sign, in the order written.
    pub(super) analytics: Vec<(Arc<TradeRecord>, i64)>,
}

impl Entries {
    pub(super) fn family(&mut self, cf: &'static str) -> &mut Vec<KeyWrite> {
        // Consecutive writes mostly go to one family, and a group touches a dozen or two.
        if self.families.get(self.last).is_none_or(|(n, _)| *n != cf) {
            self.last = match self.families.iter().position(|(n, _)| *n == cf) {
                Some(i) => i,
                None => {
                    self.families.push((cf, Vec::new()));
                    self.families.len() - 1
                }
            };
        }
        &mut self.families[self.last].1
    }
    pub(super) fn put(&mut self, cf: &'static str, key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) {
        self.family(cf).push(KeyWrite { key: key.into(), kind: WriteKind::Put, value: value.into() });
    }
    pub(super) fn delete(&mut self, cf: &'static str, key: impl Into<Vec<u8>>) {
        self.family(cf).push(KeyWrite { key: key.into(), kind: WriteKind::Delete, value: Vec::new() });
    }
    pub(super) fn merge(&mut self, cf: &'static str, key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) {
        self.family(cf).push(KeyWrite { key: key.into(), kind: WriteKind::Merge, value: value.into() });
    }
}

/// The part of an open order that changes after it is written: `live_orders` holds the
/// record as it opened, `open_state` the latest of these, which reads lay over it.
#[derive(Serialize, Deserialize)]
pub(super) struct OpenState<'a> {
    pub(super) status: OrderStatus,
    pub(super) size_matched: Amount,
    pub(super) reserved: Amount,
    pub(super) associate_trades: Cow<'a, [Uuid]>,
}

impl<'a> OpenState<'a> {
    pub(super) fn of(o: &'a OrderRecord) -> Self {
        OpenState {
            status: o.status,
            size_matched: o.size_matched,
            reserved: o.reserved,
            associate_trades: Cow::Borrowed(&o.associate_trades),
        }
    }
    pub(super) fn lay_over(self, o: &mut OrderRecord) {
        o.status = self.status;
        o.size_matched = self.size_matched;
        o.reserved = self.reserved;
        o.associate_trades = self.associate_trades.into_owned().into();
    }
}

/// Batches encoded into one RocksDB WriteBatch, ready for [`Store::commit`], with the
/// orders they close (which leave the open-order index once written).
pub struct Prepared {
    pub(super) batch: WriteBatch,
    pub(super) closed: Vec<(Uuid, u64, Uuid)>,
    pub(super) analytics: Vec<aggregator::Event>,
    /// The last event sequence the batch writes to the outbox (0: none).
    pub(super) events_through: u64,
}

impl Prepared {
    /// The bytes the write appends to the WAL (RocksDB's batch representation).
    pub fn bytes(&self) -> usize {
        self.batch.size_in_bytes()
    }
}
