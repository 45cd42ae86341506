//! JSON shapes several routes share: orders (SPEC §2.5), trades (§2.7), the replies to a
//! placement and a cancel, and a market's tokens with their prices.

use std::collections::HashMap;

use serde_json::{json, Value};
use uuid::Uuid;

use super::{reply, ApiResult};
use crate::commit::views::MarketView;
use crate::domain::*;
use crate::engine::Placed;

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
        "original_size": o.original_size.fmt(),
        "size_matched": o.size_matched.fmt(),
        "price": o.price.short(),
        "outcome": o.token.outcome,
        "expiration": o.expiration.to_string(),
        "order_type": o.order_type.as_str(),
        "associate_trades": o.associate_trades.iter().map(|u| u.to_string()).collect::<Vec<_>>(),
        "created_at": o.created_at,
    })
}

/// Trade (SPEC §2.7) as seen by `viewer`; on a version 2 venue (`v2`) with the status
/// Polymarket's CLOB names (docs/reference/order-versions.md).
pub fn trade_json(t: &TradeRecord, viewer: Uuid, v2: bool) -> Value {
    let maker_fee: Amount = t.maker_orders.iter().filter(|m| m.owner == viewer).map(|m| m.fee).sum();
    json!({
        "id": t.id.to_string(),
        "taker_order_id": t.taker_order_id.to_string(),
        "market": t.token.condition_id,
        "asset_id": t.token.token_id,
        "side": t.side.as_str(),
        "size": t.size.fmt(),
        "price": t.price.short(),
        "fee_rate_bps": t.fee_rate_bps.to_string(),
        "status": if v2 { t.status.as_v2_str() } else { t.status.as_str() },
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
            "matched_amount": m.matched_amount.fmt(),
            "price": m.price.short(),
            "asset_id": m.token.token_id,
            "outcome": m.token.outcome,
            "side": m.side.as_str(),
            "fee_rate_bps": m.fee_rate_bps.to_string(),
        })).collect::<Vec<_>>(),
        "transaction_hash": t.tx_hash(),
        "trader_side": if t.owner == viewer { "TAKER" } else { "MAKER" },
        "maker_fee": maker_fee.fmt(),
        "taker_fee": t.taker_fee.fmt(),
        "error_msg": t.error_msg,
        "type": match t.match_type { MatchType::Complementary => "COMPLEMENTARY", MatchType::Mint => "MINT", MatchType::Merge => "MERGE" },
    })
}

/// The reply to one placement, written straight from the result (a `serde_json::Value`
/// costs a map node and a key string per field on the request's worker).
pub struct PlacementJson {
    error_msg: String,
    making_amount: String,
    order_id: String,
    status: &'static str,
    success: bool,
    taking_amount: String,
    trade_ids: Vec<String>,
    transactions_hashes: Vec<String>,
    /// A version 2 venue's reply: the trade ids under Polymarket's key, `tradeIDs`.
    v2: bool,
}

impl serde::Serialize for PlacementJson {
    /// Fields in the order a JSON object map writes them (by key). The trade ids under one
    /// key, the one SPEC names (`tradeIds`) or, on a version 2 venue, Polymarket's
    /// (`tradeIDs`, which the V2 clients and the unified SDK read): the Rust V2 client
    /// takes either but refuses a reply with both.
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = ser.serialize_struct("PlacementJson", 8)?;
        st.serialize_field("errorMsg", &self.error_msg)?;
        st.serialize_field("makingAmount", &self.making_amount)?;
        st.serialize_field("orderID", &self.order_id)?;
        st.serialize_field("status", self.status)?;
        st.serialize_field("success", &self.success)?;
        st.serialize_field("takingAmount", &self.taking_amount)?;
        let key = if self.v2 { "tradeIDs" } else { "tradeIds" };
        st.serialize_field(key, &self.trade_ids)?;
        st.serialize_field("transactionsHashes", &self.transactions_hashes)?;
        st.end()
    }
}

