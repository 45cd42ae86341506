//! `predex admin`: the operator CLI against a running server's internal listener.

use std::process::Command;

use serde_json::{json, Value};

use crate::support::*;

/// Runs `predex admin …` against the server: (success, stdout as JSON, stderr).
pub fn admin(s: &Server, args: &[&str]) -> (bool, Value, String) {
    let internal = s.internal.trim_start_matches("http://");
    let out = Command::new(env!("CARGO_BIN_EXE_predex"))
        .args(["admin", "--internal", internal, "--data-dir"])
        .arg(&s.config.data_dir)
        .args(args)
        .env_remove("PREDEX_INTERNAL_ADDR")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    (
        out.status.success(),
        serde_json::from_str(&stdout).unwrap_or(Value::Null),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn admin_cli_operates_the_exchange() {
    let s = Server::start();
    let (ok, v, _) = admin(
        &s,
        &["markets", "create", "--condition-id", "0xabc", "--question", "Q?", "--yes-token", "11", "--no-token", "12"],
    );
    assert!(ok);
    assert_eq!(v["condition_id"], "0xabc");
    let (ok, v, _) = admin(&s, &["markets", "list"]);
    assert!(ok);
    assert_eq!(v.as_array().unwrap().len(), 2);
    assert_eq!(v[1]["tokens"][0], json!({"token_id": "11", "outcome": "Yes"}));
    assert_eq!(v[1]["tick_size"], "0.0100");
    // A duplicate is refused with the server's reason, on one line, and a failure exit.
    let (ok, _, why) = admin(
        &s,
        &["markets", "create", "--condition-id", "0xabc", "--question", "Q?", "--yes-token", "13", "--no-token", "14"],
    );
    assert!(!ok);
    assert_eq!(why.trim(), "predex admin: market already exists (409)");
    // A fee description for version 2 takers, set and removed.
    let (ok, v, _) = admin(&s, &["markets", "fees", "--condition-id", "0xabc", "--rate", "0.02", "--exponent", "2"]);
    assert!(ok, "{v}");
    assert_eq!(v["fd"], json!({"r": 0.02, "e": 2, "to": true}));
    assert_eq!(s.get("/clob-markets/0xabc").1["fd"], json!({"r": 0.02, "e": 2, "to": true}));
    let (ok, v, _) = admin(&s, &["markets", "fees", "--condition-id", "0xabc"]);
    assert!(ok && v["fd"].is_null(), "{v}");

    let t = s.trader(0);
    let (ok, v, _) = admin(&s, &["ledger", "credit", "--address", &t.address, "--amount", "12.5"]);
    assert!(ok, "{v}");
    assert_eq!(t.balance(&s, "USDC"), m("12.5"));
    let (ok, v, _) = admin(&s, &["ledger", "show", "--address", &t.address]);
    assert!(ok);
    assert_eq!(v["USDC"]["available"], "12.5");
    let (ok, _, why) = admin(&s, &["ledger", "credit", "--address", &t.address, "--amount", "lots"]);
    assert!(!ok && why.starts_with("predex admin: amount must be"), "{why}");

    let (ok, v, _) = admin(&s, &["waitlist", "approve", "--email", "new@example.com"]);
    assert!(ok);
    assert_eq!(v["code"].as_str().unwrap().len(), 9);

    assert_eq!(admin(&s, &["mode", "cancel-only"]).1, json!({"mode": "cancel-only"}));
    assert_eq!(admin(&s, &["mode"]).1, json!({"mode": "cancel-only"}));
    let o = t.order(&s, YES, "BUY", "0.50", "10");
    assert_eq!(t.submit(&s, o, "GTC").0, 503);
    assert!(admin(&s, &["mode", "normal"]).0);
    assert!(!admin(&s, &["mode", "sideways"]).0, "clap refuses an unknown mode");

    assert!(admin(&s, &["addresses", "ban", &t.address]).0);
    let o = t.order(&s, YES, "BUY", "0.50", "10");
    assert_eq!(err(t.submit(&s, o, "GTC")), (400, format!("'{}' address banned", t.address)));
    assert!(admin(&s, &["addresses", "clear", &t.address]).0);

    assert_eq!(
        admin(&s, &["rate-limit", "set", "--max-requests", "900", "--window-secs", "10"]).1,
        json!({"maxRequests": 900, "windowSecs": 10})
    );
    assert_eq!(admin(&s, &["rate-limit", "get"]).1, json!({"maxRequests": 900, "windowSecs": 10}));
    assert_eq!(admin(&s, &["settle"]).1, json!({"confirmed": 0, "failed": 0}));
}

#[test]
fn admin_cli_says_why_it_cannot_reach_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let token = predex::keyfile::default_token_path(dir.path());
    predex::keyfile::internal_token(&token, true).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_predex"))
        .args(["admin", "--internal", "127.0.0.1:1", "--token-file", token.to_str().unwrap(), "mode"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("cannot reach the internal server at 127.0.0.1:1"), "{err}");
    let help = Command::new(env!("CARGO_BIN_EXE_predex")).args(["admin", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for sub in ["markets", "ledger", "waitlist", "mode", "addresses", "rate-limit", "settle"] {
        assert!(help.contains(sub), "{sub} missing from --help:\n{help}");
    }
}

/// Without the server's token `predex admin` says so in one line; with another token the
/// server refuses it. `dashboard-url` prints the login link with the token.
#[test]
fn admin_cli_needs_the_servers_token() {
    let s = Server::start();
    let internal = s.internal.trim_start_matches("http://");
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_predex"))
            .args(["admin", "--internal", internal])
            .args(args)
            .env_remove("PREDEX_DATA_DIR")
            .env_remove("PREDEX_INTERNAL_TOKEN_FILE")
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let (ok, _, why) = run(&["--data-dir", "/nonexistent", "mode"]);
    assert!(
        !ok && why.lines().count() == 1 && why.contains("internal token file /nonexistent/internal.token"),
        "{why}"
    );
    let dir = tempfile::tempdir().unwrap();
    let other = predex::keyfile::default_token_path(dir.path());
    predex::keyfile::internal_token(&other, true).unwrap();
    let (ok, _, why) = run(&["--token-file", other.to_str().unwrap(), "mode", "trading-disabled"]);
    assert_eq!((ok, why.trim()), (false, "predex admin: internal token required (401)"));
    assert_eq!(s.internal_get("/internal/mode").1["mode"], "normal");
    let data_dir = s.config.data_dir.to_str().unwrap();
    let (ok, url, _) = run(&["--data-dir", data_dir, "dashboard-url"]);
    assert!(ok);
    let url: String = serde_json::from_str(&url).unwrap();
    assert_eq!(url, format!("{}/dashboard#token={}", s.internal, s.internal_token()));
}
