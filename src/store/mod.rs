//! RocksDB storage: the only module that imports `rocksdb`.
//!
//! One DB, one column family per record kind (names in [`cf`]), big-endian keys so range
//! scans come out ordered, values prefixed with a version byte. One logical change is one
//! [`Batch`]; the persister (`commit::persister`) group-commits batches with a synced WAL.

mod aggregator;
pub mod index;
pub mod keys;
mod log_roll;
mod open_index;

use std::borrow::Cow;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamilyDescriptor, Direction, IteratorMode, Options, WriteBatch, WriteOptions, DB,
};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use uuid::Uuid;

use crate::domain::{
    ApiKeyRecord, Interner, InviteRecord, Market, NotificationRecord, OrderRecord, OrderRecordRef, OrderStatus,
    TradeRecord, TradeStatus,
};

/// Column-family names.
pub mod cf {
    /// order id → record of an order that is no longer open (filled, cancelled, …).
    pub const ORDERS: &str = "orders";
    /// seq (u64 BE) → record of a LIVE or DEFERRED order, so the open orders are one
    /// ordered scan in priority order at startup. (Data written before this layout holds the
    /// order id here and the record in `orders`; both are read.)
    pub const LIVE_ORDERS: &str = "live_orders";
    /// seq (u64 BE) → what changed of an open order since its record was written (status,
    /// fills, reserve), so a fill rewrites a few dozen bytes instead of the order's signed
    /// fields. Deleted with the record when the order closes.
    pub const OPEN_STATE: &str = "open_state";
    /// seq (u64 BE) → signature (its stored form) of every order accepted since this family
    /// was added; written once with the order, never read on the request path, so an
    /// order's record — on disk and held in memory while it is open — does not carry it
    /// (records written before carry it themselves). See [`Store::order_signature`].
    pub const ORDER_SIGNATURES: &str = "order_signatures";
    pub const TRADES: &str = "trades";
    /// owner (16) + trade seq (8) → trade id.
    pub const TRADES_BY_OWNER: &str = "trades_by_owner";
    pub const API_KEYS: &str = "api_keys";
    /// address (20) + nonce (8) → api key.
    pub const KEYS_BY_ADDRESS: &str = "keys_by_address";
    /// wallet + asset (`index::position`: the ledger's keys have the compact form of the
    /// position keys; a fill writes four) → balance (u64 BE).
    pub const LEDGER: &str = "ledger";
    pub const MARKETS: &str = "markets";
    pub const INVITES: &str = "invites";
    pub const WAITLIST: &str = "waitlist";
    /// address → restriction (banned, closed-only).
    pub const ADDRESSES: &str = "addresses";
    /// proxy address → signer address it is bound to.
    pub const PROXIES: &str = "proxies";
    /// trade seq (u64 BE) → trade id of every PENDING trade: the settlement worker's queue,
    /// maintained with the trade record (see `Op::Trade`).
    pub const PENDING_TRADES: &str = "pending_trades";
    /// owner (16) + trade seq (8) + kind (1) → notification record.
    pub const NOTIFICATIONS: &str = "notifications";
    /// maker address → its exchange nonce and the trade seq at which it last changed.
    pub const NONCES: &str = "nonces";
    pub const META: &str = "meta";
    /// Analytics indexes and counters written with each trade (see [`super::index`]).
    pub const TRADES_BY_MARKET: &str = "trades_by_market";
    pub const TRADES_BY_WALLET: &str = "trades_by_wallet";
    pub const POSITIONS: &str = "positions";
    pub const MARKET_HOLDERS: &str = "market_holders";
    pub const WALLET_DAYS: &str = "wallet_days";
    pub const MARKET_STATS: &str = "market_stats";
    /// log sequence (u64 BE) → sign (0: add, 1: take back) + trade id, per trade whose
    /// wallet analytics (`trades_by_wallet` and the position counters) are not written
    /// yet; see [`super::aggregator`].
    pub const ANALYTICS_LOG: &str = "analytics_log";
    /// Families written behind the trades (see [`super::aggregator`]): a read of them first
    /// waits for what was handed over before it.
    pub const BEHIND: &[&str] = &[TRADES_BY_WALLET, POSITIONS, MARKET_HOLDERS, WALLET_DAYS];
    /// Catalogue: id (u64 BE) → series / event record; condition id → market metadata;
    /// (kind, parent id, inverted seq) → comment.
    pub const SERIES: &str = "series";
    pub const EVENTS: &str = "events";
    pub const MARKET_META: &str = "market_meta";
    pub const COMMENTS: &str = "comments";
    /// Bridge: id (u64 BE) → deposit or withdrawal record; address + `/` + id (BE) → ();
    /// registered bridge addresses, credited source transactions and PROCESSING
    /// withdrawals (see `bridge::transfers`).
    pub const TRANSFERS: &str = "transfers";
    pub const TRANSFERS_BY_ADDRESS: &str = "transfers_by_address";
    pub const BRIDGE: &str = "bridge";
    /// A wallet's splits, merges and redeems: address + `/` + time (8) + tx hash (32) →
    /// record (trades have their own index).
    pub const ACTIVITY: &str = "activity";
    /// Liquidity rewards (see `incentives`): `c/` + condition id → a market's reward
    /// config; `e/` + day (4) + address + `/` + market (4) → earnings counters (merged);
    /// `p/` + address + `/` + day (4) → the day's payout.
    pub const REWARDS: &str = "rewards";
    /// Maker rebates: address + `/` + day (4) → the day's rebate.
    pub const REBATES: &str = "rebates";
    /// Bonds and resolution (see `resolution`): `b/` agent `/` condition → bond; `m/`
    /// condition `/` agent → (); `r/` condition → proposal; `k/` condition → cluster.
    pub const BONDS: &str = "bonds";
    /// Requests for quote (see `rfq`): `r/` rfq → request; `q/` rfq quote → quote; `i/`
    /// quote → rfq; `o/` owner time rfq → (); `a/` rfq → () while open; `x/` expiry kind
    /// rfq [quote] → () while open or PENDING.
    pub const RFQ: &str = "rfq";
    /// Builder and relayer API keys and builder attribution (see `builders`): `k/` key →
    /// key; `a/` address `/` kind `/` key → (); `n/` builder → claiming address; `o/`
    /// builder `/` order → ().
    pub const BUILDERS: &str = "builders";

    /// Families whose values are counters summed by the merge operator.
    pub const COUNTERS: &[&str] = &[POSITIONS, MARKET_HOLDERS, WALLET_DAYS, MARKET_STATS, REWARDS];

    /// Families whose keys a fill writes scattered over the key space (by order id, owner,
    /// wallet) rather than appended (by sequence), each key once: their memtables are kept
    /// small (`SCATTERED_WRITE_BUFFER_BYTES`). The counters and the ledger are scattered too
    /// but rewrite their few keys, and are sized apart (`REWRITTEN_WRITE_BUFFER_BYTES`).
    pub const SCATTERED: &[&str] = &[ORDERS, TRADES_BY_OWNER, NOTIFICATIONS, TRADES_BY_WALLET];

    /// Families of earlier layouts, dropped when a store that has them opens: `order_seq`
    /// (order id → seq of an open order) and `open_by_owner` (owner and seq → id of an
    /// open order), both now kept in memory (`open_index`).
    pub const RETIRED: &[&str] = &["order_seq", "open_by_owner"];

    /// Written only while logs are written ahead at open (`log_roll`): its one key, written
    /// into the first of them and unflushed, keeps every log from that one on alive until
    /// the family is flushed, so each log written ahead retires to the reuse list at the
    /// end instead of being reused at once. Flushing it (not dropping it, which would need
    /// the database `&mut`) is what lets the logs be written while other threads read the
    /// store. A crash meanwhile leaves the key in the log; the next open replays and
    /// flushes it with the rest. Its memtable is empty the rest of the time.
    pub const LOG_PIN: &str = "log_pin";

    pub const ALL: &[&str] = &[
        ORDERS,
        LIVE_ORDERS,
        OPEN_STATE,
        ORDER_SIGNATURES,
        TRADES,
        TRADES_BY_OWNER,
        API_KEYS,
        KEYS_BY_ADDRESS,
        LEDGER,
        MARKETS,
        INVITES,
        WAITLIST,
        ADDRESSES,
        PROXIES,
        PENDING_TRADES,
        NOTIFICATIONS,
        NONCES,
        META,
        TRADES_BY_MARKET,
        TRADES_BY_WALLET,
        POSITIONS,
        MARKET_HOLDERS,
        WALLET_DAYS,
        MARKET_STATS,
        ANALYTICS_LOG,
        SERIES,
        EVENTS,
        MARKET_META,
        COMMENTS,
        TRANSFERS,
        TRANSFERS_BY_ADDRESS,
        BRIDGE,
        ACTIVITY,
        REWARDS,
        REBATES,
        BONDS,
        RFQ,
        BUILDERS,
        LOG_PIN,
    ];
}

/// Meta keys.
pub mod meta {
    pub const NEXT_ORDER_SEQ: &[u8] = b"next_order_seq";
    pub const NEXT_TRADE_SEQ: &[u8] = b"next_trade_seq";
    pub const MODE: &[u8] = b"mode";
    pub const CATALOGUE_LOADED: &[u8] = b"catalogue_loaded";
    pub const EVENTS_LOADED: &[u8] = b"events_loaded";
    /// Set once the ledger's and the position counters' keys of the text layout were moved
    /// to the compact one (see `index::position`).
    pub const COMPACT_WALLET_KEYS: &[u8] = b"compact_wallet_keys";
    /// Set once `trades_by_wallet` keys of the text layout have moved to compact ones.
    pub const COMPACT_WALLET_TRADES: &[u8] = b"compact_wallet_trades";
    /// The last UTC day (u32) whose rewards and rebates were paid.
    pub const PAYOUTS_THROUGH: &[u8] = b"payouts_through";

    /// Key of a market's last trade (YES price, taker side in YES terms), written by every
    /// crossing order ([`super::Op::LastTrade`]).
    pub fn last_trade(market_idx: u32) -> Vec<u8> {
        [b"last_trade/".as_slice(), &market_idx.to_be_bytes()].concat()
    }
}

/// Value format versions: 1 = JSON (the first format, still read), 2 = postcard, a compact
/// binary serde format: about a third of the bytes, and the WAL is what bounds durable
/// throughput; 3 = postcard with records' hex and decimal strings as bytes
/// ([`crate::domain::packed`]). Version 2 values read through the same code (their strings
/// are plain text, which the packed form reads as itself); the new number makes an earlier
/// binary refuse version 3 values rather than misread them.
const VERSION_JSON: u8 = 1;
const VERSION_TEXT: u8 = 2;
const VERSION: u8 = 3;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("rocksdb: {0}")]
    Db(#[from] rocksdb::Error),
    #[error("corrupt record in {cf}: {msg}")]
    Corrupt { cf: &'static str, msg: String },
}

/// Encodes a record: version byte + postcard.
pub fn encode<T: Serialize>(v: &T) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.push(VERSION);
    postcard::to_extend(v, out).expect("records serialize")
}

fn decode<T: DeserializeOwned>(cf: &'static str, bytes: &[u8]) -> Result<T, StoreError> {
    let corrupt = |msg: String| StoreError::Corrupt { cf, msg };
    match bytes.split_first() {
        Some((&(VERSION | VERSION_TEXT), rest)) => postcard::from_bytes(rest).map_err(|e| corrupt(e.to_string())),
        Some((&VERSION_JSON, rest)) => serde_json::from_slice(rest).map_err(|e| corrupt(e.to_string())),
        _ => Err(corrupt("unknown version".into())),
    }
}

/// An order record, its repeated strings shared through `interner` (postcard values decode
/// without allocating them; version-1 JSON goes the ordinary way).
pub fn decode_order(bytes: &[u8], interner: &mut Interner) -> Result<OrderRecord, StoreError> {
    match bytes.split_first() {
        Some((&(VERSION | VERSION_TEXT), rest)) => postcard::from_bytes::<OrderRecordRef>(rest)
            .map(|r| r.to_record(interner))
            .map_err(|e| StoreError::Corrupt { cf: cf::ORDERS, msg: e.to_string() }),
        _ => decode(cf::ORDERS, bytes),
    }
}

