//! The relayer (SPEC §5.6; docs/reference/relay.md), on the order-book server as Polymarket's
//! relayer client calls it: `POST /submit` takes a Safe transaction its owner signed (or the
//! Safe's deployment) and runs it without the wallet paying gas; `GET /nonce`, `/deployed`,
//! `/transaction` and `/transactions` answer what the client asks before and after. A body
//! with `operation` instead of `type` is predex's by-name relay, an extension kept beside.
//!
//! Authentication: the relayer headers `RELAYER_API_KEY` + `RELAYER_API_KEY_ADDRESS` are
//! validated first when either is present (a relayer key acts for the address that
//! created it); then builder headers (a builder key submits any owner's signed
//! transaction); otherwise the L2 headers, acting for the key's address or its wallets.

use std::sync::Arc;

use serde_json::{json, Map, Value};
use uuid::Uuid;
use warp::Filter;

use super::ctf::receipt_json;
use super::rfq::json_object;
use super::{authenticate, handle, handle_now, reply, req, respond, with_state, ApiError, ApiResult, Req, Routes};
use crate::app::ctf::{convert_for, operate_for, wallet_of, ConvertRequest, CtfRequest};
use crate::app::relayer::chain as chain_relay;
use crate::app::relayer::{self, RelayError, Submitter, TransactionRequest};
use crate::app::AppState;
use crate::auth::normalize_address;
use crate::domain::analytics::CtfKind;
use crate::domain::relay::{RelayKind, RelayTx};
use crate::domain::{fmt_date, now_secs, OrderStatus};

/// The most transactions `GET /transactions` answers at once.
const MAX_PAGE: usize = 500;

pub fn routes(state: Arc<AppState>) -> Routes {
    let submit = warp::path!("submit")
        .and(warp::post())
        .and(req())
        .and(with_state(state.clone()))
        .then(|r, s| async move { respond(submit(s, r).await) });
    let nonce = handle(warp::path!("nonce").and(warp::get()), &state, nonce);
    let deployed = handle(warp::path!("deployed").and(warp::get()), &state, deployed);
    let payload = handle(warp::path!("relay-payload").and(warp::get()), &state, relay_payload);
    let one = handle_now(warp::path!("transaction").and(warp::get()), &state, |s, r| transaction(&s, &r));
    let mine = handle(warp::path!("transactions").and(warp::get()), &state, transactions);
    submit.or(nonce).unify().or(deployed).unify().or(payload).unify().or(one).unify().or(mine).unify().boxed()
}

impl From<RelayError> for ApiError {
    fn from(e: RelayError) -> ApiError {
        match e {
            RelayError::Store(e) => e.into(),
            RelayError::Unavailable(m) => ApiError::new(warp::http::StatusCode::SERVICE_UNAVAILABLE, m),
            e => ApiError::bad(e.to_string()),
        }
    }
}

/// A query parameter's address, lowercase; 400 `invalid address` otherwise.
fn query_address(r: &Req) -> Result<alloy_primitives::Address, ApiError> {
    r.query_map().get("address").and_then(|a| a.trim().parse().ok()).ok_or_else(|| ApiError::bad("invalid address"))
}

/// The owner named by `address`, the wallet of `type` (SAFE or PROXY) it has, and the
/// wallet's next nonce: the relayer's, and in chain mode at least the chain's.
async fn owners_wallet(s: &AppState, r: &Req) -> Result<(String, u64), ApiError> {
    let owner = query_address(r)?;
    let (kind, wallet) = match r.query_map().get("type").map(String::as_str) {
        Some("SAFE") => (RelayKind::Safe, s.wallets.safe(owner)),
        Some("PROXY") => (RelayKind::Proxy, s.wallets.proxy(owner)),
        _ => return Err(ApiError::bad("type must be SAFE or PROXY")),
    };
    let text = format!("{wallet:#x}");
    let mut nonce = s.store.relay_nonce(&text)?;
    if s.chain.is_some() {
        nonce = nonce.max(chain_relay::chain_nonce(s, kind, owner, wallet).await?);
    }
    Ok((text, nonce))
}

