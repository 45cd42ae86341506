//! `--chain-settlement`: settlement on a Polygon-shaped local chain (anvil, 2-second blocks,
//! a 30M block gas limit). The contracts are deployed, an in-process predex settles on
//! them, and funded wallets trade over HTTP:
//!
//! 1. gas per `matchOrders` for a taker against 1, 3 and 10 makers (mints, no fee);
//! 2. `--chain-rate` matches/s offered for `--duration` seconds (a maker's bid for YES and
//!    a taker's bid for NO at 0.50 each: one mint, one `matchOrders`), then the backlog
//!    drained: trades settled per second, each trade's time from its match to the block
//!    that settled it, the largest PENDING backlog seen, and the share of each block's gas
//!    the settlement used — which says whether the block's gas or predex is the limit.

use alloy_provider::Provider;
use predex::chain::{wallet_provider, ICollateral, IConditionalTokens};

use super::*;

/// anvil's first development account: deployer and operator.
const DEPLOYER_KEY: &str = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const BLOCK_GAS: u64 = 30_000_000;
const BLOCK_SECS: u64 = 2;

struct Anvil(std::process::Child);

impl Drop for Anvil {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let _anvil = Anvil(
        std::process::Command::new(&args.anvil)
            .args(["--host", "127.0.0.1", "--port", &port.to_string(), "--silent"])
            .args(["--gas-limit", &BLOCK_GAS.to_string()])
            .stdout(std::process::Stdio::null())
            .spawn()
            .with_context(|| format!("start anvil at {} (scripts/setup.sh installs it)", args.anvil.display()))?,
    );
    let rpc = format!("http://127.0.0.1:{port}");
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(bench(args, &rpc))
}

async fn bench(args: &Args, rpc: &str) -> anyhow::Result<()> {
    let v = Venue::start(args, rpc).await?;
    let gas = gas_per_match(&v).await?;
    let offered = offered_load(args, &v).await?;
    let summary = report(&v, gas, offered).await?;
    println!("{}", serde_json::to_string_pretty(&summary)?);
    std::fs::write(&args.out, serde_json::to_vec_pretty(&summary)?)?;
    v.app.shutdown().await;
    let _ = std::fs::remove_dir_all(&v.dir);
    Ok(())
}

/// The contracts deployed, an in-process predex settling on them, a market and funded
/// wallets.
struct Venue {
    app: predex::App,
    clob: SocketAddr,
    deployer: alloy_provider::DynProvider,
    domains: OrderDomains,
    yes: String,
    no: String,
    keys: Vec<Arc<Key>>,
    dir: std::path::PathBuf,
}

