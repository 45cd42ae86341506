//! Builders and service keys (SPEC §2.1, §4.1, §4.4, §5.5–5.6, §7.2, §7.5;
//! docs/builders.md).
//!
//! A builder is an application that routes its users' orders: it names itself with the
//! `SERVICE_BUILDER_ID` header on `POST /builder/order` and `/builder/cancel`, and the
//! orders it places are attributed to it (an index written in the order's own batch).
//! With a builder API key (`POST /auth/builder-api-key`) it reads the orders and trades
//! it attributed — `GET /data/orders` and `GET /data/trades` with the builder headers of
//! §5.5 — and its volume (`GET /builder/volume`).
//!
//! Relayer API keys (`POST /relayer/api-key`) authorise the gasless relay (`relay`) for
//! one address. Builder and relayer keys are one mechanism: a service key bound to the
//! address that created it, in the `builders` family.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json as j, Value};
use uuid::Uuid;
use warp::http::StatusCode;
use warp::Filter;

use crate::api::orders::{self, Submission};
use crate::api::{authenticate, ct_eq, json, req, respond, with_state, ApiError, ApiResult, AppState, Req, Routes};
use crate::catalogue::fmt_date;
use crate::domain::{
    fmt_amount, mul_div_floor, now_secs, OrderRecord, OrderStatus, TradeRecord, TradeStatus, PRICE_ONE,
};
use crate::rfq::json_object;
use crate::store::{cf, encode, Batch, Store, StoreError};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum KeyKind {
    Builder,
    Relayer,
}

impl KeyKind {
    fn tag(self) -> &'static str {
        match self {
            KeyKind::Builder => "b",
            KeyKind::Relayer => "r",
        }
    }
    fn not_found(self) -> ApiError {
        ApiError::not_found(match self {
            KeyKind::Builder => "builder API key not found",
            KeyKind::Relayer => "relayer API key not found",
        })
    }
}

/// A builder or relayer API key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceKey {
    pub key: Uuid,
    pub kind: KeyKind,
    /// The address whose L2 key created it.
    pub address: String,
    pub builder_id: Option<String>,
    pub secret: String,
    pub passphrase: String,
    pub created_at: u64,
}

fn key_key(k: &Uuid) -> Vec<u8> {
    let mut v = b"k/".to_vec();
    v.extend_from_slice(k.as_bytes());
    v
}
fn owner_key(address: &str, kind: KeyKind, k: &Uuid) -> Vec<u8> {
    let mut v = format!("a/{address}/{}/", kind.tag()).into_bytes();
    v.extend_from_slice(k.as_bytes());
    v
}
fn claim_key(builder: &str) -> Vec<u8> {
    format!("n/{builder}").into_bytes()
}
fn attributed_prefix(builder: &str) -> Vec<u8> {
    format!("o/{builder}/").into_bytes()
}

/// The attribution of an order to a builder, written in the order's batch.
pub fn attribution(builder: &str, order: &OrderRecord) -> Batch {
    let mut b = Batch::default();
    let mut k = attributed_prefix(builder);
    k.extend_from_slice(order.id.as_bytes());
    b.put(cf::BUILDERS, k, Vec::new());
    b
}

pub fn load_key(store: &Store, k: &Uuid) -> Result<Option<ServiceKey>, StoreError> {
    store.get(cf::BUILDERS, &key_key(k))
}

/// A builder ID: 1–64 letters, digits, `-`, `_` or `.` (it is part of index keys).
fn valid_builder_id(b: &str) -> bool {
    (1..=64).contains(&b.len()) && b.bytes().all(|c| c.is_ascii_alphanumeric() || b"-_.".contains(&c))
}

// ---- HTTP ----------------------------------------------------------------------------

