//! The bridge's rules (SPEC §2.18, §4.7): the supported assets and the pricing of a move,
//! from the asset table `bridge-assets.json` beside the demo catalogue (docs/reference/bridge.md);
//! deposits and withdrawals in [`transfers`]. The routes are `api::bridge`.
//!
//! A quote is computed in integers: the input's USD value (base units × the asset's USD
//! price), minus the app fee and fill cost (basis points of the input), the source chain's
//! gas, and the swap impact of a non-stable asset; what is left is converted into the
//! destination asset at its price.

use std::path::Path;

use anyhow::Context;
use serde::Deserialize;

use crate::app::AppState;
use crate::domain::{fmt_amount, parse_decimal};
use crate::engine::EngineError;
use crate::store::{Store, StoreError};

pub mod transfers;

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TokenInfo {
    pub name: String,
    pub symbol: String,
    pub address: String,
    pub decimals: u32,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Asset {
    pub chain_id: String,
    pub chain_name: String,
    pub token: TokenInfo,
    /// USD amounts as decimal strings (6 decimals at most).
    pub min_checkout_usd: String,
    pub price_usd: String,
    pub gas_usd: String,
    #[serde(default)]
    pub swap_impact_bps: u32,
    /// The chain's address family (default evm).
    #[serde(default)]
    pub address_type: Family,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AssetTable {
    pub note: String,
    pub app_fee_label: String,
    pub app_fee_bps: u32,
    pub fill_cost_bps: u32,
    pub max_slippage_bps: u32,
    pub est_checkout_time_ms: u64,
    /// The exchange's collateral among the assets: what deposits arrive as and
    /// withdrawals leave as (its base units are the ledger's micro-units).
    pub collateral: AssetRef,
    pub assets: Vec<Asset>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AssetRef {
    pub chain_id: String,
    pub address: String,
}

/// Why a move cannot be priced (each a 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("fromAmountBaseUnit is too large")]
    TooLarge,
    #[error("amount is below the minimum checkout of {min} USD for {symbol} on {chain}")]
    BelowMinimum { min: String, symbol: String, chain: String },
    #[error("amount does not cover the bridge's fees")]
    FeesTakeAll,
}

/// What a bridge service refuses (the routes give each its SPEC §7 reply).
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    #[error("bridge is not configured")]
    NotConfigured,
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error("fromAmountBaseUnit must be a positive integer string")]
    NotAnAmount,
    #[error("address must be a 0x address")]
    NotAWallet,
    #[error("address must be an EVM, Solana or Bitcoin address")]
    NotAnAddress,
    #[error("unsupported source chain and token (see /supported-assets)")]
    UnsupportedSource,
    #[error("unsupported destination chain and token (see /supported-assets)")]
    UnsupportedDestination,
    #[error("the withdrawal address has to be the owner of the API KEY")]
    NotOwner,
    #[error("recipientAddr must be an address on {0}")]
    BadRecipient(String),
    #[error("not enough balance / allowance")]
    NotEnoughBalance,
    #[error("unknown deposit address")]
    UnknownDepositAddress,
    #[error("txHash is required")]
    TxRequired,
    #[error("the deposit address is not an address on {0}")]
    WrongChain(String),
    #[error("transaction {tx} on chain {chain} is already recorded with other details")]
    TxConflict { tx: String, chain: String },
    #[error("withdrawal {0} not found")]
    WithdrawalNotFound(String),
    #[error("withdrawal {id} is already {status}")]
    AlreadySettled { id: String, status: &'static str },
    #[error("status must be COMPLETED or FAILED")]
    NotFinal,
    #[error("txHash is required to complete a withdrawal")]
    CompleteNeedsTx,
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// The address family a chain's addresses belong to (Polymarket's deposit address kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    #[default]
    Evm,
    Svm,
    Btc,
}

/// A move priced from the table, every figure in micro-USD except `to_units`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Priced {
    pub input: u128,
    pub app_fee: u128,
    pub fill_cost: u128,
    pub gas: u128,
    pub swap_bps: u32,
    pub swap: u128,
    pub total: u128,
    pub output: u128,
    /// The output in the destination token's base units.
    pub to_units: u128,
    pub min_received: u128,
}

impl AssetTable {
    /// Reads and checks the table (every amount parses, decimals ≤ 30, no duplicate pair).
    pub fn load(path: &Path) -> anyhow::Result<AssetTable> {
        let text = std::fs::read_to_string(path)?;
        let t: AssetTable = serde_json::from_str(&text)?;
        for (i, a) in t.assets.iter().enumerate() {
            for v in [&a.min_checkout_usd, &a.price_usd, &a.gas_usd] {
                parse_decimal(v, 6).map_err(|_| anyhow::anyhow!("asset {i}: bad USD amount {v}"))?;
            }
            anyhow::ensure!(a.token.decimals <= 30, "asset {i}: decimals above 30");
            anyhow::ensure!(parse_decimal(&a.price_usd, 6) != Ok(0), "asset {i}: price must be positive");
            anyhow::ensure!(
                t.assets[..i]
                    .iter()
                    .all(|b| !(b.chain_id == a.chain_id && b.token.address.eq_ignore_ascii_case(&a.token.address))),
                "asset {i}: listed twice"
            );
        }
        let c = t.find(&t.collateral.chain_id, &t.collateral.address);
        anyhow::ensure!(c.is_some(), "the collateral is not among the assets");
        anyhow::ensure!(c.is_some_and(|c| c.token.decimals == 6), "the collateral must have 6 decimals (ledger units)");
        Ok(t)
    }

