//! The embedded ledger: collateral and outcome-token balances per address, with the part
//! of each balance that open orders reserve.
//!
//! Owned by the engine thread (no locks): a reservation check and the fills that spend it
//! happen in one single-threaded step, so nothing is spent twice. `balance` is the settled
//! balance and is persisted; `reserved` (open orders, and what matched trades pay until
//! settlement) and `incoming` (what matched trades will deliver) are derived from the open
//! orders and the PENDING trades, and rebuilt at startup.
//!
//! A fill is usable the moment it is acknowledged: `available` counts incoming receipts,
//! so a maker can sell what it just bought before settlement moves it into `balance`.

use std::sync::Arc;

use hashbrown::HashMap;

use crate::domain::Amount;

/// One (address, asset) account.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Account {
    pub balance: Amount,
    /// Held by open orders; `balance - reserved` is what a new order may reserve.
    pub reserved: Amount,
    /// Receipts of matched trades not yet settled.
    pub incoming: Amount,
    /// Balance changed since the last `drain_dirty` (already queued in `dirty`).
    dirty: bool,
}

impl Account {
    pub fn available(&self) -> Amount {
        self.balance.saturating_add(self.incoming).saturating_sub(self.reserved)
    }
}

/// A handle on one (address, asset) account: resolved once (an order's at placement, a
/// trade's at its match), then every change to that account is an index, not two string
/// hashes. Handles stay valid for the ledger's life (accounts are never removed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Acct(u32);

/// An asset's number in this ledger. The collateral and each outcome token are numbered
/// once, so an address's accounts are found by integer: an order's two accounts cost one
/// address lookup, not also the hashing and comparing of two asset names (an outcome
/// token's id is 77 digits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AssetId(u32);

impl AssetId {
    /// Its number.
    pub fn number(self) -> u32 {
        self.0
    }
}

/// Address → asset number → account. Two levels so a lookup by address never allocates,
/// and an address's accounts are listed without a scan; an address key is allocated only
/// when its first account is created. Accounts themselves live in a vector that handles
/// index.
#[derive(Debug, Default)]
pub struct Ledger {
    index: HashMap<String, Wallet>,
    /// Asset name → number, and number → name.
    assets: HashMap<Arc<str>, u32>,
    names: Vec<Arc<str>>,
    accounts: Vec<Account>,
    /// Handle → (address, asset number), for persisting changed balances.
    keys: Vec<(Arc<str>, u32)>,
    /// Accounts whose balance changed since the last `drain_dirty`.
    dirty: Vec<u32>,
}

/// One address's accounts by asset number. The first-numbered asset's is held in the
/// entry itself: the engine numbers the collateral first, and every order pays or
/// receives collateral, so placing one probes the address's entry and one inner map,
/// not two.
#[derive(Debug, Default)]
struct Wallet {
    first: Option<u32>,
    others: HashMap<u32, u32>,
}

impl Wallet {
    fn get(&self, asset: u32) -> Option<u32> {
        if asset == 0 {
            self.first
        } else {
            self.others.get(&asset).copied()
        }
    }

    fn insert(&mut self, asset: u32, i: u32) {
        if asset == 0 {
            self.first = Some(i);
        } else {
            self.others.insert(asset, i);
        }
    }

    /// (asset number, account index) of every account.
    fn iter(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.first.map(|i| (0, i)).into_iter().chain(self.others.iter().map(|(&k, &i)| (k, i)))
    }
}

impl Ledger {
    /// The handle of (address, asset), creating the account empty if absent.
    pub fn acct(&mut self, address: &str, asset: &str) -> Acct {
        let [a] = self.accounts(address, [asset]);
        a
    }

    /// The number of an asset, numbering it if new.
    pub fn asset(&mut self, name: &str) -> AssetId {
        if let Some(&i) = self.assets.get(name) {
            return AssetId(i);
        }
        let (i, name): (u32, Arc<str>) = (self.names.len() as u32, name.into());
        self.assets.insert(name.clone(), i);
        self.names.push(name);
        AssetId(i)
    }

