//! Bad input, fuzzed (`tests/fuzz/schemathesis_run.py`): schemathesis generates valid and
//! invalid requests from each public server's OpenAPI document and sends them to a real
//! predex with a real L2 key. Around the run: the fuzzing wallet's balances are what they
//! were (everything it sent was refused or changed nothing it holds), the book another
//! wallet made is untouched, and a restart brings back the same book.

use std::process::Command;

use serde_json::Value;

use crate::fixture::*;

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
        .env("PREDEX_GAMMA", &s.gamma)
        .env("PREDEX_DATA", &s.data)
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
