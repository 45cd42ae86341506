//! Polymarket's official clients, unpatched, against a real predex: py-clob-client and
//! py-clob-client-v2 (`tests/clients/*.py`, pinned in `tools/requirements.txt`),
//! @polymarket/clob-client and -v2 (`tests/clients/node`, pinned with its lockfile) and
//! polymarket_client_sdk_v2 (`tests/clients/rust`, pinned with its lockfile). Each is given
//! only what a user changes — the host and the chain id (137: predex's default exchange
//! addresses are Polymarket's) — and gets its first key through its own
//! `create_or_derive_api_key`, which `invite-only = false` allows. `scripts/setup.sh`
//! installs them all; a missing one fails here.

use std::path::Path;
use std::process::Command;

use crate::support::*;

fn client_server() -> Server {
    client_server_of(1)
}

fn client_server_of(version: u8) -> Server {
    let s = Server::start_tuned(|c| {
        c.order_version = version;
        c.invite_only = false;
        c.order_domain_name = predex::auth::POLYMARKET_ORDER_DOMAIN.into();
        // Settled within the clients' tests, which check the settlement's hash.
        c.settlement_interval_ms = 200;
    });
    if version == 2 {
        let fd = serde_json::json!({"condition_id": COND, "rate": "0.25", "exponent": 2});
        assert_eq!(s.internal_post("/internal/markets/fees", &fd).0, 200);
    }
    s
}

/// Runs a client's test program against `s`; it prints what it checked.
fn run(program: &Path, args: &[&str], s: &Server) {
    run_on(program, args, s, (COND, YES, NO));
}

