//! `predex`: the command line. Parses flags into one `Config` and hands it to the library.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use predex::config::Config;

#[derive(Parser)]
#[command(name = "predex", version, about = "Self-hosted prediction-market exchange")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run every server over the embedded RocksDB.
    Serve(Box<ServeArgs>),
    /// Operate a running exchange through its internal server (markets, ledger, waitlist,
    /// mode, address restrictions, rate limit, settlement).
    Admin(predex::admin::AdminArgs),
    /// Sign requests for trying the exchange with curl (prints curl arguments or bodies).
    #[command(subcommand)]
    Sign(SignCmd),
    /// Work with the chain that chain-mode settlement uses.
    #[command(subcommand)]
    Chain(ChainCmd),
    /// Make a data directory from a backup (`predex admin backup`); start predex on it.
    Restore {
        /// The backup's directory.
        #[arg(long)]
        from: PathBuf,
        /// The data directory to make: absent or empty.
        #[arg(long)]
        data_dir: PathBuf,
    },
}

#[derive(Subcommand)]
enum ChainCmd {
    /// Deploy the collateral (unless given), ConditionalTokens, both exchanges and the
    /// negative-risk adapter, wire them, and print the configuration lines for them.
    Deploy(predex::chain::deploy::DeployArgs),
}

#[derive(Subcommand)]
enum SignCmd {
    /// L1 headers (create or derive an API key), as curl -H arguments.
    L1 {
        #[arg(long, env = "PREDEX_PRIVATE_KEY")]
        private_key: String,
        #[arg(long, default_value_t = 0)]
        nonce: u64,
        #[arg(long, default_value_t = 137)]
        chain_id: u64,
    },
    /// L2 headers for one request, as curl -H arguments.
    L2 {
        #[arg(long, env = "PREDEX_PRIVATE_KEY")]
        private_key: String,
        /// The JSON that POST /auth/api-key returned.
        #[arg(long)]
        creds: PathBuf,
        #[arg(long)]
        method: String,
        /// Path (and query) exactly as requested.
        #[arg(long)]
        path: String,
        /// File holding the exact request body.
        #[arg(long)]
        body_file: Option<PathBuf>,
    },
    /// A signed POST /order body (limit order, amounts rounded as the clients do).
    Order {
        #[arg(long, env = "PREDEX_PRIVATE_KEY")]
        private_key: String,
        #[arg(long)]
        creds: PathBuf,
        #[arg(long)]
        token: String,
        /// BUY or SELL.
        #[arg(long)]
        side: String,
        #[arg(long)]
        price: String,
        #[arg(long)]
        size: String,
        #[arg(long, default_value = "GTC")]
        order_type: String,
        /// Sign for the negative-risk exchange.
        #[arg(long)]
        neg_risk: bool,
        #[arg(long, default_value_t = 137)]
        chain_id: u64,
        #[arg(long, default_value = predex::config::DEFAULT_EXCHANGE)]
        exchange_address: String,
        #[arg(long, default_value = predex::config::DEFAULT_NEG_RISK_EXCHANGE)]
        neg_risk_exchange_address: String,
        #[arg(long, default_value = predex::config::DEFAULT_ORDER_DOMAIN_NAME)]
        order_domain_name: String,
    },
}

fn read_json(p: &PathBuf) -> anyhow::Result<serde_json::Value> {
    Ok(serde_json::from_str(&std::fs::read_to_string(p)?)?)
}

fn sign(cmd: SignCmd) -> anyhow::Result<()> {
    use predex::sign;
    match cmd {
        SignCmd::L1 { private_key, nonce, chain_id } => {
            println!("{}", sign::curl_args(&sign::l1_headers(&private_key, chain_id, nonce)?))
        }
        SignCmd::L2 { private_key, creds, method, path, body_file } => {
            let body = body_file.map(std::fs::read_to_string).transpose()?.unwrap_or_default();
            println!(
                "{}",
                sign::curl_args(&sign::l2_headers(&private_key, &read_json(&creds)?, &method, &path, &body)?)
            );
        }
        SignCmd::Order {
            private_key,
            creds,
            token,
            side,
            price,
            size,
            order_type,
            neg_risk,
            chain_id,
            exchange_address,
            neg_risk_exchange_address,
            order_domain_name,
        } => {
            let domains = predex::auth::OrderDomains::new(
                &order_domain_name,
                chain_id,
                exchange_address.parse()?,
                neg_risk_exchange_address.parse()?,
            );
            let owner = read_json(&creds)?["apiKey"].as_str().unwrap_or_default().to_string();
            let body =
                sign::order_body(&private_key, &domains, neg_risk, &token, &side, &price, &size, &owner, &order_type)?;
            println!("{body}");
        }
    }
    Ok(())
}

