//! Crash safety: the `predex` binary as a child process, clients trading concurrently while
//! trades settle, then `kill -9` (or SIGTERM, which must drain and exit 0), restart on the
//! same data dir. Everything acknowledged is there; everything unacknowledged is wholly
//! there or wholly absent; books match the persisted orders; collateral and tokens are
//! conserved.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::*;

#[test]
fn kill_9_loses_nothing_acknowledged() {
    stop_under_load(false);
}

#[test]
fn sigterm_drains_and_loses_nothing_acknowledged() {
    stop_under_load(true);
}

fn stop_under_load(sigterm: bool) {
    let dir = tempfile::tempdir().unwrap();
    let mut p = spawn(dir.path());
    assert!(p.logs_ahead, "the server did not write its log files ahead");
    let s = &p.server;
    s.create_market(COND, YES, NO, "0.01", false);
    let traders: Vec<Arc<Trader>> = (0..4).map(|_| Arc::new(s.trader(m("1000")))).collect();
    for t in &traders {
        s.credit(&t.address, YES, m("1000"));
    }
    let (acked, sent) = the_server_stops_mid_flight(&mut p, &traders, sigterm);
    let p2 = spawn(dir.path());
    let s = &p2.server;
    s.check();
    every_acknowledged_order_survived_and_no_other_half_did(s, &traders, &acked, &sent);
    the_book_is_exactly_the_persisted_open_orders(s, &traders);
    once_settled_collateral_and_tokens_are_conserved(s, &traders, (m("4000"), m("4000")));
    each_wallets_history_holds_exactly_its_standing_trades(s, &traders);
    drop(p2);
}

/// Traders trade; then the server is killed (or drains on SIGTERM and exits 0). What was
/// acknowledged, and every order sent.
fn the_server_stops_mid_flight(
    p: &mut Proc,
    traders: &[Arc<Trader>],
    sigterm: bool,
) -> (BTreeMap<String, Value>, Vec<String>) {
    let load = Load::start(&p.server, traders);
    load.wait_acked(150);
    if sigterm {
        let pid = p.child.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
        let status = p.child.wait().unwrap();
        assert!(status.success(), "SIGTERM must drain and exit 0, got {status}");
    } else {
        p.child.kill().unwrap(); // SIGKILL
        p.child.wait().unwrap();
    }
    let (acked, sent) = load.stop();
    assert!(acked.len() >= 100, "only {} acknowledged", acked.len());
    (acked, sent)
}

/// Every acknowledged order and its trades survived, with at least the acknowledged fill;
/// an unacknowledged one is wholly there (with all its trades) or wholly absent.
fn every_acknowledged_order_survived_and_no_other_half_did(
    s: &Server,
    traders: &[Arc<Trader>],
    acked: &BTreeMap<String, Value>,
    sent: &[String],
) {
    let all_trades = all_trades(s, traders);
    let owner_of =
        |id: &str| traders.iter().find(|t| t.l2(s, "GET", &format!("/data/order/{id}"), None).0 == 200).cloned();
    for (id, res) in acked {
        let t = owner_of(id).unwrap_or_else(|| panic!("acknowledged order {id} lost"));
        let o = t.l2(s, "GET", &format!("/data/order/{id}"), None).1;
        if res["status"] == "MATCHED" {
            assert_eq!(o["status"], "MATCHED");
        }
        for tid in res["tradeIds"].as_array().unwrap() {
            assert!(all_trades.contains_key(tid.as_str().unwrap()), "acknowledged trade {tid} lost");
        }
    }
    let unacked: Vec<&String> = sent.iter().filter(|id| !acked.contains_key(*id)).collect();
    let mut survived = 0;
    for id in &unacked {
        if let Some(t) = owner_of(id) {
            survived += 1;
            let o = t.l2(s, "GET", &format!("/data/order/{id}"), None).1;
            for tid in o["associate_trades"].as_array().unwrap() {
                assert!(all_trades.contains_key(tid.as_str().unwrap()), "partial write of {id}");
            }
        }
    }
    eprintln!(
        "crash: {} acknowledged, {} unacknowledged ({} persisted), {} trades",
        acked.len(),
        unacked.len(),
        survived,
        all_trades.len()
    );
}

