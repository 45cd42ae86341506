//! Orders (SPEC §2.2–2.7, §4.2, §5.7, §7.4): submission, cancellation and queries. The
//! payload is parsed here; what an order must satisfy is `app::orders`.

use std::collections::HashMap;
use std::sync::Arc;

use alloy_primitives::{Address, U256};
use base64::Engine;
use serde::Deserialize;
use serde_json::{json, Value};
use uuid::Uuid;
use warp::http::{Method, StatusCode};
use warp::Filter;

use super::{
    authenticate, authenticate_read, handle_now, reply, req, respond, with_state, ApiError, ApiResult, Req, Routes,
};
use crate::app::orders::{self, NewOrder, OrderError, SignedOrder};
use crate::app::AppState;
use crate::auth::SignedOrderFields;
use crate::domain::*;
use crate::engine::Placed;

/// Orders per POST /orders (SPEC §8).
pub const MAX_BATCH: usize = 15;
/// IDs per cancel request.
pub const MAX_CANCEL: usize = 3000;
/// Page size of the paginated envelopes.
pub const PAGE: usize = 100;

/// The trading routes: what market makers send most. The order-book server's front
/// ([`super::front`]) matches these on method and path ahead of warp's filter tree; the
/// tree ([`routes`]) is built from the same table, so a wrong method still gets warp's 405.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trading {
    Place,
    PlaceMany,
    Cancel,
    CancelMany,
    CancelAll,
    CancelMarket,
}

impl Trading {
    pub const ALL: [Trading; 6] = [
        Trading::Place,
        Trading::PlaceMany,
        Trading::Cancel,
        Trading::CancelMany,
        Trading::CancelAll,
        Trading::CancelMarket,
    ];

    /// Its method (POST or DELETE) and path.
    pub fn route(self) -> (Method, &'static str) {
        match self {
            Trading::Place => (Method::POST, "/order"),
            Trading::PlaceMany => (Method::POST, "/orders"),
            Trading::Cancel => (Method::DELETE, "/order"),
            Trading::CancelMany => (Method::DELETE, "/orders"),
            Trading::CancelAll => (Method::DELETE, "/cancel-all"),
            Trading::CancelMarket => (Method::DELETE, "/cancel-market-orders"),
        }
    }

    /// The trading route of a request's method and path, if it is one (an exact match, as
    /// warp's `path!` makes).
    pub fn of(method: &Method, path: &str) -> Option<Trading> {
        Trading::ALL.into_iter().find(|t| {
            let (m, p) = t.route();
            m == method && p == path
        })
    }

    pub async fn handle(self, s: Arc<AppState>, r: Req) -> ApiResult {
        match self {
            Trading::Place => post_order(s, r).await,
            Trading::PlaceMany => post_orders(s, r).await,
            Trading::Cancel => cancel_one(s, r).await,
            Trading::CancelMany => cancel_many(s, r).await,
            Trading::CancelAll => cancel_all(s, r).await,
            Trading::CancelMarket => cancel_market(s, r).await,
        }
    }
}

pub fn routes(state: Arc<AppState>) -> Routes {
    let s = || with_state(state.clone());
    // The trading routes, from their table (boxed: the order-book server's front answers
    // them first, so this is not their hot path).
    let trading = Trading::ALL
        .into_iter()
        .map(|t| {
            let (method, path) = t.route();
            let method = match method {
                Method::POST => warp::post().boxed(),
                _ => warp::delete().boxed(),
            };
            let path = path.strip_prefix('/').expect("trading paths are absolute");
            warp::path(path)
                .and(warp::path::end())
                .and(method)
                .and(req())
                .and(s())
                .then(move |r, s| async move { respond(t.handle(s, r).await) })
                .boxed()
        })
        .reduce(|a, b| a.or(b).unify().boxed())
        .expect("trading routes");
    let list = handle_now(warp::path!("data" / "orders").and(warp::get()), &state, list_orders);
    let one = warp::path!("data" / "order" / String)
        .and(warp::get())
        .and(req())
        .and(s())
        .then(|id, r, s| async move { respond(get_order(s, r, id)) });
    // The L2 trade history, at the path of SPEC §4.2 and at the CLOB's `GET /trades`
    // (§4.9), which serves the same history with the same filters and envelope.
    let trades = warp::path!("data" / "trades")
        .or(warp::path!("trades"))
        .unify()
        .and(warp::get())
        .and(req())
        .and(s())
        .then(|r, s| async move { respond(list_trades(s, r)) });
    trading.or(list).unify().or(one).unify().or(trades).unify().boxed()
}

