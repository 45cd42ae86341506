//! Records the engine produces and the store persists: markets, orders, trades, keys.
//! Every record is plain data with serde; `store` adds the version byte.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::num::Side;
use super::packed::PackedRef;

/// One outcome token of a binary market.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Token {
    pub token_id: String,
    pub outcome: String,
}

/// A binary market: two tokens whose prices sum to 1; `tokens[0]` is the book's YES side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Market {
    /// Dense internal index, assigned at creation; books are addressed by it.
    pub idx: u32,
    pub condition_id: String,
    pub question: String,
    pub slug: String,
    pub tokens: [Token; 2],
    /// Tick size in 1e-4 price units (100 = 0.01).
    pub tick: u32,
    /// Minimum order size in 1e-6 token units.
    pub min_order_size: u64,
    pub neg_risk: bool,
    #[serde(default)]
    pub neg_risk_market_id: Option<String>,
    #[serde(default = "yes")]
    pub active: bool,
    #[serde(default)]
    pub closed: bool,
    #[serde(default = "yes")]
    pub accepting_orders: bool,
}

fn yes() -> bool {
    true
}

impl Market {
    /// An open binary market: `yes` is the book's YES side. `idx` is assigned by the engine.
    pub fn binary(condition_id: &str, yes: Token, no: Token, tick: u32, min_order_size: u64) -> Market {
        Market {
            idx: 0,
            condition_id: condition_id.to_string(),
            question: String::new(),
            slug: String::new(),
            tokens: [yes, no],
            tick,
            min_order_size,
            neg_risk: false,
            neg_risk_market_id: None,
            active: true,
            closed: false,
            accepting_orders: true,
        }
    }

    /// Index (0 = YES, 1 = NO) of a token of this market.
    pub fn outcome_index(&self, token_id: &str) -> Option<u8> {
        self.tokens.iter().position(|t| t.token_id == token_id).map(|i| i as u8)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum OrderType {
    Gtc,
    Gtd,
    Fok,
    Fak,
}

impl OrderType {
    pub fn as_str(self) -> &'static str {
        match self {
            OrderType::Gtc => "GTC",
            OrderType::Gtd => "GTD",
            OrderType::Fok => "FOK",
            OrderType::Fak => "FAK",
        }
    }
    pub fn parse(s: &str) -> Option<OrderType> {
        match s {
            "GTC" => Some(OrderType::Gtc),
            "GTD" => Some(OrderType::Gtd),
            "FOK" => Some(OrderType::Fok),
            "FAK" => Some(OrderType::Fak),
            _ => None,
        }
    }
    /// Whether an unfilled remainder may rest on the book.
    pub fn rests(self) -> bool {
        matches!(self, OrderType::Gtc | OrderType::Gtd)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum OrderStatus {
    Live,
    Matched,
    Canceled,
    Deferred,
}

impl OrderStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            OrderStatus::Live => "LIVE",
            OrderStatus::Matched => "MATCHED",
            OrderStatus::Canceled => "CANCELED",
            OrderStatus::Deferred => "DEFERRED",
        }
    }
}

/// The token an order trades, with its market: one per market and outcome, shared by every
/// order on that token, so a record fits a 256-byte allocation. Serialized inline,
/// its fields take the place in an order's encoding they had as the order's own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OrderToken {
    pub market_idx: u32,
    #[serde(with = "super::packed")]
    pub condition_id: Arc<str>,
    #[serde(with = "super::packed")]
    pub token_id: Arc<str>,
    pub outcome_index: u8,
    pub outcome: Arc<str>,
}

impl OrderToken {
    /// Outcome `i`'s token of market `m`.
    pub fn of(m: &Market, i: u8) -> Arc<OrderToken> {
        let t = &m.tokens[i as usize];
        Arc::new(OrderToken {
            market_idx: m.idx,
            condition_id: m.condition_id.as_str().into(),
            token_id: t.token_id.as_str().into(),
            outcome_index: i,
            outcome: t.outcome.as_str().into(),
        })
    }
}

