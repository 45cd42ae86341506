//! Builders' and service keys' routes (SPEC §4.1, §5.5–5.6, §7.2; `app::builders` has the
//! rules): builder and relayer API keys, `POST /builder/order` and `/builder/cancel` on a
//! user's behalf, `GET /builder/volume`, and the builder views of `GET /data/orders` and
//! `/data/trades`.

use std::sync::Arc;

use serde_json::{json, Value};
use uuid::Uuid;
use warp::http::StatusCode;
use warp::Filter;

use super::orders::MAX_CANCEL;
use super::rfq::json_object;
use super::wire::{self, Submission};
use super::{authenticate, handle, handle_now, req, respond, with_state, ApiError, ApiResult, Req, Routes};
use super::{paging, render};
use crate::app::builders::{self, BuilderError, KeyKind, ServiceKey};
use crate::app::AppState;
use crate::domain::fmt_date;
use crate::domain::{fmt_amount, now_secs, OrderStatus};

impl From<BuilderError> for ApiError {
    fn from(e: BuilderError) -> ApiError {
        use BuilderError as E;
        match e {
            E::Store(e) => e.into(),
            E::BuilderIdTaken => ApiError::new(StatusCode::CONFLICT, e.to_string()),
            E::TooMany(_) => ApiError::bad(e.to_string()),
            E::NoBuilderKey | E::NoRelayerKey | E::NoReadonlyKey => ApiError::not_found(e.to_string()),
            E::CreateFailed | E::ListFailed => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        }
    }
}

pub fn routes(state: Arc<AppState>) -> Routes {
    let s = || with_state(state.clone());
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
    let order = handle(warp::path!("builder" / "order").and(warp::post()), &state, builder_order);
    let cancel = handle(warp::path!("builder" / "cancel").and(warp::post()), &state, builder_cancel);
    let volume = handle_now(warp::path!("builder" / "volume").and(warp::get()), &state, |s, r| builder_volume(&s, &r));
    let trades =
        handle_now(warp::path!("builder" / "trades").and(warp::get()), &state, |s, r| builder_trade_rows(&s, &r));
    let ro_create = handle(warp::path!("auth" / "readonly-api-key").and(warp::post()), &state, create_readonly);
    let ro_delete = handle(warp::path!("auth" / "readonly-api-key").and(warp::delete()), &state, delete_readonly);
    let ro_list =
        handle_now(warp::path!("auth" / "readonly-api-keys").and(warp::get()), &state, |s, r| list_readonly(&s, &r));
    let ro_valid = handle_now(warp::path!("auth" / "validate-readonly-api-key").and(warp::get()), &state, |s, r| {
        validate_readonly(&s, &r)
    });
    // Boxed in groups: see `book::routes`.
    let builder = builder_keys
        .or(relayer_keys)
        .unify()
        .or(order)
        .unify()
        .or(cancel)
        .unify()
        .or(volume)
        .unify()
        .or(trades)
        .unify()
        .boxed();
    let readonly = ro_create.or(ro_delete).unify().or(ro_list).unify().or(ro_valid).unify().boxed();
    // The builder's views of the L2 order and trade lists, for requests with builder
    // headers; the others go on to `orders::routes`.
    let views =
        handle_now(warp::path!("data" / "orders").and(warp::get()).and(with_builder_headers()), &state, |s, r| {
            builder_orders(&s, &r)
        })
        .or(handle_now(
            warp::path!("data" / "trades")
                .or(warp::path!("trades"))
                .unify()
                .and(warp::get())
                .and(with_builder_headers()),
            &state,
            |s, r| builder_trades(&s, &r),
        ))
        .unify()
        .boxed();
    builder.or(readonly).unify().or(views).unify().boxed()
}

