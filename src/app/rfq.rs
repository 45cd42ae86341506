//! Request for quote (SPEC §3.3, §4.4, §7.5; docs/reference/rfq.md).
//!
//! A trader asks for a price on `size` tokens (`POST /rfq/request`); other traders answer
//! with quotes (`POST /rfq/quote`); the requester accepts one (`POST /rfq/accept`), by its
//! ID or — naming only the request — the best PENDING quote not yet expired (lowest price
//! for a BUY request, highest for a SELL one; the earlier quote on a tie). The accepted
//! quote becomes a PENDING trade through the engine's settlement queue, written in the
//! same atomic batch as the request's FILLED state, the quote's ACCEPTED state and every
//! competing quote's REJECTED state. The RFQ expiration worker marks requests and quotes
//! past their TTL EXPIRED; a request or quote past its TTL is refused even before the
//! worker gets to it.
//!
//! Every change happens under one lock (`AppState::rfq`), held by the handlers and the
//! worker, so a request is filled once and a quote is accepted once.

use std::collections::HashSet;
use std::sync::Arc;

use uuid::Uuid;

use crate::app::orders::{self, NewOrder, OrderError};
use crate::app::AppState;
use crate::domain::{now_secs, Amount, ApiKeyRecord, Price, Side, COLLATERAL};
use crate::engine::{BlockTrade, EngineError, Reject};
use crate::store::{Batch, StoreError};

/// The RFQ's state: the lock that serialises its changes (handlers and the expiration
/// worker).
#[derive(Default)]
pub struct Rfq {
    pub changes: tokio::sync::Mutex<()>,
}

