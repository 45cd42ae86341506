//! The settings: one definition ([`Config`]) whose every field is a flag of `predex serve`,
//! a `PREDEX_*` variable and a key of the TOML file, under one name, with its default and
//! its documentation written once, on the field (`sources` reads and writes them).

mod sources;
pub use sources::{add_arguments, env_name, example, names, resolve, Example};

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::auth::wallets::{self, WalletFactories};

/// Polymarket's CTF Exchange on Polygon: the default verifyingContract, so orders signed by
/// the official clients for chain 137 verify unchanged.
pub const DEFAULT_EXCHANGE: &str = "0x4bfb41d5b3570defd03c39a9a4d8de6bd8b8982e";
/// Polymarket's Neg Risk CTF Exchange on Polygon.
pub const DEFAULT_NEG_RISK_EXCHANGE: &str = "0xc5d563a36ae78145c45a50134d48a1215220f80a";

/// Polymarket's CTF Exchange V2 on Polygon (version 2's orders).
pub const DEFAULT_EXCHANGE_V2: &str = "0xe111180000d2663c0091e4f400237545b87b996b";
/// Polymarket's Neg Risk CTF Exchange V2 on Polygon.
pub const DEFAULT_NEG_RISK_EXCHANGE_V2: &str = "0xe2222d279d744050d28e00520010520000310f59";

/// The EIP-712 name of the order domain unless set (SPEC §5.7).
pub const DEFAULT_ORDER_DOMAIN_NAME: &str = "Service CTF Exchange";

