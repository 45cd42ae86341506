//! Request-for-quote routes (SPEC §4.4, §7.5; `app::rfq` has the rules): `POST
//! /rfq/request`, `/rfq/quote`, `/rfq/accept`, and `GET /rfq/requests`,
//! `/rfq/requests/open`, `/rfq/quotes`; and the official clients' `DELETE /rfq/request`,
//! `DELETE /rfq/quote` and `GET /rfq/config`; the rest of the clients' form in `clients`.

mod clients;

use std::sync::Arc;

use serde_json::{json, Map, Value};
use uuid::Uuid;
use warp::Filter;

use super::paging;
use super::{authenticate, authenticate_read, handle, handle_now, ApiError, ApiResult, Req, Routes};
use crate::app::rfq::{self, NewRequest, RfqError, RfqQuote, RfqRequest, MAX_TTL_SECS};
use crate::app::AppState;
use crate::domain::fmt_date;
use crate::domain::{now_secs, Amount, Price, Side};

impl From<RfqError> for ApiError {
    fn from(e: RfqError) -> ApiError {
        use RfqError as E;
        match e {
            E::Store(e) => e.into(),
            E::Engine(e) => e.into(),
            E::NoBook | E::QuoteGone | E::NoQuotes => ApiError::not_found(e.to_string()),
            E::MarketClosed
            | E::BelowMinimum { .. }
            | E::NotOpen
            | E::OwnRequest
            | E::OffTick { .. }
            | E::NotEnoughBalance
            | E::NotOwned
            | E::Untradable
            | E::QuoteTerms
            | E::OrderTerms
            | E::NotAccepted
            | E::TooManyOpen => ApiError::bad(e.to_string()),
            E::Order(e) => e.into(),
        }
    }
}

fn request_json(r: &RfqRequest, now: u64, quotes: Option<&[RfqQuote]>) -> Value {
    let mut v = json!({
        "rfqId": r.id.to_string(),
        "tokenId": r.token_id,
        "market": r.condition_id,
        "side": r.side.as_str(),
        "size": r.size.fmt(),
        "status": r.status(now),
        "createdAt": fmt_date(r.created_at),
        "expiresAt": fmt_date(r.expires_at),
        "acceptedQuoteId": r.accepted_quote.map(|q| q.to_string()),
    });
    if let Some(qs) = quotes {
        v["quotes"] = qs.iter().map(|q| quote_json(q, now, r.size)).collect();
    }
    v
}

fn quote_json(q: &RfqQuote, now: u64, size: Amount) -> Value {
    json!({
        "quoteId": q.id.to_string(),
        "rfqId": q.rfq_id.to_string(),
        "price": q.price.short(),
        "size": size.fmt(),
        "status": q.status(now),
        "createdAt": fmt_date(q.created_at),
        "expiresAt": fmt_date(q.expires_at),
    })
}

pub fn routes(state: Arc<AppState>) -> Routes {
    let request = handle(warp::path!("rfq" / "request").and(warp::post()), &state, post_request);
    let quote = handle(warp::path!("rfq" / "quote").and(warp::post()), &state, post_quote);
    let accept = handle(warp::path!("rfq" / "accept").and(warp::post()), &state, accept);
    let mine = handle_now(warp::path!("rfq" / "requests").and(warp::get()), &state, |s, r| own_requests(&s, &r));
    let open =
        handle_now(warp::path!("rfq" / "requests" / "open").and(warp::get()), &state, |s, r| open_requests(&s, &r));
    let quotes = handle_now(warp::path!("rfq" / "quotes").and(warp::get()), &state, |s, r| own_quotes(&s, &r));
    let spec =
        request.or(quote).unify().or(accept).unify().or(mine).unify().or(open).unify().or(quotes).unify().boxed();
    // The official clients' cancels and settings (boxed apart: see `book::routes`).
    let cancel_request = handle(warp::path!("rfq" / "request").and(warp::delete()), &state, cancel_request);
    let cancel_quote = handle(warp::path!("rfq" / "quote").and(warp::delete()), &state, cancel_quote);
    let config = handle_now(warp::path!("rfq" / "config").and(warp::get()), &state, |s, r| config(&s, &r));
    let clients = cancel_request.or(cancel_quote).unify().or(config).unify().boxed();
    let data = |tail: &'static str, f: fn(&AppState, &Req) -> ApiResult| {
        handle_now(
            warp::path("rfq").and(warp::path("data")).and(warp::path(tail)).and(warp::path::end()).and(warp::get()),
            &state,
            move |s, r| f(&s, &r),
        )
    };
    let lists = data("requests", clients::requests)
        .or(data("best-quote", clients::best_quote))
        .unify()
        .or(handle_now(warp::path!("rfq" / "data" / "requester" / "quotes").and(warp::get()), &state, |s, r| {
            clients::requester_quotes(&s, &r)
        }))
        .unify()
        .or(handle_now(warp::path!("rfq" / "data" / "quoter" / "quotes").and(warp::get()), &state, |s, r| {
            clients::quoter_quotes(&s, &r)
        }))
        .unify()
        .boxed();
    let signed = handle(warp::path!("rfq" / "request" / "accept").and(warp::post()), &state, clients::accept)
        .or(handle(warp::path!("rfq" / "quote" / "approve").and(warp::post()), &state, clients::approve))
        .unify()
        .boxed();
    spec.or(clients).unify().or(lists).unify().or(signed).unify().boxed()
}

