//! Chain mode against a real EVM: each test starts its own anvil (installed by
//! scripts/setup.sh; a test fails when it is missing), deploys the contracts with
//! `predex chain deploy`, and starts predex against them.

use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::Duration;

use predex::chain::wallet_provider;
use predex::config::{Config, Settlement};
use serde_json::{json, Value};

use crate::support::chain::*;
use crate::support::{Server, Trader};

/// Starts predex and returns why it refused to (the error's whole chain, one line).
fn refusal(c: Config) -> String {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async move {
        match predex::App::start(c).await {
            Ok(app) => {
                app.shutdown().await;
                panic!("started");
            }
            Err(e) => format!("{e:#}"),
        }
    })
}

#[test]
fn deploy_prints_the_settings_and_predex_starts_only_against_them() {
    let anvil = Anvil::start();
    let dir = tempfile::tempdir().unwrap();
    let key = key_file(dir.path(), "operator.key", DEPLOYER_KEY);
    let deployed = deploy(&anvil, &key, &root().join("contracts"), &[]);
    assert_eq!(deployed.settlement, Settlement::Chain);
    assert_eq!(deployed.chain_id, ANVIL_CHAIN_ID);
    assert_eq!(deployed.rpc_url.as_deref(), Some(anvil.url.as_str()));
    let addresses = [
        deployed.collateral_address.clone().unwrap(),
        deployed.ctf_address.clone().unwrap(),
        deployed.neg_risk_adapter_address.clone().unwrap(),
        deployed.exchange_address.clone(),
        deployed.neg_risk_exchange_address.clone(),
    ];
    for a in &addresses {
        let code = anvil.rpc("eth_getCode", json!([a, "latest"])).unwrap();
        assert!(code.as_str().unwrap().len() > 2, "no code at {a}");
    }

    let data = tempfile::tempdir().unwrap();
    let good = chain_config(data.path(), &deployed, key.clone());

    // The node is another chain than the one configured.
    let e = refusal(Config { chain_id: 137, ..good.clone() });
    assert!(e.contains("is chain 31337, not the configured chain-id 137"), "{e}");
    // The key is no operator of the exchanges.
    let other = key_file(dir.path(), "other.key", OTHER_KEY);
    let e = refusal(Config { operator_key_file: Some(other), ..good.clone() });
    assert!(e.contains("is not an operator of the exchange"), "{e}");
    // The order domain's name is not the one the exchanges were built with.
    let e = refusal(Config { order_domain_name: "Polymarket CTF Exchange".into(), ..good.clone() });
    assert!(e.contains("hashes orders under another EIP-712 domain"), "{e}");
    // The two exchanges swapped.
    let e = refusal(Config {
        exchange_address: good.neg_risk_exchange_address.clone(),
        neg_risk_exchange_address: good.exchange_address.clone(),
        ..good.clone()
    });
    assert!(e.contains("moves positions through") && e.contains("not ctf-address"), "{e}");
    // Another collateral than the exchanges'.
    let e = refusal(Config { collateral_address: good.ctf_address.clone(), ..good.clone() });
    assert!(e.contains("not collateral-address"), "{e}");
    // An address with no contract.
    let e = refusal(Config {
        ctf_address: Some(format!("{:#x}", alloy_primitives::Address::repeat_byte(0x42))),
        ..good.clone()
    });
    assert!(e.contains("ctf-address 0x4242424242424242424242424242424242424242 holds no contract"), "{e}");
    // A key file that holds no key; its content is not repeated.
    let bad = key_file(dir.path(), "bad.key", "not-a-key-but-a-secret");
    let e = refusal(Config { operator_key_file: Some(bad), ..good.clone() });
    assert!(e.contains("does not hold a hex private key") && !e.contains("not-a-key-but-a-secret"), "{e}");
    // Chain mode with a setting missing.
    let e = refusal(Config { rpc_url: None, ..good.clone() });
    assert!(e.contains("settlement = \"chain\" needs rpc-url"), "{e}");

    // Right: it starts, and the faucet is closed.
    let s = Server::start_with(good);
    let (st, b) = s.get("/ok");
    assert_eq!(st, 200, "{b}");
    let (st, b) = s.internal_post(
        "/internal/ledger/credit",
        &json!({"address": "0x70997970C51812dc3A010C7d01b50e0d17dc79C8", "asset": "USDC", "amount": "1000000"}),
    );
    assert_eq!(st, 409, "{b}");
    assert!(b["error"].as_str().unwrap().contains("faucet is closed in chain mode"), "{b}");
}

/// `chain deploy --polygon-layout` puts every contract where Polymarket's clients hard-code
/// it — and the wallets' init-code hashes come out as Polygon's — only on an anvil with
/// Polygon's chain id, and only once.
#[test]
fn the_polygon_layout_puts_every_contract_at_its_polygon_address() {
    let dir = tempfile::tempdir().unwrap();
    let key = key_file(dir.path(), "operator.key", DEPLOYER_KEY);
    let contracts = root().join("contracts");
    let run = |anvil: &Anvil, extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_predex"))
            .args(["chain", "deploy", "--rpc-url", &anvil.url, "--key-file"])
            .arg(&key)
            .arg("--contracts-dir")
            .arg(&contracts)
            .args(extra)
            .output()
            .unwrap()
    };
    let other = Anvil::start();
    let out = run(&other, &["--polygon-layout"]);
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("needs Polygon's chain id 137"), "{e}");
    assert!(other.rpc("eth_getCode", json!(["0x4D97DCd97eC945f40cF65F87097ACe5EA0476045", "latest"])).unwrap() == "0x");

    let anvil = Anvil::start_with(&["--chain-id", "137"]);
    let d = deploy(&anvil, &key, &contracts, &["--polygon-layout"]);
    let low = |x: &str| x.to_lowercase();
    let polygon = [
        (d.collateral_address.as_deref().unwrap(), "0x2791Bca1f2de4661ED88A30C99A7a9449Aa84174"),
        (d.ctf_address.as_deref().unwrap(), "0x4D97DCd97eC945f40cF65F87097ACe5EA0476045"),
        (d.neg_risk_adapter_address.as_deref().unwrap(), "0xd91E80cF2E7be2e162c6513ceD06f1dD0dA35296"),
        (&d.exchange_address, predex::config::DEFAULT_EXCHANGE),
        (&d.neg_risk_exchange_address, predex::config::DEFAULT_NEG_RISK_EXCHANGE),
        (&d.safe_factory_address, predex::auth::wallets::POLYGON_SAFE_FACTORY),
        (&d.safe_init_code_hash, predex::auth::wallets::POLYGON_SAFE_INIT_CODE_HASH),
        (&d.safe_multisend_address, "0xA238CBeb142c10Ef7Ad8442C6D1f9E89e07e7761"),
        (&d.proxy_factory_address, predex::auth::wallets::POLYGON_PROXY_FACTORY),
        (&d.proxy_init_code_hash, predex::auth::wallets::POLYGON_PROXY_INIT_CODE_HASH),
        (&d.relay_hub_address, "0xD216153c06E857cD7f72665E0aF1d7D82172F494"),
    ];
    for (got, want) in polygon {
        assert_eq!(low(got), low(want));
    }
    for at in [predex::config::DEFAULT_EXCHANGE, predex::chain::deploy::POLYGON_SAFE_MASTER_COPY] {
        let code = anvil.rpc("eth_getCode", json!([at, "latest"])).unwrap();
        assert!(code.as_str().unwrap().len() > 1000, "no contract at {at}");
    }
    // The contracts were made as deployed there: the exchange hashes orders under its own
    // address and knows its collateral, and the scratch code is gone.
    let p = wallet_provider(&anvil.url, OTHER_KEY.parse().unwrap()).unwrap();
    let exchange: alloy_primitives::Address = predex::config::DEFAULT_EXCHANGE.parse().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let collateral =
        rt.block_on(async { predex::chain::IExchange::new(exchange, &p).getCollateral().call().await }).unwrap();
    assert_eq!(low(&collateral.to_string()), low(d.collateral_address.as_deref().unwrap()));
    assert_eq!(
        anvil.rpc("eth_getCode", json!(["0x00000000000000000000000000000000005ca7c4", "latest"])).unwrap(),
        "0x"
    );

    // Once: a second run finds the contracts there.
    let out = run(&anvil, &["--polygon-layout"]);
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("already has code"), "{e}");
}

#[test]
fn the_exchanges_built_under_polymarkets_domain_name_check_with_that_setting() {
    let anvil = Anvil::start();
    let dir = tempfile::tempdir().unwrap();
    let contracts = dir.path().join("contracts");
    build_contracts(&contracts, predex::auth::POLYMARKET_ORDER_DOMAIN);
    let other = key_file(dir.path(), "other.key", OTHER_KEY);
    let key = key_file(dir.path(), "operator.key", DEPLOYER_KEY);
    // The operator is another account than the deployer: deploy makes it one.
    let operator = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
    let deployed = deploy(&anvil, &key, &contracts, &["--operator", operator]);
    let data = tempfile::tempdir().unwrap();
    let good = chain_config(data.path(), &deployed, other);
    let e = refusal(good.clone());
    assert!(e.contains("hashes orders under another EIP-712 domain"), "{e}");
    let s = Server::start_with(Config { order_domain_name: predex::auth::POLYMARKET_ORDER_DOMAIN.into(), ..good });
    assert_eq!(s.get("/ok").0, 200);
    drop(s);

    // Under that name a match settles, and one the exchange refuses fails.
    let v = Venue::start_from(&contracts, predex::auth::POLYMARKET_ORDER_DOMAIN);
    let (_, yes, no) = v.market();
    let (alice, bob) = (v.trader(100_000_000, true), v.trader(100_000_000, true));
    alice.place(&v.server, &yes, "BUY", "0.50", "20");
    let (st, b) = bob.submit(&v.server, bob.order(&v.server, &no, "BUY", "0.50", "20"), "GTC");
    assert_eq!((st, &b["status"]), (200, &json!("MATCHED")), "{b}");
    assert_eq!(settled(&v, &bob)["status"], "CONFIRMED");
    assert_eq!(v.holdings(&alice, &[&yes]), (90_000_000, vec![20_000_000]));
    assert_eq!(v.holdings(&bob, &[&no]), (90_000_000, vec![20_000_000]));
    refused_match_fails(&v, OwnCall::CancelOrder, "OrderFilledOrCancelled");
}

#[test]
fn markets_are_made_on_chain_and_balances_come_from_it() {
    let v = Venue::start();
    let s = &v.server;
    let (cond, yes, no) = a_binary_market_comes_from_the_chain_and_a_retry_is_the_same(&v);
    what_the_chain_decides_is_not_the_operators_to_give(s);
    outcome_labels_without_ids_are_the_markets(s);
    the_operator_cli_makes_a_market_from_a_question(&v);
    let market_id = negative_risk_questions_share_one_adapter_market(&v);
    let (alice, carol) = balances_are_the_wallets_and_allowances_by_spender(&v);
    a_buy_needs_the_allowance_of_its_markets_exchange(&v, &yes);
    a_strangers_order_naming_anothers_wallet_is_refused(s, &carol, &alice, &yes);
    what_moves_balances_the_chain_does_not_hold_is_refused(s, &alice, &cond, &market_id);
    orders_need_the_balance_and_allowance_on_chain(&v, &alice, &carol, (&yes, &no));
}