/// Largest request body any server accepts; `body-bytes-in-flight` must hold one.
pub const MAX_BODY: usize = 1 << 20;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, clap::Args)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct Config {
    /// RocksDB directory. Under systemd the unit's state directory ($STATE_DIRECTORY) unless
    /// set.
    #[arg(long, default_value = "var")]
    pub data_dir: PathBuf,
    /// Write-ahead log files of 16 MB written at each start, so the log's syncs
    /// overwrite files in place from the first write instead of growing them; 0 turns it
    /// off, else 2 to 64.
    #[arg(long, default_value_t = 8)]
    pub wal_logs_ahead: usize,
    /// Order-book (CLOB) server.
    #[arg(long, default_value = "0.0.0.0:8080")]
    pub clob_addr: SocketAddr,
    /// Catalogue server.
    #[arg(long, default_value = "0.0.0.0:8081")]
    pub catalogue_addr: SocketAddr,
    /// Analytics server.
    #[arg(long, default_value = "0.0.0.0:8082")]
    pub analytics_addr: SocketAddr,
    /// Bridge server.
    #[arg(long, default_value = "0.0.0.0:8083")]
    pub bridge_addr: SocketAddr,
    /// Operator (internal) server; must be loopback.
    #[arg(long, default_value = "127.0.0.1:8090")]
    pub internal_addr: SocketAddr,
    /// EIP-712 chainId of both auth and order domains (137 Polygon, 80002 Amoy).
    #[arg(long, default_value_t = 137)]
    pub chain_id: u64,
    /// verifyingContract of standard-market orders.
    #[arg(long, default_value = DEFAULT_EXCHANGE)]
    pub exchange_address: String,
    /// verifyingContract of negative-risk-market orders.
    #[arg(long, default_value = DEFAULT_NEG_RISK_EXCHANGE)]
    pub neg_risk_exchange_address: String,
    /// EIP-712 name of the order domain: `Polymarket CTF Exchange` for orders from
    /// Polymarket's official clients and for its exchange contracts run unchanged.
    #[arg(long, default_value = DEFAULT_ORDER_DOMAIN_NAME)]
    pub order_domain_name: String,
    /// The orders this venue takes: 1 (SPEC's orders, domain version "1") or 2 (Polymarket's
    /// CLOB V2 orders, domain version "2"); `GET /version` answers it, and the V2 clients
    /// sign what it says. Open orders of the other version are cancelled at start
    /// (docs/reference/order-versions.md).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=2))]
    pub order_version: u8,
    /// verifyingContract of version 2's standard-market orders (default Polygon's CTF
    /// Exchange V2).
    #[arg(long, default_value = DEFAULT_EXCHANGE_V2)]
    pub exchange_v2_address: String,
    /// verifyingContract of version 2's negative-risk-market orders (default Polygon's).
    #[arg(long, default_value = DEFAULT_NEG_RISK_EXCHANGE_V2)]
    pub neg_risk_exchange_v2_address: String,
    /// Safe's MultiSend (1.3.0), which a Safe transaction of several calls delegatecalls
    /// through the relayer (default Polygon's).
    #[arg(long, default_value = crate::domain::relay::POLYGON_SAFE_MULTISEND)]
    pub safe_multisend_address: String,
    /// The relay hub (GSN v1) a proxy wallet's owner signs its relayed calls for (default
    /// Polygon's).
    #[arg(long, default_value = crate::domain::relay::POLYGON_RELAY_HUB)]
    pub relay_hub_address: String,
    /// The proxy-wallet factory signature-type-1 makers are derived from (CREATE2; default
    /// Polygon's, the one Polymarket's clients derive with).
    #[arg(long, default_value = wallets::POLYGON_PROXY_FACTORY)]
    pub proxy_factory_address: String,
    /// keccak256 of the init code that factory deploys (default Polygon's).
    #[arg(long, default_value = wallets::POLYGON_PROXY_INIT_CODE_HASH)]
    pub proxy_init_code_hash: String,
    /// The Safe factory signature-type-2 makers are derived from (default Polygon's).
    #[arg(long, default_value = wallets::POLYGON_SAFE_FACTORY)]
    pub safe_factory_address: String,
    /// keccak256 of the Safe proxy's creation code and master copy (default Polygon's).
    #[arg(long, default_value = wallets::POLYGON_SAFE_INIT_CODE_HASH)]
    pub safe_init_code_hash: String,
    /// Where matched trades settle: `ledger` (the embedded ledger) or `chain` (matchOrders
    /// on the exchange contracts; docs/operating/settlement.md).
    #[arg(long, value_enum, default_value_t = Settlement::Ledger)]
    pub settlement: Settlement,
    /// Chain mode: the node's JSON-RPC endpoint (http://). Logged and shown as its host
    /// only.
    #[arg(long, value_name = "URL")]
    pub rpc_url: Option<String>,
    /// Chain mode: a file holding the operator's private key (hex), e.g. systemd's
    /// `LoadCredential=`. The key itself is never in the configuration and never logged.
    #[arg(long, value_name = "FILE")]
    pub operator_key_file: Option<PathBuf>,
    /// Chain mode: a file holding the key of the account that sends wallets' relayed
    /// transactions and pays their gas (hex; systemd's `LoadCredential=`). Unset: the
    /// operator's key, its nonces shared with settlement.
    #[arg(long, value_name = "FILE")]
    pub relayer_key_file: Option<PathBuf>,
    /// A file holding the key that seals API-key, builder and relayer secrets at rest (64
    /// hex digits; `predex admin secrets-key --out FILE` makes one; systemd's
    /// `LoadCredential=`). Never in the configuration itself, never logged.
    #[arg(long, value_name = "FILE")]
    pub secrets_key_file: Option<PathBuf>,
    /// A file holding the internal server's bearer token (systemd's `LoadCredential=`);
    /// unset: `internal.token` in the data directory, made at first start.
    #[arg(long, value_name = "FILE")]
    pub internal_token_file: Option<PathBuf>,
    /// Where `POST /internal/backup` may write (unset: `predex-backup` beside the data
    /// directory, the unit's second state directory).
    #[arg(long, value_name = "DIR")]
    pub backup_dir: Option<PathBuf>,
    /// Chain mode: the 6-decimal ERC-20 the exchanges settle in.
    #[arg(long, value_name = "ADDRESS")]
    pub collateral_address: Option<String>,
    /// Chain mode: the ConditionalTokens contract.
    #[arg(long, value_name = "ADDRESS")]
    pub ctf_address: Option<String>,
    /// Chain mode: the negative-risk adapter.
    #[arg(long, value_name = "ADDRESS")]
    pub neg_risk_adapter_address: Option<String>,
    /// Chain mode: blocks a settlement transaction must be under (1: mined) before its
    /// trade is CONFIRMED.
    #[arg(long, default_value_t = 1)]
    pub confirmations: u64,
    /// Chain mode: a transaction predex sent and the node has not mined this long after it
    /// was signed (seconds) is replaced: its nonce signed again at fees at least 25% higher
    /// (the node's estimate when that is higher).
    #[arg(long, default_value_t = 60)]
    pub replace_after_secs: u64,
    /// Chain mode's faucet (`POST /internal/faucet`): the most of the development collateral
    /// one gift mints (whole USDC).
    #[arg(long, default_value_t = 10_000)]
    pub faucet_max: u64,
    /// Chain mode's faucet: how long an address waits between two gifts (seconds).
    #[arg(long, default_value_t = 3600)]
    pub faucet_interval_secs: u64,
    /// Chain mode's faucet: each gift also tops up the address's native balance to what its
    /// approvals cost (400,000 gas at twice the node's fee).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub faucet_gas: bool,
    /// Demo catalogue loaded into an empty data directory.
    #[arg(long, default_value = "data/markets.json")]
    pub catalogue: PathBuf,
    /// Whether an address's first API key takes an invitation code (SPEC §5.2); `false`
    /// for open testnets, where any L1-verified address gets keys.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub invite_only: bool,
    /// How long an invitation code stays valid (seconds).
    #[arg(long, default_value_t = 7 * 24 * 3600)]
    pub invite_ttl_secs: u64,
    /// Where trading fees are credited in the embedded ledger (default: the exchange).
    #[arg(long, value_name = "ADDRESS")]
    pub fee_address: Option<String>,
    /// Settlement worker period (ms): PENDING trades are settled this often.
    #[arg(long, default_value_t = 5_000)]
    pub settlement_interval_ms: u64,
    /// GTD expiration worker period (ms).
    #[arg(long, default_value_t = 1_000)]
    pub gtd_interval_ms: u64,
    /// How often the heartbeat monitor looks for keys silent for more than 10 s (ms).
    #[arg(long, default_value_t = 1_000)]
    pub heartbeat_check_ms: u64,
    /// Requests per client IP per sliding window on the order-book server (SPEC §8);
    /// 0 turns the limit off.
    #[arg(long, default_value_t = 500)]
    pub rate_limit_max: u32,
    /// The rate limit's sliding window (seconds).
    #[arg(long, default_value_t = 60)]
    pub rate_limit_window_secs: u64,
    /// Peers whose X-Forwarded-For / X-Real-IP headers name the client (reverse proxies;
    /// comma-separated IPs). From any other peer those headers are ignored, so they cannot
    /// dodge the limit.
    #[arg(long, value_delimiter = ',', default_value = "127.0.0.1,::1")]
    pub trusted_proxies: Vec<IpAddr>,
    /// Bytes that the request bodies being read or handled at once by one server may hold
    /// (each of the five servers has this budget of its own; one client IP may hold a
    /// quarter of it): a body takes its declared length, or the 1 MiB limit when chunked,
    /// and a request that finds the budget spent is refused with 503.
    #[arg(long, default_value_t = 64 << 20)]
    pub body_bytes_in_flight: usize,
    /// Connections one client IP may hold open to each public server, WebSocket
    /// connections included; past it a new connection is answered 429 and closed. Trusted
    /// proxies are not counted. 0: no cap.
    #[arg(long, default_value_t = 64)]
    pub max_connections_per_ip: usize,
    /// Feed frames a WebSocket connection may fall behind before it is cut off.
    #[arg(long, default_value_t = 4096)]
    pub ws_window: usize,
    /// A WebSocket connection that sends nothing (not even PING) this long is closed
    /// (seconds).
    #[arg(long, default_value_t = 60)]
    pub ws_idle_secs: u64,
    /// Threads of the runtime that writes the WebSocket feeds (apart from the HTTP workers,
    /// so a fan-out burst never queues ahead of an order).
    #[arg(long, default_value_t = 1)]
    pub ws_threads: usize,
    /// The event stream: the NATS servers (`nats://HOST:PORT`, comma-separated) whose
    /// JetStream receives every durable order, trade, settlement and market event
    /// (docs/operating/event-stream.md). Unset: off.
    #[arg(long, value_name = "SERVERS")]
    pub events_to: Option<String>,
    /// The JetStream stream the events go to, created if missing (subjects `predex.>`).
    #[arg(long, default_value = "PREDEX")]
    pub events_stream: String,
    /// Replicas of the stream when predex creates it (at most a JetStream cluster's size).
    #[arg(long, default_value_t = 1)]
    pub events_replicas: usize,
    /// Liquidity-reward sampling period (ms): each sample pays its share of the day's rate
    /// to the resting orders that qualify then (docs/reference/rewards.md).
    #[arg(long, default_value_t = 60_000)]
    pub reward_sample_ms: u64,
    /// How often the payout worker looks for finished UTC days to pay rewards and rebates
    /// for (ms).
    #[arg(long, default_value_t = 60_000)]
    pub payout_check_ms: u64,
    /// A day is paid this long after it ends (seconds), so the settlement worker has
    /// confirmed its last trades.
    #[arg(long, default_value_t = 120)]
    pub payout_grace_secs: u64,
    /// Maker-rebate tiers, `MIN_VOLUME:BPS` comma-separated (in TOML, tables with
    /// `min-volume` and `bps`): a maker whose settled maker volume of a day reaches
    /// MIN_VOLUME USDC earns BPS basis points of that whole volume.
    #[arg(long, value_delimiter = ',', default_value = "1000:1,100000:2,1000000:3")]
    pub rebate_tiers: Vec<RebateTier>,
    /// Resolution worker period (ms): undisputed proposals past the cooldown are resolved.
    #[arg(long, default_value_t = 30_000)]
    pub resolution_interval_ms: u64,
    /// How long a proposed resolution can be disputed (seconds; SPEC: 24 hours).
    #[arg(long, default_value_t = 24 * 3600)]
    pub resolution_cooldown_secs: u64,
    /// Bond clusters, `ID:REQUIRED` comma-separated (in TOML, tables with `id` and
    /// `required`): what a bond must reach (whole USDC) to propose or dispute a market of
    /// the cluster. Markets are in the first cluster unless assigned another.
    #[arg(long, value_delimiter = ',', default_value = "1:100")]
    pub bond_clusters: Vec<BondCluster>,
    /// RFQ expiration worker period (ms): requests and quotes past their TTL become
    /// EXPIRED.
    #[arg(long, default_value_t = 1_000)]
    pub rfq_interval_ms: u64,
    /// TTL of an RFQ request when the body names none (seconds).
    #[arg(long, default_value_t = 300)]
    pub rfq_request_ttl_secs: u64,
    /// TTL of an RFQ quote when the body names none (seconds).
    #[arg(long, default_value_t = 60)]
    pub rfq_quote_ttl_secs: u64,
}

