//! `predex admin`: the operator's command line over the internal server (loopback). Each
//! subcommand is one request; the reply is printed as JSON; a failure prints one line
//! `predex admin: <reason>` and exits non-zero.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use serde_json::{json, Value};

#[derive(Args)]
pub struct AdminArgs {
    /// The internal (operator) server.
    #[arg(long, env = "PREDEX_INTERNAL_ADDR", default_value = "127.0.0.1:8090", global = true)]
    pub internal: SocketAddr,
    /// The internal server's token file (`--internal-token-file` of `predex serve`).
    #[arg(long, env = "PREDEX_INTERNAL_TOKEN_FILE", global = true)]
    pub token_file: Option<PathBuf>,
    /// The server's data directory, whose `internal.token` is read when no token file is
    /// given.
    #[arg(long, env = "PREDEX_DATA_DIR", default_value = "var", global = true)]
    pub data_dir: PathBuf,
    #[command(subcommand)]
    pub command: AdminCmd,
}

#[derive(Subcommand)]
pub enum AdminCmd {
    /// Create or list markets.
    #[command(subcommand)]
    Markets(MarketsCmd),
    /// The embedded ledger (testnet faucet).
    #[command(subcommand)]
    Ledger(LedgerCmd),
    /// Chain mode: mint the development collateral to a wallet (and, with the server's
    /// `--faucet-gas`, send it the gas for its approvals). The amount in whole USDC (e.g.
    /// 100.5).
    Faucet {
        #[arg(long)]
        address: String,
        #[arg(long)]
        amount: String,
    },
    /// The invite-only waitlist.
    #[command(subcommand)]
    Waitlist(WaitlistCmd),
    /// Show the platform mode, or set it: normal, cancel-only or trading-disabled.
    Mode {
        #[arg(value_parser = ["normal", "cancel-only", "trading-disabled"])]
        mode: Option<String>,
    },
    /// Restrict addresses: ban (no new orders, ever), closed-only, or clear.
    #[command(subcommand)]
    Addresses(AddressesCmd),
    /// The order-book server's per-IP rate limit.
    #[command(subcommand, name = "rate-limit")]
    RateLimit(RateLimitCmd),
    /// Settle every PENDING trade now rather than at the worker's next run.
    Settle,
    /// Make a new secrets key file for `--secrets-key-file` (made here, not by the server;
    /// mode 0600, never overwriting a file).
    #[command(name = "secrets-key")]
    SecretsKey {
        #[arg(long)]
        out: PathBuf,
    },
    /// Print the dashboard's login link (its token in the fragment, which the page keeps
    /// for its tab only).
    #[command(name = "dashboard-url")]
    DashboardUrl,
    /// Take an online backup into a new directory (a RocksDB checkpoint; trading goes on).
    /// Restore it with `predex restore`.
    Backup {
        /// The new directory (on the server's machine; relative to this one's working
        /// directory).
        #[arg(long)]
        to: PathBuf,
    },
}

#[derive(Subcommand)]
pub enum MarketsCmd {
    /// Create a binary market.
    Create(Box<CreateMarket>),
    /// List every market.
    List,
    /// Set the fee description version 2 takers pay on a market (`fd`: shares × rate ×
    /// (p(1 − p))^exponent, at most 5 % of a fill's value); without --rate, remove it.
    Fees {
        #[arg(long)]
        condition_id: String,
        /// The rate r, a decimal between 0 and 1 ("0.25").
        #[arg(long)]
        rate: Option<String>,
        #[arg(long, default_value_t = 1)]
        exponent: u8,
    },
}

