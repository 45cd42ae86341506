//! Order book and prices (SPEC §2.8–2.10, §4.3, §7.3): served from the snapshots the
//! engine publishes, so a reader never waits on a match. The NO token's book is the
//! mirror of the market's YES book.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{json, Value};
use warp::Filter;

use super::{paging, render};
use super::{reply, req, respond, with_state, ApiError, ApiResult, Req, Routes};
use crate::app::AppState;
use crate::commit::views::{BookSnapshot, MarketView};
use crate::domain::*;

/// Token IDs per batch request.
pub const MAX_TOKENS: usize = 500;

pub fn routes(state: Arc<AppState>) -> Routes {
    let s = move || with_state(state.clone());
    macro_rules! get {
        ($path:literal, $f:ident) => {
            warp::path($path)
                .and(warp::path::end())
                .and(warp::get())
                .and(req())
                .and(s())
                .then(|r, s| async move { respond($f(s, r)) })
        };
    }
    macro_rules! post {
        ($path:literal, $f:ident) => {
            warp::path($path)
                .and(warp::path::end())
                .and(warp::post())
                .and(req())
                .and(s())
                .then(|r, s| async move { respond($f(s, r)) })
        };
    }
    // Two boxed groups: a warp `or` chain's type nests with every route, and the compile
    // time of a long chain grows much faster than its length.
    let prices = get!("book", get_book)
        .or(post!("books", post_books))
        .unify()
        .or(get!("price", get_price))
        .unify()
        .or(post!("prices", post_prices))
        .unify()
        .or(get!("midpoint", get_midpoint))
        .unify()
        .or(post!("midpoints", post_midpoints))
        .unify()
        .or(get!("spread", get_spread))
        .unify()
        .or(post!("spreads", post_spreads))
        .unify()
        .or(get!("last-trade-price", get_last))
        .unify()
        .or(post!("last-trades-prices", post_lasts))
        .unify()
        .or(get!("tick-size", get_tick))
        .unify()
        .or(get!("neg-risk", get_neg_risk))
        .unify()
        .or(get!("fee-rate", get_fee_rate))
        .unify()
        .boxed();
    let markets = get!("market", get_market)
        .or(get!("simplified-markets", simplified))
        .unify()
        .or(get!("sampling-simplified-markets", sampling_simplified))
        .unify()
        .or(get!("markets", markets))
        .unify()
        .or(get!("sampling-markets", sampling_markets))
        .unify()
        .or(warp::path!("markets" / String)
            .and(warp::get())
            .and(s())
            .map(|id: String, s: Arc<AppState>| respond(market_by_path(&s, &id))))
        .unify()
        .or(warp::path!("clob-markets" / String)
            .and(warp::get())
            .and(s())
            .map(|id: String, s: Arc<AppState>| respond(clob_market(&s, &id))))
        .unify()
        .or(warp::path!("markets-by-token" / String)
            .and(warp::get())
            .and(s())
            .map(|token: String, s: Arc<AppState>| respond(market_by_token(&s, &token))))
        .unify()
        .or(warp::path!("fees" / "builder-fees" / String)
            .and(warp::get())
            .and(s())
            .map(|code: String, s: Arc<AppState>| respond(builder_fees(&s, &code))))
        .unify()
        .boxed();
    prices.or(markets).unify().boxed()
}

pub(crate) type Found = (Arc<MarketView>, u8, Arc<BookSnapshot>);

fn lookup(s: &AppState, token: Option<&str>) -> Result<Found, ApiError> {
    let token = token
        .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| ApiError::bad("Invalid token id"))?;
    let (view, outcome) =
        s.registry.token(token).ok_or_else(|| ApiError::not_found("No orderbook exists for the requested token id"))?;
    let snap = view.snapshot();
    Ok((view, outcome, snap))
}

fn token_param(r: &Req) -> Option<String> {
    r.query_map().get("token_id").cloned()
}

#[derive(Deserialize)]
struct TokenReq {
    token_id: String,
    #[serde(default)]
    side: Option<String>,
}