/// What an RFQ service refuses (the routes give each its SPEC §7 reply).
#[derive(Debug, thiserror::Error)]
pub enum RfqError {
    #[error("No orderbook exists for the requested token id")]
    NoBook,
    #[error("market is not accepting orders")]
    MarketClosed,
    #[error("Size ({}) lower than the minimum: {}", .size.fmt(), .min.fmt())]
    BelowMinimum { size: Amount, min: Amount },
    #[error("RFQ not found, expired, or already filled")]
    NotOpen,
    #[error("cannot quote your own RFQ")]
    OwnRequest,
    #[error("Price ({}) breaks minimum tick size rule: {}", .price.short(), .tick.short())]
    OffTick { price: Price, tick: Price },
    #[error("not enough balance / allowance")]
    NotEnoughBalance,
    #[error("RFQ not found or not owned by you")]
    NotOwned,
    #[error("quote not found, expired, or already processed")]
    QuoteGone,
    #[error("no valid quotes available")]
    NoQuotes,
    #[error("RFQ cannot be traded")]
    Untradable,
    #[error("quote must take the other side of the request's token for its whole size")]
    QuoteTerms,
    #[error("order does not match the quote")]
    OrderTerms,
    #[error("quote has not been accepted")]
    NotAccepted,
    #[error("too many open RFQ requests for this address: at most {MAX_OPEN_REQUESTS}")]
    TooManyOpen,
    #[error(transparent)]
    Order(#[from] OrderError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// Longest TTL a request or quote may ask for (seconds).
pub const MAX_TTL_SECS: u64 = 86_400;

/// Requests one address may have open at once.
pub const MAX_OPEN_REQUESTS: usize = 100;

pub use crate::domain::rfq::{QuoteState, RequestState, RfqQuote, RfqRequest};

/// The best usable quote: lowest price for a BUY request, highest for a SELL one, the
/// earlier on a tie.
pub fn best_quote(side: Side, quotes: &[RfqQuote], now: u64) -> Option<&RfqQuote> {
    let usable = quotes.iter().filter(|q| q.is_usable(now));
    match side {
        Side::Buy => usable.min_by_key(|q| (q.price, q.created_at)),
        Side::Sell => usable.min_by_key(|q| (q.price.complement(), q.created_at)),
    }
}

/// Closes a request: writes its new state, and every still-PENDING quote's (accepted one
/// aside, which the caller sets), dropping their open and expiry index entries.
fn close(batch: &mut Batch, r: &RfqRequest, quotes: &[RfqQuote], quote_state: QuoteState) {
    batch.close_rfq_request(r);
    for q in quotes.iter().filter(|q| q.state == QuoteState::Pending) {
        batch.close_rfq_quote(&RfqQuote { state: quote_state, ..q.clone() });
    }
}

// ---- services --------------------------------------------------------------------------

/// A request for quote as the requester asks it.
pub struct NewRequest {
    pub token_id: String,
    pub side: Side,
    /// Tokens (> 0).
    pub size: Amount,
    pub ttl_secs: u64,
    /// The price the requester names, if any (on the market's tick).
    pub price: Option<Price>,
}

/// One party's terms of a trade: its own side, the token, and the size in tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Terms {
    pub token_id: String,
    pub side: Side,
    pub size: Amount,
}

impl RfqRequest {
    /// The request's terms for the requester, or (`quoter`) for the quoter's side of it.
    fn terms(&self, quoter: bool) -> Terms {
        let side = if quoter { self.side.opposite() } else { self.side };
        Terms { token_id: self.token_id.clone(), side, size: self.size }
    }
}

/// Price inside (0, 1) and on the market's tick.
fn check_price(price: Price, tick: Price) -> Result<(), RfqError> {
    if price.is_inside() && price.on_tick(tick) {
        Ok(())
    } else {
        Err(RfqError::OffTick { price, tick })
    }
}

/// Asks for quotes on `size` tokens.
pub async fn request(s: &AppState, key: &ApiKeyRecord, new: NewRequest) -> Result<RfqRequest, RfqError> {
    let (view, _) = s.registry.token(&new.token_id).ok_or(RfqError::NoBook)?;
    if crate::app::resolution::is_closed(s, &view) {
        return Err(RfqError::MarketClosed);
    }
    if new.size < view.market.min_order_size {
        return Err(RfqError::BelowMinimum { size: new.size, min: view.market.min_order_size });
    }
    if let Some(p) = new.price {
        check_price(p, view.tick())?;
    }
    let now = now_secs();
    if open_requests(s, now)?.iter().filter(|x| x.address == *key.address).count() >= MAX_OPEN_REQUESTS {
        return Err(RfqError::TooManyOpen);
    }
    let req = RfqRequest {
        id: Uuid::new_v4(),
        owner: key.key,
        address: key.address.to_string(),
        token_id: new.token_id,
        condition_id: view.market.condition_id.clone(),
        side: new.side,
        size: new.size,
        created_at: now,
        expires_at: now + new.ttl_secs,
        state: RequestState::Open,
        accepted_quote: None,
        price: new.price,
    };
    let mut batch = Batch::default();
    batch.open_rfq_request(&req);
    s.commit(batch).await?;
    Ok(req)
}

/// Offers `price` for the whole of request `rfq`; `terms`, when the quoter states them (the
/// clients' form), must be the other side of the request's token for its whole size. The
/// quoter must hold what it would pay now; nothing is reserved until the quote is accepted.
/// Returns the quote and its request.
pub async fn quote(
    s: &AppState,
    key: &ApiKeyRecord,
    rfq: Uuid,
    price: Price,
    ttl_secs: u64,
    terms: Option<Terms>,
) -> Result<(RfqQuote, RfqRequest), RfqError> {
    let _one = s.rfq.changes.lock().await;
    let now = now_secs();
    let req = s.store.rfq_request(&rfq)?.filter(|x| x.is_open(now)).ok_or(RfqError::NotOpen)?;
    if *req.address == *key.address {
        return Err(RfqError::OwnRequest);
    }
    if terms.is_some_and(|t| t != req.terms(true)) {
        return Err(RfqError::QuoteTerms);
    }
    let view = s.registry.token(&req.token_id).map(|(v, _)| v).ok_or(RfqError::NotOpen)?;
    check_price(price, view.tick())?;
    // What the quoter pays if accepted: collateral when it buys, tokens when it sells.
    let (asset, owed) = match req.side {
        Side::Sell => (COLLATERAL, price.cost(req.size)),
        Side::Buy => (req.token_id.as_str(), req.size),
    };
    let accounts = s.engine.accounts(key.address.to_string()).await?;
    if accounts.iter().find(|(a, _)| a == asset).map_or(Amount::ZERO, |(_, acc)| acc.available()) < owed {
        return Err(RfqError::NotEnoughBalance);
    }
    let q = RfqQuote {
        id: Uuid::new_v4(),
        rfq_id: rfq,
        owner: key.key,
        address: key.address.to_string(),
        price,
        created_at: now,
        expires_at: (now + ttl_secs).min(req.expires_at),
        state: QuoteState::Pending,
    };
    let mut batch = Batch::default();
    batch.add_rfq_quote(&q);
    s.commit(batch).await?;
    Ok((q, req))
}

/// What an accepted quote became.
pub struct Accepted {
    pub quote_id: Uuid,
    pub rfq_id: Uuid,
    pub trade_id: Uuid,
}

/// The requester accepts a quote (SPEC §4.4): the one named, or — naming only the
/// request — the best usable one. At least one of the two is given.
pub async fn accept(
    s: &AppState,
    key: &ApiKeyRecord,
    want_rfq: Option<Uuid>,
    want_quote: Option<Uuid>,
) -> Result<Accepted, RfqError> {
    let _one = s.rfq.changes.lock().await;
    let now = now_secs();
    let rfq = match (want_quote, want_rfq) {
        (Some(q), named) => {
            let parent = s.store.rfq_of_quote(&q)?.ok_or(RfqError::QuoteGone)?;
            if named.is_some_and(|n| n != parent) {
                return Err(RfqError::QuoteGone);
            }
            parent
        }
        (None, Some(r)) => r,
        (None, None) => return Err(RfqError::NotOpen),
    };
    let mut req = s.store.rfq_request(&rfq)?.filter(|x| *x.address == *key.address).ok_or(RfqError::NotOwned)?;
    if !req.is_open(now) {
        return Err(RfqError::NotOpen);
    }
    let quotes = s.store.rfq_quotes(&rfq)?;
    let chosen = match want_quote {
        Some(id) => quotes.iter().find(|q| q.id == id && q.is_usable(now)).ok_or(RfqError::QuoteGone)?,
        None => best_quote(req.side, &quotes, now).ok_or(RfqError::NoQuotes)?,
    }
    .clone();
    req.state = RequestState::Filled;
    req.accepted_quote = Some(chosen.id);
    let mut records = Batch::default();
    close(&mut records, &req, &quotes, QuoteState::Rejected);
    let accepted = RfqQuote { state: QuoteState::Accepted, ..chosen.clone() };
    records.put_rfq_quote(&accepted);
    let trade = BlockTrade {
        request_id: rfq,
        quote_id: chosen.id,
        token_id: req.token_id.clone(),
        side: req.side,
        size: req.size,
        price: chosen.price,
        taker: (req.owner, Arc::from(req.address.as_str())),
        maker: (chosen.owner, Arc::from(chosen.address.as_str())),
        version: s.config.order_version,
    };
    match s.engine.block_trade(trade, records).await {
        Ok(t) => Ok(Accepted { quote_id: chosen.id, rfq_id: rfq, trade_id: t.id }),
        Err(EngineError::Rejected(Reject::NotEnoughBalance)) => Err(RfqError::NotEnoughBalance),
        Err(EngineError::Rejected(Reject::MarketClosed)) => Err(RfqError::MarketClosed),
        Err(EngineError::Rejected(_)) => Err(RfqError::Untradable),
        Err(e) => Err(e.into()),
    }
}

/// The terms and price of a signed order, checked as `POST /order` checks one (signature,
/// owner, token, expiry, tick) but never placed: the official clients sign one to accept
/// or approve a quote.
fn order_terms(s: &AppState, key: &ApiKeyRecord, order: NewOrder) -> Result<(Terms, Price), RfqError> {
    let token_id = order.signed.token_text.clone();
    let o = orders::check_signed(s, key, order)?;
    Ok((Terms { token_id, side: o.side, size: o.original_size }, o.price))
}

/// A quote `quote` on request `rfq`, and the request.
fn quote_on(s: &AppState, rfq: Uuid, quote: Uuid) -> Result<(RfqRequest, RfqQuote), RfqError> {
    let req = s.store.rfq_request(&rfq)?.ok_or(RfqError::QuoteGone)?;
    let q = s.store.rfq_quote(&rfq, &quote)?.ok_or(RfqError::QuoteGone)?;
    Ok((req, q))
}

/// The requester accepts quote `quote` with a signed order for its side of it (the
/// clients' `POST /rfq/request/accept`): the order must be the request's side, token and
/// size at the quote's price; then it is [`accept`].
pub async fn accept_with_order(
    s: &AppState,
    key: &ApiKeyRecord,
    rfq: Uuid,
    quote: Uuid,
    order: NewOrder,
) -> Result<Accepted, RfqError> {
    let (req, q) = quote_on(s, rfq, quote)?;
    if *req.address != *key.address {
        return Err(RfqError::NotOwned);
    }
    let (terms, price) = order_terms(s, key, order)?;
    if terms != req.terms(false) || price != q.price {
        return Err(RfqError::OrderTerms);
    }
    accept(s, key, Some(rfq), Some(quote)).await
}

/// The quoter confirms its accepted quote with a signed order for its side (the clients'
/// `POST /rfq/quote/approve`). predex trades at acceptance — the quote already bound the
/// quoter, whose balance was checked when it quoted and held when it was accepted — so this
/// checks the order and the quote's state and changes nothing.
pub async fn approve(
    s: &AppState,
    key: &ApiKeyRecord,
    rfq: Uuid,
    quote: Uuid,
    order: NewOrder,
) -> Result<(), RfqError> {
    let (req, q) = quote_on(s, rfq, quote)?;
    if *q.address != *key.address {
        return Err(RfqError::QuoteGone);
    }
    if q.state != QuoteState::Accepted {
        return Err(RfqError::NotAccepted);
    }
    let (terms, price) = order_terms(s, key, order)?;
    if terms != req.terms(true) || price != q.price {
        return Err(RfqError::OrderTerms);
    }
    Ok(())
}

/// The requester withdraws its open request `id`: it becomes CANCELLED and its pending
/// quotes REJECTED, in one batch.
pub async fn cancel_request(s: &AppState, key: &ApiKeyRecord, id: Uuid) -> Result<(), RfqError> {
    let _one = s.rfq.changes.lock().await;
    let now = now_secs();
    let mut req = s.store.rfq_request(&id)?.filter(|x| *x.address == *key.address).ok_or(RfqError::NotOwned)?;
    if !req.is_open(now) {
        return Err(RfqError::NotOpen);
    }
    req.state = RequestState::Cancelled;
    let mut batch = Batch::default();
    close(&mut batch, &req, &s.store.rfq_quotes(&id)?, QuoteState::Rejected);
    s.commit(batch).await?;
    Ok(())
}

/// The quoter withdraws its pending quote `id`: it becomes CANCELLED.
pub async fn cancel_quote(s: &AppState, key: &ApiKeyRecord, id: Uuid) -> Result<(), RfqError> {
    let _one = s.rfq.changes.lock().await;
    let now = now_secs();
    let rfq = s.store.rfq_of_quote(&id)?.ok_or(RfqError::QuoteGone)?;
    let q = s.store.rfq_quotes(&rfq)?.into_iter().find(|q| q.id == id).ok_or(RfqError::QuoteGone)?;
    if *q.address != *key.address || !q.is_usable(now) {
        return Err(RfqError::QuoteGone);
    }
    let mut batch = Batch::default();
    batch.close_rfq_quote(&RfqQuote { state: QuoteState::Cancelled, ..q });
    s.commit(batch).await?;
    Ok(())
}

/// An API key's own requests with their quotes, newest first.
pub fn own_requests(s: &AppState, owner: &Uuid) -> Result<Vec<(RfqRequest, Vec<RfqQuote>)>, StoreError> {
    let mut items = Vec::new();
    for id in s.store.rfq_requests_of(owner)? {
        if let Some(x) = s.store.rfq_request(&id)? {
            let quotes = s.store.rfq_quotes(&id)?;
            items.push((x, quotes));
        }
    }
    Ok(items)
}

/// Every open request a quoter may answer (any key's), oldest first.
pub fn open_requests(s: &AppState, now: u64) -> Result<Vec<RfqRequest>, StoreError> {
    let mut open = Vec::new();
    for id in s.store.open_rfq_requests()? {
        if let Some(x) = s.store.rfq_request(&id)?.filter(|x| x.is_open(now)) {
            open.push(x);
        }
    }
    open.sort_by_key(|x| (x.created_at, x.id));
    Ok(open)
}

/// An API key's own quotes with their requests, newest first.
pub fn own_quotes(s: &AppState, owner: &Uuid) -> Result<Vec<(RfqRequest, RfqQuote)>, StoreError> {
    let mut items = Vec::new();
    for (rfq, q) in s.store.rfq_quotes_of(owner)? {
        if let (Some(req), Some(quote)) = (s.store.rfq_request(&rfq)?, s.store.rfq_quote(&rfq, &q)?) {
            items.push((req, quote));
        }
    }
    Ok(items)
}

// ---- expiration worker ---------------------------------------------------------------

/// Marks requests and quotes past their TTL EXPIRED (the RFQ expiration worker, from its
/// OS thread). Returns (requests, quotes) expired.
pub fn expire_due(s: &AppState, now: u64) -> Result<(usize, usize), StoreError> {
    let _one = s.rfq.changes.blocking_lock();
    let due = s.store.rfq_expiring(now)?;
    if due.is_empty() {
        return Ok((0, 0));
    }
    let mut batch = Batch::default();
    let (mut requests, mut quotes) = (0, 0);
    // Quotes closed with their request in this pass.
    let mut done: HashSet<Uuid> = HashSet::new();
    for (rfq, quote) in &due {
        match quote {
            None => {
                let Some(mut req) = s.store.rfq_request(rfq)? else { continue };
                let qs = s.store.rfq_quotes(rfq)?;
                if req.state == RequestState::Open {
                    req.state = RequestState::Expired;
                    requests += 1;
                }
                for q in qs.iter().filter(|q| q.state == QuoteState::Pending) {
                    done.insert(q.id);
                    quotes += 1;
                }
                close(&mut batch, &req, &qs, QuoteState::Expired);
            }
            Some(q) if !done.contains(q) => {
                let Some(mut quote) = s.store.rfq_quote(rfq, q)? else { continue };
                if quote.state == QuoteState::Pending {
                    quote.state = QuoteState::Expired;
                    quotes += 1;
                    batch.close_rfq_quote(&quote);
                } else {
                    batch.drop_rfq_quote_expiry(&quote);
                }
            }
            Some(_) => {}
        }
    }
    s.commit_blocking(batch)?;
    Ok((requests, quotes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quote(price: u32, created_at: u64, state: QuoteState, expires_at: u64) -> RfqQuote {
        RfqQuote {
            id: Uuid::new_v4(),
            rfq_id: Uuid::nil(),
            owner: Uuid::nil(),
            address: String::new(),
            price: Price(price),
            created_at,
            expires_at,
            state,
        }
    }

    #[test]
    fn best_quote_is_lowest_for_buy_and_highest_for_sell_among_usable_ones() {
        let qs = vec![
            quote(5_000, 1, QuoteState::Pending, 100),
            quote(4_000, 2, QuoteState::Pending, 100),
            quote(3_000, 3, QuoteState::Pending, 10), // expired at now = 50
            quote(4_000, 4, QuoteState::Pending, 100),
            quote(9_000, 5, QuoteState::Rejected, 100),
            quote(6_000, 6, QuoteState::Pending, 100),
            quote(6_000, 7, QuoteState::Pending, 100),
        ];
        assert_eq!(best_quote(Side::Buy, &qs, 50).map(|q| q.created_at), Some(2));
        assert_eq!(best_quote(Side::Sell, &qs, 50).map(|q| q.created_at), Some(6));
        assert!(best_quote(Side::Buy, &qs, 100).is_none());
    }
}
