//! Signed orders as clients send them (SPEC §2.2): the wire form, its parsing into what
//! the order services take, and order ids. Any malformed field is `Invalid order payload`.

use alloy_primitives::{Address, B256, U256};
use serde::Deserialize;
use uuid::Uuid;

use super::ApiError;
use crate::app::orders::{NewOrder, SignedOrder};
use crate::auth::{OrderFields, OrderFieldsV2, SignedOrderFields};
use crate::domain::{parse_u64, NumberText, OrderType, Side};

/// A signed order as sent (SPEC §2.2): every field is required, and one that is missing,
/// `null` or empty is `Invalid order payload` — except `signer`, which may be empty (the
/// maker signs then, §5.7). Numbers may come as strings or as JSON numbers. The fields
/// only one order version has are read when present, so that an order of the other
/// version is told apart from a malformed one ([`WireOrder::version`]).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireOrder {
    salt: NumberText,
    maker: String,
    signer: String,
    token_id: NumberText,
    maker_amount: NumberText,
    taker_amount: NumberText,
    expiration: NumberText,
    side: NumberText,
    signature_type: NumberText,
    pub signature: String,
    // Version 1 only (a V2 client may send `taker` too).
    taker: Option<String>,
    nonce: Option<NumberText>,
    fee_rate_bps: Option<NumberText>,
    // Version 2 only.
    timestamp: Option<NumberText>,
    metadata: Option<String>,
    builder: Option<String>,
}