/// A placement's reply. In the ledger a trade's settlement is known when it matched, so
/// its hash is in `transactionsHashes` at once (the V2 clients then return at once rather
/// than poll `/data/trades` through a settlement tick); on chain it is not known before
/// the settlement is broadcast, and the list is empty. On a version 2 venue (`v2`) the
/// status is Polymarket's (lower case).
pub fn result_json(p: &Placed, ledger: bool, v2: bool) -> PlacementJson {
    PlacementJson {
        error_msg: String::new(),
        making_amount: p.making.fmt(),
        order_id: p.order.id.to_string(),
        status: if v2 { p.order.status.as_v2_str() } else { p.order.status.as_str() },
        success: true,
        taking_amount: p.taking.fmt(),
        trade_ids: p.trades.iter().map(|t| t.id.to_string()).collect(),
        transactions_hashes: if ledger {
            p.trades.iter().map(|t| crate::domain::ledger_settlement_hash(&t.id)).collect()
        } else {
            Vec::new()
        },
        v2,
    }
}

pub fn rejected_json(msg: &str) -> PlacementJson {
    PlacementJson {
        error_msg: msg.into(),
        making_amount: "0".into(),
        order_id: String::new(),
        status: "CANCELED",
        success: false,
        taking_amount: "0".into(),
        trade_ids: Vec::new(),
        transactions_hashes: Vec::new(),
        v2: false,
    }
}

/// The reply to a cancel (SPEC §2.4).
pub fn canceled_json(c: &crate::engine::Canceled) -> ApiResult {
    let not: HashMap<&str, &str> = c.not_canceled.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    reply(&json!({ "canceled": c.canceled.iter().map(|u| u.to_string()).collect::<Vec<_>>(), "not_canceled": not }))
}

/// Each token of a market with its price: the midpoint, else the last trade's, else 0.
pub fn token_prices(view: &MarketView) -> Vec<Value> {
    let snap = view.snapshot();
    view.market
        .tokens
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let price = match snap.best(i as u8) {
                (Some(b), Some(a)) => Price::midpoint(b, a),
                _ => snap.last_trade(i as u8).map_or(Price::ZERO, |x| x.0),
            };
            json!({ "token_id": t.token_id, "outcome": t.outcome, "price": price.short() })
        })
        .collect()
}

/// [`token_prices`] with each price a JSON number, as Polymarket's market objects carry it.
pub fn token_numbers(view: &MarketView) -> Vec<Value> {
    let mut tokens = token_prices(view);
    for t in &mut tokens {
        t["price"] = super::number(t["price"].as_str().unwrap_or("0"));
    }
    tokens
}

/// A market's fee description as `/clob-markets` publishes it (`fd`): the rate `r` and
/// exponent `e` version 2 takers pay by, taker only (`to`); null without one.
pub fn fee_description(fees: Option<FeeSchedule>) -> Value {
    fees.map_or(Value::Null, |f| {
        let r: Value = serde_json::from_str(&f.rate_text()).unwrap_or(Value::Null);
        json!({ "r": r, "e": f.exponent, "to": true })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A field takes a string or a number, as the untagged enum it replaced did, and
    /// nothing else; a number reads back as `serde_json` writes it.
    #[test]
    fn str_or_num_takes_strings_and_numbers_only() {
        let read = |json: &str| serde_json::from_str::<NumberText>(json).map(|v| v.text().into_owned());
        assert_eq!(read(r#""1234""#).unwrap(), "1234");
        assert_eq!(read(r#""a\"b""#).unwrap(), "a\"b");
        assert_eq!(read("1234").unwrap(), "1234");
        assert_eq!(read("18446744073709551615").unwrap(), u64::MAX.to_string());
        // A number reads as `serde_json::Number` reads it: past
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
            transactions_hashes: vec!["0xab".into()],
            v2: false,
        };
        let before = json!({
            "success": true,
            "orderID": "0b6c3f0e-55f3-4d6b-9c1a-7f35c1e0e6a1",
            "status": "MATCHED",
            "makingAmount": "1.5",
            "takingAmount": "3",
            "transactionsHashes": ["0xab"],
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
