//! The application layer: the venue's state ([`AppState`]) and one module per feature with
//! its rules. It knows nothing of HTTP: the routes in `api/` parse a request, call a
//! service here and render its answer; each feature's error enum is mapped to its SPEC §7
//! response there. Workers call services here too.

pub mod access;
pub mod analytics;
pub mod backup;
pub mod bridge;
pub mod builders;
pub mod catalogue;
pub mod chain_ctf;
pub mod chain_settlement;
pub mod chain_watch;
pub mod ctf;
pub mod demo;
pub mod events;
pub mod faucet;
pub mod keys;
pub mod markets;
pub mod onchain;
pub mod orders;
pub mod overview;
pub mod ratelimit;
pub mod relayer;
pub mod replay;
pub mod resolution;
pub mod rewards;
pub mod rfq;
pub mod settlement;
pub mod workers;

use std::sync::Arc;

use alloy_primitives::Address;

use crate::auth::wallets::WalletFactories;
use crate::auth::OrderDomains;
use crate::commit::persister::{Job, PersistMetrics};
use crate::commit::views::Registry;
use crate::commit::After;
use crate::config::Config;
use crate::domain::{ApiKeyRecord, DerivedWallets};
use crate::engine::EngineHandle;
use crate::store::{Batch, Store, StoreError};

/// Everything a handler needs: the shared parts (settings, store, engine, views, the
/// persister), then each feature's state with its locks, in a struct the feature owns.
/// Built once, by [`Parts::build`].
pub struct AppState {
    pub config: Config,
    pub store: Arc<Store>,
    pub engine: EngineHandle,
    pub registry: Arc<Registry>,
    pub domains: OrderDomains,
    /// The factories proxy and Safe makers are derived from (`auth::wallets`).
    pub wallets: WalletFactories,
    pub metrics: Arc<PersistMetrics>,
    /// What `GET /metrics` on the internal server exports.
    pub exported: Arc<crate::metrics::Metrics>,
    /// The persister: handlers' own writes (keys, waitlist, operator settings) go through it
    /// too, so no tokio worker ever waits on an fsync.
    persist: crossbeam_channel::Sender<Job>,
    pub access: access::Access,
    pub keys: keys::Keys,
    pub feeds: Feeds,
    pub catalogue: catalogue::Catalogue,
    pub bridge: bridge::Bridge,
    pub rewards: rewards::Rewards,
    pub resolution: resolution::Resolution,
    /// Chain mode's faucet: its gifts of the last interval.
    pub faucet: faucet::Faucet,
    pub rfq: rfq::Rfq,
    /// Chain mode's link to the chain, checked at start (None: ledger mode).
    pub chain: Option<onchain::OnChain>,
    /// The event stream out (None: no `--events-to`).
    pub events: Option<Arc<events::EventStream>>,
    /// The dashboard's 24-hour volume of each market.
    pub day_volumes: overview::DayVolumes,
    pub relayer: relayer::Relayer,
    /// The contracts a relayed call may reach.
    pub relay_contracts: crate::domain::relay::RelayContracts,
}

/// The WebSocket feeds: their subscriptions and the runtime their connections run on
/// (`App`'s feed runtime).
pub struct Feeds {
    pub bus: Arc<crate::commit::bus::Bus>,
    pub user_bus: Arc<crate::commit::bus::UserBus>,
    pub runtime: tokio::runtime::Handle,
}

/// What the start made before the state: the running threads' handles and the parts read
/// or checked at start.
pub struct Parts {
    pub config: Config,
    pub store: Arc<Store>,
    pub engine: EngineHandle,
    pub registry: Arc<Registry>,
    pub metrics: Arc<PersistMetrics>,
    pub exported: Arc<crate::metrics::Metrics>,
    pub persist: crossbeam_channel::Sender<Job>,
    pub feeds: Feeds,
    pub chain: Option<crate::chain::Chain>,
    pub events: Option<Arc<events::EventStream>>,
    pub internal_token: Arc<str>,
}

impl Parts {
    /// The state, each feature's part loaded from the store.
    pub fn build(self) -> anyhow::Result<AppState> {
        let Parts { config, store, engine, registry, metrics, exported, persist, feeds, chain, events, internal_token } =
            self;
        Ok(AppState {
            domains: config.order_domains()?,
            wallets: config.wallet_factories()?,
            relay_contracts: {
                let mut c = config.relay_contracts()?;
                // In chain mode the relayer account relays proxy wallets' calls.
                if let Some(chain) = &chain {
                    c.relay = chain.relayer().address;
                }
                c
            },
            relayer: Default::default(),
            access: access::Access::load(&store, &config, internal_token)?,
            keys: keys::Keys::load(&store)?,
            feeds,
            catalogue: catalogue::Catalogue::load(&store)?,
            bridge: bridge::Bridge::load(&store, &config.catalogue.with_file_name("bridge-assets.json"))?,
            rewards: rewards::Rewards::load(&store)?,
            resolution: Default::default(),
            faucet: Default::default(),
            rfq: Default::default(),
            chain: chain.map(onchain::OnChain::new),
            events,
            day_volumes: Default::default(),
            config,
            store,
            engine,
            registry,
            metrics,
            exported,
            persist,
        })
    }
}

impl AppState {
    /// Observes an order command's latency when the returned guard drops.
    pub fn time_command(&self, command: &'static str) -> CommandTimer<'_> {
        CommandTimer { state: self, command, start: std::time::Instant::now() }
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