    /// The collateral's entry (checked at load).
    pub fn collateral(&self) -> &Asset {
        self.find(&self.collateral.chain_id, &self.collateral.address).expect("checked at load")
    }

    /// Prices moving `amount` base units of `from` into `to`: the input's USD value, minus
    /// the app fee and fill cost (basis points of the input), the source chain's gas and
    /// the swap impact of the less stable side; the rest converted at `to`'s price.
    /// Refused below `from`'s minimum checkout or when the fees take it all.
    pub fn price(&self, from: &Asset, to: &Asset, amount: u128) -> Result<Priced, Refusal> {
        let scale = |d: u32| 10u128.pow(d);
        let input = amount
            .checked_mul(usd(&from.price_usd))
            .map(|v| v / scale(from.token.decimals))
            .ok_or(Refusal::TooLarge)?;
        let min = usd(&from.min_checkout_usd);
        if input < min {
            return Err(Refusal::BelowMinimum {
                min: fmt_amount(min as u64),
                symbol: from.token.symbol.clone(),
                chain: from.chain_name.clone(),
            });
        }
        let bps = |b: u32| input * b as u128 / 10_000;
        let (app_fee, fill_cost, gas) = (bps(self.app_fee_bps), bps(self.fill_cost_bps), usd(&from.gas_usd));
        let swap_bps = from.swap_impact_bps.max(to.swap_impact_bps);
        let swap = bps(swap_bps);
        let total = app_fee + fill_cost + gas + swap;
        if total >= input {
            return Err(Refusal::FeesTakeAll);
        }
        let output = input - total;
        Ok(Priced {
            input,
            app_fee,
            fill_cost,
            gas,
            swap_bps,
            swap,
            total,
            output,
            to_units: output * scale(to.token.decimals) / usd(&to.price_usd),
            min_received: output * (10_000 - self.max_slippage_bps.min(10_000) as u128) / 10_000,
        })
    }

    pub fn find(&self, chain: &str, token: &str) -> Option<&Asset> {
        self.assets.iter().find(|a| a.chain_id == chain && a.token.address.eq_ignore_ascii_case(token))
    }

    /// A supported asset to move from.
    pub fn source(&self, chain: &str, token: &str) -> Result<&Asset, BridgeError> {
        self.find(chain, token).ok_or(BridgeError::UnsupportedSource)
    }

    /// A supported asset to move into.
    pub fn destination(&self, chain: &str, token: &str) -> Result<&Asset, BridgeError> {
        self.find(chain, token).ok_or(BridgeError::UnsupportedDestination)
    }
}

/// The bridge's state: its asset table, and the lock that serialises transfer changes
/// and numbers them.
pub struct Bridge {
    /// None: no table found; the bridge answers 503.
    assets: Option<AssetTable>,
    pub(crate) next_transfer: tokio::sync::Mutex<u64>,
}

impl Bridge {
    /// The table at `assets` (a warning when there is none) and the next transfer's number.
    pub fn load(store: &Store, assets: &Path) -> anyhow::Result<Bridge> {
        let table = if assets.exists() {
            Some(AssetTable::load(assets).with_context(|| format!("bridge assets {}", assets.display()))?)
        } else {
            tracing::warn!(path = %assets.display(), "no bridge asset table: the bridge answers 503");
            None
        };
        Ok(Bridge { assets: table, next_transfer: tokio::sync::Mutex::new(store.last_transfer_id()? + 1) })
    }
}

/// The asset table, or NotConfigured when the venue has none.
pub fn table(s: &AppState) -> Result<&AssetTable, BridgeError> {
    s.bridge.assets.as_ref().ok_or(BridgeError::NotConfigured)
}

/// `fromAmountBaseUnit`: a positive integer string.
pub fn base_units(v: &str) -> Result<u128, BridgeError> {
    match v.trim() {
        a if !a.is_empty() && a.bytes().all(|b| b.is_ascii_digit()) => match a.parse::<u128>() {
            Ok(0) => Err(BridgeError::NotAnAmount),
            Ok(n) => Ok(n),
            Err(_) => Err(Refusal::TooLarge.into()),
        },
        _ => Err(BridgeError::NotAnAmount),
    }
}

/// A USD amount of the table in micro-USD (checked at load).
pub fn usd(v: &str) -> u128 {
    parse_decimal(v, 6).unwrap_or(0) as u128
}