/// A UUID field of the body (`requestId`, `quoteId`); 400 `valid {name} required`.
fn uuid_field(b: &Map<String, Value>, name: &str) -> Result<Uuid, ApiError> {
    text(b, name).and_then(|x| Uuid::parse_str(&x).ok()).ok_or_else(|| ApiError::bad(format!("valid {name} required")))
}

/// DELETE /rfq/request {requestId} (the clients' `cancel_rfq_request`): the requester
/// withdraws its open request; `"OK"`.
async fn cancel_request(s: Arc<AppState>, r: Req) -> ApiResult {
    let key = authenticate(&s, &r)?;
    let id = uuid_field(&json_object(&r)?, "requestId")?;
    rfq::cancel_request(&s, &key, id).await?;
    super::reply(&"OK")
}

/// DELETE /rfq/quote {quoteId} (the clients' `cancel_rfq_quote`): the quoter withdraws its
/// pending quote; `"OK"`.
async fn cancel_quote(s: Arc<AppState>, r: Req) -> ApiResult {
    let key = authenticate(&s, &r)?;
    let id = uuid_field(&json_object(&r)?, "quoteId")?;
    rfq::cancel_quote(&s, &key, id).await?;
    super::reply(&"OK")
}

/// GET /rfq/config (L2; the clients' `rfq_config`): the venue's RFQ settings.
fn config(s: &AppState, r: &Req) -> ApiResult {
    authenticate_read(s, r)?;
    super::reply(&json!({
        "requestTtlSecs": s.config.rfq_request_ttl_secs,
        "quoteTtlSecs": s.config.rfq_quote_ttl_secs,
        "maxTtlSecs": MAX_TTL_SECS,
        "collateral": crate::domain::COLLATERAL,
        "collateralDecimals": 6,
    }))
}

/// The body as a JSON object; 400 `invalid JSON: …` otherwise (SPEC §7.5).
pub fn json_object(r: &Req) -> Result<Map<String, Value>, ApiError> {
    match serde_json::from_slice::<Value>(&r.body) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(ApiError::bad("invalid JSON: expected an object")),
        Err(e) => Err(ApiError::bad(format!("invalid JSON: {e}"))),
    }
}

