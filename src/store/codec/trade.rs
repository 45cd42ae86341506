//! How a trade record is stored: one field list, held two ways — borrowed from the record
//! to write it, owned to read it — with each side's token in line.

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use uuid::Uuid;

use super::PackedText;
use crate::domain::{Amount, MakerFill, MatchType, Price, Side, TradeRecord, TradeStatus, TradeToken};

/// A trade as stored. `S` holds its packed strings, `T` its outcome's text, `H` its
/// transaction hash, `E` its error and `M` its maker fills.
#[derive(Serialize, Deserialize)]
#[serde(rename = "TradeRecord")]
struct StoredTrade<S, T, H, E, M> {
    id: Uuid,
    seq: u64,
    taker_order_id: Uuid,
    market_idx: u32,
    condition_id: S,
    /// The taker's token.
    asset_id: S,
    side: Side,
    size: Amount,
    price: Price,
    fee_rate_bps: u32,
    status: TradeStatus,
    match_time: u64,
    last_update: u64,
    outcome: T,
    bucket_index: u32,
    owner: Uuid,
    maker_address: S,
    maker_orders: M,
    transaction_hash: H,
    taker_fee: Amount,
    error_msg: E,
    match_type: MatchType,
    /// Last, so that a record of store format 1, which had no version, becomes one of
    /// format 2 by the byte appended (`upgrade`).
    version: u8,
}

/// A maker's fill as stored: its token's id and outcome in line (the market's are the
/// trade's).
#[derive(Serialize, Deserialize)]
#[serde(rename = "MakerFill")]
struct StoredFill<S, T> {
    order_id: Uuid,
    owner: Uuid,
    maker_address: S,
    matched_amount: Amount,
    price: Price,
    asset_id: S,
    outcome: T,
    side: Side,
    fee_rate_bps: u32,
    fee: Amount,
}

type FillIn = StoredFill<PackedText<Arc<str>>, Arc<str>>;
type TradeIn = StoredTrade<PackedText<Arc<str>>, Arc<str>, PackedText<String>, Option<String>, Vec<FillIn>>;

impl Serialize for MakerFill {
    fn serialize<Z: Serializer>(&self, s: Z) -> Result<Z::Ok, Z::Error> {
        StoredFill {
            order_id: self.order_id,
            owner: self.owner,
            maker_address: PackedText(&self.maker_address),
            matched_amount: self.matched_amount,
            price: self.price,
            asset_id: PackedText(&self.token.token_id),
            outcome: &self.token.outcome,
            side: self.side,
            fee_rate_bps: self.fee_rate_bps,
            fee: self.fee,
        }
        .serialize(s)
    }
}

impl Serialize for TradeRecord {
    fn serialize<Z: Serializer>(&self, s: Z) -> Result<Z::Ok, Z::Error> {
        StoredTrade {
            id: self.id,
            seq: self.seq,
            taker_order_id: self.taker_order_id,
            market_idx: self.token.market_idx,
            condition_id: PackedText(&self.token.condition_id),
            asset_id: PackedText(&self.token.token_id),
            side: self.side,
            size: self.size,
            price: self.price,
            fee_rate_bps: self.fee_rate_bps,
            status: self.status,
            match_time: self.match_time,
            last_update: self.last_update,
            outcome: &self.token.outcome,
            bucket_index: self.bucket_index,
            owner: self.owner,
            maker_address: PackedText(&self.maker_address),
            maker_orders: &self.maker_orders[..],
            transaction_hash: PackedText(&self.transaction_hash),
            taker_fee: self.taker_fee,
            error_msg: &self.error_msg,
            match_type: self.match_type,
            version: self.version,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for TradeRecord {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<TradeRecord, D::Error> {
        let f = TradeIn::deserialize(d)?;
        let token = Arc::new(TradeToken {
            market_idx: f.market_idx,
            condition_id: f.condition_id.0,
            token_id: f.asset_id.0,
            outcome: f.outcome,
        });
        let maker_orders = f
            .maker_orders
            .into_iter()
            .map(|m| MakerFill {
                order_id: m.order_id,
                owner: m.owner,
                maker_address: m.maker_address.0,
                matched_amount: m.matched_amount,
                price: m.price,
                // The taker's own, when the maker traded the same token.
                token: if *m.asset_id.0 == *token.token_id && m.outcome == token.outcome {
                    token.clone()
                } else {
                    Arc::new(TradeToken {
                        market_idx: token.market_idx,
                        condition_id: token.condition_id.clone(),
                        token_id: m.asset_id.0,
                        outcome: m.outcome,
                    })
                },
                side: m.side,
                fee_rate_bps: m.fee_rate_bps,
                fee: m.fee,
            })
            .collect();
        Ok(TradeRecord {
            id: f.id,
            seq: f.seq,
            taker_order_id: f.taker_order_id,
            token,
            side: f.side,
            size: f.size,
            price: f.price,
            fee_rate_bps: f.fee_rate_bps,
            status: f.status,
            match_time: f.match_time,
            last_update: f.last_update,
            bucket_index: f.bucket_index,
            owner: f.owner,
            maker_address: f.maker_address.0,
            maker_orders,
            transaction_hash: f.transaction_hash.0,
            taker_fee: f.taker_fee,
            error_msg: f.error_msg,
            match_type: f.match_type,
            version: f.version,
        })
    }
}
