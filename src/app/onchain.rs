//! Chain mode's rules above the chain link (`crate::chain`): the ledger's settled balances
//! taken from the chain (docs/operating/settlement.md).
//!
//! In chain mode an account's settled balance is what the chain lets the exchange move:
//! collateral within the allowances given to the exchanges, tokens once the exchange is
//! approved for them. Open orders and unsettled trades are held against it in the ledger
//! as in ledger mode. An account is read from the chain the first time an order spends
//! from it and whenever its owner asks (`GET /balance-allowance/update`).

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
}

impl OnChain {
    pub fn new(link: Chain) -> OnChain {
        OnChain { link, synced: Default::default() }
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

/// The maker's nonce read from the exchanges, once per maker and process: before its first
/// order, so an order with the nonce the exchanges hold is accepted and a stale one refused.
pub async fn ensure_nonce(s: &AppState, maker: &str) -> Result<(), OnchainError> {
    let key = (maker.to_string(), NONCE_READ.to_string());
    let synced = &on_chain(s)?.synced;
    if synced.lock().contains(&key) {
        return Ok(());
    }
    super::chain_watch::raise_nonce(s, maker, 0).await.map_err(chain_err)?;
    synced.lock().insert(key);
    Ok(())
}

/// The `synced` entry that says a maker's nonce was read (beside its assets' entries).
const NONCE_READ: &str = "nonce";
