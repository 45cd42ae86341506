//! The bridge server ({bridge_url}, SPEC §2.18, §4.7): the supported assets and quotes,
//! from the asset table `bridge-assets.json` beside the demo catalogue (docs/bridge.md).
//!
//! A quote is computed in integers: the input's USD value (base units × the asset's USD
//! price), minus the app fee and fill cost (basis points of the input), the source chain's
//! gas, and the swap impact of a non-stable asset; what is left is converted into the
//! destination asset at its price.

use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{json as j, Value};
use warp::http::StatusCode;
use warp::{Filter, Reply};

use crate::api::{json, recover, req, respond, with_state, ApiError, ApiResult, Req, Routes};
use crate::app::AppState;
use crate::auth::normalize_address;
use crate::catalogue::routes::number;
use crate::domain::{fmt_amount, parse_decimal};

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

impl From<Refusal> for ApiError {
    fn from(r: Refusal) -> ApiError {
        ApiError::bad(r.to_string())
    }
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
}

pub fn routes(state: Arc<AppState>) -> Routes {
    let s = move || with_state(state.clone());
    let ok = warp::path!("ok").and(warp::get()).map(|| warp::reply::with_status("OK", StatusCode::OK).into_response());
    let assets =
        warp::path!("supported-assets").and(warp::get()).and(s()).map(|s: Arc<AppState>| respond(supported(&s)));
    let quote =
        warp::path!("quote").and(warp::post()).and(req()).and(s()).map(|r, s: Arc<AppState>| respond(quote(&s, r)));
    let deposit = warp::path!("deposit")
        .and(warp::post())
        .and(req())
        .and(s())
        .then(|r, s| async move { respond(transfers::deposit(s, r).await) });
    let withdraw = warp::path!("withdraw")
        .and(warp::post())
        .and(req())
        .and(s())
        .then(|r, s| async move { respond(transfers::withdraw(s, r).await) });
    let status = warp::path!("status" / String)
        .and(warp::get())
        .and(s())
        .map(|a: String, s: Arc<AppState>| respond(transfers::status(&s, &a)));
    ok.or(assets)
        .unify()
        .or(quote)
        .unify()
        .or(deposit)
        .unify()
        .or(withdraw)
        .unify()
        .or(status)
        .unify()
        .recover(recover)
        .unify()
        .boxed()
}

pub(crate) fn table(s: &AppState) -> Result<&AssetTable, ApiError> {
    s.bridge.as_ref().ok_or_else(|| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "bridge is not configured"))
}

fn usd(v: &str) -> u128 {
    parse_decimal(v, 6).unwrap_or(0) as u128
}

fn usd_number(micro: u128) -> Value {
    number(&fmt_amount(micro.min(u64::MAX as u128) as u64))
}

/// A decimal string without trailing fractional zeros ("2.6500" → "2.65", "0.00" → "0").
fn trimmed(s: String) -> String {
    if !s.contains('.') {
        return s;
    }
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Basis points as a percent number (10 bps → 0.1).
fn percent_of_bps(bps: u128) -> Value {
    number(&trimmed(format!("{}.{:02}", bps / 100, bps % 100)))
}

fn supported(s: &AppState) -> ApiResult {
    let t = table(s)?;
    let assets: Vec<Value> = t
        .assets
        .iter()
        .map(|a| {
            j!({
                "chainId": a.chain_id,
                "chainName": a.chain_name,
                "token": { "name": a.token.name, "symbol": a.token.symbol, "address": a.token.address, "decimals": a.token.decimals },
                "minCheckoutUsd": usd_number(usd(&a.min_checkout_usd)),
            })
        })
        .collect();
    json(&j!({ "supportedAssets": assets, "note": t.note }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct QuoteRequest {
    from_amount_base_unit: String,
    from_chain_id: String,
    from_token_address: String,
    recipient_address: String,
    to_chain_id: String,
    to_token_address: String,
}

/// `fromAmountBaseUnit`: a positive integer string.
pub(crate) fn base_units(v: &str) -> Result<u128, ApiError> {
    match v.trim() {
        a if !a.is_empty() && a.bytes().all(|b| b.is_ascii_digit()) => match a.parse::<u128>() {
            Ok(0) => Err(ApiError::bad("fromAmountBaseUnit must be a positive integer string")),
            Ok(n) => Ok(n),
            Err(_) => Err(ApiError::bad("fromAmountBaseUnit is too large")),
        },
        _ => Err(ApiError::bad("fromAmountBaseUnit must be a positive integer string")),
    }
}

fn quote(s: &AppState, r: Req) -> ApiResult {
    let t = table(s)?;
    let q: QuoteRequest = r.json()?;
    let amount = base_units(&q.from_amount_base_unit)?;
    normalize_address(&q.recipient_address).ok_or_else(|| ApiError::bad("recipientAddress must be a 0x address"))?;
    let from = t
        .find(&q.from_chain_id, &q.from_token_address)
        .ok_or_else(|| ApiError::bad("unsupported source chain and token (see /supported-assets)"))?;
    let to = t
        .find(&q.to_chain_id, &q.to_token_address)
        .ok_or_else(|| ApiError::bad("unsupported destination chain and token (see /supported-assets)"))?;
    let p = t.price(from, to, amount)?;
    let (input, total) = (p.input, p.total);
    // Percent of the input with 4 decimals, in integers.
    let total_pct = number(&trimmed(format!("{}.{:04}", total * 100 / input, (total * 1_000_000 / input) % 10_000)));
    json(&j!({
        "estCheckoutTimeMs": t.est_checkout_time_ms,
        "estFeeBreakdown": {
            "appFeeLabel": t.app_fee_label,
            "appFeePercent": percent_of_bps(t.app_fee_bps as u128),
            "appFeeUsd": usd_number(p.app_fee),
            "fillCostPercent": percent_of_bps(t.fill_cost_bps as u128),
            "fillCostUsd": usd_number(p.fill_cost),
            "gasUsd": usd_number(p.gas),
            "maxSlippage": percent_of_bps(t.max_slippage_bps as u128),
            "minReceived": usd_number(p.min_received),
            "swapImpact": percent_of_bps(p.swap_bps as u128),
            "swapImpactUsd": usd_number(p.swap),
            "totalImpact": total_pct,
            "totalImpactUsd": usd_number(total),
        },
        "estInputUsd": usd_number(input),
        "estOutputUsd": usd_number(p.output),
        "estToTokenBaseUnit": p.to_units.to_string(),
        "quoteId": uuid::Uuid::new_v4().to_string(),
    }))
}
