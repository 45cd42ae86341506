//! predex: a self-hosted prediction-market exchange.
//!
//! [`App::start`] wires everything: the RocksDB store, the persister thread (group commit),
//! the engine thread (books + ledger), and the warp servers (order book, catalogue,
//! analytics, bridge, internal), each bound to its own address.

/// mimalloc for every Rust allocation of every binary, test and bench built on this crate:
/// the request path allocates many small, short-lived objects, many of them freed on
/// another thread than the one that made them, where glibc's malloc spent ≈ 10% of a
/// loaded server's CPU. Entered as [`alloc`] says; RocksDB's C++ allocations keep the
/// system's.
#[global_allocator]
static ALLOC: alloc::Mimalloc = alloc::Mimalloc;

mod alloc;
pub use alloc::no_transparent_huge_pages;

pub mod admin;
pub mod api;
pub mod app;
pub mod auth;
pub mod chain;
pub mod client;
pub mod commit;
pub mod config;
pub mod domain;
pub mod engine;
pub mod keyfile;
pub mod ledger;
pub mod metrics;
pub mod sign;
pub mod spread_map;
pub mod store;
pub mod vital;

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use futures_util::future::BoxFuture;
use serde::Deserialize;
use tokio::sync::watch;

use crate::config::Config;
use crate::domain::{Amount, Market, Token};
use crate::store::Store;

/// A market as the internal API and the demo catalogue describe it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarketSpec {
    /// Required in ledger mode; made on chain in chain mode.
    #[serde(default)]
    pub condition_id: String,
    #[serde(default)]
    pub question: String,
    #[serde(default)]
    pub slug: String,
    /// Required to create a market; a spec naming an existing market (in an event) may
    /// leave it out.
    #[serde(default)]
    pub tokens: Vec<Token>,
    #[serde(default = "default_tick")]
    pub tick_size: String,
    #[serde(default = "default_min")]
    pub min_order_size: String,
    #[serde(default)]
    pub neg_risk: bool,
    #[serde(default)]
    pub neg_risk_market_id: Option<String>,
    /// Chain mode: the question the market's condition is prepared for (32 bytes, hex);
    /// predex makes one when absent. Ignored in ledger mode.
    #[serde(default)]
    pub question_id: Option<String>,
    // Catalogue metadata (the engine does not keep these).
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub resolution_source: String,
    #[serde(default)]
    pub image: String,
    #[serde(default)]
    pub icon: String,
    #[serde(default)]
    pub group_item_title: String,
    /// RFC 3339 date-times or dates.
    #[serde(default)]
    pub start_date: Option<String>,
    #[serde(default)]
    pub end_date: Option<String>,
    /// A liquidity-reward program (docs/rewards.md).
    #[serde(default)]
    pub rewards: Option<app::incentives::RewardSpec>,
}

fn default_tick() -> String {
    "0.01".into()
}
fn default_min() -> String {
    "5".into()
}

impl MarketSpec {
    /// Validates into a market (idx assigned by the engine).
    pub fn into_market(self) -> Result<Market, String> {
        if self.question.trim().is_empty() {
            return Err("question is required".into());
        }
        let tick = domain::Price::parse(&self.tick_size).map_err(|_| "invalid tick_size")?;
        if ![1000, 100, 10, 1].contains(&tick.units()) {
            return Err("tick_size must be 0.1, 0.01, 0.001 or 0.0001".into());
        }
        let min = Amount::parse(&self.min_order_size).map_err(|_| "invalid min_order_size")?;
        let [a, b]: [Token; 2] = self.tokens.try_into().map_err(|_| "a binary market has exactly two tokens")?;
        if self.condition_id.is_empty() || a.token_id.is_empty() || b.token_id.is_empty() || a.token_id == b.token_id {
            return Err("condition_id and two distinct token_ids are required".into());
        }
        for t in [&a.token_id, &b.token_id] {
            if alloy_primitives::U256::from_str_radix(t, 10).is_err() {
                return Err("token_id must be a decimal uint256".into());
            }
        }
        Ok(Market {
            slug: self.slug,
            question: self.question,
            neg_risk: self.neg_risk,
            neg_risk_market_id: self.neg_risk_market_id,
            ..Market::binary(&self.condition_id, a, b, tick, min)
        })
    }
}

/// The addresses the servers actually bound (port 0 resolved).
#[derive(Debug, Clone, Copy)]
pub struct Bound {
    pub clob: SocketAddr,
    pub gamma: SocketAddr,
    pub data: SocketAddr,
    pub bridge: SocketAddr,
    pub internal: SocketAddr,
}