/// [`run`] on the market `(condition, yes, no)`.
fn run_on(program: &Path, args: &[&str], s: &Server, (cond, yes, no): (&str, &str, &str)) {
    assert!(!program.is_absolute() || program.exists(), "{} is missing: run scripts/setup.sh", program.display());
    let out = Command::new(program)
        .args(args)
        .env("PREDEX_CLOB", &s.clob)
        .env("PREDEX_INTERNAL", &s.internal)
        .env("PREDEX_INTERNAL_TOKEN", s.internal_token())
        .env("PREDEX_COND", cond)
        .env("PREDEX_YES", yes)
        .env("PREDEX_NO", no)
        .env("PREDEX_ORDER_VERSION", s.config.order_version.to_string())
        .output()
        .expect("the client's test starts");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    eprintln!("{text}");
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn official_python_client() {
    let s = client_server();
    let test = root().join("tests/clients/py_clob_client_test.py");
    run(&root().join("tools/py/bin/python"), &[test.to_str().unwrap()], &s);
}

/// The V2 client on a version-1 venue: it reads `GET /version` and signs version 1.
#[test]
fn official_python_v2_client() {
    let s = client_server();
    let test = root().join("tests/clients/py_clob_client_v2_test.py");
    run(&root().join("tools/py/bin/python"), &[test.to_str().unwrap()], &s);
}

#[test]
fn official_typescript_client() {
    let s = client_server();
    let dir = root().join("tests/clients/node");
    assert!(dir.join("node_modules/@polymarket/clob-client").exists(), "run scripts/setup.sh");
    run(Path::new("node"), &[dir.join("clob_client_test.mjs").to_str().unwrap()], &s);
}

/// The V2 client on a version-1 venue.
#[test]
fn official_typescript_v2_client() {
    typescript_v2(1);
}

/// The V2 clients on a version-2 venue: they sign version 2 orders, and their takers pay
/// the market's fee description.
#[test]
fn official_v2_clients_on_a_version_2_venue() {
    let s = client_server_of(2);
    let test = root().join("tests/clients/py_clob_client_v2_test.py");
    run(&root().join("tools/py/bin/python"), &[test.to_str().unwrap()], &s);
    drop(s);
    typescript_v2(2);
}

fn typescript_v2(version: u8) {
    let s = client_server_of(version);
    let dir = root().join("tests/clients/node");
    assert!(dir.join("node_modules/@polymarket/clob-client-v2").exists(), "run scripts/setup.sh");
    run(Path::new("node"), &[dir.join("clob_client_v2_test.mjs").to_str().unwrap()], &s);
}

/// Polymarket's unified SDK in Python (polymarket-client, in tools/py-sdk) on a version-2
/// venue.
#[test]
fn official_unified_sdk() {
    let test = root().join("tests/clients/polymarket_client_test.py");
    unified_sdk(&root().join("tools/py-sdk/bin/python"), &[test.to_str().unwrap()]);
}

/// Polymarket's unified SDK in TypeScript (@polymarket/client, in tests/clients/node) on a
/// version-2 venue. It asks for Node 24, whose WebSocket is global; Debian's Node 20 has
/// the same one (undici's) behind a flag.
#[test]
fn official_unified_typescript_sdk() {
    let dir = root().join("tests/clients/node");
    assert!(dir.join("node_modules/@polymarket/client").exists(), "run scripts/setup.sh");
    let test = dir.join("polymarket_client_test.mjs");
    unified_sdk(Path::new("node"), &["--experimental-websocket", test.to_str().unwrap()]);
}

/// Runs a unified SDK's test on a version-2 venue with a market of its own. The SDKs read
/// condition ids as 32 bytes, and take a token id whose bits 40 to 103 are all zero for a
/// position of Polymarket's newer protocol (signed for another exchange), so the market's
/// ids are as ConditionalTokens makes them; its takers pay a fee description.
fn unified_sdk(program: &Path, args: &[&str]) {
    let s = client_server_of(2);
    let cond = format!("0x{}", "c2".repeat(32));
    let yes = "47548532878000795436471885496554996210469829388180983864669623532585348412472";
    let no = "12430175616472221454162180969950967837556342716352606253447509588223701520427";
    let market = serde_json::json!({
        "condition_id": cond, "question": "Will the unified SDK trade?", "slug": "unified-sdk",
        "tokens": [{"token_id": yes, "outcome": "Yes"}, {"token_id": no, "outcome": "No"}],
        "tick_size": "0.01", "min_order_size": "5",
    });
    assert_eq!(s.internal_post("/internal/markets", &market).0, 200);
    let fd = serde_json::json!({"condition_id": cond, "rate": "0.25", "exponent": 2});
    assert_eq!(s.internal_post("/internal/markets/fees", &fd).0, 200);
    run_on(program, args, &s, (&cond, yes, no));
}

/// Polymarket's relayer clients with a builder key, in ledger mode: the TypeScript one
/// (@polymarket/builder-relayer-client) deploys its owner's Safe and runs approvals, a split
/// and a merge from it, then approvals and a split from the owner's proxy wallet; the
/// Python one (py-builder-relayer-client) deploys another owner's Safe and splits from it
/// and from that owner's proxy wallet. The wallets' balances follow; the owners' own are
/// untouched.
#[test]
fn official_relayer_client() {
    let s = client_server();
    let dir = root().join("tests/clients/node");
    assert!(dir.join("node_modules/@polymarket/builder-relayer-client").exists(), "run scripts/setup.sh");
    let cond = format!("0x{}", "c3".repeat(32));
    let (yes, no) = ("3301", "3302");
    let market = serde_json::json!({
        "condition_id": cond, "question": "Will the relayer relay?", "slug": "relayer-client",
        "tokens": [{"token_id": yes, "outcome": "Yes"}, {"token_id": no, "outcome": "No"}],
        "tick_size": "0.01", "min_order_size": "5",
    });
    assert_eq!(s.internal_post("/internal/markets", &market).0, 200);
    let builder = s.trader(0);
    let (st, creds) = builder.l2(&s, "POST", "/auth/builder-api-key", Some(&serde_json::json!({"builderId": "relay"})));
    assert_eq!(st, 200, "{creds}");
    let units = |wallet: &str, asset: &str| {
        let held = s.internal_get(&format!("/internal/balances?address={wallet}")).1;
        held[asset]["balance"].as_str().map(|x| predex::domain::parse_decimal(x, 6).unwrap())
    };
    let test = root().join("tests/clients/py_builder_relayer_client_test.py");
    let clients = [
        (
            Path::new("node"),
            dir.join("builder_relayer_client_test.mjs"),
            [m("100"), m("20")],
            [m("94"), m("6"), m("15"), m("5")],
        ),
        (&root().join("tools/py/bin/python"), test, [m("10"), m("10")], [m("7"), m("3"), m("8"), m("2")]),
    ];
    for (program, script, [in_safe, in_proxy], [safe_usdc, safe_sets, proxy_usdc, proxy_sets]) in clients {
        let owner = s.trader(m("7"));
        let (safe, proxy) = (format!("{:#x}", owner.derived(&s, 2)), format!("{:#x}", owner.derived(&s, 1)));
        s.credit(&safe, "USDC", in_safe);
        s.credit(&proxy, "USDC", in_proxy);
        let out = Command::new(program)
            .arg(&script)
            .env("PREDEX_CLOB", &s.clob)
            .env("PREDEX_COND", &cond)
            .env("PREDEX_OWNER_KEY", format!("0x{}", alloy_primitives::hex::encode(owner.wallet.to_bytes())))
            .env("PREDEX_BUILDER_KEY", creds["apiKey"].as_str().unwrap())
            .env("PREDEX_BUILDER_SECRET", creds["secret"].as_str().unwrap())
            .env("PREDEX_BUILDER_PASSPHRASE", creds["passphrase"].as_str().unwrap())
            .output()
            .expect("the client's test starts");
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{}: {text}", script.display());
        let safe_holds = (units(&safe, "USDC"), units(&safe, yes), units(&safe, no));
        assert_eq!(safe_holds, (Some(safe_usdc), Some(safe_sets), Some(safe_sets)), "{}", script.display());
        let proxy_holds = (units(&proxy, "USDC"), units(&proxy, yes), units(&proxy, no));
        assert_eq!(proxy_holds, (Some(proxy_usdc), Some(proxy_sets), Some(proxy_sets)), "{}", script.display());
        assert_eq!(owner.balance(&s, "USDC"), m("7"), "the owner paid nothing");
    }
    s.check();
}

/// polymarket_client_sdk_v2 (tests/clients/rust, built by scripts/setup.sh) on a
/// version-1 and a version-2 venue. It reads condition ids as 32 bytes, so it trades a
/// market of its own whose id is.
#[test]
fn official_rust_v2_client() {
    let bin = root().join("target/clients/debug/v2-client-check");
    assert!(bin.exists(), "{} is missing: run scripts/setup.sh", bin.display());
    let cond = format!("0x{}", "c1".repeat(32));
    let (yes, no) = ("3001", "3002");
    for version in [1, 2] {
        let s = client_server_of(version);
        let market = serde_json::json!({
            "condition_id": cond, "question": "Will the Rust client trade?", "slug": "rust-client",
            "tokens": [{"token_id": yes, "outcome": "Yes"}, {"token_id": no, "outcome": "No"}],
            "tick_size": "0.01", "min_order_size": "5",
        });
        assert_eq!(s.internal_post("/internal/markets", &market).0, 200);
        let (maker, taker) = (Trader::new(), Trader::new());
        s.credit(&maker.address, "USDC", m("100"));
        s.credit(&maker.address, yes, m("100"));
        s.credit(&taker.address, "USDC", m("100"));
        let key = |t: &Trader| format!("0x{}", alloy_primitives::hex::encode(t.wallet.to_bytes()));
        let out = Command::new(&bin)
            .env("PREDEX_CLOB", &s.clob)
            .env("PREDEX_ORDER_VERSION", version.to_string())
            .env("PREDEX_COND", &cond)
            .env("PREDEX_YES", yes)
            .env("PREDEX_NO", no)
            .env("PREDEX_MAKER_KEY", key(&maker))
            .env("PREDEX_TAKER_KEY", key(&taker))
            .output()
            .expect("the client's test starts");
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "order version {version}: {text}");
        eprintln!("{text}");
    }
}