/// The condition and its tokens come from the chain; retried with its question id, the
/// same market. Returns the condition and the YES and NO tokens.
fn a_binary_market_comes_from_the_chain_and_a_retry_is_the_same(v: &Venue) -> (String, String, String) {
    let s = &v.server;
    let (st, m) = s.internal_post("/internal/markets", &json!({"question": "Will it rain?", "slug": "rain"}));
    assert_eq!(st, 200, "{m}");
    let (cond, q) = (m["condition_id"].as_str().unwrap().to_string(), m["question_id"].clone());
    let yes = m["tokens"][0]["token_id"].as_str().unwrap().to_string();
    let no = m["tokens"][1]["token_id"].as_str().unwrap().to_string();
    assert_eq!(v.registered(v.exchange(), &yes), cond);
    assert_eq!(v.registered(v.exchange(), &no), cond);
    // Retried with its question id: the same market.
    let (st, again) = s.internal_post("/internal/markets", &json!({"question": "Will it rain?", "question_id": q}));
    assert_eq!(st, 200, "{again}");
    assert_eq!(
        (again["condition_id"].clone(), again["tokens"].clone()),
        (m["condition_id"].clone(), m["tokens"].clone())
    );
    (cond, yes, no)
}

/// Bad input sends nothing.
fn what_the_chain_decides_is_not_the_operators_to_give(s: &Server) {
    let (st, b) = s.internal_post(
        "/internal/markets",
        &json!({"question": "Q", "condition_id": "0x01", "tokens": [{"token_id": "1", "outcome": "Yes"}, {"token_id": "2", "outcome": "No"}]}),
    );
    assert_eq!(st, 400, "{b}");
    let (st, b) = s.internal_post("/internal/markets", &json!({"question": "Q", "tick_size": "0.02"}));
    assert_eq!((st, b["error"].as_str().unwrap()), (400, "tick_size must be 0.1, 0.01, 0.001 or 0.0001"));
    let (st, b) = s.internal_post("/internal/markets", &json!({"question": "Q", "question_id": "0x12"}));
    assert_eq!((st, b["error"].as_str().unwrap()), (400, "question_id must be 32 bytes of hex"));
    for tokens in [json!([{"outcome": "Up"}]), json!([{"outcome": "Up"}, {"outcome": " "}])] {
        let (st, b) = s.internal_post("/internal/markets", &json!({"question": "Q", "tokens": tokens}));
        assert_eq!((st, b["error"].as_str().unwrap()), (400, "a binary market has exactly two outcomes, each named"));
    }
}

/// Outcomes named without token ids: the chain makes the ids, the labels are the body's.
fn outcome_labels_without_ids_are_the_markets(s: &Server) {
    let body = json!({"question": "Up or down?", "tokens": [{"outcome": "Up"}, {"outcome": "Down"}]});
    let (st, m) = s.internal_post("/internal/markets", &body);
    assert_eq!(st, 200, "{m}");
    let outcomes: Vec<_> = m["tokens"].as_array().unwrap().iter().map(|t| t["outcome"].clone()).collect();
    assert_eq!(outcomes, [json!("Up"), json!("Down")], "{m}");
    assert!(m["tokens"][0]["token_id"].as_str().is_some_and(|id| id.len() > 10), "{m}");
}

/// A question alone.
fn the_operator_cli_makes_a_market_from_a_question(v: &Venue) {
    let s = &v.server;
    let (ok, made, err) = crate::admin::admin(s, &["markets", "create", "--question", "Will it snow?"]);
    assert!(ok, "{err}");
    let snow_yes = made["tokens"][0]["token_id"].as_str().unwrap();
    assert_eq!(v.registered(v.exchange(), snow_yes), made["condition_id"].as_str().unwrap());
}

/// Questions of one adapter market, on the negative-risk exchange. Returns the market id.
fn negative_risk_questions_share_one_adapter_market(v: &Venue) -> String {
    let s = &v.server;
    let (st, a) = s.internal_post("/internal/markets", &json!({"question": "Candidate A?", "neg_risk": true}));
    assert_eq!(st, 200, "{a}");
    let market_id = a["neg_risk_market_id"].as_str().unwrap().to_string();
    let (st, b) = s.internal_post(
        "/internal/markets",
        &json!({"question": "Candidate B?", "neg_risk": true, "neg_risk_market_id": market_id}),
    );
    assert_eq!(st, 200, "{b}");
    assert_eq!(b["neg_risk_market_id"], a["neg_risk_market_id"]);
    assert_ne!(b["question_id"], a["question_id"]);
    let b_yes = b["tokens"][0]["token_id"].as_str().unwrap();
    assert_eq!(v.registered(v.neg_risk_exchange(), b_yes), b["condition_id"].as_str().unwrap());
    assert_eq!(v.registered(v.exchange(), b_yes), format!("{}", alloy_primitives::B256::ZERO));
    let (st, again) = s.internal_post(
        "/internal/markets",
        &json!({"question": "Candidate B?", "neg_risk": true, "question_id": b["question_id"]}),
    );
    assert_eq!(st, 200, "{again}");
    assert_eq!(again["condition_id"], b["condition_id"]);
    market_id
}

/// Alice approved the exchanges, Carol did not: each one's balance is its wallet's, and
/// the allowances are by spender, as read from the chain.
fn balances_are_the_wallets_and_allowances_by_spender(v: &Venue) -> (Trader, Trader) {
    let s = &v.server;
    let alice = v.trader(100_000_000, true);
    let carol = v.trader(100_000_000, false);
    let spenders = [
        format!("{}", v.exchange()),
        format!("{}", v.neg_risk_exchange()),
        format!("{}", Venue::address(&v.deployed.neg_risk_adapter_address)),
    ];
    let max = alloy_primitives::U256::MAX.to_string();
    for (t, allowed) in [(&alice, [max.as_str(), max.as_str(), "0"]), (&carol, ["0", "0", "0"])] {
        let (st, b) = t.l2(s, "GET", "/balance-allowance/update", None);
        assert_eq!((st, b["balance"].as_str().unwrap()), (200, "100000000"), "{b}");
        let (st, b) = t.l2(s, "GET", "/balance-allowance", None);
        assert_eq!(st, 200, "{b}");
        let want: serde_json::Map<String, Value> =
            spenders.iter().zip(allowed).map(|(k, a)| (k.clone(), json!(a))).collect();
        assert_eq!((b["balance"].clone(), b["allowances"].clone()), (json!("100000000"), Value::Object(want)), "{b}");
    }
    (alice, carol)
}

/// A wallet that approved only the standard exchange buys in its markets and is refused in
/// the negative-risk exchange's.
fn a_buy_needs_the_allowance_of_its_markets_exchange(v: &Venue, yes: &str) {
    use predex::chain::ICollateral;
    let s = &v.server;
    let dave = v.trader(100_000_000, false);
    let (url, wallet, collateral, exchange) =
        (v.anvil.url.clone(), dave.wallet.clone(), Venue::address(&v.deployed.collateral_address), v.exchange());
    v.rt.block_on(async move {
        let p = wallet_provider(&url, wallet).unwrap();
        let c = ICollateral::new(collateral, &p);
        let r = c.approve(exchange, alloy_primitives::U256::from(30_000_000u64)).send().await.unwrap();
        assert!(r.get_receipt().await.unwrap().status());
    });
    let (st, nr) = s.internal_post("/internal/markets", &json!({"question": "Candidate C?", "neg_risk": true}));
    assert_eq!(st, 200, "{nr}");
    let nr_yes = nr["tokens"][0]["token_id"].as_str().unwrap();
    let (st, b) = dave.submit(s, dave.signed(nr_yes, "BUY", 5_000_000, 10_000_000).neg_risk().sign(s), "GTC");
    assert_eq!((st, b["error"].as_str().unwrap_or_default()), (400, "not enough balance / allowance"), "{b}");
    dave.place(s, yes, "BUY", "0.10", "200");
    // The allowance covers what its open orders hold and no more.
    let (st, b) = dave.submit(s, dave.order(s, yes, "BUY", "0.10", "101"), "GTC");
    assert_eq!((st, b["error"].as_str().unwrap_or_default()), (400, "not enough balance / allowance"), "{b}");
    dave.place(s, yes, "BUY", "0.10", "100");
}

/// A stranger's order naming Alice as its proxy or Safe maker is refused, and its balance
/// reads are its own derived wallets' (empty), never Alice's.
fn a_strangers_order_naming_anothers_wallet_is_refused(s: &Server, carol: &Trader, alice: &Trader, yes: &str) {
    for t in [1u8, 2] {
        let o = carol.signed(yes, "BUY", 5_000_000, 10_000_000).maker(alice.wallet.address(), t).sign(s);
        assert_eq!(crate::support::err(carol.submit(s, o, "GTC")), (400, "invalid signature".into()));
        for path in ["/balance-allowance", "/balance-allowance/update"] {
            let (st, b) = carol.l2(s, "GET", &format!("{path}?signature_type={t}"), None);
            assert_eq!((st, b["balance"].as_str().unwrap()), (200, "0"), "{path} {t}: {b}");
        }
    }
}

/// The bridge, bonds, the relay's by-name operations: refused in chain mode, nothing moved.
fn what_moves_balances_the_chain_does_not_hold_is_refused(s: &Server, alice: &Trader, cond: &str, market_id: &str) {
    let refused = |base: &str, path: &str, body: Value| {
        let (st, b) = alice.l2_at(base, "POST", path, Some(&body));
        assert_eq!((st, b["error"].as_str()), (409, Some("not available in chain mode")), "{path}: {b}");
    };
    refused(&s.bridge, "/deposit", json!({"address": alice.address}));
    refused(
        &s.bridge,
        "/withdraw",
        json!({"address": alice.address, "toChainId": "137",
        "toTokenAddress": "0x2791bca1f2de4661ed88a30c99a7a9449aa84174", "recipientAddr": alice.address,
        "fromAmountBaseUnit": "10000000"}),
    );
    refused(&s.clob, "/bonds/post", json!({"conditionId": cond, "amount": "1000000"}));
    // Split, merge and redeem are prepared for the wallet to send (chain_wallets), not run.
    let (st, b) = alice.l2(s, "POST", "/ctf/split", Some(&json!({"conditionId": cond, "amount": "1000000"})));
    assert_eq!((st, b["transaction"]["value"].as_str()), (200, Some("0")), "{b}");
    // A conversion likewise (chain_wallets).
    let (st, b) =
        alice.l2(s, "POST", "/ctf/convert", Some(&json!({"marketId": market_id, "indexSet": "1", "amount": "1"})));
    assert_eq!((st, b["transaction"]["value"].as_str()), (200, Some("0")), "{b}");
    refused(&s.clob, "/submit", json!({"operation": "incrementNonce"}));
    let (st, b) = alice.l2(s, "GET", "/balance-allowance/update", None);
    assert_eq!((st, b["balance"].as_str().unwrap()), (200, "100000000"), "nothing moved: {b}");
}