fn batch(r: &Req) -> Result<Vec<TokenReq>, ApiError> {
    let v: Vec<TokenReq> = serde_json::from_slice(&r.body).map_err(|_| ApiError::bad("Invalid payload"))?;
    if v.len() > MAX_TOKENS {
        return Err(ApiError::bad("Payload exceeds the limit"));
    }
    Ok(v)
}

fn levels(v: &[(Price, Amount)]) -> Vec<Value> {
    v.iter().map(|&(p, s)| json!({ "price": p.short(), "size": s.fmt() })).collect()
}

/// A book summary's fields in the order Polymarket's server hashes them (its struct's
/// order), which the official clients reproduce (`generate_orderbook_summary_hash`).
#[derive(serde::Serialize)]
pub(crate) struct Summary<'a> {
    market: &'a str,
    asset_id: &'a str,
    timestamp: String,
    hash: String,
    bids: Vec<Value>,
    asks: Vec<Value>,
    min_order_size: Value,
    tick_size: String,
    neg_risk: bool,
    last_trade_price: String,
}

/// Book summary (SPEC §2.8). As on the live service, bids are listed ascending and asks
/// descending, so the best level of each is last. `hash` is the SHA-1 (hex) of the
/// summary's compact JSON with `hash` empty, as Polymarket computes it, so a client checks
/// the book it holds against it. Sent as this struct, so its fields keep that order on the
/// wire too: the TypeScript client hashes the object it received as it received it.
/// On a version 2 venue (`v2`) `min_order_size` is a decimal string, as Polymarket's CLOB
/// answers it and the unified SDK reads it (docs/reference/order-versions.md).
pub(crate) fn summary(f: &Found, v2: bool) -> Summary<'_> {
    let (view, outcome, snap) = f;
    let m = &view.market;
    let (mut bids, mut asks) = snap.view(*outcome);
    bids.reverse();
    asks.reverse();
    let mut s = Summary {
        market: &m.condition_id,
        asset_id: &m.tokens[*outcome as usize].token_id,
        timestamp: snap.timestamp_ms.to_string(),
        hash: String::new(),
        bids: levels(&bids),
        asks: levels(&asks),
        min_order_size: if v2 { Value::String(m.min_order_size.fmt()) } else { min_size_number(m.min_order_size) },
        tick_size: view.tick().short(),
        neg_risk: m.neg_risk,
        last_trade_price: snap.last_trade(*outcome).map_or(Price::ZERO, |x| x.0).fixed(),
    };
    let compact = serde_json::to_vec(&s).expect("a summary serializes");
    s.hash = alloy_primitives::hex::encode(<sha1::Sha1 as sha1::Digest>::digest(&compact));
    s
}

fn min_size_number(v: Amount) -> Value {
    serde_json::from_str(&v.fmt()).unwrap_or(Value::Null)
}

fn get_book(s: Arc<AppState>, r: Req) -> ApiResult {
    reply(&summary(&lookup(&s, token_param(&r).as_deref())?, s.config.order_version == 2))
}

fn post_books(s: Arc<AppState>, r: Req) -> ApiResult {
    let v = batch(&r)?;
    let found = v.iter().map(|t| lookup(&s, Some(&t.token_id))).collect::<Result<Vec<_>, _>>()?;
    let v2 = s.config.order_version == 2;
    reply(&found.iter().map(|f| summary(f, v2)).collect::<Vec<_>>())
}

fn side_param(s: Option<&str>) -> Result<Side, ApiError> {
    s.map(str::to_uppercase).as_deref().and_then(Side::parse).ok_or_else(|| ApiError::bad("Invalid side"))
}

/// BUY gives the best bid, SELL the best ask; "0" when that side is empty (the shortest decimal, as Polymarket sends it).
fn price_of(f: &Found, side: Side) -> String {
    let (b, a) = f.2.best(f.1);
    match side {
        Side::Buy => b,
        Side::Sell => a,
    }
    .unwrap_or(Price::ZERO)
    .short()
}