#[derive(clap::Args)]
struct ServeArgs {
    /// TOML configuration file (kebab-case keys, same names as the flags).
    #[arg(long, env = "PREDEX_CONFIG")]
    config: Option<PathBuf>,
    #[arg(long, env = "PREDEX_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Write-ahead log files of 16 MB written at start, so syncs overwrite in place
    /// (0 = off; default 8).
    #[arg(long, env = "PREDEX_WAL_LOGS_AHEAD")]
    wal_logs_ahead: Option<usize>,
    #[arg(long, env = "PREDEX_CLOB_ADDR")]
    clob_addr: Option<SocketAddr>,
    #[arg(long, env = "PREDEX_GAMMA_ADDR")]
    gamma_addr: Option<SocketAddr>,
    #[arg(long, env = "PREDEX_DATA_ADDR")]
    data_addr: Option<SocketAddr>,
    #[arg(long, env = "PREDEX_BRIDGE_ADDR")]
    bridge_addr: Option<SocketAddr>,
    #[arg(long, env = "PREDEX_INTERNAL_ADDR")]
    internal_addr: Option<SocketAddr>,
    #[arg(long, env = "PREDEX_CHAIN_ID")]
    chain_id: Option<u64>,
    #[arg(long, env = "PREDEX_EXCHANGE_ADDRESS")]
    exchange_address: Option<String>,
    #[arg(long, env = "PREDEX_NEG_RISK_EXCHANGE_ADDRESS")]
    neg_risk_exchange_address: Option<String>,
    /// EIP-712 name of the order domain (`Polymarket CTF Exchange` for the official clients).
    #[arg(long, env = "PREDEX_ORDER_DOMAIN_NAME")]
    order_domain_name: Option<String>,
    /// The proxy-wallet factory type-1 makers are derived from (default Polygon's).
    #[arg(long, env = "PREDEX_PROXY_FACTORY_ADDRESS")]
    proxy_factory_address: Option<String>,
    /// keccak256 of the proxy wallet's init code (default Polygon's).
    #[arg(long, env = "PREDEX_PROXY_INIT_CODE_HASH")]
    proxy_init_code_hash: Option<String>,
    /// The Safe factory type-2 makers are derived from (default Polygon's).
    #[arg(long, env = "PREDEX_SAFE_FACTORY_ADDRESS")]
    safe_factory_address: Option<String>,
    /// keccak256 of the Safe proxy's creation code and master copy (default Polygon's).
    #[arg(long, env = "PREDEX_SAFE_INIT_CODE_HASH")]
    safe_init_code_hash: Option<String>,
    /// Where trades settle: `ledger` (embedded, the default) or `chain`.
    #[arg(long, env = "PREDEX_SETTLEMENT", value_enum)]
    settlement: Option<predex::config::Settlement>,
    /// Chain mode: the node's JSON-RPC URL (http://).
    #[arg(long, env = "PREDEX_RPC_URL")]
    rpc_url: Option<String>,
    /// Chain mode: a file holding the operator's private key (hex).
    #[arg(long, env = "PREDEX_OPERATOR_KEY_FILE")]
    operator_key_file: Option<PathBuf>,
    /// A file holding the key that seals API-key, builder and relayer secrets at rest
    /// (`predex admin secrets-key --out FILE` makes one).
    #[arg(long, env = "PREDEX_SECRETS_KEY_FILE")]
    secrets_key_file: Option<PathBuf>,
    /// A file holding the internal server's bearer token (default: `internal.token` in the
    /// data directory, made at first start).
    #[arg(long, env = "PREDEX_INTERNAL_TOKEN_FILE")]
    internal_token_file: Option<PathBuf>,
    /// Where `POST /internal/backup` may write (default: `predex-backup` beside the data
    /// directory).
    #[arg(long, env = "PREDEX_BACKUP_DIR")]
    backup_dir: Option<PathBuf>,
    /// Chain mode: the collateral ERC-20.
    #[arg(long, env = "PREDEX_COLLATERAL_ADDRESS")]
    collateral_address: Option<String>,
    /// Chain mode: the ConditionalTokens contract.
    #[arg(long, env = "PREDEX_CTF_ADDRESS")]
    ctf_address: Option<String>,
    /// Chain mode: the negative-risk adapter.
    #[arg(long, env = "PREDEX_NEG_RISK_ADAPTER_ADDRESS")]
    neg_risk_adapter_address: Option<String>,
    /// Chain mode: blocks a settlement must be under before its trade is CONFIRMED.
    #[arg(long, env = "PREDEX_CONFIRMATIONS")]
    confirmations: Option<u64>,
    /// Whether an address's first API key takes an invitation code (`false`: open testnet).
    #[arg(long, env = "PREDEX_INVITE_ONLY")]
    invite_only: Option<bool>,
    /// Demo catalogue loaded into an empty data directory.
    #[arg(long, env = "PREDEX_CATALOGUE")]
    catalogue: Option<PathBuf>,
    /// Where trading fees are credited in the embedded ledger.
    #[arg(long, env = "PREDEX_FEE_ADDRESS")]
    fee_address: Option<String>,
    /// Settlement worker period (ms).
    #[arg(long, env = "PREDEX_SETTLEMENT_INTERVAL_MS")]
    settlement_interval_ms: Option<u64>,
    /// GTD expiration worker period (ms).
    #[arg(long, env = "PREDEX_GTD_INTERVAL_MS")]
    gtd_interval_ms: Option<u64>,
    /// Heartbeat monitor period (ms); a key silent for more than 10 s loses its orders.
    #[arg(long, env = "PREDEX_HEARTBEAT_CHECK_MS")]
    heartbeat_check_ms: Option<u64>,
    /// Requests per client IP per window on the order-book server (0 = no limit).
    #[arg(long, env = "PREDEX_RATE_LIMIT_MAX")]
    rate_limit_max: Option<u32>,
    /// The rate limit's sliding window (seconds).
    #[arg(long, env = "PREDEX_RATE_LIMIT_WINDOW_SECS")]
    rate_limit_window_secs: Option<u64>,
    /// Reverse proxies whose X-Forwarded-For / X-Real-IP are believed (comma-separated IPs).
    #[arg(long, env = "PREDEX_TRUSTED_PROXIES", value_delimiter = ',')]
    trusted_proxies: Option<Vec<std::net::IpAddr>>,
    /// Bytes the request bodies in flight may hold at once on each server (a chunked body
    /// counts as 1 MiB while it is read; one client IP a quarter of it); past it requests
    /// are refused with 503.
    #[arg(long, env = "PREDEX_BODY_BYTES_IN_FLIGHT")]
    body_bytes_in_flight: Option<usize>,
    /// Connections one client IP may hold open to each public server, WebSocket ones
    /// included (trusted proxies not counted; 0: no cap); past it 429 and closed.
    #[arg(long, env = "PREDEX_MAX_CONNECTIONS_PER_IP")]
    max_connections_per_ip: Option<usize>,
    /// Feed frames a WebSocket connection may fall behind before it is closed.
    #[arg(long, env = "PREDEX_WS_WINDOW")]
    ws_window: Option<usize>,
    /// Seconds a WebSocket connection may stay silent (no PING) before it is closed.
    #[arg(long, env = "PREDEX_WS_IDLE_SECS")]
    ws_idle_secs: Option<u64>,
    /// Threads writing the WebSocket feeds (beside the HTTP workers).
    #[arg(long, env = "PREDEX_WS_THREADS")]
    ws_threads: Option<usize>,
    /// The event stream: NATS servers (`nats://HOST:PORT`, comma-separated) whose JetStream
    /// receives every durable order, trade, settlement and market event.
    #[arg(long, env = "PREDEX_EVENTS_TO")]
    events_to: Option<String>,
    /// The JetStream stream the events go to (created if missing).
    #[arg(long, env = "PREDEX_EVENTS_STREAM")]
    events_stream: Option<String>,
    /// Replicas of the stream when predex creates it.
    #[arg(long, env = "PREDEX_EVENTS_REPLICAS")]
    events_replicas: Option<usize>,
    /// Log as JSON lines (the default under systemd).
    #[arg(long, env = "PREDEX_LOG_JSON")]
    log_json: bool,
}