#[derive(clap::Args)]
pub struct CreateMarket {
    /// A JSON file with the market (condition_id, question, slug, tokens, tick_size,
    /// min_order_size, neg_risk) — the shape of data/markets.json entries. Without it,
    /// the flags below describe the market.
    #[arg(long, conflicts_with_all = ["condition_id", "question", "yes_token", "no_token"])]
    file: Option<PathBuf>,
    #[arg(long)]
    condition_id: Option<String>,
    #[arg(long)]
    question: Option<String>,
    #[arg(long, default_value = "")]
    slug: String,
    /// Token ID (decimal uint256) of the YES outcome.
    #[arg(long)]
    yes_token: Option<String>,
    /// Token ID (decimal uint256) of the NO outcome.
    #[arg(long)]
    no_token: Option<String>,
    #[arg(long, default_value = "0.01")]
    tick_size: String,
    #[arg(long, default_value = "5")]
    min_order_size: String,
    #[arg(long)]
    neg_risk: bool,
    /// Chain mode (no condition or tokens given): the question to prepare the
    /// condition for (32 bytes, hex); predex makes one otherwise.
    #[arg(long)]
    question_id: Option<String>,
    /// Chain mode, negative risk: the adapter market to add the question to.
    #[arg(long)]
    neg_risk_market_id: Option<String>,
}

#[derive(Subcommand)]
pub enum LedgerCmd {
    /// Credit an address: USDC or a token ID, an amount in whole units (e.g. 100.5).
    Credit {
        #[arg(long)]
        address: String,
        #[arg(long, default_value = "USDC")]
        asset: String,
        #[arg(long)]
        amount: String,
    },
    /// An address's balances (settled, reserved, incoming, available).
    Show {
        #[arg(long)]
        address: String,
    },
}

#[derive(Subcommand)]
pub enum WaitlistCmd {
    /// Approve an email: prints its single-use invitation code.
    Approve {
        #[arg(long)]
        email: String,
    },
}

#[derive(Subcommand)]
pub enum AddressesCmd {
    /// Ban an address from placing orders.
    Ban { address: String },
    /// Restrict an address to closing positions.
    ClosedOnly { address: String },
    /// Lift any restriction.
    Clear { address: String },
}

#[derive(Subcommand)]
pub enum RateLimitCmd {
    /// Show the current limit.
    Get,
    /// Change the limit until restart (0 requests = no limit).
    Set {
        #[arg(long)]
        max_requests: u32,
        #[arg(long)]
        window_secs: u64,
    },
}

/// Runs one admin command; returns the reply to print.
pub fn run(args: AdminArgs) -> anyhow::Result<Value> {
    if let AdminCmd::SecretsKey { out } = &args.command {
        return secrets_key(out);
    }
    let token_file = args.token_file.clone().unwrap_or_else(|| crate::keyfile::default_token_path(&args.data_dir));
    let operator = crate::client::Operator::from_file(args.internal, &token_file)?;
    if let AdminCmd::DashboardUrl = &args.command {
        return Ok(json!(operator.dashboard_url()));
    }
    let (method, path, body) = request(args.command)?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let (status, reply) = rt.block_on(operator.call(method, &path, body));
    match status {
        0 => bail!("cannot reach the internal server at {} (is predex running?)", args.internal),
        200..=299 => Ok(reply),
        _ => bail!("{} ({status})", reply["error"].as_str().unwrap_or("unexpected reply")),
    }
}

/// Writes a new random secrets key (64 hex digits) to a new file readable by its owner only.
fn secrets_key(out: &std::path::Path) -> anyhow::Result<Value> {
    crate::keyfile::write_new_private(out, &crate::store::Sealer::generate())
        .with_context(|| format!("create {}", out.display()))?;
    Ok(json!({ "written": out }))
}

