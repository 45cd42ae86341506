//! The application layer: the venue's state ([`AppState`]) and one module per feature with
//! its rules. It knows nothing of HTTP: the routes in `api/` parse a request, call a
//! service here and render its answer; each feature's error enum is mapped to its SPEC §7
//! response there. Workers call services here too.

pub mod analytics;
pub mod auctions;
pub mod backup;
pub mod bridge;
pub mod builders;
pub mod catalogue;
pub mod chain_settlement;
pub mod chain_watch;
pub mod ctf;
pub mod events;
pub mod incentives;
pub mod keys;
pub mod onchain;
pub mod orders;
pub mod overview;
pub mod ratelimit;
pub mod replay;
pub mod resolution;
pub mod rfq;
pub mod settlement;
pub mod workers;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use alloy_primitives::Address;
use parking_lot::RwLock;
use uuid::Uuid;

use crate::auth::wallets::WalletFactories;
use crate::auth::OrderDomains;
use crate::commit::persister::{Job, PersistMetrics};
use crate::commit::views::Registry;
use crate::commit::After;
use crate::config::Config;
use crate::domain::{AddressStatus, ApiKeyRecord, DerivedWallets, Mode};
use crate::engine::EngineHandle;
use crate::store::{Batch, Store, StoreError};

/// Everything a handler needs.
pub struct AppState {
    pub config: Config,
    pub store: Arc<Store>,
    pub engine: EngineHandle,
    pub registry: Arc<Registry>,
    pub domains: OrderDomains,
    /// The factories proxy and Safe makers are derived from (`auth::wallets`).
    pub wallets: WalletFactories,
    pub metrics: Arc<PersistMetrics>,
    /// The persister: handlers' own writes (keys, waitlist, operator settings) go through it
    /// too, so no tokio worker ever waits on an fsync.
    persist: crossbeam_channel::Sender<Job>,
    /// Platform mode (SPEC §1.5), read lock-free by every trading request.
    mode: AtomicU8,
    /// Banned and closed-only addresses.
    pub addresses: RwLock<HashMap<String, AddressStatus>>,
    /// Serialises API-key creation so an invitation code is consumed once.
    pub key_lock: tokio::sync::Mutex<()>,
    /// Signatures of the state-changing L2 requests served while they are fresh.
    pub replays: replay::Replays,
    /// Every API key, read by L2 authentication on each request without touching RocksDB;
    /// updated after a key's creation or deletion is durable.
    api_keys: RwLock<HashMap<Uuid, Arc<ApiKeyRecord>>>,
    /// The order-book server's per-IP request limit (SPEC §8).
    pub limiter: ratelimit::RateLimiter,
    /// API keys enrolled in heartbeat monitoring (read by the monitor worker).
    pub heartbeats: Arc<workers::Heartbeats>,
    /// What `GET /metrics` on the internal server exports.
    pub exported: Arc<crate::metrics::Metrics>,
    /// The WebSocket feeds' subscriptions (set once the publisher runs).
    pub bus: Option<Arc<crate::commit::bus::Bus>>,
    pub user_bus: Option<Arc<crate::commit::bus::UserBus>>,
    /// Where WebSocket connections run (see `App`); None: on the HTTP workers.
    pub feed_rt: Option<tokio::runtime::Handle>,
    /// Series, events and market metadata (the gamma server).
    pub catalogue: crate::app::catalogue::Catalogue,
    /// The bridge's asset table (None: no table found; the bridge answers 503).
    pub bridge: Option<crate::app::bridge::AssetTable>,
    /// Serialises the bridge's deposits and withdrawals.
    pub transfers: crate::app::bridge::transfers::Desk,
    /// Liquidity-reward programs by condition ID.
    pub rewards: RwLock<std::collections::BTreeMap<String, crate::app::incentives::RewardConfig>>,
    /// Serialises reward and rebate payouts (worker and operator).
    pub payouts: parking_lot::Mutex<()>,
    /// Serialises bond and resolution changes (handlers and the resolution worker).
    pub bonds: tokio::sync::Mutex<()>,
    /// Serialises RFQ changes (handlers and the RFQ expiration worker).
    pub rfq: tokio::sync::Mutex<()>,
    /// The internal server's bearer token (`keyfile::internal_token`); never logged.
    pub internal_token: Arc<str>,
    /// Chain mode's link to the chain, checked at start (None: ledger mode).
    pub chain: Option<crate::chain::Chain>,
    /// The event stream out (None: no `--events-to`).
    pub events: Option<Arc<events::EventStream>>,
    /// The dashboard's 24-hour volume of each market.
    pub day_volumes: overview::DayVolumes,
    /// Chain mode: the (address, asset) accounts read from the chain since start.
    pub synced: parking_lot::Mutex<std::collections::HashSet<(String, String)>>,
}