pub fn routes(state: Arc<AppState>) -> Routes {
    let s = move || with_state(state.clone());
    let keys = move |path: &'static str, kind: KeyKind, s: warp::filters::BoxedFilter<(Arc<AppState>,)>| {
        let seg = warp::path(path.split('/').next().expect("two segments"))
            .and(warp::path(path.split('/').nth(1).expect("two segments")))
            .and(warp::path::end());
        let create = seg
            .and(warp::post())
            .and(req())
            .and(s.clone())
            .then(move |r, s| async move { respond(create_key(s, r, kind).await) });
        let list = seg
            .and(warp::get())
            .and(req())
            .and(s.clone())
            .map(move |r, s: Arc<AppState>| respond(list_keys(&s, &r, kind)));
        let delete = seg
            .and(warp::delete())
            .and(req())
            .and(s)
            .then(move |r, s| async move { respond(delete_key(s, r, kind).await) });
        create.or(list).unify().or(delete).unify()
    };
    let boxed = || s().boxed();
    let builder_keys = keys("auth/builder-api-key", KeyKind::Builder, boxed());
    let relayer_keys = keys("relayer/api-key", KeyKind::Relayer, boxed());
    let order = warp::path!("builder" / "order")
        .and(warp::post())
        .and(req())
        .and(s())
        .then(|r, s| async move { respond(builder_order(s, r).await) });
    let cancel = warp::path!("builder" / "cancel")
        .and(warp::post())
        .and(req())
        .and(s())
        .then(|r, s| async move { respond(builder_cancel(s, r).await) });
    let volume = warp::path!("builder" / "volume")
        .and(warp::get())
        .and(req())
        .and(s())
        .map(|r, s: Arc<AppState>| respond(builder_volume(&s, &r)));
    builder_keys.or(relayer_keys).unify().or(order).unify().or(cancel).unify().or(volume).unify().boxed()
}

/// 500 with the endpoint's own message (SPEC §7.2) for a storage failure.
fn or_500<T>(r: Result<T, ApiError>, msg: &str) -> Result<T, ApiError> {
    r.map_err(|e| if e.status == StatusCode::INTERNAL_SERVER_ERROR { ApiError::new(e.status, msg) } else { e })
}

/// POST /auth/builder-api-key {builderId} and POST /relayer/api-key: a new key of the
/// caller's address, with its secret and passphrase (shown once).
async fn create_key(s: Arc<AppState>, r: Req, kind: KeyKind) -> ApiResult {
    let key = authenticate(&s, &r)?;
    let builder_id = match kind {
        KeyKind::Builder => {
            let b = if r.body.is_empty() { Default::default() } else { json_object(&r)? };
            let id = b.get("builderId").and_then(Value::as_str).map(str::trim).filter(|x| !x.is_empty());
            let id = id.ok_or_else(|| ApiError::bad("builderId required"))?;
            if !valid_builder_id(id) {
                return Err(ApiError::bad("builderId must be 1-64 letters, digits, '-', '_' or '.'"));
            }
            Some(id.to_string())
        }
        KeyKind::Relayer => None,
    };
    let _one = s.key_lock.lock().await;
    let mut batch = Batch::default();
    if let Some(id) = &builder_id {
        match or_500(
            s.store.get::<String>(cf::BUILDERS, &claim_key(id)).map_err(ApiError::from),
            "could not create builder api key",
        )? {
            Some(owner) if *owner != *key.address => {
                return Err(ApiError::new(StatusCode::CONFLICT, "builderId belongs to another address"));
            }
            Some(_) => {}
            None => batch.put(cf::BUILDERS, claim_key(id), encode(&key.address)),
        }
    }
    let rec = ServiceKey {
        key: Uuid::new_v4(),
        kind,
        address: key.address.to_string(),
        builder_id,
        secret: base64::Engine::encode(
            &base64::engine::general_purpose::URL_SAFE,
            crate::api::keys::random_bytes::<32>()?,
        ),
        passphrase: alloy_primitives::hex::encode(crate::api::keys::random_bytes::<32>()?),
        created_at: now_secs(),
    };
    batch.put(cf::BUILDERS, key_key(&rec.key), encode(&rec));
    batch.put(cf::BUILDERS, owner_key(&rec.address, kind, &rec.key), Vec::new());
    or_500(s.commit(batch).await, "could not create builder api key")?;
    let mut v = key_json(&rec);
    v["secret"] = j!(rec.secret);
    v["passphrase"] = j!(rec.passphrase);
    json(&v)
}