/// The trades an order took part in. Held in line up to one: a resting order filled once by
/// one taker (a sweep's usual maker) never allocates for it, in the same 24 bytes a `Vec`
/// takes.
pub type TradeIds = smallvec::SmallVec<[Uuid; 1]>;
const _: () = assert!(std::mem::size_of::<TradeIds>() == std::mem::size_of::<Vec<Uuid>>());

/// An accepted order, as persisted. The signed fields are kept verbatim so a settler can
/// rebuild the on-chain order (the signature in a family of its own); the recovered signer
/// is stored so restart never recomputes a signature.
///
/// Laid out for the matching thread (`#[repr(C)]`): with the `Arc`'s two counts, what a
/// cancel reads and writes (owner, id, reserved, status) and most of what a fill checks
/// fill the record's first cache line, so cancelling an order deep in a book touches one
/// line of its record instead of three or four. The layout is memory only: the record encodes
/// through [`OrderRecordOut`] in the stored field order, byte for byte
/// [`FlatOrderRecord`]'s (postcard writes a nested struct's fields in line), and decodes
/// through that flat form, which also reads version-1 JSON.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "FlatOrderRecord")]
#[repr(C)]
pub struct OrderRecord {
    /// API key that placed the order.
    pub owner: Uuid,
    /// What the open-order map's lookups compare (its key is the id folded to 64 bits).
    pub id: Uuid,
    /// What the order still holds reserved in the ledger (collateral for BUY, tokens for SELL).
    pub reserved: u64,
    pub status: OrderStatus,
    pub side: Side,
    pub order_type: OrderType,
    pub post_only: bool,
    /// Limit price of the order's own token, 1e-4 units.
    pub price: u32,
    /// Market, token and outcome (shared).
    pub token: Arc<OrderToken>,
    pub fee_rate_bps: u32,
    pub signature_type: u8,
    /// Global acceptance sequence: the time priority of the order.
    pub seq: u64,
    pub maker: Arc<str>,
    pub signer: Arc<str>,
    pub taker: Arc<str>,
    /// Size in token micro-units at submission.
    pub original_size: u64,
    pub size_matched: u64,
    pub maker_amount: u64,
    pub taker_amount: u64,
    pub expiration: u64,
    pub nonce: u64,
    pub salt: u64,
    /// Set by the API; the engine moves it to the `order_signatures` family when it accepts
    /// the order, so records written since hold it empty (`Store::order_signature` reads
    /// either). Held packed, as stored.
    pub signature: super::packed::PackedStr,
    pub associate_trades: TradeIds,
    /// UNIX seconds.
    pub created_at: u64,
}

// The first cache line of the record's block: the `Arc`'s counts, then owner .. price.
const _: () = assert!(std::mem::offset_of!(OrderRecord, price) + 4 + 16 == 64);

/// How an [`OrderRecord`] is written: its fields in the stored order, borrowed (the
/// record's own declaration order is its memory layout's).
#[derive(Serialize)]
#[serde(rename = "OrderRecord")]
struct OrderRecordOut<'a> {
    id: &'a Uuid,
    seq: u64,
    status: OrderStatus,
    owner: &'a Uuid,
    #[serde(serialize_with = "super::packed::serialize")]
    maker: &'a Arc<str>,
    #[serde(serialize_with = "super::packed::serialize")]
    signer: &'a Arc<str>,
    #[serde(serialize_with = "super::packed::serialize")]
    taker: &'a Arc<str>,
    token: &'a OrderToken,
    side: Side,
    price: u32,
    original_size: u64,
    size_matched: u64,
    maker_amount: u64,
    taker_amount: u64,
    fee_rate_bps: u32,
    expiration: u64,
    nonce: u64,
    salt: u64,
    signature_type: u8,
    signature: &'a super::packed::PackedStr,
    order_type: OrderType,
    post_only: bool,
    reserved: u64,
    associate_trades: &'a [Uuid],
    created_at: u64,
}

impl Serialize for OrderRecord {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        OrderRecordOut {
            id: &self.id,
            seq: self.seq,
            status: self.status,
            owner: &self.owner,
            maker: &self.maker,
            signer: &self.signer,
            taker: &self.taker,
            token: &self.token,
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
            signature: &self.signature,
            order_type: self.order_type,
            post_only: self.post_only,
            reserved: self.reserved,
            associate_trades: &self.associate_trades,
            created_at: self.created_at,
        }
        .serialize(s)
    }
}