impl AppState {
    pub fn new(
        config: Config,
        store: Arc<Store>,
        engine: EngineHandle,
        registry: Arc<Registry>,
        metrics: Arc<PersistMetrics>,
        exported: Arc<crate::metrics::Metrics>,
        persist: crossbeam_channel::Sender<Job>,
    ) -> anyhow::Result<AppState> {
        let exch: Address = config.exchange_address.parse()?;
        let neg: Address = config.neg_risk_exchange_address.parse()?;
        let addresses: HashMap<String, AddressStatus> = store.address_statuses()?.into_iter().collect();
        let mode = store.mode()?.unwrap_or(Mode::Normal);
        let catalogue = crate::app::catalogue::Catalogue::load(&store)?;
        let transfers = crate::app::bridge::transfers::Desk::load(&store)?;
        let rewards = RwLock::new(crate::app::incentives::load(&store)?);
        let api_keys = store.all_api_keys()?.into_iter().map(|k| (k.key, Arc::new(k))).collect();
        Ok(AppState {
            domains: OrderDomains::new(&config.order_domain_name, config.chain_id, exch, neg),
            wallets: config.wallet_factories()?,
            config: config.clone(),
            store,
            engine,
            registry,
            metrics,
            persist,
            mode: AtomicU8::new(mode_code(mode)),
            addresses: RwLock::new(addresses),
            key_lock: tokio::sync::Mutex::new(()),
            replays: Default::default(),
            api_keys: RwLock::new(api_keys),
            limiter: ratelimit::RateLimiter::new(
                config.rate_limit_max,
                config.rate_limit_window_secs,
                config.trusted_proxies.clone(),
            ),
            heartbeats: Default::default(),
            exported,
            bus: None,
            user_bus: None,
            feed_rt: None,
            catalogue,
            bridge: None,
            transfers,
            rewards,
            payouts: Default::default(),
            bonds: Default::default(),
            rfq: Default::default(),
            internal_token: Arc::from(""),
            chain: None,
            events: None,
            day_volumes: Default::default(),
            synced: Default::default(),
        })
    }

    pub fn api_key(&self, key: &Uuid) -> Option<Arc<ApiKeyRecord>> {
        self.api_keys.read().get(key).cloned()
    }

    /// Records a created (Some) or deleted (None) key once its write is durable.
    pub fn set_api_key(&self, key: Uuid, rec: Option<ApiKeyRecord>) {
        let mut m = self.api_keys.write();
        match rec {
            Some(r) => m.insert(key, Arc::new(r)),
            None => m.remove(&key),
        };
    }

    /// Observes an order command's latency when the returned guard drops.
    pub fn time_command(&self, command: &'static str) -> CommandTimer<'_> {
        CommandTimer { state: self, command, start: std::time::Instant::now() }
    }

    pub fn mode(&self) -> Mode {
        match self.mode.load(Ordering::Acquire) {
            1 => Mode::CancelOnly,
            2 => Mode::TradingDisabled,
            _ => Mode::Normal,
        }
    }

    /// Writes a batch through the persister (group commit, synced) and waits until durable.
    pub async fn commit(&self, batch: Batch) -> Result<(), StoreError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job = Job {
            batch,
            after: After::reply(move |ok| {
                let _ = tx.send(ok);
            }),
        };
        self.persist.send(job).map_err(|_| StoreError::NotDurable)?;
        match rx.await {
            Ok(true) => Ok(()),
            _ => Err(StoreError::NotDurable),
        }
    }

    /// [`AppState::commit`] from a worker's OS thread (never from a tokio worker).
    pub fn commit_blocking(&self, batch: Batch) -> Result<(), StoreError> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let job = Job {
            batch,
            after: After::reply(move |ok| {
                let _ = tx.send(ok);
            }),
        };
        self.persist.send(job).map_err(|_| StoreError::NotDurable)?;
        match rx.recv() {
            Ok(true) => Ok(()),
            _ => Err(StoreError::NotDurable),
        }
    }

    pub async fn set_mode(&self, m: Mode) -> Result<(), StoreError> {
        let mut b = Batch::default();
        b.put_mode(m);
        self.commit(b).await?;
        self.mode.store(mode_code(m), Ordering::Release);
        Ok(())
    }

    pub fn address_status(&self, addr: &str) -> AddressStatus {
        self.addresses.read().get(addr).copied().unwrap_or(AddressStatus::None)
    }
}

pub struct CommandTimer<'a> {
    state: &'a AppState,
    command: &'static str,
    start: std::time::Instant,
}

impl Drop for CommandTimer<'_> {
    fn drop(&mut self) {
        let h = crate::metrics::CommandLabels { command: self.command };
        self.state.exported.command_seconds.get_or_create(&h).observe(self.start.elapsed().as_secs_f64());
    }
}

fn mode_code(m: Mode) -> u8 {
    match m {
        Mode::Normal => 0,
        Mode::CancelOnly => 1,
        Mode::TradingDisabled => 2,
    }
}

/// The proxy wallet and the Safe `key`'s address owns ([signature type 1, type 2]),
/// derived once per loaded key.
pub fn derived_wallets<'k>(state: &AppState, key: &'k ApiKeyRecord) -> &'k DerivedWallets {
    key.wallets.get_or_init(|| {
        let owner: Address = key.address.parse().expect("a key's address is an address");
        [state.wallets.proxy(owner), state.wallets.safe(owner)].map(|a| (a.into_array(), format!("{a:#x}").into()))
    })
}

/// The wallet of `key` that signature type `t` (0, 1 or 2) names: its own address, its
/// proxy wallet or its Safe.
pub fn wallet_of_type(state: &AppState, key: &ApiKeyRecord, t: u8) -> Arc<str> {
    match t {
        0 => key.address.clone(),
        _ => derived_wallets(state, key)[usize::from(t >= 2)].1.clone(),
    }
}

/// Whether `wallet` (lowercase 0x) acts for `key`: the key's own address, or a wallet
/// derived from it. Never a wallet bound by use.
pub fn acts_for(state: &AppState, key: &ApiKeyRecord, wallet: &str) -> bool {
    wallet == &*key.address || derived_wallets(state, key).iter().any(|(_, w)| **w == *wallet)
}