fn key_json(k: &ServiceKey) -> Value {
    let mut v = j!({ "apiKey": k.key.to_string(), "address": k.address, "createdAt": fmt_date(k.created_at) });
    if let Some(b) = &k.builder_id {
        v["builderId"] = j!(b);
    }
    v
}

/// The caller's keys of a kind, oldest first.
fn keys_of(s: &AppState, address: &str, kind: KeyKind) -> Result<Vec<ServiceKey>, StoreError> {
    let mut ids = Vec::new();
    s.store.walk(cf::BUILDERS, format!("a/{address}/{}/", kind.tag()).as_bytes(), None, false, |k, _| {
        ids.extend(k.get(k.len().saturating_sub(16)..).and_then(|b| Uuid::from_slice(b).ok()));
        ControlFlow::Continue(())
    })?;
    let mut out = Vec::new();
    for id in ids {
        out.extend(load_key(&s.store, &id)?);
    }
    out.sort_by_key(|k| (k.created_at, k.key));
    Ok(out)
}

/// GET /auth/builder-api-key, GET /relayer/api-key: {apiKeys: [...]} (no secrets).
fn list_keys(s: &AppState, r: &Req, kind: KeyKind) -> ApiResult {
    let key = authenticate(s, r)?;
    let keys = or_500(keys_of(s, &key.address, kind).map_err(ApiError::from), "could not get builder api keys")?;
    json(&j!({ "apiKeys": keys.iter().map(key_json).collect::<Vec<_>>() }))
}

/// DELETE /auth/builder-api-key?apiKey=…, DELETE /relayer/api-key?apiKey=….
async fn delete_key(s: Arc<AppState>, r: Req, kind: KeyKind) -> ApiResult {
    let key = authenticate(&s, &r)?;
    let id = r
        .query_map()
        .get("apiKey")
        .and_then(|x| Uuid::parse_str(x.trim()).ok())
        .ok_or_else(|| ApiError::bad("invalid apiKey"))?;
    let _one = s.key_lock.lock().await;
    let rec = load_key(&s.store, &id)?.filter(|k| k.kind == kind && *k.address == *key.address);
    let rec = rec.ok_or_else(|| kind.not_found())?;
    let mut batch = Batch::default();
    batch.delete(cf::BUILDERS, key_key(&rec.key));
    batch.delete(cf::BUILDERS, owner_key(&rec.address, kind, &rec.key));
    s.commit(batch).await?;
    json(&j!({ "apiKey": id.to_string(), "deleted": true }))
}

/// The `SERVICE_BUILDER_ID` of a builder request, and the builder API key verified when
/// one is supplied (SPEC §5.5).
fn builder_id(s: &AppState, r: &Req) -> Result<String, ApiError> {
    let id = r
        .header("SERVICE_BUILDER_ID")
        .ok_or_else(|| ApiError::bad("OPENFISH_BUILDER_ID header required (header SERVICE_BUILDER_ID)"))?;
    if !valid_builder_id(id) {
        return Err(ApiError::bad("SERVICE_BUILDER_ID must be 1-64 letters, digits, '-', '_' or '.'"));
    }
    if let Some(k) = r.header("SERVICE_BUILDER_API_KEY") {
        let invalid = || ApiError::unauthorized("invalid builder API key");
        let k = Uuid::parse_str(k).map_err(|_| invalid())?;
        let rec = load_key(&s.store, &k)?.filter(|x| x.kind == KeyKind::Builder).ok_or_else(invalid)?;
        if rec.builder_id.as_deref() != Some(id)
            || r.header("SERVICE_BUILDER_PASSPHRASE").is_some_and(|p| !ct_eq(p.as_bytes(), rec.passphrase.as_bytes()))
        {
            return Err(invalid());
        }
    }
    Ok(id.to_string())
}