fn the_book_is_exactly_the_persisted_open_orders(s: &Server, traders: &[Arc<Trader>]) {
    let mut want: BTreeMap<(String, String), u64> = BTreeMap::new();
    for t in traders {
        let page = t.l2(s, "GET", "/data/orders", None).1;
        let mut cursor = page["next_cursor"].as_str().unwrap().to_string();
        let mut items = page["data"].as_array().unwrap().clone();
        while cursor != "LTE=" {
            let p = t.l2(s, "GET", &format!("/data/orders?next_cursor={cursor}"), None).1;
            items.extend(p["data"].as_array().unwrap().clone());
            cursor = p["next_cursor"].as_str().unwrap().to_string();
        }
        for o in items {
            let rem = m(o["original_size"].as_str().unwrap()) - m(o["size_matched"].as_str().unwrap());
            let side = if o["side"] == "BUY" { "bids" } else { "asks" };
            *want.entry((side.to_string(), o["price"].as_str().unwrap().to_string())).or_default() += rem;
        }
    }
    let book = s.get(&format!("/book?token_id={YES}")).1;
    let mut got: BTreeMap<(String, String), u64> = BTreeMap::new();
    for side in ["bids", "asks"] {
        for l in book[side].as_array().unwrap() {
            got.insert((side.to_string(), l["price"].as_str().unwrap().to_string()), m(l["size"].as_str().unwrap()));
        }
    }
    assert_eq!(got, want);
}

/// Complementary trades move USDC and YES between traders only. Read once every trade is
/// settled: the settlement worker runs meanwhile, and balances read one trader after
/// another around one of its passes would not add up.
fn once_settled_collateral_and_tokens_are_conserved(s: &Server, traders: &[Arc<Trader>], at_start: (u64, u64)) {
    let start = Instant::now();
    while all_trades(s, traders).values().any(|t| !["CONFIRMED", "FAILED"].contains(&t["status"].as_str().unwrap())) {
        assert!(start.elapsed() < Duration::from_secs(30), "trades still unsettled after 30 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (mut usdc, mut yes) = (0, 0);
    for t in traders {
        usdc += t.balance(s, "USDC");
        yes += t.balance(s, YES);
    }
    assert_eq!((usdc, yes), at_start);
}

/// Each wallet's history in the data API (written behind the trades, from a log a start
/// applies) holds exactly its trades that stand, those of the last moments before the kill
/// included.
fn each_wallets_history_holds_exactly_its_standing_trades(s: &Server, traders: &[Arc<Trader>]) {
    let trades = all_trades(s, traders);
    for t in traders {
        let (st, rows) = s.analytics_get(&format!("/trades?user={}&takerOnly=false&limit=10000", t.address));
        assert_eq!(st, 200, "{rows}");
        let history: std::collections::BTreeSet<&str> =
            rows.as_array().unwrap().iter().map(|r| r["transactionHash"].as_str().unwrap()).collect();
        let own = |tr: &Value| {
            tr["maker_address"] == t.address.as_str()
                || tr["maker_orders"].as_array().unwrap().iter().any(|m| m["maker_address"] == t.address.as_str())
        };
        let standing: std::collections::BTreeSet<&str> = trades
            .values()
            .filter(|tr| tr["status"] != "FAILED" && own(tr))
            .map(|tr| tr["transaction_hash"].as_str().unwrap())
            .collect();
        assert_eq!(history, standing, "{}", t.address);
    }
}

/// Under systemd (Type=notify): READY=1 once listening, WATCHDOG=1 at half WatchdogSec while
/// the engine answers, STOPPING=1 on SIGTERM, then a clean exit.
#[test]
fn tells_systemd_ready_watchdog_and_stopping() {
    use std::os::unix::net::UnixDatagram;
    let dir = tempfile::tempdir().unwrap();
    let sock_path = dir.path().join("notify.sock");
    let sock = UnixDatagram::bind(&sock_path).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let data = dir.path().join("data");
    let mut p =
        spawn_with(&data, &[("NOTIFY_SOCKET", sock_path.display().to_string()), ("WATCHDOG_USEC", "200000".into())]);
    let mut buf = [0u8; 256];
    let mut recv = || {
        let n = sock.recv(&mut buf).expect("a notification");
        String::from_utf8_lossy(&buf[..n]).trim().to_string()
    };
    assert_eq!(recv(), "READY=1", "ready comes first, after the listeners are bound");
    assert!(p.server.get("/ok").0 == 200);
    for _ in 0..3 {
        assert_eq!(recv(), "WATCHDOG=1");
    }
    let pid = p.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let mut seen = recv();
    while seen == "WATCHDOG=1" {
        seen = recv();
    }
    assert_eq!(seen, "STOPPING=1");
    assert!(p.child.wait().unwrap().success());
}
