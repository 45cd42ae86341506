//! The gasless relay (SPEC §5.6; docs/reference/relay.md): `POST /submit` executes a wallet's
//! operation without the wallet paying gas. In ledger mode each operation runs at once
//! through the same path as its own endpoint, and the reply is the transaction record.
//!
//! Authentication: the relayer headers `RELAYER_API_KEY` + `RELAYER_API_KEY_ADDRESS` are
//! validated first when either is present (a relayer key acts for the address that
//! created it); otherwise the L2 headers, acting for the key's address or its proxy.

use std::sync::Arc;

use serde_json::{json, Map, Value};
use uuid::Uuid;
use warp::Filter;

use super::ctf::receipt_json;
use super::rfq::json_object;
use super::{authenticate, req, respond, with_state, ApiError, ApiResult, Req, Routes};
use crate::app::ctf::{convert_for, operate_for, wallet_of, ConvertRequest, CtfRequest};
use crate::app::AppState;
use crate::auth::normalize_address;
use crate::domain::analytics::CtfKind;
use crate::domain::fmt_date;
use crate::domain::{now_secs, OrderStatus};

pub fn routes(state: Arc<AppState>) -> Routes {
    warp::path!("submit")
        .and(warp::post())
        .and(req())
        .and(with_state(state))
        .then(|r, s| async move { respond(submit(s, r).await) })
        .boxed()
}

/// The wallet the request acts for: the relayer key's owner, or the L2 key's address (with
/// `address` naming the key's proxy wallet if it wants to).
fn wallet(s: &AppState, caller: Caller, address: Option<&str>) -> Result<String, ApiError> {
    match caller {
        Caller::L2(key) => Ok(wallet_of(s, &key, address)?),
        Caller::Relayer(addr) => {
            if address.is_some_and(|a| normalize_address(a).as_deref() != Some(addr.as_str())) {
                return Err(ApiError::bad("the address has to be the owner of the API KEY"));
            }
            Ok(addr)
        }
    }
}

/// Who sends a relay request: a relayer API key's owner, or an L2-authenticated key.
enum Caller {
    Relayer(String),
    L2(Arc<crate::domain::ApiKeyRecord>),
}

/// The request's credentials, checked before its body (SPEC §5.6): the relayer headers
/// when either is present, else L2.
fn caller(s: &AppState, r: &Req) -> Result<Caller, ApiError> {
    let (key, addr) = (r.header("RELAYER_API_KEY"), r.header("RELAYER_API_KEY_ADDRESS"));
    if key.is_none() && addr.is_none() {
        return Ok(Caller::L2(authenticate(s, r)?));
    }
    let invalid = || ApiError::unauthorized("invalid relayer api key");
    let (Some(key), Some(addr)) = (key, addr) else {
        return Err(ApiError::unauthorized("RELAYER_API_KEY and RELAYER_API_KEY_ADDRESS headers required"));
    };
    let addr = normalize_address(addr).ok_or_else(invalid)?;
    let key = Uuid::parse_str(key).map_err(|_| invalid())?;
    crate::app::builders::relayer_key_of(s, &key, &addr)?.ok_or_else(invalid)?;
    Ok(Caller::Relayer(addr))
}

/// The operation's own fields (everything but `operation`), as its endpoint's body.
fn params<T: serde::de::DeserializeOwned>(body: Map<String, Value>) -> Result<T, ApiError> {
    serde_json::from_value(Value::Object(body)).map_err(|e| ApiError::bad(format!("Invalid payload: {e}")))
}

/// POST /submit {operation, ...its fields}: split, merge, redeem (conditionId, amount),
/// convert (marketId, indexSet, amount), incrementNonce, cancelOrder (orderID).
async fn submit(s: Arc<AppState>, r: Req) -> ApiResult {
    super::ledger_only(&s)?;
    let caller = caller(&s, &r)?;
    let mut body = json_object(&r)?;
    let op = match body.remove("operation") {
        Some(Value::String(op)) => op,
        _ => {
            return Err(ApiError::bad(
                "operation required: split, merge, redeem, convert, incrementNonce or cancelOrder",
            ))
        }
    };
    let address = body.get("address").and_then(Value::as_str).map(str::to_string);
    let kind = match op.as_str() {
        "split" => Some(CtfKind::Split),
        "merge" => Some(CtfKind::Merge),
        "redeem" => Some(CtfKind::Redeem),
        _ => None,
    };
    let known = ["split", "merge", "redeem", "convert", "convertPositions", "incrementNonce", "cancelOrder"];
    if !known.contains(&op.as_str()) {
        return Err(ApiError::bad(format!("unsupported operation: {op}")));
    }
    let from = wallet(&s, caller, address.as_deref())?;
    let (result, hash) = match (kind, op.as_str()) {
        (Some(kind), _) => {
            let mut b: CtfRequest = params(body)?;
            b.address = Some(from.clone());
            let done = operate_for(&s, kind, &from, b).await?;
            (receipt_json(&done), json!(done.tx_hash))
        }
        (None, "convert" | "convertPositions") => {
            let mut b: ConvertRequest = params(body)?;
            b.address = Some(from.clone());
            let done = convert_for(&s, &from, b).await?;
            (receipt_json(&done), json!(done.tx_hash))
        }
        (None, "incrementNonce") => {
            if body.keys().any(|k| k != "address") {
                return Err(ApiError::bad("incrementNonce takes no parameters"));
            }
            crate::app::orders::check_cancels(&s)?;
            let (nonce, ids) = s.engine.increment_nonce(from.clone()).await?;
            let v = json!({ "nonce": nonce.to_string(), "canceled": ids.iter().map(|u| u.to_string()).collect::<Vec<_>>() });
            (v, json!(tx_hash()))
        }
        (None, _) => {
            // cancelOrder: an open order whose maker is the wallet.
            crate::app::orders::check_cancels(&s)?;
            let id = body
                .get("orderID")
                .or_else(|| body.get("orderId"))
                .and_then(Value::as_str)
                .ok_or_else(|| ApiError::bad("Invalid orderID"))?;
            let id = super::wire::parse_id(id)?;
            let o = s
                .store
                .get_order(&id)?
                .filter(|o| *o.maker == *from && matches!(o.status, OrderStatus::Live | OrderStatus::Deferred))
                .ok_or_else(|| ApiError::not_found("order not found or not open"))?;
            let c = s.engine.cancel(o.owner, vec![id]).await?;
            if c.canceled.is_empty() {
                return Err(ApiError::not_found("order not found or not open"));
            }
            (json!({ "canceled": [id.to_string()] }), json!(tx_hash()))
        }
    };
    super::reply(&json!({
        "transactionID": Uuid::new_v4().to_string(),
        "transactionHash": hash,
        "state": "STATE_CONFIRMED",
        "operation": op,
        "from": from,
        "createdAt": fmt_date(now_secs()),
        "result": result,
    }))
}

/// A transaction hash for an operation that writes no activity row (ledger mode has no
/// chain transaction).
fn tx_hash() -> String {
    format!("{}", alloy_primitives::keccak256(Uuid::new_v4().as_bytes()))
}
