//! Orders (SPEC §2.2–2.7, §4.2, §5.7, §7.4): submission, cancellation and queries.
//!
//! Validation happens here, on the tokio workers (payload, signature recovery, owner,
//! address restrictions, expiration, tick, minimum size, durable duplicates, and the engine
//! handle's claim on the id for duplicates still in flight); the engine then checks what
//! needs its state (an open order with the id, nonce, balance, post-only, FOK, FAK).

use std::collections::HashMap;
use std::sync::Arc;

use alloy_primitives::{Address, U256};
use base64::Engine;
use serde::Deserialize;
use serde_json::{json, Value};
use uuid::Uuid;
use warp::http::{Method, StatusCode};
use warp::Filter;

use super::{authenticate, reply, req, respond, with_state, ApiError, ApiResult, Req, Routes};
use crate::app::AppState;
use crate::auth::{self, SignedOrderFields};
use crate::domain::*;
use crate::engine::{EngineError, Placed, Reject};

/// Orders per POST /orders (SPEC §8).
pub const MAX_BATCH: usize = 15;
/// IDs per cancel request.
pub const MAX_CANCEL: usize = 3000;
/// Page size of the paginated envelopes.
pub const PAGE: usize = 100;
/// Highest fee rate a signed order may carry (the exchange contract's limit).
pub const MAX_FEE_BPS: u64 = 1000;

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
    let s = move || with_state(state.clone());
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
    let list = warp::path!("data" / "orders")
        .and(warp::get())
        .and(req())
        .and(s())
        .then(|r, s| async move { respond(list_orders(s, r)) });
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

fn unavailable(msg: &str) -> ApiError {
    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, msg)
}

/// New orders are refused outside normal mode (SPEC §1.5).
pub(crate) fn check_new_orders(s: &AppState) -> Result<(), ApiError> {
    match s.mode() {
        Mode::Normal => Ok(()),
        Mode::CancelOnly => Err(unavailable("trading is in cancel-only mode: new orders are not accepted")),
        Mode::TradingDisabled => Err(unavailable("trading is disabled")),
    }
}

