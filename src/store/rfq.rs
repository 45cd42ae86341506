//! The `rfq` family, typed: requests, quotes and their owner, open and expiry indexes.

use std::ops::ControlFlow;

use uuid::Uuid;

use super::keys::rfq as key;
use super::{cf, encode, Batch, Store, StoreError};
use crate::domain::rfq::{RfqQuote, RfqRequest};

impl Store {
    pub fn rfq_request(&self, id: &Uuid) -> Result<Option<RfqRequest>, StoreError> {
        self.get(cf::RFQ, &key::request(id))
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
