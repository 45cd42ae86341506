//! The `rfq` family, typed: requests, quotes and their owner, open and expiry indexes.

use std::ops::ControlFlow;

use uuid::Uuid;

use super::keys::rfq as key;
use super::{cf, encode, Batch, Store, StoreError};
use crate::domain::rfq::{RequestState, RfqQuote, RfqRequest};
use crate::domain::{Amount, Side};

/// A request as written before it had a `price`: postcard stores a struct as the tuple of
/// its fields, so the old layout is the same fields without the trailing one.
type RequestWithoutPrice = (Uuid, Uuid, String, String, String, Side, Amount, u64, u64, RequestState, Option<Uuid>);

fn with_no_price(r: RequestWithoutPrice) -> RfqRequest {
    let (id, owner, address, token_id, condition_id, side, size, created_at, expires_at, state, accepted_quote) = r;
    RfqRequest {
        id,
        owner,
        address,
        token_id,
        condition_id,
        side,
        size,
        created_at,
        expires_at,
        state,
        accepted_quote,
        price: None,
    }
}

impl Store {
    pub fn rfq_request(&self, id: &Uuid) -> Result<Option<RfqRequest>, StoreError> {
        match self.get_raw(cf::RFQ, &key::request(id))? {
            None => Ok(None),
            // A record from before `price` existed has no bytes for it.
            Some(v) => match Store::decode_value::<RfqRequest>(cf::RFQ, &v) {
                Ok(r) => Ok(Some(r)),
                Err(e) => Store::decode_value::<RequestWithoutPrice>(cf::RFQ, &v)
                    .map(|r| Some(with_no_price(r)))
                    .map_err(|_| e),
            },
        }
    }

    pub fn rfq_quote(&self, rfq: &Uuid, quote: &Uuid) -> Result<Option<RfqQuote>, StoreError> {
        self.get(cf::RFQ, &key::quote(rfq, quote))
    }

    /// A request's quotes, oldest first.
    pub fn rfq_quotes(&self, rfq: &Uuid) -> Result<Vec<RfqQuote>, StoreError> {
        let mut out = Vec::new();
        self.try_walk::<StoreError>(cf::RFQ, &key::quotes_of(rfq), None, false, |_, v| {
            out.push(Store::decode_value::<RfqQuote>(cf::RFQ, v)?);
            Ok(ControlFlow::Continue(()))
        })?;
        out.sort_by_key(|q| (q.created_at, q.id));
        Ok(out)
    }

    /// The request a quote answers.
    pub fn rfq_of_quote(&self, quote: &Uuid) -> Result<Option<Uuid>, StoreError> {
        match self.get_raw(cf::RFQ, &key::quote_index(quote))? {
            None => Ok(None),
            Some(raw) => Uuid::from_slice(&raw)
                .map(Some)
                .map_err(|e| StoreError::Corrupt { cf: cf::RFQ, msg: format!("quote index: {e}") }),
        }
    }

    /// An API key's requests, newest first.
    pub fn rfq_requests_of(&self, owner: &Uuid) -> Result<Vec<Uuid>, StoreError> {
        let mut ids = Vec::new();
        self.walk(cf::RFQ, &key::owner_prefix(owner), None, true, |k, _| {
            ids.extend(key::uuid_at(k, 2 + 16 + 8));
            ControlFlow::Continue(())
        })?;
        Ok(ids)
    }

    /// An API key's quotes as (request, quote), newest first.
    pub fn rfq_quotes_of(&self, owner: &Uuid) -> Result<Vec<(Uuid, Uuid)>, StoreError> {
        let mut pairs = Vec::new();
        self.walk(cf::RFQ, &key::quoter_prefix(owner), None, true, |k, v| {
            if let (Some(q), Ok(rfq)) = (key::uuid_at(k, 2 + 16 + 8), Uuid::from_slice(v)) {
                pairs.push((rfq, q));
            }
            ControlFlow::Continue(())
        })?;
        Ok(pairs)
    }

    /// The requests still open (the index, not their TTL), by id.
    pub fn open_rfq_requests(&self) -> Result<Vec<Uuid>, StoreError> {
        let mut ids = Vec::new();
        self.walk(cf::RFQ, key::OPEN, None, false, |k, _| {
            ids.extend(key::uuid_at(k, 2));
            ControlFlow::Continue(())
        })?;
        Ok(ids)
    }

