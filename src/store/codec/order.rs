//! How an order record is stored: one field list, held three ways — borrowed from the
//! record to write it, owned to read it, and borrowed from the
//! encoded bytes to read a million of them at startup through an [`Interner`].
//!
//! The record's own field order is its memory layout ([`OrderRecord`]); the stored order is
//! [`StoredOrder`]'s, with the shared token's fields in line.

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use uuid::Uuid;

use super::PackedText;
use crate::domain::packed::{PackedRef, PackedStr};
use crate::domain::{Amount, OrderRecord, OrderStatus, OrderToken, OrderType, Price, Side};

/// An order as stored. `S` holds its packed strings, `T` its outcome's text, `G` its
/// signature and `A` its trade ids: borrowed from a record to write it, owned or borrowed
/// from the bytes to read it.
#[derive(Serialize, Deserialize)]
#[serde(rename = "OrderRecord")]
pub(in crate::store) struct StoredOrder<S, T, G, A> {
    id: Uuid,
    seq: u64,
    status: OrderStatus,
    owner: Uuid,
    maker: S,
    signer: S,
    taker: S,
    market_idx: u32,
    condition_id: S,
    token_id: S,
    outcome_index: u8,
    outcome: T,
    side: Side,
    price: Price,
    original_size: Amount,
    size_matched: Amount,
    maker_amount: Amount,
    taker_amount: Amount,
    fee_rate_bps: u32,
    expiration: u64,
    nonce: u64,
    salt: u64,
    signature_type: u8,
    signature: G,
    order_type: OrderType,
    post_only: bool,
    reserved: Amount,
    associate_trades: A,
    created_at: u64,
    /// Last, so that a record of store format 1, which had no version, becomes one of
    /// format 2 by the byte appended (`upgrade`).
    version: u8,
}

/// What writing an order encodes: the record's fields, borrowed.
pub(in crate::store) type OrderOut<'a> = StoredOrder<PackedText<&'a Arc<str>>, &'a Arc<str>, &'a PackedStr, &'a [Uuid]>;
/// An order read the ordinary way.
type OrderIn = StoredOrder<PackedText<Arc<str>>, Arc<str>, PackedStr, Vec<Uuid>>;
/// An order read with its strings borrowed from the encoded bytes.
pub(in crate::store) type OrderRef<'a> = StoredOrder<PackedRef<'a>, &'a str, PackedRef<'a>, Vec<Uuid>>;

impl<'a> From<&'a OrderRecord> for OrderOut<'a> {
    fn from(o: &'a OrderRecord) -> OrderOut<'a> {
        let t = &*o.token;
        StoredOrder {
            id: o.id,
            seq: o.seq,
            status: o.status,
            owner: o.owner,
            maker: PackedText(&o.maker),
            signer: PackedText(&o.signer),
            taker: PackedText(&o.taker),
            market_idx: t.market_idx,
            condition_id: PackedText(&t.condition_id),
            token_id: PackedText(&t.token_id),
            outcome_index: t.outcome_index,
            outcome: &t.outcome,
            side: o.side,
            price: o.price,
            original_size: o.original_size,
            size_matched: o.size_matched,
            maker_amount: o.maker_amount,
            taker_amount: o.taker_amount,
            fee_rate_bps: o.fee_rate_bps,
            expiration: o.expiration,
            nonce: o.nonce,
            salt: o.salt,
            signature_type: o.signature_type,
            signature: &o.signature,
            order_type: o.order_type,
            post_only: o.post_only,
            reserved: o.reserved,
            associate_trades: &o.associate_trades,
            created_at: o.created_at,
            version: o.version,
        }
    }
}

/// Where a stored order's strings become the record's: built afresh, or shared.
trait Strings<S, T> {
    fn string(&mut self, s: S) -> Arc<str>;
    fn token(
        &mut self,
        market_idx: u32,
        condition_id: S,
        token_id: S,
        outcome_index: u8,
        outcome: T,
    ) -> Arc<OrderToken>;
}

/// Every string its own: an order read on its own.
struct Fresh;

impl Strings<PackedText<Arc<str>>, Arc<str>> for Fresh {
    fn string(&mut self, s: PackedText<Arc<str>>) -> Arc<str> {
        s.0
    }