/// Passes a request carrying builder credentials (§5.5) rather than a user's L2 ones.
fn with_builder_headers() -> warp::filters::BoxedFilter<()> {
    warp::header::headers_cloned()
        .and_then(|h: warp::http::HeaderMap| async move {
            match h.get("SERVICE_BUILDER_API_KEY").map(|v| v.to_str()) {
                Some(Ok(_)) => Ok(()),
                _ => Err(warp::reject::not_found()),
            }
        })
        .untuple_one()
        .boxed()
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
            if !builders::valid_builder_id(id) {
                return Err(ApiError::bad("builderId must be 1-64 letters, digits, '-', '_' or '.'"));
            }
            Some(id.to_string())
        }
        // Read-only keys have their own route (`create_readonly`).
        KeyKind::Relayer | KeyKind::Readonly => None,
    };
    let rec = builders::create_key(&s, &key.address, kind, builder_id).await?;
    let mut v = key_json(&rec);
    v["secret"] = json!(rec.secret);
    v["passphrase"] = json!(rec.passphrase);
    super::reply(&v)
}

fn key_json(k: &ServiceKey) -> Value {
    let mut v = json!({ "apiKey": k.key.to_string(), "address": k.address, "createdAt": fmt_date(k.created_at) });
    if let Some(b) = &k.builder_id {
        v["builderId"] = json!(b);
    }
    v
}

/// GET /auth/builder-api-key, GET /relayer/api-key: {apiKeys: [...]} (no secrets).
fn list_keys(s: &AppState, r: &Req, kind: KeyKind) -> ApiResult {
    let key = authenticate(s, r)?;
    let keys = builders::keys_of(s, &key.address, kind)?;
    super::reply(&json!({ "apiKeys": keys.iter().map(key_json).collect::<Vec<_>>() }))
}

/// DELETE /auth/builder-api-key?apiKey=…, DELETE /relayer/api-key?apiKey=….
async fn delete_key(s: Arc<AppState>, r: Req, kind: KeyKind) -> ApiResult {
    let key = authenticate(&s, &r)?;
    let id = r
        .query_map()
        .get("apiKey")
        .and_then(|x| Uuid::parse_str(x.trim()).ok())
        .ok_or_else(|| ApiError::bad("invalid apiKey"))?;
    builders::delete_key(&s, &key.address, kind, &id).await?;
    // An empty object, as SPEC §4.1 says for the builder key and DELETE /auth/api-key does.
    super::reply(&json!({}))
}

/// POST /auth/readonly-api-key: a read-only key reading what the calling L2 key reads,
/// with its secret and passphrase (shown once; it signs requests as an L2 key does).
async fn create_readonly(s: Arc<AppState>, r: Req) -> ApiResult {
    let key = authenticate(&s, &r)?;
    let rec = builders::create_readonly_key(&s, &key).await?;
    super::reply(&json!({ "apiKey": rec.key.to_string(), "secret": rec.secret, "passphrase": rec.passphrase }))
}

/// GET /auth/readonly-api-keys: the address's read-only keys, as an array of key ids.
fn list_readonly(s: &AppState, r: &Req) -> ApiResult {
    let key = authenticate(s, r)?;
    let keys = builders::keys_of(s, &key.address, KeyKind::Readonly)?;
    super::reply(&keys.iter().map(|k| k.key.to_string()).collect::<Vec<_>>())
}

/// DELETE /auth/readonly-api-key `{"key": id}`: `true` once it is gone.
async fn delete_readonly(s: Arc<AppState>, r: Req) -> ApiResult {
    let key = authenticate(&s, &r)?;
    let body = json_object(&r)?;
    let id = body
        .get("key")
        .and_then(Value::as_str)
        .and_then(|x| Uuid::parse_str(x.trim()).ok())
        .ok_or_else(|| ApiError::bad("invalid key"))?;
    builders::delete_key(&s, &key.address, KeyKind::Readonly, &id).await?;
    super::reply(&true)
}

/// GET /auth/validate-readonly-api-key?address=&key= (no credentials): `"valid"` when `key`
/// is a live read-only key of `address`; 401 `invalid readonly api key` otherwise.
fn validate_readonly(s: &AppState, r: &Req) -> ApiResult {
    let q = r.query_map();
    let address = q.get("address").and_then(|a| crate::auth::normalize_address(a));
    let key = q.get("key").and_then(|k| Uuid::parse_str(k.trim()).ok());
    let (Some(address), Some(key)) = (address, key) else {
        return Err(ApiError::bad("address and key required"));
    };
    match builders::readonly_key(s, &key)? {
        Some((ro, _)) if ro.address == address => super::reply(&"valid"),
        _ => Err(ApiError::unauthorized("invalid readonly api key")),
    }
}

