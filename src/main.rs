//! `predex`: the command line. Parses flags into one `Config` and hands it to the library.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
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
    /// Print every setting with its documentation and default, commented out: a TOML
    /// configuration file or an environment file (as `systemd/predex.toml` and
    /// `systemd/predex.env`).
    SettingsFile {
        #[arg(value_enum)]
        kind: predex::config::Example,
    },
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

/// `predex serve`'s own flags; the settings are added to the command from [`Config`]
/// (`predex::config::add_arguments`) and read from its matches.
#[derive(clap::Args)]
struct ServeArgs {
    /// TOML configuration file: the settings' names as keys (`predex settings-file toml`
    /// writes one with every key).
    #[arg(long, env = "PREDEX_CONFIG")]
    config: Option<PathBuf>,
    /// Log as JSON lines (the default under systemd).
    #[arg(long, env = "PREDEX_LOG_JSON")]
    log_json: bool,
    /// Print the settings predex would run with, as TOML (the RPC URL as its host only),
    /// and exit.
    #[arg(long)]
    print_config: bool,
}

impl ServeArgs {
    /// The settings (flags and variables in `m` over the file over the defaults), and
    /// whether to log JSON.
    fn settings(&self, m: &clap::ArgMatches) -> anyhow::Result<(Config, bool)> {
        let file = self.config.as_ref().map(std::fs::read_to_string).transpose()?;
        let c = predex::config::resolve(m, file.as_deref())?;
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

/// `predex serve`: the settings read and checked, then the venue until SIGTERM or ^C.
fn serve(args: &ServeArgs, m: &clap::ArgMatches) -> anyhow::Result<ExitCode> {
    let (config, json) = match args.settings(m) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("predex: cannot start: {e:#}");
            return Ok(ExitCode::FAILURE);
        }
    };
    if args.print_config {
        print!("{}", config.shown()?);
        return Ok(ExitCode::SUCCESS);
    }
    predex::init_logging(json);
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async move {
        // A refusal to start is one line (the unit's journal, the operator's terminal).
        let app = match predex::App::start(config).await {
            Ok(app) => app,
            Err(e) => {
                eprintln!("predex: cannot start: {e:#}");
                return Ok(ExitCode::FAILURE);
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
        Ok(ExitCode::SUCCESS)
    })
}

fn main() -> anyhow::Result<ExitCode> {
    predex::no_transparent_huge_pages();
    let matches = Cli::command().mut_subcommand("serve", predex::config::add_arguments).get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    match cli.command {
        Command::SettingsFile { kind } => {
            print!("{}", predex::config::example(kind));
            Ok(ExitCode::SUCCESS)
        }
        Command::Serve(args) => serve(&args, matches.subcommand_matches("serve").expect("the serve command")),
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