    /// The handles of several assets' accounts of one address (one address lookup).
    pub fn accounts<const N: usize>(&mut self, address: &str, assets: [&str; N]) -> [Acct; N] {
        let ids = assets.map(|a| self.asset(a));
        self.accounts_by(address, ids)
    }

    /// [`Ledger::accounts`] with the assets already numbered: what the matching thread uses.
    pub fn accounts_by<const N: usize>(&mut self, address: &str, assets: [AssetId; N]) -> [Acct; N] {
        let wallet = self.index.entry_ref(address).or_default();
        // A plain loop: `<[_; N]>::map` with this closure compiled to an iterator adapter
        // about twice the instructions of the lookups themselves.
        let mut out = [Acct(0); N];
        for (o, AssetId(asset)) in out.iter_mut().zip(assets) {
            *o = Acct(match wallet.get(asset) {
                Some(i) => i,
                None => {
                    let i = self.accounts.len() as u32;
                    wallet.insert(asset, i);
                    self.accounts.push(Account::default());
                    self.keys.push((address.into(), asset));
                    i
                }
            });
        }
        out
    }

    /// An account by handle.
    pub fn get(&self, a: Acct) -> Account {
        self.accounts[a.0 as usize]
    }

    pub fn account(&self, address: &str, asset: &str) -> Account {
        let Some(asset) = self.assets.get(asset) else { return Account::default() };
        self.index.get(address).and_then(|w| w.get(*asset)).map(|i| self.accounts[i as usize]).unwrap_or_default()
    }

    /// Applies `f` to a balance and queues the account for `drain_dirty`.
    fn change(&mut self, a: Acct, f: impl FnOnce(&mut Amount)) {
        let acc = &mut self.accounts[a.0 as usize];
        f(&mut acc.balance);
        if !acc.dirty {
            acc.dirty = true;
            self.dirty.push(a.0);
        }
    }

    /// Sets a balance at startup (not marked dirty).
    pub fn load(&mut self, address: &str, asset: &str, balance: Amount) {
        let a = self.acct(address, asset);
        self.accounts[a.0 as usize].balance = balance;
    }

    pub fn credit(&mut self, address: &str, asset: &str, amount: Amount) {
        if !amount.is_zero() {
            let a = self.acct(address, asset);
            self.credit_at(a, amount);
        }
    }

    pub fn credit_at(&mut self, a: Acct, amount: Amount) {
        if !amount.is_zero() {
            self.change(a, |b| *b = b.saturating_add(amount));
        }
    }

    /// Debits a balance; the caller has checked (by reservation) that it is there.
    pub fn debit_at(&mut self, a: Acct, amount: Amount) {
        if !amount.is_zero() {
            self.change(a, |b| {
                debug_assert!(*b >= amount, "debit below zero");
                *b = b.saturating_sub(amount);
            });
        }
    }

    /// Sets a settled balance to what an outside record holds (chain mode: the chain).
    pub fn set_at(&mut self, a: Acct, amount: Amount) {
        if self.accounts[a.0 as usize].balance != amount {
            self.change(a, |b| *b = amount);
        }
    }

    /// Reserves `amount` if available; false (and no change) otherwise.
    pub fn try_reserve_at(&mut self, a: Acct, amount: Amount) -> bool {
        let acc = &mut self.accounts[a.0 as usize];
        if acc.available() < amount {
            return false;
        }
        acc.reserved += amount;
        true
    }

    /// Reserves unconditionally: what accepted orders and trades hold at startup, or an
    /// amount the caller has checked is available.
    pub fn reserve_at(&mut self, a: Acct, amount: Amount) {
        self.accounts[a.0 as usize].reserved += amount;
    }

    pub fn release_at(&mut self, a: Acct, amount: Amount) {
        let acc = &mut self.accounts[a.0 as usize];
        acc.reserved = acc.reserved.saturating_sub(amount);
    }

    /// Records a receipt of a matched trade (usable at once, settled later).
    pub fn expect_at(&mut self, a: Acct, amount: Amount) {
        self.accounts[a.0 as usize].incoming += amount;
    }