/// No allowance: refused, before and after the update. Alice's first order reads her
/// balance from the chain; Bob's buy of NO against it is a mint, PENDING until settled.
fn orders_need_the_balance_and_allowance_on_chain(v: &Venue, alice: &Trader, carol: &Trader, (yes, no): (&str, &str)) {
    let s = &v.server;
    let (st, b) = carol.submit(s, carol.order(s, yes, "BUY", "0.50", "10"), "GTC");
    assert_eq!((st, b["error"].as_str().unwrap_or_default()), (400, "not enough balance / allowance"), "{b}");
    let (st, b) = alice.submit(s, alice.order(s, yes, "BUY", "0.50", "201"), "GTC");
    assert_eq!((st, b["error"].as_str().unwrap_or_default()), (400, "not enough balance / allowance"), "{b}");
    alice.place(s, yes, "BUY", "0.50", "200");
    let bob = v.trader(50_000_000, true);
    let (st, b) = bob.submit(s, bob.order(s, no, "BUY", "0.50", "100"), "GTC");
    assert_eq!(st, 200, "{b}");
    assert_eq!(b["status"], "MATCHED", "{b}");
    let (st, b) = bob.l2(s, "GET", "/balance-allowance", None);
    assert_eq!((st, b["balance"].as_str().unwrap()), (200, "0"), "{b}");
}

/// Waits until the trader's newest trade is no longer PENDING; returns it.
pub(crate) fn settled(v: &Venue, t: &crate::support::Trader) -> Value {
    crate::support::wait_for(60, || {
        let (st, b) = t.l2(&v.server, "GET", "/data/trades", None);
        let newest = b["data"][0].clone();
        // Not settled yet: PENDING (a version 2 venue says MATCHED, as Polymarket) or MINED.
        let settling = ["PENDING", "MATCHED", "MINED"].iter().any(|x| newest["status"] == *x);
        (st == 200 && newest.is_object() && !settling).then_some(newest)
    })
}

#[test]
fn matches_settle_on_chain_through_the_exchange() {
    let v = Venue::start();
    let s = &v.server;
    let (_, yes, no) = v.market();
    let alice = v.trader(100_000_000, true);
    let bob = v.trader(100_000_000, true);
    let carol = v.trader(100_000_000, true);
    let mut feed = crate::support::user_channel(s, &bob, json!([]));
    std::thread::sleep(Duration::from_millis(100));

    // A mint: BUY YES against BUY NO. Both pay 50 USDC, each gets 100 tokens.
    alice.place(s, &yes, "BUY", "0.50", "100");
    let (st, b) = bob.submit(s, bob.order(s, &no, "BUY", "0.50", "100"), "GTC");
    assert_eq!((st, &b["status"]), (200, &json!("MATCHED")), "{b}");
    let t = settled(&v, &bob);
    assert_eq!(t["status"], "CONFIRMED", "{t}");
    let hash = t["transaction_hash"].as_str().unwrap();
    assert_eq!(v.receipt_status(hash), 1);
    // Bob's feed: the trade MATCHED, then MINED and CONFIRMED by that transaction.
    let trades: Vec<Value> =
        feed.drain(Duration::from_millis(300)).into_iter().filter(|m| m["event_type"] == "trade").collect();
    let steps: Vec<_> = trades.iter().map(|m| (m["status"].as_str().unwrap(), m["transaction_hash"].clone())).collect();
    assert_eq!(steps, [("MATCHED", json!("")), ("MINED", json!(hash)), ("CONFIRMED", json!(hash))], "{trades:?}");
    assert_eq!(v.holdings(&alice, &[&yes, &no]), (50_000_000, vec![100_000_000, 0]));
    assert_eq!(v.holdings(&bob, &[&yes, &no]), (50_000_000, vec![0, 100_000_000]));

    // A plain match: Carol buys 40 YES from Alice at 0.60 (the maker's price). Their salts
    // are wider than 64 bits, up to 2²⁵⁶−1: the exchange checks each signature over the
    // salt it is given, so the match settles only with the salts kept whole.
    let sell = alice
        .signed(&yes, "SELL", 40_000_000, 24_000_000)
        .salt(alloy_primitives::U256::from(u64::MAX) + alloy_primitives::U256::from(1))
        .sign(s);
    let (st, b) = alice.submit(s, sell, "GTC");
    assert_eq!((st, &b["success"]), (200, &json!(true)), "{b}");
    let buy = carol.signed(&yes, "BUY", 26_000_000, 40_000_000).salt(alloy_primitives::U256::MAX).sign(s);
    let (st, b) = carol.submit(s, buy, "GTC");
    assert_eq!((st, &b["status"]), (200, &json!("MATCHED")), "{b}");
    let t = settled(&v, &carol);
    assert_eq!(t["status"], "CONFIRMED", "{t}");
    assert_ne!(t["transaction_hash"].as_str().unwrap(), hash);
    assert_eq!(v.holdings(&alice, &[&yes]), (74_000_000, vec![60_000_000]));
    assert_eq!(v.holdings(&carol, &[&yes]), (76_000_000, vec![40_000_000]));

    // A merge: SELL YES against SELL NO. Carol sells 40 YES at 0.30, Bob 40 NO at 0.70.
    carol.place(s, &yes, "SELL", "0.30", "40");
    let (st, b) = bob.submit(s, bob.order(s, &no, "SELL", "0.70", "40"), "GTC");
    assert_eq!((st, &b["status"]), (200, &json!("MATCHED")), "{b}");
    let t = settled(&v, &bob);
    assert_eq!(t["status"], "CONFIRMED");
    assert_eq!(v.holdings(&carol, &[&yes]), (88_000_000, vec![0]));
    assert_eq!(v.holdings(&bob, &[&no]), (78_000_000, vec![60_000_000]));
    // The dashboard's settlement health: the last transaction, the operator's gas.
    let (st, o) = s.internal_get("/internal/overview");
    assert_eq!(st, 200, "{o}");
    let c = &o["settlement"]["chain"];
    assert_eq!(o["settlement"]["settles"], "chain");
    assert_eq!(c["lastTx"]["status"], "confirmed", "{o}");
    assert_eq!(c["lastTx"]["hash"], t["transaction_hash"], "{o}");
    assert_eq!(c["inFlight"], 0, "{o}");
    let gas: f64 = c["gasBalance"].as_str().unwrap().parse().unwrap();
    assert!(gas > 0.0 && gas < 10_000.0, "{o}");
    // predex's balances are the chain's once settled.
    let (_, b) = carol.l2(s, "GET", "/balance-allowance", None);
    assert_eq!(b["balance"], "88000000", "{b}");
}