// With its `Arc` header an order's record takes a 256-byte block; a byte over 256 would take
// 320. mimalloc gives a request of exactly 224 bytes a 256-byte block, so the 224-byte
// block needs a record of at most 200 bytes.
const _: () = assert!(std::mem::size_of::<OrderRecord>() + 16 <= 256);

/// [`OrderRecord`] as it is stored: the token's fields in line. Keep in step with
/// [`OrderRecordOut`] (a test checks that a record and its flat form encode alike).
#[derive(Serialize, Deserialize)]
pub struct FlatOrderRecord {
    id: Uuid,
    seq: u64,
    status: OrderStatus,
    owner: Uuid,
    #[serde(with = "super::packed")]
    maker: Arc<str>,
    #[serde(with = "super::packed")]
    signer: Arc<str>,
    #[serde(with = "super::packed")]
    taker: Arc<str>,
    market_idx: u32,
    #[serde(with = "super::packed")]
    condition_id: Arc<str>,
    #[serde(with = "super::packed")]
    token_id: Arc<str>,
    outcome_index: u8,
    outcome: Arc<str>,
    side: Side,
    price: u32,
    original_size: u64,
    size_matched: u64,
    maker_amount: u64,
    taker_amount: u64,
    fee_rate_bps: u32,
    expiration: u64,
    nonce: u64,
    salt: u64,
    signature_type: u8,
    signature: super::packed::PackedStr,
    order_type: OrderType,
    post_only: bool,
    reserved: u64,
    associate_trades: Vec<Uuid>,
    created_at: u64,
}

impl From<FlatOrderRecord> for OrderRecord {
    fn from(f: FlatOrderRecord) -> OrderRecord {
        OrderRecord {
            id: f.id,
            seq: f.seq,
            status: f.status,
            owner: f.owner,
            maker: f.maker,
            signer: f.signer,
            taker: f.taker,
            token: Arc::new(OrderToken {
                market_idx: f.market_idx,
                condition_id: f.condition_id,
                token_id: f.token_id,
                outcome_index: f.outcome_index,
                outcome: f.outcome,
            }),
            side: f.side,
            price: f.price,
            original_size: f.original_size,
            size_matched: f.size_matched,
            maker_amount: f.maker_amount,
            taker_amount: f.taker_amount,
            fee_rate_bps: f.fee_rate_bps,
            expiration: f.expiration,
            nonce: f.nonce,
            salt: f.salt,
            signature_type: f.signature_type,
            signature: f.signature,
            order_type: f.order_type,
            post_only: f.post_only,
            reserved: f.reserved,
            associate_trades: f.associate_trades.into(),
            created_at: f.created_at,
        }
    }
}

impl From<&OrderRecord> for FlatOrderRecord {
    fn from(o: &OrderRecord) -> FlatOrderRecord {
        let t = &*o.token;
        FlatOrderRecord {
            id: o.id,
            seq: o.seq,
            status: o.status,
            owner: o.owner,
            maker: o.maker.clone(),
            signer: o.signer.clone(),
            taker: o.taker.clone(),
            market_idx: t.market_idx,
            condition_id: t.condition_id.clone(),
            token_id: t.token_id.clone(),
            outcome_index: t.outcome_index,
            outcome: t.outcome.clone(),
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
            signature: o.signature.clone(),
            order_type: o.order_type,
            post_only: o.post_only,
            reserved: o.reserved,
            associate_trades: o.associate_trades.to_vec(),
            created_at: o.created_at,
        }
    }
}