/// A signed order as sent (SPEC §2.2): every field is required, and one that is missing,
/// `null` or empty is `Invalid order payload` — except `signer`, which may be empty (the
/// maker signs then, §5.7). Numbers may come as strings or as JSON numbers.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WireOrder {
    salt: NumberText,
    maker: String,
    signer: String,
    taker: String,
    token_id: NumberText,
    maker_amount: NumberText,
    taker_amount: NumberText,
    expiration: NumberText,
    nonce: NumberText,
    fee_rate_bps: NumberText,
    side: NumberText,
    signature_type: NumberText,
    pub(crate) signature: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Submission {
    pub(crate) order: WireOrder,
    #[serde(default)]
    owner: Option<String>,
    #[serde(default)]
    order_type: Option<String>,
    #[serde(default)]
    post_only: Option<bool>,
    #[serde(default)]
    defer_exec: Option<bool>,
}

pub(crate) fn invalid() -> ApiError {
    ApiError::bad("Invalid order payload")
}

fn u256(s: &str) -> Result<U256, ApiError> {
    let s = s.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    U256::from_str_radix(s, 10).map_err(|_| invalid())
}

fn u64_of(v: &NumberText) -> Result<u64, ApiError> {
    parse_u64(&v.text()).map_err(|_| invalid())
}

fn addr(s: &str) -> Result<Address, ApiError> {
    s.trim().parse().map_err(|_| invalid())
}

/// Parses what the order's signature covers; any malformed field is `Invalid order payload`.
pub(crate) fn wire_fields(wire: &WireOrder) -> Result<SignedOrder, ApiError> {
    let side = match &wire.side {
        NumberText::Text(t) => Side::parse(t).ok_or_else(invalid)?,
        NumberText::Number(n) => match n.as_u64() {
            Some(0) => Side::Buy,
            Some(1) => Side::Sell,
            _ => return Err(invalid()),
        },
    };
    let sig_type = u64_of(&wire.signature_type)?;
    if sig_type > 2 {
        return Err(invalid());
    }
    let maker = addr(&wire.maker)?;
    let signer = if wire.signer.trim().is_empty() { maker } else { addr(&wire.signer)? };
    let taker = addr(&wire.taker)?;
    let token_text = wire.token_id.text().into_owned();
    let token = u256(&token_text)?;
    let maker_amount = u64_of(&wire.maker_amount)?;
    let taker_amount = u64_of(&wire.taker_amount)?;
    let expiration = u64_of(&wire.expiration)?;
    let nonce = u64_of(&wire.nonce)?;
    let fee_bps = u64_of(&wire.fee_rate_bps)?;
    let salt = u256(&wire.salt.text())?;
    let fields = SignedOrderFields {
        salt,
        maker,
        signer,
        taker,
        token_id: token,
        maker_amount: U256::from(maker_amount),
        taker_amount: U256::from(taker_amount),
        expiration: U256::from(expiration),
        nonce: U256::from(nonce),
        fee_rate_bps: U256::from(fee_bps),
        side: side.as_u8(),
        signature_type: sig_type as u8,
    };
    Ok(SignedOrder { fields, side, sig_type, token_text, maker_amount, taker_amount, expiration, nonce, fee_bps })
}

/// Turns one submission into an order record ready for the engine, or the catalogued error.
/// A submission parsed into what the order services take.
pub(crate) fn new_order(sub: Submission) -> Result<NewOrder, ApiError> {
    let order_type = match sub.order_type.as_deref() {
        None | Some("") => OrderType::Gtc,
        Some(t) => OrderType::parse(&t.to_uppercase()).ok_or_else(invalid)?,
    };
    Ok(NewOrder {
        signed: wire_fields(&sub.order)?,
        signature: sub.order.signature,
        order_type,
        post_only: sub.post_only.unwrap_or(false),
        defer: sub.defer_exec.unwrap_or(false),
        owner: sub.owner,
    })
}

