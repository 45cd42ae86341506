//! Chain mode's rules above the chain link (`crate::chain`): the ledger's settled balances
//! taken from the chain (docs/operating/settlement.md).
//!
//! In chain mode an account's settled balance is read from the chain: the collateral's
//! balance (a BUY is admitted only within the allowance its wallet gave the exchange of
//! the order's market, [`allows`]), a token's balance once the exchange that trades it is
//! approved. Open orders and unsettled trades are held against it in the ledger as in
//! ledger mode. An account is read from the chain the first time an order spends
//! from it, whenever its owner asks (`GET /balance-allowance/update`), and again whenever
//! the chain's logs show it changed (`follow`).

use std::collections::{HashMap, HashSet};

use alloy_primitives::{Address, U256};
use parking_lot::Mutex;

use super::AppState;
use crate::chain::{Chain, CollateralHeld};
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
    /// Version 1 makers seen at admission lately, with their exchange nonce as last read:
    /// the chain watch reads them again every pass, open orders or not.
    makers: Mutex<HashMap<String, MakerSeen>>,
    /// The relayer's transactions recorded and sent since the settlement worker's last
    /// pass, which follows them from then on.
    pub relayed: Mutex<Vec<crate::domain::chain::ChainTx>>,
    /// The collateral allowances of each wallet whose collateral was read, as last read.
    collateral: Mutex<HashMap<String, CollateralHeld>>,
}

impl OnChain {
    pub fn new(link: Chain) -> OnChain {
        OnChain {
            link,
            synced: Default::default(),
            paused: Default::default(),
            makers: Default::default(),
            relayed: Default::default(),
            collateral: Default::default(),
        }
    }

    /// The version 1 makers seen at admission in the last [`RECENT_MAKER_SECS`], with the
    /// nonce last read for each; the others are forgotten (the table stays bounded).
    pub fn recent_makers(&self, now: u64) -> Vec<(String, u64)> {
        let mut makers = self.makers.lock();
        makers.retain(|_, m| now.saturating_sub(m.seen_at) <= RECENT_MAKER_SECS);
        makers.iter().map(|(k, m)| (k.clone(), m.nonce)).collect()
    }

    /// `address`'s collateral and allowances as last read (none before its first read).
    pub fn collateral_of(&self, address: &str) -> Option<CollateralHeld> {
        self.collateral.lock().get(address).copied()
    }