/// [`OrderRecord`] with its strings borrowed from the encoded bytes: the same fields in the
/// stored order ([`OrderRecordOut`]'s), so it decodes the same postcard value without
/// allocating. Startup decodes a million of these and shares the repeated strings
/// (addresses, market ids) through an [`Interner`]. Keep in step with `OrderRecordOut` (the
/// round-trip test checks it).
#[derive(Deserialize)]
pub struct OrderRecordRef<'a> {
    id: Uuid,
    seq: u64,
    status: OrderStatus,
    owner: Uuid,
    maker: PackedRef<'a>,
    signer: PackedRef<'a>,
    taker: PackedRef<'a>,
    market_idx: u32,
    condition_id: PackedRef<'a>,
    token_id: PackedRef<'a>,
    outcome_index: u8,
    outcome: &'a str,
    side: Side,
    price: u32,
    original_size: u64,
    size_matched: u64,
    maker_amount: u64,
    taker_amount: u64,
    fee_rate_bps: u32,
    expiration: u64,
    nonce: u64,
    salt: u64,
    signature_type: u8,
    signature: PackedRef<'a>,
    order_type: OrderType,
    post_only: bool,
    reserved: u64,
    associate_trades: Vec<Uuid>,
    created_at: u64,
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

impl Interner {
    pub fn get(&mut self, s: PackedRef) -> Arc<str> {
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

impl OrderRecordRef<'_> {
    pub fn to_record(self, i: &mut Interner) -> OrderRecord {
        OrderRecord {
            id: self.id,
            seq: self.seq,
            status: self.status,
            owner: self.owner,
            maker: i.get(self.maker),
            signer: i.get(self.signer),
            taker: i.get(self.taker),
            token: i.token(self.market_idx, self.condition_id, self.token_id, self.outcome_index, self.outcome),
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
        }
    }
}

impl OrderRecord {
    pub fn remaining(&self) -> u64 {
        self.original_size - self.size_matched
    }
    /// The ledger asset the order spends: collateral for BUY, its token for SELL.
    /// The ledger key of what the order pays.
    pub fn spend_key(&self) -> &str {
        match self.side {
            Side::Buy => COLLATERAL,
            Side::Sell => &self.token.token_id,
        }
    }

    /// The ledger key of what the order receives.
    pub fn receive_key(&self) -> &str {
        match self.side {
            Side::Buy => &self.token.token_id,
            Side::Sell => COLLATERAL,
        }
    }
}

/// A ledger asset: the collateral (USDC) or an outcome token.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Asset {
    Collateral,
    Token(String),
}

impl Asset {
    pub fn parse(s: &str) -> Asset {
        if s.eq_ignore_ascii_case("USDC") || s.is_empty() {
            Asset::Collateral
        } else {
            Asset::Token(s.to_string())
        }
    }
    pub fn key(&self) -> &str {
        match self {
            Asset::Collateral => "USDC",
            Asset::Token(t) => t,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum TradeStatus {
    Pending,
    Matched,
    Mined,
    Confirmed,
    Retrying,
    Failed,
}

impl TradeStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TradeStatus::Pending => "PENDING",
            TradeStatus::Matched => "MATCHED",
            TradeStatus::Mined => "MINED",
            TradeStatus::Confirmed => "CONFIRMED",
            TradeStatus::Retrying => "RETRYING",
            TradeStatus::Failed => "FAILED",
        }
    }
}

/// The token one side of a trade traded, with its market: one per market and outcome,
/// shared by every trade on it as [`OrderToken`] is by orders — a fill clones one pointer a
/// side instead of three strings, whose counts the persister lowers again on another core.
/// A trade does not store its outcome's index, so this has none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TradeToken {
    pub market_idx: u32,
    pub condition_id: Arc<str>,
    pub token_id: Arc<str>,
    pub outcome: Arc<str>,
}

impl TradeToken {
    /// An order token's market and token, sharing its strings.
    pub fn of(t: &OrderToken) -> Arc<TradeToken> {
        Arc::new(TradeToken {
            market_idx: t.market_idx,
            condition_id: t.condition_id.clone(),
            token_id: t.token_id.clone(),
            outcome: t.outcome.clone(),
        })
    }
}