fn get_price(s: Arc<AppState>, r: Req) -> ApiResult {
    let q = r.query_map();
    let f = lookup(&s, q.get("token_id").map(String::as_str))?;
    let side = side_param(q.get("side").map(String::as_str))?;
    reply(&json!({ "price": price_of(&f, side) }))
}

fn post_prices(s: Arc<AppState>, r: Req) -> ApiResult {
    let v = batch(&r)?;
    let mut out: HashMap<String, HashMap<&str, String>> = HashMap::new();
    for t in &v {
        let f = lookup(&s, Some(&t.token_id))?;
        let e = out.entry(t.token_id.clone()).or_default();
        match t.side.as_deref() {
            Some(x) => {
                let side = side_param(Some(x))?;
                e.insert(side.as_str(), price_of(&f, side));
            }
            None => {
                e.insert("BUY", price_of(&f, Side::Buy));
                e.insert("SELL", price_of(&f, Side::Sell));
            }
        }
    }
    reply(&out)
}

/// Midpoint of best bid and ask, rounded half up to 1e-4; "0.0000" with a side empty.
fn mid(f: &Found) -> String {
    match f.2.best(f.1) {
        (Some(b), Some(a)) => Price::midpoint(b, a).fixed(),
        _ => Price::ZERO.fixed(),
    }
}

fn spread(f: &Found) -> String {
    match f.2.best(f.1) {
        (Some(b), Some(a)) => a.above(b).fixed(),
        _ => Price::ZERO.fixed(),
    }
}

fn get_midpoint(s: Arc<AppState>, r: Req) -> ApiResult {
    reply(&json!({ "mid": mid(&lookup(&s, token_param(&r).as_deref())?) }))
}

fn post_midpoints(s: Arc<AppState>, r: Req) -> ApiResult {
    let mut out = HashMap::new();
    for t in batch(&r)? {
        out.insert(t.token_id.clone(), mid(&lookup(&s, Some(&t.token_id))?));
    }
    reply(&out)
}

fn get_spread(s: Arc<AppState>, r: Req) -> ApiResult {
    reply(&json!({ "spread": spread(&lookup(&s, token_param(&r).as_deref())?) }))
}

fn post_spreads(s: Arc<AppState>, r: Req) -> ApiResult {
    let mut out = HashMap::new();
    for t in batch(&r)? {
        out.insert(t.token_id.clone(), spread(&lookup(&s, Some(&t.token_id))?));
    }
    reply(&json!({ "spreads": out }))
}

fn get_last(s: Arc<AppState>, r: Req) -> ApiResult {
    let f = lookup(&s, token_param(&r).as_deref())?;
    let (p, side) = f.2.last_trade(f.1).unwrap_or((Price::ZERO, Side::Buy));
    reply(&json!({ "price": p.fixed(), "side": side.as_str() }))
}

fn post_lasts(s: Arc<AppState>, r: Req) -> ApiResult {
    let mut out = Vec::new();
    for t in batch(&r)? {
        let f = lookup(&s, Some(&t.token_id))?;
        let p = f.2.last_trade(f.1).map_or(Price::ZERO, |x| x.0);
        out.push(json!({ "token_id": t.token_id, "price": p.fixed(), "side": "BUY" }));
    }
    reply(&out)
}

fn get_tick(s: Arc<AppState>, r: Req) -> ApiResult {
    let f = lookup(&s, token_param(&r).as_deref())?;
    let tick: Value = serde_json::from_str(&f.0.tick().short()).unwrap_or(Value::Null);
    reply(&json!({ "minimum_tick_size": tick }))
}

fn get_neg_risk(s: Arc<AppState>, r: Req) -> ApiResult {
    let f = lookup(&s, token_param(&r).as_deref())?;
    reply(&json!({ "neg_risk": f.0.market.neg_risk }))
}

fn get_fee_rate(s: Arc<AppState>, r: Req) -> ApiResult {
    lookup(&s, token_param(&r).as_deref())?;
    reply(&json!({ "base_fee": 0 }))
}