/// A running exchange.
pub struct App {
    pub bound: Bound,
    pub state: Arc<app::AppState>,
    shutdown: watch::Sender<bool>,
    servers: Vec<tokio::task::JoinHandle<()>>,
    workers: Option<app::workers::Workers>,
    /// Engine, persister, feed publisher: each exits when its input channel closes.
    threads: Vec<std::thread::JoinHandle<()>>,
    /// The runtime the WebSocket connections run on.
    feeds: FeedRuntime,
}

/// The WebSocket connections' own runtime: an upgraded connection moves there, so a burst
/// of feed writes to many connections never queues ahead of HTTP requests on the
/// workers, and the OS shares the cores between the two fairly. Its tasks are dropped
/// (their sockets closed) when it goes, which must not block.
struct FeedRuntime(Option<tokio::runtime::Runtime>);

impl Drop for FeedRuntime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

pub fn init_logging(json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("PREDEX_LOG").unwrap_or_else(|_| "info".into());
    let b = tracing_subscriber::fmt().with_env_filter(filter);
    let _ = if json { b.json().try_init() } else { b.try_init() };
}

impl App {
    /// Starts the exchange: opens the store, reloads the books, binds every listener.
    ///
    /// Boxed and never inlined (as is [`App::shutdown`]): a small `async fn` is inlined
    /// across crates, and its caller — the `predex` binary, predex-loadgen, the
    /// integration tests — then compiled the servers' whole warp filter trees again
    /// (≈ 50 s of monomorphization and 40 s of LLVM per binary, measured with
    /// `-Ztime-passes`). Behind a `dyn Future` the body is compiled here once.
    #[inline(never)]
    pub fn start(config: Config) -> BoxFuture<'static, anyhow::Result<App>> {
        Box::pin(Self::start_inner(config))
    }

    async fn start_inner(config: Config) -> anyhow::Result<App> {
        config.validate()?;
        if config.orders_replay_on_polymarket() {
            tracing::warn!(
                "the order domain is Polymarket's production exchange on Polygon (name, chain id 137 and \
                 exchange address): an order signed for this venue is also a valid order there. Outside \
                 compatibility runs set your own --chain-id and exchange addresses, or use throwaway keys"
            );
        }
        // Chain mode starts only against the chain it is configured for (`chain::Chain::check`).
        let chain = match config.chain()? {
            Some(settings) => {
                let chain = chain::Chain::connect(&settings)?;
                let domains = auth::OrderDomains::new(
                    &config.order_domain_name,
                    config.chain_id,
                    settings.exchange,
                    settings.neg_risk_exchange,
                );
                chain.check(config.chain_id, &domains).await.context("chain mode")?;
                tracing::info!(rpc = %config::url_host(&settings.rpc_url), operator = %chain.operator, "chain mode: settling on chain");
                Some(chain)
            }
            None => None,
        };
        std::fs::create_dir_all(&config.data_dir).with_context(|| format!("create {}", config.data_dir.display()))?;
        let mut store = Store::open_with(&config.data_dir, config.wal_logs_ahead).context("open RocksDB")?;
        let sealer = match &config.secrets_key_file {
            Some(f) => Some(store::Sealer::from_hex(&keyfile::read_private(f, "secrets key file")?)?),
            None => None,
        };
        // The operator's bearer token: the file given, or one made in the data directory.
        let internal_token: Arc<str> =
            keyfile::internal_token(&config.internal_token_path(), config.internal_token_file.is_none())?.into();
        let sealing = sealer.is_some();
        match store.set_secrets(sealer)? {
            0 => {}
            n => tracing::info!(records = n, "sealed the credentials written before the secrets key was set"),
        }
        if !sealing {
            tracing::warn!(
                "API-key, builder and relayer secrets are stored unsealed: set --secrets-key-file (docs/operating.md)"
            );
        }
        let store = Arc::new(store);
        let mut chain = chain;
        if let Some(chain) = &mut chain {
            // Recorded settlements keep their nonces from whatever the operator sends next.
            for tx in store.chain_txs().context("read the recorded settlement transactions")? {
                chain.sending.get_mut().used(tx.nonce);
            }
        }
        let configured_fee_address = config.fee_address.as_deref().and_then(auth::normalize_address);
        let fee_address = match &chain {
            // `matchOrders` pays every fee to its sender: on chain the fees are the operator's.
            Some(chain) => {
                let operator = format!("{:#x}", chain.operator);
                if configured_fee_address.as_ref().is_some_and(|f| *f != operator) {
                    anyhow::bail!(
                        "fee-address must be the operator's address {operator} in chain mode: the exchange pays fees to the operator"
                    );
                }
                operator
            }
            None => {
                configured_fee_address.or_else(|| auth::normalize_address(&config.exchange_address)).expect("validated")
            }
        };
        let core = engine::recover(&store, fee_address).context("recover state")?;
        // Written meanwhile, on a thread of the store's: done before anything is written.
        store.wait_logs_ahead().context("write the log files ahead")?;
        let exported = Arc::new(metrics::Metrics::new());
        // Before the first write to publish (recovery's own rewrites are not events).
        let events = app::events::EventStream::new(&config, store.clone(), exported.clone())?;
        let metrics = Arc::new(commit::persister::PersistMetrics::exported(&exported));
        let (persist_tx, persister) = commit::persister::spawn(store.clone(), metrics.clone());
        let registry = Arc::new(commit::views::Registry::default());
        let bus = Arc::new(commit::bus::Bus::new(config.ws_window, exported.ws_too_slow.clone()));
        let user_bus = Arc::new(commit::bus::UserBus::new(config.ws_window, exported.ws_too_slow.clone()));
        let (events_tx, publisher) = commit::bus::spawn(bus.clone(), user_bus.clone());
        let (engine, engine_thread) =
            engine::spawn(core, registry.clone(), persist_tx.clone(), events_tx, exported.clone());
        let mut state = app::AppState::new(config.clone(), store, engine, registry, metrics, exported, persist_tx)?;
        state.chain = chain;
        state.internal_token = internal_token;
        if let Some(events) = &events {
            tokio::spawn(events.clone().run());
        }
        state.events = events;
        let feeds = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.ws_threads)
            .thread_name("feeds")
            .enable_all()
            .build()
            .context("start the feed runtime")?;
        state.bus = Some(bus);
        state.user_bus = Some(user_bus);
        state.feed_rt = Some(feeds.handle().clone());
        let assets = config.catalogue.with_file_name("bridge-assets.json");
        if assets.exists() {
            let t = app::bridge::AssetTable::load(&assets)
                .with_context(|| format!("bridge assets {}", assets.display()))?;
            state.bridge = Some(t);
        } else {
            tracing::warn!(path = %assets.display(), "no bridge asset table: the bridge answers 503");
        }
        let state = Arc::new(state);

        // The demo catalogue's tokens exist on no chain: a chain-mode venue makes its markets
        // on chain (`POST /internal/markets`).
        if state.chain.is_none() {
            if !state.store.demo_loaded(false)? {
                load_catalogue(&state, &config).await?;
            }
            if !state.store.demo_loaded(true)? {
                load_events(&state, &config).await?;
            }
        }

        let (shutdown, rx) = watch::channel(false);
        let mut servers = Vec::new();
        let bind = |addr: SocketAddr, name: &'static str| {
            let l = listen(addr).with_context(|| format!("bind {name} on {addr}"))?;
            let a = l.local_addr()?;
            tracing::info!(server = name, addr = %a, "listening");
            anyhow::Ok((l, a))
        };
        let (clob_l, clob) = bind(config.clob_addr, "clob")?;
        let (gamma_l, gamma) = bind(config.gamma_addr, "gamma")?;
        let (data_l, data) = bind(config.data_addr, "data")?;
        let (bridge_l, bridge) = bind(config.bridge_addr, "bridge")?;
        let (internal_l, internal) = bind(config.internal_addr, "internal")?;
        let workers = app::workers::Workers::start(&state)?;
        // Each server its own budget of bodies in flight and its own count of clients, so
        // no server's clients can spend another's (`api::front`).
        let public = |role| api::front::Server {
            bodies: api::body::Bodies::new(config.body_bytes_in_flight),
            clients: Some(api::clients::Clients::new(config.max_connections_per_ip, &config.trusted_proxies)),
            role,
        };
        use api::front::Role;
        let clob_routes = api::clob_routes(state.clone());
        servers.push(serve(clob_l, clob_routes, public(Role::OrderBook(state.clone())), rx.clone()));
        servers.push(serve(
            gamma_l,
            api::with_openapi(api::openapi::GAMMA, api::catalogue::routes(state.clone())),
            public(Role::Unlimited),
            rx.clone(),
        ));
        servers.push(serve(
            data_l,
            api::with_openapi(api::openapi::DATA, api::analytics::routes(state.clone())),
            public(Role::Unlimited),
            rx.clone(),
        ));
        servers.push(serve(
            bridge_l,
            api::with_openapi(api::openapi::BRIDGE, api::bridge::routes(state.clone())),
            public(Role::WritesLimited(state.clone())),
            rx.clone(),
        ));
        // The operator's server, on loopback behind its token: its clients are not counted.
        let operator = api::front::Server {
            bodies: api::body::Bodies::new(config.body_bytes_in_flight),
            clients: None,
            role: Role::Unlimited,
        };
        servers.push(serve(internal_l, api::internal::routes(state.clone(), internal), operator, rx.clone()));
        Ok(App {
            bound: Bound { clob, gamma, data, bridge, internal },
            state,
            shutdown,
            servers,
            workers: Some(workers),
            threads: vec![engine_thread, persister, publisher],
            feeds: FeedRuntime(Some(feeds)),
        })
    }

    /// Stops accepting requests, lets the servers finish, stops the workers, then lets the
    /// engine drain and the persister write its last group; returns once the store is closed.
    #[inline(never)]
    pub fn shutdown(self) -> BoxFuture<'static, ()> {
        Box::pin(self.shutdown_inner())
    }

    async fn shutdown_inner(mut self) {
        let _ = self.shutdown.send(true);
        for s in self.servers {
            let _ = s.await;
        }
        if let Some(w) = self.workers.take() {
            let _ = tokio::task::spawn_blocking(move || w.stop()).await;
        }
        drop(self.feeds);
        drop(self.state);
        let threads = self.threads;
        let _ = tokio::task::spawn_blocking(move || {
            for t in threads {
                let _ = t.join();
            }
        })
        .await;
    }
}

