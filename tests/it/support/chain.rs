//! Chain mode's harness: a local anvil, the contracts deployed by `predex chain deploy`,
//! and a venue of predex against them.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use predex::chain::wallet_provider;
use predex::config::Config;
use serde_json::{json, Value};

use super::*;

/// anvil's first development account: deployer and operator unless a test says otherwise.
pub const DEPLOYER_KEY: &str = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
/// anvil's second development account.
pub const OTHER_KEY: &str = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
/// anvil's chain id.
pub const ANVIL_CHAIN_ID: u64 = 31337;

pub(crate) fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A local EVM node on a free port, killed (by its own pid) when dropped.
pub struct Anvil {
    pub url: String,
    child: Child,
}

impl Anvil {
    pub fn start() -> Anvil {
        Anvil::start_with(&[])
    }

    /// Starts anvil on a port just found free. Another process may take that port before anvil
    /// binds it; anvil then exits, and it is started again on another port.
    pub fn start_with(args: &[&str]) -> Anvil {
        let bin = root().join("tools/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil");
        assert!(bin.exists(), "anvil is missing at {}: run scripts/setup.sh", bin.display());
        let mut last = String::new();
        for _ in 0..3 {
            let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let log = tempfile::NamedTempFile::new().unwrap();
            let child = Command::new(&bin)
                .args(["--host", "127.0.0.1", "--port", &port.to_string(), "--silent"])
                .args(args)
                .stdout(Stdio::null())
                .stderr(log.reopen().unwrap())
                .spawn()
                .expect("start anvil");
            let mut anvil = Anvil { url: format!("http://127.0.0.1:{port}"), child };
            let end = Instant::now() + Duration::from_secs(60);
            while Instant::now() < end {
                if anvil.rpc("eth_chainId", json!([])).is_ok() {
                    return anvil;
                }
                if anvil.child.try_wait().unwrap().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            last = std::fs::read_to_string(log.path()).unwrap_or_default();
            drop(anvil);
        }
        panic!("anvil did not start: {last}");
    }

    /// One JSON-RPC call: its result, or its error object.
    pub fn rpc(&self, method: &str, params: Value) -> Result<Value, Value> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let r =
            ureq::post(&self.url).timeout(Duration::from_secs(10)).send_json(body).map_err(|e| json!(e.to_string()))?;
        let v: Value = r.into_json().map_err(|e| json!(e.to_string()))?;
        match v.get("error") {
            Some(e) => Err(e.clone()),
            None => Ok(v["result"].clone()),
        }
    }
}