    fn token(
        &mut self,
        market_idx: u32,
        condition_id: PackedText<Arc<str>>,
        token_id: PackedText<Arc<str>>,
        outcome_index: u8,
        outcome: Arc<str>,
    ) -> Arc<OrderToken> {
        Arc::new(OrderToken { market_idx, condition_id: condition_id.0, token_id: token_id.0, outcome_index, outcome })
    }
}

impl<S, T, G: Into<PackedStr>> StoredOrder<S, T, G, Vec<Uuid>> {
    fn into_record(self, strings: &mut impl Strings<S, T>) -> OrderRecord {
        OrderRecord {
            id: self.id,
            seq: self.seq,
            status: self.status,
            owner: self.owner,
            maker: strings.string(self.maker),
            signer: strings.string(self.signer),
            taker: strings.string(self.taker),
            token: strings.token(self.market_idx, self.condition_id, self.token_id, self.outcome_index, self.outcome),
            side: self.side,
            price: self.price,
            original_size: self.original_size,
            size_matched: self.size_matched,
            maker_amount: self.maker_amount,
            taker_amount: self.taker_amount,
            fee_rate_bps: self.fee_rate_bps,
            expiration: self.expiration,
            nonce: self.nonce,
            salt: self.salt,
            signature_type: self.signature_type,
            // Unique per order: nothing to share, and kept packed.
            signature: self.signature.into(),
            order_type: self.order_type,
            post_only: self.post_only,
            reserved: self.reserved,
            associate_trades: self.associate_trades.into(),
            created_at: self.created_at,
            version: self.version,
        }
    }
}

impl OrderRef<'_> {
    /// The record, its repeated strings and its token shared through `interner`.
    pub(in crate::store) fn into_shared_record(self, interner: &mut Interner) -> OrderRecord {
        self.into_record(interner)
    }
}

impl Serialize for OrderRecord {
    fn serialize<Z: Serializer>(&self, s: Z) -> Result<Z::Ok, Z::Error> {
        OrderOut::from(self).serialize(s)
    }
}

impl<'de> Deserialize<'de> for OrderRecord {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<OrderRecord, D::Error> {
        OrderIn::deserialize(d).map(|o| o.into_record(&mut Fresh))
    }
}

/// One shared `Arc<str>` per distinct string, found by its stored bytes, so a repeated
/// address is unpacked from its 20 bytes to text once, not once per order; and one shared
/// [`OrderToken`] per token.
#[derive(Default)]
pub struct Interner {
    strings: ByStoredBytes<Arc<str>>,
    /// By the token id's stored bytes, with the condition id's.
    tokens: ByStoredBytes<(Box<[u8]>, Arc<OrderToken>)>,
}

/// A map keyed by a string's stored bytes.
type ByStoredBytes<V> = std::collections::HashMap<Box<[u8]>, V, foldhash::fast::RandomState>;

impl<'a> Strings<PackedRef<'a>, &'a str> for Interner {
    fn string(&mut self, s: PackedRef) -> Arc<str> {
        if let Some(a) = self.strings.get(s.0) {
            return a.clone();
        }
        let a: Arc<str> = s.unpack().as_ref().into();
        self.strings.insert(s.0.into(), a.clone());
        a
    }

    /// The shared token of an order read from the store. A token id names one market and
    /// outcome, so the first order read for it sets the rest; an order that disagrees (only
    /// a damaged store could hold one) gets a token of its own.
    fn token(
        &mut self,
        market_idx: u32,
        condition_id: PackedRef,
        token_id: PackedRef,
        outcome_index: u8,
        outcome: &str,
    ) -> Arc<OrderToken> {
        if let Some((c, t)) = self.tokens.get(token_id.0) {
            if t.market_idx == market_idx
                && t.outcome_index == outcome_index
                && *t.outcome == *outcome
                && **c == *condition_id.0
            {
                return t.clone();
            }
        }
        let t = Arc::new(OrderToken {
            market_idx,
            condition_id: condition_id.unpack().as_ref().into(),
            token_id: token_id.unpack().as_ref().into(),
            outcome_index,
            outcome: outcome.into(),
        });
        self.tokens.entry(token_id.0.into()).or_insert_with(|| (condition_id.0.into(), t.clone()));
        t
    }
}