/// One write in a batch. Records travel typed and are encoded by the persister, so the
/// engine thread never pays for serialisation.
#[derive(Debug, Clone)]
pub enum Op {
    Put(&'static str, Vec<u8>, Vec<u8>),
    Delete(&'static str, Vec<u8>),
    /// A merge operand for a counter family.
    Merge(&'static str, Vec<u8>, Vec<u8>),
    /// An order and its open-order index entries.
    Order(Arc<OrderRecord>, Stored),
    /// A trade and its per-owner index entries; once settled (CONFIRMED or FAILED), also a
    /// notification for each API key that took part.
    Trade(Arc<TradeRecord>),
    /// A ledger balance: (address, asset, balance).
    Balance(Arc<str>, Arc<str>, u64),
    /// An accepted order's signature, under its sequence in `order_signatures` (the key is
    /// built by the persister, so the matching thread allocates nothing for it).
    Signature(u64, crate::domain::packed::PackedStr),
    /// A market's last trade (YES price, the taker's side in YES terms) under
    /// [`meta::last_trade`]; key and value are built by the persister, as for signatures.
    LastTrade(u32, crate::domain::LastTrade),
}

/// What the store held of an order before an [`Op::Order`] writes it. The record and the
/// in-memory open-order index entries (`open_index`: by id, by owner) are written
/// when the order opens and deleted when it closes; in between, a fill or a status change
/// writes only what changed (`open_state`). An order that closes on arrival (a filled
/// taker) writes its record only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// Nothing: the order is new.
    New,
    /// The order as open (LIVE or DEFERRED), with its index entries.
    Open,
}

/// The writes of one logical change, applied atomically.
#[derive(Debug, Default, Clone)]
pub struct Batch {
    pub ops: Vec<Op>,
}

impl Batch {
    /// A matching-thread command's batch, with room for the writes most commands make (a
    /// resting order writes two, a cancel one or two): allocated once at the right size,
    /// not grown on the first write.
    pub fn for_command() -> Batch {
        Batch { ops: Vec::with_capacity(4) }
    }

    /// Room for `n` more writes. A batch nothing was written to yet is given a new list of
    /// that size rather than grown: growing copies the old list, here for nothing.
    pub fn reserve(&mut self, n: usize) {
        if self.ops.is_empty() && self.ops.capacity() < n {
            self.ops = Vec::with_capacity(n);
        } else {
            self.ops.reserve(n);
        }
    }

    pub fn put(&mut self, cf: &'static str, key: impl Into<Vec<u8>>, value: Vec<u8>) {
        self.ops.push(Op::Put(cf, key.into(), value));
    }
    pub fn delete(&mut self, cf: &'static str, key: impl Into<Vec<u8>>) {
        self.ops.push(Op::Delete(cf, key.into()));
    }
    pub fn merge(&mut self, cf: &'static str, key: impl Into<Vec<u8>>, operand: Vec<u8>) {
        self.ops.push(Op::Merge(cf, key.into(), operand));
    }
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Writes an order; the open-order indexes follow its status and what the store held
    /// of it. The persister also advances the stored order sequence past it.
    pub fn put_order(&mut self, o: Arc<OrderRecord>, stored: Stored) {
        self.ops.push(Op::Order(o, stored));
    }

    /// Writes a trade, indexed under every API key that took part.
    pub fn put_trade(&mut self, t: Arc<TradeRecord>) {
        self.ops.push(Op::Trade(t));
    }

    /// Writes an accepted order's signature apart from its record (see
    /// [`cf::ORDER_SIGNATURES`]).
    pub fn put_signature(&mut self, seq: u64, signature: crate::domain::packed::PackedStr) {
        self.ops.push(Op::Signature(seq, signature));
    }

    pub fn put_balance(&mut self, address: Arc<str>, asset: Arc<str>, balance: u64) {
        self.ops.push(Op::Balance(address, asset, balance));
    }

    /// Writes a market's last trade (see [`Op::LastTrade`]).
    pub fn put_last_trade(&mut self, market_idx: u32, last: crate::domain::LastTrade) {
        self.ops.push(Op::LastTrade(market_idx, last));
    }
}

/// What one write does to one key, before it goes into the WriteBatch.
#[derive(Clone, Copy)]
enum Kind {
    Put,
    Delete,
    Merge,
}

struct Entry {
    key: Vec<u8>,
    kind: Kind,
    value: Vec<u8>,
}

/// A family's writes in key order, with the writes to one key (adjacent, in the order they
/// were made) reduced to what the group's atomic batch leaves: a put or a delete makes every
/// earlier write to its key moot, and in a counter family a run of merges (and merges onto
/// a put) sum into one write. Nothing between them is ever visible, so the result reads the
/// same, and each write saved is a memtable insert saved — the persister's largest cost
/// once the bytes were cut. Keys written many times per group are the hot ones: a market
/// maker's balances, its position counters, a market's totals, a resting order's state.
fn coalesce(cf: &'static str, family: Vec<Entry>) -> Vec<Entry> {
    let counters = cf::COUNTERS.contains(&cf);
    let mut out: Vec<Entry> = Vec::with_capacity(family.len());
    for e in family {
        let same = |o: &Vec<Entry>| o.last().is_some_and(|l| l.key == e.key);
        match e.kind {
            Kind::Put | Kind::Delete => {
                while same(&out) {
                    out.pop();
                }
            }
            Kind::Merge if counters && same(&out) => {
                let last = out.last_mut().expect("same key");
                if matches!(last.kind, Kind::Put | Kind::Merge) {
                    last.value = index::add_counters(&last.value, &e.value);
                    continue;
                }
            }
            Kind::Merge => {}
        }
        out.push(e);
    }
    out
}

/// A group's writes by column family, collected so each family's can be put in key order
/// before they reach the WriteBatch.
#[derive(Default)]
struct Entries {
    families: Vec<(&'static str, Vec<Entry>)>,
    last: usize,
    /// Orders that open (id, seq, owner) and that close, in the order written.
    opened: Vec<(Uuid, u64, Uuid)>,
    closed: Vec<(Uuid, u64, Uuid)>,
    /// Trades whose wallet analytics change, with the change's sign, in the order written.
    analytics: Vec<(Arc<TradeRecord>, i64)>,
}

impl Entries {
    fn family(&mut self, cf: &'static str) -> &mut Vec<Entry> {
        // Consecutive writes mostly go to one family, and a group touches a dozen or two.
        if self.families.get(self.last).is_none_or(|(n, _)| *n != cf) {
            self.last = match self.families.iter().position(|(n, _)| *n == cf) {
                Some(i) => i,
                None => {
                    self.families.push((cf, Vec::new()));
                    self.families.len() - 1
                }
            };
        }
        &mut self.families[self.last].1
    }
    fn put(&mut self, cf: &'static str, key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) {
        self.family(cf).push(Entry { key: key.into(), kind: Kind::Put, value: value.into() });
    }
    fn delete(&mut self, cf: &'static str, key: impl Into<Vec<u8>>) {
        self.family(cf).push(Entry { key: key.into(), kind: Kind::Delete, value: Vec::new() });
    }
    fn merge(&mut self, cf: &'static str, key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) {
        self.family(cf).push(Entry { key: key.into(), kind: Kind::Merge, value: value.into() });
    }
}

/// The part of an open order that changes after it is written: `live_orders` holds the
/// record as it opened, `open_state` the latest of these, which reads lay over it.
#[derive(Serialize, Deserialize)]
struct OpenState<'a> {
    status: OrderStatus,
    size_matched: u64,
    reserved: u64,
    associate_trades: Cow<'a, [Uuid]>,
}

impl<'a> OpenState<'a> {
    fn of(o: &'a OrderRecord) -> Self {
        OpenState {
            status: o.status,
            size_matched: o.size_matched,
            reserved: o.reserved,
            associate_trades: Cow::Borrowed(&o.associate_trades),
        }
    }
    fn lay_over(self, o: &mut OrderRecord) {
        o.status = self.status;
        o.size_matched = self.size_matched;
        o.reserved = self.reserved;
        o.associate_trades = self.associate_trades.into_owned().into();
    }
}

/// Batches encoded into one RocksDB WriteBatch, ready for [`Store::commit`], with the
/// orders they close (which leave the open-order index once written).
pub struct Prepared {
    batch: WriteBatch,
    closed: Vec<(Uuid, u64, Uuid)>,
    analytics: Vec<aggregator::Event>,
}

impl Prepared {
    /// The bytes the write appends to the WAL (RocksDB's batch representation).
    pub fn bytes(&self) -> usize {
        self.batch.size_in_bytes()
    }
}

/// The key a key moves to in a layout change (`Store::move_keys`); None to stay.
type NewKey = fn(&[u8]) -> Option<Vec<u8>>;

/// Raw (key, value) pairs of a scan.
pub type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// Shared RocksDB block cache.
const BLOCK_CACHE_BYTES: usize = 256 << 20;

/// Memtable size of the families in `cf::SCATTERED` (RocksDB's default, kept by the
/// families keyed by sequence, is 64 MB). An insert of a scattered key walks the skip list's
/// levels through cache misses, and fills spread over many wallets are mostly such inserts,
/// which a shorter list makes cheaper. Smaller still does not pay: these keys are all
/// distinct, so every flush adds its whole size to the compactions.
const SCATTERED_WRITE_BUFFER_BYTES: usize = 16 << 20;

/// Memtable size of the counter families and the ledger, whose few keys (a wallet's balance
/// of an asset, a position) are rewritten or merged with every fill: a memtable holds every
/// version, a flush keeps one, so small memtables cost little compaction and keep the skip
/// list shallow — ≈ 10% more durable fills than 16 MB, spread or hot (same section).
const REWRITTEN_WRITE_BUFFER_BYTES: usize = 4 << 20;

/// Memtable sizes of the two families every new resting order writes, by sequence: its
/// record (≈ 200 bytes) and its signature (≈ 65). A start after kill -9 reads the log back
/// to the oldest write any memtable still held, inserts again what the unflushed memtables
/// held, and flushes them before the store opens: at RocksDB's default of 64 MB each these
/// two were most of that work, and the signatures' (three times as many orders as the
/// records' at the same size) reached furthest back. Sized to hold about as many orders as
/// each other, the first start after kill -9 replays less and holds less memory, at no cost
/// to durable throughput.
const LIVE_ORDERS_WRITE_BUFFER_BYTES: usize = 32 << 20;
/// See [`LIVE_ORDERS_WRITE_BUFFER_BYTES`].
const SIGNATURES_WRITE_BUFFER_BYTES: usize = 16 << 20;

/// Memtables a family with smaller ones (the sizes above) may hold, the one written and
/// those waiting for the flush thread. With RocksDB's default of two, a small memtable
/// fills while the one before waits behind other families' flushes (one flush thread on
/// two cores), and every write stops until it is flushed (commits of hundreds of ms under
/// fills spread over many wallets); with three, writes do not stop. At most 152 MB more
/// memtable, held only while flushes lag (and less
/// than `live_orders` and `order_signatures` could hold at RocksDB's default sizes).
const SMALL_MEMTABLES: i32 = 3;

/// Bound on the write-ahead log kept on disk. A log file is deleted only once every family
/// with writes in it has flushed them, and RocksDB's default bound (four times the sum of
/// every family's write buffers: ≈ 14 GB here) lets a rarely written family pin every log
/// since its last write, all of which a start after kill -9 reads back (≈ 7 ms per MB on
/// the build machine). Past this size RocksDB flushes the families that hold the oldest
/// log. Under steady writes the log stays between about half the bound and the bound, and
/// a start after kill -9 replays it at 3–5 ms per MB: 128 MB keeps that replay near half a
/// second at worst. A smaller bound forces flushes that cost the durable writes more than
/// the shorter replay saves.
const MAX_WAL_BYTES: u64 = 128 << 20;

/// Obsolete write-ahead log files kept for reuse. A sync of a log that grows must also
/// journal the file's new size (ext4 here: ≈ 120 µs per 600-byte `fdatasync` against ≈ 82
/// µs for the same write inside a file's existing size); a recycled log is overwritten in
/// place, so most syncs write data only. Logs become obsolete often enough for this since
/// [`MAX_WAL_BYTES`] bounds them. The
/// bundled RocksDB (10.4) recovers recycled logs in point-in-time mode, the mode used here:
/// a recycled record carries its log's number, and replay stops at the first record of the
/// file's previous life. Only logs retired since the open are reused: with log files written
/// ahead ([`log_roll`]) the store keeps as many as it wrote.
const RECYCLED_WAL_FILES: usize = 4;

/// What a startup scan thread sends: its next decoded open orders, or why it stopped.
type ScanChunk = Result<Vec<Arc<OrderRecord>>, StoreError>;

/// The embedded database.
pub struct Store {
    db: Arc<DB>,
    /// Open order id → seq (see [`open_index`]).
    open: open_index::OpenIndex,
    /// Highest next-sequence values written to `meta` (or prepared for writing), so each
    /// group commit advances them once, only when they grow.
    next_order_seq: AtomicU64,
    next_trade_seq: AtomicU64,
    /// Writes the wallet analytics behind the trades; `next_log` is the next sequence of
    /// its log.
    analytics: aggregator::Aggregator,
    next_log: AtomicU64,
    /// Starts a new log before the live one outgrows its file (see [`log_roll`]).
    logs: Arc<log_roll::LogRoll>,
    /// The thread writing the log files ahead, until [`Store::wait_logs_ahead`] joins it.
    ahead: parking_lot::Mutex<Option<std::thread::JoinHandle<Result<(), StoreError>>>>,
}

impl Drop for Store {
    fn drop(&mut self) {
        // The thread holds the database open: close it here, not whenever that ends.
        if let Err(e) = self.wait_logs_ahead() {
            tracing::warn!(error = %e, "writing the log files ahead failed");
        }
        self.analytics.stop();
        if let Err(e) = self.flush() {
            tracing::warn!(error = %e, "flush on close failed; the next start replays the WAL");
        }
    }
}

impl Store {
    /// Opens (or creates) the store at `path`, with no log file written ahead.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::open_with(path, 0)
    }

    /// Opens the store with `logs_ahead` log files written ahead, so the log's syncs
    /// overwrite files in place from the first write (0, or at least 2; see [`log_roll`]).
    ///
    /// The files are written on a thread of their own, started once the open is done
    /// (≈ 0.2 s of writes, mostly the disk's, where the engine's recovery after it is the
    /// CPU's): reads may go on meanwhile, but nothing should be written before
    /// [`Store::wait_logs_ahead`] returns — a write would be correct, but its family's
    /// memtable would keep the files from retiring together, so that some syncs appended.
    pub fn open_with(path: &Path, logs_ahead: usize) -> Result<Store, StoreError> {
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        opts.set_max_background_jobs(2);
        opts.set_max_total_wal_size(MAX_WAL_BYTES);
        opts.set_recycle_log_file_num(RECYCLED_WAL_FILES.max(logs_ahead));
        // Obsolete files are deleted, and the memtables a flush retired are freed, on a
        // background thread instead of the thread that let go of them last: the open
        // after a crash deleted every replayed log before returning, and the writer freed
        // a retired memtable (tens of MB) between two groups.
        opts.set_avoid_unnecessary_blocking_io(true);
        // One block cache for every family, and bloom filters: most point reads on the
        // request path are misses (is this order ID new?), which a filter answers without
        // reading a data block.
        let cache = Cache::new_lru_cache(BLOCK_CACHE_BYTES);
        let mut table = BlockBasedOptions::default();
        table.set_block_cache(&cache);
        table.set_bloom_filter(10.0, false);
        let cfs = cf::ALL.iter().map(|n| {
            let mut o = Options::default();
            o.set_block_based_table_factory(&table);
            // Tables compressed (LZ4: records repeat their market's ids, ≈ 1 KB of values a
            // fill): a flush writes fewer bytes on the disk the log's syncs wait on, which
            // is most of `store/commit`'s p99.
            o.set_compression_type(rocksdb::DBCompressionType::Lz4);
            // The same for the memtable of the family a fresh order's duplicate check
            // reads (a point read that misses, which would otherwise walk a skip list).
            // Elsewhere a memtable filter only costs: every write adds its key to it, and
            // nothing on the request path reads those families by point.
            if *n == cf::ORDERS {
                o.set_memtable_prefix_bloom_ratio(0.02);
                o.set_memtable_whole_key_filtering(true);
            }
            if cf::COUNTERS.contains(n) {
                o.set_merge_operator_associative("sum_i64", index::sum_counters);
            }
            let memtable = if cf::COUNTERS.contains(n) || *n == cf::LEDGER {
                Some(REWRITTEN_WRITE_BUFFER_BYTES)
            } else if cf::SCATTERED.contains(n) {
                Some(SCATTERED_WRITE_BUFFER_BYTES)
            } else if *n == cf::LIVE_ORDERS {
                Some(LIVE_ORDERS_WRITE_BUFFER_BYTES)
            } else if *n == cf::ORDER_SIGNATURES {
                Some(SIGNATURES_WRITE_BUFFER_BYTES)
            } else {
                None // RocksDB's default, 64 MB
            };
            if let Some(bytes) = memtable {
                o.set_write_buffer_size(bytes);
                o.set_max_write_buffer_number(SMALL_MEMTABLES);
            }
            ColumnFamilyDescriptor::new(*n, o)
        });
        // A family that exists must be opened to be dropped.
        let existing = DB::list_cf(&opts, path).unwrap_or_default();
        let retired: Vec<&str> = cf::RETIRED.iter().copied().filter(|n| existing.iter().any(|e| e == n)).collect();
        let cfs = cfs.chain(retired.iter().map(|n| ColumnFamilyDescriptor::new(*n, Options::default())));
        let mut db = DB::open_cf_descriptors(&opts, path, cfs)?;
        for name in retired {
            db.drop_cf(name)?;
            tracing::info!(family = name, "retired column family dropped");
        }
        let db = Arc::new(db);
        let logs = Arc::new(log_roll::LogRoll::off());
        let s = Store {
            analytics: aggregator::Aggregator::spawn(db.clone(), logs.clone()),
            next_log: AtomicU64::new(0),
            logs,
            db,
            open: Default::default(),
            next_order_seq: AtomicU64::new(1),
            next_trade_seq: AtomicU64::new(1),
            ahead: Default::default(),
        };
        s.next_order_seq.store(s.meta_u64(meta::NEXT_ORDER_SEQ)?.unwrap_or(1), Ordering::Relaxed);
        s.next_trade_seq.store(s.meta_u64(meta::NEXT_TRADE_SEQ)?.unwrap_or(1), Ordering::Relaxed);
        s.compact_wallet_keys()?;
        s.apply_log()?;
        if logs_ahead > 0 {
            let (db, logs) = (s.db.clone(), s.logs.clone());
            *s.ahead.lock() = Some(crate::vital::spawn("log-ahead", move || {
                let started = std::time::Instant::now();
                logs.write_ahead(&db, logs_ahead)?;
                let ms = started.elapsed().as_millis() as u64;
                let mb = logs_ahead as u64 * (log_roll::LOG_BYTES >> 20);
                tracing::info!(logs = logs_ahead, mb, ms, "log files written ahead");
                Ok(())
            }));
        }
        Ok(s)
    }

    /// Waits until the log files [`Store::open_with`] writes ahead are written (at once if
    /// it writes none, or once they are), and says whether that failed.
    pub fn wait_logs_ahead(&self) -> Result<(), StoreError> {
        match self.ahead.lock().take() {
            Some(h) => h.join().expect("a vital thread aborts the process when it panics"),
            None => Ok(()),
        }
    }

    /// Writes the wallet analytics of the trades a crash left in the log (see
    /// [`aggregator`]), and continues the log's sequence after them.
    fn apply_log(&self) -> Result<(), StoreError> {
        let log = self.all_raw(cf::ANALYTICS_LOG)?;
        let unreadable = || StoreError::Corrupt { cf: cf::ANALYTICS_LOG, msg: "unreadable entry".into() };
        let mut events = Vec::with_capacity(log.len());
        for (k, v) in log {
            let seq = u64::from_be_bytes(k.as_slice().try_into().map_err(|_| unreadable())?);
            let (sign, id) = aggregator::Event::parse_log_value(&v).ok_or_else(unreadable)?;
            let trade = self
                .get_trade(&id)?
                .ok_or_else(|| StoreError::Corrupt { cf: cf::ANALYTICS_LOG, msg: format!("trade {id} not found") })?;
            events.push(aggregator::Event { seq, trade: Arc::new(trade), sign });
        }
        let Some(last) = events.last() else { return Ok(()) };
        self.next_log.store(last.seq + 1, Ordering::Relaxed);
        let trades = events.len();
        self.analytics.hand_over(events);
        self.analytics.settle();
        tracing::info!(trades, "wallet analytics of the trades left in the log written");
        Ok(())
    }

    /// Waits until what a read of `family` should find is written, when the family is
    /// written behind the trades (see [`aggregator`]).
    fn settle(&self, family: &str) {
        if cf::BEHIND.contains(&family) {
            self.analytics.settle();
        }
    }

    /// Moves the keys of the ledger, of the position counters (`index::position`) and of
    /// `trades_by_wallet` (`index::wallet_trade`) written in the text layout to the compact
    /// one, once per store. Each moved key's value goes to its new key (merged into it for
    /// counters) and the old key is deleted in the same write, so a crash part-way leaves
    /// every key in exactly one place and the next start finishes the job.
    fn compact_wallet_keys(&self) -> Result<(), StoreError> {
        let positions: NewKey = index::compact_position;
        self.move_keys(
            meta::COMPACT_WALLET_KEYS,
            &[
                (cf::LEDGER, 0, positions),
                (cf::POSITIONS, 0, positions),
                (cf::MARKET_HOLDERS, 4, positions),
                (cf::WALLET_DAYS, 4, positions),
            ],
        )?;
        self.move_keys(meta::COMPACT_WALLET_TRADES, &[(cf::TRADES_BY_WALLET, 0, index::compact_wallet_trade)])
    }

    /// Moves the keys of each (family, prefix length, new key of what follows the prefix)
    /// whose new key differs, once: each key is written anew and deleted in one write (a
    /// counter family's sums merged into what the new key may hold), in chunks, and `flag`
    /// set in `meta` at the end, so an interrupted move resumes at the next start.
    fn move_keys(&self, flag: &[u8], families: &[(&'static str, usize, NewKey)]) -> Result<(), StoreError> {
        if self.get_raw(cf::META, flag)?.is_some() {
            return Ok(());
        }
        const CHUNK: usize = 10_000;
        let mut moved = 0usize;
        let mut batch = Batch::default();
        for &(family, prefix, compact) in families {
            // The iterator reads a snapshot: the keys written meanwhile are not seen again.
            let mut it = self.db.raw_iterator_cf(self.handle(family));
            it.seek_to_first();
            while let (Some(k), Some(v)) = (it.key(), it.value()) {
                if let Some(compact) = k.get(prefix..).and_then(compact) {
                    let mut to = k[..prefix].to_vec();
                    to.extend_from_slice(&compact);
                    if cf::COUNTERS.contains(&family) {
                        batch.merge(family, to, v.to_vec());
                    } else {
                        batch.put(family, to, v.to_vec());
                    }
                    batch.delete(family, k.to_vec());
                    moved += 1;
                    if batch.ops.len() >= 2 * CHUNK {
                        self.write([&std::mem::take(&mut batch)], true)?;
                    }
                }
                it.next();
            }
            it.status()?;
        }
        batch.put(cf::META, flag.to_vec(), vec![1]);
        self.write([&batch], true)?;
        if moved > 0 {
            tracing::info!(keys = moved, flag = %String::from_utf8_lossy(flag), "wallet keys moved to the compact layout");
        }
        Ok(())
    }

    fn handle(&self, name: &str) -> &rocksdb::ColumnFamily {
        self.db.cf_handle(name).expect("column family created at open")
    }

    /// Applies one or more batches as a single atomic WriteBatch; `sync` waits for the WAL.
    pub fn write<'a>(&self, batches: impl IntoIterator<Item = &'a Batch>, sync: bool) -> Result<(), StoreError> {
        self.commit(self.prepare(batches), sync)
    }

    /// Encodes batches into one WriteBatch, to be written by [`Store::commit`]. Prepared
    /// batches must be committed in the order they were prepared (the persister prepares
    /// the next group while the previous one is being written): a later one may build on
    /// an earlier one's keys, and each advances the next-sequence values in `meta` only
    /// past what an earlier one already wrote.
    pub fn prepare<'a>(&self, batches: impl IntoIterator<Item = &'a Batch>) -> Prepared {
        let mut entries = Entries::default();
        let (mut order_seq, mut trade_seq) = (0u64, 0u64);
        for b in batches {
            for op in &b.ops {
                match op {
                    Op::Order(o, _) => order_seq = order_seq.max(o.seq + 1),
                    Op::Trade(t) => trade_seq = trade_seq.max(t.seq + 1),
                    _ => {}
                }
                Self::apply(&mut entries, op);
            }
        }
        // Before the write, so a reader finds the order's seq at the latest when its record
        // is readable (see `open_index`).
        self.open.insert_all(&entries.opened);
        // Sequences only grow; batches are prepared by one thread, in commit order.
        if self.next_order_seq.fetch_max(order_seq, Ordering::Relaxed) < order_seq {
            entries.put(cf::META, meta::NEXT_ORDER_SEQ, order_seq.to_be_bytes());
        }
        if self.next_trade_seq.fetch_max(trade_seq, Ordering::Relaxed) < trade_seq {
            entries.put(cf::META, meta::NEXT_TRADE_SEQ, trade_seq.to_be_bytes());
        }
        // Each trade whose wallet analytics change is logged under the next log sequence:
        // prepared in commit order, so the log is in commit order too.
        let analytics: Vec<aggregator::Event> = std::mem::take(&mut entries.analytics)
            .into_iter()
            .map(|(trade, sign)| {
                let seq = self.next_log.fetch_add(1, Ordering::Relaxed);
                aggregator::Event { seq, trade, sign }
            })
            .collect();
        for e in &analytics {
            entries.put(cf::ANALYTICS_LOG, e.seq.to_be_bytes(), e.log_value());
        }
        // In key order within each family, so each memtable insert starts from where the
        // previous one ended instead of searching the skip list from the top. The sort is
        // stable: writes to the same key keep their order (a put, then merges onto it).
        // Order across keys means nothing inside one batch: it becomes visible at once.
        let mut wb = WriteBatch::default();
        for (cf, mut family) in entries.families {
            family.sort_by(|a, b| a.key.cmp(&b.key));
            let family = coalesce(cf, family);
            let h = self.handle(cf);
            for e in &family {
                match e.kind {
                    Kind::Put => wb.put_cf(h, &e.key, &e.value),
                    Kind::Delete => wb.delete_cf(h, &e.key),
                    Kind::Merge => wb.merge_cf(h, &e.key, &e.value),
                }
            }
        }
        Prepared { batch: wb, closed: entries.closed, analytics }
    }

    /// Writes a prepared batch atomically; `sync` returns only once the WAL is on disk.
    pub fn commit(&self, prepared: Prepared, sync: bool) -> Result<(), StoreError> {
        let mut wo = WriteOptions::default();
        wo.set_sync(sync);
        let bytes = prepared.batch.size_in_bytes();
        self.db.write_opt(prepared.batch, &wo)?;
        self.logs.wrote(&self.db, bytes, sync);
        // After the write: a reader that still finds the seq falls back to `orders`.
        self.open.remove_all(&prepared.closed);
        self.analytics.hand_over(prepared.analytics);
        Ok(())
    }

    /// Expands one op into the writes it stands for (encoding records here, off the engine).
    fn apply(out: &mut Entries, op: &Op) {
        match op {
            Op::Put(c, k, v) => out.put(c, k.as_slice(), v.as_slice()),
            Op::Delete(c, k) => out.delete(c, k.as_slice()),
            Op::Merge(c, k, v) => out.merge(c, k.as_slice(), v.as_slice()),
            Op::Order(o, stored) => {
                // An open order's record lives under its priority; once closed it moves
                // to `orders` for good (an order never reopens).
                let open = matches!(o.status, OrderStatus::Live | OrderStatus::Deferred) && o.remaining() > 0;
                let seq = o.seq.to_be_bytes();
                // While it stays open, only what changes is rewritten (its signed fields
                // are most of its bytes, and the WAL's bytes bound durable throughput).
                match (open, stored) {
                    (true, Stored::New) => {
                        out.put(cf::LIVE_ORDERS, seq, encode(o.as_ref()));
                        out.opened.push((o.id, o.seq, o.owner));
                    }
                    (true, Stored::Open) => out.put(cf::OPEN_STATE, seq, encode(&OpenState::of(o))),
                    (false, _) => {
                        out.put(cf::ORDERS, o.id.as_bytes(), encode(o.as_ref()));
                        if *stored == Stored::Open {
                            out.delete(cf::LIVE_ORDERS, seq);
                            out.delete(cf::OPEN_STATE, seq);
                            out.closed.push((o.id, o.seq, o.owner));
                        }
                    }
                }
            }
            Op::Trade(t) => {
                out.put(cf::TRADES, t.id.as_bytes(), encode(t.as_ref()));
                // A trade is first written PENDING, with its index entries and its place in
                // the settlement queue; a later status rewrites the record and leaves the
                // queue (the index entries do not change).
                if t.status == TradeStatus::Pending {
                    for o in t.owners() {
                        out.put(cf::TRADES_BY_OWNER, keys::owner_seq(&o, t.seq), t.id.as_bytes());
                    }
                    let tick = index::Tick {
                        id: t.id,
                        asset_id: t.token.token_id.to_string(),
                        price: t.price,
                        size: t.size,
                        side: t.side,
                    };
                    let key = index::market_time_seq(t.token.market_idx, t.match_time, t.seq);
                    out.put(cf::TRADES_BY_MARKET, key, encode(&tick));
                    out.put(cf::PENDING_TRADES, t.seq.to_be_bytes(), t.id.as_bytes());
                } else {
                    out.delete(cf::PENDING_TRADES, t.seq.to_be_bytes());
                }
                // Once settled, a notification for every API key that took part (built and
                // encoded here rather than on the matching thread: a fifth of a crossing
                // order's cost there).
                if let Some(kind) = t.notification_kind() {
                    for owner in t.owners() {
                        let n = NotificationRecord::of(t, owner, kind);
                        out.put(cf::NOTIFICATIONS, keys::notification(&owner, t.seq, kind as u8), encode(&n));
                    }
                }
                // A market's stats are a few hot keys, summed within the group; the wallets'
                // counters and trade entries are written behind (see `aggregator`).
                if let Some(sign) = index::counter_sign(t.status) {
                    let (c, k, v) = index::market_stats(t, sign);
                    out.merge(c, k, v);
                    out.analytics.push((t.clone(), sign));
                }
            }
            Op::Balance(addr, asset, bal) => {
                out.put(cf::LEDGER, index::position(addr, asset), bal.to_be_bytes());
            }
            Op::Signature(seq, signature) => out.put(cf::ORDER_SIGNATURES, seq.to_be_bytes(), signature.as_bytes()),
            Op::LastTrade(market_idx, last) => out.put(cf::META, meta::last_trade(*market_idx), encode(last)),
        }
    }

    /// Walks the pairs of a family whose key starts with `prefix`, from `from` (inclusive;
    /// forward) or down from the end of the prefix (`reverse`), until `each` says stop.
    pub fn walk(
        &self,
        cf_name: &'static str,
        prefix: &[u8],
        from: Option<&[u8]>,
        reverse: bool,
        mut each: impl FnMut(&[u8], &[u8]) -> std::ops::ControlFlow<()>,
    ) -> Result<(), StoreError> {
        self.settle(cf_name);
        let mut it = self.db.raw_iterator_cf(self.handle(cf_name));
        match (reverse, from) {
            (false, Some(f)) => it.seek(f.max(prefix)),
            (false, None) => it.seek(prefix),
            (true, Some(f)) => it.seek_for_prev(f),
            (true, None) => match prefix_end(prefix) {
                Some(end) => {
                    it.seek(&end);
                    if it.valid() {
                        it.prev();
                    } else {
                        it.seek_to_last();
                    }
                }
                None => it.seek_to_last(),
            },
        }
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            if !k.starts_with(prefix) || each(k, v).is_break() {
                break;
            }
            if reverse {
                it.prev();
            } else {
                it.next();
            }
        }
        Ok(it.status()?)
    }