/// The maker side of one fill. Stored with its token's id and outcome in line (the market's
/// are the trade's); decoded as part of its [`TradeRecord`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MakerFill {
    pub order_id: Uuid,
    pub owner: Uuid,
    pub maker_address: Arc<str>,
    /// Tokens of the maker's own asset that changed hands.
    pub matched_amount: u64,
    /// Execution price in the maker's own token.
    pub price: u32,
    /// The maker's own token (shared).
    pub token: Arc<TradeToken>,
    pub side: Side,
    pub fee_rate_bps: u32,
    pub fee: u64,
}

/// How a [`MakerFill`] is written: its fields in the stored order, borrowed.
#[derive(Serialize)]
#[serde(rename = "MakerFill")]
struct MakerFillOut<'a> {
    order_id: &'a Uuid,
    owner: &'a Uuid,
    #[serde(serialize_with = "super::packed::serialize")]
    maker_address: &'a Arc<str>,
    matched_amount: u64,
    price: u32,
    #[serde(serialize_with = "super::packed::serialize")]
    asset_id: &'a Arc<str>,
    outcome: &'a Arc<str>,
    side: Side,
    fee_rate_bps: u32,
    fee: u64,
}

impl Serialize for MakerFill {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        MakerFillOut {
            order_id: &self.order_id,
            owner: &self.owner,
            maker_address: &self.maker_address,
            matched_amount: self.matched_amount,
            price: self.price,
            asset_id: &self.token.token_id,
            outcome: &self.token.outcome,
            side: self.side,
            fee_rate_bps: self.fee_rate_bps,
            fee: self.fee,
        }
        .serialize(s)
    }
}

/// One fill: a taker order against one resting maker order, at the maker's price. Held with
/// each side's token shared; stored with the tokens' fields in line, in the order of
/// [`FlatTradeRecord`] (which it decodes through, and which also reads version-1 JSON).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "FlatTradeRecord")]
pub struct TradeRecord {
    pub id: Uuid,
    pub seq: u64,
    pub taker_order_id: Uuid,
    /// The taker's token, and the trade's market (shared).
    pub token: Arc<TradeToken>,
    pub side: Side,
    pub size: u64,
    /// Execution price in the taker's token, 1e-4 units.
    pub price: u32,
    pub fee_rate_bps: u32,
    pub status: TradeStatus,
    pub match_time: u64,
    pub last_update: u64,
    /// Position of this fill within the taker order's match (0, 1, ...).
    pub bucket_index: u32,
    /// Taker's API key.
    pub owner: Uuid,
    pub maker_address: Arc<str>,
    pub maker_orders: Vec<MakerFill>,
    /// Empty in ledger mode, where [`TradeRecord::tx_hash`] derives the hash on display.
    pub transaction_hash: String,
    pub taker_fee: u64,
    pub error_msg: Option<String>,
    /// COMPLEMENTARY, MINT or MERGE (the exchange contract's match type).
    pub match_type: MatchType,
}

/// How a [`TradeRecord`] is written: its fields in the stored order, borrowed, the taker's
/// token in line. Keep in step with [`FlatTradeRecord`] (a test checks both encode alike).
#[derive(Serialize)]
#[serde(rename = "TradeRecord")]
struct TradeRecordOut<'a> {
    id: &'a Uuid,
    seq: u64,
    taker_order_id: &'a Uuid,
    market_idx: u32,
    #[serde(serialize_with = "super::packed::serialize")]
    condition_id: &'a Arc<str>,
    #[serde(serialize_with = "super::packed::serialize")]
    asset_id: &'a Arc<str>,
    side: Side,
    size: u64,
    price: u32,
    fee_rate_bps: u32,
    status: TradeStatus,
    match_time: u64,
    last_update: u64,
    outcome: &'a Arc<str>,
    bucket_index: u32,
    owner: &'a Uuid,
    #[serde(serialize_with = "super::packed::serialize")]
    maker_address: &'a Arc<str>,
    maker_orders: &'a [MakerFill],
    #[serde(serialize_with = "super::packed::serialize")]
    transaction_hash: &'a String,
    taker_fee: u64,
    error_msg: &'a Option<String>,
    match_type: MatchType,
}