impl ServeArgs {
    fn into_config(self) -> anyhow::Result<(Config, bool)> {
        let mut c = match &self.config {
            Some(p) => Config::from_toml(&std::fs::read_to_string(p)?)?,
            None => Config::default(),
        };
        if let Some(v) = self.data_dir {
            c.data_dir = v;
        } else if c.data_dir == Config::default().data_dir {
            // Under systemd the unit's StateDirectory wins over the relative default.
            // Several state directories come colon-separated: the first is the data's.
            if let Ok(state) = std::env::var("STATE_DIRECTORY") {
                c.data_dir = PathBuf::from(state.split(':').next().unwrap_or_default());
            }
        }
        macro_rules! set {
            ($($f:ident),*) => { $( if let Some(v) = self.$f { c.$f = v; } )* };
        }
        set!(
            wal_logs_ahead,
            clob_addr,
            gamma_addr,
            data_addr,
            bridge_addr,
            internal_addr,
            chain_id,
            exchange_address,
            neg_risk_exchange_address,
            order_domain_name,
            proxy_factory_address,
            proxy_init_code_hash,
            safe_factory_address,
            safe_init_code_hash,
            settlement,
            confirmations,
            invite_only,
            catalogue,
            settlement_interval_ms,
            gtd_interval_ms,
            heartbeat_check_ms,
            rate_limit_max,
            rate_limit_window_secs,
            trusted_proxies,
            body_bytes_in_flight,
            max_connections_per_ip,
            ws_window,
            ws_idle_secs,
            ws_threads,
            events_stream,
            events_replicas
        );
        macro_rules! set_some {
            ($($f:ident),*) => { $( if self.$f.is_some() { c.$f = self.$f; } )* };
        }
        set_some!(
            fee_address,
            events_to,
            rpc_url,
            operator_key_file,
            secrets_key_file,
            internal_token_file,
            backup_dir,
            collateral_address,
            ctf_address,
            neg_risk_adapter_address
        );
        c.validate()?;
        let json = self.log_json
            || std::env::var("PREDEX_LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json"))
            || std::env::var_os("INVOCATION_ID").is_some();
        Ok((c, json))
    }
}