/// A market's reward program as SPEC §2.10 shows it (empty without one).
fn rewards_of(s: &AppState, condition_id: &str) -> Value {
    super::rewards::rewards_json(s.rewards.programs.read().get(condition_id))
}

/// A market as Polymarket's CLOB lists it (`GET /markets`, `/markets/{condition_id}`,
/// `/sampling-markets`, `GET /market`): the book's settings, its state, its reward
/// program, the catalogue's description and pictures, and each token's price (a number,
/// as Polymarket sends it) and whether it won.
fn market_json(s: &AppState, view: &MarketView) -> Value {
    let m = &view.market;
    let meta = s.catalogue.meta(&m.condition_id);
    let meta = meta.as_deref();
    let closed = crate::app::resolution::is_closed(s, view);
    let winner = meta.and_then(|x| x.resolved_outcome);
    let tokens: Vec<Value> = render::token_numbers(view)
        .into_iter()
        .enumerate()
        .map(|(i, mut t)| {
            t["winner"] = json!(winner == Some(i as u8));
            t
        })
        .collect();
    let text = |f: fn(&crate::app::catalogue::MarketMeta) -> &String| meta.map_or("", |x| f(x).as_str()).to_string();
    json!({
        "enable_order_book": true,
        "active": m.active,
        "closed": closed,
        "archived": false,
        "accepting_orders": m.accepting_orders && !closed,
        "accepting_order_timestamp": Value::Null,
        "minimum_order_size": min_size_number(m.min_order_size),
        "minimum_tick_size": serde_json::from_str::<Value>(&view.tick().short()).unwrap_or(Value::Null),
        "condition_id": m.condition_id,
        "question_id": "",
        "question": m.question,
        "description": text(|x| &x.description),
        "market_slug": m.slug,
        "end_date_iso": meta.and_then(|x| x.end_date).map(crate::domain::fmt_date),
        "game_start_time": Value::Null,
        "seconds_delay": 0,
        "fpmm": "",
        "maker_base_fee": 0,
        "taker_base_fee": 0,
        "notifications_enabled": true,
        "neg_risk": m.neg_risk,
        "neg_risk_market_id": m.neg_risk_market_id.clone().unwrap_or_default(),
        "neg_risk_request_id": "",
        "icon": text(|x| &x.icon),
        "image": text(|x| &x.image),
        "rewards": rewards_of(s, &m.condition_id),
        "is_50_50_outcome": false,
        "tokens": tokens,
        "tags": [],
    })
}

fn get_market(s: Arc<AppState>, r: Req) -> ApiResult {
    let q = r.query_map();
    let id = q
        .get("condition_id")
        .or_else(|| q.get("market"))
        .filter(|x| !x.is_empty())
        .ok_or_else(|| ApiError::bad("Invalid payload"))?;
    let view = s.registry.condition(id).ok_or_else(|| ApiError::not_found("market not found"))?;
    reply(&market_json(&s, &view))
}

/// GET /markets-by-token/{token_id}: the token's market and both its tokens, YES first (the
/// V2 clients' lookup before a market order).
fn market_by_token(s: &AppState, token: &str) -> ApiResult {
    let (view, _, _) = lookup(s, Some(token))?;
    let m = &view.market;
    reply(&json!({
        "condition_id": m.condition_id,
        "primary_token_id": m.tokens[0].token_id,
        "secondary_token_id": m.tokens[1].token_id,
    }))
}