pub(crate) fn check_cancels(s: &AppState) -> Result<(), ApiError> {
    match s.mode() {
        Mode::TradingDisabled => Err(unavailable("trading is disabled")),
        _ => Ok(()),
    }
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

/// Whether `text` is `a` as `format!("{a:#x}")` writes it, without writing it on the heap.
fn is_lower_hex(a: &Address, text: &str) -> bool {
    let mut buf = [0u8; 42];
    buf[..2].copy_from_slice(b"0x");
    alloy_primitives::hex::encode_to_slice(a, &mut buf[2..]).expect("20 bytes fill 40 digits");
    buf == text.as_bytes()
}

/// The zero address as orders carry it (`taker` of an order open to anyone).
fn zero_address() -> Arc<str> {
    static ZERO: std::sync::LazyLock<Arc<str>> = std::sync::LazyLock::new(|| format!("{:#x}", Address::ZERO).into());
    ZERO.clone()
}

fn addr(s: &str) -> Result<Address, ApiError> {
    s.trim().parse().map_err(|_| invalid())
}

/// The signed fields of a wire order, and the plain numbers validation goes on with.
pub(crate) struct WireFields {
    pub fields: SignedOrderFields,
    pub side: Side,
    pub sig_type: u64,
    pub token_text: String,
    pub maker_amount: u64,
    pub taker_amount: u64,
    pub expiration: u64,
    pub nonce: u64,
    pub fee_bps: u64,
}

/// Parses what the order's signature covers; any malformed field is `Invalid order payload`.
pub(crate) fn wire_fields(w: &WireOrder) -> Result<WireFields, ApiError> {
    let side = match &w.side {
        NumberText::Text(t) => Side::parse(t).ok_or_else(invalid)?,
        NumberText::Number(n) => match n.as_u64() {
            Some(0) => Side::Buy,
            Some(1) => Side::Sell,
            _ => return Err(invalid()),
        },
    };
    let sig_type = u64_of(&w.signature_type)?;
    if sig_type > 2 {
        return Err(invalid());
    }
    let maker = addr(&w.maker)?;
    let signer = if w.signer.trim().is_empty() { maker } else { addr(&w.signer)? };
    let taker = addr(&w.taker)?;
    let token_text = w.token_id.text().into_owned();
    let token = u256(&token_text)?;
    let maker_amount = u64_of(&w.maker_amount)?;
    let taker_amount = u64_of(&w.taker_amount)?;
    let expiration = u64_of(&w.expiration)?;
    let nonce = u64_of(&w.nonce)?;
    let fee_bps = u64_of(&w.fee_rate_bps)?;
    let salt = u256(&w.salt.text())?;
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
    Ok(WireFields { fields, side, sig_type, token_text, maker_amount, taker_amount, expiration, nonce, fee_bps })
}

/// Turns one submission into an order record ready for the engine, or the catalogued error.
fn validate(s: &AppState, key: &ApiKeyRecord, sub: Submission) -> Result<(OrderRecord, bool), ApiError> {
    let w = sub.order;
    let order_type = match sub.order_type.as_deref() {
        None | Some("") => OrderType::Gtc,
        Some(t) => OrderType::parse(&t.to_uppercase()).ok_or_else(invalid)?,
    };
    let post_only = sub.post_only.unwrap_or(false);
    let defer = sub.defer_exec.unwrap_or(false);
    if post_only && !order_type.rests() {
        return Err(invalid());
    }
    let WireFields { fields, side, sig_type, token_text, maker_amount, taker_amount, expiration, nonce, fee_bps } =
        wire_fields(&w)?;
    let (maker, signer) = (fields.maker, fields.signer);
    if maker_amount == 0 || taker_amount == 0 || fee_bps > MAX_FEE_BPS {
        return Err(invalid());
    }
    if let Some(owner) = sub.owner.as_deref().filter(|o| !o.is_empty()) {
        if owner.parse::<Uuid>().ok() != Some(key.key) {
            return Err(ApiError::bad("the order owner has to be the owner of the API KEY"));
        }
    }
    let (view, outcome) = s.registry.token(&token_text).ok_or_else(|| ApiError::bad("Invalid token id"))?;
    let market = &view.market;

    // Signature (SPEC §5.7): recovered signer must equal `signer`.
    let domain = if market.neg_risk { &s.domains.neg_risk } else { &s.domains.standard };
    let (hash, recovered) = auth::recover_order_signer(&fields, domain, &w.signature);
    if recovered != Some(signer) {
        return Err(ApiError::bad("invalid signature"));
    }
    if !is_lower_hex(&signer, &key.address) || (sig_type == 0 && maker != signer) {
        return Err(ApiError::bad("the order owner has to be the owner of the API KEY"));
    }
    let signer_s = key.address.clone();
    let maker_s = maker_string(key, maker, signer);
    for a in [&maker_s, &signer_s] {
        match s.address_status(a) {
            AddressStatus::Banned => return Err(ApiError::bad(format!("'{a}' address banned"))),
            AddressStatus::ClosedOnly if side == Side::Buy => {
                return Err(ApiError::bad(format!("'{a}' address in closed only mode")));
            }
            _ => {}
        }
    }
    // The order ID is derived from the EIP-712 hash, so a resubmitted order is recognised.
    let id = auth::order_id(&hash);
    let now = now_secs();
    if (expiration != 0 && expiration <= now) || (order_type == OrderType::Gtd && expiration == 0) {
        return Err(ApiError::bad("invalid expiration"));
    }
    // Price of the order's own token: BUY maker/taker, SELL taker/maker. Rounded against the
    // order (never better than signed) when it is not exact.
    let (price, exact, size) = match side {
        Side::Buy => {
            let num = maker_amount as u128 * PRICE_ONE as u128;
            ((num / taker_amount as u128) as u64, num.is_multiple_of(taker_amount as u128), taker_amount)
        }
        Side::Sell => {
            let num = taker_amount as u128 * PRICE_ONE as u128;
            (num.div_ceil(maker_amount as u128) as u64, num.is_multiple_of(maker_amount as u128), maker_amount)
        }
    };
    let tick = view.tick();
    let on_tick = exact && price % tick as u64 == 0;
    let in_range = price > 0 && price < PRICE_ONE as u64;
    if !in_range || (order_type.rests() && !on_tick) {
        let shown = if price > PRICE_ONE as u64 {
            format!("{}", maker_amount as f64 / taker_amount as f64)
        } else {
            fmt_price(price as u32)
        };
        return Err(ApiError::bad(format!(
            "order {id} is invalid. Price ({shown}) breaks minimum tick size rule: {}",
            fmt_tick(tick)
        )));
    }
    if order_type.rests() && size < market.min_order_size {
        return Err(ApiError::bad(format!(
            "order {id} is invalid. Size ({}) lower than the minimum: {}",
            fmt_amount(size),
            fmt_amount(market.min_order_size)
        )));
    }
    if s.store.get_order(&id)?.is_some() {
        return Err(ApiError::bad(format!("order {id} is invalid. Duplicated.")));
    }
    let salt_u64: u64 = fields.salt.try_into().unwrap_or(u64::MAX);
    Ok((
        OrderRecord {
            id,
            seq: 0,
            status: OrderStatus::Live,
            owner: key.key,
            maker: maker_s,
            signer: signer_s,
            // Nearly every order is open to anyone: one shared string for them.
            taker: if fields.taker == Address::ZERO { zero_address() } else { format!("{:#x}", fields.taker).into() },
            token: view.order_token(outcome),
            side,
            price: price as u32,
            original_size: size,
            size_matched: 0,
            maker_amount,
            taker_amount,
            fee_rate_bps: fee_bps as u32,
            expiration,
            nonce,
            salt: salt_u64,
            signature_type: sig_type as u8,
            signature: w.signature.into(),
            order_type,
            post_only,
            reserved: 0,
            associate_trades: Default::default(),
            created_at: now,
        },
        defer,
    ))
}

fn reject_message(r: &Reject, id: Uuid) -> String {
    match r {
        Reject::UnknownMarket => "Invalid token id".into(),
        Reject::Duplicated => format!("order {id} is invalid. Duplicated."),
        Reject::InvalidNonce => "invalid nonce".into(),
        Reject::NotEnoughBalance => "not enough balance / allowance".into(),
        Reject::PostOnlyCrosses => "invalid post-only order: order crosses book".into(),
        Reject::FokNotFilled => "order couldn't be fully filled. FOK orders are fully filled or killed.".into(),
        Reject::FakNoMatch => "no orders found to match with FAK order.".into(),
        Reject::NotOwner => "the order owner has to be the owner of the API KEY".into(),
        Reject::MarketClosed => "market is not accepting orders".into(),
    }
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
        making_amount: fmt_amount(p.making),
        order_id: p.order.id.to_string(),
        status: p.order.status.as_str(),
        success: true,
        taking_amount: fmt_amount(p.taking),
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

/// Validates and places one submission.
async fn place(s: &AppState, key: &ApiKeyRecord, sub: Submission) -> Result<Placed, ApiError> {
    place_attributed(s, key, sub, None).await
}

/// Validates and places one submission, attributed to a builder when one is named (the
/// attribution is written in the order's own batch).
pub(crate) async fn place_attributed(
    s: &AppState,
    key: &ApiKeyRecord,
    sub: Submission,
    builder: Option<&str>,
) -> Result<Placed, ApiError> {
    let (order, defer) = validate(s, key, sub)?;
    let id = order.id;
    let records = builder.map(|b| crate::app::builders::attribution(b, &order)).unwrap_or_default();
    let _t = s.time_command("place");
    match s.engine.place_with(order, defer, records).await {
        Ok(p) => Ok(p),
        Err(EngineError::Rejected(r)) => Err(ApiError::bad(reject_message(&r, id))),
        Err(e) => Err(e.into()),
    }
}

async fn post_order(s: Arc<AppState>, r: Req) -> ApiResult {
    check_new_orders(&s)?;
    let key = authenticate(&s, &r)?;
    let sub: Submission = serde_json::from_slice(&r.body).map_err(|_| invalid())?;
    let p = place(&s, &key, sub).await?;
    reply(&result_json(&p))
}

async fn post_orders(s: Arc<AppState>, r: Req) -> ApiResult {
    check_new_orders(&s)?;
    let key = authenticate(&s, &r)?;
    let items: Vec<Value> = serde_json::from_slice(&r.body).map_err(|_| invalid())?;
    if items.len() > MAX_BATCH {
        return Err(ApiError::bad(format!("Too many orders in payload: {}, max allowed: {MAX_BATCH}", items.len())));
    }
    // One after another, so the engine sees them in input order.
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        out.push(match serde_json::from_value::<Submission>(item) {
            Ok(sub) => match place(&s, &key, sub).await {
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
    check_cancels(&s)?;
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
    check_cancels(&s)?;
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
    check_cancels(&s)?;
    let key = authenticate(&s, &r)?;
    let _t = s.time_command("cancel");
    canceled_json(&s.engine.cancel_where(key.key, None, None).await?)
}

async fn cancel_market(s: Arc<AppState>, r: Req) -> ApiResult {
    check_cancels(&s)?;
    let key = authenticate(&s, &r)?;
    let v: Value = if r.body.is_empty() {
        json!({})
    } else {
        serde_json::from_slice(&r.body).map_err(|_| ApiError::bad("Invalid payload"))?
    };
    let pick = |k: &str| v.get(k).and_then(Value::as_str).filter(|x| !x.is_empty()).map(str::to_string);
    let _t = s.time_command("cancel");
    canceled_json(&s.engine.cancel_where(key.key, pick("market"), pick("asset_id")).await?)
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
        "original_size": fmt_amount(o.original_size),
        "size_matched": fmt_amount(o.size_matched),
        "price": fmt_price(o.price),
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
    match q.get("next_cursor").map(String::as_str) {
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
    let start = offset.min(items.len());
    let end = (start + PAGE).min(items.len());
    let data: Vec<Value> = items[start..end].to_vec();
    let next = if end >= items.len() {
        END_CURSOR.to_string()
    } else {
        base64::engine::general_purpose::STANDARD.encode(end.to_string())
    };
    reply(&json!({ "data": data, "next_cursor": next, "limit": PAGE, "count": data.len() }))
}

fn list_orders(s: Arc<AppState>, r: Req) -> ApiResult {
    if super::builders::has_builder_headers(&r) {
        return super::builders::builder_orders(&s, &r);
    }
    let key = authenticate(&s, &r)?;
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
    let key = authenticate(&s, &r)?;
    let id = parse_id(&id)?;
    match s.store.get_order(&id)? {
        Some(o) if o.owner == key.key => reply(&order_json(&o)),
        _ => Err(ApiError::not_found("order not found")),
    }
}

/// Trade (SPEC §2.7) as seen by `viewer`.
pub fn trade_json(t: &TradeRecord, viewer: Uuid) -> Value {
    let maker_fee: u64 = t.maker_orders.iter().filter(|m| m.owner == viewer).map(|m| m.fee).sum();
    json!({
        "id": t.id.to_string(),
        "taker_order_id": t.taker_order_id.to_string(),
        "market": t.token.condition_id,
        "asset_id": t.token.token_id,
        "side": t.side.as_str(),
        "size": fmt_amount(t.size),
        "price": fmt_price(t.price),
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
            "matched_amount": fmt_amount(m.matched_amount),
            "price": fmt_price(m.price),
            "asset_id": m.token.token_id,
            "outcome": m.token.outcome,
            "side": m.side.as_str(),
            "fee_rate_bps": m.fee_rate_bps.to_string(),
        })).collect::<Vec<_>>(),
        "transaction_hash": t.tx_hash(),
        "trader_side": if t.owner == viewer { "TAKER" } else { "MAKER" },
        "maker_fee": fmt_amount(maker_fee),
        "taker_fee": fmt_amount(t.taker_fee),
        "error_msg": t.error_msg,
        "type": match t.match_type { MatchType::Complementary => "COMPLEMENTARY", MatchType::Mint => "MINT", MatchType::Merge => "MERGE" },
    })
}

fn list_trades(s: Arc<AppState>, r: Req) -> ApiResult {
    if super::builders::has_builder_headers(&r) {
        return super::builders::builder_trades(&s, &r);
    }
    let key = authenticate(&s, &r)?;
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

/// The string an order's record holds as its maker, shared rather than copied: the
/// matching thread finds a maker's accounts, nonce and proxy binding by the string's
/// address (`engine::core`'s memos). The key's own wallet is the key's string (`signer` is the key's address,
/// checked before); a proxy wallet's is formatted the first time one of the key's orders
/// names it and shared by every later one. A key whose orders name a second proxy wallet
/// gets that one's string formatted each time: correct, only without the memos.
fn maker_string(key: &ApiKeyRecord, maker: Address, signer: Address) -> Arc<str> {
    if maker == signer {
        return key.address.clone();
    }
    let text = || -> Arc<str> { format!("{maker:#x}").into() };
    let (bytes, s) = key.proxy.get_or_init(|| (maker.into_array(), text()));
    if *bytes == maker.into_array() {
        s.clone()
    } else {
        text()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A proxy wallet's string is made once per key and shared; the key's own wallet is
    /// the key's string; a second proxy wallet still reads as itself.
    #[test]
    fn a_keys_proxy_wallet_string_is_shared_by_its_orders() {
        let signer: Address = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed".parse().unwrap();
        let proxy: Address = "0x00000000000000000000000000000000000000aB".parse().unwrap();
        let other: Address = "0x00000000000000000000000000000000000000cD".parse().unwrap();
        let key = ApiKeyRecord {
            key: Uuid::from_u128(7),
            secret: String::new(),
            passphrase: String::new(),
            address: format!("{signer:#x}").into(),
            nonce: 0,
            created_at: 0,
            proxy: Default::default(),
        };
        let own = maker_string(&key, signer, signer);
        assert!(Arc::ptr_eq(&own, &key.address));
        let first = maker_string(&key, proxy, signer);
        assert_eq!(&*first, "0x00000000000000000000000000000000000000ab");
        assert!(Arc::ptr_eq(&first, &maker_string(&key, proxy, signer)));
        let second = maker_string(&key, other, signer);
        assert_eq!(&*second, "0x00000000000000000000000000000000000000cd");
        assert!(Arc::ptr_eq(&first, &maker_string(&key, proxy, signer)));
        // A record read back from the store starts without one.
        let stored = crate::store::encode(&key);
        let back: ApiKeyRecord = crate::store::Store::decode_value("api_keys", &stored).unwrap();
        assert!(back.proxy.get().is_none() && key.proxy.get().is_some());
    }

    /// The signer check compares with the exact text `format!("{:#x}")` writes: lowercase,
    /// `0x`, 40 digits; a checksummed or otherwise different spelling is not it.
    #[test]
    fn lower_hex_compare_is_the_formatted_text() {
        let a: Address = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed".parse().unwrap();
        assert!(is_lower_hex(&a, &format!("{a:#x}")));
        assert!(is_lower_hex(&a, "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed"));
        assert!(!is_lower_hex(&a, "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"));
        assert!(!is_lower_hex(&a, "5aaeb6053f3e94c9b9a09f33669435e7ef1beaed"));
        assert!(!is_lower_hex(&a, "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beae"));
        assert!(!is_lower_hex(&a, "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed0"));
        assert!(!is_lower_hex(&Address::ZERO, "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed"));
        assert_eq!(&*zero_address(), format!("{:#x}", Address::ZERO));
        assert!(Arc::ptr_eq(&zero_address(), &zero_address()));
    }

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