/// GET /nonce?address=<owner>&type=SAFE|PROXY: the next nonce of the owner's Safe, or of
/// its calls through the relay hub.
async fn nonce(s: Arc<AppState>, r: Req) -> ApiResult {
    reply(&json!({ "nonce": owners_wallet(&s, &r).await?.1.to_string() }))
}

/// GET /relay-payload?address=<owner>&type=PROXY: the relay a proxy wallet's owner signs
/// for (the operator in chain mode), and its nonce.
async fn relay_payload(s: Arc<AppState>, r: Req) -> ApiResult {
    let (_, nonce) = owners_wallet(&s, &r).await?;
    let relay = s.relay_contracts.relay;
    reply(&json!({ "address": format!("{relay:#x}"), "nonce": nonce.to_string() }))
}

/// GET /deployed?address=<wallet>: whether the wallet is deployed — in chain mode whether
/// it holds code, in ledger mode whether the relayer deployed it (a Safe by its
/// SAFE-CREATE, a proxy wallet by its first call).
async fn deployed(s: Arc<AppState>, r: Req) -> ApiResult {
    let wallet = query_address(&r)?;
    let deployed = match s.chain {
        Some(_) => chain_relay::deployed(&s, wallet).await?,
        None => s.store.wallet_deployed(&format!("{wallet:#x}"))?,
    };
    reply(&json!({ "deployed": deployed }))
}

/// GET /transaction?id=: the transaction in an array, as Polymarket's relayer answers (empty
/// when there is none).
fn transaction(s: &AppState, r: &Req) -> ApiResult {
    let id = r
        .query_map()
        .get("id")
        .and_then(|i| Uuid::parse_str(i.trim()).ok())
        .ok_or_else(|| ApiError::bad("invalid id"))?;
    let found = s.store.relay_tx(&id)?;
    reply(&found.iter().map(tx_json).collect::<Vec<_>>())
}

/// GET /transactions (authenticated): the caller's transactions, newest first — a builder
/// key's submissions, or what a relayer or L2 key's address signed; `limit` (default 100,
/// at most 500) from `offset`.
async fn transactions(s: Arc<AppState>, r: Req) -> ApiResult {
    let by = submitter(&s, &r)?;
    let q = r.query_map();
    let number = |name: &str, default: usize| -> Result<usize, ApiError> {
        match q.get(name).map(|v| v.trim()).filter(|v| !v.is_empty()) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| ApiError::bad(format!("invalid {name}"))),
        }
    };
    let (limit, offset) = (number("limit", 100)?.clamp(1, MAX_PAGE), number("offset", 0)?);
    let ids = match &by.address {
        Some(a) => s.store.relay_txs_of(Some(a), None, offset, limit)?,
        None => s.store.relay_txs_of(None, Some(&by.id), offset, limit)?,
    };
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        if let Some(tx) = s.store.relay_tx(&id)? {
            out.push(tx_json(&tx));
        }
    }
    reply(&out)
}

/// A transaction as Polymarket's relayer writes it.
fn tx_json(t: &RelayTx) -> Value {
    let mut v = json!({
        "transactionID": t.id.to_string(),
        "transactionHash": format!("0x{}", alloy_primitives::hex::encode(t.hash)),
        "from": t.from,
        "to": t.to,
        "proxyAddress": t.wallet,
        "data": t.data,
        "nonce": t.nonce,
        "value": "0",
        "signature": t.signature,
        "state": t.state.as_str(),
        "type": t.kind.as_str(),
        "owner": t.owner,
        "metadata": t.metadata,
        "createdAt": fmt_date(t.created_at / 1000),
        "updatedAt": fmt_date(t.updated_at / 1000),
    });
    if let Some(e) = &t.error {
        v["errorMsg"] = json!(e);
    }
    v
}

/// Who submits a relayer request, by the headers SPEC §5.6 orders: relayer key, builder
/// key, L2.
fn submitter(s: &AppState, r: &Req) -> Result<Submitter, ApiError> {
    Ok(caller(s, r)?.submitter())
}