/// The `SERVICE_BUILDER_ID` of a builder request, and the builder API key verified when
/// one is supplied (SPEC §5.5).
fn builder_id(s: &AppState, r: &Req) -> Result<String, ApiError> {
    let id = r
        .header("SERVICE_BUILDER_ID")
        .ok_or_else(|| ApiError::bad("OPENFISH_BUILDER_ID header required (header SERVICE_BUILDER_ID)"))?;
    if !builders::valid_builder_id(id) {
        return Err(ApiError::bad("SERVICE_BUILDER_ID must be 1-64 letters, digits, '-', '_' or '.'"));
    }
    if let Some(k) = r.header("SERVICE_BUILDER_API_KEY") {
        let invalid = || ApiError::unauthorized("invalid builder API key");
        let k = Uuid::parse_str(k).map_err(|_| invalid())?;
        builders::builder_key_of(s, &k, id, r.header("SERVICE_BUILDER_PASSPHRASE"))?.ok_or_else(invalid)?;
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
    crate::app::orders::check_new_orders(&s)?;
    let key = authenticate(&s, &r)?;
    let sub: Submission = serde_json::from_value(Value::Object(body)).map_err(|_| wire::invalid())?;
    let p = crate::app::orders::place(&s, &key, wire::new_order(sub, s.config.order_version)?, Some(&builder)).await?;
    super::reply(&render::result_json(&p, s.chain.is_none(), s.config.order_version == 2))
}

/// POST /builder/cancel {orderID} or {orderIDs: [...]}: the user's cancel through the
/// builder.
async fn builder_cancel(s: Arc<AppState>, r: Req) -> ApiResult {
    builder_id(&s, &r)?;
    let body = json_object(&r)?;
    crate::app::orders::check_cancels(&s)?;
    let key = authenticate(&s, &r)?;
    let ids: Vec<Uuid> = match (body.get("orderID").or_else(|| body.get("orderId")), body.get("orderIDs")) {
        (Some(Value::String(id)), None) => vec![wire::parse_id(id)?],
        (None, Some(Value::Array(v))) if !v.is_empty() && v.len() <= MAX_CANCEL => v
            .iter()
            .map(|x| x.as_str().ok_or_else(|| ApiError::bad("Invalid orderID")).and_then(wire::parse_id))
            .collect::<Result<_, _>>()?,
        _ => return Err(ApiError::bad("Invalid orderID")),
    };
    render::canceled_json(&s.engine.cancel(key.key, ids).await?)
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
    let rec = builders::load_key(&s.store, &k)?.filter(|x| x.kind == KeyKind::Builder).ok_or_else(invalid)?;
    let t: i64 = ts.parse().map_err(|_| fail())?;
    if (now_secs() as i64 - t).abs() > super::MAX_DRIFT_SECS
        || !crate::auth::ct_eq(pass.as_bytes(), rec.passphrase.as_bytes())
    {
        return Err(fail());
    }
    if !super::signed_with(r, &rec.secret, ts, sig) {
        return Err(fail());
    }
    super::served_once(s, r, &k, sig, ts)?;
    Ok(rec)
}

fn builder_of(rec: &ServiceKey) -> &str {
    rec.builder_id.as_deref().unwrap_or_default()
}

/// GET /data/orders with builder headers: the open orders the builder attributed.
fn builder_orders(s: &AppState, r: &Req) -> ApiResult {
    let rec = authenticate_builder(s, r)?;
    let q = r.query_map();
    let offset = paging::offset(q.get("next_cursor"))?;
    let f = |k: &str| q.get(k).filter(|x| !x.is_empty());
    let items = builders::attributed_orders(s, builder_of(&rec))?
        .into_iter()
        .filter(|o| matches!(o.status, OrderStatus::Live | OrderStatus::Deferred))
        .filter(|o| {
            !(f("id").is_some_and(|x| *x != o.id.to_string())
                || f("market").is_some_and(|x| **x != *o.token.condition_id)
                || f("asset_id").is_some_and(|x| **x != *o.token.token_id))
        })
        .map(|o| render::order_json(&o))
        .collect();
    paging::page(items, offset)
}

/// GET /data/trades with builder headers: the trades of orders the builder attributed.
fn builder_trades(s: &AppState, r: &Req) -> ApiResult {
    let (_, trades, offset) = attributed_trades(s, r)?;
    paging::page(
        trades.into_iter().map(|(t, _, viewer)| render::trade_json(&t, viewer, s.config.order_version == 2)).collect(),
        offset,
    )
}

/// The builder (by its headers) and the trades it attributed that the query keeps (`id`,
/// `market`, `asset_id`), with the page offset (`next_cursor`).
fn attributed_trades(s: &AppState, r: &Req) -> Result<(ServiceKey, Vec<builders::Attributed>, usize), ApiError> {
    let rec = authenticate_builder(s, r)?;
    let q = r.query_map();
    let offset = paging::offset(q.get("next_cursor"))?;
    let f = |k: &str| q.get(k).filter(|x| !x.is_empty());
    let trades = builders::attributed_trades(s, builder_of(&rec))?
        .into_iter()
        .filter(|(t, ..)| {
            !(f("id").is_some_and(|x| *x != t.id.to_string())
                || f("market").is_some_and(|x| **x != *t.token.condition_id)
                || f("asset_id").is_some_and(|x| **x != *t.token.token_id))
        })
        .collect();
    Ok((rec, trades, offset))
}

/// GET /builder/trades (builder headers; `id`, `market`, `asset_id`, `next_cursor`): the
/// trades of the builder's attributed orders, newest first, as the clients' `BuilderTrade`
/// — `size`, `price` and `side` the trade's (its taker's), `sizeUsdc` the collateral of the
/// builder's fills in it, `owner` the API key it is shown as, `fee` the taker's fee in the
/// asset it was charged in (tokens on a BUY, collateral on a SELL) and `feeUsdc` that fee
/// in collateral at the trade's price.
fn builder_trade_rows(s: &AppState, r: &Req) -> ApiResult {
    let (rec, trades, offset) = attributed_trades(s, r)?;
    let builder = builder_of(&rec);
    let items = trades
        .into_iter()
        .map(|(t, notional, viewer)| {
            let fee_usdc = match t.side {
                crate::domain::Side::Buy => t.price.cost(t.taker_fee),
                crate::domain::Side::Sell => t.taker_fee,
            };
            json!({
                "id": t.id.to_string(),
                "tradeType": if viewer == t.owner { "TAKER" } else { "MAKER" },
                "takerOrderHash": t.taker_order_id.to_string(),
                "builder": builder,
                "market": t.token.condition_id,
                "assetId": t.token.token_id,
                "side": t.side.as_str(),
                "size": t.size.fmt(),
                "sizeUsdc": notional.fmt(),
                "price": t.price.short(),
                "status": t.status.as_str(),
                "outcome": t.token.outcome,
                "outcomeIndex": s.registry.condition(&t.token.condition_id).and_then(|v| v.market.outcome_index(&t.token.token_id)).unwrap_or(0),
                "owner": viewer.to_string(),
                "maker": t.maker_address,
                "transactionHash": t.tx_hash(),
                "matchTime": t.match_time.to_string(),
                "bucketIndex": t.bucket_index,
                "fee": t.taker_fee.fmt(),
                "feeUsdc": fee_usdc.fmt(),
                "err_msg": t.error_msg,
                "createdAt": fmt_date(t.match_time),
                "updatedAt": fmt_date(t.last_update),
            })
        })
        .collect();
    paging::page(items, offset)
}

/// GET /builder/volume (builder headers; optional `market`): the builder's attributed
/// orders, trades and volume.
fn builder_volume(s: &AppState, r: &Req) -> ApiResult {
    let rec = authenticate_builder(s, r)?;
    let q = r.query_map();
    let market = q.get("market").map(String::as_str).filter(|x| !x.is_empty());
    let builder = builder_of(&rec);
    let v = builders::volume(s, builder, market)?;
    super::reply(&json!({
        "builderId": builder,
        "orders": v.orders,
        "trades": v.trades,
        "volume": fmt_amount(v.volume),
    }))
}
