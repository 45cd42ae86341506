//! Chain mode's rules above the chain link (`crate::chain`): the ledger's settled balances
//! taken from the chain (docs/operating/settlement.md).
//!
//! In chain mode an account's settled balance is what the chain lets the exchange move:
//! collateral within the allowances given to the exchanges, tokens once the exchange is
//! approved for them. Open orders and unsettled trades are held against it in the ledger
//! as in ledger mode. An account is read from the chain the first time an order spends
//! from it, whenever its owner asks (`GET /balance-allowance/update`), and again whenever
//! the chain's logs show it changed (`follow`).

use std::collections::HashSet;

use alloy_primitives::{Address, U256};
use parking_lot::Mutex;

use super::AppState;
use crate::chain::Chain;
use crate::domain::{Amount, COLLATERAL};
use crate::engine::{EngineError, LedgerChange};
use crate::ledger::Account;

#[derive(Debug, thiserror::Error)]
pub enum OnchainError {
    /// The body is not one chain mode can make a market of.
    #[error("{0}")]
    Invalid(String),
    /// The node failed or refused.
    #[error("chain: {0}")]
    Chain(String),
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// Chain mode's state: the link to the chain and the (address, asset) accounts read from
/// the chain since start.
pub struct OnChain {
    pub link: Chain,
    synced: Mutex<HashSet<(String, String)>>,
    /// Makers paused on the version 2 exchanges, as read or watched since start.
    paused: Mutex<HashSet<String>>,
    /// The relayer's transactions recorded and sent since the settlement worker's last
    /// pass, which follows them from then on.
    pub relayed: Mutex<Vec<crate::domain::chain::ChainTx>>,
}

impl OnChain {
    pub fn new(link: Chain) -> OnChain {
        OnChain { link, synced: Default::default(), paused: Default::default(), relayed: Default::default() }
    }

    /// The assets of `address` read from the chain since start.
    pub fn synced_assets(&self, address: &str) -> Vec<String> {
        self.synced
            .lock()
            .iter()
            .filter(|(a, asset)| a == address && asset != MAKER_READ)
            .map(|(_, x)| x.clone())
            .collect()
    }

    /// Whether `maker` is paused on the version 2 exchanges, as the chain watch saw it.
    pub fn set_paused(&self, maker: &str, paused: bool) {
        if paused {
            self.paused.lock().insert(maker.to_string());
        } else {
            self.paused.lock().remove(maker);
        }
    }
}

pub(crate) fn on_chain(s: &AppState) -> Result<&OnChain, OnchainError> {
    s.chain.as_ref().ok_or_else(|| OnchainError::Invalid("not in chain mode".into()))
}

pub(crate) fn chain_err(e: anyhow::Error) -> OnchainError {
    OnchainError::Chain(format!("{e:#}"))
}

/// Reads what the chain lets `address` spend of `asset` (`USDC` or a token id) and makes
/// it the account's settled balance; returns the account after.
pub async fn refresh(s: &AppState, address: &str, asset: &str) -> Result<Account, OnchainError> {
    let on = on_chain(s)?;
    let chain = &on.link;
    let owner: Address = address.parse().map_err(|_| OnchainError::Invalid("invalid address".into()))?;
    let units = if asset == COLLATERAL {
        chain.collateral_spendable(owner).await
    } else {
        let neg_risk = s.registry.token(asset).is_some_and(|(m, _)| m.market.neg_risk);
        let token = U256::from_str_radix(asset, 10).map_err(|_| OnchainError::Invalid("Invalid token id".into()))?;
        chain.token_spendable(owner, token, neg_risk).await
    }
    .map_err(chain_err)?;
    let amount = Amount(u64::try_from(units).unwrap_or(u64::MAX));
    let accounts = s
        .engine
        .transfer(address.to_string(), vec![(asset.to_string(), LedgerChange::Set(amount))], Default::default())
        .await?;
    on.synced.lock().insert((address.to_string(), asset.to_string()));
    Ok(accounts[0])
}

/// [`refresh`], once per account and process: before an order first spends from it.
pub async fn ensure(s: &AppState, address: &str, asset: &str) -> Result<(), OnchainError> {
    if on_chain(s)?.synced.lock().contains(&(address.to_string(), asset.to_string())) {
        return Ok(());
    }
    refresh(s, address, asset).await.map(|_| ())
}

/// What the exchanges say of a maker, read once per maker and process before its first
/// order: version 1's nonce, so an order with the nonce the exchanges hold is accepted and
/// a stale one refused; version 2's pause, kept (and then followed by the chain watch).
/// Returns whether the maker has paused itself on the version 2 exchanges.
pub async fn ensure_maker(s: &AppState, maker: &str) -> Result<bool, OnchainError> {
    let key = (maker.to_string(), MAKER_READ.to_string());
    let on = on_chain(s)?;
    if !on.synced.lock().contains(&key) {
        if on.link.settings.order_version == 2 {
            let address: Address = maker.parse().map_err(|_| OnchainError::Invalid("invalid address".into()))?;
            on.set_paused(maker, on.link.maker_paused(address).await.map_err(chain_err)?);
        } else {
            super::chain_watch::raise_nonce(s, maker, 0).await.map_err(chain_err)?;
        }
        on.synced.lock().insert(key);
    }
    Ok(on.paused.lock().contains(maker))
}

/// The `synced` entry that says a maker was read (beside its assets' entries).
const MAKER_READ: &str = "maker";

/// Reads again from the chain every account predex follows (has read since start) that
/// `changes` touched.
pub async fn follow(s: &AppState, changes: Vec<crate::chain::WalletChange>) {
    use crate::chain::WalletChange;
    let Some(on) = s.chain.as_ref() else { return };
    let mut accounts = std::collections::BTreeSet::new();
    for change in changes {
        let address = format!("{:#x}", change.address());
        let followed = on.synced_assets(&address);
        let assets = match change {
            WalletChange::Collateral(_) => vec![COLLATERAL.to_string()],
            WalletChange::Token(_, id) => vec![id.to_string()],
            WalletChange::Tokens(_) => followed.iter().filter(|a| *a != COLLATERAL).cloned().collect(),
        };
        accounts.extend(assets.into_iter().filter(|a| followed.contains(a)).map(|a| (address.clone(), a)));
    }
    for (address, asset) in accounts {
        if let Err(e) = refresh(s, &address, &asset).await {
            tracing::warn!(%address, %asset, error = %e, "balance not read from the chain");
        }
    }
}
