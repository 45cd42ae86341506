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
    Serve(ServeArgs),
}

#[derive(clap::Args)]
struct ServeArgs {
    /// TOML configuration file (kebab-case keys, same names as the flags).
    #[arg(long, env = "PREDEX_CONFIG")]
    config: Option<PathBuf>,
    #[arg(long, env = "PREDEX_DATA_DIR")]
    data_dir: Option<PathBuf>,
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
    /// Demo catalogue loaded into an empty data directory.
    #[arg(long, env = "PREDEX_CATALOGUE")]
    catalogue: Option<PathBuf>,
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
            if let Ok(state) = std::env::var("STATE_DIRECTORY") {
                c.data_dir = PathBuf::from(state);
            }
        }
        macro_rules! set {
            ($($f:ident),*) => { $( if let Some(v) = self.$f { c.$f = v; } )* };
        }
        set!(
            clob_addr,
            gamma_addr,
            data_addr,
            bridge_addr,
            internal_addr,
            chain_id,
            exchange_address,
            neg_risk_exchange_address,
            catalogue
        );
        c.validate()?;
        let json = self.log_json || std::env::var_os("INVOCATION_ID").is_some();
        Ok((c, json))
    }
}

fn main() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => {
            let (config, json) = args.into_config()?;
            predex::init_logging(json);
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            rt.block_on(async move {
                let app = predex::App::start(config).await?;
                tokio::signal::ctrl_c().await?;
                tracing::info!("shutting down");
                app.shutdown().await;
                anyhow::Ok(())
            })?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
