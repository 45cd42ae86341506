//! Signed orders as clients send them (SPEC §2.2): the wire form, its parsing into what
//! the order services take, and order ids. Any malformed field is `Invalid order payload`.

use alloy_primitives::{Address, U256};
use serde::Deserialize;
use uuid::Uuid;

use super::ApiError;
use crate::app::orders::{NewOrder, SignedOrder};
use crate::auth::SignedOrderFields;
use crate::domain::{parse_u64, NumberText, OrderType, Side};

/// A signed order as sent (SPEC §2.2): every field is required, and one that is missing,
/// `null` or empty is `Invalid order payload` — except `signer`, which may be empty (the
/// maker signs then, §5.7). Numbers may come as strings or as JSON numbers.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireOrder {
    salt: NumberText,
    maker: String,
    signer: String,
    taker: String,
    token_id: NumberText,
    maker_amount: NumberText,
    taker_amount: NumberText,
    expiration: NumberText,
    nonce: NumberText,
    fee_rate_bps: NumberText,
    side: NumberText,
    signature_type: NumberText,
    pub signature: String,
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

/// Parses what the order's signature covers; any malformed field is `Invalid order payload`.
pub fn wire_fields(wire: &WireOrder) -> Result<SignedOrder, ApiError> {
    let side = match &wire.side {
        NumberText::Text(t) => Side::parse(t).ok_or_else(invalid)?,
        NumberText::Number(n) => match n.as_u64() {
            Some(0) => Side::Buy,
            Some(1) => Side::Sell,
            _ => return Err(invalid()),
        },
    };
    let sig_type = u64_of(&wire.signature_type)?;
    if sig_type > 2 {
        return Err(invalid());
    }
    let maker = addr(&wire.maker)?;
    let signer = if wire.signer.trim().is_empty() { maker } else { addr(&wire.signer)? };
    let taker = addr(&wire.taker)?;
    let token_text = wire.token_id.text().into_owned();
    let token = u256(&token_text)?;
    let maker_amount = u64_of(&wire.maker_amount)?;
    let taker_amount = u64_of(&wire.taker_amount)?;
    let expiration = u64_of(&wire.expiration)?;
    let nonce = u64_of(&wire.nonce)?;
    let fee_bps = u64_of(&wire.fee_rate_bps)?;
    let salt = u256(&wire.salt.text())?;
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
    Ok(SignedOrder { fields, side, sig_type, token_text, maker_amount, taker_amount, expiration, nonce, fee_bps })
}

/// A submission parsed into what the order services take.
pub fn new_order(sub: Submission) -> Result<NewOrder, ApiError> {
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