impl Serialize for TradeRecord {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        TradeRecordOut {
            id: &self.id,
            seq: self.seq,
            taker_order_id: &self.taker_order_id,
            market_idx: self.token.market_idx,
            condition_id: &self.token.condition_id,
            asset_id: &self.token.token_id,
            side: self.side,
            size: self.size,
            price: self.price,
            fee_rate_bps: self.fee_rate_bps,
            status: self.status,
            match_time: self.match_time,
            last_update: self.last_update,
            outcome: &self.token.outcome,
            bucket_index: self.bucket_index,
            owner: &self.owner,
            maker_address: &self.maker_address,
            maker_orders: &self.maker_orders,
            transaction_hash: &self.transaction_hash,
            taker_fee: self.taker_fee,
            error_msg: &self.error_msg,
            match_type: self.match_type,
        }
        .serialize(s)
    }
}

/// [`MakerFill`] as it is stored.
#[derive(Serialize, Deserialize)]
struct FlatMakerFill {
    order_id: Uuid,
    owner: Uuid,
    #[serde(with = "super::packed")]
    maker_address: Arc<str>,
    matched_amount: u64,
    price: u32,
    #[serde(with = "super::packed")]
    asset_id: Arc<str>,
    outcome: Arc<str>,
    side: Side,
    fee_rate_bps: u32,
    fee: u64,
}

/// [`TradeRecord`] as it is stored: each side's token in line. Keep in step with
/// `TradeRecordOut`.
#[derive(Serialize, Deserialize)]
pub struct FlatTradeRecord {
    id: Uuid,
    seq: u64,
    taker_order_id: Uuid,
    market_idx: u32,
    #[serde(with = "super::packed")]
    condition_id: Arc<str>,
    /// The taker's token.
    #[serde(with = "super::packed")]
    asset_id: Arc<str>,
    side: Side,
    size: u64,
    price: u32,
    fee_rate_bps: u32,
    status: TradeStatus,
    match_time: u64,
    last_update: u64,
    outcome: Arc<str>,
    bucket_index: u32,
    owner: Uuid,
    #[serde(with = "super::packed")]
    maker_address: Arc<str>,
    maker_orders: Vec<FlatMakerFill>,
    #[serde(with = "super::packed")]
    transaction_hash: String,
    taker_fee: u64,
    error_msg: Option<String>,
    match_type: MatchType,
}

impl From<FlatTradeRecord> for TradeRecord {
    fn from(f: FlatTradeRecord) -> TradeRecord {
        let token = Arc::new(TradeToken {
            market_idx: f.market_idx,
            condition_id: f.condition_id,
            token_id: f.asset_id,
            outcome: f.outcome,
        });
        let maker_orders = f
            .maker_orders
            .into_iter()
            .map(|m| MakerFill {
                order_id: m.order_id,
                owner: m.owner,
                maker_address: m.maker_address,
                matched_amount: m.matched_amount,
                price: m.price,
                // The taker's own, when the maker traded the same token.
                token: if m.asset_id == token.token_id && m.outcome == token.outcome {
                    token.clone()
                } else {
                    Arc::new(TradeToken {
                        market_idx: token.market_idx,
                        condition_id: token.condition_id.clone(),
                        token_id: m.asset_id,
                        outcome: m.outcome,
                    })
                },
                side: m.side,
                fee_rate_bps: m.fee_rate_bps,
                fee: m.fee,
            })
            .collect();
        TradeRecord {
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
            maker_address: f.maker_address,
            maker_orders,
            transaction_hash: f.transaction_hash,
            taker_fee: f.taker_fee,
            error_msg: f.error_msg,
            match_type: f.match_type,
        }
    }
}

