//! The storage schema's names: every column family and every meta key, in one place. The
//! keys' layouts are in `store::keys` and `store::index`.

/// Column-family names.
pub mod cf {
    /// order id → record of an order that is no longer open (filled, cancelled, …).
    pub const ORDERS: &str = "orders";
    /// seq (u64 BE) → record of a LIVE or DEFERRED order, so the open orders are one
    /// ordered scan in priority order at startup.
    pub const LIVE_ORDERS: &str = "live_orders";
    /// seq (u64 BE) → what changed of an open order since its record was written (status,
    /// fills, reserve), so a fill rewrites a few dozen bytes instead of the order's signed
    /// fields. Deleted with the record when the order closes.
    pub const OPEN_STATE: &str = "open_state";
    /// seq (u64 BE) → signature (its stored form) of every accepted order; written once
    /// with the order, never read on the request path, so an order's record — on disk and
    /// held in memory while it is open — does not carry it. See [`Store::order_signature`].
    pub const ORDER_SIGNATURES: &str = "order_signatures";
    /// order id → the whole salt (32 bytes, big-endian) of an order whose salt does not
    /// fit 64 bits; its record holds `u64::MAX` then. See [`Store::order_salt`].
    pub const ORDER_SALTS: &str = "order_salts";
    /// order id → what a version 2 order signs beside its record's fields: timestamp,
    /// metadata and builder code, 32 bytes each. See [`Store::order_v2`].
    pub const ORDER_V2: &str = "order_v2";
    /// owner (16) + order id (16) → (): the orders of another version than the venue's
    /// that were open when it changed version, cancelled then (`GET
    /// /data/pre-migration-orders`).
    pub const PRE_MIGRATION: &str = "pre_migration";
    /// condition id → the market's fee description for version 2 takers
    /// (`domain::FeeSchedule`); no entry, no fee.
    pub const MARKET_FEES: &str = "market_fees";
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
    /// trade seq (u64 BE) → trade id of every PENDING trade: the settlement worker's queue,
    /// maintained with the trade record (see `Op::Trade`).
    pub const PENDING_TRADES: &str = "pending_trades";
    /// owner (16) + trade seq (8) + kind (1) → notification record.
    pub const NOTIFICATIONS: &str = "notifications";
    /// maker address → its exchange nonce and the trade seq at which it last changed.
    pub const NONCES: &str = "nonces";
    pub const META: &str = "meta";
    /// Analytics indexes and counters written with each trade (see [`crate::store::index`]).
    pub const TRADES_BY_MARKET: &str = "trades_by_market";
    pub const TRADES_BY_WALLET: &str = "trades_by_wallet";
    pub const POSITIONS: &str = "positions";
    pub const MARKET_HOLDERS: &str = "market_holders";
    pub const WALLET_DAYS: &str = "wallet_days";
    pub const MARKET_STATS: &str = "market_stats";
    /// log sequence (u64 BE) → sign (0: add, 1: take back) + trade id, per trade whose
    /// wallet analytics (`trades_by_wallet` and the position counters) are not written
    /// yet; see [`crate::store::aggregator`].
    pub const ANALYTICS_LOG: &str = "analytics_log";
    /// Families written behind the trades (see [`crate::store::aggregator`]): a read of them first
    /// waits for what was handed over before it.
    pub const WRITTEN_BEHIND: &[&str] = &[TRADES_BY_WALLET, POSITIONS, MARKET_HOLDERS, WALLET_DAYS];
    /// Catalogue: id (u64 BE) → series / event record; condition id → market metadata;
    /// (kind, parent id, inverted seq) → comment.
    pub const SERIES: &str = "series";
    pub const EVENTS: &str = "events";
    pub const MARKET_META: &str = "market_meta";
    pub const COMMENTS: &str = "comments";
    /// Bridge: id (u64 BE) → deposit or withdrawal record; address + `/` + id (BE) → ();
    /// registered bridge addresses, credited source transactions and PROCESSING
    /// withdrawals (see `app::bridge::transfers`).
    pub const TRANSFERS: &str = "transfers";
    pub const TRANSFERS_BY_ADDRESS: &str = "transfers_by_address";
    pub const BRIDGE: &str = "bridge";
    /// A wallet's splits, merges and redeems: address + `/` + time (8) + tx hash (32) →
    /// record (trades have their own index).
    pub const ACTIVITY: &str = "activity";
    /// Liquidity rewards (see `app::rewards`): `c/` + condition id → a market's reward
    /// config; `e/` + day (4) + address + `/` + market (4) → earnings counters (merged);
    /// `p/` + address + `/` + day (4) → the day's payout.
    pub const REWARDS: &str = "rewards";
    /// Maker rebates: address + `/` + day (4) → the day's rebate.
    pub const REBATES: &str = "rebates";
    /// Bonds and resolution (see `resolution`): `b/` agent `/` condition → bond; `m/`
    /// condition `/` agent → (); `r/` condition → proposal; `k/` condition → cluster; `p/`
    /// condition → payout report (chain mode).
    pub const BONDS: &str = "bonds";
    /// Requests for quote (see `rfq`): `r/` rfq → request; `q/` rfq quote → quote; `i/`
    /// quote → rfq; `o/` owner time rfq → (); `a/` rfq → () while open; `x/` expiry kind
    /// rfq [quote] → () while open or PENDING.
    pub const RFQ: &str = "rfq";
    /// Builder and relayer API keys and builder attribution (see `builders`): `k/` key →
    /// key; `a/` address `/` kind `/` key → (); `n/` builder → claiming address; `o/`
    /// builder `/` order → ().
    pub const BUILDERS: &str = "builders";
    /// Chain mode: nonce (u64 BE) → settlement transaction recorded before its broadcast
    /// and not settled yet (`domain::chain::ChainTx`).
    pub const CHAIN_TXS: &str = "chain_txs";
    /// The relayer's transactions, their indexes, wallets' nonces and deployed Safes
    /// (`store::relay`).
    pub const RELAY: &str = "relay";
    /// The event stream (`--events-to`): event sequence (u64 BE) → an order, trade or
    /// market write not yet acknowledged by the stream's server (`store::outbox`).
    pub const STREAM_OUTBOX: &str = "stream_outbox";