    /// [`Store::walk`] with a callback that may fail: its first error ends the walk and is
    /// returned.
    pub fn try_walk<E: From<StoreError>>(
        &self,
        cf_name: &'static str,
        prefix: &[u8],
        from: Option<&[u8]>,
        reverse: bool,
        mut each: impl FnMut(&[u8], &[u8]) -> Result<std::ops::ControlFlow<()>, E>,
    ) -> Result<(), E> {
        let mut failure = None;
        self.walk(cf_name, prefix, from, reverse, |k, v| {
            each(k, v).unwrap_or_else(|e| {
                failure = Some(e);
                std::ops::ControlFlow::Break(())
            })
        })?;
        failure.map_or(Ok(()), Err)
    }

    /// A decoded value.
    pub fn decode_value<T: DeserializeOwned>(cf_name: &'static str, v: &[u8]) -> Result<T, StoreError> {
        decode(cf_name, v)
    }

    /// Counters under a key (empty when none).
    pub fn counters(&self, cf_name: &'static str, key: &[u8]) -> Result<Vec<i64>, StoreError> {
        Ok(self.get_raw(cf_name, key)?.map(|v| index::decode_counters(&v)).unwrap_or_default())
    }

    pub fn get_raw(&self, cf_name: &'static str, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        self.settle(cf_name);
        Ok(self.db.get_cf(self.handle(cf_name), key)?)
    }