/// Polymarket's clients, unpatched, against a chain-mode venue on the Polygon layout (anvil
/// with chain id 137, every contract where the clients hard-code it): each relayer client
/// deploys its owner's Safe, gives the venue its approvals and splits from the Safe and the
/// proxy wallet, the operator paying the gas; then each CLOB client trades for those wallets
/// (signature types 2 and 1, the wallet as funder), its bids matched by an EOA and settled
/// on chain. Every balance is read on chain, to the base unit.
#[test]
fn official_clients_with_wallets_on_the_polygon_layout() {
    use crate::support::chain::Venue;
    let v = Venue::start_polygon();
    let s = &v.server;
    let (cond, yes, no) = v.market();
    let builder = s.trader(0);
    let (st, creds) = builder.l2(s, "POST", "/auth/builder-api-key", Some(&serde_json::json!({"builderId": "relay"})));
    assert_eq!(st, 200, "{creds}");
    let key = |t: &Trader| format!("0x{}", alloy_primitives::hex::encode(t.wallet.to_bytes()));
    let client = |program: &Path, script: Option<&Path>, env: &[(&str, String)]| {
        let out = Command::new(program)
            .args(script)
            .env("PREDEX_CLOB", &s.clob)
            .env("PREDEX_COND", &cond)
            .env("PREDEX_YES", &yes)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .output()
            .expect("the client's test starts");
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{}: {text}", program.display());
        eprintln!("{text}");
    };
    let (node, python) = (Path::new("node"), root().join("tools/py/bin/python"));
    let dir = root().join("tests/clients/node");

    // The relayer clients, as in ledger mode: each owner's wallets funded on chain first.
    let relayers = [
        (node, dir.join("builder_relayer_client_test.mjs"), [m("100"), m("20")], [m("94"), m("6"), m("15"), m("5")]),
        (
            python.as_path(),
            root().join("tests/clients/py_builder_relayer_client_test.py"),
            [m("10"), m("10")],
            [m("7"), m("3"), m("8"), m("2")],
        ),
    ];
    let mut owners = Vec::new();
    for (program, script, [in_safe, in_proxy], [safe_usdc, safe_sets, proxy_usdc, proxy_sets]) in relayers {
        let owner = s.trader(0);
        let (safe, proxy) = (owner.derived(s, 2), owner.derived(s, 1));
        v.mint(safe, in_safe);
        v.mint(proxy, in_proxy);
        client(
            program,
            Some(&script),
            &[
                ("PREDEX_OWNER_KEY", key(&owner)),
                ("PREDEX_BUILDER_KEY", creds["apiKey"].as_str().unwrap().into()),
                ("PREDEX_BUILDER_SECRET", creds["secret"].as_str().unwrap().into()),
                ("PREDEX_BUILDER_PASSPHRASE", creds["passphrase"].as_str().unwrap().into()),
            ],
        );
        assert_eq!(v.holdings_of(safe, &[&yes, &no]), (safe_usdc, vec![safe_sets, safe_sets]), "{}", script.display());
        assert_eq!(v.holdings_of(proxy, &[&yes, &no]), (proxy_usdc, vec![proxy_sets, proxy_sets]));
        assert_eq!(v.gas_of(owner.wallet.address()), alloy_primitives::U256::ZERO, "the relayer paid");
        owners.push((program, owner));
    }

    // The CLOB clients trade for those wallets: a bid of 10 YES at 0.40 each, matched by an
    // EOA's bid for NO at 0.60 (a mint on chain).
    let eoa = v.trader(m("100"), true);
    for (program, owner) in owners {
        let script = match program == node {
            true => dir.join("clob_client_wallets_test.mjs"),
            false => root().join("tests/clients/py_clob_client_wallets_test.py"),
        };
        for signature_type in [2, 1] {
            let funder = owner.derived(s, signature_type);
            let (usdc, held) = v.holdings_of(funder, &[&yes]);
            client(
                program,
                Some(&script),
                &[
                    ("PREDEX_OWNER_KEY", key(&owner)),
                    ("PREDEX_SIGNATURE_TYPE", signature_type.to_string()),
                    ("PREDEX_FUNDER", format!("{funder:#x}")),
                    ("PREDEX_FUNDER_USDC", usdc.to_string()),
                ],
            );
            let taken = eoa.place(s, &no, "BUY", "0.60", "10");
            assert_eq!(taken["status"], "MATCHED", "{taken}");
            assert_eq!(crate::chain::settled(&v, &eoa)["status"], "CONFIRMED");
            assert_eq!(
                v.holdings_of(funder, &[&yes]),
                (usdc - m("4"), vec![held[0] + m("10")]),
                "{}",
                script.display()
            );
        }
        assert_eq!(v.gas_of(owner.wallet.address()), alloy_primitives::U256::ZERO);
    }

    // The Rust client (tests/clients/rust, built by scripts/setup.sh): a fresh owner's Safe,
    // made through the factory and approved by the Safe's own transactions, holding only
    // collateral when the client reads its balance (the client reads `allowances` as spender
    // → allowance; a version 1 venue answers token → amount, docs/reference/spec-choices.md),
    // trades with an EOA.
    let bin = root().join("target/clients/debug/v1-client-check");
    assert!(bin.exists(), "{} is missing: run scripts/setup.sh", bin.display());
    let owner = s.trader(0);
    let safe = owner.derived(s, 2);
    crate::chain_wallets::create_safe(&v, &owner).expect("the Safe is made");
    for (to, data) in crate::chain_wallets::approvals(&v) {
        crate::chain_wallets::safe_exec(&v, &owner, safe, to, data).expect("the Safe approves");
    }
    v.mint(safe, m("50"));
    let taker = v.trader(m("100"), true);
    client(
        &bin,
        None,
        &[
            ("PREDEX_NO", no.clone()),
            ("PREDEX_FUNDER", format!("{safe:#x}")),
            ("PREDEX_FUNDER_USDC", m("50").to_string()),
            ("PREDEX_MAKER_KEY", key(&owner)),
            ("PREDEX_TAKER_KEY", key(&taker)),
        ],
    );
    assert_eq!(crate::chain::settled(&v, &taker)["status"], "CONFIRMED");
    assert_eq!(v.holdings_of(safe, &[&yes, &no]), (m("46"), vec![m("10"), 0]));
    assert_eq!(v.holdings(&taker, &[&yes, &no]), (m("94"), vec![0, m("10")]));
    s.check();
}