/// A match that the exchange refuses is FAILED with its reason and gives everyone back
/// what it held: the maker cancelled its order or raised its nonce on chain in the block
/// the settlement was mined in (the exchange's custom error, from the mined revert), or
/// moved its collateral away first (the node's gas estimate refuses, nothing is sent).
#[test]
fn a_match_the_exchange_refuses_fails_and_gives_back_what_it_held() {
    for (call, why) in [(OwnCall::CancelOrder, "OrderFilledOrCancelled"), (OwnCall::IncrementNonce, "InvalidNonce")] {
        refused_match_fails(&Venue::start(), call, why);
    }
    // Alice's collateral goes elsewhere while predex still holds her order: the node's
    // estimate refuses the match, and nothing is sent.
    let v = Venue::start();
    let s = &v.server;
    let (_, yes, no) = v.market();
    let (alice, bob) = (v.trader(100_000_000, true), v.trader(100_000_000, true));
    alice.place(s, &yes, "BUY", "0.40", "50");
    let collateral = Venue::address(&v.deployed.collateral_address);
    let (url, wallet) = (v.anvil.url.clone(), alice.wallet.clone());
    v.rt.block_on(async move {
        let p = wallet_provider(&url, wallet).unwrap();
        let c = predex::chain::ICollateral::new(collateral, &p);
        let to = alloy_primitives::Address::repeat_byte(0x77);
        let sent = c.transfer(to, alloy_primitives::U256::from(100_000_000u64)).send().await.unwrap();
        assert!(sent.get_receipt().await.unwrap().status());
    });
    let before = operator_nonce(&v.anvil, "latest");
    let (st, b) = bob.submit(s, bob.order(s, &no, "BUY", "0.60", "50"), "GTC");
    assert_eq!((st, &b["status"]), (200, &json!("MATCHED")), "{b}");
    let t = settled(&v, &bob);
    assert_eq!(t["status"], "FAILED", "{t}");
    assert!(!t["error_msg"].as_str().unwrap_or_default().is_empty(), "{t}");
    assert_eq!(t["transaction_hash"], "", "{t}");
    assert_eq!(operator_nonce(&v.anvil, "latest"), before, "estimated to revert: nothing sent");
    gave_back(&v, &bob, &yes, &no);
    // Counted as a failed settlement, as a mined revert is.
    crate::support::wait_for(10, || {
        let metrics = s.internal_request("GET", "/metrics").call().unwrap().into_string().unwrap();
        metrics.lines().any(|l| l == r#"predex_settlements_total{result="failed"} 1"#).then_some(())
    });
}

/// A match whose maker makes `call` on the exchange in the block its settlement is mined
/// in, first: FAILED with the exchange's custom error (`why`), from the mined revert.
fn refused_match_fails(v: &Venue, call: OwnCall, why: &str) {
    let s = &v.server;
    let (_, yes, no) = v.market();
    let (alice, bob) = (v.trader(100_000_000, true), v.trader(100_000_000, true));
    let order = alice.order(s, &yes, "BUY", "0.40", "50");
    let (st, b) = alice.submit(s, order.clone(), "GTC");
    assert_eq!(st, 200, "{b}");
    let before = operator_nonce(&v.anvil, "latest");
    v.anvil.rpc("evm_setAutomine", json!([false])).unwrap();
    let (st, b) = bob.submit(s, bob.order(s, &no, "BUY", "0.60", "50"), "GTC");
    assert_eq!((st, &b["status"]), (200, &json!("MATCHED")), "{call:?}: {b}");
    // The settlement waits in the pool; Alice's call, with a higher tip, goes before it in
    // the block that holds both.
    crate::support::wait_for(30, || (operator_nonce(&v.anvil, "pending") == before + 1).then_some(()));
    v.own_call(&alice, call, &order, true);
    v.anvil.rpc("evm_mine", json!([])).unwrap();
    v.anvil.rpc("evm_setAutomine", json!([true])).unwrap();
    let t = settled(v, &bob);
    assert_eq!((&t["status"], &t["error_msg"]), (&json!("FAILED"), &json!(why)), "{call:?}: {t}");
    assert_eq!(operator_nonce(&v.anvil, "latest"), before + 1, "{call:?}: mined, reverted");
    // The trade keeps the hash of the transaction that reverted.
    let receipt = v.anvil.rpc("eth_getTransactionReceipt", json!([t["transaction_hash"]])).unwrap();
    assert_eq!(receipt["status"], "0x0", "{call:?}: {t} {receipt}");
    assert_eq!(v.holdings(&alice, &[&yes, &no]), (100_000_000, vec![0, 0]), "{call:?}");
    gave_back(v, &bob, &yes, &no);
}

/// Nothing moved on chain for the taker, and what its trade held is its own again.
fn gave_back(v: &Venue, bob: &crate::support::Trader, yes: &str, no: &str) {
    assert_eq!(v.holdings(bob, &[yes, no]), (100_000_000, vec![0, 0]));
    let (_, b) = bob.l2(&v.server, "GET", "/balance-allowance", None);
    assert_eq!(b["balance"], "100000000", "{b}");
    let (_, n) = bob.l2(&v.server, "GET", "/notifications", None);
    assert!(n.to_string().contains("TRADE_FAILED"), "{n}");
}

/// Open orders of the trader.
fn open_orders(v: &Venue, t: &crate::support::Trader) -> Vec<Value> {
    let (st, b) = t.l2(&v.server, "GET", "/data/orders", None);
    assert_eq!(st, 200, "{b}");
    b["data"].as_array().cloned().unwrap_or_default()
}

/// A maker's `cancelOrder` and `incrementNonce` on the exchange cancel its resting orders
/// on predex within seconds, and those orders are refused if sent again; a maker whose
/// nonce was raised before its first order places with that nonce.
#[test]
fn makers_cancelling_on_the_exchange_cancel_their_orders() {
    let v = Venue::start();
    let s = &v.server;
    let (_, yes, _) = v.market();
    let alice = v.trader(100_000_000, true);
    let a = alice.order(s, &yes, "BUY", "0.40", "50");
    let (st, placed) = alice.submit(s, a.clone(), "GTC");
    assert_eq!(st, 200, "{placed}");
    let b = alice.order(s, &yes, "BUY", "0.30", "10");
    assert_eq!(alice.submit(s, b.clone(), "GTC").0, 200);

    v.own_call(&alice, OwnCall::CancelOrder, &a, false);
    let left = crate::support::wait_for(10, || {
        let open = open_orders(&v, &alice);
        (open.len() == 1).then_some(open)
    });
    assert_ne!(left[0]["id"], placed["orderID"], "{left:?}");
    let (st, again) = alice.submit(s, a.clone(), "GTC");
    assert_eq!(st, 400, "cancelled on chain, refused again: {again}");
    // What the cancelled order held is free again: only the other's 3 USDC are held.
    let (_, bal) = alice.l2(s, "GET", "/balance-allowance", None);
    assert_eq!(bal["balance"], "97000000", "{bal}");

    v.own_call(&alice, OwnCall::IncrementNonce, &b, false);
    crate::support::wait_for(10, || open_orders(&v, &alice).is_empty().then_some(()));
    let (st, r) = alice.submit(s, b, "GTC");
    assert_eq!(st, 400, "{r}");
    let (st, r) = alice.submit(s, alice.order(s, &yes, "BUY", "0.30", "10"), "GTC");
    assert_eq!((st, r["error"].as_str().unwrap_or_default()), (400, "invalid nonce"), "{r}");
    let with_nonce = |t: &crate::support::Trader, n| t.signed(&yes, "BUY", 3_000_000, 10_000_000).nonce(n).sign(s);
    let (st, r) = alice.submit(s, with_nonce(&alice, 1), "GTC");
    assert_eq!(st, 200, "{r}");

    // Carol raised her nonce before predex ever saw her: her first order must carry it.
    let carol = v.trader(100_000_000, true);
    v.own_call(&carol, OwnCall::IncrementNonce, &a, false);
    let (st, r) = carol.submit(s, with_nonce(&carol, 0), "GTC");
    assert_eq!((st, r["error"].as_str().unwrap_or_default()), (400, "invalid nonce"), "{r}");
    let (st, r) = carol.submit(s, with_nonce(&carol, 1), "GTC");
    assert_eq!(st, 200, "{r}");
}

/// The operator's transactions counted by the node, mined and pending.
fn operator_nonce(anvil: &Anvil, tag: &str) -> u64 {
    let operator = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
    let n = anvil.rpc("eth_getTransactionCount", json!([operator, tag])).unwrap();
    u64::from_str_radix(n.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

/// A JSON-RPC proxy in front of the node that forwards every call; once `holding`, it keeps
/// each `eth_sendRawTransaction` (its raw transaction) and never answers nor forwards it,
/// so a sender meets it between recording a transaction and the node having it. While
/// `down`, it drops every request's connection unanswered: the node unreachable.
pub(crate) struct HoldingProxy {
    pub(crate) url: String,
    pub(crate) holding: std::sync::Arc<std::sync::atomic::AtomicBool>,
    pub(crate) held: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    pub(crate) down: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl HoldingProxy {
    pub(crate) fn start(upstream: &str) -> HoldingProxy {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let held = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let holding = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let down = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (upstream, kept, hold, off) = (upstream.to_string(), held.clone(), holding.clone(), down.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { return };
                let (upstream, held, holding, down) = (upstream.clone(), kept.clone(), hold.clone(), off.clone());
                std::thread::spawn(move || {
                    let mut r = BufReader::new(conn.try_clone().unwrap());
                    loop {
                        // One HTTP/1.1 request on a kept-alive connection.
                        let (mut line, mut len) = (String::new(), 0);
                        if r.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        loop {
                            line.clear();
                            if r.read_line(&mut line).unwrap_or(0) == 0 {
                                return;
                            }
                            if line == "\r\n" {
                                break;
                            }
                            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                                len = v.trim().parse().unwrap();
                            }
                        }
                        let mut body = vec![0; len];
                        r.read_exact(&mut body).unwrap();
                        if down.load(Ordering::SeqCst) {
                            return;
                        }
                        let call: Value = serde_json::from_slice(&body).unwrap();
                        if call["method"] == "eth_sendRawTransaction" && holding.load(Ordering::SeqCst) {
                            held.lock().unwrap().push(call["params"][0].as_str().unwrap().to_string());
                            // Held until the sender is gone.
                            let _ = r.read_line(&mut line);
                            return;
                        }
                        let answer = ureq::post(&upstream)
                            .set("content-type", "application/json")
                            .send_bytes(&body)
                            .unwrap()
                            .into_string()
                            .unwrap();
                        let head = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                            answer.len()
                        );
                        if conn.write_all(head.as_bytes()).and_then(|_| conn.write_all(answer.as_bytes())).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        HoldingProxy { url, holding, held, down }
    }
}

/// Where settlement is when predex is killed.
#[derive(Debug, Clone, Copy, PartialEq)]
enum KillPoint {
    /// The transaction recorded, its broadcast under way but not at the node.
    Recorded,
    /// Broadcast and in the node's pool, unmined.
    Broadcast,
    /// Broadcast, then lost by the node (a restarted node, a pool evicting it).
    BroadcastThenLost,
}

/// `kill -9` of the binary on either side of a settlement transaction's broadcast, and a
/// restart on the same data: each time the trade settles once, by the transaction recorded
/// before the kill (the same hash, the same nonce), and the balances on chain are its.
/// Version 2's settlement is recorded and re-sent the same way.
#[test]
fn kill_9_on_either_side_of_the_broadcast_settles_each_match_once() {
    let rounds = [
        (1, KillPoint::Recorded),
        (1, KillPoint::Broadcast),
        (1, KillPoint::BroadcastThenLost),
        (2, KillPoint::Recorded),
        (2, KillPoint::BroadcastThenLost),
    ];
    for (version, point) in rounds {
        let anvil = Anvil::start();
        let dir = tempfile::tempdir().unwrap();
        let key = key_file(dir.path(), "operator.key", DEPLOYER_KEY);
        let deployed = deploy(&anvil, &key, &root().join("contracts"), &["--order-version", &version.to_string()]);
        let data = dir.path().join("data");
        let proxy = HoldingProxy::start(&anvil.url);
        let rpc = if point == KillPoint::Recorded { proxy.url.clone() } else { anvil.url.clone() };
        let (mut child, server) = spawn_predex(&data, &deployed, &key, &rpc);
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let v = Venue { server, deployed, anvil, _dir: dir, rt };
        let (_, yes, no) = v.market();
        let alice = v.trader(100_000_000, true);
        let bob = v.trader(100_000_000, true);
        if point != KillPoint::Recorded {
            v.anvil.rpc("evm_setAutomine", json!([false])).unwrap();
        }
        let before = operator_nonce(&v.anvil, "latest");
        proxy.holding.store(true, Ordering::SeqCst);
        let order = |t: &Trader, token: &str| match version {
            2 => v2_order(&v.server, t, token, "BUY", 5_000, 20_000_000, false),
            _ => t.order(&v.server, token, "BUY", "0.50", "20"),
        };
        let (st, b) = alice.submit(&v.server, order(&alice, &yes), "GTC");
        assert_eq!(st, 200, "v{version} {point:?}: {b}");
        let (st, b) = bob.submit(&v.server, order(&bob, &no), "GTC");
        let matched = if version == 2 { "matched" } else { "MATCHED" };
        assert_eq!((st, &b["status"]), (200, &json!(matched)), "v{version} {point:?}: {b}");
        let sent = if point == KillPoint::Recorded {
            // The node never got it.
            let raw = crate::support::wait_for(30, || proxy.held.lock().unwrap().first().cloned());
            let raw = alloy_primitives::hex::decode(raw).unwrap();
            assert_eq!(operator_nonce(&v.anvil, "pending"), before, "v{version} {point:?}");
            json!(format!("{}", alloy_primitives::keccak256(raw)))
        } else {
            crate::support::wait_for(30, || (operator_nonce(&v.anvil, "pending") == before + 1).then_some(()));
            let pool = v.anvil.rpc("txpool_content", json!([])).unwrap();
            pool["pending"].as_object().unwrap().values().next().unwrap()[before.to_string()]["hash"].clone()
        };
        assert!(sent.is_string(), "v{version} {point:?}");
        child.child.kill().unwrap(); // SIGKILL
        child.child.wait().unwrap();
        drop(child);
        if point == KillPoint::BroadcastThenLost {
            v.anvil.rpc("anvil_dropAllTransactions", json!([])).unwrap();
            assert_eq!(operator_nonce(&v.anvil, "pending"), before);
        }
        // Started again, straight to the node: the record is looked up, sent again if the
        // node lacks it, and mined once.
        let Venue { server, deployed, anvil, _dir, rt } = v;
        drop(server);
        let (_child, server) = spawn_predex(&data, &deployed, &key, &anvil.url);
        if point != KillPoint::Recorded {
            crate::support::wait_for(30, || (operator_nonce(&anvil, "pending") == before + 1).then_some(()));
            anvil.rpc("evm_mine", json!([])).unwrap();
        }
        let v = Venue { server, deployed, anvil, _dir, rt };
        let t = settled(&v, &bob);
        assert_eq!(t["status"], "CONFIRMED", "v{version} {point:?}: {t}");
        assert_eq!(t["transaction_hash"], sent, "v{version} {point:?}: the recorded transaction");
        assert_eq!(operator_nonce(&v.anvil, "latest"), before + 1, "v{version} {point:?}: one transaction");
        assert_eq!(v.holdings(&alice, &[&yes]), (90_000_000, vec![20_000_000]), "v{version} {point:?}");
        assert_eq!(v.holdings(&bob, &[&no]), (90_000_000, vec![20_000_000]), "v{version} {point:?}");
    }
}

/// The committed artifacts are what their sources build to (apart from the metadata hash).
#[test]
fn the_committed_contract_artifacts_rebuild_from_their_sources() {
    let out = Command::new("node").arg(root().join("scripts/contracts.js")).arg("--check").output().expect("run node");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(text.matches(": equal").count(), 14, "{text}");
}

#[test]
fn a_negative_risk_match_settles_through_the_adapter() {
    let v = Venue::start();
    let s = &v.server;
    let (st, m) = s.internal_post("/internal/markets", &json!({"question": "Candidate A?", "neg_risk": true}));
    assert_eq!(st, 200, "{m}");
    let yes = m["tokens"][0]["token_id"].as_str().unwrap().to_string();
    let no = m["tokens"][1]["token_id"].as_str().unwrap().to_string();
    let alice = v.trader(100_000_000, true);
    let bob = v.trader(100_000_000, true);
    let carol = v.trader(100_000_000, true);
    // A mint through the adapter, then a plain match: orders signed for the negative-risk exchange.
    let (st, b) = alice.submit(s, alice.signed(&yes, "BUY", 30_000_000, 100_000_000).neg_risk().sign(s), "GTC");
    assert_eq!(st, 200, "{b}");
    let (st, b) = bob.submit(s, bob.signed(&no, "BUY", 70_000_000, 100_000_000).neg_risk().sign(s), "GTC");
    assert_eq!((st, &b["status"]), (200, &json!("MATCHED")), "{b}");
    let t = settled(&v, &bob);
    assert_eq!(t["status"], "CONFIRMED", "{t}");
    assert_eq!(v.holdings(&alice, &[&yes]), (70_000_000, vec![100_000_000]));
    assert_eq!(v.holdings(&bob, &[&no]), (30_000_000, vec![100_000_000]));
    let (st, b) = alice.submit(s, alice.signed(&yes, "SELL", 50_000_000, 20_000_000).neg_risk().sign(s), "GTC");
    assert_eq!(st, 200, "{b}");
    let (st, b) = carol.submit(s, carol.signed(&yes, "BUY", 20_000_000, 50_000_000).neg_risk().sign(s), "GTC");
    assert_eq!((st, &b["status"]), (200, &json!("MATCHED")), "{b}");
    assert_eq!(settled(&v, &carol)["status"], "CONFIRMED");
    assert_eq!(v.holdings(&alice, &[&yes]), (90_000_000, vec![50_000_000]));
    assert_eq!(v.holdings(&carol, &[&yes]), (80_000_000, vec![50_000_000]));
}

/// A signed order at `price` (1e-4) for `size` tokens (1e-6) paying `fee_bps`.
fn with_fee(
    s: &Server,
    t: &crate::support::Trader,
    token: &str,
    side: &str,
    price: u64,
    size: u64,
    fee_bps: u64,
) -> Value {
    let cost = size * price / 10_000;
    let (maker, taker) = if side == "BUY" { (cost, size) } else { (size, cost) };
    t.signed(token, side, maker, taker).fee_bps(fee_bps).sign(s)
}

/// The trader's trades (newest first) once none is PENDING.
fn all_settled(v: &Venue, t: &crate::support::Trader, n: usize) -> Vec<Value> {
    crate::support::wait_for(60, || {
        let (st, b) = t.l2(&v.server, "GET", "/data/trades", None);
        let all = b["data"].as_array().cloned().unwrap_or_default();
        let settled = |t: &Value| !["PENDING", "MATCHED", "MINED"].iter().any(|x| t["status"] == *x);
        (st == 200 && all.len() == n && all.iter().all(settled)).then_some(all)
    })
}

/// A taker meets three makers in one `matchOrders`; everyone pays a fee, and what the
/// trades record is what the contract charged. A taker whose fee the contract would take
/// otherwise on the whole call than on each trade is settled in several calls.
#[test]
fn a_taker_meets_three_makers_and_pays_the_contracts_fee() {
    use crate::support::m;
    let v = Venue::start();
    let s = &v.server;
    let (_, yes, no) = v.market();
    let operator: alloy_primitives::Address = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266".parse().unwrap();
    let makers: Vec<_> = (0..3).map(|_| v.trader(100_000_000, true)).collect();
    let taker = v.trader(100_000_000, true);

    // Three makers bid for NO at 0.60, 0.55 and 0.50, 30 each, at 100 bps; the taker buys
    // 90 YES up to 0.50: a mint against each, YES at 0.40, 0.45 and 0.50.
    for (mk, price) in makers.iter().zip([6_000, 5_500, 5_000]) {
        let (st, b) = mk.submit(s, with_fee(s, mk, &no, "BUY", price, 30_000_000, 100), "GTC");
        assert_eq!(st, 200, "{b}");
    }
    let (st, b) = taker.submit(s, with_fee(s, &taker, &yes, "BUY", 5_000, 90_000_000, 100), "GTC");
    assert_eq!((st, &b["status"]), (200, &json!("MATCHED")), "{b}");
    let trades = all_settled(&v, &taker, 3);
    assert!(trades.iter().all(|t| t["status"] == "CONFIRMED"), "{trades:?}");
    // One transaction for the three.
    assert!(trades.iter().all(|t| t["transaction_hash"] == trades[0]["transaction_hash"]), "{trades:?}");
    // 1 % of the tokens below a price of 0.5, for the taker; the contract's own formula for
    // the makers (100 bps × 0.4 / 0.6 × 30 = 0.2 NO at 0.60, and so on).
    let taker_fees: u64 = trades.iter().map(|t| m(t["taker_fee"].as_str().unwrap())).sum();
    assert_eq!(taker_fees, 900_000);
    let mut maker_fees = 0;
    for (mk, (cost, want)) in makers.iter().zip([(18_000_000, 200_000), (16_500_000, 245_454), (15_000_000, 300_000)]) {
        let t = &all_settled(&v, mk, 1)[0];
        assert_eq!(m(t["maker_fee"].as_str().unwrap()), want, "{t}");
        maker_fees += want;
        assert_eq!(v.holdings(mk, &[&no]), (100_000_000 - cost, vec![30_000_000 - want]));
    }
    // The taker paid 12 + 13.5 + 15 USDC for 90 YES less its fee.
    assert_eq!(v.holdings(&taker, &[&yes]), (100_000_000 - 40_500_000, vec![90_000_000 - taker_fees]));
    // The fees are the operator's, as the records say.
    assert_eq!(v.holdings_of(operator, &[&yes, &no]).1, vec![taker_fees, maker_fees]);

    // Above 0.5 a BUY's fee is not linear in the price: bought at 0.60 and 0.70 in one
    // call, 0.35/0.65 × 60 × 1 % = 0.323076 YES; the trades at their own prices record
    // 0.2 + 0.128571. Two calls then, each charging what its trade records.
    let (st, b) = taker.submit(s, with_fee(s, &taker, &yes, "SELL", 6_000, 30_000_000, 0), "GTC");
    assert_eq!(st, 200, "{b}");
    let (st, b) = taker.submit(s, with_fee(s, &taker, &yes, "SELL", 7_000, 30_000_000, 0), "GTC");
    assert_eq!(st, 200, "{b}");
    let buyer = v.trader(100_000_000, true);
    let (st, b) = buyer.submit(s, with_fee(s, &buyer, &yes, "BUY", 7_000, 60_000_000, 100), "GTC");
    assert_eq!((st, &b["status"]), (200, &json!("MATCHED")), "{b}");
    let trades = all_settled(&v, &buyer, 2);
    assert!(trades.iter().all(|t| t["status"] == "CONFIRMED"), "{trades:?}");
    assert_ne!(trades[0]["transaction_hash"], trades[1]["transaction_hash"]);
    let fees: u64 = trades.iter().map(|t| m(t["taker_fee"].as_str().unwrap())).sum();
    assert_eq!(fees, 200_000 + 128_571);
    assert_eq!(v.holdings(&buyer, &[&yes]), (100_000_000 - 39_000_000, vec![60_000_000 - fees]));
    assert_eq!(v.holdings_of(operator, &[&yes]).1, vec![taker_fees + fees]);
}

/// A version 2 order at `price` (1e-4) for `size` tokens (1e-6), for the exchange of the
/// market (`neg_risk`).
fn v2_order(s: &Server, t: &Trader, token: &str, side: &str, price: u64, size: u64, neg_risk: bool) -> Value {
    let cost = size * price / 10_000;
    let (maker, taker) = if side == "BUY" { (cost, size) } else { (size, cost) };
    let b = t.signed(token, side, maker, taker);
    let b = if neg_risk { b.neg_risk() } else { b };
    b.sign_v2(s, alloy_primitives::B256::ZERO)
}

/// Submits a version 2 GTC order; returns its status.
fn submit_v2(s: &Server, t: &Trader, token: &str, side: &str, price: u64, size: u64, neg_risk: bool) -> Value {
    let (st, b) = t.submit(s, v2_order(s, t, token, side, price, size, neg_risk), "GTC");
    assert_eq!(st, 200, "{b}");
    assert_eq!(b["success"], true, "{b}");
    b["status"].clone()
}

/// The collateral the operator (the V2 exchanges' fee receiver) holds on chain.
fn operator_collateral(v: &Venue) -> u64 {
    let operator: alloy_primitives::Address = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266".parse().unwrap();
    v.holdings_of(operator, &[]).0
}

/// Version 2 orders settle on chain through predex's V2 exchanges, deployed by `predex
/// chain deploy --order-version 2`: a mint, a plain match, a merge, a taker meeting three
/// makers in one call, and a negative-risk mint through the adapter. Each taker pays the
/// market's fee description in collateral, and what the exchange charged is what the
/// trades record, to the base unit.
#[test]
fn version_2_matches_settle_on_chain_through_the_v2_exchanges() {
    use crate::support::m;
    let v = Venue::start_v2();
    let s = &v.server;
    assert_eq!(s.get("/version").1["version"], 2);
    let (cond, yes, no) = v.market();
    // r = 0.04, e = 1: shares × 0.04 × p(1 − p), within 5 % of the cash value.
    let (st, b) =
        s.internal_post("/internal/markets/fees", &json!({"condition_id": cond, "rate": "0.04", "exponent": 1}));
    assert_eq!(st, 200, "{b}");
    let (alice, bob, carol) = (v.trader(100_000_000, true), v.trader(100_000_000, true), v.trader(100_000_000, true));
    let fees_before = operator_collateral(&v);

    // A mint: BUY YES against BUY NO at 0.50, 100 each. Bob, the taker, pays 100 × 0.04 ×
    // 0.25 = 1 USDC on top.
    assert_eq!(submit_v2(s, &alice, &yes, "BUY", 5_000, 100_000_000, false), "live");
    assert_eq!(submit_v2(s, &bob, &no, "BUY", 5_000, 100_000_000, false), "matched");
    let t = settled(&v, &bob);
    assert_eq!((&t["status"], &t["taker_fee"]), (&json!("CONFIRMED"), &json!("1")), "{t}");
    assert_eq!(v.holdings(&alice, &[&yes, &no]), (50_000_000, vec![100_000_000, 0]));
    assert_eq!(v.holdings(&bob, &[&yes, &no]), (49_000_000, vec![0, 100_000_000]));

    // A plain match: Carol buys 40 YES of Alice's at 0.60 (up to 0.65): 24 USDC and a fee
    // of 40 × 0.04 × 0.24 = 0.384.
    assert_eq!(submit_v2(s, &alice, &yes, "SELL", 6_000, 40_000_000, false), "live");
    assert_eq!(submit_v2(s, &carol, &yes, "BUY", 6_500, 40_000_000, false), "matched");
    let t = settled(&v, &carol);
    assert_eq!((&t["status"], &t["taker_fee"]), (&json!("CONFIRMED"), &json!("0.384")), "{t}");
    assert_eq!(v.holdings(&alice, &[&yes]), (74_000_000, vec![60_000_000]));
    assert_eq!(v.holdings(&carol, &[&yes]), (75_616_000, vec![40_000_000]));

    // A merge: Carol asks 0.30 for 40 YES, Bob sells 40 NO at 0.70 into it: 28 USDC less
    // 40 × 0.04 × 0.21 = 0.336 out of Bob's proceeds.
    assert_eq!(submit_v2(s, &carol, &yes, "SELL", 3_000, 40_000_000, false), "live");
    assert_eq!(submit_v2(s, &bob, &no, "SELL", 7_000, 40_000_000, false), "matched");
    let t = settled(&v, &bob);
    assert_eq!((&t["status"], &t["taker_fee"]), (&json!("CONFIRMED"), &json!("0.336")), "{t}");
    assert_eq!(v.holdings(&carol, &[&yes]), (87_616_000, vec![0]));
    assert_eq!(v.holdings(&bob, &[&no]), (76_664_000, vec![60_000_000]));

    // One taker, three makers, one call: bids for NO at 0.60, 0.55 and 0.50, 30 each; the
    // taker buys 90 YES up to 0.50, minted at 0.40, 0.45 and 0.50, and pays 30 × 0.04 ×
    // (0.24 + 0.2475 + 0.25) = 0.885.
    let makers: Vec<_> = (0..3).map(|_| v.trader(100_000_000, true)).collect();
    for (mk, price) in makers.iter().zip([6_000, 5_500, 5_000]) {
        assert_eq!(submit_v2(s, mk, &no, "BUY", price, 30_000_000, false), "live");
    }
    let taker = v.trader(100_000_000, true);
    assert_eq!(submit_v2(s, &taker, &yes, "BUY", 5_000, 90_000_000, false), "matched");
    let trades = all_settled(&v, &taker, 3);
    assert!(trades.iter().all(|t| t["status"] == "CONFIRMED"), "{trades:?}");
    assert!(trades.iter().all(|t| t["transaction_hash"] == trades[0]["transaction_hash"]), "{trades:?}");
    let fees: u64 = trades.iter().map(|t| m(t["taker_fee"].as_str().unwrap())).sum();
    assert_eq!(fees, 885_000);
    assert_eq!(v.holdings(&taker, &[&yes]), (100_000_000 - 40_500_000 - 885_000, vec![90_000_000]));
    for (mk, cost) in makers.iter().zip([18_000_000, 16_500_000, 15_000_000]) {
        assert_eq!(v.holdings(mk, &[&no]), (100_000_000 - cost, vec![30_000_000]), "makers pay no fee");
    }
    // The fees are the operator's, as the trades record them.
    assert_eq!(operator_collateral(&v) - fees_before, 1_000_000 + 384_000 + 336_000 + 885_000);

    // A negative-risk question: a mint through the adapter, orders signed for the
    // negative-risk V2 exchange; no fee description, no fee.
    let (st, mk) = s.internal_post("/internal/markets", &json!({"question": "Candidate A?", "neg_risk": true}));
    assert_eq!(st, 200, "{mk}");
    let nyes = mk["tokens"][0]["token_id"].as_str().unwrap().to_string();
    let nno = mk["tokens"][1]["token_id"].as_str().unwrap().to_string();
    let (dave, erin) = (v.trader(100_000_000, true), v.trader(100_000_000, true));
    assert_eq!(submit_v2(s, &dave, &nyes, "BUY", 3_000, 100_000_000, true), "live");
    assert_eq!(submit_v2(s, &erin, &nno, "BUY", 7_000, 100_000_000, true), "matched");
    assert_eq!(settled(&v, &erin)["status"], "CONFIRMED");
    assert_eq!(v.holdings(&dave, &[&nyes]), (70_000_000, vec![100_000_000]));
    assert_eq!(v.holdings(&erin, &[&nno]), (30_000_000, vec![100_000_000]));
    // predex's balances are the chain's once settled.
    let (_, b) = carol.l2(s, "GET", "/balance-allowance", None);
    assert_eq!(b["balance"], "87616000", "{b}");
}

/// A version 2 maker stops its orders on the exchange with `pauseUser`: a match settling
/// in the block its pause takes effect in is FAILED with the exchange's `UserIsPaused` and
/// gives everyone back what it held; its other open orders are cancelled on predex, and its
/// new ones refused, until it unpauses.
#[test]
fn a_version_2_makers_pause_fails_its_match_and_stops_its_orders() {
    let v = Venue::start_v2();
    let s = &v.server;
    let (_, yes, no) = v.market();
    let (alice, bob) = (v.trader(100_000_000, true), v.trader(100_000_000, true));
    // Pauses take effect at once on this exchange (its admin, the deployer, says so).
    let exchanges = [v.exchange(), v.neg_risk_exchange()];
    let url = v.anvil.url.clone();
    v.rt.block_on(async move {
        let p = wallet_provider(&url, DEPLOYER_KEY.parse().unwrap()).unwrap();
        for x in exchanges {
            let x = predex::chain::IExchangeV2::new(x, &p);
            let sent = x.setUserPauseBlockInterval(alloy_primitives::U256::ZERO).send().await.unwrap();
            assert!(sent.get_receipt().await.unwrap().status());
        }
    });
    assert_eq!(submit_v2(s, &alice, &yes, "BUY", 4_000, 50_000_000, false), "live");
    assert_eq!(submit_v2(s, &alice, &yes, "BUY", 3_000, 20_000_000, false), "live");
    let before = operator_nonce(&v.anvil, "latest");
    v.anvil.rpc("evm_setAutomine", json!([false])).unwrap();
    assert_eq!(submit_v2(s, &bob, &no, "BUY", 6_000, 50_000_000, false), "matched");
    crate::support::wait_for(30, || (operator_nonce(&v.anvil, "pending") == before + 1).then_some(()));
    // Alice pauses herself, with a higher tip: first in the block that holds both.
    let (url, wallet, exchange) = (v.anvil.url.clone(), alice.wallet.clone(), v.exchange());
    v.rt.block_on(async move {
        use alloy_provider::Provider;
        let p = wallet_provider(&url, wallet).unwrap();
        let tx = predex::chain::IExchangeV2::new(exchange, &p)
            .pauseUser()
            .into_transaction_request()
            .max_priority_fee_per_gas(50_000_000_000)
            .max_fee_per_gas(200_000_000_000)
            .gas_limit(100_000);
        let _pending = p.send_transaction(tx).await.unwrap();
    });
    v.anvil.rpc("evm_mine", json!([])).unwrap();
    v.anvil.rpc("evm_setAutomine", json!([true])).unwrap();
    let t = settled(&v, &bob);
    assert_eq!((&t["status"], &t["error_msg"]), (&json!("FAILED"), &json!("UserIsPaused")), "{t}");
    assert_eq!(operator_nonce(&v.anvil, "latest"), before + 1, "mined, reverted");
    gave_back(&v, &bob, &yes, &no);
    // Her other bid is cancelled, and a new order refused.
    crate::support::wait_for(30, || open_orders(&v, &alice).is_empty().then_some(()));
    let (st, b) = alice.submit(s, v2_order(s, &alice, &yes, "BUY", 3_000, 10_000_000, false), "GTC");
    assert_eq!(st, 400, "{b}");
    assert_eq!(b["error"], format!("'{}' address paused on the exchange", alice.address), "{b}");
    // Unpaused, she trades again.
    let (url, wallet) = (v.anvil.url.clone(), alice.wallet.clone());
    v.rt.block_on(async move {
        let p = wallet_provider(&url, wallet).unwrap();
        let sent = predex::chain::IExchangeV2::new(exchange, &p).unpauseUser().send().await.unwrap();
        assert!(sent.get_receipt().await.unwrap().status());
    });
    crate::support::wait_for(30, || {
        let (st, _) = alice.submit(s, v2_order(s, &alice, &yes, "BUY", 3_000, 10_000_000, false), "GTC");
        (st == 200).then_some(())
    });
}

/// A version 2 venue starts only against version 2 exchanges that make full sets the way
/// its settings say, pay fees to its operator and hash orders under its domain.
#[test]
fn a_version_2_venue_starts_only_against_its_v2_exchanges() {
    let anvil = Anvil::start();
    let dir = tempfile::tempdir().unwrap();
    let key = key_file(dir.path(), "operator.key", DEPLOYER_KEY);
    let v2 = deploy(&anvil, &key, &root().join("contracts"), &["--order-version", "2"]);
    assert_eq!(v2.order_version, 2);
    let data = tempfile::tempdir().unwrap();
    let good = chain_config(data.path(), &v2, key.clone());
    // The two exchanges swapped: each makes its full sets through the other's factory.
    let e = refusal(Config {
        exchange_v2_address: good.neg_risk_exchange_v2_address.clone(),
        neg_risk_exchange_v2_address: good.exchange_v2_address.clone(),
        ..good.clone()
    });
    assert!(e.contains("makes full sets through") && e.contains("not ctf-address"), "{e}");
    let e = refusal(Config { order_domain_name: "Polymarket CTF Exchange".into(), ..good.clone() });
    assert!(e.contains("hashes orders under another EIP-712 domain") && e.contains("version 2"), "{e}");
    // Version 1's exchanges named as version 2's.
    let v1 = deploy(&anvil, &key, &root().join("contracts"), &[]);
    let e = refusal(Config {
        exchange_v2_address: v1.exchange_address.clone(),
        neg_risk_exchange_v2_address: v1.neg_risk_exchange_address.clone(),
        ctf_address: v1.ctf_address.clone(),
        collateral_address: v1.collateral_address.clone(),
        neg_risk_adapter_address: v1.neg_risk_adapter_address.clone(),
        ..good.clone()
    });
    assert!(e.contains("does not answer getOutcomeTokenFactory"), "{e}");
    // The operator is another account than the exchanges' fee receiver.
    let other = key_file(dir.path(), "other.key", OTHER_KEY);
    let operator = format!("{:#x}", OTHER_KEY.parse::<alloy_signer_local::PrivateKeySigner>().unwrap().address());
    let theirs = deploy(&anvil, &key, &root().join("contracts"), &["--order-version", "2", "--operator", &operator]);
    let e = refusal(Config { ..chain_config(data.path(), &theirs, key.clone()) });
    assert!(e.contains("pays fees to") && e.contains("not the operator"), "{e}");
    let s = Server::start_with(chain_config(data.path(), &theirs, other));
    assert_eq!(s.get("/version").1["version"], 2);
}

/// A maker with no open order moves its nonce on the exchange (incrementNonce, which leaves
/// no log): within seconds its orders with the new nonce are admitted and with the old
/// refused, with no restart.
#[test]
fn a_maker_without_open_orders_that_moves_its_nonce_is_followed() {
    let v = Venue::start();
    let s = &v.server;
    let (_, yes, _) = v.market();
    let alice = v.trader(100_000_000, true);
    // Seen once: her bid rests and she cancels it, so none of her orders is open.
    let o = alice.order(s, &yes, "BUY", "0.40", "10");
    let (st, b) = alice.submit(s, o.clone(), "GTC");
    assert_eq!(st, 200, "{b}");
    let (st, c) = alice.l2(s, "DELETE", "/order", Some(&json!({"orderID": b["orderID"]})));
    assert_eq!((st, c["canceled"].as_array().map(Vec::len)), (200, Some(1)), "{c}");
    v.own_call(&alice, OwnCall::IncrementNonce, &o, false);
    let bid = |nonce: u64| alice.signed(&yes, "BUY", 4_000_000, 10_000_000).nonce(nonce).sign(s);
    crate::support::wait_for(30, || (alice.submit(s, bid(1), "GTC").0 == 200).then_some(()));
    assert_eq!(crate::support::err(alice.submit(s, bid(0), "GTC")), (400, "invalid nonce".into()));
}

/// The catalogue's market for a condition.
fn catalogue_market(s: &Server, cond: &str) -> Value {
    let (st, list) = s.catalogue_get(&format!("/markets?condition_ids={cond}"));
    assert_eq!(st, 200, "{list}");
    list[0].clone()
}

/// A condition's payouts on ConditionalTokens: (numerators, denominator).
fn payouts_on_chain(v: &Venue, cond: &str) -> (Vec<u64>, u64) {
    use alloy_sol_types::SolCall;
    alloy_sol_types::sol! {
        function payoutNumerators(bytes32 conditionId, uint256 index) external view returns (uint256);
        function payoutDenominator(bytes32 conditionId) external view returns (uint256);
    }
    let ctf = v.deployed.ctf_address.clone().unwrap();
    let cond: alloy_primitives::B256 = cond.parse().unwrap();
    let call = |data: Vec<u8>| {
        let r = v
            .anvil
            .rpc(
                "eth_call",
                json!([{"to": ctf, "data": format!("0x{}", alloy_primitives::hex::encode(data))}, "latest"]),
            )
            .unwrap();
        let r = r.as_str().unwrap().trim_start_matches("0x");
        u64::from_str_radix(&r[r.len() - 16..], 16).unwrap()
    };
    let n = (0..2)
        .map(|i| call(payoutNumeratorsCall { conditionId: cond, index: alloy_primitives::U256::from(i) }.abi_encode()))
        .collect();
    (n, call(payoutDenominatorCall { conditionId: cond }.abi_encode()))
}

/// Resolving a market reports its payouts to the chain as their oracle: a binary market's
/// through ConditionalTokens' `reportPayouts`, a negative-risk question's through the
/// adapter's `reportOutcome`. The report is recorded before its broadcast: killed (-9)
/// with the transaction recorded and not at the node, predex sends the recorded one on
/// restart and it is mined once. Trading in the resolved market stops, its orders are
/// cancelled; the catalogue and the dashboard show where each report stands.
#[test]
fn a_resolution_is_reported_on_chain_once_across_kill_9() {
    let (mut child, v, proxy) = Venue::spawned(true, &[]);
    let proxy = proxy.unwrap();
    let (data, key) = (v._dir.path().join("data"), v._dir.path().join("operator.key"));
    let (cond, yes, _) = v.market();
    let (st, nr) = v.server.internal_post("/internal/markets", &json!({"question": "Candidate A?", "neg_risk": true}));
    assert_eq!(st, 200, "{nr}");
    let nr_cond = nr["condition_id"].as_str().unwrap().to_string();
    let alice = v.trader(100_000_000, true);
    let (st, b) = alice.submit(&v.server, alice.order(&v.server, &yes, "BUY", "0.40", "10"), "GTC");
    assert_eq!(st, 200, "{b}");
    let before = operator_nonce(&v.anvil, "latest");

    // Resolved YES; the report's transaction recorded and held on its way to the node.
    proxy.holding.store(true, Ordering::SeqCst);
    let (st, m) = v
        .server
        .internal_post("/internal/resolution", &json!({"condition_id": cond, "status": "RESOLVED", "outcome": "Yes"}));
    assert_eq!((st, &m["resolutionStatus"]), (200, &json!("RESOLVED")), "{m}");
    let raw = crate::support::wait_for(30, || proxy.held.lock().unwrap().first().cloned());
    let sent = format!("{}", alloy_primitives::keccak256(alloy_primitives::hex::decode(raw).unwrap()));
    let m = catalogue_market(&v.server, &cond);
    assert_eq!(m["payoutReport"], json!({"status": "PENDING", "transactionHash": sent, "error": null}), "{m}");
    assert_eq!(operator_nonce(&v.anvil, "pending"), before, "not at the node");
    assert_eq!(open_orders(&v, &alice), Vec::<Value>::new(), "the market's orders are cancelled");
    child.child.kill().unwrap(); // SIGKILL
    child.child.wait().unwrap();
    drop(child);

    // Started again, straight to the node: the recorded report is sent, once.
    let Venue { server, deployed, anvil, _dir, rt } = v;
    drop(server);
    let (_child, server) = spawn_predex(&data, &deployed, &key, &anvil.url);
    let v = Venue { server, deployed, anvil, _dir, rt };
    let m = crate::support::wait_for(60, || {
        let m = catalogue_market(&v.server, &cond);
        (m["payoutReport"]["status"] == "CONFIRMED").then_some(m)
    });
    assert_eq!(m["payoutReport"]["transactionHash"], json!(sent), "{m}");
    assert_eq!(payouts_on_chain(&v, &cond), (vec![1, 0], 1));
    assert_eq!(operator_nonce(&v.anvil, "latest"), before + 1, "one transaction");
    let (st, b) = alice.submit(&v.server, alice.order(&v.server, &yes, "BUY", "0.40", "10"), "GTC");
    assert_ne!(st, 200, "a resolved market takes no orders: {b}");

    // A negative-risk question resolved NO: through the adapter.
    let (st, m) = v.server.internal_post(
        "/internal/resolution",
        &json!({"condition_id": nr_cond, "status": "RESOLVED", "outcome": "No"}),
    );
    assert_eq!(st, 200, "{m}");
    crate::support::wait_for(60, || {
        (catalogue_market(&v.server, &nr_cond)["payoutReport"]["status"] == "CONFIRMED").then_some(())
    });
    assert_eq!(payouts_on_chain(&v, &nr_cond), (vec![0, 1], 1));
    let (st, o) = v.server.internal_get("/internal/overview");
    assert_eq!(st, 200, "{o}");
    assert_eq!(o["settlement"]["chain"]["payoutReports"], json!({"pending": 0, "confirmed": 2, "failed": 0}), "{o}");
    // A market not resolved shows no report.
    let (other, _, _) = v.market();
    assert_eq!(catalogue_market(&v.server, &other)["payoutReport"], Value::Null);
}

/// The faucet mints the development collateral to a wallet and, with `--faucet-gas`, tops
/// up its native balance to what its approvals cost; an address has one gift per interval;
/// bad input sends nothing; the operator's CLI gives too; and a venue whose collateral its
/// operator cannot mint answers 409.
#[test]
fn the_faucet_gives_the_development_collateral_and_gas_once_per_interval() {
    let settings = [("PREDEX_FAUCET_GAS", "true".to_string()), ("PREDEX_FAUCET_MAX", "100".to_string())];
    let (_child, v, _) = Venue::spawned(false, &settings);
    let s = &v.server;
    let fresh = alloy_signer_local::PrivateKeySigner::random().address();
    let nonce = || operator_nonce(&v.anvil, "latest");
    let before = nonce();
    for (body, want) in [
        (json!({"address": "0x12", "amount": "1"}), "invalid address"),
        (
            json!({"address": fresh, "amount": "0"}),
            "amount must be a positive 6-decimal integer string of at most 100 USDC",
        ),
        (
            json!({"address": fresh, "amount": "100000001"}),
            "amount must be a positive 6-decimal integer string of at most 100 USDC",
        ),
    ] {
        assert_eq!(crate::support::err(s.internal_post("/internal/faucet", &body)), (400, want.to_string()));
    }
    assert_eq!(nonce(), before, "bad input sends nothing");

    let (st, g) = s.internal_post("/internal/faucet", &json!({"address": fresh, "amount": "25000000"}));
    assert_eq!(st, 200, "{g}");
    assert_eq!(v.holdings_of(fresh, &[]).0, 25_000_000);
    assert_eq!(v.receipt_status(g["transactionHash"].as_str().unwrap()), 1);
    let wei = g["gas"]["wei"].as_str().unwrap().parse::<alloy_primitives::U256>().unwrap();
    assert!(!wei.is_zero());
    assert_eq!(v.gas_of(fresh), wei, "{g}");
    assert_eq!(
        crate::support::err(s.internal_post("/internal/faucet", &json!({"address": fresh, "amount": "1"}))),
        (429, "this address had a gift from the faucet less than 3600 s ago".to_string())
    );
    assert_eq!(v.holdings_of(fresh, &[]).0, 25_000_000);

    // A trader's balance on predex follows the gift; a wallet with gas already gets none.
    let alice = v.trader(0, true);
    let (ok, g, err) = crate::admin::admin(s, &["faucet", "--address", &alice.address, "--amount", "1.5"]);
    assert!(ok, "{err}");
    assert_eq!(g["gas"], Value::Null, "{g}");
    assert_eq!(alice.balance(s, "USDC"), 1_500_000);

    // A collateral its operator cannot mint (here: code without `mint`).
    let collateral = v.deployed.collateral_address.clone().unwrap();
    let other = v.anvil.rpc("eth_getCode", json!([v.deployed.ctf_address.clone().unwrap(), "latest"])).unwrap();
    v.anvil.rpc("anvil_setCode", json!([collateral, other])).unwrap();
    let someone = alloy_signer_local::PrivateKeySigner::random().address();
    assert_eq!(
        crate::support::err(s.internal_post("/internal/faucet", &json!({"address": someone, "amount": "1"}))),
        (
            409,
            "the faucet mints the development collateral only: this venue's collateral cannot be minted by its operator"
                .to_string()
        )
    );
}

/// A settlement left in the node's pool because the chain's base fee rose above what it
/// was signed with is replaced after `--replace-after-secs`: the same nonce signed again
/// at higher fees, recorded before its broadcast; it settles the trade, and no second
/// nonce is used.
#[test]
fn a_transaction_stuck_in_the_pool_is_replaced_with_the_same_nonce() {
    let (_child, v, _) = Venue::spawned(false, &[("PREDEX_REPLACE_AFTER_SECS", "2".to_string())]);
    let (_, yes, no) = v.market();
    let alice = v.trader(100_000_000, true);
    let bob = v.trader(100_000_000, true);
    let before = operator_nonce(&v.anvil, "latest");
    v.anvil.rpc("evm_setAutomine", json!([false])).unwrap();
    alice.place(&v.server, &yes, "BUY", "0.50", "20");
    bob.place(&v.server, &no, "BUY", "0.50", "20");
    let pooled = || {
        let pool = v.anvil.rpc("txpool_content", json!([])).unwrap();
        pool["pending"].as_object().and_then(|o| o.values().next().cloned()).map(|txs| txs[before.to_string()].clone())
    };
    let first = crate::support::wait_for(30, || pooled().filter(|t| t.is_object()));
    let fee = u128::from_str_radix(first["maxFeePerGas"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
    // The chain's base fee rises above what it was signed with: the block leaves it out.
    v.anvil.rpc("anvil_setNextBlockBaseFeePerGas", json!([format!("{:#x}", fee * 4)])).unwrap();
    v.anvil.rpc("evm_mine", json!([])).unwrap();
    assert_eq!(operator_nonce(&v.anvil, "latest"), before, "left in the pool");
    // Replaced in the pool: the same nonce, another hash, higher fees.
    let second = crate::support::wait_for(30, || pooled().filter(|t| t.is_object() && t["hash"] != first["hash"]));
    let fee2 = u128::from_str_radix(second["maxFeePerGas"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
    assert!(fee2 >= fee * 5 / 4, "{fee} → {fee2}");
    v.anvil.rpc("evm_mine", json!([])).unwrap();
    let t = settled(&v, &bob);
    assert_eq!(
        (t["status"].clone(), t["transaction_hash"].clone()),
        (json!("CONFIRMED"), second["hash"].clone()),
        "{t}"
    );
    assert_eq!(operator_nonce(&v.anvil, "latest"), before + 1, "one nonce");
    assert_eq!(v.anvil.rpc("eth_getTransactionReceipt", json!([first["hash"]])).unwrap(), Value::Null);
    assert_eq!(v.holdings(&alice, &[&yes]), (90_000_000, vec![20_000_000]));
}

/// The operator's gas runs out: orders are still taken, their trades stay PENDING (none
/// FAILED for it), the metrics and the dashboard say settlement waits; funded again,
/// settlement resumes and the trade settles once.
#[test]
fn settlement_waits_while_the_operator_cannot_pay_for_gas() {
    let v = Venue::start();
    let s = &v.server;
    let (_, yes, no) = v.market();
    let alice = v.trader(100_000_000, true);
    let bob = v.trader(100_000_000, true);
    let operator = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
    let before = operator_nonce(&v.anvil, "latest");
    v.anvil.rpc("anvil_setBalance", json!([operator, "0x0"])).unwrap();
    let out_of_gas = |want: u8| {
        let text = s.internal_request("GET", "/metrics").call().unwrap().into_string().unwrap();
        text.contains(&format!("predex_chain_out_of_gas {want}"))
    };
    assert!(out_of_gas(0));
    alice.place(s, &yes, "BUY", "0.50", "20");
    let (st, b) = bob.submit(s, bob.order(s, &no, "BUY", "0.50", "20"), "GTC");
    assert_eq!((st, &b["status"]), (200, &json!("MATCHED")), "{b}");
    crate::support::wait_for(30, || out_of_gas(1).then_some(()));
    let (_, o) = s.internal_get("/internal/overview");
    assert_eq!(o["settlement"]["chain"]["outOfGas"], true, "{o}");
    std::thread::sleep(Duration::from_secs(2));
    let (_, t) = bob.l2(s, "GET", "/data/trades", None);
    assert_eq!(t["data"][0]["status"], "PENDING", "waiting, not FAILED: {t}");
    assert_eq!(operator_nonce(&v.anvil, "pending"), before, "nothing sent");
    // Still taking orders.
    alice.place(s, &yes, "BUY", "0.40", "5");

    v.anvil.rpc("anvil_setBalance", json!([operator, "0x3635C9ADC5DEA00000"])).unwrap();
    let t = settled(&v, &bob);
    assert_eq!(t["status"], "CONFIRMED", "{t}");
    assert_eq!(operator_nonce(&v.anvil, "latest"), before + 1);
    assert!(out_of_gas(0));
    let (_, o) = s.internal_get("/internal/overview");
    assert_eq!(o["settlement"]["chain"]["outOfGas"], false, "{o}");
}

/// The node unreachable while matches go on: orders from accounts already read are taken
/// and matched, the PENDING backlog and its age show in the metrics and the dashboard; the
/// node back, the backlog settles, each match once.
#[test]
fn matching_goes_on_while_the_node_is_away_and_the_backlog_drains_after() {
    let (_child, v, proxy) = Venue::spawned(true, &[]);
    let proxy = proxy.unwrap();
    let s = &v.server;
    let (_, yes, no) = v.market();
    let alice = v.trader(100_000_000, true);
    let bob = v.trader(100_000_000, true);
    // Both read from the chain once, before it goes away.
    alice.place(s, &yes, "BUY", "0.10", "10");
    bob.place(s, &no, "BUY", "0.10", "10");
    let before = operator_nonce(&v.anvil, "latest");
    let metric = |name: &str| {
        let text = s.internal_request("GET", "/metrics").call().unwrap().into_string().unwrap();
        let line = text.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap().to_string();
        line.rsplit(' ').next().unwrap().parse::<u64>().unwrap()
    };

    proxy.down.store(true, Ordering::SeqCst);
    for _ in 0..3 {
        alice.place(s, &yes, "BUY", "0.50", "10");
        let b = bob.place(s, &no, "BUY", "0.50", "10");
        assert_eq!(b["status"], "MATCHED", "{b}");
    }
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(metric("predex_pending_trades"), 3);
    let oldest = metric("predex_pending_oldest_match_timestamp_seconds");
    assert!(oldest > 0 && oldest + 3 <= crate::support::now() as u64, "{oldest}");
    let (_, o) = s.internal_get("/internal/overview");
    assert!(o["settlement"]["oldestPendingSecs"].as_u64().unwrap() >= 3, "{o}");
    assert_eq!(o["settlement"]["pending"], 3, "{o}");
    assert_eq!(operator_nonce(&v.anvil, "pending"), before, "nothing reached the node");

    proxy.down.store(false, Ordering::SeqCst);
    crate::support::wait_for(60, || (metric("predex_pending_trades") == 0).then_some(()));
    assert_eq!(metric("predex_pending_oldest_match_timestamp_seconds"), 0);
    let (_, t) = bob.l2(s, "GET", "/data/trades", None);
    let statuses: Vec<_> = t["data"].as_array().unwrap().iter().map(|x| x["status"].clone()).collect();
    assert_eq!(statuses, vec![json!("CONFIRMED"); 3], "{t}");
    assert_eq!(operator_nonce(&v.anvil, "latest"), before + 3, "each match once");
    assert_eq!(v.holdings(&bob, &[&no]), (85_000_000, vec![30_000_000]));
}

/// A settlement mined and then reorganised out of the chain before its confirmations is
/// sent again as recorded (the same hash, the same nonce) and settles once; it never
/// showed CONFIRMED before.
#[test]
fn a_settlement_reorganised_away_before_its_confirmations_is_sent_again_and_settles_once() {
    let (_child, v, _) = Venue::spawned(false, &[("PREDEX_CONFIRMATIONS", "3".to_string())]);
    let s = &v.server;
    let (_, yes, no) = v.market();
    let alice = v.trader(100_000_000, true);
    let bob = v.trader(100_000_000, true);
    let before = operator_nonce(&v.anvil, "latest");
    alice.place(s, &yes, "BUY", "0.50", "20");
    bob.place(s, &no, "BUY", "0.50", "20");
    let newest = || bob.l2(s, "GET", "/data/trades", None).1["data"][0].clone();
    let mined = crate::support::wait_for(30, || Some(newest()).filter(|t| t["status"] == "MINED"));
    let hash = mined["transaction_hash"].clone();
    assert_eq!(operator_nonce(&v.anvil, "latest"), before + 1);
    // Its block replaced by an empty one: the transaction is in no block.
    v.anvil.rpc("anvil_reorg", json!([1, []])).unwrap();
    assert_eq!(v.anvil.rpc("eth_getTransactionReceipt", json!([hash])).unwrap(), Value::Null);
    assert_ne!(newest()["status"], "CONFIRMED");
    // Sent again at once (well before the 30 s after which anything unmined is), mined
    // again (automine), and confirmed once three blocks deep.
    let t = crate::support::wait_for(20, || {
        if v.anvil.rpc("eth_getTransactionReceipt", json!([hash])).unwrap().is_object() {
            v.anvil.rpc("evm_mine", json!([])).unwrap();
        }
        Some(newest()).filter(|t| t["status"] == "CONFIRMED")
    });
    assert_eq!(t["transaction_hash"], hash, "the recorded transaction: {t}");
    assert_eq!(operator_nonce(&v.anvil, "latest"), before + 1, "one nonce");
    assert_eq!(v.holdings(&bob, &[&no]), (90_000_000, vec![20_000_000]));
}
