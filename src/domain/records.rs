//! Records the engine produces and the store persists: markets, orders, trades, keys.
//! Plain data with serde; `store` adds the version byte, and writes orders and trades in
//! layouts of its own (`store::codec`).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::fees::fee_in_collateral;
use super::num::{Amount, Price, Side};

/// One outcome token of a binary market.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Token {
    /// Left out of a chain-mode market's creation (the chain makes it): empty until then.
    #[serde(default)]
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
    /// Tick size (`Price(100)` = 0.01).
    pub tick: Price,
    /// Minimum order size in 1e-6 token units.
    pub min_order_size: Amount,
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
    pub fn binary(condition_id: &str, yes: Token, no: Token, tick: Price, min_order_size: Amount) -> Market {
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

    /// The status a placement's reply names on a version 2 venue, as Polymarket's CLOB
    /// answers it and the unified SDK reads it: lower case, a deferred order `delayed`.
    pub fn as_v2_str(self) -> &'static str {
        match self {
            OrderStatus::Live => "live",
            OrderStatus::Matched => "matched",
            OrderStatus::Canceled => "canceled",
            OrderStatus::Deferred => "delayed",
        }
    }
}

/// The token an order trades, with its market: one per market and outcome, shared by every
/// order on that token, so a record fits a 256-byte allocation. Stored in line with the
/// order's own fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderToken {
    pub market_idx: u32,
    pub condition_id: Arc<str>,
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
/// line of its record instead of three or four. The layout is memory only: the store writes
/// the fields in an order of its own, the token's in line (`store::codec::order`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[repr(C)]
pub struct OrderRecord {
    /// API key that placed the order.
    pub owner: Uuid,
    /// What the open-order map's lookups compare (its key is the id folded to 64 bits).
    pub id: Uuid,
    /// What the order still holds reserved in the ledger (collateral for BUY, tokens for SELL).
    pub reserved: Amount,
    pub status: OrderStatus,
    pub side: Side,
    pub order_type: OrderType,
    pub post_only: bool,
    /// Limit price of the order's own token.
    pub price: Price,
    /// Market, token and outcome (shared).
    pub token: Arc<OrderToken>,
    pub fee_rate_bps: u32,
    pub signature_type: u8,
    /// The order's version: 1 (SPEC's order, domain version "1") or 2 (Polymarket's CLOB
    /// V2 order; what it signs beside these fields is in `order_v2`).
    pub version: u8,
    /// Global acceptance sequence: the time priority of the order.
    pub seq: u64,
    pub maker: Arc<str>,
    pub signer: Arc<str>,
    pub taker: Arc<str>,
    /// Size in token micro-units at submission.
    pub original_size: Amount,
    pub size_matched: Amount,
    pub maker_amount: Amount,
    pub taker_amount: Amount,
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

// With its `Arc` header an order's record takes a 256-byte block; a byte over 256 would take
// 320. mimalloc gives a request of exactly 224 bytes a 256-byte block, so the 224-byte
// block needs a record of at most 200 bytes.
const _: () = assert!(std::mem::size_of::<OrderRecord>() + 16 <= 256);

impl OrderRecord {
    /// Whether a GTD order's expiration has passed at `now` (UNIX seconds).
    pub fn expired(&self, now: u64) -> bool {
        self.expiration != 0 && self.expiration <= now
    }