impl From<OrderError> for ApiError {
    fn from(e: OrderError) -> ApiError {
        match e {
            OrderError::Store(e) => e.into(),
            OrderError::Engine(e) => e.into(),
            OrderError::CancelOnly | OrderError::Disabled | OrderError::Chain(_) => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string())
            }
            _ => ApiError::bad(e.to_string()),
        }
    }
}

/// Validates and places one submission.
pub(crate) async fn place(
    s: &AppState,
    key: &ApiKeyRecord,
    sub: Submission,
    builder: Option<&str>,
) -> Result<Placed, ApiError> {
    Ok(orders::place(s, key, new_order(sub)?, builder).await?)
}

/// The reply to one placement, written straight from the result (a `serde_json::Value`
/// cost a map node and a key string per field on the request's worker). Fields in the
/// order a JSON object map writes them (by key), as the replies always were.
#[derive(serde::Serialize)]
pub(crate) struct PlacementJson {
    #[serde(rename = "errorMsg")]
    error_msg: String,
    #[serde(rename = "makingAmount")]
    making_amount: String,
    #[serde(rename = "orderID")]
    order_id: String,
    status: &'static str,
    success: bool,
    #[serde(rename = "takingAmount")]
    taking_amount: String,
    #[serde(rename = "tradeIds")]
    trade_ids: Vec<String>,
    #[serde(rename = "transactionsHashes")]
    transactions_hashes: [&'static str; 0],
}

pub(crate) fn result_json(p: &Placed) -> PlacementJson {
    PlacementJson {
        error_msg: String::new(),
        making_amount: p.making.fmt(),
        order_id: p.order.id.to_string(),
        status: p.order.status.as_str(),
        success: true,
        taking_amount: p.taking.fmt(),
        trade_ids: p.trades.iter().map(|t| t.id.to_string()).collect(),
        transactions_hashes: [],
    }
}

fn rejected_json(msg: &str) -> PlacementJson {
    PlacementJson {
        error_msg: msg.into(),
        making_amount: "0".into(),
        order_id: String::new(),
        status: "CANCELED",
        success: false,
        taking_amount: "0".into(),
        trade_ids: Vec::new(),
        transactions_hashes: [],
    }
}

async fn post_order(s: Arc<AppState>, r: Req) -> ApiResult {
    orders::check_new_orders(&s)?;
    let key = authenticate(&s, &r)?;
    let sub: Submission = serde_json::from_slice(&r.body).map_err(|_| invalid())?;
    let p = place(&s, &key, sub, None).await?;
    reply(&result_json(&p))
}

async fn post_orders(s: Arc<AppState>, r: Req) -> ApiResult {
    orders::check_new_orders(&s)?;
    let key = authenticate(&s, &r)?;
    let items: Vec<Value> = serde_json::from_slice(&r.body).map_err(|_| invalid())?;
    if items.len() > MAX_BATCH {
        return Err(ApiError::bad(format!("Too many orders in payload: {}, max allowed: {MAX_BATCH}", items.len())));
    }
    // One after another, so the engine sees them in input order.
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        out.push(match serde_json::from_value::<Submission>(item) {
            Ok(sub) => match place(&s, &key, sub, None).await {
                Ok(p) => result_json(&p),
                Err(e) => rejected_json(&e.message),
            },
            Err(_) => rejected_json("Invalid order payload"),
        });
    }
    reply(&out)
}

pub(crate) fn canceled_json(c: &crate::engine::Canceled) -> ApiResult {
    let not: HashMap<&str, &str> = c.not_canceled.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    reply(&json!({ "canceled": c.canceled.iter().map(|u| u.to_string()).collect::<Vec<_>>(), "not_canceled": not }))
}

pub(crate) fn parse_id(s: &str) -> Result<Uuid, ApiError> {
    s.trim().parse().map_err(|_| ApiError::bad("Invalid orderID"))
}