    /// Removes an expected receipt: settled (then credited) or void (its trade failed).
    pub fn unexpect_at(&mut self, a: Acct, amount: Amount) {
        let acc = &mut self.accounts[a.0 as usize];
        acc.incoming = acc.incoming.saturating_sub(amount);
    }

    /// Hands each balance changed since the last call to `f` (address, asset, balance), for
    /// persisting. The list keeps its room for the next command: the matching thread calls
    /// this after every command, and a fresh list per call was two allocations each time.
    pub fn drain_dirty(&mut self, mut f: impl FnMut(Arc<str>, Arc<str>, Amount)) {
        for i in self.dirty.drain(..) {
            let acc = &mut self.accounts[i as usize];
            acc.dirty = false;
            let (addr, asset) = &self.keys[i as usize];
            f(addr.clone(), self.names[*asset as usize].clone(), acc.balance);
        }
    }

    /// All accounts of one address, by asset.
    pub fn accounts_of(&self, address: &str) -> Vec<(String, Account)> {
        let mut v: Vec<_> = self
            .index
            .get(address)
            .map(|w| w.iter().map(|(k, i)| (self.names[k as usize].to_string(), self.accounts[i as usize])).collect())
            .unwrap_or_default();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// Sum of balances of one asset over all addresses (for conservation checks).
    pub fn total(&self, asset: &str) -> u128 {
        let Some(asset) = self.assets.get(asset) else { return 0 };
        self.index
            .values()
            .filter_map(|w| w.get(*asset))
            .map(|i| self.accounts[i as usize].balance.units() as u128)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_and_release() {
        let mut l = Ledger::default();
        l.credit("a", "USDC", Amount(100));
        let a = l.acct("a", "USDC");
        assert_eq!(l.acct("a", "USDC"), a, "one handle per account");
        assert!(l.try_reserve_at(a, Amount(60)));
        assert!(!l.try_reserve_at(a, Amount(41)));
        assert_eq!(l.account("a", "USDC").available(), Amount(40));
        l.release_at(a, Amount(60));
        assert_eq!(l.get(a).available(), Amount(100));
        let dirty = |l: &mut Ledger| {
            let mut v: Vec<(Arc<str>, Arc<str>, Amount)> = Vec::new();
            l.drain_dirty(|a, b, c| v.push((a, b, c)));
            v
        };
        assert_eq!(dirty(&mut l), vec![("a".into(), "USDC".into(), Amount(100))]);
        assert!(dirty(&mut l).is_empty());
    }

    /// An asset is numbered once; its accounts are the same whether found by name or by
    /// number, and reading an unknown asset numbers nothing.
    #[test]
    fn accounts_by_asset_number_are_the_accounts_by_name() {
        let mut l = Ledger::default();
        let usdc = l.asset("USDC");
        let token = l.asset("7123");
        assert_eq!(l.asset("USDC"), usdc);
        let [pay, recv] = l.accounts_by("a", [usdc, token]);
        assert_eq!(l.accounts("a", ["USDC", "7123"]), [pay, recv]);
        assert_ne!(pay, recv);
        l.credit_at(recv, Amount(5));
        assert_eq!(l.account("a", "7123").balance, Amount(5));
        assert_eq!(l.account("a", "8000"), Account::default());
        assert_eq!(l.total("8000"), 0);
        assert_eq!(l.asset("8000"), AssetId(2), "a read did not number it");
        let listed: Vec<String> = l.accounts_of("a").into_iter().map(|(name, _)| name).collect();
        assert_eq!(listed, ["7123", "USDC"]);
        assert_eq!(l.total("7123"), 5);
        // The first-numbered asset's account (held in the address's entry) alike.
        l.credit_at(pay, Amount(7));
        assert_eq!(l.account("a", "USDC").balance, Amount(7));
        let [b_token] = l.accounts_by("b", [token]);
        l.credit_at(b_token, Amount(2));
        assert_eq!(l.account("b", "USDC"), Account::default());
        assert_eq!(l.accounts_of("b"), [("7123".to_string(), l.get(b_token))]);
        assert_eq!((l.total("USDC"), l.total("7123")), (7, 7));
    }
}
