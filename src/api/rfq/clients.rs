//! The official clients' side of RFQ (docs/reference/rfq.md "The official clients' form"), over the
//! same requests and quotes as the spec's routes: the asset form of a request or quote,
//! `GET /rfq/data/requests`, `/rfq/data/requester/quotes`, `/rfq/data/quoter/quotes`,
//! `/rfq/data/best-quote`, and `POST /rfq/request/accept` and `/rfq/quote/approve` with a
//! signed order.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{json, Map, Value};
use uuid::Uuid;

use super::{json_object, text, uuid_field};
use crate::api::paging;
use crate::api::params::Params;
use crate::api::wire::{check_version, invalid, wire_fields, WireOrder};
use crate::api::{authenticate, authenticate_read, price_number, ApiError, ApiResult, Req};
use crate::app::orders::NewOrder;
use crate::app::rfq::{self, RfqError, RfqQuote, RfqRequest, Terms};
use crate::app::AppState;
use crate::domain::{fmt_date, now_secs, Amount, OrderType, Price, Side, PRICE_ONE};

/// Most items a data page holds (and its default).
const MAX_LIMIT: u64 = 100;

/// The clients' asset form `{assetIn, assetOut, amountIn, amountOut}` (micro-units; one
/// asset `"0"`, the collateral, the other the token), if the body uses it: the stating
/// party's terms — it BUYs the token it receives — and the price the amounts give.
pub(super) fn asset_form(b: &Map<String, Value>) -> Result<Option<(Terms, Price)>, ApiError> {
    if !b.contains_key("assetIn") && !b.contains_key("assetOut") {
        return Ok(None);
    }
    let bad = || {
        ApiError::bad("assetIn, assetOut, amountIn and amountOut required: one asset 0 (collateral), the other a token")
    };
    let asset = |n: &str| text(b, n).ok_or_else(bad);
    let amount =
        |n: &str| text(b, n).and_then(|x| x.parse::<u64>().ok()).filter(|a| *a > 0).map(Amount).ok_or_else(bad);
    let (asset_in, asset_out) = (asset("assetIn")?, asset("assetOut")?);
    let (amount_in, amount_out) = (amount("amountIn")?, amount("amountOut")?);
    let collateral = |a: &str| a.bytes().all(|c| c == b'0');
    let (token_id, side, size, usdc) = match (collateral(&asset_in), collateral(&asset_out)) {
        (false, true) => (asset_in, Side::Buy, amount_in, amount_out),
        (true, false) => (asset_out, Side::Sell, amount_out, amount_in),
        _ => return Err(bad()),
    };
    // Collateral per token, in 1e-4 units: exact, and below one.
    let num = usdc.0 as u128 * PRICE_ONE as u128;
    let price = num / size.0 as u128;
    if !num.is_multiple_of(size.0 as u128) || price >= PRICE_ONE as u128 {
        return Err(ApiError::bad("amountIn and amountOut must give a price below 1 in steps of 0.0001"));
    }
    Ok(Some((Terms { token_id, side, size }, Price(price as u32))))
}

/// The token on the other side of the request's market ("" if the market is gone).
fn complement(s: &AppState, token_id: &str) -> String {
    s.registry
        .token(token_id)
        .map(|(v, outcome)| v.market.tokens[1 - outcome as usize].token_id.clone())
        .unwrap_or_default()
}

/// (sizeIn, sizeOut) of a party on `side`: what it receives, what it pays (decimal; the
/// collateral leg is null when no price is known).
fn sizes(side: Side, size: Amount, price: Option<Price>) -> (Value, Value) {
    let tokens = json!(size.fmt());
    let usdc = price.map_or(Value::Null, |p| json!(p.cost(size).fmt()));
    match side {
        Side::Buy => (tokens, usdc),
        Side::Sell => (usdc, tokens),
    }
}

/// A request as the clients' `RfqRequest` type reads it.
fn request_json(s: &AppState, r: &RfqRequest, now: u64) -> Value {
    let (size_in, size_out) = sizes(r.side, r.size, r.price);
    json!({
        "requestId": r.id.to_string(),
        "userAddress": r.address,
        "proxyAddress": Value::Null,
        "token": r.token_id,
        "complement": complement(s, &r.token_id),
        "condition": r.condition_id,
        "side": r.side.as_str(),
        "sizeIn": size_in,
        "sizeOut": size_out,
        "price": price_number(r.price),
        "acceptedQuoteId": r.accepted_quote.map(|q| q.to_string()),
        "state": r.status(now),
        "expiry": fmt_date(r.expires_at),
        "createdAt": fmt_date(r.created_at),
    })
}