async fn cancel_one(s: Arc<AppState>, r: Req) -> ApiResult {
    orders::check_cancels(&s)?;
    let key = authenticate(&s, &r)?;
    let v: Value = serde_json::from_slice(&r.body).map_err(|_| ApiError::bad("Invalid orderID"))?;
    let id = v
        .get("orderID")
        .or_else(|| v.get("orderId"))
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::bad("Invalid orderID"))?;
    let id = parse_id(id)?;
    let _t = s.time_command("cancel");
    canceled_json(&s.engine.cancel(key.key, vec![id]).await?)
}

async fn cancel_many(s: Arc<AppState>, r: Req) -> ApiResult {
    orders::check_cancels(&s)?;
    let key = authenticate(&s, &r)?;
    let v: Vec<String> = serde_json::from_slice(&r.body).map_err(|_| ApiError::bad("Invalid orderID"))?;
    if v.len() > MAX_CANCEL {
        return Err(ApiError::bad(format!("Too many orders in payload, max allowed: {MAX_CANCEL}")));
    }
    let ids = v.iter().map(|x| parse_id(x)).collect::<Result<Vec<_>, _>>()?;
    let _t = s.time_command("cancel");
    canceled_json(&s.engine.cancel(key.key, ids).await?)
}

async fn cancel_all(s: Arc<AppState>, r: Req) -> ApiResult {
    orders::check_cancels(&s)?;
    let key = authenticate(&s, &r)?;
    let _t = s.time_command("cancel");
    canceled_json(&s.engine.cancel_where(key.key, None, None).await?)
}

async fn cancel_market(s: Arc<AppState>, r: Req) -> ApiResult {
    orders::check_cancels(&s)?;
    let key = authenticate(&s, &r)?;
    let v: Value = if r.body.is_empty() {
        json!({})
    } else {
        serde_json::from_slice(&r.body).map_err(|_| ApiError::bad("Invalid payload"))?
    };
    // A filter that is not text must not widen the cancel to every order of the key.
    let obj = v.as_object().ok_or_else(|| ApiError::bad("Invalid payload"))?;
    let pick = |k: &str| match obj.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(x)) => Ok(Some(x.clone()).filter(|x| !x.is_empty())),
        Some(_) => Err(ApiError::bad("Invalid payload")),
    };
    let (market, asset) = (pick("market")?, pick("asset_id")?);
    let _t = s.time_command("cancel");
    canceled_json(&s.engine.cancel_where(key.key, market, asset).await?)
}

/// OpenOrder (SPEC §2.5).
pub fn order_json(o: &OrderRecord) -> Value {
    json!({
        "id": o.id.to_string(),
        "status": o.status.as_str(),
        "owner": o.owner.to_string(),
        "maker_address": o.maker,
        "market": o.token.condition_id,
        "asset_id": o.token.token_id,
        "side": o.side.as_str(),
        "original_size": o.original_size.fmt(),
        "size_matched": o.size_matched.fmt(),
        "price": o.price.short(),
        "outcome": o.token.outcome,
        "expiration": o.expiration.to_string(),
        "order_type": o.order_type.as_str(),
        "associate_trades": o.associate_trades.iter().map(|u| u.to_string()).collect::<Vec<_>>(),
        "created_at": o.created_at,
    })
}

/// Cursors are base64 of the offset: "MA==" is the first page, "LTE=" the end.
pub const END_CURSOR: &str = "LTE=";

pub(crate) fn cursor_offset(q: &HashMap<String, String>) -> Result<usize, ApiError> {
    parse_cursor(q.get("next_cursor").map(String::as_str))
}

/// A cursor of the SPEC §2.6 envelope (base64 of an offset; `LTE=` is the end) as an
/// offset; absent or empty is the start.
pub(crate) fn parse_cursor(cursor: Option<&str>) -> Result<usize, ApiError> {
    match cursor {
        None | Some("") => Ok(0),
        Some(c) => {
            let raw =
                base64::engine::general_purpose::STANDARD.decode(c).map_err(|_| ApiError::bad("Invalid payload"))?;
            let text = String::from_utf8(raw).map_err(|_| ApiError::bad("Invalid payload"))?;
            if text == "-1" {
                return Ok(usize::MAX);
            }
            text.parse().map_err(|_| ApiError::bad("Invalid payload"))
        }
    }
}