    /// Requests (quote None) and quotes whose TTL ends at `now` or before, soonest first.
    pub fn rfq_expiring(&self, now: u64) -> Result<Vec<(Uuid, Option<Uuid>)>, StoreError> {
        let mut due = Vec::new();
        self.walk(cf::RFQ, key::EXPIRY, None, false, |k, _| match key::parse_expiry(k) {
            Some((at, _, _)) if at > now => ControlFlow::Break(()),
            Some((_, rfq, quote)) => {
                due.push((rfq, quote));
                ControlFlow::Continue(())
            }
            None => ControlFlow::Continue(()),
        })?;
        Ok(due)
    }
}

impl Batch {
    /// A new request, indexed under its key, as open and by its expiry.
    pub fn open_rfq_request(&mut self, r: &RfqRequest) {
        self.put(cf::RFQ, key::request(&r.id), encode(r));
        self.put(cf::RFQ, key::owner(&r.owner, r.created_at, &r.id), Vec::new());
        self.put(cf::RFQ, key::open(&r.id), Vec::new());
        self.put(cf::RFQ, key::expiry(r.expires_at, &r.id, None), Vec::new());
    }

    /// A request's final state; it leaves the open and expiry indexes.
    pub fn close_rfq_request(&mut self, r: &RfqRequest) {
        self.put(cf::RFQ, key::request(&r.id), encode(r));
        self.delete(cf::RFQ, key::open(&r.id));
        self.delete(cf::RFQ, key::expiry(r.expires_at, &r.id, None));
    }

    /// A new quote, indexed by its id, under its key and by its expiry.
    pub fn add_rfq_quote(&mut self, q: &RfqQuote) {
        self.put(cf::RFQ, key::quote(&q.rfq_id, &q.id), encode(q));
        self.put(cf::RFQ, key::quote_index(&q.id), q.rfq_id.as_bytes().to_vec());
        self.put(cf::RFQ, key::quoter(&q.owner, q.created_at, &q.id), q.rfq_id.as_bytes().to_vec());
        self.put(cf::RFQ, key::expiry(q.expires_at, &q.rfq_id, Some(&q.id)), Vec::new());
    }

    /// A quote's new state.
    pub fn put_rfq_quote(&mut self, q: &RfqQuote) {
        self.put(cf::RFQ, key::quote(&q.rfq_id, &q.id), encode(q));
    }

    /// A quote's final state; it leaves the expiry index.
    pub fn close_rfq_quote(&mut self, q: &RfqQuote) {
        self.put_rfq_quote(q);
        self.drop_rfq_quote_expiry(q);
    }

    pub fn drop_rfq_quote_expiry(&mut self, q: &RfqQuote) {
        self.delete(cf::RFQ, key::expiry(q.expires_at, &q.rfq_id, Some(&q.id)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request written before `price` existed reads back with no price; a new one keeps it.
    #[test]
    fn requests_written_before_the_price_field_still_read() {
        #[derive(serde::Serialize)]
        struct Old<'a> {
            id: Uuid,
            owner: Uuid,
            address: &'a str,
            token_id: &'a str,
            condition_id: &'a str,
            side: Side,
            size: Amount,
            created_at: u64,
            expires_at: u64,
            state: RequestState,
            accepted_quote: Option<Uuid>,
        }
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let old = Old {
            id: Uuid::new_v4(),
            owner: Uuid::new_v4(),
            address: "0xabc",
            token_id: "7",
            condition_id: "0xc",
            side: Side::Sell,
            size: Amount(5_000_000),
            created_at: 10,
            expires_at: 20,
            state: RequestState::Open,
            accepted_quote: None,
        };
        let mut b = Batch::default();
        b.put(cf::RFQ, key::request(&old.id), encode(&old));
        store.write([&b], true).unwrap();
        let read = store.rfq_request(&old.id).unwrap().unwrap();
        assert_eq!((read.side, read.size, read.expires_at, read.price), (Side::Sell, Amount(5_000_000), 20, None));

        let new = RfqRequest { id: Uuid::new_v4(), price: Some(crate::domain::Price(4_200)), ..read };
        let mut b = Batch::default();
        b.open_rfq_request(&new);
        store.write([&b], true).unwrap();
        assert_eq!(store.rfq_request(&new.id).unwrap(), Some(new));
    }
}