impl From<&TradeRecord> for FlatTradeRecord {
    fn from(t: &TradeRecord) -> FlatTradeRecord {
        FlatTradeRecord {
            id: t.id,
            seq: t.seq,
            taker_order_id: t.taker_order_id,
            market_idx: t.token.market_idx,
            condition_id: t.token.condition_id.clone(),
            asset_id: t.token.token_id.clone(),
            side: t.side,
            size: t.size,
            price: t.price,
            fee_rate_bps: t.fee_rate_bps,
            status: t.status,
            match_time: t.match_time,
            last_update: t.last_update,
            outcome: t.token.outcome.clone(),
            bucket_index: t.bucket_index,
            owner: t.owner,
            maker_address: t.maker_address.clone(),
            maker_orders: t
                .maker_orders
                .iter()
                .map(|m| FlatMakerFill {
                    order_id: m.order_id,
                    owner: m.owner,
                    maker_address: m.maker_address.clone(),
                    matched_amount: m.matched_amount,
                    price: m.price,
                    asset_id: m.token.token_id.clone(),
                    outcome: m.token.outcome.clone(),
                    side: m.side,
                    fee_rate_bps: m.fee_rate_bps,
                    fee: m.fee,
                })
                .collect(),
            transaction_hash: t.transaction_hash.clone(),
            taker_fee: t.taker_fee,
            error_msg: t.error_msg.clone(),
            match_type: t.match_type,
        }
    }
}

impl TradeRecord {
    /// The settlement's transaction hash. In ledger mode no chain transaction exists, so a
    /// CONFIRMED trade shows keccak256 over its ID (stable across restarts, shaped like a
    /// transaction hash), derived here where it is displayed rather than on the matching
    /// thread, where it was one eighth of a settled trade's cost.
    pub fn tx_hash(&self) -> String {
        if !self.transaction_hash.is_empty() || self.status != TradeStatus::Confirmed {
            return self.transaction_hash.clone();
        }
        let mut pre = b"predex-ledger-settlement".to_vec();
        pre.extend_from_slice(self.id.as_bytes());
        format!("{}", alloy_primitives::keccak256(pre))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum MatchType {
    Complementary,
    Mint,
    Merge,
}

/// API credentials as stored; the secret is kept because L2 verification needs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiKeyRecord {
    pub key: Uuid,
    pub secret: String,
    pub passphrase: String,
    /// Lowercase 0x address of the wallet that created the key. Shared: the orders its
    /// wallet signs hold this one string as their maker and signer, which the matching
    /// thread finds its accounts by.
    pub address: Arc<str>,
    pub nonce: u64,
    pub created_at: u64,
    /// Not stored: the first proxy wallet (20 bytes) this key's orders named as maker since
    /// the key was loaded, with its string, which every later order naming it shares
    /// (`api::orders::maker_string`).
    #[serde(skip)]
    pub proxy: std::sync::OnceLock<([u8; 20], Arc<str>)>,
}

/// An invitation code handed out by `/internal/waitlist/approve`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InviteRecord {
    pub code: String,
    pub email: String,
    pub expires_at: u64,
    pub used: bool,
}

/// Per-address restriction set by the operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AddressStatus {
    None,
    Banned,
    ClosedOnly,
}

/// Platform mode (SPEC §1.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    Normal,
    CancelOnly,
    TradingDisabled,
}

/// One party's side of a fill, as settlement moves it: what the order pays and what it
/// receives. Both are derived from the trade record alone, so the engine holds exactly what
/// the settlement worker later transfers, and a restart rebuilds the holds from the record.
/// It borrows the record's strings: the matching thread and the persister both derive legs,
/// and cloning the shared strings would bounce their reference counts between the two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leg<'a> {
    pub address: &'a str,
    pub side: Side,
    /// The order's own token.
    pub token: &'a str,
    /// Tokens of `token` that changed hands.
    pub size: u64,
    /// Collateral the order pays (BUY) or receives before its fee (SELL).
    pub amount: u64,
    /// Fee in what the order receives (tokens for BUY, collateral for SELL).
    pub fee: u64,
}

impl<'a> Leg<'a> {
    /// The asset and amount this leg pays (held from the match until settlement).
    pub fn pays(&self) -> (&'a str, u64) {
        match self.side {
            Side::Buy => (COLLATERAL, self.amount),
            Side::Sell => (self.token, self.size),
        }
    }

    /// The asset this leg receives, the amount net of the fee, and the fee.
    pub fn receives(&self) -> (&'a str, u64, u64) {
        match self.side {
            Side::Buy => (self.token, self.size - self.fee, self.fee),
            Side::Sell => (COLLATERAL, self.amount - self.fee, self.fee),
        }
    }
}