/// A quote as the clients' `RfqQuote` type reads it: the quoter's side and sizes.
fn quote_json(s: &AppState, r: &RfqRequest, q: &RfqQuote, now: u64) -> Value {
    let side = r.side.opposite();
    let (size_in, size_out) = sizes(side, r.size, Some(q.price));
    json!({
        "quoteId": q.id.to_string(),
        "requestId": r.id.to_string(),
        "userAddress": q.address,
        "proxyAddress": Value::Null,
        "token": r.token_id,
        "complement": complement(s, &r.token_id),
        "condition": r.condition_id,
        "side": side.as_str(),
        "sizeIn": size_in,
        "sizeOut": size_out,
        "price": price_number(Some(q.price)),
        "matchType": "COMPLEMENTARY",
        "state": q.status(now),
        "expiry": fmt_date(q.expires_at),
        "createdAt": fmt_date(q.created_at),
    })
}

/// One listed request or quote with what the filters and sorts read.
struct Row {
    request: Uuid,
    quote: Option<Uuid>,
    market: String,
    active: bool,
    size: Amount,
    price: Option<Price>,
    expiry: u64,
    created: u64,
    json: Value,
}

impl Row {
    fn usdc(&self) -> Option<Amount> {
        self.price.map(|p| p.cost(self.size))
    }
}

/// The data routes' query: filters, sort and page.
struct Query {
    request_ids: Vec<Uuid>,
    quote_ids: Vec<Uuid>,
    markets: Vec<String>,
    active: Option<bool>,
    size: (Option<Amount>, Option<Amount>),
    usdc: (Option<Amount>, Option<Amount>),
    price: (Option<Price>, Option<Price>),
    sort_by: &'static str,
    descending: bool,
    limit: usize,
    offset: usize,
}

fn ids(p: &Params, name: &str) -> Result<Vec<Uuid>, ApiError> {
    p.list(name)
        .iter()
        .map(|x| Uuid::parse_str(x).map_err(|_| ApiError::bad(format!("{name} must be UUIDs"))))
        .collect()
}

fn decimal<T>(p: &Params, name: &str, parse: fn(&str) -> Option<T>) -> Result<Option<T>, ApiError> {
    p.get(name).map(|v| parse(v).ok_or_else(|| ApiError::bad(format!("{name} must be a decimal number")))).transpose()
}

impl Query {
    fn parse(r: &Req) -> Result<Query, ApiError> {
        let p = Params::parse(r.query.as_deref())?;
        let amount = |n| decimal(&p, n, |v| Amount::parse(v).ok());
        let price = |n| decimal(&p, n, |v| Price::parse(v).ok());
        let active = match p.choice("state", &["active", "inactive", "all"], "all")? {
            "active" => Some(true),
            "inactive" => Some(false),
            _ => None,
        };
        Ok(Query {
            request_ids: ids(&p, "requestIds")?,
            quote_ids: ids(&p, "quoteIds")?,
            markets: p.list("markets"),
            active,
            size: (amount("sizeMin")?, amount("sizeMax")?),
            usdc: (amount("sizeUsdcMin")?, amount("sizeUsdcMax")?),
            price: (price("priceMin")?, price("priceMax")?),
            sort_by: p.choice("sortBy", &["created", "price", "expiry", "size"], "created")?,
            descending: p.choice("sortDir", &["asc", "desc"], "desc")? == "desc",
            limit: p.int("limit", MAX_LIMIT, MAX_LIMIT)?.max(1) as usize,
            offset: paging::offset(p.get("offset"))?,
        })
    }

    fn keeps(&self, row: &Row) -> bool {
        fn within<T: PartialOrd>(v: Option<T>, (lo, hi): (Option<T>, Option<T>)) -> bool {
            match v {
                Some(v) => lo.is_none_or(|lo| v >= lo) && hi.is_none_or(|hi| v <= hi),
                None => lo.is_none() && hi.is_none(),
            }
        }
        (self.request_ids.is_empty() || self.request_ids.contains(&row.request))
            && (self.quote_ids.is_empty() || row.quote.is_some_and(|q| self.quote_ids.contains(&q)))
            && (self.markets.is_empty() || self.markets.iter().any(|m| m.eq_ignore_ascii_case(&row.market)))
            && self.active.is_none_or(|a| a == row.active)
            && within(Some(row.size), self.size)
            && within(row.usdc(), self.usdc)
            && within(row.price, self.price)
    }

    /// The page of `rows` this query asks for, in the clients' paginated envelope.
    fn answer(&self, rows: Vec<Row>) -> ApiResult {
        let mut rows: Vec<Row> = rows.into_iter().filter(|r| self.keeps(r)).collect();
        rows.sort_by(|a, b| {
            let by = match self.sort_by {
                "price" => a.price.cmp(&b.price),
                "expiry" => a.expiry.cmp(&b.expiry),
                "size" => a.size.cmp(&b.size),
                _ => a.created.cmp(&b.created),
            };
            let by = by
                .then(a.created.cmp(&b.created))
                .then(a.quote.unwrap_or(a.request).cmp(&b.quote.unwrap_or(b.request)));
            if self.descending {
                by.reverse()
            } else {
                by
            }
        });
        let total = rows.len();
        let mut page = paging::envelope(rows.into_iter().map(|r| r.json).collect(), self.offset, self.limit);
        page["total_count"] = json!(total);
        crate::api::reply(&page)
    }
}