/// A string or number field as text (None when absent, null or empty).
fn text(b: &Map<String, Value>, name: &str) -> Option<String> {
    match b.get(name)? {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// An optional TTL in seconds (`ttl`), within 1..=[`MAX_TTL_SECS`].
fn ttl(b: &Map<String, Value>, default: u64) -> Result<u64, ApiError> {
    match b.get("ttl") {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v
            .as_u64()
            .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
            .filter(|t| (1..=MAX_TTL_SECS).contains(t))
            .ok_or_else(|| ApiError::bad(format!("ttl must be a whole number of seconds from 1 to {MAX_TTL_SECS}"))),
    }
}

/// POST /rfq/request {tokenId, side, size, ttl?} or the clients' asset form: asks for
/// quotes on `size` tokens.
async fn post_request(s: Arc<AppState>, r: Req) -> ApiResult {
    let key = authenticate(&s, &r)?;
    let b = json_object(&r)?;
    let new = match clients::asset_form(&b)? {
        Some((terms, price)) => NewRequest {
            token_id: terms.token_id,
            side: terms.side,
            size: terms.size,
            ttl_secs: ttl(&b, s.config.rfq_request_ttl_secs)?,
            price: Some(price),
        },
        None => spec_request(&s, &b)?,
    };
    let req = rfq::request(&s, &key, new).await?;
    let mut v = request_json(&req, req.created_at, Some(&[]));
    v["requestId"] = json!(req.id.to_string());
    super::reply(&v)
}

/// The spec's form of a request.
fn spec_request(s: &AppState, b: &Map<String, Value>) -> Result<NewRequest, ApiError> {
    let required = || ApiError::bad("tokenId and size required");
    // Zero is no token (SPEC §7.5: missing or zero), however it is written.
    let token_id = text(b, "tokenId").filter(|t| !t.bytes().all(|c| c == b'0')).ok_or_else(required)?;
    let size = text(b, "size").and_then(|x| Amount::parse(&x).ok()).filter(|q| !q.is_zero()).ok_or_else(required)?;
    let side = text(b, "side").as_deref().and_then(Side::parse).ok_or_else(|| ApiError::bad("Invalid side"))?;
    let ttl_secs = ttl(b, s.config.rfq_request_ttl_secs)?;
    Ok(NewRequest { token_id, side, size, ttl_secs, price: None })
}

/// A `rfqId` field (the clients call it `requestId`): 400 `valid rfqId required` unless a
/// UUID.
fn rfq_id(b: &Map<String, Value>) -> Result<Uuid, ApiError> {
    b.get("rfqId")
        .or_else(|| b.get("requestId"))
        .and_then(Value::as_str)
        .and_then(|x| Uuid::parse_str(x).ok())
        .ok_or_else(|| ApiError::bad("valid rfqId required"))
}

/// POST /rfq/quote {rfqId, price, ttl?} or the clients' asset form with `requestId`:
/// offers a price for the whole request.
async fn post_quote(s: Arc<AppState>, r: Req) -> ApiResult {
    let key = authenticate(&s, &r)?;
    let b = json_object(&r)?;
    let rfq_id = rfq_id(&b)?;
    let (price, terms) = match clients::asset_form(&b)? {
        Some((terms, price)) => (price, Some(terms)),
        None => {
            let p = text(&b, "price").and_then(|p| Price::parse(&p).ok());
            (p.ok_or_else(|| ApiError::bad("price required"))?, None)
        }
    };
    let ttl_secs = ttl(&b, s.config.rfq_quote_ttl_secs)?;
    let (q, req) = rfq::quote(&s, &key, rfq_id, price, ttl_secs, terms).await?;
    super::reply(&quote_json(&q, q.created_at, req.size))
}

/// POST /rfq/accept {rfqId?, quoteId?}: the requester accepts a quote (SPEC §4.4).
async fn accept(s: Arc<AppState>, r: Req) -> ApiResult {
    let key = authenticate(&s, &r).map_err(|_| ApiError::unauthorized("invalid authorization"))?;
    let b = json_object(&r)?;
    let present = |n: &str| b.get(n).is_some_and(|v| !v.is_null());
    let (want_rfq, want_quote) = match (present("rfqId"), present("quoteId")) {
        (false, false) => return Err(ApiError::bad("rfqId or quoteId required")),
        (has_rfq, has_quote) => (
            if has_rfq { Some(rfq_id(&b)?) } else { None },
            if has_quote {
                Some(b["quoteId"].as_str().and_then(|x| Uuid::parse_str(x).ok()).ok_or(RfqError::QuoteGone)?)
            } else {
                None
            },
        ),
    };
    let a = rfq::accept(&s, &key, want_rfq, want_quote).await?;
    super::reply(&json!({
        "quoteId": a.quote_id.to_string(),
        "rfqId": a.rfq_id.to_string(),
        "status": "ACCEPTED",
        "tradeId": a.trade_id.to_string(),
    }))
}

/// GET /rfq/requests: the key's own requests with their quotes, newest first (paginated
/// envelope, SPEC §2.6).
fn own_requests(s: &AppState, r: &Req) -> ApiResult {
    let key = authenticate_read(s, r)?;
    let offset = paging::offset(r.query_map().get("next_cursor"))?;
    let now = now_secs();
    let items = rfq::own_requests(s, &key.key)?;
    paging::page(items.iter().map(|(x, quotes)| request_json(x, now, Some(quotes))).collect(), offset)
}

/// GET /rfq/requests/open: every open request a quoter may answer (any key's; quotes are
/// not shown), oldest first.
fn open_requests(s: &AppState, r: &Req) -> ApiResult {
    authenticate_read(s, r)?;
    let offset = paging::offset(r.query_map().get("next_cursor"))?;
    let now = now_secs();
    paging::page(rfq::open_requests(s, now)?.iter().map(|x| request_json(x, now, None)).collect(), offset)
}

/// GET /rfq/quotes: the key's own quotes, newest first.
fn own_quotes(s: &AppState, r: &Req) -> ApiResult {
    let key = authenticate_read(s, r)?;
    let offset = paging::offset(r.query_map().get("next_cursor"))?;
    let now = now_secs();
    let items = rfq::own_quotes(s, &key.key)?
        .into_iter()
        .map(|(req, quote)| {
            let mut v = quote_json(&quote, now, req.size);
            v["tokenId"] = json!(req.token_id);
            v["side"] = json!(req.side.as_str());
            v
        })
        .collect();
    paging::page(items, offset)
}