/// The settlement backend.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Settlement {
    /// The embedded ledger: balances credited by the operator, trades settled in RocksDB.
    #[default]
    Ledger,
    /// A chain: `matchOrders` on the exchange contracts, signed with the operator's key.
    Chain,
}

/// What chain mode needs, all of it set and valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainSettings {
    pub rpc_url: String,
    pub operator_key_file: PathBuf,
    /// The relayer's own key, when it is not the operator's.
    pub relayer_key_file: Option<PathBuf>,
    pub collateral: alloy_primitives::Address,
    pub ctf: alloy_primitives::Address,
    pub neg_risk_adapter: alloy_primitives::Address,
    /// The exchanges settlement goes through: version 1's or version 2's, as `order_version`.
    pub exchange: alloy_primitives::Address,
    pub neg_risk_exchange: alloy_primitives::Address,
    /// The orders the venue takes, and so the exchanges' interface (1 or 2).
    pub order_version: u8,
    pub confirmations: u64,
    /// Where makers' wallets of signature types 1 and 2 come from: the exchanges must derive
    /// them alike (checked at start).
    pub wallets: WalletFactories,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct BondCluster {
    pub id: u64,
    /// Whole USDC.
    pub required: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RebateTier {
    /// Whole USDC.
    pub min_volume: u64,
    pub bps: u32,
}

/// `A:B`, two whole numbers: how a list entry is written in a flag or a variable.
fn pair<A: std::str::FromStr, B: std::str::FromStr>(s: &str, form: &str) -> Result<(A, B), String> {
    let bad = || format!("expected {form}, got {s:?}");
    let (a, b) = s.trim().split_once(':').ok_or_else(bad)?;
    Ok((a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?))
}

impl std::str::FromStr for BondCluster {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        pair(s, "ID:REQUIRED").map(|(id, required)| BondCluster { id, required })
    }
}