    /// Families whose values are counters summed by the merge operator.
    pub const COUNTERS: &[&str] = &[POSITIONS, MARKET_HOLDERS, WALLET_DAYS, MARKET_STATS, REWARDS];

    /// Families whose keys a fill writes scattered over the key space (by order id, owner,
    /// wallet) rather than appended (by sequence), each key once: their memtables are kept
    /// small (`SCATTERED_WRITE_BUFFER_BYTES`). The counters and the ledger are scattered too
    /// but rewrite their few keys, and are sized apart (`REWRITTEN_WRITE_BUFFER_BYTES`).
    pub const SCATTERED: &[&str] = &[ORDERS, TRADES_BY_OWNER, NOTIFICATIONS, TRADES_BY_WALLET];

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
        ORDER_SALTS,
        ORDER_V2,
        PRE_MIGRATION,
        MARKET_FEES,
        TRADES,
        TRADES_BY_OWNER,
        API_KEYS,
        KEYS_BY_ADDRESS,
        LEDGER,
        MARKETS,
        INVITES,
        WAITLIST,
        ADDRESSES,
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
        CHAIN_TXS,
        RELAY,
        STREAM_OUTBOX,
        LOG_PIN,
    ];
}

/// Meta keys.
pub mod meta {
    pub const NEXT_ORDER_SEQ: &[u8] = b"next_order_seq";
    pub const NEXT_TRADE_SEQ: &[u8] = b"next_trade_seq";
    pub const MODE: &[u8] = b"mode";
    /// A known text sealed with the secrets key (see `sealed`): which key seals this store.
    pub const SECRETS_CHECK: &[u8] = b"secrets_check";
    pub const CATALOGUE_LOADED: &[u8] = b"catalogue_loaded";
    pub const EVENTS_LOADED: &[u8] = b"events_loaded";
    /// The store's format (u64 BE; see `upgrade`).
    pub const FORMAT_VERSION: &[u8] = b"format_version";
    /// The last UTC day (u32) whose rewards and rebates were paid.
    pub const PAYOUTS_THROUGH: &[u8] = b"payouts_through";
    /// The ids the next catalogue series, event and comment get (u64 BE).
    pub const NEXT_SERIES: &[u8] = b"next_series_id";
    pub const NEXT_EVENT: &[u8] = b"next_event_id";
    pub const NEXT_COMMENT: &[u8] = b"next_comment_id";
    /// Chain mode: the last block whose exchange logs were applied (u64 BE).
    pub const CHAIN_WATCHED_THROUGH: &[u8] = b"chain_watched_through";
    /// The event stream: the last event sequence its server acknowledged (u64 BE).
    pub const EVENTS_ACKED: &[u8] = b"events_acked";

    /// Key of a market's last trade (YES price, taker side in YES terms), written by every
    /// crossing order ([`crate::store::Op::LastTrade`]).
    pub fn last_trade(market_idx: u32) -> Vec<u8> {
        [b"last_trade/".as_slice(), &market_idx.to_be_bytes()].concat()
    }
}
