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

use hashbrown::HashMap;

/// One (address, asset) account.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Account {
    pub balance: u64,
    /// Held by open orders; `balance - reserved` is what a new order may reserve.
    pub reserved: u64,
    /// Receipts of matched trades not yet settled.
    pub incoming: u64,
    /// Balance changed since the last `take_dirty` (already queued in `dirty`).
    dirty: bool,
}

impl Account {
    pub fn available(&self) -> u64 {
        self.balance.saturating_add(self.incoming).saturating_sub(self.reserved)
    }
}

/// Address → asset → account. Two levels so lookups by `&str` never allocate; a key is
/// allocated only when an account is first created.
#[derive(Debug, Default)]
pub struct Ledger {
    accounts: HashMap<String, HashMap<String, Account>>,
    /// Accounts whose balance changed since the last `take_dirty`.
    dirty: Vec<(String, String)>,
}

impl Ledger {
    pub fn account(&self, address: &str, asset: &str) -> Account {
        self.accounts.get(address).and_then(|m| m.get(asset)).copied().unwrap_or_default()
    }

    fn entry(&mut self, address: &str, asset: &str) -> &mut Account {
        entry(&mut self.accounts, address, asset)
    }

    /// Applies `f` to a balance and queues the account for `take_dirty`: one lookup.
    fn change(&mut self, address: &str, asset: &str, f: impl FnOnce(&mut u64)) {
        let a = entry(&mut self.accounts, address, asset);
        f(&mut a.balance);
        if !a.dirty {
            a.dirty = true;
            self.dirty.push((address.to_string(), asset.to_string()));
        }
    }

    /// Sets a balance at startup (not marked dirty).
    pub fn load(&mut self, address: &str, asset: &str, balance: u64) {
        self.entry(address, asset).balance = balance;
    }

    pub fn credit(&mut self, address: &str, asset: &str, amount: u64) {
        if amount == 0 {
            return;
        }
        self.change(address, asset, |b| *b = b.saturating_add(amount));
    }

    /// Debits a balance; the caller has checked (by reservation) that it is there.
    pub fn debit(&mut self, address: &str, asset: &str, amount: u64) {
        if amount == 0 {
            return;
        }
        self.change(address, asset, |b| {
            debug_assert!(*b >= amount, "debit below zero");
            *b = b.saturating_sub(amount);
        });
    }

    /// Reserves `amount` if available; false (and no change) otherwise.
    pub fn try_reserve(&mut self, address: &str, asset: &str, amount: u64) -> bool {
        let a = self.entry(address, asset);
        if a.available() < amount {
            return false;
        }
        a.reserved += amount;
        true
    }

    /// Reserves unconditionally (startup reload of already-accepted orders).
    pub fn reserve(&mut self, address: &str, asset: &str, amount: u64) {
        self.entry(address, asset).reserved += amount;
    }

    pub fn release(&mut self, address: &str, asset: &str, amount: u64) {
        if let Some(a) = self.accounts.get_mut(address).and_then(|m| m.get_mut(asset)) {
            a.reserved = a.reserved.saturating_sub(amount);
        }
    }

    /// Records a receipt of a matched trade (usable at once, settled later).
    pub fn expect(&mut self, address: &str, asset: &str, amount: u64) {
        if amount > 0 {
            self.entry(address, asset).incoming += amount;
        }
    }

    /// Removes an expected receipt: settled (then credited) or void (its trade failed).
    pub fn unexpect(&mut self, address: &str, asset: &str, amount: u64) {
        if let Some(a) = self.accounts.get_mut(address).and_then(|m| m.get_mut(asset)) {
            a.incoming = a.incoming.saturating_sub(amount);
        }
    }

    /// The changed balances since the last call, for persisting.
    pub fn take_dirty(&mut self) -> Vec<(String, String, u64)> {
        let dirty = std::mem::take(&mut self.dirty);
        dirty
            .into_iter()
            .map(|(addr, asset)| {
                let a = self.entry(&addr, &asset);
                a.dirty = false;
                let b = a.balance;
                (addr, asset, b)
            })
            .collect()
    }

    /// All accounts of one address, by asset.
    pub fn accounts_of(&self, address: &str) -> Vec<(String, Account)> {
        let mut v: Vec<_> =
            self.accounts.get(address).map(|m| m.iter().map(|(k, a)| (k.clone(), *a)).collect()).unwrap_or_default();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// Sum of balances of one asset over all addresses (for conservation checks).
    pub fn total(&self, asset: &str) -> u128 {
        self.accounts.values().filter_map(|m| m.get(asset)).map(|a| a.balance as u128).sum()
    }
}

/// The account of (address, asset), created empty if absent; keys are allocated only then.
fn entry<'a>(
    accounts: &'a mut HashMap<String, HashMap<String, Account>>,
    address: &str,
    asset: &str,
) -> &'a mut Account {
    accounts.entry_ref(address).or_default().entry_ref(asset).or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_and_release() {
        let mut l = Ledger::default();
        l.credit("a", "USDC", 100);
        assert!(l.try_reserve("a", "USDC", 60));
        assert!(!l.try_reserve("a", "USDC", 41));
        assert_eq!(l.account("a", "USDC").available(), 40);
        l.release("a", "USDC", 60);
        assert_eq!(l.account("a", "USDC").available(), 100);
        assert_eq!(l.take_dirty(), vec![("a".into(), "USDC".into(), 100)]);
        assert!(l.take_dirty().is_empty());
    }
}