/// GET /clob-markets/{condition_id}: what the V2 clients read before they sign, under
/// Polymarket's short keys — the condition (`c`), its tokens (`t`: id `t`, outcome `o`),
/// tick (`mts`) and minimum size (`mos`) as numbers, negative risk (`nr`), the legacy base
/// fees (`mbf`, `tbf`: 0, as `/markets` has them), accepting orders (`ao`), the seconds'
/// delay (`sd`) and RFQ (`rfqe`: every book takes requests for quotes). The fee description
/// (`fd`) the operator set for version 2 takers is there when there is one; version 1
/// orders sign their fee rate instead.
fn clob_market(s: &AppState, id: &str) -> ApiResult {
    let view = s.registry.condition(id).ok_or_else(|| ApiError::not_found("market not found"))?;
    let m = &view.market;
    let closed = crate::app::resolution::is_closed(s, &view);
    let tokens: Vec<Value> = m.tokens.iter().map(|t| json!({ "t": t.token_id, "o": t.outcome })).collect();
    let mut body = json!({
        "c": m.condition_id,
        "t": tokens,
        "mts": serde_json::from_str::<Value>(&view.tick().short()).unwrap_or(Value::Null),
        "mos": min_size_number(m.min_order_size),
        "nr": m.neg_risk,
        "mbf": 0,
        "tbf": 0,
        "ao": m.accepting_orders && !closed,
        "sd": 0,
        "rfqe": true,
    });
    if let Some(fees) = view.fees() {
        body["fd"] = render::fee_description(Some(fees));
    }
    reply(&body)
}

/// GET /fees/builder-fees/{code}: the fee rates a builder charges on the orders that name
/// its code, which the V2 clients add to a market buy's cost. predex's builders charge
/// none; a code no builder has is not found.
fn builder_fees(s: &AppState, code: &str) -> ApiResult {
    let bytes = code
        .strip_prefix("0x")
        .filter(|h| h.len() == 64)
        .and_then(|h| h.parse::<alloy_primitives::B256>().ok())
        .ok_or_else(|| ApiError::bad("invalid builder code"))?;
    s.store.builder_of_code(&bytes.0)?.ok_or_else(|| ApiError::not_found("builder code not found"))?;
    reply(&json!({ "builder_maker_fee_rate_bps": 0, "builder_taker_fee_rate_bps": 0 }))
}

/// GET /markets/{condition_id}.
fn market_by_path(s: &AppState, id: &str) -> ApiResult {
    let view = s.registry.condition(id).ok_or_else(|| ApiError::not_found("market not found"))?;
    reply(&market_json(s, &view))
}

fn simplified_json(s: &AppState, v: &MarketView) -> Value {
    let m = &v.market;
    let closed = crate::app::resolution::is_closed(s, v);
    json!({
        "condition_id": m.condition_id,
        "tokens": render::token_prices(v),
        "rewards": rewards_of(s, &m.condition_id),
        "active": m.active,
        "closed": closed,
        "archived": false,
        "accepting_orders": m.accepting_orders && !closed,
    })
}

/// A page of markets in listing order, each as `row` shows it; `sampling` keeps only the
/// markets whose reward program runs now (Polymarket's "sampling" markets).
fn listing(s: &AppState, r: &Req, sampling: bool, row: fn(&AppState, &MarketView) -> Value) -> ApiResult {
    let offset = paging::offset(r.query_map().get("next_cursor"))?;
    let now = now_secs();
    let views: Vec<Arc<MarketView>> = {
        // Read once and let go: a row reads the program again.
        let rewards = s.rewards.programs.read();
        let running = |v: &MarketView| rewards.get(&v.market.condition_id).is_some_and(|c| c.active(now));
        s.registry.tables().list.iter().filter(|v| !sampling || running(v)).cloned().collect()
    };
    paging::page(views.iter().map(|v| row(s, v)).collect(), offset)
}

fn simplified(s: Arc<AppState>, r: Req) -> ApiResult {
    listing(&s, &r, false, simplified_json)
}

fn sampling_simplified(s: Arc<AppState>, r: Req) -> ApiResult {
    listing(&s, &r, true, simplified_json)
}

fn markets(s: Arc<AppState>, r: Req) -> ApiResult {
    listing(&s, &r, false, market_json)
}

fn sampling_markets(s: Arc<AppState>, r: Req) -> ApiResult {
    listing(&s, &r, true, market_json)
}

/// One JSON row per market, in listing order.
pub(super) fn market_rows(s: &AppState, row: impl FnMut(&MarketView) -> Value) -> Vec<Value> {
    s.registry.tables().list.iter().map(|v| &**v).map(row).collect()
}