/// With `WatchdogSec=` set, pings systemd at half the period — but only while the engine
/// thread answers, so a wedged engine gets the service restarted. Dropping the returned
/// guard stops the thread (it holds an engine handle, which must go before shutdown).
fn watchdog(engine: predex::engine::EngineHandle) -> Option<Watchdog> {
    let mut usec = 0;
    if !sd_notify::watchdog_enabled(false, &mut usec) || usec == 0 {
        return None;
    }
    let every = std::time::Duration::from_micros(usec / 2);
    let (stop, rx) = crossbeam_channel::bounded::<()>(0);
    let thread = std::thread::Builder::new()
        .name("watchdog".into())
        .spawn(move || loop {
            if engine.blocking().ping().is_err() {
                return;
            }
            let _ = sd_notify::notify(false, &[sd_notify::NotifyState::Watchdog]);
            if rx.recv_timeout(every) != Err(crossbeam_channel::RecvTimeoutError::Timeout) {
                return;
            }
        })
        .ok()?;
    Some(Watchdog { stop: Some(stop), thread: Some(thread) })
}

struct Watchdog {
    stop: Option<crossbeam_channel::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn main() -> anyhow::Result<ExitCode> {
    predex::no_transparent_huge_pages();
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => {
            let (config, json) = args.into_config()?;
            predex::init_logging(json);
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            let code = rt.block_on(async move {
                // A refusal to start is one line (the unit's journal, the operator's terminal).
                let app = match predex::App::start(config).await {
                    Ok(app) => app,
                    Err(e) => {
                        eprintln!("predex: cannot start: {e:#}");
                        return anyhow::Ok(ExitCode::FAILURE);
                    }
                };
                // Every listener is bound and every book reloaded: tell systemd (Type=notify).
                let _ = sd_notify::notify(false, &[sd_notify::NotifyState::Ready]);
                let dog = watchdog(app.state.engine.clone());
                let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
                tokio::select! {
                    r = tokio::signal::ctrl_c() => r?,
                    _ = term.recv() => {}
                }
                tracing::info!("shutting down: draining requests, then the engine and the persister");
                let _ = sd_notify::notify(false, &[sd_notify::NotifyState::Stopping]);
                drop(dog);
                app.shutdown().await;
                tracing::info!("stopped cleanly");
                anyhow::Ok(ExitCode::SUCCESS)
            })?;
            Ok(code)
        }
        Command::Admin(args) => match predex::admin::run(args) {
            Ok(reply) => {
                println!("{}", serde_json::to_string_pretty(&reply)?);
                Ok(ExitCode::SUCCESS)
            }
            Err(e) => {
                eprintln!("predex admin: {e:#}");
                Ok(ExitCode::FAILURE)
            }
        },
        Command::Sign(cmd) => {
            sign(cmd)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Restore { from, data_dir } => match predex::store::Store::restore(&from, &data_dir) {
            Ok(r) => {
                println!("restored {} files ({} bytes) into {}", r.files, r.bytes, data_dir.display());
                Ok(ExitCode::SUCCESS)
            }
            Err(e) => {
                eprintln!("predex restore: {e}");
                Ok(ExitCode::FAILURE)
            }
        },
        Command::Chain(ChainCmd::Deploy(args)) => {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            match rt.block_on(predex::chain::deploy::run(args)) {
                Ok(toml) => {
                    print!("{toml}");
                    Ok(ExitCode::SUCCESS)
                }
                Err(e) => {
                    eprintln!("predex chain deploy: {e:#}");
                    Ok(ExitCode::FAILURE)
                }
            }
        }
    }
}