/// POST /builder/order: POST /order on a user's behalf (the user's L2 headers), attributed
/// to the builder.
async fn builder_order(s: Arc<AppState>, r: Req) -> ApiResult {
    let builder = builder_id(&s, &r)?;
    let body = json_object(&r)?;
    if !body.contains_key("order") {
        return Err(ApiError::bad("missing 'order' field"));
    }
    orders::check_new_orders(&s)?;
    let key = authenticate(&s, &r)?;
    let sub: Submission = serde_json::from_value(Value::Object(body)).map_err(|_| orders::invalid())?;
    let p = orders::place_attributed(&s, &key, sub, Some(&builder)).await?;
    json(&orders::result_json(&p))
}

/// POST /builder/cancel {orderID} or {orderIDs: [...]}: the user's cancel through the
/// builder.
async fn builder_cancel(s: Arc<AppState>, r: Req) -> ApiResult {
    builder_id(&s, &r)?;
    let body = json_object(&r)?;
    orders::check_cancels(&s)?;
    let key = authenticate(&s, &r)?;
    let ids: Vec<Uuid> = match (body.get("orderID").or_else(|| body.get("orderId")), body.get("orderIDs")) {
        (Some(Value::String(id)), None) => vec![orders::parse_id(id)?],
        (None, Some(Value::Array(v))) if !v.is_empty() && v.len() <= orders::MAX_CANCEL => v
            .iter()
            .map(|x| x.as_str().ok_or_else(|| ApiError::bad("Invalid orderID")).and_then(orders::parse_id))
            .collect::<Result<_, _>>()?,
        _ => return Err(ApiError::bad("Invalid orderID")),
    };
    orders::canceled_json(&s.engine.cancel(key.key, ids).await?)
}

/// Whether a request carries builder credentials (§5.5) rather than a user's L2 ones.
pub fn has_builder_headers(r: &Req) -> bool {
    r.header("SERVICE_BUILDER_API_KEY").is_some()
}

/// Builder HMAC authentication (§5.5): the key, its passphrase, and the L2 signature
/// scheme with the builder key's secret.
pub fn authenticate_builder(s: &AppState, r: &Req) -> Result<ServiceKey, ApiError> {
    let fail = || ApiError::unauthorized("L2 authentication failure");
    let (Some(k), Some(pass), Some(sig), Some(ts)) = (
        r.header("SERVICE_BUILDER_API_KEY"),
        r.header("SERVICE_BUILDER_PASSPHRASE"),
        r.header("SERVICE_BUILDER_SIGNATURE"),
        r.header("SERVICE_BUILDER_TIMESTAMP"),
    ) else {
        return Err(fail());
    };
    let invalid = || ApiError::unauthorized("Unauthorized/Invalid api key");
    let k = Uuid::parse_str(k).map_err(|_| invalid())?;
    let rec = load_key(&s.store, &k)?.filter(|x| x.kind == KeyKind::Builder).ok_or_else(invalid)?;
    let t: i64 = ts.parse().map_err(|_| fail())?;
    if (now_secs() as i64 - t).abs() > crate::api::MAX_DRIFT_SECS || !ct_eq(pass.as_bytes(), rec.passphrase.as_bytes())
    {
        return Err(fail());
    }
    if !crate::api::signed_with(r, &rec.secret, ts, sig) {
        return Err(fail());
    }
    Ok(rec)
}

/// Every order attributed to a builder.
fn attributed_orders(s: &AppState, builder: &str) -> Result<Vec<OrderRecord>, ApiError> {
    let mut ids = Vec::new();
    let prefix = attributed_prefix(builder);
    s.store.walk(cf::BUILDERS, &prefix, None, false, |k, _| {
        ids.extend(k.get(prefix.len()..).and_then(|b| Uuid::from_slice(b).ok()));
        ControlFlow::Continue(())
    })?;
    let mut out = Vec::new();
    for id in ids {
        out.extend(s.store.get_order(&id)?);
    }
    out.sort_by_key(|o| (o.created_at, o.id));
    Ok(out)
}

fn builder_of(rec: &ServiceKey) -> &str {
    rec.builder_id.as_deref().unwrap_or_default()
}

