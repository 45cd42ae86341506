//! Request for quote (SPEC §3.3, §4.4, §7.5; docs/rfq.md).
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
use std::ops::ControlFlow;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::app::AppState;
use crate::domain::{fmt_amount, fmt_price, now_secs, ApiKeyRecord, Side, COLLATERAL, PRICE_ONE};
use crate::engine::{BlockTrade, EngineError, Reject};
use crate::store::{cf, encode, Batch, Store, StoreError};

/// What an RFQ service refuses (the routes give each its SPEC §7 reply).
#[derive(Debug, thiserror::Error)]
pub enum RfqError {
    #[error("No orderbook exists for the requested token id")]
    NoBook,
    #[error("market is not accepting orders")]
    MarketClosed,
    #[error("Size ({}) lower than the minimum: {}", fmt_amount(*.size), fmt_amount(*.min))]
    BelowMinimum { size: u64, min: u64 },
    #[error("RFQ not found, expired, or already filled")]
    NotOpen,
    #[error("cannot quote your own RFQ")]
    OwnRequest,
    #[error("Price ({}) breaks minimum tick size rule: {}", fmt_price(*.price), fmt_price(*.tick))]
    OffTick { price: u32, tick: u32 },
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
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// Longest TTL a request or quote may ask for (seconds).
pub const MAX_TTL_SECS: u64 = 86_400;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RequestState {
    Open,
    Filled,
    Expired,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum QuoteState {
    Pending,
    Accepted,
    Rejected,
    Expired,
}

/// A request for quote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RfqRequest {
    pub id: Uuid,
    /// The requester's API key and wallet.
    pub owner: Uuid,
    pub address: String,
    pub token_id: String,
    pub condition_id: String,
    pub side: Side,
    /// Tokens, micro-units.
    pub size: u64,
    pub created_at: u64,
    pub expires_at: u64,
    pub state: RequestState,
    pub accepted_quote: Option<Uuid>,
}

/// A quote on a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RfqQuote {
    pub id: Uuid,
    pub rfq_id: Uuid,
    pub owner: Uuid,
    pub address: String,
    /// In the requested token, 1e-4 units.
    pub price: u32,
    pub created_at: u64,
    pub expires_at: u64,
    pub state: QuoteState,
}

impl RfqRequest {
    /// Open and not past its TTL.
    pub fn is_open(&self, now: u64) -> bool {
        self.state == RequestState::Open && self.expires_at > now
    }
}

impl RfqQuote {
    /// PENDING and not past its TTL.
    pub fn is_usable(&self, now: u64) -> bool {
        self.state == QuoteState::Pending && self.expires_at > now
    }
}

// ---- keys ----------------------------------------------------------------------------

fn key(tag: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    let mut k = tag.to_vec();
    for p in parts {
        k.extend_from_slice(p);
    }
    k
}
fn request_key(id: &Uuid) -> Vec<u8> {
    key(b"r/", &[id.as_bytes()])
}
fn quote_key(rfq: &Uuid, quote: &Uuid) -> Vec<u8> {
    key(b"q/", &[rfq.as_bytes(), quote.as_bytes()])
}
fn quote_index_key(quote: &Uuid) -> Vec<u8> {
    key(b"i/", &[quote.as_bytes()])
}
fn owner_key(owner: &Uuid, at: u64, id: &Uuid) -> Vec<u8> {
    key(b"o/", &[owner.as_bytes(), &at.to_be_bytes(), id.as_bytes()])
}
fn quoter_key(owner: &Uuid, at: u64, quote: &Uuid) -> Vec<u8> {
    key(b"p/", &[owner.as_bytes(), &at.to_be_bytes(), quote.as_bytes()])
}
fn open_key(id: &Uuid) -> Vec<u8> {
    key(b"a/", &[id.as_bytes()])
}
/// Expiry index: kind 0 = request (rfq id), 1 = quote (rfq id + quote id).
fn expiry_key(at: u64, rfq: &Uuid, quote: Option<&Uuid>) -> Vec<u8> {
    match quote {
        None => key(b"x/", &[&at.to_be_bytes(), &[0], rfq.as_bytes()]),
        Some(q) => key(b"x/", &[&at.to_be_bytes(), &[1], rfq.as_bytes(), q.as_bytes()]),
    }
}

