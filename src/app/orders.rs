//! Placing orders (SPEC §2.2, §5.7, §7.4): what a signed order must satisfy before the
//! engine sees it — platform mode, owner, signature, address restrictions, expiration,
//! tick, minimum size and durable duplicates — on the tokio workers; the engine then checks
//! what needs its state (an open order with the id, nonce, balance, post-only, FOK, FAK).

use std::sync::Arc;

use alloy_primitives::Address;
use uuid::Uuid;

use crate::app::AppState;
use crate::auth::{self, OrderFields};
use crate::commit::views::MarketView;
use crate::domain::*;
use crate::engine::{EngineError, Placed, Reject};
use crate::store::StoreError;

/// What the order services refuse (the routes give each its SPEC §7 reply).
#[derive(Debug, thiserror::Error)]
pub enum OrderError {
    #[error("Invalid order payload")]
    Invalid,
    #[error("the order owner has to be the owner of the API KEY")]
    NotOwner,
    #[error("Invalid token id")]
    UnknownToken,
    #[error("invalid signature")]
    BadSignature,
    #[error("'{0}' address banned")]
    Banned(Arc<str>),
    #[error("'{0}' address in closed only mode")]
    ClosedOnly(Arc<str>),
    #[error("invalid expiration")]
    BadExpiration,
    /// Chain mode, version 2: the maker paused itself on the exchange (`pauseUser`).
    #[error("'{0}' address paused on the exchange")]
    MakerPaused(Arc<str>),
    #[error("order {id} is invalid. Price ({shown}) breaks minimum tick size rule: {}", .tick.short())]
    OffTick { id: Uuid, shown: String, tick: Price },
    #[error("order {id} is invalid. Size ({}) lower than the minimum: {}", .size.fmt(), .min.fmt())]
    BelowMinimum { id: Uuid, size: Amount, min: Amount },
    #[error("order {0} is invalid. Duplicated.")]
    Duplicated(Uuid),
    /// The engine refused it.
    #[error("{}", reject_message(.reject, .id))]
    Rejected { reject: Reject, id: Uuid },
    #[error("trading is in cancel-only mode: new orders are not accepted")]
    CancelOnly,
    #[error("trading is disabled")]
    Disabled,
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// Chain mode: the balance could not be read from the chain.
    #[error("{0}")]
    Chain(String),
}

/// What a signature covers, parsed from the wire, and the plain numbers validation goes on
/// with.
pub struct SignedOrder {
    pub fields: OrderFields,
    pub side: Side,
    pub sig_type: u64,
    pub token_text: String,
    pub maker_amount: u64,
    pub taker_amount: u64,
    pub expiration: u64,
    pub nonce: u64,
    pub fee_bps: u64,
}

/// One order as submitted: what its signature covers, the signature, and how to place it.
pub struct NewOrder {
    pub signed: SignedOrder,
    pub signature: String,
    pub order_type: OrderType,
    pub post_only: bool,
    /// Held DEFERRED until released (`deferExec`).
    pub defer: bool,
    /// The API key the submission names as its owner, if any.
    pub owner: Option<String>,
}

/// New orders are refused outside normal mode (SPEC §1.5).
pub fn check_new_orders(s: &AppState) -> Result<(), OrderError> {
    match s.access.mode() {
        Mode::Normal => Ok(()),
        Mode::CancelOnly => Err(OrderError::CancelOnly),
        Mode::TradingDisabled => Err(OrderError::Disabled),
    }
}

/// Cancels are refused only when trading is disabled (SPEC §1.5).
pub fn check_cancels(s: &AppState) -> Result<(), OrderError> {
    match s.access.mode() {
        Mode::TradingDisabled => Err(OrderError::Disabled),
        _ => Ok(()),
    }
}