impl Venue {
    async fn start(args: &Args, rpc: &str) -> anyhow::Result<Venue> {
        let key: PrivateKeySigner = DEPLOYER_KEY.parse()?;
        let operator = key.address();
        let deployer = wallet_provider(rpc, key.clone())?;
        let t = Instant::now();
        while deployer.get_chain_id().await.is_err() {
            if t.elapsed() > Duration::from_secs(30) {
                bail!("anvil does not answer at {rpc}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let d = predex::chain::deploy::deploy_all(
            &deployer,
            &args.contracts_dir,
            operator,
            operator,
            None,
            1,
            predex::chain::deploy::Layout::Node,
        )
        .await?;
        let dir = std::env::temp_dir().join(format!("predex-loadgen-chain-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let key_file = dir.join("operator.key");
        std::fs::write(&key_file, DEPLOYER_KEY)?;
        std::fs::set_permissions(&key_file, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
        let config = Config {
            settlement: predex::config::Settlement::Chain,
            chain_id: d.chain_id,
            rpc_url: Some(rpc.to_string()),
            operator_key_file: Some(key_file),
            collateral_address: Some(format!("{:#x}", d.collateral)),
            ctf_address: Some(format!("{:#x}", d.ctf)),
            neg_risk_adapter_address: Some(format!("{:#x}", d.neg_risk_adapter)),
            exchange_address: format!("{:#x}", d.exchange),
            neg_risk_exchange_address: format!("{:#x}", d.neg_risk_exchange),
            settlement_interval_ms: 250,
            ..local_config(dir.join("data"))?
        };
        let domains = OrderDomains::new(&config.order_domain_name, d.chain_id, d.exchange, d.neg_risk_exchange);
        let app = predex::App::start(config).await?;
        let (clob, internal) = (
            app.bound.clob,
            predex::client::Operator::new(app.bound.internal, app.state.access.internal_token.to_string()),
        );

        let (st, m) = internal.call("POST", "/internal/markets", Some(json!({"question": "Chain bench?"}))).await;
        if st != 200 {
            bail!("create market: {st} {m}");
        }
        let yes = m["tokens"][0]["token_id"].as_str().context("YES token")?.to_string();
        let no = m["tokens"][1]["token_id"].as_str().context("NO token")?.to_string();

        // Wallets: gas, collateral and the exchange's approvals, on chain (mined at once).
        let mut keys = Vec::new();
        for i in 0..WALLETS {
            let k = open_key(clob, &internal, &format!("chain{i}@example.com"), d.chain_id).await?;
            let me = k.wallet.address();
            deployer.raw_request::<_, Value>("anvil_setBalance".into(), (me, U256::from(10u128.pow(21)))).await?;
            // predex sends with the same key: a provider of its own, which reads the nonce afresh.
            let minter = wallet_provider(rpc, key.clone())?;
            let c = ICollateral::new(d.collateral, &minter);
            c.mint(me, U256::from(1_000_000_000_000u64)).send().await?.get_receipt().await?;
            let p = wallet_provider(rpc, k.wallet.clone())?;
            let c = ICollateral::new(d.collateral, &p);
            for x in [d.exchange, d.neg_risk_exchange] {
                c.approve(x, U256::MAX).send().await?.get_receipt().await?;
            }
            IConditionalTokens::new(d.ctf, &p).setApprovalForAll(d.exchange, true).send().await?.get_receipt().await?;
            keys.push(Arc::new(k));
        }
        eprintln!("chain: contracts deployed, {WALLETS} wallets funded and approved");
        Ok(Venue { app, clob, deployer, domains, yes, no, keys, dir })
    }
}

const WALLETS: usize = 24;

/// Phase 1: gas per matchOrders, 1, 3 and 10 makers (automine: one transaction each).
async fn gas_per_match(v: &Venue) -> anyhow::Result<BTreeMap<usize, u64>> {
    let mut gas = BTreeMap::new();
    for n in [1usize, 3, 10] {
        for k in &v.keys[..n] {
            place(v.clob, k, &v.domains, &v.yes, 5_000, 5_000_000).await?;
        }
        let taker = &v.keys[n];
        let placed = place(v.clob, taker, &v.domains, &v.no, 5_000, 5_000_000 * n as u64).await?;
        let trade = placed["tradeIds"][0].as_str().context("a match")?.to_string();
        let hash = settled_hash(&v.app, &trade).await?;
        let r = v.deployer.get_transaction_receipt(hash.parse()?).await?.context("receipt")?;
        gas.insert(n, r.gas_used);
        eprintln!("chain: matchOrders with {n} makers: {} gas", r.gas_used);
    }
    Ok(gas)
}

/// What the offered load left: each match's trade and time, and the figures of the run.
struct Offered {
    first_block: u64,
    total: usize,
    offered_s: f64,
    matched: Vec<(String, f64)>,
    max_backlog: i64,
}

/// Phase 2, Polygon's shape (a block every 2 s): `--chain-rate` matches a second for
/// `--duration`, then the backlog drained.
async fn offered_load(args: &Args, v: &Venue) -> anyhow::Result<Offered> {
    let deployer = &v.deployer;
    deployer.raw_request::<_, Value>("evm_setAutomine".into(), (false,)).await?;
    deployer.raw_request::<_, Value>("evm_setIntervalMining".into(), (BLOCK_SECS,)).await?;
    let first_block = deployer.get_block_number().await?;
    let rate = args.chain_rate.max(1);
    let interval = Duration::from_secs_f64(1.0 / rate as f64);
    let total = (rate as f64 * args.duration) as usize;
    let mut matched: Vec<(String, f64)> = Vec::with_capacity(total);
    let mut max_backlog = 0;
    let start = Instant::now();
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut inflight = tokio::task::JoinSet::new();
    let clob = v.clob;
    for i in 0..total {
        tick.tick().await;
        let (maker, taker) = (v.keys[(2 * i) % WALLETS].clone(), v.keys[(2 * i + 1) % WALLETS].clone());
        let (yes, no, domains) = (v.yes.clone(), v.no.clone(), v.domains.clone());
        inflight.spawn(async move {
            place(clob, &maker, &domains, &yes, 5_000, 5_000_000).await?;
            let placed = place(clob, &taker, &domains, &no, 5_000, 5_000_000).await?;
            let at = unix_secs();
            anyhow::Ok((placed["tradeIds"][0].as_str().unwrap_or_default().to_string(), at))
        });
        max_backlog = max_backlog.max(v.app.state.exported.pending_trades.get());
    }
    while let Some(r) = inflight.join_next().await {
        let (trade, at) = r??;
        if !trade.is_empty() {
            matched.push((trade, at));
        }
    }
    let offered_s = start.elapsed().as_secs_f64();
    // Drained: every trade settled (or given up after two minutes).
    let drain = Instant::now();
    loop {
        let pending = v.app.state.exported.pending_trades.get();
        max_backlog = max_backlog.max(pending);
        if pending == 0 || drain.elapsed() > Duration::from_secs(120) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(Offered { first_block, total, offered_s, matched, max_backlog })
}

/// The blocks' time and gas, the settlement's share of it, and each trade's time from its
/// match to the block that settled it.
async fn report(v: &Venue, gas: BTreeMap<usize, u64>, o: Offered) -> anyhow::Result<Value> {
    let deployer = &v.deployer;
    let last_block = deployer.get_block_number().await?;
    let mut block_time = HashMap::new();
    let mut shares = Vec::new();
    for b in o.first_block + 1..=last_block {
        let Some(block) = deployer.get_block_by_number(b.into()).await? else { continue };
        block_time.insert(b, block.header.timestamp as f64);
        if block.header.gas_used > 0 {
            shares.push(block.header.gas_used as f64 / block.header.gas_limit as f64);
        }
    }
    let (mut latencies, mut confirmed, mut last_settled) = (Vec::new(), 0usize, 0f64);
    let mut receipts: HashMap<String, u64> = HashMap::new();
    for (id, at) in &o.matched {
        let Some(t) = v.app.state.store.get_trade(&id.parse()?)? else { continue };
        if t.status != predex::domain::TradeStatus::Confirmed {
            continue;
        }
        let block = match receipts.get(&t.transaction_hash) {
            Some(b) => *b,
            None => {
                let r = deployer.get_transaction_receipt(t.transaction_hash.parse()?).await?.context("receipt")?;
                let b = r.block_number.unwrap_or_default();
                receipts.insert(t.transaction_hash.clone(), b);
                b
            }
        };
        if let Some(ts) = block_time.get(&block) {
            confirmed += 1;
            latencies.push((ts - at).max(0.0));
            last_settled = last_settled.max(*ts);
        }
    }
    latencies.sort_by(|a, b| a.total_cmp(b));
    let q = |p: f64| latencies.get(((latencies.len() as f64 - 1.0) * p).round() as usize).copied().unwrap_or(0.0);
    let first_match = o.matched.iter().map(|m| m.1).fold(f64::MAX, f64::min);
    let settled_per_s = confirmed as f64 / (last_settled - first_match).max(1.0);
    let share_max = shares.iter().copied().fold(0.0, f64::max);
    let share_mean = shares.iter().sum::<f64>() / shares.len().max(1) as f64;
    let limit = if share_max > 0.9 { "the block's gas" } else { "predex (blocks not full)" };
    Ok(json!({
        "phase": "chain-settlement",
        "block_seconds": BLOCK_SECS,
        "block_gas_limit": BLOCK_GAS,
        "gas_per_match_orders": gas.iter().map(|(n, g)| (format!("{n}_makers"), json!(g))).collect::<serde_json::Map<_, _>>(),
        "matches_offered_per_s": o.total as f64 / o.offered_s,
        "matches": o.matched.len(),
        "confirmed": confirmed,
        "settled_per_s": settled_per_s,
        "match_to_block_s": {"p50": q(0.5), "p99": q(0.99), "max": q(1.0)},
        "max_pending_backlog": o.max_backlog,
        "block_gas_share": {"mean": share_mean, "max": share_max},
        "limit": limit,
    }))
}

fn unix_secs() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// A signed GTC BUY of `size` tokens at `price` (1e-4), placed; its result.
async fn place(
    clob: SocketAddr,
    k: &Key,
    domains: &OrderDomains,
    token: &str,
    price: u64,
    size: u64,
) -> anyhow::Result<Value> {
    let cost = size * price / 10_000;
    let salt = rand_u64();
    let f = SignedOrderFields {
        salt: U256::from(salt),
        maker: k.maker,
        signer: k.wallet.address(),
        taker: Address::ZERO,
        token_id: U256::from_str_radix(token, 10)?,
        maker_amount: U256::from(cost),
        taker_amount: U256::from(size),
        expiration: U256::ZERO,
        nonce: U256::ZERO,
        fee_rate_bps: U256::ZERO,
        side: 0,
        signature_type: 0,
    };
    let sig = k.wallet.sign_hash_sync(&auth::order_hash(&f, &domains.standard))?;
    let body = json!({"order": {
        "salt": salt, "maker": format!("{:#x}", k.maker), "signer": k.address, "taker": format!("{:#x}", Address::ZERO),
        "tokenId": token, "makerAmount": cost.to_string(), "takerAmount": size.to_string(), "expiration": "0",
        "nonce": "0", "feeRateBps": "0", "side": "BUY", "signatureType": 0,
        "signature": format!("0x{}", alloy_primitives::hex::encode(sig.as_bytes())),
    }, "owner": k.key, "orderType": "GTC"});
    let bytes = serde_json::to_vec(&body)?;
    let headers = k.l2("POST", "/order", &bytes);
    let (st, b) = call(clob, "POST", "/order", &headers, Some(body)).await;
    if st != 200 {
        bail!("POST /order: {st} {b}");
    }
    Ok(b)
}

fn rand_u64() -> u64 {
    let mut b = [0u8; 8];
    getrandom::getrandom(&mut b).expect("random bytes");
    u64::from_le_bytes(b) >> 12
}

/// The hash of the transaction that confirmed `trade`, once it did.
async fn settled_hash(app: &predex::App, trade: &str) -> anyhow::Result<String> {
    let id = trade.parse()?;
    let t = Instant::now();
    loop {
        if let Some(r) = app.state.store.get_trade(&id)? {
            match r.status {
                predex::domain::TradeStatus::Confirmed => return Ok(r.transaction_hash),
                predex::domain::TradeStatus::Failed => bail!("trade {trade} failed: {:?}", r.error_msg),
                _ => {}
            }
        }
        if t.elapsed() > Duration::from_secs(60) {
            bail!("trade {trade} not settled in 60 s");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
