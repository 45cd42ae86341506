//! The bridge server ({bridge_url}, SPEC §2.18, §4.7): the supported assets, quotes,
//! deposit addresses, withdrawals and transfer status; and the operator's deposit reports
//! and withdrawal queue, mounted on the internal server. The rules are `app::bridge`.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{json, Value};
use warp::http::StatusCode;
use warp::{Filter, Reply};

use super::{
    authenticate, handle, handle_now, number, recover, reply, respond, with_state, ApiError, ApiResult, Req, Routes,
};
use crate::app::bridge::transfers::{self, Arrival, ArrivalReport, Outcome, Transfer, WithdrawRequest};
use crate::app::bridge::{base_units, table, usd, BridgeError};
use crate::app::AppState;
use crate::auth::normalize_address;
use crate::domain::fmt_amount;

const DEPOSIT_NOTE: &str = "Send a supported asset (see /supported-assets) to the address of its chain; \
     it is credited to your wallet as collateral once the operator confirms its arrival.";
const WITHDRAW_NOTE: &str = "Withdrawals are debited from your collateral at once and sent by the operator; \
     follow them with /status on the bridge address or on your wallet.";

impl From<BridgeError> for ApiError {
    fn from(e: BridgeError) -> ApiError {
        use BridgeError as E;
        match e {
            E::Store(e) => e.into(),
            E::Engine(e) => e.into(),
            E::NotConfigured => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
            E::UnknownDepositAddress | E::WithdrawalNotFound(_) => ApiError::not_found(e.to_string()),
            E::TxConflict { .. } | E::AlreadySettled { .. } => ApiError::new(StatusCode::CONFLICT, e.to_string()),
            E::Refused(_)
            | E::NotAnAmount
            | E::NotAWallet
            | E::NotAnAddress
            | E::UnsupportedSource
            | E::UnsupportedDestination
            | E::NotOwner
            | E::BadRecipient(_)
            | E::NotEnoughBalance
            | E::TxRequired
            | E::WrongChain(_)
            | E::NotFinal
            | E::CompleteNeedsTx => ApiError::bad(e.to_string()),
        }
    }
}

pub fn routes(state: Arc<AppState>) -> Routes {
    let s = || with_state(state.clone());
    let ok = warp::path!("ok").and(warp::get()).map(|| warp::reply::with_status("OK", StatusCode::OK).into_response());
    let assets =
        warp::path!("supported-assets").and(warp::get()).and(s()).map(|s: Arc<AppState>| respond(supported(&s)));
    let quote = handle_now(warp::path!("quote").and(warp::post()), &state, |s, r| quote(&s, r));
    let deposit = handle(warp::path!("deposit").and(warp::post()), &state, deposit);
    let withdraw = handle(warp::path!("withdraw").and(warp::post()), &state, withdraw);
    let status = warp::path!("status" / String)
        .and(warp::get())
        .and(s())
        .map(|a: String, s: Arc<AppState>| respond(status(&s, &a)));
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
            json!({
                "chainId": a.chain_id,
                "chainName": a.chain_name,
                "token": { "name": a.token.name, "symbol": a.token.symbol, "address": a.token.address, "decimals": a.token.decimals },
                "minCheckoutUsd": usd_number(usd(&a.min_checkout_usd)),
            })
        })
        .collect();
    reply(&json!({ "supportedAssets": assets, "note": t.note }))
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