/// Validates and places one order, attributed to a builder when one is named (the
/// attribution is written in the order's own batch).
/// The caller has checked the platform mode ([`check_new_orders`]) and the request's key.
pub async fn place(
    s: &AppState,
    key: &ApiKeyRecord,
    order: NewOrder,
    builder: Option<&str>,
) -> Result<Placed, OrderError> {
    // A salt wider than the record's 64 bits is kept whole beside it, so the order settles
    // exactly as signed (`Store::order_salt`).
    let salt = order.signed.fields.salt();
    let v2 = match &order.signed.fields {
        OrderFields::V2(f) => Some((f.timestamp, f.metadata, f.builder)),
        OrderFields::V1(_) => None,
    };
    let (order, defer) = validate(s, key, order)?;
    if s.chain.is_some() {
        let paused =
            crate::app::onchain::ensure_maker(s, &order.maker).await.map_err(|e| OrderError::Chain(e.to_string()))?;
        if paused {
            return Err(OrderError::MakerPaused(order.maker.clone()));
        }
        crate::app::onchain::ensure(s, &order.maker, order.spend_key())
            .await
            .map_err(|e| OrderError::Chain(e.to_string()))?;
        if order.side == Side::Buy {
            let neg_risk = s.registry.token(&order.token.token_id).is_some_and(|(m, _)| m.market.neg_risk);
            let accounts = s.engine.accounts(order.maker.to_string()).await?;
            let reserved = accounts.iter().find(|(a, _)| a == COLLATERAL).map_or(Amount::ZERO, |(_, x)| x.reserved);
            if !crate::app::onchain::allows(s, &order.maker, neg_risk, reserved, order.maker_amount) {
                return Err(OrderError::Rejected { reject: Reject::NotEnoughBalance, id: order.id });
            }
        }
    }
    let id = order.id;
    // The builder the request names (builder headers), else the one whose code a version
    // 2 order carries: a code no builder has attributes nothing.
    let coded = match (builder, &v2) {
        (None, Some((_, _, code))) if !code.is_zero() => s.store.builder_of_code(&code.0)?,
        _ => None,
    };
    let builder = builder.or(coded.as_deref());
    let mut records = builder.map(|b| crate::app::builders::attribution(b, &order)).unwrap_or_default();
    if order.salt == u64::MAX {
        records.put_order_salt(&id, salt.to_be_bytes());
    }
    if let Some((timestamp, metadata, builder)) = v2 {
        records.put_order_v2(&id, timestamp, metadata, builder);
    }
    let _t = s.time_command("place");
    match s.engine.submit_with(order, defer, records).await {
        Ok(p) => Ok(p),
        Err(EngineError::Rejected(reject)) => Err(OrderError::Rejected { reject, id }),
        Err(e) => Err(e.into()),
    }
}

/// Checks a signed order as [`place`] does (signature, owner, token, expiry, tick and
/// size), without placing it: the record it would become.
pub fn check_signed(s: &AppState, key: &ApiKeyRecord, order: NewOrder) -> Result<OrderRecord, OrderError> {
    validate(s, key, order).map(|(o, _)| o)
}