fn uuid_at(k: &[u8], at: usize) -> Option<Uuid> {
    k.get(at..at + 16).and_then(|b| Uuid::from_slice(b).ok())
}

fn load_request(store: &Store, id: &Uuid) -> Result<Option<RfqRequest>, StoreError> {
    store.get(cf::RFQ, &request_key(id))
}

/// A request's quotes, oldest first.
fn load_quotes(store: &Store, rfq: &Uuid) -> Result<Vec<RfqQuote>, StoreError> {
    let mut out = Vec::new();
    store.try_walk::<StoreError>(cf::RFQ, &key(b"q/", &[rfq.as_bytes()]), None, false, |_, v| {
        out.push(Store::decode_value::<RfqQuote>(cf::RFQ, v)?);
        Ok(ControlFlow::Continue(()))
    })?;
    out.sort_by_key(|q| (q.created_at, q.id));
    Ok(out)
}

/// The best usable quote: lowest price for a BUY request, highest for a SELL one, the
/// earlier on a tie.
pub fn best_quote(side: Side, quotes: &[RfqQuote], now: u64) -> Option<&RfqQuote> {
    let usable = quotes.iter().filter(|q| q.is_usable(now));
    match side {
        Side::Buy => usable.min_by_key(|q| (q.price, q.created_at)),
        Side::Sell => usable.min_by_key(|q| (PRICE_ONE - q.price, q.created_at)),
    }
}

/// Closes a request: writes its new state, and every still-PENDING quote's (accepted one
/// aside, which the caller sets), dropping their open and expiry index entries.
fn close(batch: &mut Batch, r: &RfqRequest, quotes: &[RfqQuote], quote_state: QuoteState) {
    batch.put(cf::RFQ, request_key(&r.id), encode(r));
    batch.delete(cf::RFQ, open_key(&r.id));
    batch.delete(cf::RFQ, expiry_key(r.expires_at, &r.id, None));
    for q in quotes.iter().filter(|q| q.state == QuoteState::Pending) {
        let q = RfqQuote { state: quote_state, ..q.clone() };
        batch.put(cf::RFQ, quote_key(&r.id, &q.id), encode(&q));
        batch.delete(cf::RFQ, expiry_key(q.expires_at, &r.id, Some(&q.id)));
    }
}

// ---- services --------------------------------------------------------------------------

/// A request for quote as the requester asks it.
pub struct NewRequest {
    pub token_id: String,
    pub side: Side,
    /// Tokens, micro-units (> 0).
    pub size: u64,
    pub ttl_secs: u64,
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
    let now = now_secs();
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
    };
    let mut batch = Batch::default();
    batch.put(cf::RFQ, request_key(&req.id), encode(&req));
    batch.put(cf::RFQ, owner_key(&req.owner, now, &req.id), Vec::new());
    batch.put(cf::RFQ, open_key(&req.id), Vec::new());
    batch.put(cf::RFQ, expiry_key(req.expires_at, &req.id, None), Vec::new());
    s.commit(batch).await?;
    Ok(req)
}