/// One page of `items` from `offset`, in the SPEC §2.6 envelope.
pub fn page(items: Vec<Value>, offset: usize) -> ApiResult {
    reply(&envelope(items, offset, PAGE))
}

/// The SPEC §2.6 envelope of `limit` items from `offset`.
pub(crate) fn envelope(items: Vec<Value>, offset: usize, limit: usize) -> Value {
    let start = offset.min(items.len());
    let end = (start + limit).min(items.len());
    let data: Vec<Value> = items[start..end].to_vec();
    let next = if end >= items.len() {
        END_CURSOR.to_string()
    } else {
        base64::engine::general_purpose::STANDARD.encode(end.to_string())
    };
    json!({ "data": data, "next_cursor": next, "limit": limit, "count": data.len() })
}

fn list_orders(s: Arc<AppState>, r: Req) -> ApiResult {
    if super::builders::has_builder_headers(&r) {
        return super::builders::builder_orders(&s, &r);
    }
    let key = authenticate_read(&s, &r)?;
    let q = r.query_map();
    let offset = cursor_offset(&q)?;
    let mut items = Vec::new();
    for o in s.store.open_orders_of(&key.key)? {
        if q.get("id").is_some_and(|x| !x.is_empty() && *x != o.id.to_string())
            || q.get("market").is_some_and(|x| !x.is_empty() && **x != *o.token.condition_id)
            || q.get("asset_id").is_some_and(|x| !x.is_empty() && **x != *o.token.token_id)
        {
            continue;
        }
        items.push(order_json(&o));
    }
    page(items, offset)
}

fn get_order(s: Arc<AppState>, r: Req, id: String) -> ApiResult {
    let key = authenticate_read(&s, &r)?;
    let id = parse_id(&id)?;
    match s.store.get_order(&id)? {
        Some(o) if o.owner == key.key => reply(&order_json(&o)),
        _ => Err(ApiError::not_found("order not found")),
    }
}

/// Trade (SPEC §2.7) as seen by `viewer`.
pub fn trade_json(t: &TradeRecord, viewer: Uuid) -> Value {
    let maker_fee: Amount = t.maker_orders.iter().filter(|m| m.owner == viewer).map(|m| m.fee).sum();
    json!({
        "id": t.id.to_string(),
        "taker_order_id": t.taker_order_id.to_string(),
        "market": t.token.condition_id,
        "asset_id": t.token.token_id,
        "side": t.side.as_str(),
        "size": t.size.fmt(),
        "price": t.price.short(),
        "fee_rate_bps": t.fee_rate_bps.to_string(),
        "status": t.status.as_str(),
        "match_time": t.match_time.to_string(),
        "last_update": t.last_update.to_string(),
        "outcome": t.token.outcome,
        "bucket_index": t.bucket_index,
        "owner": if t.owner == viewer { t.owner.to_string() } else { viewer.to_string() },
        "maker_address": t.maker_address,
        "maker_orders": t.maker_orders.iter().map(|m| json!({
            "order_id": m.order_id.to_string(),
            "owner": m.owner.to_string(),
            "maker_address": m.maker_address,
            "matched_amount": m.matched_amount.fmt(),
            "price": m.price.short(),
            "asset_id": m.token.token_id,
            "outcome": m.token.outcome,
            "side": m.side.as_str(),
            "fee_rate_bps": m.fee_rate_bps.to_string(),
        })).collect::<Vec<_>>(),
        "transaction_hash": t.tx_hash(),
        "trader_side": if t.owner == viewer { "TAKER" } else { "MAKER" },
        "maker_fee": maker_fee.fmt(),
        "taker_fee": t.taker_fee.fmt(),
        "error_msg": t.error_msg,
        "type": match t.match_type { MatchType::Complementary => "COMPLEMENTARY", MatchType::Mint => "MINT", MatchType::Merge => "MERGE" },
    })
}