impl Caller {
    /// The submitter a relayer transaction records: the key, and the owner it may act for
    /// (a builder key: any owner whose signature it carries).
    fn submitter(self) -> Submitter {
        match self {
            Caller::Relayer(addr, key) => Submitter { id: key.to_string(), address: Some(addr) },
            Caller::Builder(id) => Submitter { id, address: None },
            Caller::L2(key) => Submitter { id: key.key.to_string(), address: Some(key.address.to_string()) },
        }
    }
}

/// The wallet the request acts for: the relayer key's owner, or the L2 key's address (with
/// `address` naming the key's proxy wallet if it wants to).
fn wallet(s: &AppState, caller: Caller, address: Option<&str>) -> Result<String, ApiError> {
    match caller {
        Caller::L2(key) => Ok(wallet_of(s, &key, address)?),
        Caller::Relayer(addr, _) => {
            if address.is_some_and(|a| normalize_address(a).as_deref() != Some(addr.as_str())) {
                return Err(ApiError::bad("the address has to be the owner of the API KEY"));
            }
            Ok(addr)
        }
        Caller::Builder(_) => Err(ApiError::bad("a builder key relays signed transactions only")),
    }
}

/// Who sends a relay request: a relayer API key's owner (and the key), a builder key, or
/// an L2-authenticated key.
enum Caller {
    Relayer(String, Uuid),
    Builder(String),
    L2(Arc<crate::domain::ApiKeyRecord>),
}

/// The request's credentials, checked before its body (SPEC §5.6): the relayer headers
/// when either is present, then the builder headers, else L2.
fn caller(s: &AppState, r: &Req) -> Result<Caller, ApiError> {
    let (key, addr) = (r.header("RELAYER_API_KEY"), r.header("RELAYER_API_KEY_ADDRESS"));
    if key.is_none() && addr.is_none() {
        if r.header("SERVICE_BUILDER_API_KEY").is_some() {
            let b = super::builders::authenticate_builder(s, r)?;
            return Ok(Caller::Builder(b.key.to_string()));
        }
        return Ok(Caller::L2(authenticate(s, r)?));
    }
    let invalid = || ApiError::unauthorized("invalid relayer api key");
    let (Some(key), Some(addr)) = (key, addr) else {
        return Err(ApiError::unauthorized("RELAYER_API_KEY and RELAYER_API_KEY_ADDRESS headers required"));
    };
    let addr = normalize_address(addr).ok_or_else(invalid)?;
    let key = Uuid::parse_str(key).map_err(|_| invalid())?;
    crate::app::builders::relayer_key_of(s, &key, &addr)?.ok_or_else(invalid)?;
    Ok(Caller::Relayer(addr, key))
}

/// The operation's own fields (everything but `operation`), as its endpoint's body.
fn params<T: serde::de::DeserializeOwned>(body: Map<String, Value>) -> Result<T, ApiError> {
    serde_json::from_value(Value::Object(body)).map_err(|e| ApiError::bad(format!("Invalid payload: {e}")))
}

/// POST /submit: a transaction request of Polymarket's relayer client (`type` SAFE,
/// SAFE-CREATE or PROXY), read as JSON whatever its content type (the client sends it as a form),
/// or predex's by-name operation.
async fn submit(s: Arc<AppState>, r: Req) -> ApiResult {
    let caller = caller(&s, &r)?;
    let mut body = json_object(&r)?;
    if !body.contains_key("type") {
        // The by-name operations move ledger balances.
        super::ledger_only(&s)?;
    }
    if body.contains_key("type") {
        let by = caller.submitter();
        let request: TransactionRequest =
            serde_json::from_value(Value::Object(body)).map_err(|e| ApiError::bad(format!("Invalid payload: {e}")))?;
        let t = tx_json(&relayer::submit(&s, by, request).await?);
        return reply(
            &json!({ "transactionID": t["transactionID"], "transactionHash": t["transactionHash"], "state": t["state"] }),
        );
    }
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
            let (nonce, ids) = s.engine.increment_nonce(from.clone(), Default::default()).await?;
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