/// A listener whose accepted connections have TCP_NODELAY (Linux copies it from the
/// listening socket; warp offers no hook on accept). Without it a WebSocket frame written
/// while the previous one is unacknowledged waits for the client's delayed ACK (~40 ms).
pub fn listen(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.set_nodelay(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

/// Serves `routes` on `listener` until `stop` turns true, within `server`'s limits (see
/// [`api::front::serve`]).
pub fn serve<F>(
    listener: tokio::net::TcpListener,
    routes: F,
    server: api::front::Server,
    stop: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()>
where
    F: warp::Filter + Clone + Send + Sync + 'static,
    F::Extract: warp::Reply,
{
    api::front::serve(listener, routes, server, stop)
}

async fn load_catalogue(state: &app::AppState, config: &Config) -> anyhow::Result<()> {
    let path = &config.catalogue;
    let specs: Vec<MarketSpec> = match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).with_context(|| format!("parse {}", path.display()))?,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "no demo catalogue loaded");
            Vec::new()
        }
    };
    let n = specs.len();
    for s in specs {
        let meta = s.meta(0, None).map_err(|e| anyhow::anyhow!("catalogue: {e}"))?;
        let program = s.rewards.as_ref().map(|r| r.config(&s.condition_id)).transpose();
        let program = program.map_err(|e| anyhow::anyhow!("catalogue rewards: {e}"))?;
        let m = s.into_market().map_err(|e| anyhow::anyhow!("catalogue: {e}"))?;
        match state.engine.create_market(m).await {
            Ok(_) | Err(engine::EngineError::Exists) => {}
            Err(e) => anyhow::bail!("catalogue: {e:?}"),
        }
        app::catalogue::put_meta(state, meta).await.map_err(|e| anyhow::anyhow!("catalogue: {e}"))?;
        if let Some(c) = program {
            app::incentives::set_config(state, c).await.map_err(|e| anyhow::anyhow!("catalogue: {e}"))?;
        }
    }
    state.store.set_demo_loaded(false)?;
    tracing::info!(markets = n, "demo catalogue loaded");
    Ok(())
}

/// The demo catalogue's series and events (`events.json` beside the markets file), loaded
/// once into a data directory, like the markets.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EventsFile {
    #[serde(default)]
    series: Vec<app::catalogue::writes::SeriesInput>,
    #[serde(default)]
    events: Vec<app::catalogue::writes::EventInput>,
}

async fn load_events(state: &app::AppState, config: &Config) -> anyhow::Result<()> {
    let path = config.catalogue.with_file_name("events.json");
    let file: EventsFile = match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text).with_context(|| format!("parse {}", path.display()))?,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "no demo events loaded");
            EventsFile { series: Vec::new(), events: Vec::new() }
        }
    };
    let (ns, ne) = (file.series.len(), file.events.len());
    for s in file.series {
        app::catalogue::writes::add_series(state, s).await.map_err(|e| anyhow::anyhow!("catalogue series: {e}"))?;
    }
    for e in file.events {
        app::catalogue::writes::add_event(state, e).await.map_err(|e| anyhow::anyhow!("catalogue event: {e}"))?;
    }
    state.store.set_demo_loaded(true)?;
    tracing::info!(series = ns, events = ne, "demo events loaded");
    Ok(())
}
