//! Bad input, fuzzed (`tests/fuzz/schemathesis_run.py`): schemathesis generates valid and
//! invalid requests from each public server's OpenAPI document and sends them to a real
//! predex with a real L2 key. Around the run: the fuzzing wallet's balances are what they
//! were (everything it sent was refused or changed nothing it holds), the book another
//! wallet made is untouched, and a restart brings back the same book.

use std::process::Command;

use serde_json::Value;

use crate::support::*;

fn held(s: &Server, t: &Trader) -> [(&'static str, u64); 3] {
    [("USDC", t.balance(s, "USDC")), (YES, t.balance(s, YES)), (NO, t.balance(s, NO))]
}

fn book(s: &Server) -> (Value, Value) {
    let b = s.get(&format!("/book?token_id={YES}")).1;
    (b["bids"].clone(), b["asks"].clone())
}

#[test]
fn schemathesis_finds_nothing() {
    let python = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/py/bin/python");
    assert!(python.exists(), "{} is missing: run scripts/setup.sh", python.display());
    // The demo catalogue: more markets to read, and the bridge's assets.
    let s = Server::start_tuned(|c| c.catalogue = concat!(env!("CARGO_MANIFEST_DIR"), "/data/markets.json").into());
    let maker = s.trader(m("1000"));
    s.credit(&maker.address, YES, m("500"));
    for (side, price) in [("BUY", "0.40"), ("BUY", "0.42"), ("SELL", "0.55"), ("SELL", "0.60")] {
        maker.place(&s, YES, side, price, "20");
    }
    let fuzzer = s.trader(m("300"));
    s.credit(&fuzzer.address, YES, m("50"));
    let (before, book_before) = (held(&s, &fuzzer), book(&s));

    let out = Command::new(&python)
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz/schemathesis_run.py"))
        .env("PREDEX_CLOB", &s.clob)
        .env("PREDEX_CATALOGUE", &s.catalogue)
        .env("PREDEX_ANALYTICS", &s.analytics)
        .env("PREDEX_BRIDGE", &s.bridge)
        .env("PREDEX_FUZZ_ADDRESS", &fuzzer.address)
        .env("PREDEX_FUZZ_KEY", &fuzzer.key)
        .env("PREDEX_FUZZ_SECRET", &fuzzer.secret)
        .env("PREDEX_FUZZ_PASSPHRASE", &fuzzer.passphrase)
        .output()
        .expect("the fuzz run starts");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    eprintln!("{text}");

    assert_eq!(held(&s, &fuzzer), before, "the fuzzing wallet's balances");
    assert_eq!(book(&s), book_before, "the book");
    let (config, dir) = s.stop();
    let s = Server::start_with(config);
    assert_eq!(book(&s), book_before, "the book after a restart");
    assert_eq!(held(&s, &fuzzer), before, "the balances after a restart");
    s.check();
    drop(dir);
}

/// What the fuzzing found, each refused now and changing nothing.
#[test]
fn what_the_fuzzing_found_is_refused() {
    let s = Server::start();
    let t = s.trader(m("100"));
    t.place(&s, YES, "BUY", "0.40", "10");
    let open = |t: &Trader| t.l2(&s, "GET", "/data/orders", None).1["count"].clone();
    // A filter that is not text does not widen the cancel to every order.
    for body in [r#"{"market": 5}"#, r#"{"asset_id": ["x"]}"#, "7", "[]"] {
        let (st, b) = l2_with(&t, &s, "DELETE", "/cancel-market-orders", body, &[]);
        assert_eq!((st, b), (400, serde_json::json!({"error": "Invalid payload"})), "{body}");
    }
    assert_eq!(open(&t), 1);
    for body in [r#"{"heartbeat_id": [1]}"#, "[]", "5"] {
        assert_eq!(
            err(l2_with(&t, &s, "POST", "/v1/heartbeats", body, &[])),
            (400, "Invalid payload".into()),
            "{body}"
        );
    }
    for body in ["", r#"{"heartbeat_id": null}"#, r#"{"heartbeat_id": "x"}"#] {
        assert_eq!(l2_with(&t, &s, "POST", "/v1/heartbeats", body, &[]).0, 200, "{body}");
    }
    assert_eq!(
        err(t.l2(&s, "GET", "/balance-allowance/update?asset_type=SHARES", None)),
        (400, "Invalid asset_type".into())
    );
    assert_eq!(
        err(t.l2(&s, "GET", "/balance-allowance/update?asset_type=CONDITIONAL&token_id=9", None)),
        (400, "Invalid token id".into())
    );
    assert_eq!(err(t.l2(&s, "GET", "/notifications?signature_type=x", None)), (400, "Invalid signature_type".into()));
    // An empty typed parameter on the catalogue and analytics servers is malformed.
    assert_eq!(err(s.catalogue_get("/markets?limit=")).0, 400);
    assert_eq!(err(s.catalogue_get("/markets?archived=true&limit=x")).0, 400);
    assert_eq!(err(s.analytics_get("/trades?side=")), (400, "side must be BUY or SELL".into()));
    assert_eq!(
        err(s.analytics_get("/trades?filterAmount=")),
        (400, "filterType and filterAmount must be used together".into())
    );
    assert_eq!(open(&t), 1, "refusals change nothing");
}