    pub fn remaining(&self) -> Amount {
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
    /// The status a trade's REST record names on a version 2 venue, as Polymarket's CLOB
    /// answers it: a trade not yet settled is `MATCHED` (SPEC's `PENDING`).
    pub fn as_v2_str(self) -> &'static str {
        match self {
            TradeStatus::Pending => "MATCHED",
            other => other.as_str(),
        }
    }

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
    pub matched_amount: Amount,
    /// Execution price in the maker's own token.
    pub price: Price,
    /// The maker's own token (shared).
    pub token: Arc<TradeToken>,
    pub side: Side,
    pub fee_rate_bps: u32,
    pub fee: Amount,
}

/// One fill: a taker order against one resting maker order, at the maker's price. Held with
/// each side's token shared; stored with the tokens' fields in line (`store::codec::trade`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TradeRecord {
    pub id: Uuid,
    pub seq: u64,
    pub taker_order_id: Uuid,
    /// The taker's token, and the trade's market (shared).
    pub token: Arc<TradeToken>,
    pub side: Side,
    pub size: Amount,
    /// Execution price in the taker's token.
    pub price: Price,
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
    pub taker_fee: Amount,
    pub error_msg: Option<String>,
    /// COMPLEMENTARY, MINT or MERGE (the exchange contract's match type).
    pub match_type: MatchType,
    /// The version of the trade's orders (one venue's orders are all of its version: a
    /// change of version cancels the other's open orders).
    pub version: u8,
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
        ledger_settlement_hash(&self.id)
    }
}

/// The hash a trade settled in the ledger shows as its transaction: keccak256 over a tag
/// and the trade's ID.
pub fn ledger_settlement_hash(trade: &Uuid) -> String {
    let mut pre = b"predex-ledger-settlement".to_vec();
    pre.extend_from_slice(trade.as_bytes());
    format!("{}", alloy_primitives::keccak256(pre))
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
    /// Not stored: the key's proxy wallet and Safe (signature types 1 and 2), derived from
    /// its address when first needed (`app::derived_wallets`), each with its string, which
    /// every order naming it shares (`app::orders::maker_string`).
    #[serde(skip)]
    pub wallets: std::sync::OnceLock<DerivedWallets>,
}

/// An owner's proxy wallet and Safe: [type 1, type 2], each as 20 bytes and as the
/// lowercase 0x string predex stores.
pub type DerivedWallets = [([u8; 20], Arc<str>); 2];

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
    pub size: Amount,
    /// Collateral the order pays (BUY) or receives before its fee (SELL).
    pub amount: Amount,
    /// The fee: version 1 charges it in what the order receives (tokens for BUY,
    /// collateral for SELL), version 2 always in collateral (on top of a BUY's payment).
    pub fee: Amount,
    /// The orders' version.
    pub version: u8,
}

impl<'a> Leg<'a> {
    /// The asset and amount this leg pays (held from the match until settlement).
    pub fn pays(&self) -> (&'a str, Amount) {
        match self.side {
            Side::Buy if fee_in_collateral(self.side, self.version) => (COLLATERAL, self.amount + self.fee),
            Side::Buy => (COLLATERAL, self.amount),
            Side::Sell => (self.token, self.size),
        }
    }

    /// The asset this leg receives, the amount net of the fee, and the fee (in
    /// [`Leg::fee_asset`]).
    pub fn receives(&self) -> (&'a str, Amount, Amount) {
        match self.side {
            Side::Buy if fee_in_collateral(self.side, self.version) => (self.token, self.size, self.fee),
            Side::Buy => (self.token, self.size - self.fee, self.fee),
            Side::Sell => (COLLATERAL, self.amount - self.fee, self.fee),
        }
    }

    /// The asset its fee is paid in.
    pub fn fee_asset(&self) -> &'a str {
        if fee_in_collateral(self.side, self.version) {
            COLLATERAL
        } else {
            self.token
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
        let maker_amount = m.price.cost(q);
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
                version: self.version,
            },
            Leg {
                address: &m.maker_address,
                side: m.side,
                token: &m.token.token_id,
                size: m.matched_amount,
                amount: maker_amount,
                fee: m.fee,
                version: self.version,
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
    pub size: Amount,
    pub price: Price,
    pub trader_side: TraderSide,
    pub error_msg: Option<String>,
    /// UNIX seconds.
    pub time: u64,
}

impl NotificationRecord {
    /// How long a notification is kept: older ones are not listed, and RocksDB's
    /// compactions drop them (`store::notifications`).
    pub const KEPT_SECS: u64 = 48 * 3600;
    /// The most of a key's notifications `GET /notifications` lists: its newest.
    pub const LISTED: usize = 1_000;

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