fn request_row(s: &AppState, r: &RfqRequest, now: u64) -> Row {
    Row {
        request: r.id,
        quote: None,
        market: r.condition_id.clone(),
        active: r.is_open(now),
        size: r.size,
        price: r.price,
        expiry: r.expires_at,
        created: r.created_at,
        json: request_json(s, r, now),
    }
}

fn quote_row(s: &AppState, r: &RfqRequest, q: &RfqQuote, now: u64) -> Row {
    Row {
        request: r.id,
        quote: Some(q.id),
        market: r.condition_id.clone(),
        active: q.is_usable(now),
        size: r.size,
        price: Some(q.price),
        expiry: q.expires_at,
        created: q.created_at,
        json: quote_json(s, r, q, now),
    }
}

/// GET /rfq/data/requests (L2): every open request (any key's, as quoters see them) and
/// all of the caller's own, filtered, sorted (newest first by default) and paged.
pub(super) fn requests(s: &AppState, r: &Req) -> ApiResult {
    let key = authenticate_read(s, r)?;
    let query = Query::parse(r)?;
    let now = now_secs();
    let mut seen = HashSet::new();
    let mut rows = Vec::new();
    let own = rfq::own_requests(s, &key.key)?.into_iter().map(|(x, _)| x);
    for x in own.chain(rfq::open_requests(s, now)?) {
        if seen.insert(x.id) {
            rows.push(request_row(s, &x, now));
        }
    }
    query.answer(rows)
}

/// GET /rfq/data/requester/quotes (L2): the quotes on the caller's requests.
pub(super) fn requester_quotes(s: &AppState, r: &Req) -> ApiResult {
    let key = authenticate_read(s, r)?;
    let query = Query::parse(r)?;
    let now = now_secs();
    let rows = rfq::own_requests(s, &key.key)?
        .iter()
        .flat_map(|(req, quotes)| quotes.iter().map(move |q| (req, q)))
        .map(|(req, q)| quote_row(s, req, q, now))
        .collect();
    query.answer(rows)
}

/// GET /rfq/data/quoter/quotes (L2): the caller's own quotes.
pub(super) fn quoter_quotes(s: &AppState, r: &Req) -> ApiResult {
    let key = authenticate_read(s, r)?;
    let query = Query::parse(r)?;
    let now = now_secs();
    let rows = rfq::own_quotes(s, &key.key)?.iter().map(|(req, q)| quote_row(s, req, q, now)).collect();
    query.answer(rows)
}

/// GET /rfq/data/best-quote?requestId= (L2): the quote the spec's accept would take on
/// the caller's request (lowest price for a BUY, highest for a SELL, earlier on a tie).
pub(super) fn best_quote(s: &AppState, r: &Req) -> ApiResult {
    let key = authenticate_read(s, r)?;
    let p = Params::parse(r.query.as_deref())?;
    let id = p
        .get("requestId")
        .and_then(|x| Uuid::parse_str(x).ok())
        .ok_or_else(|| ApiError::bad("valid requestId required"))?;
    let req = s.store.rfq_request(&id)?.filter(|x| *x.address == *key.address).ok_or(RfqError::NotOwned)?;
    let now = now_secs();
    let quotes = s.store.rfq_quotes(&id)?;
    let best = rfq::best_quote(req.side, &quotes, now).ok_or(RfqError::NoQuotes)?;
    crate::api::reply(&quote_json(s, &req, best, now))
}

/// The body of an accept or approve: `requestId`, `quoteId`, and the signer's order with
/// its fields at the top level (and `owner`, the API key).
fn signed_order(s: &AppState, r: &Req) -> Result<(Uuid, Uuid, NewOrder), ApiError> {
    let b = json_object(r)?;
    let (request, quote) = (uuid_field(&b, "requestId")?, uuid_field(&b, "quoteId")?);
    let owner = text(&b, "owner");
    let wire: WireOrder = serde_json::from_value(Value::Object(b)).map_err(|_| invalid())?;
    check_version(&wire, s.config.order_version)?;
    let signed = wire_fields(&wire)?;
    let order = NewOrder {
        signed,
        signature: wire.signature,
        order_type: OrderType::Gtc,
        post_only: false,
        defer: false,
        owner,
    };
    Ok((request, quote, order))
}

/// POST /rfq/request/accept (L2): the requester accepts a quote with a signed order for
/// its side of it; the trade is made as by `POST /rfq/accept`. `"OK"`.
pub(super) async fn accept(s: Arc<AppState>, r: Req) -> ApiResult {
    let key = authenticate(&s, &r)?;
    let (request, quote, order) = signed_order(&s, &r)?;
    rfq::accept_with_order(&s, &key, request, quote, order).await?;
    crate::api::reply(&"OK")
}

/// POST /rfq/quote/approve (L2): the quoter confirms its accepted quote with a signed
/// order for its side. `"OK"`.
pub(super) async fn approve(s: Arc<AppState>, r: Req) -> ApiResult {
    let key = authenticate(&s, &r)?;
    let (request, quote, order) = signed_order(&s, &r)?;
    rfq::approve(&s, &key, request, quote, order).await?;
    crate::api::reply(&"OK")
}