fn request(cmd: AdminCmd) -> anyhow::Result<(&'static str, String, Option<Value>)> {
    Ok(match cmd {
        AdminCmd::Markets(MarketsCmd::List) => ("GET", "/internal/markets".into(), None),
        AdminCmd::Markets(MarketsCmd::Fees { condition_id, rate, exponent }) => (
            "POST",
            "/internal/markets/fees".into(),
            Some(json!({ "condition_id": condition_id, "rate": rate, "exponent": exponent })),
        ),
        AdminCmd::DashboardUrl => bail!("dashboard-url is made locally"),
        AdminCmd::Backup { to } => {
            let to = std::path::absolute(&to).with_context(|| format!("{}", to.display()))?;
            ("POST", "/internal/backup".into(), Some(json!({ "to": to })))
        }
        AdminCmd::Markets(MarketsCmd::Create(create)) => {
            let CreateMarket {
                file,
                condition_id,
                question,
                slug,
                yes_token,
                no_token,
                tick_size,
                min_order_size,
                neg_risk,
                question_id,
                neg_risk_market_id,
            } = *create;
            let body = match file {
                Some(f) => {
                    let text = std::fs::read_to_string(&f).with_context(|| format!("read {}", f.display()))?;
                    serde_json::from_str(&text).with_context(|| format!("{} is not JSON", f.display()))?
                }
                None => match (condition_id, question, yes_token, no_token) {
                    (Some(c), Some(q), Some(y), Some(n)) => json!({
                        "condition_id": c, "question": q, "slug": slug,
                        "tokens": [{"token_id": y, "outcome": "Yes"}, {"token_id": n, "outcome": "No"}],
                        "tick_size": tick_size, "min_order_size": min_order_size, "neg_risk": neg_risk,
                        "question_id": question_id, "neg_risk_market_id": neg_risk_market_id,
                    }),
                    // Chain mode: the condition and its tokens are made on chain.
                    (None, Some(q), None, None) => json!({
                        "question": q, "slug": slug,
                        "tick_size": tick_size, "min_order_size": min_order_size, "neg_risk": neg_risk,
                        "question_id": question_id, "neg_risk_market_id": neg_risk_market_id,
                    }),
                    _ => bail!(
                        "give --file, or --condition-id, --question, --yes-token and --no-token, or (chain mode) --question alone"
                    ),
                },
            };
            ("POST", "/internal/markets".into(), Some(body))
        }
        AdminCmd::Ledger(LedgerCmd::Credit { address, asset, amount }) => {
            let micro = crate::domain::parse_decimal(&amount, 6)
                .map_err(|_| anyhow::anyhow!("amount must be a number with at most 6 decimals, got {amount}"))?;
            let body = json!({"address": address, "asset": asset, "amount": micro.to_string()});
            ("POST", "/internal/ledger/credit".into(), Some(body))
        }
        AdminCmd::Faucet { address, amount } => {
            let micro = crate::domain::parse_decimal(&amount, 6)
                .map_err(|_| anyhow::anyhow!("amount must be a number with at most 6 decimals, got {amount}"))?;
            ("POST", "/internal/faucet".into(), Some(json!({"address": address, "amount": micro.to_string()})))
        }
        AdminCmd::Ledger(LedgerCmd::Show { address }) => {
            ("GET", format!("/internal/balances?address={}", urlencode(&address)), None)
        }
        AdminCmd::Waitlist(WaitlistCmd::Approve { email }) => {
            ("POST", "/internal/waitlist/approve".into(), Some(json!({ "email": email })))
        }
        AdminCmd::Mode { mode: None } => ("GET", "/internal/mode".into(), None),
        AdminCmd::Mode { mode: Some(m) } => ("POST", "/internal/mode".into(), Some(json!({ "mode": m }))),
        AdminCmd::Addresses(a) => {
            let (address, status) = match a {
                AddressesCmd::Ban { address } => (address, "banned"),
                AddressesCmd::ClosedOnly { address } => (address, "closed-only"),
                AddressesCmd::Clear { address } => (address, "none"),
            };
            ("POST", "/internal/addresses".into(), Some(json!({"address": address, "status": status})))
        }
        AdminCmd::RateLimit(RateLimitCmd::Get) => ("GET", "/internal/rate-limit".into(), None),
        AdminCmd::RateLimit(RateLimitCmd::Set { max_requests, window_secs }) => (
            "POST",
            "/internal/rate-limit".into(),
            Some(json!({"maxRequests": max_requests, "windowSecs": window_secs})),
        ),
        AdminCmd::Settle => ("POST", "/internal/settle".into(), Some(json!({}))),
        AdminCmd::SecretsKey { .. } => bail!("secrets-key is made locally"),
    })
}

fn urlencode(s: &str) -> String {
    serde_urlencoded::to_string([("", s)]).map(|x| x[1..].to_string()).unwrap_or_default()
}