impl std::str::FromStr for RebateTier {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        pair(s, "MIN_VOLUME:BPS").map(|(min_volume, bps)| RebateTier { min_volume, bps })
    }
}

impl Default for Config {
    /// Every setting at its default (written once, in its `#[arg]` above).
    fn default() -> Self {
        sources::defaults()
    }
}

impl Config {
    pub fn from_toml(text: &str) -> anyhow::Result<Config> {
        Ok(toml::from_str(text)?)
    }

    /// The settings as TOML, as they may be shown: the RPC URL as its host only.
    pub fn shown(&self) -> anyhow::Result<String> {
        let c = Config { rpc_url: self.rpc_url.as_deref().map(url_host), ..self.clone() };
        Ok(toml::to_string(&c)?)
    }

    /// Whether an order signed for this venue is also one for Polymarket's production
    /// exchanges: their domain name, Polygon's chain id and either exchange's address.
    pub fn orders_replay_on_polymarket(&self) -> bool {
        let same = |a: &str, b: &str| crate::auth::normalize_address(a).as_deref() == Some(b);
        self.order_domain_name == crate::auth::POLYMARKET_ORDER_DOMAIN
            && self.chain_id == 137
            && (same(&self.exchange_address, DEFAULT_EXCHANGE)
                || same(&self.neg_risk_exchange_address, DEFAULT_NEG_RISK_EXCHANGE))
    }