    pub fn get<T: DeserializeOwned>(&self, cf_name: &'static str, key: &[u8]) -> Result<Option<T>, StoreError> {
        match self.get_raw(cf_name, key)? {
            Some(v) => Ok(Some(decode(cf_name, &v)?)),
            None => Ok(None),
        }
    }

    pub fn put<T: Serialize>(&self, cf_name: &'static str, key: &[u8], v: &T) -> Result<(), StoreError> {
        let mut b = Batch::default();
        b.put(cf_name, key.to_vec(), encode(v));
        self.write([&b], true)
    }

    /// All (key, value) pairs of a family whose key starts with `prefix`, from `start` on.
    pub fn scan_prefix(
        &self,
        cf_name: &'static str,
        prefix: &[u8],
        start: &[u8],
        limit: usize,
    ) -> Result<Pairs, StoreError> {
        self.settle(cf_name);
        let mut from = prefix.to_vec();
        if start > prefix {
            from = start.to_vec();
        }
        let mut out = Vec::new();
        for item in self.db.iterator_cf(self.handle(cf_name), IteratorMode::From(&from, Direction::Forward)) {
            let (k, v) = item?;
            if !k.starts_with(prefix) || out.len() >= limit {
                break;
            }
            out.push((k.to_vec(), v.to_vec()));
        }
        Ok(out)
    }

    /// Every value of a family, decoded, in key order.
    pub fn all<T: DeserializeOwned>(&self, cf_name: &'static str) -> Result<Vec<(Vec<u8>, T)>, StoreError> {
        self.settle(cf_name);
        let mut out = Vec::new();
        for item in self.db.iterator_cf(self.handle(cf_name), IteratorMode::Start) {
            let (k, v) = item?;
            out.push((k.to_vec(), decode(cf_name, &v)?));
        }
        Ok(out)
    }

    /// Every raw pair of a family, in key order.
    pub fn all_raw(&self, cf_name: &'static str) -> Result<Pairs, StoreError> {
        self.settle(cf_name);
        let mut out = Vec::new();
        for item in self.db.iterator_cf(self.handle(cf_name), IteratorMode::Start) {
            let (k, v) = item?;
            out.push((k.to_vec(), v.to_vec()));
        }
        Ok(out)
    }

    /// An order by id, open (via its priority) or closed. The open orders are those written
    /// through this store or found by [`Store::for_each_open_order`], which every start
    /// runs (`engine::recover`) before anything reads an order.
    pub fn get_order(&self, id: &Uuid) -> Result<Option<OrderRecord>, StoreError> {
        if let Some(seq) = self.open.get(id) {
            // The index may answer with another open order sharing the id's prefix.
            if let Some(o) = self.open_at(seq)?.filter(|o| o.id == *id) {
                return Ok(Some(o));
            }
        }
        self.get(cf::ORDERS, id.as_bytes())
    }

    /// The open order under priority `seq`, if it is still open.
    fn open_at(&self, seq: u64) -> Result<Option<OrderRecord>, StoreError> {
        let seq = seq.to_be_bytes();
        // The state first: the record as it opened does not change until the order closes,
        // when both go in one write. Read the other way round, a close between the two
        // reads gave the record as it opened without its fills — a state older than one
        // the caller may have read before.
        let state = self.get_raw(cf::OPEN_STATE, &seq)?;
        let Some(v) = self.get_raw(cf::LIVE_ORDERS, &seq)? else { return Ok(None) };
        let mut o: OrderRecord = decode(cf::LIVE_ORDERS, &v)?;
        if let Some(v) = state {
            decode::<OpenState>(cf::OPEN_STATE, &v)?.lay_over(&mut o);
        }
        Ok(Some(o))
    }

    /// The open orders of `owner` (an API key), in priority order. An order that closes
    /// while they are read is left out.
    pub fn open_orders_of(&self, owner: &Uuid) -> Result<Vec<OrderRecord>, StoreError> {
        let mut out = Vec::new();
        for seq in self.open.of_owner(owner) {
            out.extend(self.open_at(seq)?.filter(|o| o.owner == *owner));
        }
        Ok(out)
    }

    /// The signature an order was accepted with: from its record when written there (before
    /// `order_signatures` existed), else from that family.
    pub fn order_signature(&self, id: &Uuid) -> Result<Option<String>, StoreError> {
        let Some(o) = self.get_order(id)? else { return Ok(None) };
        if !o.signature.as_bytes().is_empty() {
            return Ok(Some(o.signature.unpack().into_owned()));
        }
        let Some(v) = self.get_raw(cf::ORDER_SIGNATURES, &o.seq.to_be_bytes())? else { return Ok(None) };
        let corrupt = || StoreError::Corrupt { cf: cf::ORDER_SIGNATURES, msg: "not a stored string".into() };
        Ok(Some(crate::domain::packed::unpack(&v).ok_or_else(corrupt)?.into_owned()))
    }

    pub fn get_trade(&self, id: &Uuid) -> Result<Option<TradeRecord>, StoreError> {
        self.get(cf::TRADES, id.as_bytes())
    }

    pub fn get_api_key(&self, key: &Uuid) -> Result<Option<ApiKeyRecord>, StoreError> {
        self.get(cf::API_KEYS, key.as_bytes())
    }

    pub fn get_invite(&self, code: &str) -> Result<Option<InviteRecord>, StoreError> {
        self.get(cf::INVITES, code.as_bytes())
    }

    pub fn meta_u64(&self, key: &[u8]) -> Result<Option<u64>, StoreError> {
        Ok(self.get_raw(cf::META, key)?.and_then(|v| v.try_into().ok().map(u64::from_be_bytes)))
    }

    pub fn markets(&self) -> Result<Vec<Market>, StoreError> {
        Ok(self.all::<Market>(cf::MARKETS)?.into_iter().map(|(_, m)| m).collect())
    }