/// GET /data/orders with builder headers: the open orders the builder attributed.
pub fn builder_orders(s: &AppState, r: &Req) -> ApiResult {
    let rec = authenticate_builder(s, r)?;
    let q = r.query_map();
    let offset = orders::cursor_offset(&q)?;
    let f = |k: &str| q.get(k).filter(|x| !x.is_empty());
    let items = attributed_orders(s, builder_of(&rec))?
        .into_iter()
        .filter(|o| matches!(o.status, OrderStatus::Live | OrderStatus::Deferred))
        .filter(|o| {
            !(f("id").is_some_and(|x| *x != o.id.to_string())
                || f("market").is_some_and(|x| **x != *o.token.condition_id)
                || f("asset_id").is_some_and(|x| **x != *o.token.token_id))
        })
        .map(|o| orders::order_json(&o))
        .collect();
    orders::page(items, offset)
}

/// The trades of a builder's attributed orders, newest first, each with the notional
/// (collateral) of its attributed fills.
fn attributed_trades(s: &AppState, builder: &str) -> Result<Vec<(TradeRecord, u64, Uuid)>, ApiError> {
    let orders = attributed_orders(s, builder)?;
    let mine: std::collections::HashSet<Uuid> = orders.iter().map(|o| o.id).collect();
    let mut trades = BTreeMap::new();
    for id in orders.iter().flat_map(|o| o.associate_trades.iter()) {
        if trades.contains_key(id) {
            continue;
        }
        let Some(t) = s.store.get_trade(id)? else { continue };
        let one = PRICE_ONE as u64;
        let mut notional = 0;
        let mut viewer = None;
        if mine.contains(&t.taker_order_id) {
            notional += mul_div_floor(t.size, t.price as u64, one);
            viewer = Some(t.owner);
        }
        for m in t.maker_orders.iter().filter(|m| mine.contains(&m.order_id)) {
            notional += mul_div_floor(m.matched_amount, m.price as u64, one);
            viewer.get_or_insert(m.owner);
        }
        let viewer = viewer.unwrap_or(t.owner);
        trades.insert(*id, (t, notional, viewer));
    }
    let mut v: Vec<_> = trades.into_values().collect();
    v.sort_by_key(|(t, ..)| std::cmp::Reverse(t.seq));
    Ok(v)
}

/// GET /data/trades with builder headers: the trades of orders the builder attributed.
pub fn builder_trades(s: &AppState, r: &Req) -> ApiResult {
    let rec = authenticate_builder(s, r)?;
    let q = r.query_map();
    let offset = orders::cursor_offset(&q)?;
    let f = |k: &str| q.get(k).filter(|x| !x.is_empty());
    let items = attributed_trades(s, builder_of(&rec))?
        .into_iter()
        .filter(|(t, ..)| {
            !(f("id").is_some_and(|x| *x != t.id.to_string())
                || f("market").is_some_and(|x| **x != *t.token.condition_id)
                || f("asset_id").is_some_and(|x| **x != *t.token.token_id))
        })
        .map(|(t, _, viewer)| orders::trade_json(&t, viewer))
        .collect();
    orders::page(items, offset)
}

/// GET /builder/volume (builder headers; optional `market`): the builder's attributed
/// orders, trades and volume — the collateral notional of its orders' fills, in trades not
/// FAILED.
fn builder_volume(s: &AppState, r: &Req) -> ApiResult {
    let rec = authenticate_builder(s, r)?;
    let q = r.query_map();
    let market = q.get("market").filter(|x| !x.is_empty());
    let builder = builder_of(&rec);
    let orders =
        attributed_orders(s, builder)?.into_iter().filter(|o| market.is_none_or(|m| **m == *o.token.condition_id));
    let trades: Vec<_> = attributed_trades(s, builder)?
        .into_iter()
        .filter(|(t, ..)| t.status != TradeStatus::Failed && market.is_none_or(|m| **m == *t.token.condition_id))
        .collect();
    let volume: u64 = trades.iter().map(|(_, n, _)| n).sum();
    json(&j!({
        "builderId": builder,
        "orders": orders.count(),
        "trades": trades.len(),
        "volume": fmt_amount(volume),
    }))
}