impl WireOrder {
    /// The order's version by its fields: 1 when it has version 1's `nonce` or
    /// `feeRateBps` (whose fields are then all required), else 2 when it has version 2's
    /// `timestamp`, else 1. `taker` tells nothing: one V2 client sends it too.
    pub fn version(&self) -> u8 {
        if self.nonce.is_none() && self.fee_rate_bps.is_none() && self.timestamp.is_some() {
            2
        } else {
            1
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Submission {
    pub order: WireOrder,
    #[serde(default)]
    owner: Option<String>,
    #[serde(default)]
    order_type: Option<String>,
    #[serde(default)]
    post_only: Option<bool>,
    #[serde(default)]
    defer_exec: Option<bool>,
}

pub fn invalid() -> ApiError {
    ApiError::bad("Invalid order payload")
}

/// An order of a version the venue does not take. The V2 clients look for
/// `order_version_mismatch` in the error, read `GET /version` again and sign again.
pub fn version_mismatch(venue: u8) -> ApiError {
    ApiError::bad(format!("order_version_mismatch: this venue takes version {venue} orders"))
}

/// Signature type 3, a deposit wallet's ERC-1271 signature (version 2's POLY_1271).
pub fn deposit_wallet_refused() -> ApiError {
    ApiError::bad("signature type 3 (POLY_1271, deposit wallets) is not supported by this venue: sign as an EOA (0), proxy wallet (1) or Safe (2)")
}

/// Refuses an order of another version than the venue's.
pub fn check_version(wire: &WireOrder, venue: u8) -> Result<(), ApiError> {
    if wire.version() == venue {
        Ok(())
    } else {
        Err(version_mismatch(venue))
    }
}

fn u256(s: &str) -> Result<U256, ApiError> {
    let s = s.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    U256::from_str_radix(s, 10).map_err(|_| invalid())
}

fn u64_of(v: &NumberText) -> Result<u64, ApiError> {
    parse_u64(&v.text()).map_err(|_| invalid())
}

fn addr(s: &str) -> Result<Address, ApiError> {
    s.trim().parse().map_err(|_| invalid())
}

fn bytes32(s: Option<&str>) -> Result<B256, ApiError> {
    let s = s.ok_or_else(invalid)?.trim();
    let h = s.strip_prefix("0x").ok_or_else(invalid)?;
    if h.len() != 64 {
        return Err(invalid());
    }
    h.parse().map_err(|_| invalid())
}

/// Parses what the order's signature covers, in its version; any malformed field is
/// `Invalid order payload`.
pub fn wire_fields(wire: &WireOrder) -> Result<SignedOrder, ApiError> {
    let side = match &wire.side {
        NumberText::Text(t) => Side::parse(t).ok_or_else(invalid)?,
        NumberText::Number(n) => match n.as_u64() {
            Some(0) => Side::Buy,
            Some(1) => Side::Sell,
            _ => return Err(invalid()),
        },
    };
    let version = wire.version();
    let sig_type = u64_of(&wire.signature_type)?;
    if sig_type == 3 {
        return Err(deposit_wallet_refused());
    }
    if sig_type > 2 {
        return Err(invalid());
    }
    let maker = addr(&wire.maker)?;
    let signer = if wire.signer.trim().is_empty() { maker } else { addr(&wire.signer)? };
    let token_text = wire.token_id.text().into_owned();
    let token = u256(&token_text)?;
    let maker_amount = u64_of(&wire.maker_amount)?;
    let taker_amount = u64_of(&wire.taker_amount)?;
    let expiration = u64_of(&wire.expiration)?;
    let salt = u256(&wire.salt.text())?;
    let (fields, nonce, fee_bps) = if version == 2 {
        let fields = OrderFieldsV2 {
            salt,
            maker,
            signer,
            token_id: token,
            maker_amount: U256::from(maker_amount),
            taker_amount: U256::from(taker_amount),
            side: side.as_u8(),
            signature_type: sig_type as u8,
            timestamp: u256(&wire.timestamp.as_ref().ok_or_else(invalid)?.text())?,
            metadata: bytes32(wire.metadata.as_deref())?,
            builder: bytes32(wire.builder.as_deref())?,
        };
        (OrderFields::V2(fields), 0, 0)
    } else {
        let taker = addr(wire.taker.as_deref().ok_or_else(invalid)?)?;
        let nonce = u64_of(wire.nonce.as_ref().ok_or_else(invalid)?)?;
        let fee_bps = u64_of(wire.fee_rate_bps.as_ref().ok_or_else(invalid)?)?;
        let fields = SignedOrderFields {
            salt,
            maker,
            signer,
            taker,
            token_id: token,
            maker_amount: U256::from(maker_amount),
            taker_amount: U256::from(taker_amount),
            expiration: U256::from(expiration),
            nonce: U256::from(nonce),
            fee_rate_bps: U256::from(fee_bps),
            side: side.as_u8(),
            signature_type: sig_type as u8,
        };
        (OrderFields::V1(fields), nonce, fee_bps)
    };
    Ok(SignedOrder { fields, side, sig_type, token_text, maker_amount, taker_amount, expiration, nonce, fee_bps })
}

/// A submission parsed into what the order services take.
pub fn new_order(sub: Submission, venue: u8) -> Result<NewOrder, ApiError> {
    check_version(&sub.order, venue)?;
    let order_type = match sub.order_type.as_deref() {
        None | Some("") => OrderType::Gtc,
        Some(t) => OrderType::parse(&t.to_uppercase()).ok_or_else(invalid)?,
    };
    Ok(NewOrder {
        signed: wire_fields(&sub.order)?,
        signature: sub.order.signature,
        order_type,
        post_only: sub.post_only.unwrap_or(false),
        defer: sub.defer_exec.unwrap_or(false),
        owner: sub.owner,
    })
}

/// An order id as a request names it.
pub fn parse_id(s: &str) -> Result<Uuid, ApiError> {
    s.trim().parse().map_err(|_| ApiError::bad("Invalid orderID"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An order's version by its fields, as each client writes them: V1's `nonce` and
    /// `feeRateBps` make it version 1; `timestamp` without them version 2, whether or not
    /// `taker` comes along (the TypeScript V2 client sends it).
    #[test]
    fn an_orders_version_is_read_from_its_fields() {
        let common = r#""salt":1,"maker":"0x1","signer":"0x1","tokenId":"1","makerAmount":"1",
            "takerAmount":"1","expiration":"0","side":"BUY","signatureType":0,"signature":"0x""#;
        let version =
            |extra: &str| serde_json::from_str::<WireOrder>(&format!("{{{common}{extra}}}")).unwrap().version();
        assert_eq!(version(r#","taker":"0x0","nonce":"0","feeRateBps":"0""#), 1);
        assert_eq!(version(r#","timestamp":"1","metadata":"0x","builder":"0x""#), 2);
        assert_eq!(version(r#","taker":"0x0","timestamp":"1","metadata":"0x","builder":"0x""#), 2);
        assert_eq!(version(r#","timestamp":"1","nonce":"0""#), 1);
        assert_eq!(version(""), 1);
    }
}