    /// The order domains of both versions.
    pub fn order_domains(&self) -> anyhow::Result<crate::auth::OrderDomains> {
        let a = |v: &str, name: &str| -> anyhow::Result<alloy_primitives::Address> {
            v.trim().parse().map_err(|_| anyhow::anyhow!("{name} is not an address: {v}"))
        };
        Ok(crate::auth::OrderDomains::new(
            &self.order_domain_name,
            self.chain_id,
            a(&self.exchange_address, "exchange-address")?,
            a(&self.neg_risk_exchange_address, "neg-risk-exchange-address")?,
        )
        .with_v2(
            a(&self.exchange_v2_address, "exchange-v2-address")?,
            a(&self.neg_risk_exchange_v2_address, "neg-risk-exchange-v2-address")?,
        ))
    }

    /// The internal token's file: the one given, else `internal.token` in the data
    /// directory (made at first start).
    pub fn internal_token_path(&self) -> PathBuf {
        match &self.internal_token_file {
            Some(f) => f.clone(),
            None => crate::keyfile::default_token_path(&self.data_dir),
        }
    }

    /// The directory backups are written under.
    pub fn backup_root(&self) -> PathBuf {
        match &self.backup_dir {
            Some(d) => d.clone(),
            None => self.data_dir.parent().unwrap_or(std::path::Path::new("")).join("predex-backup"),
        }
    }

    /// The factories proxy and Safe makers are derived from, or which setting is not valid.
    pub fn wallet_factories(&self) -> anyhow::Result<WalletFactories> {
        let address = |v: &str, name: &str| -> anyhow::Result<alloy_primitives::Address> {
            v.trim().parse().map_err(|_| anyhow::anyhow!("{name} is not an address: {v}"))
        };
        let hash = |v: &str, name: &str| -> anyhow::Result<alloy_primitives::B256> {
            v.trim().parse().map_err(|_| anyhow::anyhow!("{name} is not a 32-byte hex hash: {v}"))
        };
        Ok(WalletFactories {
            proxy_factory: address(&self.proxy_factory_address, "proxy-factory-address")?,
            proxy_init_code_hash: hash(&self.proxy_init_code_hash, "proxy-init-code-hash")?,
            safe_factory: address(&self.safe_factory_address, "safe-factory-address")?,
            safe_init_code_hash: hash(&self.safe_init_code_hash, "safe-init-code-hash")?,
        })
    }

    /// The venue's contracts the relayer lets a wallet call: the collateral, ConditionalTokens
    /// and the adapter as set (Polygon's unless set: what a Polymarket client calls), both
    /// versions' exchanges, MultiSend, the Safe and proxy factories and the relay hub.
    pub fn relay_contracts(&self) -> anyhow::Result<crate::domain::relay::RelayContracts> {
        use crate::domain::relay as r;
        let a = |v: Option<&str>, default: &str, name: &str| -> anyhow::Result<alloy_primitives::Address> {
            let v = v.unwrap_or(default);
            v.trim().parse().map_err(|_| anyhow::anyhow!("{name} is not an address: {v}"))
        };
        let domains = self.order_domains()?;
        Ok(r::RelayContracts {
            collateral: a(self.collateral_address.as_deref(), r::POLYGON_COLLATERAL, "collateral-address")?,
            ctf: a(self.ctf_address.as_deref(), r::POLYGON_CTF, "ctf-address")?,
            adapter: a(
                self.neg_risk_adapter_address.as_deref(),
                r::POLYGON_NEG_RISK_ADAPTER,
                "neg-risk-adapter-address",
            )?,
            exchanges: [domains.exchanges(1), domains.exchanges(2)].concat(),
            multisend: a(Some(&self.safe_multisend_address), "", "safe-multisend-address")?,
            safe_factory: self.wallet_factories()?.safe_factory,
            proxy_factory: self.wallet_factories()?.proxy_factory,
            relay_hub: a(Some(&self.relay_hub_address), "", "relay-hub-address")?,
            relay: alloy_primitives::Address::ZERO,
        })
    }