fn validate(s: &AppState, key: &ApiKeyRecord, order: NewOrder) -> Result<(OrderRecord, bool), OrderError> {
    let NewOrder { signed, signature, order_type, post_only, defer, owner } = order;
    if post_only && !order_type.rests() {
        return Err(OrderError::Invalid);
    }
    let SignedOrder { fields, side, sig_type, token_text, maker_amount, taker_amount, expiration, nonce, fee_bps } =
        signed;
    let (maker, signer) = (fields.maker(), fields.signer());
    if maker_amount == 0 || taker_amount == 0 || fee_bps > MAX_FEE_BPS {
        return Err(OrderError::Invalid);
    }
    if let Some(owner) = owner.as_deref().filter(|o| !o.is_empty()) {
        if owner.parse::<Uuid>().ok() != Some(key.key) {
            return Err(OrderError::NotOwner);
        }
    }
    let (view, outcome) = s.registry.token(&token_text).ok_or(OrderError::UnknownToken)?;
    let market = &view.market;

    // Signature (SPEC §5.7): recovered signer must equal `signer`.
    let (hash, recovered) = auth::recover_signer(&fields, &s.domains, market.neg_risk, &signature);
    if recovered != Some(signer) {
        return Err(OrderError::BadSignature);
    }
    if !is_lower_hex(&signer, &key.address) || (sig_type == 0 && maker != signer) {
        return Err(OrderError::NotOwner);
    }
    let maker_s = maker_wallet(s, key, sig_type, maker)?;
    let signer_s = key.address.clone();
    admitted(s, [&maker_s, &signer_s], side)?;
    // The order ID is derived from the EIP-712 hash, so a resubmitted order is recognised.
    let id = auth::order_id(&hash);
    let now = now_secs();
    if (expiration != 0 && expiration <= now) || (order_type == OrderType::Gtd && expiration == 0) {
        return Err(OrderError::BadExpiration);
    }
    let (price, size) = priced(&view, order_type, side, (maker_amount, taker_amount), id)?;
    if s.store.get_order(&id)?.is_some() {
        return Err(OrderError::Duplicated(id));
    }
    // u64::MAX stands for a salt that does not fit (the whole one is stored beside).
    let salt_u64: u64 = fields.salt().try_into().unwrap_or(u64::MAX);
    let taker = match &fields {
        OrderFields::V1(f) if f.taker != Address::ZERO => format!("{:#x}", f.taker).into(),
        // Nearly every order is open to anyone: one shared string for them.
        _ => zero_address(),
    };
    Ok((
        OrderRecord {
            id,
            seq: 0,
            status: OrderStatus::Live,
            owner: key.key,
            maker: maker_s,
            signer: signer_s,
            taker,
            token: view.order_token(outcome),
            side,
            price: Price(price as u32),
            original_size: size,
            size_matched: Amount::ZERO,
            maker_amount: Amount(maker_amount),
            taker_amount: Amount(taker_amount),
            fee_rate_bps: fee_bps as u32,
            expiration,
            nonce,
            salt: salt_u64,
            signature_type: sig_type as u8,
            signature: signature.into(),
            order_type,
            post_only,
            reserved: Amount::ZERO,
            associate_trades: Default::default(),
            created_at: now,
            version: fields.version(),
        },
        defer,
    ))
}

/// Refuses an order whose maker or signer is banned, or a buy from one in close-only mode.
fn admitted(s: &AppState, addresses: [&Arc<str>; 2], side: Side) -> Result<(), OrderError> {
    for a in addresses {
        match s.access.address_status(a) {
            AddressStatus::Banned => return Err(OrderError::Banned(a.clone())),
            AddressStatus::ClosedOnly if side == Side::Buy => return Err(OrderError::ClosedOnly(a.clone())),
            _ => {}
        }
    }
    Ok(())
}

/// The maker an order of signature type `sig_type` may name: the key's own address (0),
/// or its proxy wallet (1) or Safe (2), derived by CREATE2 as the exchange checks it —
/// never a wallet the signer merely names.
fn maker_wallet(s: &AppState, key: &ApiKeyRecord, sig_type: u64, maker: Address) -> Result<Arc<str>, OrderError> {
    Ok(match sig_type {
        0 => key.address.clone(),
        1 | 2 => {
            let (bytes, text) = &crate::app::derived_wallets(s, key)[sig_type as usize - 1];
            if *bytes != maker.into_array() {
                return Err(OrderError::BadSignature);
            }
            text.clone()
        }
        _ => return Err(OrderError::BadSignature),
    })
}

