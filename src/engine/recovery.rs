//! The engine's state rebuilt from the store at start.

use super::core::{Core, RestoreMemo};
use crate::store::{Store, StoreError};

/// Rebuilds the core from the store: markets, balances, nonces, and every open order in
/// its original priority. Signatures are not re-verified: the recovered signer is stored.
pub fn recover(store: &Store, fee_address: String) -> Result<Core, StoreError> {
    let mut core = Core::new(fee_address);
    let mut markets = store.markets()?;
    markets.sort_by_key(|m| m.idx);
    for m in markets {
        let idx = m.idx;
        core.add_market(m);
        core.markets[idx as usize].last_trade = store.last_trade(idx)?;
    }
    for (condition_id, fees) in store.market_fees()? {
        if let Some(idx) = core.market_idx(&condition_id) {
            core.markets[idx as usize].fees = Some(fees);
        }
    }
    for (addr, asset, bal) in store.balances()? {
        core.ledger.load(&addr, &asset, bal);
    }
    for (maker, n) in store.nonces()? {
        core.restore_nonce(maker, n);
    }
    core.reserve(store.estimate_open_orders());
    let mut memo = RestoreMemo::default();
    store.for_each_open_order(|o| core.restore(o, &mut memo))?;
    for t in store.pending_trades()? {
        core.restore_pending(t);
    }
    (core.next_order_seq, core.next_trade_seq) = store.next_sequences()?;
    Ok(core)
}