    /// Hands every LIVE and DEFERRED order to `each`, in priority order (acceptance
    /// sequence): an ordered scan of `live_orders` (with `open_state`, keyed alike, walked
    /// in step), split at the middle sequence into two halves decoded on two threads while
    /// `each` runs on this one. `each` takes the first half's orders, then the second's
    /// (which wait decoded meanwhile), so the order is the scan's, and startup costs about
    /// the largest of the three, not their sum. The decoding threads also allocate each
    /// record's `Arc` (and first touch its memory), which would otherwise fall to `each`'s
    /// thread, the slowest of the three.
    ///
    /// Each order found is entered in the open-order index (`open_index`), which
    /// [`Store::get_order`] reads.
    ///
    /// Open orders of the earlier layout (the id under the priority, the record in `orders`)
    /// are rewritten in the current one once the scan is done: a fill writes only what
    /// changed of an open order, laid over its record under its priority, so the record
    /// must be there.
    pub fn for_each_open_order(&self, mut each: impl FnMut(Arc<OrderRecord>)) -> Result<(), StoreError> {
        let seq_at = |it: &rocksdb::DBRawIterator<'_>| {
            it.key().and_then(|k| <[u8; 8]>::try_from(k).ok()).map(u64::from_be_bytes)
        };
        let mut it = self.db.raw_iterator_cf(self.handle(cf::LIVE_ORDERS));
        it.seek_to_first();
        let first = seq_at(&it);
        it.seek_to_last();
        let last = seq_at(&it);
        drop(it);
        // Sequences are dense enough that their middle halves the work; any split is
        // correct, a lopsided one only slower.
        let mid = match (first, last) {
            (Some(a), Some(b)) if b > a => Some((a + (b - a) / 2 + 1).to_be_bytes()),
            _ => None,
        };
        let (tx_a, rx_a) = crossbeam_channel::bounded::<ScanChunk>(8);
        let (tx_b, rx_b) = crossbeam_channel::unbounded::<ScanChunk>();
        let earlier = std::thread::scope(|sc| {
            let a = sc.spawn(move || self.scan_open_orders(None, mid, tx_a, 0));
            let b = mid.map(|mid| sc.spawn(move || self.scan_open_orders(Some(mid), None, tx_b, 8)));
            let mut result = Ok(());
            'halves: for rx in [rx_a, rx_b] {
                for chunk in rx {
                    match chunk {
                        Ok(chunk) => chunk.into_iter().for_each(&mut each),
                        Err(e) => {
                            result = Err(e);
                            break 'halves;
                        }
                    }
                }
            }
            // On an error the receivers are gone, so the scans stop at their next send.
            let mut earlier = a.join().expect("the open-order scan does not panic");
            if let Some(b) = b {
                earlier.extend(b.join().expect("the open-order scan does not panic"));
            }
            result.map(|_| earlier)
        })?;
        if !earlier.is_empty() {
            tracing::info!(orders = earlier.len(), "open orders rewritten in the current layout");
            let mut upgrade = Batch::default();
            for o in earlier {
                upgrade.put_order(Arc::new(o), Stored::New);
            }
            self.write([&upgrade], true)?;
        }
        Ok(())
    }

    /// The open orders whose sequence is in `[from, to)` (unbounded where None), decoded in
    /// chunks sent to `tx` in scan order and entered in the open-order index after each
    /// send (from shard `first_shard` on); returns those of the earlier layout. Bypasses the
    /// block cache: a one-time scan of every open order would only evict what readers use.
    fn scan_open_orders(
        &self,
        from: Option<[u8; 8]>,
        to: Option<[u8; 8]>,
        tx: crossbeam_channel::Sender<ScanChunk>,
        first_shard: usize,
    ) -> Vec<OrderRecord> {
        const CHUNK: usize = 4096;
        let opts = || {
            let mut o = rocksdb::ReadOptions::default();
            o.fill_cache(false);
            if let Some(to) = to {
                o.set_iterate_upper_bound(to.to_vec());
            }
            o
        };
        let seek = |it: &mut rocksdb::DBRawIterator<'_>| match from {
            Some(from) => it.seek(from),
            None => it.seek_to_first(),
        };
        let mut interner = Interner::default();
        let mut chunk = Vec::with_capacity(CHUNK);
        let mut earlier = Vec::new();
        let mut found = open_index::Found::default();
        let mut it = self.db.raw_iterator_cf_opt(self.handle(cf::LIVE_ORDERS), opts());
        seek(&mut it);
        // `open_state` is keyed like `live_orders`: walked in step with it.
        let mut state = self.db.raw_iterator_cf_opt(self.handle(cf::OPEN_STATE), opts());
        seek(&mut state);
        while let (Some(seq), Some(v)) = (it.key(), it.value()) {
            while state.key().is_some_and(|k| k < seq) {
                state.next();
            }
            let changed = state.key().filter(|k| *k == seq).and(state.value());
            let r = if v.len() == 16 {
                // Earlier layout: the index holds the id, the record is in `orders`.
                Uuid::from_slice(v)
                    .map_err(|e| StoreError::Corrupt { cf: cf::LIVE_ORDERS, msg: e.to_string() })
                    .and_then(|id| self.get_raw(cf::ORDERS, id.as_bytes()))
                    .and_then(|v| v.map(|v| decode_order(&v, &mut interner)).transpose())
                    .inspect(|o| earlier.extend(o.clone()))
            } else {
                decode_order(v, &mut interner).map(Some)
            };
            let r = r.and_then(|o| match (o, changed) {
                (Some(mut o), Some(c)) => {
                    decode::<OpenState>(cf::OPEN_STATE, c)?.lay_over(&mut o);
                    Ok(Some(o))
                }
                (o, _) => Ok(o),
            });
            match r {
                Ok(Some(o)) => {
                    found.push(o.id, o.seq, o.owner);
                    chunk.push(Arc::new(o));
                }
                Ok(None) => {}
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return earlier;
                }
            }
            if chunk.len() == CHUNK {
                if tx.send(Ok(std::mem::replace(&mut chunk, Vec::with_capacity(CHUNK)))).is_err() {
                    return earlier;
                }
                self.open.fill(&mut found, first_shard);
            }
            it.next();
        }
        let r = it.status().map_err(StoreError::from).map(|_| chunk);
        let _ = tx.send(r);
        self.open.fill(&mut found, first_shard);
        earlier
    }

    /// RocksDB's estimate of the open orders (to size maps; may be off either way).
    pub fn estimate_open_orders(&self) -> usize {
        let cf = self.handle(cf::LIVE_ORDERS);
        self.db.property_int_value_cf(cf, "rocksdb.estimate-num-keys").ok().flatten().unwrap_or(0) as usize
    }

    /// Writes every memtable to disk, so the next start reads tables instead of replaying
    /// the WAL (done when the store closes cleanly).
    pub fn flush(&self) -> Result<(), StoreError> {
        for name in cf::ALL {
            self.db.flush_cf(self.handle(name))?;
        }
        Ok(())
    }

    /// Every PENDING trade, oldest first (the settlement queue after a restart).
    pub fn pending_trades(&self) -> Result<Vec<TradeRecord>, StoreError> {
        let mut out = Vec::new();
        for (_, id) in self.all_raw(cf::PENDING_TRADES)? {
            let id = Uuid::from_slice(&id)
                .map_err(|e| StoreError::Corrupt { cf: cf::PENDING_TRADES, msg: e.to_string() })?;
            let t = self
                .get_trade(&id)?
                .ok_or_else(|| StoreError::Corrupt { cf: cf::PENDING_TRADES, msg: format!("no trade {id}") })?;
            out.push(t);
        }
        Ok(out)
    }

    /// An API key's notifications, oldest first.
    pub fn notifications(&self, owner: &Uuid) -> Result<Vec<NotificationRecord>, StoreError> {
        let mut out = Vec::new();
        for (_, v) in self.scan_prefix(cf::NOTIFICATIONS, owner.as_bytes(), owner.as_bytes(), usize::MAX)? {
            out.push(decode(cf::NOTIFICATIONS, &v)?);
        }
        Ok(out)
    }

    /// Ledger balances as (address, asset, balance).
    pub fn balances(&self) -> Result<Vec<(String, String, u64)>, StoreError> {
        let mut out = Vec::new();
        for (k, v) in self.all_raw(cf::LEDGER)? {
            let (addr, asset) =
                index::split_position(&k).ok_or(StoreError::Corrupt { cf: cf::LEDGER, msg: "key".into() })?;
            let bal = v
                .try_into()
                .map(u64::from_be_bytes)
                .map_err(|_| StoreError::Corrupt { cf: cf::LEDGER, msg: "value".into() })?;
            out.push((addr, asset, bal));
        }
        Ok(out)
    }
}