    /// `maker`'s exchange nonce as just read from the chain, when it is one seen lately.
    pub fn maker_read(&self, maker: &str, nonce: u64, now: u64) {
        if let Some(m) = self.makers.lock().get_mut(maker) {
            m.nonce = nonce;
            m.read_at = now;
        }
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

/// Reads what `address` holds of `asset` (`USDC` or a token id) and makes it the
/// account's settled balance: the collateral's balance (its allowances kept beside it, for
/// admission and `/balance-allowance`), a token's balance once the exchange that trades it
/// is approved; returns the account after.
pub async fn refresh(s: &AppState, address: &str, asset: &str) -> Result<Account, OnchainError> {
    let on = on_chain(s)?;
    let chain = &on.link;
    let owner: Address = address.parse().map_err(|_| OnchainError::Invalid("invalid address".into()))?;
    let (units, held) = if asset == COLLATERAL {
        let held = chain.collateral_of(owner).await.map_err(chain_err)?;
        (held.balance, Some(held))
    } else {
        let neg_risk = s.registry.token(asset).is_some_and(|(m, _)| m.market.neg_risk);
        let token = U256::from_str_radix(asset, 10).map_err(|_| OnchainError::Invalid("Invalid token id".into()))?;
        (chain.token_spendable(owner, token, neg_risk).await.map_err(chain_err)?, None)
    };
    let amount = Amount(u64::try_from(units).unwrap_or(u64::MAX));
    let accounts = s
        .engine
        .transfer(address.to_string(), vec![(asset.to_string(), LedgerChange::Set(amount))], Default::default())
        .await?;
    if let Some(held) = held {
        on.collateral.lock().insert(address.to_string(), held);
    }
    on.synced.lock().insert((address.to_string(), asset.to_string()));
    Ok(accounts[0])
}

/// Whether `maker`'s allowance to the exchange of the order's market (negative-risk or
/// not) covers `spend` more collateral beside what its open orders hold (`reserved`, on
/// either exchange: the check errs on the side of refusing). Read after [`ensure`].
pub fn allows(s: &AppState, maker: &str, neg_risk: bool, reserved: Amount, spend: Amount) -> bool {
    let Some(held) = s.chain.as_ref().and_then(|on| on.collateral_of(maker)) else { return false };
    held.allowance_toward(neg_risk) >= U256::from(reserved.units()) + U256::from(spend.units())
}

/// [`refresh`], once per account and process: before an order first spends from it.
pub async fn ensure(s: &AppState, address: &str, asset: &str) -> Result<(), OnchainError> {
    if on_chain(s)?.synced.lock().contains(&(address.to_string(), asset.to_string())) {
        return Ok(());
    }
    refresh(s, address, asset).await.map(|_| ())
}

/// What the exchanges say of a maker, before its order is admitted. Version 1's nonce, so
/// an order with the nonce the exchanges hold is accepted and a stale one refused: read
/// when the maker was not read in the last [`MAKER_STALE_SECS`] (the chain watch reads the
/// makers seen lately every pass, so a maker that trades is read there, not here).
/// Version 2's pause: read once per maker and process, then followed by the chain watch.
/// Returns whether the maker has paused itself on the version 2 exchanges.
pub async fn ensure_maker(s: &AppState, maker: &str) -> Result<bool, OnchainError> {
    let on = on_chain(s)?;
    if on.link.settings.order_version == 1 {
        let now = crate::domain::now_secs();
        let (stale, known) = {
            let mut makers = on.makers.lock();
            // Allocated once per maker, not per order.
            if !makers.contains_key(maker) {
                makers.insert(maker.to_string(), MakerSeen::default());
            }
            let m = makers.get_mut(maker).expect("just inserted");
            m.seen_at = now;
            (m.read_at == 0 || now.saturating_sub(m.read_at) > MAKER_STALE_SECS, m.nonce)
        };
        if stale {
            super::chain_watch::raise_nonce(s, maker, known).await.map_err(chain_err)?;
        }
        return Ok(false);
    }
    let key = (maker.to_string(), MAKER_READ.to_string());
    if !on.synced.lock().contains(&key) {
        let address: Address = maker.parse().map_err(|_| OnchainError::Invalid("invalid address".into()))?;
        on.set_paused(maker, on.link.maker_paused(address).await.map_err(chain_err)?);
        on.synced.lock().insert(key);
    }
    Ok(on.paused.lock().contains(maker))
}

/// A version 1 maker seen at admission: its exchange nonce as last read, when it was read
/// and when the maker was last seen (UNIX seconds).
#[derive(Debug, Default)]
struct MakerSeen {
    nonce: u64,
    read_at: u64,
    seen_at: u64,
}

/// How long a maker's nonce read counts at admission.
const MAKER_STALE_SECS: u64 = 60;
/// How long after its last order the chain watch keeps reading a maker's nonce.
const RECENT_MAKER_SECS: u64 = 600;

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

/// Broadcasts a recorded transaction. The node's answer to one of the operator's keeps
/// [`gas_short`] current; returns the node's refusal, unless it was the operator's gas
/// (said once per episode there).
pub async fn broadcast(s: &AppState, tx: &crate::domain::chain::ChainTx) -> Option<alloy_transport::TransportError> {
    use alloy_provider::Provider;
    let chain = &on_chain(s).ok()?.link;
    let operators = tx.account.is_none();
    match chain.provider.send_raw_transaction(&tx.raw).await {
        Ok(_) if operators => gas_short(s, false),
        Ok(_) => {}
        Err(e) if operators && crate::chain::short_of_gas(&e) => gas_short(s, true),
        Err(e) => return Some(e),
    }
    None
}

/// Whether the operator can pay for gas, as the node's last answer says: logged once when
/// it cannot (settlement waits, nothing FAILED for it; orders are still taken and their
/// trades stay PENDING) and once when it can again; shown by `predex_chain_out_of_gas` and
/// the dashboard.
pub fn gas_short(state: &AppState, short: bool) {
    let gauge = &state.exported.chain_out_of_gas;
    let was = gauge.get() == 1;
    if short == was {
        return;
    }
    gauge.set(i64::from(short));
    let operator = state.chain.as_ref().map(|c| c.link.operator.address).unwrap_or_default();
    if short {
        tracing::error!(%operator, "settlement waits: the operator cannot pay for gas; fund it and settlement resumes");
    } else {
        tracing::info!(%operator, "settlement resumes: the operator pays for gas again");
    }
}
