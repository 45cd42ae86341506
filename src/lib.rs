//! predex: a self-hosted prediction-market exchange.
//!
//! [`App::start`] wires everything: the RocksDB store, the persister thread (group commit),
//! the engine thread (books + ledger), and the warp servers (order book, catalogue,
//! analytics, bridge, internal), each bound to its own address.

/// mimalloc for every Rust allocation of every binary, test and bench built on this crate:
/// the request path allocates many small, short-lived objects, many of them freed on
/// another thread than the one that made them, which glibc's malloc handles slowly (the
/// figure is in docs/internals/performance.md). Entered as [`alloc`] says; RocksDB's C++ allocations
/// keep the system's.
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
pub mod essential;
pub mod incremental_map;
pub mod keyfile;
pub mod ledger;
pub mod metrics;
pub mod sign;
pub mod store;

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use futures_util::future::BoxFuture;
use tokio::sync::watch;

use crate::config::Config;
use crate::store::Store;

/// The addresses the servers actually bound (port 0 resolved).
#[derive(Debug, Clone, Copy)]
pub struct Bound {
    pub clob: SocketAddr,
    pub catalogue: SocketAddr,
    pub analytics: SocketAddr,
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
    /// integration tests — would then compile the servers' whole warp filter trees again.
    /// Behind a `dyn Future` the body is compiled here once.
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
        let mut chain = connect_chain(&config).await?;
        let (store, internal_token) = open_store(&config)?;
        if let Some(chain) = &mut chain {
            // Recorded transactions keep their nonces from whatever their account sends next.
            for tx in store.chain_txs().context("read the recorded chain transactions")? {
                let account = match tx.account {
                    None => &mut chain.operator,
                    Some(a) => match &mut chain.relayer {
                        Some(r) if r.address.0 .0 == a => r,
                        // Another key's, from before the relayer's key changed.
                        _ => continue,
                    },
                };
                account.sending.get_mut().used(tx.nonce);
            }
        }
        let core = engine::recover(&store, fee_address(&config, chain.as_ref())?).context("recover state")?;
        // A change of order version cancels the open orders of the other one, as
        // Polymarket's did (docs/reference/order-versions.md): listed first, durably.
        let migrated = core.open_of_other_version(config.order_version);
        if !migrated.is_empty() {
            let mut b = store::Batch::default();
            for (owner, id) in &migrated {
                b.put_pre_migration(owner, id);
            }
            store.write([&b], true).context("list the orders of the other version")?;
        }
        // Written meanwhile, on a thread of the store's: done before anything is written.
        store.wait_logs_ahead().context("write the log files ahead")?;
        if let Some(chain) = &chain {
            // A new data directory follows the chain's logs from its head at start, so
            // what a wallet does once predex runs shows whenever the first pass comes.
            if store.chain_watched_through()?.is_none() {
                let head = alloy_provider::Provider::get_block_number(&chain.provider)
                    .await
                    .context("read the chain's head")?;
                let mut b = store::Batch::default();
                b.put_chain_watched_through(head.saturating_sub(1));
                store.write([&b], true).context("record where the chain watch starts")?;
            }
        }
        let exported = Arc::new(metrics::Metrics::new());
        // Before the first write to publish (recovery's own rewrites are not events).
        let events = app::events::EventStream::new(&config, store.clone(), exported.clone())?;
        let metrics = Arc::new(commit::persister::PersistMetrics::exported(&exported));
        let (persist, persister) = commit::persister::spawn(store.clone(), metrics.clone());
        let registry = Arc::new(commit::views::Registry::default());
        let bus = Arc::new(commit::bus::Bus::new(config.ws_window, exported.ws_too_slow.clone()));
        let user_bus = Arc::new(commit::bus::UserBus::new(config.ws_window, exported.ws_too_slow.clone()));
        let (events_tx, publisher) = commit::bus::spawn(bus.clone(), user_bus.clone());
        let (engine, engine_thread) =
            engine::spawn(core, registry.clone(), persist.clone(), events_tx, exported.clone());
        let feeds = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.ws_threads)
            .thread_name("feeds")
            .enable_all()
            .build()
            .context("start the feed runtime")?;
        if let Some(events) = &events {
            tokio::spawn(events.clone().run());
        }
        let state = Arc::new(
            app::Parts {
                config: config.clone(),
                store,
                engine,
                registry,
                metrics,
                exported,
                persist,
                feeds: app::Feeds { bus, user_bus, runtime: feeds.handle().clone() },
                chain,
                events,
                internal_token,
            }
            .build()?,
        );
        if !migrated.is_empty() {
            let ids: Vec<_> = migrated.into_iter().map(|(_, id)| id).collect();
            let n = state.engine.cancel_signed(ids).await.context("cancel the orders of the other version")?.len();
            tracing::info!(
                orders = n,
                version = config.order_version,
                "cancelled the open orders of the other order version"
            );
        }
        if state.chain.is_none() {
            app::demo::load(&state, &config.catalogue).await?;
        }
        let (shutdown, stop) = watch::channel(false);
        let (bound, listeners) = bind_all(&config)?;
        let workers = app::workers::Workers::start(&state)?;
        let servers = serve_all(&state, bound, listeners, stop);
        Ok(App {
            bound,
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
/// [`api::connections::serve`]).
pub fn serve<F>(
    listener: tokio::net::TcpListener,
    routes: F,
    server: api::connections::Server,
    stop: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()>
where
    F: warp::Filter + Clone + Send + Sync + 'static,
    F::Extract: warp::Reply,
{
    api::connections::serve(listener, routes, server, stop)
}

/// Chain mode's link, checked against the chain it is configured for
/// (`chain::Chain::check`); None in ledger mode.
async fn connect_chain(config: &Config) -> anyhow::Result<Option<chain::Chain>> {
    let Some(settings) = config.chain()? else { return Ok(None) };
    let chain = chain::Chain::connect(&settings)?;
    chain.check(config.chain_id, &config.order_domains()?).await.context("chain mode")?;
    tracing::info!(rpc = %config::url_host(&settings.rpc_url), operator = %chain.operator.address, relayer = %chain.relayer().address, "chain mode: settling on chain");
    Ok(Some(chain))
}

/// The store, opened with the secrets key sealing its credentials, and the operator's
/// bearer token (the file given, or one made in the data directory).
fn open_store(config: &Config) -> anyhow::Result<(Arc<Store>, Arc<str>)> {
    std::fs::create_dir_all(&config.data_dir).with_context(|| format!("create {}", config.data_dir.display()))?;
    let mut store = Store::open_with(&config.data_dir, config.wal_logs_ahead).context("open RocksDB")?;
    let sealer = match &config.secrets_key_file {
        Some(f) => Some(store::Sealer::from_hex(&keyfile::read_private(f, "secrets key file")?)?),
        None => None,
    };
    let internal_token: Arc<str> =
        keyfile::internal_token(&config.internal_token_path(), config.internal_token_file.is_none())?.into();
    let sealing = sealer.is_some();
    match store.set_secrets(sealer)? {
        0 => {}
        n => tracing::info!(records = n, "sealed the credentials written before the secrets key was set"),
    }
    if !sealing {
        tracing::warn!(
            "API-key, builder and relayer secrets are stored unsealed: set --secrets-key-file (docs/operating/running.md)"
        );
    }
    Ok((Arc::new(store), internal_token))
}

/// Where trading fees go: the configured address (the exchange's by default) in ledger
/// mode; the operator's on chain, where `matchOrders` pays every fee to its sender.
fn fee_address(config: &Config, chain: Option<&chain::Chain>) -> anyhow::Result<String> {
    let configured = config.fee_address.as_deref().and_then(auth::normalize_address);
    match chain {
        Some(chain) => {
            let operator = format!("{:#x}", chain.operator.address);
            if configured.as_ref().is_some_and(|f| *f != operator) {
                anyhow::bail!(
                    "fee-address must be the operator's address {operator} in chain mode: the exchange pays fees to the operator"
                );
            }
            Ok(operator)
        }
        None => Ok(configured.or_else(|| auth::normalize_address(&config.exchange_address)).expect("validated")),
    }
}

/// The five servers' listeners, in [`Bound`]'s order.
type Listeners = [tokio::net::TcpListener; 5];

fn bind_all(config: &Config) -> anyhow::Result<(Bound, Listeners)> {
    let bind = |addr: SocketAddr, name: &'static str| {
        let l = listen(addr).with_context(|| format!("bind {name} on {addr}"))?;
        let a = l.local_addr()?;
        tracing::info!(server = name, addr = %a, "listening");
        anyhow::Ok((l, a))
    };
    let (clob_l, clob) = bind(config.clob_addr, "clob")?;
    let (catalogue_l, catalogue) = bind(config.catalogue_addr, "catalogue")?;
    let (analytics_l, analytics) = bind(config.analytics_addr, "analytics")?;
    let (bridge_l, bridge) = bind(config.bridge_addr, "bridge")?;
    let (internal_l, internal) = bind(config.internal_addr, "internal")?;
    Ok((
        Bound { clob, catalogue, analytics, bridge, internal },
        [clob_l, catalogue_l, analytics_l, bridge_l, internal_l],
    ))
}

/// Serves each server's routes on its listener until `stop`.
fn serve_all(
    state: &Arc<app::AppState>,
    bound: Bound,
    listeners: Listeners,
    stop: watch::Receiver<bool>,
) -> Vec<tokio::task::JoinHandle<()>> {
    use api::connections::Role;
    let config = &state.config;
    // Each server its own budget of bodies in flight and its own count of clients, so no
    // server's clients can spend another's (`api::connections`).
    let public = |role| api::connections::Server {
        bodies: api::body::Bodies::new(config.body_bytes_in_flight),
        clients: Some(api::clients::Clients::new(config.max_connections_per_ip, &config.trusted_proxies)),
        role,
    };
    // The operator's server, on loopback behind its token: its clients are not counted.
    let operator = api::connections::Server {
        bodies: api::body::Bodies::new(config.body_bytes_in_flight),
        clients: None,
        role: Role::Unlimited,
    };
    let [clob, catalogue, analytics, bridge, internal] = listeners;
    let s = || state.clone();
    vec![
        serve(clob, api::clob_routes(s()), public(Role::OrderBook(s())), stop.clone()),
        serve(
            catalogue,
            api::with_openapi(api::openapi::CATALOGUE, api::catalogue::routes(s())),
            public(Role::Unlimited),
            stop.clone(),
        ),
        serve(
            analytics,
            api::with_openapi(api::openapi::ANALYTICS, api::analytics::routes(s())),
            public(Role::Unlimited),
            stop.clone(),
        ),
        serve(
            bridge,
            api::with_openapi(api::openapi::BRIDGE, api::bridge::routes(s())),
            public(Role::WritesLimited(s())),
            stop.clone(),
        ),
        serve(internal, api::internal::routes(s(), bound.internal), operator, stop),
    ]
}