/// The first key after every key that starts with `prefix` (None: no such key).
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{AddressStatus, FlatOrderRecord, Mode, OrderStatus, OrderToken};

    #[test]
    fn codec_round_trips_and_reads_json_records() {
        for v in [Mode::Normal, Mode::CancelOnly, Mode::TradingDisabled] {
            assert_eq!(decode::<Mode>("meta", &encode(&v)).unwrap(), v);
        }
        let st = AddressStatus::ClosedOnly;
        assert_eq!(decode::<AddressStatus>("addresses", &encode(&st)).unwrap(), st);
        let some: crate::domain::LastTrade = Some((5500, crate::domain::Side::Sell));
        assert_eq!(decode::<crate::domain::LastTrade>("meta", &encode(&some)).unwrap(), some);
        // Version-1 (JSON) values still decode.
        let mut v1 = vec![VERSION_JSON];
        v1.extend_from_slice(br#""LIVE""#);
        assert_eq!(decode::<OrderStatus>("orders", &v1).unwrap(), OrderStatus::Live);
        assert!(decode::<OrderStatus>("orders", &[9, 0]).is_err());
    }

    fn sample_order() -> OrderRecord {
        use crate::domain::{OrderType, Side};
        OrderRecord {
            id: Uuid::from_u128(42),
            seq: 7,
            status: OrderStatus::Live,
            owner: Uuid::from_u128(9),
            maker: "0xmaker".into(),
            signer: "0xsigner".into(),
            taker: "0x0".into(),
            token: Arc::new(OrderToken {
                market_idx: 3,
                condition_id: "0xc0ffee".into(),
                token_id: "1001".into(),
                outcome_index: 1,
                outcome: "No".into(),
            }),
            side: Side::Sell,
            price: 4200,
            original_size: 20_000_000,
            size_matched: 5_000_000,
            maker_amount: 20_000_000,
            taker_amount: 8_400_000,
            fee_rate_bps: 10,
            expiration: 1_800_000_000,
            nonce: 2,
            salt: 123_456,
            signature_type: 1,
            signature: "0xsig".into(),
            order_type: OrderType::Gtd,
            post_only: true,
            reserved: 15_000_000,
            associate_trades: [Uuid::from_u128(5), Uuid::from_u128(6)].into_iter().collect(),
            created_at: 1_700_000_000,
        }
    }

    /// Every open order, as startup's scan hands them over.
    fn scan(s: &Store) -> Vec<OrderRecord> {
        let mut v = Vec::new();
        s.for_each_open_order(|o| v.push(Arc::unwrap_or_clone(o))).unwrap();
        v
    }

    /// The startup scan reads the two halves of the sequence range on two threads; what
    /// it hands over is still every open order once, in priority order, with its changes
    /// laid over, on both sides of the split and at it.
    #[test]
    fn the_open_order_scan_splits_the_sequences_and_keeps_their_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        assert!(scan(&store).is_empty());
        // Sequences 1..=9,999 with gaps; the split falls at 5,001.
        let mut expected = Vec::new();
        let (mut opened, mut changed) = (Batch::default(), Batch::default());
        for seq in (1..10_000u64).filter(|s| s % 3 != 0 || (4_998..=5_003).contains(s) || *s == 9_999) {
            let mut o = sample_order();
            o.id = Uuid::from_u128(seq as u128);
            o.seq = seq;
            o.status = OrderStatus::Live;
            o.associate_trades.clear();
            opened.put_order(Arc::new(o.clone()), Stored::New);
            if seq % 7 == 0 || (5_000..=5_002).contains(&seq) {
                o.size_matched += seq;
                changed.put_order(Arc::new(o.clone()), Stored::Open);
            }
            expected.push(o);
        }
        store.write([&opened], true).unwrap();
        store.write([&changed], true).unwrap();
        // From the memtables, then from tables after a restart.
        assert_eq!(scan(&store), expected);
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(scan(&store), expected);
    }

    /// The engine writes an accepted order's signature apart, keyed by its sequence, and
    /// keeps it out of the open order; the store finds it there, and in a record written
    /// before (which carries it), open or closed.
    #[test]
    fn an_orders_signature_is_written_once_apart_and_found_either_way() {
        use crate::domain::{Market, Token};
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut core = crate::engine::Core::new("0xfee".into());
        let tok = |id: &str| Token { token_id: id.into(), outcome: "Yes".into() };
        core.add_market(Market::binary("0xc0ffee", tok("71321045679"), tok("1002"), 100, 0));
        let mut b = Batch::default();
        core.credit("0xmaker", "71321045679", 1_000_000_000, &mut b);
        let mut o = real_order();
        o.maker = "0xmaker".into();
        o.signer = o.maker.clone();
        o.token = OrderToken::of(&core.markets[0].market, 0);
        (o.status, o.size_matched, o.reserved, o.nonce) = (OrderStatus::Live, 0, 0, 0);
        o.associate_trades.clear();
        let signature = o.signature.unpack().into_owned();
        let placed = core.place(Arc::new(o.clone()), false, 1_700_000_000, &mut b).unwrap();
        assert!(placed.order.signature.as_bytes().is_empty(), "the open order does not hold it");
        store.write([&b], true).unwrap();
        let stored = store.get_order(&o.id).unwrap().unwrap();
        assert!(stored.signature.as_bytes().is_empty());
        let by_seq = store.get_raw(cf::ORDER_SIGNATURES, &placed.order.seq.to_be_bytes()).unwrap();
        assert_eq!(by_seq.as_deref(), Some(o.signature.as_bytes()));
        assert_eq!(store.order_signature(&o.id).unwrap(), Some(signature.clone()));
        // Closed: the record moves to `orders`, the signature stays where it was.
        let mut b = Batch::default();
        core.cancel(o.owner, &[o.id], &mut b);
        store.write([&b], true).unwrap();
        assert_eq!(store.get_order(&o.id).unwrap().unwrap().status, OrderStatus::Canceled);
        assert_eq!(store.order_signature(&o.id).unwrap(), Some(signature.clone()));
        // Records written before the family carry the signature themselves.
        let mut b = Batch::default();
        let legacy =
            |n: u128, status| Arc::new(OrderRecord { id: Uuid::from_u128(n), seq: n as u64, status, ..real_order() });
        let (open, closed) = (legacy(100, OrderStatus::Live), legacy(101, OrderStatus::Canceled));
        b.put_order(open.clone(), Stored::New);
        b.put_order(closed.clone(), Stored::New);
        store.write([&b], true).unwrap();
        for id in [open.id, closed.id] {
            assert_eq!(store.order_signature(&id).unwrap(), Some(signature.clone()));
        }
        assert_eq!(store.order_signature(&Uuid::from_u128(102)).unwrap(), None);
    }

    #[test]
    fn open_orders_live_under_their_priority_and_move_when_closed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let put = |s: &Store, orders: &[&OrderRecord], stored: Stored| {
            let mut batch = Batch::default();
            for o in orders {
                batch.put_order(Arc::new((*o).clone()), stored);
            }
            s.write([&batch], true).unwrap();
        };
        // Two open orders, written out of priority order: the scan returns them by seq.
        let mut a = sample_order();
        a.status = OrderStatus::Live;
        a.seq = 9;
        let mut b = a.clone();
        b.id = Uuid::from_u128(43);
        b.seq = 8;
        b.owner = Uuid::from_u128(7);
        put(&store, &[&a, &b], Stored::New);
        assert_eq!(scan(&store), vec![b.clone(), a.clone()]);
        assert_eq!(store.get_order(&a.id).unwrap(), Some(a.clone()));
        assert!(store.get_raw(cf::ORDERS, a.id.as_bytes()).unwrap().is_none());
        // Cancelled: it leaves the priority index and is found by id.
        a.status = OrderStatus::Canceled;
        put(&store, &[&a], Stored::Open);
        assert_eq!(scan(&store), vec![b.clone()]);
        assert_eq!(store.get_order(&a.id).unwrap(), Some(a.clone()));
        assert_eq!(store.open.get(&a.id), None);
        assert!(store.open_orders_of(&a.owner).unwrap().is_empty());
        // A fill of an open order writes what changed beside its record, which stays as it
        // opened, and keeps its index entries. Reads lay the change over the record.
        let opened = b.clone();
        b.size_matched += 1_000_000;
        b.reserved -= 500_000;
        b.associate_trades.push(Uuid::from_u128(77));
        put(&store, &[&b], Stored::Open);
        assert_eq!(scan(&store), vec![b.clone()]);
        assert_eq!(store.get_order(&b.id).unwrap(), Some(b.clone()));
        assert_eq!(store.open_orders_of(&b.owner).unwrap(), vec![b.clone()]);
        let live = store.get_raw(cf::LIVE_ORDERS, &b.seq.to_be_bytes()).unwrap().unwrap();
        assert_eq!(decode::<OrderRecord>(cf::LIVE_ORDERS, &live).unwrap(), opened);
        let state = store.get_raw(cf::OPEN_STATE, &b.seq.to_be_bytes()).unwrap().unwrap();
        let mut laid = opened.clone();
        decode::<OpenState>(cf::OPEN_STATE, &state).unwrap().lay_over(&mut laid);
        assert_eq!(laid, b);
        assert!(state.len() < live.len() / 2, "{} bytes of state for a {}-byte record", state.len(), live.len());
        // The latest change wins, and survives a restart.
        b.size_matched += 1_000_000;
        b.status = OrderStatus::Deferred;
        put(&store, &[&b], Stored::Open);
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(scan(&store), vec![b.clone()]);
        assert_eq!(store.get_order(&b.id).unwrap(), Some(b.clone()));
        // An order closed on arrival is stored by id only.
        let mut d = a.clone();
        d.id = Uuid::from_u128(45);
        d.seq = 11;
        d.status = OrderStatus::Matched;
        put(&store, &[&d], Stored::New);
        assert_eq!(scan(&store), vec![b.clone()]);
        assert_eq!(store.get_order(&d.id).unwrap(), Some(d.clone()));
        assert!(store.get_raw(cf::LIVE_ORDERS, &d.seq.to_be_bytes()).unwrap().is_none());
        // The earlier layout (id in `live_orders`, record in `orders`) is read, and the
        // scan rewrites it in the current one, so later fills find its index entries.
        let mut c = b.clone();
        c.id = Uuid::from_u128(44);
        c.seq = 10;
        let mut batch = Batch::default();
        batch.put(cf::ORDERS, c.id.as_bytes().to_vec(), encode(&c));
        batch.put(cf::LIVE_ORDERS, c.seq.to_be_bytes().to_vec(), c.id.as_bytes().to_vec());
        store.write([&batch], true).unwrap();
        assert_eq!(scan(&store), vec![b.clone(), c.clone()]);
        assert_eq!(store.get_order(&c.id).unwrap(), Some(c.clone()));
        let live = store.get_raw(cf::LIVE_ORDERS, &c.seq.to_be_bytes()).unwrap().unwrap();
        assert_eq!(decode::<OrderRecord>(cf::LIVE_ORDERS, &live).unwrap(), c, "the scan upgraded it");
        c.size_matched += 1_000_000;
        put(&store, &[&c], Stored::Open);
        assert_eq!(scan(&store), vec![b.clone(), c.clone()]);
        assert_eq!(store.get_order(&c.id).unwrap(), Some(c.clone()));
        // Closing after a fill removes the change with the record; the whole order, as it
        // closed, is found by id.
        c.size_matched = c.original_size;
        c.status = OrderStatus::Matched;
        put(&store, &[&c], Stored::Open);
        assert_eq!(scan(&store), vec![b]);
        assert_eq!(store.get_order(&c.id).unwrap(), Some(c.clone()));
        assert!(store.get_raw(cf::OPEN_STATE, &c.seq.to_be_bytes()).unwrap().is_none());
        assert!(store.get_raw(cf::LIVE_ORDERS, &c.seq.to_be_bytes()).unwrap().is_none());
    }

    /// The open-order index changes around the write that changes the store: an order that
    /// opens is found once its write is (not before: nothing to find), and one that closes
    /// is found open until its write, closed after.
    #[test]
    fn an_order_is_found_as_written_while_its_write_is_prepared_and_after() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut o = sample_order();
        o.status = OrderStatus::Live;
        let batch = |o: &OrderRecord, stored| {
            let mut b = Batch::default();
            b.put_order(Arc::new(o.clone()), stored);
            b
        };
        let opening = store.prepare([&batch(&o, Stored::New)]);
        assert_eq!(store.get_order(&o.id).unwrap(), None);
        store.commit(opening, true).unwrap();
        assert_eq!(store.get_order(&o.id).unwrap(), Some(o.clone()));
        let open = o.clone();
        o.status = OrderStatus::Canceled;
        let closing = store.prepare([&batch(&o, Stored::Open)]);
        assert_eq!(store.get_order(&o.id).unwrap(), Some(open));
        store.commit(closing, true).unwrap();
        assert_eq!(store.get_order(&o.id).unwrap(), Some(o.clone()));
        assert_eq!(store.open.get(&o.id), None);
        // Opened and closed in one group: nothing stays in the index.
        let mut p = sample_order();
        p.id = Uuid::from_u128(99);
        p.seq = o.seq + 1;
        p.status = OrderStatus::Live;
        let mut both = batch(&p, Stored::New);
        p.status = OrderStatus::Matched;
        both.put_order(Arc::new(p.clone()), Stored::Open);
        store.write([&both], true).unwrap();
        assert_eq!(store.get_order(&p.id).unwrap(), Some(p.clone()));
        assert_eq!(store.open.get(&p.id), None);
    }

    /// A reader never sees an order go back to an earlier state while writes fill and close
    /// it: the fills it has seen, and its closing, stay seen (an open order's two reads —
    /// its changing state and its record as opened — straddle a write that closes it).
    #[test]
    fn a_reader_never_sees_an_order_go_back() {
        use std::sync::atomic::{AtomicBool, AtomicU64};
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path()).unwrap());
        const ORDERS: u64 = 3_000;
        let current = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let reader = {
            let (store, current, done) = (store.clone(), current.clone(), done.clone());
            std::thread::spawn(move || {
                let (mut last_id, mut seen) = (0, (0, false));
                let mut reads = 0u64;
                while !done.load(Ordering::Relaxed) {
                    let k = current.load(Ordering::Relaxed);
                    let Some(o) = store.get_order(&Uuid::from_u128(1_000 + k as u128)).unwrap() else { continue };
                    reads += 1;
                    if k != last_id {
                        (last_id, seen) = (k, (0, false));
                    }
                    let now = (o.size_matched, o.status == OrderStatus::Canceled);
                    assert!(now >= seen, "order {k} read as {now:?} after {seen:?}");
                    seen = now;
                }
                reads
            })
        };
        let write = |o: &OrderRecord, stored| {
            let mut b = Batch::default();
            b.put_order(Arc::new(o.clone()), stored);
            store.write([&b], false).unwrap();
        };
        for k in 0..ORDERS {
            let mut o = sample_order();
            o.id = Uuid::from_u128(1_000 + k as u128);
            o.seq = 1 + k;
            o.status = OrderStatus::Live;
            o.size_matched = 0;
            write(&o, Stored::New);
            current.store(k, Ordering::Relaxed);
            for _ in 0..2 {
                o.size_matched += 1_000_000;
                write(&o, Stored::Open);
            }
            o.status = OrderStatus::Canceled;
            write(&o, Stored::Open);
        }
        done.store(true, Ordering::Relaxed);
        assert!(reader.join().unwrap() > 0);
    }

    /// Ids that share their first 8 bytes (the open-order index's key): each order is
    /// found as itself, open or closed, and an id never written is not found.
    #[test]
    fn orders_whose_ids_share_a_prefix_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let order = |n: u64, status| {
            let mut o = sample_order();
            o.id = Uuid::from_u64_pair(0x0123_4567_89ab_cdef, n << 8);
            o.seq = n;
            o.status = status;
            o
        };
        let (a, b, c) = (order(1, OrderStatus::Live), order(2, OrderStatus::Live), order(3, OrderStatus::Matched));
        let mut batch = Batch::default();
        for o in [&a, &b, &c] {
            batch.put_order(Arc::new(o.clone()), Stored::New);
        }
        store.write([&batch], true).unwrap();
        for o in [&a, &b, &c] {
            assert_eq!(store.get_order(&o.id).unwrap().as_ref(), Some(o));
        }
        assert_eq!(store.get_order(&order(4, OrderStatus::Live).id).unwrap(), None);
        // The first to open closes: the other stays found, the closed one as it closed.
        let mut a = a;
        a.status = OrderStatus::Canceled;
        let mut batch = Batch::default();
        batch.put_order(Arc::new(a.clone()), Stored::Open);
        store.write([&batch], true).unwrap();
        assert_eq!(store.get_order(&a.id).unwrap(), Some(a));
        assert_eq!(store.get_order(&b.id).unwrap(), Some(b));
    }

    /// A store written by an earlier layout keeps a family this one no longer has: it
    /// opens, and the family is gone after.
    #[test]
    fn a_retired_family_is_dropped_when_the_store_opens() {
        let dir = tempfile::tempdir().unwrap();
        drop(Store::open(dir.path()).unwrap());
        {
            let mut opts = Options::default();
            opts.create_missing_column_families(true);
            let names = cf::ALL.iter().chain(cf::RETIRED).copied();
            let db = DB::open_cf(&opts, dir.path(), names).unwrap();
            db.put_cf(db.cf_handle("order_seq").unwrap(), [7u8; 16], 1u64.to_be_bytes()).unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        assert!(store.db.cf_handle("order_seq").is_none());
        drop(store);
        let families = DB::list_cf(&Options::default(), dir.path()).unwrap();
        assert!(!families.iter().any(|f| f == "order_seq"), "{families:?}");
        drop(Store::open(dir.path()).unwrap());
    }

    /// [`sample_order`] with strings shaped like real ones, which the store packs.
    fn real_order() -> OrderRecord {
        OrderRecord {
            maker: "0x8ba1f109551bd432803012645ac136ddd64dba72".into(),
            signer: "0x8ba1f109551bd432803012645ac136ddd64dba72".into(),
            taker: "0x0000000000000000000000000000000000000000".into(),
            token: Arc::new(OrderToken {
                condition_id: "0x5f65177b394277fd294cd75650044e32ba009a95022d88a0c1d565897d72f8f1".into(),
                token_id: "71321045679252212594626385532706912750332728571942532289631379312455583992563".into(),
                ..(*sample_order().token).clone()
            }),
            signature: format!("0x{}1b", "5e".repeat(64)).into(),
            ..sample_order()
        }
    }

    /// Flushed tables are compressed: orders that differ only in their ids and sequence
    /// (the market's ids, addresses and amounts repeated) take a fraction of their bytes.
    #[test]
    fn tables_are_compressed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut b = Batch::default();
        let mut raw = 0;
        for n in 0..20_000u64 {
            let o = OrderRecord {
                id: Uuid::from_u64_pair(n.wrapping_mul(0x9e37_79b9_7f4a_7c15), n),
                seq: n,
                ..real_order()
            };
            let v = encode(&o);
            raw += v.len();
            b.put(cf::ORDERS, o.id.as_bytes().to_vec(), v);
        }
        store.write([&b], true).unwrap();
        store.flush().unwrap();
        let tables = store.db.property_int_value_cf(store.handle(cf::ORDERS), "rocksdb.total-sst-files-size");
        let tables = tables.unwrap().unwrap() as usize;
        assert!(tables > 0 && tables < raw / 2, "{tables} bytes of tables for {raw} bytes of values");
    }

    #[test]
    fn interned_order_decoding_equals_the_ordinary_one() {
        for o in [sample_order(), real_order()] {
            let bytes = encode(&o);
            // The shared token encodes in line, as the order's own fields did.
            assert_eq!(bytes, encode(&FlatOrderRecord::from(&o)));
            let mut i = Interner::default();
            let a = decode_order(&bytes, &mut i).unwrap();
            assert_eq!(a, o);
            assert_eq!(a, decode::<OrderRecord>(cf::ORDERS, &bytes).unwrap());
            // A second decode shares the repeated strings.
            let b = decode_order(&bytes, &mut i).unwrap();
            assert!(Arc::ptr_eq(&a.maker, &b.maker) && Arc::ptr_eq(&a.token, &b.token));
            // Version-1 JSON records (flat) still decode through the same entry point.
            let mut v1 = vec![VERSION_JSON];
            v1.extend_from_slice(&serde_json::to_vec(&FlatOrderRecord::from(&o)).unwrap());
            assert_eq!(decode_order(&v1, &mut i).unwrap(), o);
        }
        // An order none of whose strings packs encodes as version 2 did: such values still
        // read.
        let token = OrderToken {
            condition_id: "0xC0FFEE".into(),
            token_id: "tok-1001".into(),
            ..(*sample_order().token).clone()
        };
        let text = OrderRecord { token: Arc::new(token), ..sample_order() };
        let mut v2 = encode(&text);
        v2[0] = VERSION_TEXT;
        assert_eq!(decode_order(&v2, &mut Interner::default()).unwrap(), text);
        assert_eq!(decode::<OrderRecord>(cf::ORDERS, &v2).unwrap(), text);
        // The real order's six ids take 195 bytes where their text took 401: the whole
        // value is 319 bytes, 525 as text.
        assert_eq!(encode(&real_order()).len(), 319);
    }
}