impl Drop for Anvil {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A key file in `dir`.
/// A key file in `dir`, readable by its owner only (predex refuses any other).
pub fn key_file(dir: &Path, name: &str, key: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, format!("{key}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    p
}

/// Contracts built with the exchanges' domain named `domain_name` (Polymarket's, say), in
/// `dir`.
pub fn build_contracts(dir: &Path, domain_name: &str) {
    let out = Command::new("node")
        .arg(root().join("scripts/contracts.js"))
        .args(["--domain-name", domain_name, "--out"])
        .arg(dir)
        .output()
        .expect("run node scripts/contracts.js");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Runs `predex chain deploy` and returns the settings it printed, parsed as a config.
pub fn deploy(anvil: &Anvil, key: &Path, contracts: &Path, extra: &[&str]) -> Config {
    let out = Command::new(env!("CARGO_BIN_EXE_predex"))
        .args(["chain", "deploy", "--rpc-url", &anvil.url, "--key-file"])
        .arg(key)
        .arg("--contracts-dir")
        .arg(contracts)
        .args(extra)
        .output()
        .expect("run predex chain deploy");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "deploy failed: {}{}", stdout, String::from_utf8_lossy(&out.stderr));
    Config::from_toml(&stdout).unwrap_or_else(|e| panic!("deploy printed no config ({e}): {stdout}"))
}

/// A test configuration in `dir` pointed at what `deployed` names, settling with `key`.
pub fn chain_config(dir: &Path, deployed: &Config, key: PathBuf) -> Config {
    Config {
        settlement: deployed.settlement,
        chain_id: deployed.chain_id,
        rpc_url: deployed.rpc_url.clone(),
        operator_key_file: Some(key),
        collateral_address: deployed.collateral_address.clone(),
        ctf_address: deployed.ctf_address.clone(),
        neg_risk_adapter_address: deployed.neg_risk_adapter_address.clone(),
        exchange_address: deployed.exchange_address.clone(),
        neg_risk_exchange_address: deployed.neg_risk_exchange_address.clone(),
        order_version: deployed.order_version,
        exchange_v2_address: deployed.exchange_v2_address.clone(),
        neg_risk_exchange_v2_address: deployed.neg_risk_exchange_v2_address.clone(),
        safe_factory_address: deployed.safe_factory_address.clone(),
        safe_init_code_hash: deployed.safe_init_code_hash.clone(),
        safe_multisend_address: deployed.safe_multisend_address.clone(),
        proxy_factory_address: deployed.proxy_factory_address.clone(),
        proxy_init_code_hash: deployed.proxy_init_code_hash.clone(),
        relay_hub_address: deployed.relay_hub_address.clone(),
        ..test_config(dir)
    }
}

/// A chain-mode venue: its own anvil, the contracts deployed, predex started against them.
pub struct Venue {
    pub server: Server,
    pub deployed: Config,
    pub anvil: Anvil,
    pub(crate) _dir: tempfile::TempDir,
    pub(crate) rt: tokio::runtime::Runtime,
}

impl Venue {
    pub fn start() -> Venue {
        Venue::start_from(&root().join("contracts"), predex::config::DEFAULT_ORDER_DOMAIN_NAME)
    }

    /// A venue whose predex runs as a process of its own (to kill: `Proc`), with more
    /// settings (`PREDEX_*`), reaching the node straight or, `proxied`, through a
    /// [`crate::chain::HoldingProxy`] in front of it. Its data directory is `data` and its
    /// operator's key file `operator.key` in the venue's directory.
    pub(crate) fn spawned(
        proxied: bool,
        settings: &[(&str, String)],
    ) -> (crate::support::Proc, Venue, Option<crate::chain::HoldingProxy>) {
        let anvil = Anvil::start();
        let dir = tempfile::tempdir().unwrap();
        let key = key_file(dir.path(), "operator.key", DEPLOYER_KEY);
        let deployed = deploy(&anvil, &key, &root().join("contracts"), &[]);
        let proxy = proxied.then(|| crate::chain::HoldingProxy::start(&anvil.url));
        let rpc = proxy.as_ref().map_or(anvil.url.clone(), |p| p.url.clone());
        let (child, server) = spawn_predex_with(&dir.path().join("data"), &deployed, &key, &rpc, settings);
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        (child, Venue { server, deployed, anvil, _dir: dir, rt }, proxy)
    }

    /// A venue of version 2 orders, settling through predex's V2 exchanges.
    pub fn start_v2() -> Venue {
        Venue::start_with(&root().join("contracts"), predex::config::DEFAULT_ORDER_DOMAIN_NAME, 2)
    }

    /// A venue on the contracts in `contracts`, whose exchanges were built with the order
    /// domain `domain_name`.
    pub fn start_from(contracts: &Path, domain_name: &str) -> Venue {
        Venue::start_with(contracts, domain_name, 1)
    }

    fn start_with(contracts: &Path, domain_name: &str, version: u8) -> Venue {
        let dir = tempfile::tempdir().unwrap();
        Venue::start_on(Anvil::start(), dir, contracts, &["--order-version", &version.to_string()], |c| {
            c.order_domain_name = domain_name.into()
        })
    }

    /// A venue as Polymarket's official clients find it unchanged: anvil with Polygon's chain
    /// id, every contract at its Polygon address (`chain deploy --polygon-layout`), the
    /// exchanges built under Polymarket's order domain, and keys open to anyone who signs.
    pub fn start_polygon() -> Venue {
        let dir = tempfile::tempdir().unwrap();
        let contracts = dir.path().join("contracts");
        build_contracts(&contracts, predex::auth::POLYMARKET_ORDER_DOMAIN);
        let anvil = Anvil::start_with(&["--chain-id", "137"]);
        Venue::start_on(anvil, dir, &contracts, &["--polygon-layout"], |c| {
            c.order_domain_name = predex::auth::POLYMARKET_ORDER_DOMAIN.into();
            c.invite_only = false;
        })
    }

    /// Deploys `contracts` on `anvil` with `deploy_args` and starts predex against them, its
    /// data in `dir`, settling every 200 ms, as `tune` sets it otherwise.
    fn start_on(
        anvil: Anvil,
        dir: tempfile::TempDir,
        contracts: &Path,
        deploy_args: &[&str],
        tune: impl FnOnce(&mut Config),
    ) -> Venue {
        let key = key_file(dir.path(), "operator.key", DEPLOYER_KEY);
        let deployed = deploy(&anvil, &key, contracts, deploy_args);
        let data = dir.path().join("data");
        let mut config = Config { settlement_interval_ms: 200, ..chain_config(&data, &deployed, key) };
        tune(&mut config);
        let server = Server::start_with(config);
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        Venue { server, deployed, anvil, _dir: dir, rt }
    }

    pub(crate) fn address(v: &Option<String>) -> alloy_primitives::Address {
        v.as_deref().unwrap().parse().unwrap()
    }

    /// The exchange settlement goes through (version 1's or 2's, as deployed).
    pub fn exchange(&self) -> alloy_primitives::Address {
        match self.deployed.order_version {
            2 => self.deployed.exchange_v2_address.parse().unwrap(),
            _ => self.deployed.exchange_address.parse().unwrap(),
        }
    }

    pub fn neg_risk_exchange(&self) -> alloy_primitives::Address {
        match self.deployed.order_version {
            2 => self.deployed.neg_risk_exchange_v2_address.parse().unwrap(),
            _ => self.deployed.neg_risk_exchange_address.parse().unwrap(),
        }
    }

    /// A trader with an API key, gas, `usdc` collateral minted on chain, and, when
    /// `approve`, the approvals the exchanges need (collateral and positions, both
    /// exchanges and the adapter).
    pub fn trader(&self, usdc: u64, approve: bool) -> crate::support::Trader {
        use predex::chain::{ICollateral, IConditionalTokens};
        let t = self.server.trader(0);
        self.anvil.rpc("anvil_setBalance", json!([t.address, "0x3635C9ADC5DEA00000"])).unwrap();
        let collateral = Venue::address(&self.deployed.collateral_address);
        let ctf = Venue::address(&self.deployed.ctf_address);
        let adapter = Venue::address(&self.deployed.neg_risk_adapter_address);
        let (exchange, nre) = (self.exchange(), self.neg_risk_exchange());
        let url = self.anvil.url.clone();
        let wallet = t.wallet.clone();
        let me = wallet.address();
        self.mint(me, usdc);
        self.rt.block_on(async move {
            if approve {
                let p = wallet_provider(&url, wallet).unwrap();
                let c = ICollateral::new(collateral, &p);
                let ctf = IConditionalTokens::new(ctf, &p);
                for x in [exchange, nre] {
                    let r =
                        c.approve(x, alloy_primitives::U256::MAX).send().await.unwrap().get_receipt().await.unwrap();
                    assert!(r.status());
                }
                for x in [exchange, nre, adapter] {
                    let r = ctf.setApprovalForAll(x, true).send().await.unwrap().get_receipt().await.unwrap();
                    assert!(r.status());
                }
            }
        });
        t
    }

    /// Development collateral minted on chain to `to` by the deployer.
    pub(crate) fn mint(&self, to: alloy_primitives::Address, amount: u64) {
        use predex::chain::ICollateral;
        let collateral = Venue::address(&self.deployed.collateral_address);
        let url = self.anvil.url.clone();
        self.rt.block_on(async move {
            let p = wallet_provider(&url, DEPLOYER_KEY.parse().unwrap()).unwrap();
            let r =
                ICollateral::new(collateral, &p).mint(to, alloy_primitives::U256::from(amount)).send().await.unwrap();
            assert!(r.get_receipt().await.unwrap().status());
        });
    }

    /// The native balance of `who`, in wei.
    pub(crate) fn gas_of(&self, who: alloy_primitives::Address) -> alloy_primitives::U256 {
        use alloy_provider::Provider;
        self.rt.block_on(async { wallet_provider_ro(&self.anvil.url).get_balance(who).await.unwrap() })
    }

    /// The exchange's condition id for a token (zero when unregistered).
    pub fn registered(&self, exchange: alloy_primitives::Address, token: &str) -> String {
        let url = self.anvil.url.clone();
        let token = alloy_primitives::U256::from_str_radix(token, 10).unwrap();
        self.rt.block_on(async move {
            let p = wallet_provider_ro(&url);
            predex::chain::IExchange::new(exchange, &p).getConditionId(token).call().await.unwrap().to_string()
        })
    }

    /// A binary market made on chain: (condition id, YES, NO).
    pub(crate) fn market(&self) -> (String, String, String) {
        let (st, m) = self.server.internal_post("/internal/markets", &json!({"question": "Will it?"}));
        assert_eq!(st, 200, "{m}");
        let token = |i: usize| m["tokens"][i]["token_id"].as_str().unwrap().to_string();
        (m["condition_id"].as_str().unwrap().to_string(), token(0), token(1))
    }

    /// On-chain balances of a trader: (collateral, each token asked).
    pub(crate) fn holdings(&self, t: &crate::support::Trader, tokens: &[&str]) -> (u64, Vec<u64>) {
        self.holdings_of(t.wallet.address(), tokens)
    }

    pub(crate) fn holdings_of(&self, me: alloy_primitives::Address, tokens: &[&str]) -> (u64, Vec<u64>) {
        use predex::chain::{ICollateral, IConditionalTokens};
        let p = wallet_provider_ro(&self.anvil.url);
        let collateral = Venue::address(&self.deployed.collateral_address);
        let ctf = Venue::address(&self.deployed.ctf_address);
        let tokens: Vec<alloy_primitives::U256> =
            tokens.iter().map(|x| alloy_primitives::U256::from_str_radix(x, 10).unwrap()).collect();
        self.rt.block_on(async move {
            let usdc: u64 = ICollateral::new(collateral, &p).balanceOf(me).call().await.unwrap().to();
            let mut held = Vec::new();
            for id in tokens {
                held.push(IConditionalTokens::new(ctf, &p).balanceOf(me, id).call().await.unwrap().to());
            }
            (usdc, held)
        })
    }

    /// The receipt status of a transaction (1 succeeded).
    pub(crate) fn receipt_status(&self, hash: &str) -> u64 {
        let r = self.anvil.rpc("eth_getTransactionReceipt", json!([hash])).unwrap();
        u64::from_str_radix(r["status"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
    }

    /// The trader's own call to the exchange, sent and mined (`pending` false), or sent
    /// with a high tip to wait in the pool (automine off) and be mined first in its block.
    pub(crate) fn own_call(&self, t: &crate::support::Trader, call: OwnCall, order: &Value, pending: bool) {
        let exchange = self.exchange();
        let (url, wallet, order) = (self.anvil.url.clone(), t.wallet.clone(), onchain_order(order));
        self.rt.block_on(async move {
            let p = wallet_provider(&url, wallet).unwrap();
            let x = predex::chain::IExchange::new(exchange, &p);
            let tx = match call {
                OwnCall::CancelOrder => x.cancelOrder(order).into_transaction_request(),
                OwnCall::IncrementNonce => x.incrementNonce().into_transaction_request(),
            };
            let tx = if pending {
                // A gas limit of its own: estimated on the pending state, a cancel of an
                // order the pending settlement fills would revert.
                tx.max_priority_fee_per_gas(50_000_000_000).max_fee_per_gas(200_000_000_000).gas_limit(300_000)
            } else {
                tx
            };
            use alloy_provider::Provider;
            let sent = p.send_transaction(tx).await.unwrap();
            if !pending {
                assert!(sent.get_receipt().await.unwrap().status());
            }
        });
    }
}

pub(crate) fn wallet_provider_ro(url: &str) -> alloy_provider::DynProvider {
    wallet_provider(url, OTHER_KEY.parse().unwrap()).unwrap()
}

/// An order as the exchange takes it, from the JSON the client signed.
pub(crate) fn onchain_order(o: &Value) -> predex::chain::IExchange::Order {
    let u = |k: &str| alloy_primitives::U256::from_str_radix(o[k].as_str().unwrap(), 10).unwrap();
    let a = |k: &str| o[k].as_str().unwrap().parse().unwrap();
    predex::chain::IExchange::Order {
        salt: alloy_primitives::U256::from(o["salt"].as_u64().unwrap()),
        maker: a("maker"),
        signer: a("signer"),
        taker: a("taker"),
        tokenId: u("tokenId"),
        makerAmount: u("makerAmount"),
        takerAmount: u("takerAmount"),
        expiration: u("expiration"),
        nonce: u("nonce"),
        feeRateBps: u("feeRateBps"),
        side: if o["side"] == "BUY" { 0 } else { 1 },
        signatureType: o["signatureType"].as_u64().unwrap() as u8,
        signature: alloy_primitives::hex::decode(o["signature"].as_str().unwrap()).unwrap().into(),
    }
}

/// What a maker does on the exchange itself.
#[derive(Debug, Clone, Copy)]
pub(crate) enum OwnCall {
    CancelOrder,
    IncrementNonce,
}

/// predex as its binary, a child process to `kill -9`, in chain mode against what
/// `deployed` names, reaching the node at `rpc`; and a handle on its servers.
pub(crate) fn spawn_predex(data: &Path, deployed: &Config, key: &Path, rpc: &str) -> (crate::support::Proc, Server) {
    spawn_predex_with(data, deployed, key, rpc, &[])
}

/// [`spawn_predex`] with more settings (`PREDEX_*` variables).
pub(crate) fn spawn_predex_with(
    data: &Path,
    deployed: &Config,
    key: &Path,
    rpc: &str,
    more: &[(&str, String)],
) -> (crate::support::Proc, Server) {
    let s = |x: &Option<String>| x.clone().unwrap();
    let mut env = vec![
        ("PREDEX_SETTLEMENT", "chain".to_string()),
        ("PREDEX_CHAIN_ID", deployed.chain_id.to_string()),
        ("PREDEX_RPC_URL", rpc.to_string()),
        ("PREDEX_OPERATOR_KEY_FILE", key.display().to_string()),
        ("PREDEX_COLLATERAL_ADDRESS", s(&deployed.collateral_address)),
        ("PREDEX_CTF_ADDRESS", s(&deployed.ctf_address)),
        ("PREDEX_NEG_RISK_ADAPTER_ADDRESS", s(&deployed.neg_risk_adapter_address)),
        ("PREDEX_EXCHANGE_ADDRESS", deployed.exchange_address.clone()),
        ("PREDEX_NEG_RISK_EXCHANGE_ADDRESS", deployed.neg_risk_exchange_address.clone()),
        ("PREDEX_ORDER_VERSION", deployed.order_version.to_string()),
        ("PREDEX_EXCHANGE_V2_ADDRESS", deployed.exchange_v2_address.clone()),
        ("PREDEX_NEG_RISK_EXCHANGE_V2_ADDRESS", deployed.neg_risk_exchange_v2_address.clone()),
        ("PREDEX_SAFE_FACTORY_ADDRESS", deployed.safe_factory_address.clone()),
        ("PREDEX_SAFE_INIT_CODE_HASH", deployed.safe_init_code_hash.clone()),
        ("PREDEX_SAFE_MULTISEND_ADDRESS", deployed.safe_multisend_address.clone()),
        ("PREDEX_PROXY_FACTORY_ADDRESS", deployed.proxy_factory_address.clone()),
        ("PREDEX_PROXY_INIT_CODE_HASH", deployed.proxy_init_code_hash.clone()),
        ("PREDEX_RELAY_HUB_ADDRESS", deployed.relay_hub_address.clone()),
    ];
    env.extend(more.iter().cloned());
    let p = crate::support::spawn_with(data, &env);
    let mut server =
        Server::external(p.server.clob.clone(), p.server.internal.clone(), chain_config(data, deployed, key.into()));
    server.analytics = p.server.analytics.clone();
    server.catalogue = p.server.catalogue.clone();
    (p, server)
}