/// The price of an order's own token (BUY maker/taker, SELL taker/maker, rounded against
/// the order — never better than signed — when it is not exact) and its size, checked
/// against the market's tick and, for an order that rests, its minimum size.
fn priced(
    view: &MarketView,
    order_type: OrderType,
    side: Side,
    (maker_amount, taker_amount): (u64, u64),
    id: Uuid,
) -> Result<(u64, Amount), OrderError> {
    let market = &view.market;
    let (price, exact, size) = match side {
        Side::Buy => {
            let num = maker_amount as u128 * PRICE_ONE as u128;
            ((num / taker_amount as u128) as u64, num.is_multiple_of(taker_amount as u128), taker_amount)
        }
        Side::Sell => {
            let num = taker_amount as u128 * PRICE_ONE as u128;
            (num.div_ceil(maker_amount as u128) as u64, num.is_multiple_of(maker_amount as u128), maker_amount)
        }
    };
    let tick = view.tick();
    let on_tick = exact && price % tick.units() as u64 == 0;
    let in_range = price > 0 && price < PRICE_ONE as u64;
    if !in_range || (order_type.rests() && !on_tick) {
        let shown = if price > PRICE_ONE as u64 {
            format!("{}", maker_amount as f64 / taker_amount as f64)
        } else {
            fmt_price(price as u32)
        };
        return Err(OrderError::OffTick { id, shown, tick });
    }
    let size = Amount(size);
    if order_type.rests() && size < market.min_order_size {
        return Err(OrderError::BelowMinimum { id, size, min: market.min_order_size });
    }
    Ok((price, size))
}

/// What the engine's refusal of order `id` says (SPEC §7.4).
fn reject_message(r: &Reject, id: &Uuid) -> String {
    match r {
        Reject::UnknownMarket => "Invalid token id".into(),
        Reject::Duplicated => format!("order {id} is invalid. Duplicated."),
        Reject::InvalidNonce => "invalid nonce".into(),
        Reject::NotEnoughBalance => "not enough balance / allowance".into(),
        Reject::PostOnlyCrosses => "invalid post-only order: order crosses book".into(),
        Reject::FokNotFilled => "order couldn't be fully filled. FOK orders are fully filled or killed.".into(),
        Reject::FakNoMatch => "no orders found to match with FAK order.".into(),
        Reject::NotOwner => "the order owner has to be the owner of the API KEY".into(),
        Reject::MarketClosed => "market is not accepting orders".into(),
    }
}

/// Whether `text` is `a` as `format!("{a:#x}")` writes it, without writing it on the heap.
fn is_lower_hex(a: &Address, text: &str) -> bool {
    let mut buf = [0u8; 42];
    buf[..2].copy_from_slice(b"0x");
    alloy_primitives::hex::encode_to_slice(a, &mut buf[2..]).expect("20 bytes fill 40 digits");
    buf == text.as_bytes()
}

/// The zero address as orders carry it (`taker` of an order open to anyone).
fn zero_address() -> Arc<str> {
    static ZERO: std::sync::LazyLock<Arc<str>> = std::sync::LazyLock::new(|| format!("{:#x}", Address::ZERO).into());
    ZERO.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The signer check compares with the exact text `format!("{:#x}")` writes: lowercase,
    /// `0x`, 40 digits; a checksummed or otherwise different spelling is not it.
    #[test]
    fn lower_hex_compare_is_the_formatted_text() {
        let a: Address = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed".parse().unwrap();
        assert!(is_lower_hex(&a, &format!("{a:#x}")));
        assert!(is_lower_hex(&a, "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed"));
        assert!(!is_lower_hex(&a, "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"));
        assert!(!is_lower_hex(&a, "5aaeb6053f3e94c9b9a09f33669435e7ef1beaed"));
        assert!(!is_lower_hex(&a, "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beae"));
        assert!(!is_lower_hex(&a, "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed0"));
        assert!(!is_lower_hex(&Address::ZERO, "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed"));
        assert_eq!(&*zero_address(), format!("{:#x}", Address::ZERO));
        assert!(Arc::ptr_eq(&zero_address(), &zero_address()));
    }
}