/// Offers `price` for the whole of request `rfq`. The quoter must hold what it would pay
/// now; nothing is reserved until the quote is accepted. Returns the quote and the
/// request's size.
pub async fn quote(
    s: &AppState,
    key: &ApiKeyRecord,
    rfq: Uuid,
    price: u32,
    ttl_secs: u64,
) -> Result<(RfqQuote, u64), RfqError> {
    let _one = s.rfq.lock().await;
    let now = now_secs();
    let req = load_request(&s.store, &rfq)?.filter(|x| x.is_open(now)).ok_or(RfqError::NotOpen)?;
    if *req.address == *key.address {
        return Err(RfqError::OwnRequest);
    }
    let view = s.registry.token(&req.token_id).map(|(v, _)| v).ok_or(RfqError::NotOpen)?;
    let tick = view.tick();
    if price == 0 || price >= PRICE_ONE || !price.is_multiple_of(tick) {
        return Err(RfqError::OffTick { price, tick });
    }
    // What the quoter pays if accepted: collateral when it buys, tokens when it sells.
    let (asset, owed) = match req.side {
        Side::Sell => (COLLATERAL, crate::domain::mul_div_floor(req.size, price as u64, PRICE_ONE as u64)),
        Side::Buy => (req.token_id.as_str(), req.size),
    };
    let accounts = s.engine.accounts(key.address.to_string()).await?;
    if accounts.iter().find(|(a, _)| a == asset).map_or(0, |(_, acc)| acc.available()) < owed {
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
    batch.put(cf::RFQ, quote_key(&rfq, &q.id), encode(&q));
    batch.put(cf::RFQ, quote_index_key(&q.id), rfq.as_bytes().to_vec());
    batch.put(cf::RFQ, quoter_key(&q.owner, now, &q.id), rfq.as_bytes().to_vec());
    batch.put(cf::RFQ, expiry_key(q.expires_at, &rfq, Some(&q.id)), Vec::new());
    s.commit(batch).await?;
    Ok((q, req.size))
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
    let _one = s.rfq.lock().await;
    let now = now_secs();
    let rfq = match (want_quote, want_rfq) {
        (Some(q), named) => {
            let raw = s.store.get_raw(cf::RFQ, &quote_index_key(&q))?.ok_or(RfqError::QuoteGone)?;
            let parent = Uuid::from_slice(&raw)
                .map_err(|e| StoreError::Corrupt { cf: cf::RFQ, msg: format!("quote index: {e}") })?;
            if named.is_some_and(|n| n != parent) {
                return Err(RfqError::QuoteGone);
            }
            parent
        }
        (None, Some(r)) => r,
        (None, None) => return Err(RfqError::NotOpen),
    };
    let mut req = load_request(&s.store, &rfq)?.filter(|x| *x.address == *key.address).ok_or(RfqError::NotOwned)?;
    if !req.is_open(now) {
        return Err(RfqError::NotOpen);
    }
    let quotes = load_quotes(&s.store, &rfq)?;
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
    records.put(cf::RFQ, quote_key(&rfq, &chosen.id), encode(&accepted));
    let trade = BlockTrade {
        request_id: rfq,
        quote_id: chosen.id,
        token_id: req.token_id.clone(),
        side: req.side,
        size: req.size,
        price: chosen.price,
        taker: (req.owner, Arc::from(req.address.as_str())),
        maker: (chosen.owner, Arc::from(chosen.address.as_str())),
    };
    match s.engine.block_trade(trade, records).await {
        Ok(t) => Ok(Accepted { quote_id: chosen.id, rfq_id: rfq, trade_id: t.id }),
        Err(EngineError::Rejected(Reject::NotEnoughBalance)) => Err(RfqError::NotEnoughBalance),
        Err(EngineError::Rejected(Reject::MarketClosed)) => Err(RfqError::MarketClosed),
        Err(EngineError::Rejected(_)) => Err(RfqError::Untradable),
        Err(e) => Err(e.into()),
    }
}

/// An API key's own requests with their quotes, newest first.
pub fn own_requests(s: &AppState, owner: &Uuid) -> Result<Vec<(RfqRequest, Vec<RfqQuote>)>, StoreError> {
    let mut ids = Vec::new();
    s.store.walk(cf::RFQ, &key_prefix(b"o/", owner), None, true, |k, _| {
        ids.extend(uuid_at(k, 2 + 16 + 8));
        ControlFlow::Continue(())
    })?;
    let mut items = Vec::new();
    for id in ids {
        if let Some(x) = load_request(&s.store, &id)? {
            let quotes = load_quotes(&s.store, &id)?;
            items.push((x, quotes));
        }
    }
    Ok(items)
}

fn key_prefix(tag: &[u8], owner: &Uuid) -> Vec<u8> {
    key(tag, &[owner.as_bytes()])
}

/// Every open request a quoter may answer (any key's), oldest first.
pub fn open_requests(s: &AppState, now: u64) -> Result<Vec<RfqRequest>, StoreError> {
    let mut ids = Vec::new();
    s.store.walk(cf::RFQ, b"a/", None, false, |k, _| {
        ids.extend(uuid_at(k, 2));
        ControlFlow::Continue(())
    })?;
    let mut open = Vec::new();
    for id in ids {
        if let Some(x) = load_request(&s.store, &id)?.filter(|x| x.is_open(now)) {
            open.push(x);
        }
    }
    open.sort_by_key(|x| (x.created_at, x.id));
    Ok(open)
}

/// An API key's own quotes with their requests, newest first.
pub fn own_quotes(s: &AppState, owner: &Uuid) -> Result<Vec<(RfqRequest, RfqQuote)>, StoreError> {
    let mut pairs = Vec::new();
    s.store.walk(cf::RFQ, &key_prefix(b"p/", owner), None, true, |k, v| {
        if let (Some(q), Ok(rfq)) = (uuid_at(k, 2 + 16 + 8), Uuid::from_slice(v)) {
            pairs.push((rfq, q));
        }
        ControlFlow::Continue(())
    })?;
    let mut items = Vec::new();
    for (rfq, q) in pairs {
        if let (Some(req), Some(quote)) =
            (load_request(&s.store, &rfq)?, s.store.get::<RfqQuote>(cf::RFQ, &quote_key(&rfq, &q))?)
        {
            items.push((req, quote));
        }
    }
    Ok(items)
}

// ---- expiration worker ---------------------------------------------------------------

/// Marks requests and quotes past their TTL EXPIRED (the RFQ expiration worker, from its
/// OS thread). Returns (requests, quotes) expired.
pub fn expire_due(s: &AppState, now: u64) -> Result<(usize, usize), StoreError> {
    let _one = s.rfq.blocking_lock();
    let mut due: Vec<(Uuid, Option<Uuid>)> = Vec::new();
    s.store.walk(cf::RFQ, b"x/", None, false, |k, _| {
        let at = k.get(2..10).map_or(u64::MAX, |b| u64::from_be_bytes(b.try_into().expect("8 bytes")));
        if at > now {
            return ControlFlow::Break(());
        }
        if let Some(rfq) = uuid_at(k, 11) {
            due.push((rfq, if k.get(10) == Some(&1) { uuid_at(k, 27) } else { None }));
        }
        ControlFlow::Continue(())
    })?;
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
                let Some(mut req) = load_request(&s.store, rfq)? else { continue };
                let qs = load_quotes(&s.store, rfq)?;
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
                let Some(mut quote) = s.store.get::<RfqQuote>(cf::RFQ, &quote_key(rfq, q))? else { continue };
                batch.delete(cf::RFQ, expiry_key(quote.expires_at, rfq, Some(q)));
                if quote.state == QuoteState::Pending {
                    quote.state = QuoteState::Expired;
                    batch.put(cf::RFQ, quote_key(rfq, q), encode(&quote));
                    quotes += 1;
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
            price,
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

    #[test]
    fn expiry_keys_sort_by_time_then_kind() {
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        assert!(expiry_key(5, &a, Some(&b)) < expiry_key(6, &a, None));
        assert!(expiry_key(5, &a, None) < expiry_key(5, &a, Some(&b)));
        assert_eq!(uuid_at(&expiry_key(5, &a, Some(&b)), 27), Some(b));
        assert_eq!(uuid_at(&expiry_key(5, &a, None), 11), Some(a));
    }
}