    /// Chain mode's settings, or why they are incomplete; `None` in ledger mode.
    pub fn chain(&self) -> anyhow::Result<Option<ChainSettings>> {
        if self.settlement == Settlement::Ledger {
            return Ok(None);
        }
        fn required<'a, T>(v: &'a Option<T>, name: &str) -> anyhow::Result<&'a T> {
            v.as_ref().ok_or_else(|| anyhow::anyhow!("settlement = \"chain\" needs {name}"))
        }
        let address = |v: &Option<String>, name: &str| -> anyhow::Result<alloy_primitives::Address> {
            let a = required(v, name)?;
            a.parse().map_err(|_| anyhow::anyhow!("{name} is not an address: {a}"))
        };
        let rpc_url = required(&self.rpc_url, "rpc-url")?.clone();
        if !rpc_url.starts_with("http://") {
            anyhow::bail!("rpc-url must be an http:// URL, got {}", url_host(&rpc_url));
        }
        if self.confirmations == 0 {
            anyhow::bail!("confirmations must be at least 1");
        }
        // Settlement goes through the exchanges of the orders the venue takes.
        let (exchange, neg_risk_exchange) = match self.order_version {
            2 => (
                address(&Some(self.exchange_v2_address.clone()), "exchange-v2-address")?,
                address(&Some(self.neg_risk_exchange_v2_address.clone()), "neg-risk-exchange-v2-address")?,
            ),
            _ => (
                address(&Some(self.exchange_address.clone()), "exchange-address")?,
                address(&Some(self.neg_risk_exchange_address.clone()), "neg-risk-exchange-address")?,
            ),
        };
        Ok(Some(ChainSettings {
            rpc_url,
            operator_key_file: required(&self.operator_key_file, "operator-key-file")?.clone(),
            relayer_key_file: self.relayer_key_file.clone(),
            collateral: address(&self.collateral_address, "collateral-address")?,
            ctf: address(&self.ctf_address, "ctf-address")?,
            neg_risk_adapter: address(&self.neg_risk_adapter_address, "neg-risk-adapter-address")?,
            exchange,
            neg_risk_exchange,
            order_version: self.order_version,
            confirmations: self.confirmations,
            wallets: self.wallet_factories()?,
        }))
    }

    /// Rejects settings that would run an unsafe or broken exchange.
    pub fn validate(&self) -> anyhow::Result<()> {
        self.chain()?;
        self.wallet_factories()?;
        self.relay_contracts()?;
        if !self.internal_addr.ip().is_loopback() {
            anyhow::bail!("internal-addr must be a loopback address, got {}", self.internal_addr);
        }
        if !(1..=2).contains(&self.order_version) {
            anyhow::bail!("order-version must be 1 or 2, got {}", self.order_version);
        }
        for (name, a) in [
            ("exchange-address", &self.exchange_address),
            ("neg-risk-exchange-address", &self.neg_risk_exchange_address),
            ("exchange-v2-address", &self.exchange_v2_address),
            ("neg-risk-exchange-v2-address", &self.neg_risk_exchange_v2_address),
        ] {
            if crate::auth::normalize_address(a).is_none() {
                anyhow::bail!("{name} is not an address: {a}");
            }
        }
        if self.order_domain_name.trim().is_empty() {
            anyhow::bail!("order-domain-name must not be empty");
        }
        for (name, ms) in [
            ("settlement-interval-ms", self.settlement_interval_ms),
            ("gtd-interval-ms", self.gtd_interval_ms),
            ("heartbeat-check-ms", self.heartbeat_check_ms),
            ("reward-sample-ms", self.reward_sample_ms),
            ("payout-check-ms", self.payout_check_ms),
            ("resolution-interval-ms", self.resolution_interval_ms),
            ("rfq-interval-ms", self.rfq_interval_ms),
            ("rfq-request-ttl-secs", self.rfq_request_ttl_secs),
            ("rfq-quote-ttl-secs", self.rfq_quote_ttl_secs),
        ] {
            if ms == 0 {
                anyhow::bail!("{name} must be at least 1");
            }
        }
        if self.wal_logs_ahead == 1 || self.wal_logs_ahead > 64 {
            anyhow::bail!("wal-logs-ahead must be 0 (off) or from 2 to 64, got {}", self.wal_logs_ahead);
        }
        if self.ws_window == 0 || self.ws_idle_secs == 0 || self.ws_threads == 0 {
            anyhow::bail!("ws-window, ws-idle-secs and ws-threads must be at least 1");
        }
        if self.body_bytes_in_flight < MAX_BODY {
            anyhow::bail!("body-bytes-in-flight must hold one whole body, at least {MAX_BODY}");
        }
        if self.rate_limit_window_secs == 0 {
            anyhow::bail!("rate-limit-window-secs must be at least 1");
        }
        if self.rebate_tiers.windows(2).any(|w| w[0].min_volume >= w[1].min_volume)
            || self.rebate_tiers.iter().any(|t| t.bps > 10_000)
        {
            anyhow::bail!("rebate-tiers must ascend by min-volume, each at most 10000 bps");
        }
        if let Some(f) = &self.fee_address {
            if crate::auth::normalize_address(f).is_none() {
                anyhow::bail!("fee-address is not an address: {f}");
            }
        }
        self.events_servers()?;
        let name = &self.events_stream;
        if name.is_empty() || name.contains(|c: char| c.is_whitespace() || ".*>/\\".contains(c)) {
            anyhow::bail!(
                "events-stream must be a JetStream stream name (no spaces, '.', '*', '>', '/'), got {name:?}"
            );
        }
        if !(1..=5).contains(&self.events_replicas) {
            anyhow::bail!("events-replicas must be from 1 to 5, got {}", self.events_replicas);
        }
        Ok(())
    }

    /// The event stream's servers, if it is on: each `nats://HOST:PORT` (or `HOST:PORT`),
    /// without credentials, which would put a secret in the configuration.
    pub fn events_servers(&self) -> anyhow::Result<Vec<async_nats::ServerAddr>> {
        let Some(to) = &self.events_to else { return Ok(Vec::new()) };
        to.split(',')
            .map(|s| {
                let s = s.trim();
                let addr: async_nats::ServerAddr =
                    s.parse().map_err(|e| anyhow::anyhow!("events-to: {s:?} is not a NATS server address: {e}"))?;
                if addr.has_user_pass() || s.contains('@') {
                    anyhow::bail!("events-to must not carry credentials: {s:?}");
                }
                if !matches!(addr.scheme(), "nats") || addr.host().is_empty() {
                    anyhow::bail!("events-to: {s:?} must be nats://HOST:PORT");
                }
                Ok(addr)
            })
            .collect()
    }
}