fn list_trades(s: Arc<AppState>, r: Req) -> ApiResult {
    if super::builders::has_builder_headers(&r) {
        return super::builders::builder_trades(&s, &r);
    }
    let key = authenticate_read(&s, &r)?;
    let q = r.query_map();
    let offset = cursor_offset(&q)?;
    let num = |k: &str| -> Result<Option<u64>, ApiError> {
        match q.get(k).filter(|x| !x.is_empty()) {
            Some(v) => v.parse().map(Some).map_err(|_| ApiError::bad("Invalid payload")),
            None => Ok(None),
        }
    };
    let (before, after) = (num("before")?, num("after")?);
    let mut items = Vec::new();
    for id in s.store.trade_ids_of(&key.key)?.into_iter().rev() {
        let Some(t) = s.store.get_trade(&id)? else { continue };
        let f = |k: &str| q.get(k).filter(|x| !x.is_empty());
        if f("id").is_some_and(|x| *x != t.id.to_string())
            || f("market").is_some_and(|x| **x != *t.token.condition_id)
            || f("asset_id")
                .is_some_and(|x| **x != *t.token.token_id && !t.maker_orders.iter().any(|m| *m.token.token_id == **x))
            || f("maker_address").is_some_and(|x| {
                let x = x.to_lowercase();
                *x != *t.maker_address && !t.maker_orders.iter().any(|m| *m.maker_address == *x)
            })
            || before.is_some_and(|b| t.match_time >= b)
            || after.is_some_and(|a| t.match_time <= a)
        {
            continue;
        }
        items.push(trade_json(&t, key.key));
    }
    page(items, offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A field takes a string or a number, as the untagged enum it replaced did, and
    /// nothing else; a number reads back as `serde_json` writes it.
    #[test]
    fn str_or_num_takes_strings_and_numbers_only() {
        let read = |json: &str| serde_json::from_str::<NumberText>(json).map(|v| v.text().into_owned());
        assert_eq!(read(r#""1234""#).unwrap(), "1234");
        assert_eq!(read(r#""a\"b""#).unwrap(), "a\"b");
        assert_eq!(read("1234").unwrap(), "1234");
        assert_eq!(read("18446744073709551615").unwrap(), u64::MAX.to_string());
        // A number reads as `serde_json::Number` reads it (the old variant's type): past
        // u64 as a float, which no salt or amount parses from.
        for n in ["-7", "1.5", "123456789012345678901234"] {
            assert_eq!(read(n).unwrap(), serde_json::from_str::<serde_json::Number>(n).unwrap().to_string());
        }
        assert_eq!(read("123456789012345678901234").unwrap(), "1.2345678901234567e+23");
        for bad in ["true", "null", "[]", "{}", r#"{"a":1}"#] {
            assert!(read(bad).is_err(), "{bad} was read");
        }
        let o: Option<NumberText> = serde_json::from_str("null").unwrap();
        assert!(o.is_none());
    }

    /// A placement's reply is written byte for byte as the JSON object it replaced.
    #[test]
    fn placement_reply_bytes_as_the_object_map_wrote_them() {
        let placed = PlacementJson {
            error_msg: String::new(),
            making_amount: "1.5".into(),
            order_id: "0b6c3f0e-55f3-4d6b-9c1a-7f35c1e0e6a1".into(),
            status: "MATCHED",
            success: true,
            taking_amount: "3".into(),
            trade_ids: vec!["t1".into(), "t2".into()],
            transactions_hashes: [],
        };
        let before = json!({
            "success": true,
            "orderID": "0b6c3f0e-55f3-4d6b-9c1a-7f35c1e0e6a1",
            "status": "MATCHED",
            "makingAmount": "1.5",
            "takingAmount": "3",
            "transactionsHashes": [],
            "tradeIds": ["t1", "t2"],
            "errorMsg": "",
        });
        assert_eq!(serde_json::to_string(&placed).unwrap(), serde_json::to_string(&before).unwrap());
        let before = json!({
            "success": false,
            "orderID": "",
            "status": "CANCELED",
            "makingAmount": "0",
            "takingAmount": "0",
            "transactionsHashes": [],
            "tradeIds": [],
            "errorMsg": "invalid nonce",
        });
        assert_eq!(
            serde_json::to_string(&rejected_json("invalid nonce")).unwrap(),
            serde_json::to_string(&before).unwrap()
        );
    }
}
