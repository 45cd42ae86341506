//! Open orders: the map of them by id, and the ledger accounts each one moves.

use super::*;
use crate::incremental_map::IncrementalMap;

/// An open order: its record and, while it rests, its slot in its market's book (one map
/// entry per order, so placing, cancelling and filling hash its ID once).
#[derive(Debug, Clone)]
pub struct Open {
    pub rec: Arc<OrderRecord>,
    /// [`NIL`] while DEFERRED.
    pub(super) slot: u32,
    /// Its market (the record's `token.market_idx`), here so that a cancel finds the book
    /// node without waiting for the record's line: the two loads overlap.
    pub(super) market: u32,
    /// The ledger accounts it pays from and receives into, resolved once at placement: a
    /// fill moves balances by handle. Its fee account is its market's for what it
    /// receives ([`fee_account`]), so the entry stays 24 bytes.
    pub(super) pay: Acct,
    pub(super) recv: Acct,
}

// With its 8-byte key, a map entry of 32 bytes: what a cancel's probe reads.
const _: () = assert!(std::mem::size_of::<(u64, Open)>() == 32);

/// The open orders by id. The map's key is the id's two halves folded into one `u64`, and a
/// lookup compares the full id in the record a hit reads next anyway: an entry is 32 bytes,
/// within one cache line in a table that starts on a 32-byte boundary, where the 16-byte id
/// as the key made it 40 and six entries in ten straddled two lines.
/// Two ids that fold alike are two entries under one key, told apart by their records.
#[derive(Default)]
pub struct OpenOrders(IncrementalMap<u64, Open>);

/// The open-order map's key of an order id.
pub(super) fn fold(id: &Uuid) -> u64 {
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

    pub(super) fn reserve(&mut self, n: usize) {
        self.0.reserve(n)
    }

    pub fn get(&self, id: &Uuid) -> Option<&Open> {
        self.0.get_where(&fold(id), |o| o.rec.id == *id)
    }

    pub fn contains_key(&self, id: &Uuid) -> bool {
        self.get(id).is_some()
    }

    pub(super) fn find_entry(&mut self, id: &Uuid) -> Option<crate::incremental_map::Entry<'_, u64, Open>> {
        self.0.find_entry_where(&fold(id), |o| o.rec.id == *id)
    }

    /// Enters `open` under its record's id, in place of that id's entry if it has one.
    pub(super) fn insert(&mut self, open: Open) -> Option<Open> {
        let id = open.rec.id;
        self.0.insert_where(fold(&id), open, |o| o.rec.id == id)
    }

    /// Enters `open`, whose id has no entry (`Core::execute` refused it otherwise): without
    /// looking for one to replace.
    pub(super) fn insert_new(&mut self, open: Open) {
        debug_assert!(!self.contains_key(&open.rec.id), "an open order entered twice");
        self.0.insert_unique(fold(&open.rec.id), open)
    }

    pub(super) fn remove(&mut self, id: &Uuid) -> Option<Open> {
        self.0.remove_where(&fold(id), |o| o.rec.id == *id)
    }

    /// Every open order, in no order.
    pub fn values(&self) -> impl Iterator<Item = &Open> {
        self.0.values()
    }
}

impl Open {
    pub(super) fn new(rec: Arc<OrderRecord>, slot: u32, accounts: OrderAccounts) -> Open {
        Open { market: rec.token.market_idx, rec, slot, pay: accounts.pay, recv: accounts.recv }
    }

    /// Its accounts, the fee account found in `markets`.
    pub(super) fn accounts(&self, markets: &[MarketState]) -> OrderAccounts {
        self.accounts_in(&markets[self.rec.token.market_idx as usize].fee_accounts)
    }

    /// [`Open::accounts`] given its market's fee accounts.
    pub(super) fn accounts_in(&self, fee_accounts: &[Acct]) -> OrderAccounts {
        OrderAccounts { pay: self.pay, recv: self.recv, fee: fee_account(fee_accounts, &self.rec) }
    }
}

/// The fee account of what an order receives, among its market's `fee_accounts`: the one for
/// the collateral (a SELL) or for its outcome token (a BUY).
pub(super) fn fee_account(fee_accounts: &[Acct], o: &OrderRecord) -> Acct {
    if fee_in_collateral(o.side, o.version) {
        fee_accounts[0]
    } else {
        fee_accounts[1 + o.token.outcome_index as usize]
    }
}

/// The ledger accounts an order (or a trade's leg) touches: what it pays from, what it
/// receives into, and the fee account of what it receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct OrderAccounts {
    pub(super) pay: Acct,
    pub(super) recv: Acct,
    pub(super) fee: Acct,
}

impl std::ops::Deref for Open {
    type Target = OrderRecord;
    fn deref(&self) -> &OrderRecord {
        &self.rec
    }
}