#[cfg(test)]
mod index_tests {
    use std::ops::ControlFlow;

    use super::*;
    use crate::domain::{FlatTradeRecord, MakerFill, MatchType, Side, TradeToken};

    fn trade(seq: u64, status: TradeStatus) -> TradeRecord {
        let token = Arc::new(TradeToken {
            market_idx: 2,
            condition_id: "0xc".into(),
            token_id: "11".into(),
            outcome: "Yes".into(),
        });
        TradeRecord {
            id: Uuid::from_u128(seq as u128),
            seq,
            taker_order_id: Uuid::from_u128(1000 + seq as u128),
            token: token.clone(),
            side: Side::Buy,
            size: 10_000_000,
            price: 4000,
            fee_rate_bps: 0,
            status,
            match_time: 1_700_000_000 + seq,
            last_update: 0,
            bucket_index: 0,
            owner: Uuid::from_u128(1),
            maker_address: "0xtaker".into(),
            maker_orders: vec![MakerFill {
                order_id: Uuid::from_u128(2000 + seq as u128),
                owner: Uuid::from_u128(2),
                maker_address: "0xmaker".into(),
                matched_amount: 10_000_000,
                price: 4000,
                token,
                side: Side::Sell,
                fee_rate_bps: 0,
                fee: 0,
            }],
            transaction_hash: String::new(),
            taker_fee: 0,
            error_msg: None,
            match_type: MatchType::Complementary,
        }
    }