/// A URL as it may be shown or logged: its scheme and host (with port) only, for a
/// provider's key may sit in its path, query or user part.
pub fn url_host(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if scheme.is_empty() {
        host.to_string()
    } else {
        format!("{scheme}://{host}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What is logged of an RPC URL leaves out a provider's key wherever it sits.
    #[test]
    fn url_host_keeps_the_scheme_and_host_only() {
        assert_eq!(url_host("http://127.0.0.1:8545"), "http://127.0.0.1:8545");
        assert_eq!(url_host("http://rpc.example:80/v2/SECRETKEY?x=1"), "http://rpc.example:80");
        assert_eq!(url_host("http://user:SECRET@rpc.example/k"), "http://rpc.example");
        assert_eq!(url_host("https://rpc.example?apikey=SECRET"), "https://rpc.example");
        assert_eq!(url_host("rpc.example/SECRET"), "rpc.example");
    }

    #[test]
    fn defaults_are_valid() {
        let c = Config::default();
        c.validate().unwrap();
        assert_eq!(c.clob_addr.port(), 8080);
        assert_eq!(c.internal_addr.to_string(), "127.0.0.1:8090");
        assert_eq!(c.chain_id, 137);
        assert_eq!(c.wallet_factories().unwrap(), WalletFactories::polygon());
        let bad = Config { safe_init_code_hash: "0x12".into(), ..Config::default() };
        assert!(bad.validate().is_err());
    }

    /// The event stream takes NATS servers without credentials, a stream name JetStream
    /// accepts, and 1 to 5 replicas.
    #[test]
    fn event_stream_settings_are_checked() {
        let with = |to: &str| Config { events_to: Some(to.into()), ..Config::default() };
        assert!(Config::default().events_servers().unwrap().is_empty());
        let servers = with("nats://10.0.0.1:4222, nats://10.0.0.2:4223").events_servers().unwrap();
        assert_eq!(
            servers.iter().map(|s| (s.host(), s.port())).collect::<Vec<_>>(),
            [("10.0.0.1", 4222), ("10.0.0.2", 4223)]
        );
        assert_eq!(with("127.0.0.1:4222").events_servers().unwrap()[0].port(), 4222);
        for bad in ["nats://user:secret@10.0.0.1:4222", "tls://10.0.0.1:4222", "ws://10.0.0.1:80", "nats://", ""] {
            assert!(with(bad).validate().is_err(), "{bad}");
        }
        for name in ["", "a.b", "a b", "all>", "x*"] {
            assert!(Config { events_stream: name.into(), ..Config::default() }.validate().is_err(), "{name:?}");
        }
        assert!(Config { events_replicas: 0, ..Config::default() }.validate().is_err());
        assert!(Config { events_replicas: 6, ..Config::default() }.validate().is_err());
        let c = Config::from_toml("events-to = \"nats://127.0.0.1:4222\"\nevents-replicas = 3").unwrap();
        assert_eq!((c.events_replicas, c.events_stream.as_str()), (3, "PREDEX"));
        c.validate().unwrap();
    }

    #[test]
    fn toml_overrides_and_rejects_unknown() {
        let c = Config::from_toml("chain-id = 80002\nclob-addr = \"127.0.0.1:0\"").unwrap();
        assert_eq!(c.chain_id, 80002);
        assert_eq!(c.clob_addr.port(), 0);
        assert!(Config::from_toml("nope = 1").is_err());
        let bad = Config { internal_addr: "0.0.0.0:8090".parse().unwrap(), ..Config::default() };
        assert!(bad.validate().is_err());
    }

    #[test]
    fn the_order_domain_name_is_a_setting_and_polymarkets_domain_is_recognised() {
        let c = Config::default();
        assert_eq!(c.order_domain_name, "Service CTF Exchange");
        assert!(!c.orders_replay_on_polymarket());
        let c = Config::from_toml("order-domain-name = \"Polymarket CTF Exchange\"").unwrap();
        assert!(c.orders_replay_on_polymarket());
        let upper = Config { exchange_address: DEFAULT_EXCHANGE.to_uppercase().replace("0X", "0x"), ..c.clone() };
        assert!(upper.orders_replay_on_polymarket(), "addresses compare whatever their case");
        let own = Config { chain_id: 80002, ..c.clone() };
        assert!(!own.orders_replay_on_polymarket());
        let elsewhere = Config {
            exchange_address: "0x0000000000000000000000000000000000000001".into(),
            neg_risk_exchange_address: "0x0000000000000000000000000000000000000002".into(),
            ..c
        };
        assert!(!elsewhere.orders_replay_on_polymarket());
        assert!(Config { order_domain_name: " ".into(), ..Config::default() }.validate().is_err());
    }

    #[test]
    fn invite_only_is_the_default_and_a_setting() {
        assert!(Config::default().invite_only);
        assert!(!Config::from_toml("invite-only = false").unwrap().invite_only);
    }

    /// One log written ahead cannot leave a reused one live (the store needs two).
    #[test]
    fn logs_ahead_are_none_or_at_least_two() {
        for (n, ok) in [(0, true), (1, false), (2, true), (8, true), (64, true), (65, false)] {
            let c = Config::from_toml(&format!("wal-logs-ahead = {n}")).unwrap();
            assert_eq!(c.validate().is_ok(), ok, "{n}");
        }
    }

    #[test]
    fn chain_mode_takes_every_chain_setting_from_toml_and_names_a_missing_one() {
        assert_eq!(Config::default().chain().unwrap(), None);
        let toml = "settlement = \"chain\"\nrpc-url = \"http://127.0.0.1:8545\"\noperator-key-file = \"/run/credentials/predex.service/operator\"\n\
                    collateral-address = \"0x0000000000000000000000000000000000000001\"\n\
                    ctf-address = \"0x0000000000000000000000000000000000000002\"\n\
                    neg-risk-adapter-address = \"0x0000000000000000000000000000000000000003\"\nconfirmations = 3\n";
        let c = Config::from_toml(toml).unwrap();
        c.validate().unwrap();
        let s = c.chain().unwrap().unwrap();
        assert_eq!(s.rpc_url, "http://127.0.0.1:8545");
        assert_eq!(s.confirmations, 3);
        assert_eq!(s.ctf, alloy_primitives::Address::with_last_byte(2));
        assert_eq!(s.exchange.to_string().to_lowercase(), DEFAULT_EXCHANGE);
        let missing = Config { neg_risk_adapter_address: None, ..c.clone() };
        assert_eq!(
            missing.validate().unwrap_err().to_string(),
            "settlement = \"chain\" needs neg-risk-adapter-address"
        );
        let bad = Config { collateral_address: Some("0x12".into()), ..c.clone() };
        assert_eq!(bad.validate().unwrap_err().to_string(), "collateral-address is not an address: 0x12");
        assert!(Config { rpc_url: Some("https://node".into()), ..c.clone() }.validate().is_err());
        assert!(Config { confirmations: 0, ..c }.validate().is_err());
        // The key itself has no setting: only the file that holds it.
        assert!(Config::from_toml("operator-key = \"0x01\"").is_err());
    }
}