/// The ledger's collateral asset key.
pub const COLLATERAL: &str = "USDC";

impl TradeRecord {
    /// The taker's leg and the maker's leg. The maker pays or receives `floor(q·p_maker)`;
    /// in a complementary fill the taker gets the same amount, in a mint or merge the rest
    /// of `q`, so collateral and tokens are conserved exactly.
    pub fn legs(&self) -> [Leg<'_>; 2] {
        let m = &self.maker_orders[0];
        let q = self.size;
        let maker_amount = crate::domain::mul_div_floor(q, m.price as u64, crate::domain::PRICE_ONE as u64);
        let taker_amount = match self.match_type {
            MatchType::Complementary => maker_amount,
            MatchType::Mint | MatchType::Merge => q - maker_amount,
        };
        [
            Leg {
                address: &self.maker_address,
                side: self.side,
                token: &self.token.token_id,
                size: q,
                amount: taker_amount,
                fee: self.taker_fee,
            },
            Leg {
                address: &m.maker_address,
                side: m.side,
                token: &m.token.token_id,
                size: m.matched_amount,
                amount: maker_amount,
                fee: m.fee,
            },
        ]
    }

    /// The API keys that took part (taker first), each once.
    pub fn owners(&self) -> Vec<Uuid> {
        let mut v = vec![self.owner];
        for m in &self.maker_orders {
            if !v.contains(&m.owner) {
                v.push(m.owner);
            }
        }
        v
    }

    /// The notification its parties get once it has settled (none while it is PENDING).
    pub fn notification_kind(&self) -> Option<NotificationKind> {
        match self.status {
            TradeStatus::Confirmed => Some(NotificationKind::TradeConfirmed),
            TradeStatus::Failed => Some(NotificationKind::TradeFailed),
            _ => None,
        }
    }
}

/// What a notification reports (SPEC §2.12 shows TRADE_CONFIRMED; the rest follow it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum NotificationKind {
    TradeConfirmed,
    TradeFailed,
}

impl NotificationKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NotificationKind::TradeConfirmed => "TRADE_CONFIRMED",
            NotificationKind::TradeFailed => "TRADE_FAILED",
        }
    }
}

/// A notification for one API key, stored under (owner, trade seq, kind).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotificationRecord {
    pub kind: NotificationKind,
    pub owner: Uuid,
    pub trade_id: Uuid,
    pub trade_seq: u64,
    #[serde(with = "super::packed")]
    pub market: Arc<str>,
    #[serde(with = "super::packed")]
    pub asset_id: Arc<str>,
    /// The notified key's own side, size and price in the trade.
    pub side: Side,
    pub size: u64,
    pub price: u32,
    pub trader_side: TraderSide,
    pub error_msg: Option<String>,
    /// UNIX seconds.
    pub time: u64,
}

impl NotificationRecord {
    /// `owner`'s notification of a settled trade, with its own side of the fill, dated when
    /// the trade settled.
    pub fn of(t: &TradeRecord, owner: Uuid, kind: NotificationKind) -> NotificationRecord {
        let (side, size, price, asset, trader_side) = if owner == t.owner {
            (t.side, t.size, t.price, t.token.token_id.clone(), TraderSide::Taker)
        } else {
            let m = t.maker_orders.iter().find(|m| m.owner == owner).expect("owner took part");
            (m.side, m.matched_amount, m.price, m.token.token_id.clone(), TraderSide::Maker)
        };
        NotificationRecord {
            kind,
            owner,
            trade_id: t.id,
            trade_seq: t.seq,
            market: t.token.condition_id.clone(),
            asset_id: asset,
            side,
            size,
            price,
            trader_side,
            error_msg: t.error_msg.clone(),
            time: t.last_update,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TraderSide {
    Taker,
    Maker,
}

/// An address's exchange nonce (SPEC §1.6 incrementNonce) and the trade sequence at which
/// it last changed: a PENDING trade matched before that point carries an order signed with
/// an older nonce, which the exchange contract would refuse, so its settlement fails.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NonceState {
    pub nonce: u64,
    pub since_trade: u64,
}