fn quote(s: &AppState, r: Req) -> ApiResult {
    let t = table(s)?;
    let q: QuoteRequest = r.json()?;
    let amount = base_units(&q.from_amount_base_unit)?;
    normalize_address(&q.recipient_address).ok_or_else(|| ApiError::bad("recipientAddress must be a 0x address"))?;
    let from = t.source(&q.from_chain_id, &q.from_token_address)?;
    let to = t.destination(&q.to_chain_id, &q.to_token_address)?;
    let p = t.price(from, to, amount).map_err(BridgeError::from)?;
    let (input, total) = (p.input, p.total);
    // Percent of the input with 4 decimals, in integers.
    let total_pct = number(&trimmed(format!("{}.{:04}", total * 100 / input, (total * 1_000_000 / input) % 10_000)));
    reply(&json!({
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

/// Polymarket's status transaction (fromChainId … createdTimeMs), plus what a ledger venue
/// knows: id, type, wallet, bridge address, amount out, recipient, reason.
fn transfer_json(t: &Transfer) -> Value {
    let mut v = json!({
        "id": t.id.to_string(),
        "type": t.kind,
        "address": t.owner,
        "bridgeAddress": t.bridge_address,
        "fromChainId": t.from_chain_id,
        "fromTokenAddress": t.from_token_address,
        "fromAmountBaseUnit": t.from_amount,
        "toChainId": t.to_chain_id,
        "toTokenAddress": t.to_token_address,
        "toAmountBaseUnit": t.to_amount,
        "status": t.status,
        "createdTimeMs": t.created_ms,
        "updatedTimeMs": t.updated_ms,
    });
    for (k, x) in [("recipientAddr", &t.recipient), ("txHash", &t.tx_hash), ("reason", &t.reason)] {
        if let Some(x) = x {
            v[k] = Value::String(x.clone());
        }
    }
    v
}

fn addresses_json(a: &[String; 3], note: &str) -> Value {
    json!({ "address": { "evm": a[0], "svm": a[1], "btc": a[2] }, "note": note })
}

fn created(v: &Value) -> ApiResult {
    Ok(warp::reply::with_status(warp::reply::json(v), StatusCode::CREATED).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DepositRequest {
    address: String,
}

/// POST /deposit {address} → 201 {address: {evm, svm, btc}, note}.
async fn deposit(s: Arc<AppState>, r: Req) -> ApiResult {
    super::ledger_only(&s)?;
    table(&s)?;
    let b: DepositRequest = r.json()?;
    let addrs = transfers::deposit(&s, &b.address).await?;
    created(&addresses_json(&addrs, DEPOSIT_NOTE))
}

/// POST /withdraw, L2-signed by a key of the wallet (or of the owner it is derived from) → 201
/// {address: {evm, svm, btc} (the withdrawal's bridge addresses), note, transaction}.
async fn withdraw(s: Arc<AppState>, r: Req) -> ApiResult {
    super::ledger_only(&s)?;
    table(&s)?;
    let key = authenticate(&s, &r)?;
    let b: WithdrawRequest = r.json()?;
    let (addrs, rec) = transfers::withdraw(&s, &key, b).await?;
    let mut v = addresses_json(&addrs, WITHDRAW_NOTE);
    v["transaction"] = transfer_json(&rec);
    created(&v)
}

/// GET /status/{address}: `{"transactions": [...]}`, newest first.
fn status(s: &AppState, address: &str) -> ApiResult {
    let out: Vec<Value> = transfers::status(s, address)?.iter().map(transfer_json).collect();
    reply(&json!({ "transactions": out }))
}

/// POST /internal/bridge/deposits: 201 with the new record (COMPLETED, or FAILED with
/// nothing credited); 200 with the record of a transaction reported before.
pub async fn confirm_deposit(s: Arc<AppState>, r: Req) -> ApiResult {
    super::ledger_only(&s)?;
    table(&s)?;
    let b: ArrivalReport = r.json()?;
    match transfers::confirm_deposit(&s, &b).await? {
        Arrival::Recorded(rec) => created(&transfer_json(&rec)),
        Arrival::Known(rec) => reply(&transfer_json(&rec)),
    }
}

/// POST /internal/bridge/withdrawals/{id} {status: COMPLETED, txHash} or {status: FAILED,
/// reason?} → the settled record.
pub async fn settle_withdrawal(s: Arc<AppState>, id: String, r: Req) -> ApiResult {
    let b: Outcome = r.json()?;
    reply(&transfer_json(&transfers::settle_withdrawal(&s, &id, b).await?))
}

/// GET /internal/bridge/withdrawals: the PROCESSING withdrawals, oldest first.
pub fn open_withdrawals(s: &AppState) -> ApiResult {
    let out: Vec<Value> = transfers::open_withdrawals(s)?.iter().map(transfer_json).collect();
    reply(&out)
}