    /// A group's writes reach RocksDB sorted by family and key; writes to one key keep
    /// the order they were made in, within a batch and across the batches of a group.
    #[test]
    fn writes_to_one_key_keep_their_order_in_a_group() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let one = |ops: Vec<(bool, i64)>| {
            // (true, v): put v; (false, v): add v by merge.
            let mut b = Batch::default();
            for (put, v) in ops {
                let v = index::encode_counters(&[v]);
                if put {
                    b.put(cf::MARKET_STATS, b"k".to_vec(), v);
                } else {
                    b.merge(cf::MARKET_STATS, b"k".to_vec(), v);
                }
                // Other keys in between, before and after it in key order.
                b.put(cf::MARKET_STATS, b"a".to_vec(), index::encode_counters(&[0]));
                b.put(cf::MARKET_STATS, b"z".to_vec(), index::encode_counters(&[0]));
            }
            b
        };
        let sum = |store: &Store| store.counters(cf::MARKET_STATS, b"k").unwrap();
        // Put, then merge: 5 + 2. Merge, then put: the put wins.
        store.write([&one(vec![(true, 5), (false, 2)])], true).unwrap();
        assert_eq!(sum(&store), vec![7]);
        store.write([&one(vec![(false, 2), (true, 5)])], true).unwrap();
        assert_eq!(sum(&store), vec![5]);
        // The same across batches of one group, and a delete then a put.
        store.write([&one(vec![(true, 1)]), &one(vec![(false, 3)]), &one(vec![(true, 9)])], true).unwrap();
        assert_eq!(sum(&store), vec![9]);
        let mut del = Batch::default();
        del.delete(cf::MARKET_STATS, b"k".to_vec());
        store.write([&one(vec![(true, 4)]), &del], true).unwrap();
        assert_eq!(store.get_raw(cf::MARKET_STATS, b"k").unwrap(), None);
        store.write([&del, &one(vec![(true, 4)])], true).unwrap();
        assert_eq!(sum(&store), vec![4]);
    }

    /// A trade holds each side's token shared; it encodes with their fields in line, as
    /// its own fields were stored, and decodes to an equal record (a maker of the same
    /// token sharing the taker's), from version-1 JSON too.
    #[test]
    fn trades_encode_their_tokens_in_line() {
        let same = trade(1, TradeStatus::Pending);
        let mut mint = trade(2, TradeStatus::Confirmed);
        mint.match_type = MatchType::Mint;
        mint.maker_orders[0].token =
            Arc::new(TradeToken { token_id: "12".into(), outcome: "No".into(), ..(*mint.token).clone() });
        for t in [same, mint] {
            let bytes = encode(&t);
            assert_eq!(bytes, encode(&FlatTradeRecord::from(&t)));
            let back = decode::<TradeRecord>(cf::TRADES, &bytes).unwrap();
            assert_eq!(back, t);
            let shared = Arc::ptr_eq(&back.token, &back.maker_orders[0].token);
            assert_eq!(shared, t.match_type == MatchType::Complementary);
            let mut v1 = vec![VERSION_JSON];
            v1.extend_from_slice(&serde_json::to_vec(&FlatTradeRecord::from(&t)).unwrap());
            assert_eq!(decode::<TradeRecord>(cf::TRADES, &v1).unwrap(), t);
        }
    }

    fn write(store: &Store, t: TradeRecord) {
        let mut b = Batch::default();
        b.put_trade(Arc::new(t));
        store.write([&b], true).unwrap();
    }

    #[test]
    fn trades_index_themselves_and_failed_ones_take_their_counters_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        for seq in 1..=3 {
            write(&store, trade(seq, TradeStatus::Pending));
        }
        let taker = store.get_raw(cf::POSITIONS, &index::position("0xtaker", "11")).unwrap().unwrap();
        assert_eq!(
            index::Position::decode(&taker),
            index::Position { size: 30_000_000, bought: 30_000_000, cost: 12_000_000, sold: 0, proceeds: 0 }
        );
        let maker = index::Position::decode(
            &store.get_raw(cf::MARKET_HOLDERS, &index::market_holder(2, "0xmaker", "11")).unwrap().unwrap(),
        );
        assert_eq!((maker.size, maker.sold, maker.proceeds), (-30_000_000, 30_000_000, 12_000_000));
        assert_eq!(store.counters(cf::MARKET_STATS, &2u32.to_be_bytes()).unwrap(), vec![12_000_000, 3]);
        // Nobody is notified of a PENDING trade.
        let (taker_key, maker_key) = (Uuid::from_u128(1), Uuid::from_u128(2));
        assert!(store.notifications(&taker_key).unwrap().is_empty());
        // Confirmation changes no counter; failure takes the trade's share back.
        write(&store, trade(1, TradeStatus::Confirmed));
        let mut failed = trade(2, TradeStatus::Failed);
        (failed.last_update, failed.error_msg) = (1_800_000_000, Some("no longer holds".into()));
        write(&store, failed);
        // Each settled trade notifies both keys, each of its own side, dated at settlement.
        let taker_n = store.notifications(&taker_key).unwrap();
        let maker_n = store.notifications(&maker_key).unwrap();
        let seen = |n: &[NotificationRecord]| {
            n.iter().map(|n| (n.trade_seq, n.kind, n.side, n.trader_side, n.time)).collect::<Vec<_>>()
        };
        use crate::domain::{NotificationKind::*, TraderSide::*};
        assert_eq!(
            seen(&taker_n),
            [(1, TradeConfirmed, Side::Buy, Taker, 0), (2, TradeFailed, Side::Buy, Taker, 1_800_000_000)]
        );
        assert_eq!(
            seen(&maker_n),
            [(1, TradeConfirmed, Side::Sell, Maker, 0), (2, TradeFailed, Side::Sell, Maker, 1_800_000_000)]
        );
        assert_eq!((taker_n[1].error_msg.as_deref(), &*maker_n[1].market), (Some("no longer holds"), "0xc"));
        assert_eq!(store.counters(cf::MARKET_STATS, &2u32.to_be_bytes()).unwrap(), vec![8_000_000, 2]);
        let taker =
            index::Position::decode(&store.get_raw(cf::POSITIONS, &index::position("0xtaker", "11")).unwrap().unwrap());
        assert_eq!((taker.size, taker.cost), (20_000_000, 8_000_000));
        // The market index stays in time order, forward and backward.
        let mut seqs = Vec::new();
        store
            .walk(cf::TRADES_BY_MARKET, &2u32.to_be_bytes(), None, true, |_, v| {
                let t: index::Tick = Store::decode_value(cf::TRADES_BY_MARKET, v).unwrap();
                seqs.push(t.id.as_u128() as u64);
                ControlFlow::Continue(())
            })
            .unwrap();
        assert_eq!(seqs, vec![3, 2, 1]);
        let mut n = 0;
        store
            .walk(cf::TRADES_BY_WALLET, &index::holder_prefix("0xmaker"), None, false, |_, _| {
                n += 1;
                ControlFlow::Continue(())
            })
            .unwrap();
        assert_eq!(n, 3);
        // Every party's index keeps its trades whatever their status; only the PENDING
        // one waits for settlement.
        for owner in trade(1, TradeStatus::Pending).owners() {
            let ids = store.scan_prefix(cf::TRADES_BY_OWNER, owner.as_bytes(), &[], usize::MAX).unwrap();
            assert_eq!(ids.len(), 3);
        }
        let pending = store.scan_prefix(cf::PENDING_TRADES, &[], &[], usize::MAX).unwrap();
        assert_eq!(pending.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>(), vec![3u64.to_be_bytes().to_vec()]);
        // Counters survive a restart (merge operands replayed or compacted).
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.counters(cf::MARKET_STATS, &2u32.to_be_bytes()).unwrap(), vec![8_000_000, 2]);
    }

    /// A trade's wallet analytics are written behind it from the log: a read finds them as
    /// soon as the trade's write returns, the log empties once they are written, and a
    /// store that stopped before writing them (a crash) writes them at its next start —
    /// adds and take-backs alike, once.
    #[test]
    fn wallet_analytics_left_in_the_log_are_written_at_the_next_start() {
        let dir = tempfile::tempdir().unwrap();
        let position = |store: &Store, address| {
            index::Position::decode(
                &store.get_raw(cf::POSITIONS, &index::position(address, "11")).unwrap().unwrap_or_default(),
            )
        };
        let wallet_trades = |store: &Store| {
            let mut seqs = Vec::new();
            store
                .walk(cf::TRADES_BY_WALLET, &index::holder_prefix("0xmaker"), None, false, |k, _| {
                    seqs.push(u64::from_be_bytes(k[k.len() - 9..k.len() - 1].try_into().unwrap()));
                    ControlFlow::Continue(())
                })
                .unwrap();
            seqs
        };
        let log_len = |store: &Store| store.all_raw(cf::ANALYTICS_LOG).unwrap().len();
        let store = Store::open(dir.path()).unwrap();
        write(&store, trade(1, TradeStatus::Pending));
        assert_eq!(position(&store, "0xtaker").size, 10_000_000);
        assert_eq!(wallet_trades(&store), [1]);
        assert_eq!(log_len(&store), 0);
        // The analytics writer stops, as in a crash: what is written next stays in the log.
        store.analytics.stop();
        for seq in 2..=4 {
            write(&store, trade(seq, TradeStatus::Pending));
        }
        write(&store, trade(3, TradeStatus::Failed));
        assert_eq!(log_len(&store), 4);
        assert_eq!(position(&store, "0xtaker").size, 10_000_000);
        assert_eq!(wallet_trades(&store), [1]);
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(log_len(&store), 0);
        let (taker, maker) = (position(&store, "0xtaker"), position(&store, "0xmaker"));
        assert_eq!((taker.size, taker.cost), (30_000_000, 12_000_000));
        assert_eq!((maker.size, maker.proceeds), (-30_000_000, 12_000_000));
        let holder = store.get_raw(cf::MARKET_HOLDERS, &index::market_holder(2, "0xmaker", "11")).unwrap();
        assert_eq!(index::Position::decode(&holder.unwrap()), maker);
        assert_eq!(wallet_trades(&store), [1, 2, 3, 4]);
        // The market's stats were written with the trades, not behind them.
        assert_eq!(store.counters(cf::MARKET_STATS, &2u32.to_be_bytes()).unwrap(), vec![12_000_000, 3]);
        // Applied once: another start finds nothing left to apply, and the log goes on.
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(position(&store, "0xtaker").size, 30_000_000);
        write(&store, trade(5, TradeStatus::Pending));
        assert_eq!(position(&store, "0xtaker").size, 40_000_000);
        assert_eq!(wallet_trades(&store), [1, 2, 3, 4, 5]);
        assert_eq!(log_len(&store), 0);
    }

    /// An acknowledged trade is in its wallets' analytics for any reader: each completion
    /// (run once the trade is durable) passes the trade to another thread, which finds it
    /// in the maker's history and the taker's position at once, though the analytics are
    /// written behind the trades.
    #[test]
    fn a_reader_told_of_a_durable_trade_finds_it_in_the_wallet_analytics() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path()).unwrap());
        use crate::commit::{persister, After};
        let (tx, handle) = persister::spawn(store.clone(), Arc::new(persister::PersistMetrics::default()));
        let (acked, seen) = crossbeam_channel::unbounded::<u64>();
        let reader = {
            let store = store.clone();
            std::thread::spawn(move || {
                let mut checked = 0;
                for seq in seen {
                    let mut last = None;
                    store
                        .walk(cf::TRADES_BY_WALLET, &index::holder_prefix("0xmaker"), None, true, |k, _| {
                            last = Some(u64::from_be_bytes(k[k.len() - 9..k.len() - 1].try_into().unwrap()));
                            ControlFlow::Break(())
                        })
                        .unwrap();
                    assert!(last >= Some(seq), "trade {seq} acknowledged, the maker's history ends at {last:?}");
                    let taker = store.get_raw(cf::POSITIONS, &index::position("0xtaker", "11")).unwrap();
                    assert!(index::Position::decode(&taker.unwrap()).size >= seq as i64 * 10_000_000);
                    checked += 1;
                }
                checked
            })
        };
        const N: u64 = 300;
        for seq in 1..=N {
            let mut batch = Batch::default();
            batch.put_trade(Arc::new(trade(seq, TradeStatus::Pending)));
            let acked = acked.clone();
            let after = After::reply(move |ok| {
                assert!(ok);
                acked.send(seq).unwrap();
            });
            tx.send(persister::Job { batch, after }).unwrap();
        }
        drop((tx, acked));
        handle.join().unwrap();
        assert_eq!(reader.join().unwrap(), N);
    }

    /// Balances and position counters written under text keys (address + `/` + asset,
    /// before the compact layout) move to compact keys at the next start, values intact,
    /// and later writes go to the same keys.
    #[test]
    fn text_wallet_keys_move_to_compact_ones_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (addr, token) = (
            "0x9d84ce0306f8551e02efef1680475fc0f1dc1344",
            "2533125062127029072497033382062890715058177690830198673817386145166809525645",
        );
        let text = format!("{addr}/{token}").into_bytes();
        let with = |prefix: &[u8], rest: &[u8]| [prefix, rest].concat();
        let day = 19_700u32.to_be_bytes();
        let p = index::Position { size: 5, bought: 5, cost: 2, sold: 0, proceeds: 0 };
        // A trade's seq ending in `/`, which the text layout's parse must not split at.
        let seq_role = [&0x2f2f_u64.to_be_bytes()[..], &[1]].concat();
        let trade_id = *Uuid::from_u128(77).as_bytes();
        let old = |b: &mut Batch| {
            // As an earlier version wrote them: the text layout, under each prefix, as
            // merges; one key whose address stays text.
            b.delete(cf::META, meta::COMPACT_WALLET_KEYS.to_vec());
            b.merge(cf::POSITIONS, text.clone(), p.encode());
            b.merge(cf::MARKET_HOLDERS, with(&2u32.to_be_bytes(), &text), p.encode());
            b.merge(cf::WALLET_DAYS, with(&day, &text), p.encode());
            b.merge(cf::POSITIONS, b"0xtaker/11".to_vec(), p.encode());
            b.put(cf::LEDGER, format!("{addr}/USDC").into_bytes(), 7u64.to_be_bytes().to_vec());
            b.put(cf::LEDGER, text.clone(), 8u64.to_be_bytes().to_vec());
            b.put(cf::LEDGER, b"0xtaker/USDC".to_vec(), 9u64.to_be_bytes().to_vec());
            b.delete(cf::META, meta::COMPACT_WALLET_TRADES.to_vec());
            b.put(cf::TRADES_BY_WALLET, with(format!("{addr}/").as_bytes(), &seq_role), trade_id.to_vec());
            b.put(cf::TRADES_BY_WALLET, with(b"0xtaker/", &seq_role), trade_id.to_vec());
        };
        let mut b = Batch::default();
        old(&mut b);
        old(&mut b);
        store.write([&b], true).unwrap();
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        let get =
            |s: &Store, cf: &'static str, k: &[u8]| s.get_raw(cf, k).unwrap().map(|v| index::Position::decode(&v));
        let twice = index::Position { size: 10, bought: 10, cost: 4, sold: 0, proceeds: 0 };
        let compact = index::position(addr, token);
        assert_eq!(compact.len(), 54);
        assert_eq!(get(&store, cf::POSITIONS, &compact), Some(twice));
        assert_eq!(get(&store, cf::MARKET_HOLDERS, &index::market_holder(2, addr, token)), Some(twice));
        assert_eq!(get(&store, cf::WALLET_DAYS, &index::wallet_day(19_700, addr, token)), Some(twice));
        assert_eq!(get(&store, cf::POSITIONS, &text), None);
        assert_eq!(get(&store, cf::MARKET_HOLDERS, &with(&2u32.to_be_bytes(), &text)), None);
        assert_eq!(get(&store, cf::WALLET_DAYS, &with(&day, &text)), None);
        assert_eq!(get(&store, cf::POSITIONS, b"0xtaker/11"), Some(twice));
        let mut balances = store.balances().unwrap();
        balances.sort();
        let want = [(addr, token, 8), (addr, "USDC", 7), ("0xtaker", "USDC", 9)];
        assert_eq!(balances, want.map(|(a, t, v)| (a.to_string(), t.to_string(), v)));
        assert_eq!(
            store.get_raw(cf::LEDGER, &index::position(addr, "USDC")).unwrap(),
            Some(7u64.to_be_bytes().to_vec())
        );
        assert_eq!(index::position(addr, "USDC").len(), 26);
        assert_eq!(store.get_raw(cf::LEDGER, &text).unwrap(), None);
        let wallet_trades = |s: &Store, address: &str| {
            let mut v = Vec::new();
            s.walk(cf::TRADES_BY_WALLET, &index::holder_prefix(address), None, false, |k, id| {
                v.push((k.to_vec(), id.to_vec()));
                ControlFlow::Continue(())
            })
            .unwrap();
            v
        };
        let moved = index::wallet_trade(addr, 0x2f2f, 1);
        assert_eq!(moved.len(), 30);
        assert_eq!(wallet_trades(&store, addr), vec![(moved, trade_id.to_vec())]);
        assert_eq!(wallet_trades(&store, "0xtaker").len(), 1);
        assert_eq!(store.get_raw(cf::TRADES_BY_WALLET, &with(format!("{addr}/").as_bytes(), &seq_role)).unwrap(), None);
        // New sums land on the compact key; the move is not made twice.
        let mut ops = Vec::new();
        index::position_ops(2, 19_700, addr, token, &p, &mut ops);
        let mut b = Batch::default();
        for (c, k, v) in ops {
            b.merge(c, k, v);
        }
        b.put_balance(addr.into(), "USDC".into(), 10);
        store.write([&b], true).unwrap();
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        let thrice = index::Position { size: 15, bought: 15, cost: 6, sold: 0, proceeds: 0 };
        assert!(store.balances().unwrap().contains(&(addr.to_string(), "USDC".to_string(), 10)));
        assert_eq!(store.balances().unwrap().len(), 3);
        assert_eq!(get(&store, cf::POSITIONS, &compact), Some(thrice));
        assert_eq!(get(&store, cf::WALLET_DAYS, &index::wallet_day(19_700, addr, token)), Some(thrice));
        let mut seen = Vec::new();
        store
            .walk(cf::POSITIONS, &index::holder_prefix(addr), None, false, |k, _| {
                seen.push(index::split_position(k).unwrap());
                ControlFlow::Continue(())
            })
            .unwrap();
        assert_eq!(seen, vec![(addr.to_string(), token.to_string())]);
    }
}
#[cfg(test)]
mod coalesce_tests {
    use super::*;
    use proptest::prelude::*;

    /// (family: 0 = ledger, 1 = a counter family; key 0..3; 0 = put, 1 = delete, 2 = merge;
    /// value). Merges only where RocksDB has a merge operator.
    fn write_op() -> impl Strategy<Value = (bool, u8, u8, i64)> {
        (any::<bool>(), 0u8..3, 0u8..3, -5i64..6)
    }

    fn batch(ops: &[(bool, u8, u8, i64)]) -> Batch {
        let mut b = Batch::default();
        for &(counter, key, kind, v) in ops {
            let (cf, key) = if counter { (cf::MARKET_STATS, vec![key]) } else { (cf::LEDGER, vec![key]) };
            let value = index::encode_counters(&[v, 1]);
            match kind {
                0 => b.put(cf, key, value),
                1 => b.delete(cf, key),
                _ if counter => b.merge(cf, key, value),
                _ => b.put(cf, key, value),
            }
        }
        b
    }

    fn state(store: &Store) -> Vec<Option<Vec<i64>>> {
        [cf::MARKET_STATS, cf::LEDGER]
            .iter()
            .flat_map(|cf| (0u8..3).map(move |k| (*cf, k)))
            .map(|(cf, k)| store.get_raw(cf, &[k]).unwrap().map(|v| index::decode_counters(&v)))
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// A group written as one coalesced batch reads exactly as the same writes made one
        /// at a time, each its own batch (where nothing is coalesced).
        #[test]
        fn a_coalesced_group_reads_as_its_writes_one_by_one(
            before in proptest::collection::vec(write_op(), 0..6),
            ops in proptest::collection::vec(write_op(), 1..24),
        ) {
            let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
            let (group, single) = (Store::open(a.path()).unwrap(), Store::open(b.path()).unwrap());
            for s in [&group, &single] {
                s.write([&batch(&before)], false).unwrap();
            }
            // As a group of batches (coalesced across them), and one write at a time.
            let batches: Vec<Batch> = ops.chunks(3).map(batch).collect();
            group.write(&batches, false).unwrap();
            for op in &ops {
                single.write([&batch(std::slice::from_ref(op))], false).unwrap();
            }
            prop_assert_eq!(state(&group), state(&single));
        }
    }

    #[test]
    fn a_group_writes_each_hot_key_once() {
        let mut e = Entries::default();
        for v in 1..=5 {
            e.put(cf::LEDGER, b"maker/USDC".to_vec(), vec![v]);
            e.merge(cf::MARKET_STATS, b"m".to_vec(), index::encode_counters(&[v as i64, 1]));
        }
        e.delete(cf::LEDGER, b"gone".to_vec());
        for (cf, family) in e.families {
            let out = coalesce(cf, family);
            match cf {
                cf::LEDGER => {
                    assert_eq!(out.len(), 2);
                    assert_eq!(out[0].value, vec![5]);
                }
                _ => {
                    assert_eq!(out.len(), 1);
                    assert_eq!(index::decode_counters(&out[0].value), vec![15, 5]);
                }
            }
        }
    }
}
