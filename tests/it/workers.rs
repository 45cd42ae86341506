//! The background workers, each at a short interval: settlement (confirms, fails, notifies,
//! conserves), GTD expiration, and the heartbeat monitor.

use serde_json::json;

use crate::support::*;

fn trade_status(t: &Trader, s: &Server, id: &str) -> String {
    let p = t.l2(s, "GET", &format!("/data/trades?id={id}"), None).1;
    p["data"][0]["status"].as_str().unwrap_or_default().to_string()
}

#[test]
fn settlement_worker_confirms_and_fails_trades_and_notifies() {
    let s = Server::start_tuned(|c| c.settlement_interval_ms = 200);
    let buyer = s.trader(m("100"));
    let seller = s.trader(0);
    s.credit(&seller.address, YES, m("30"));
    let total = |asset: &str| buyer.balance(&s, asset) + seller.balance(&s, asset);
    let (usdc0, yes0) = (total("USDC"), total(YES));

    seller.place(&s, YES, "SELL", "0.60", "10");
    let r = buyer.place(&s, YES, "BUY", "0.60", "10");
    let trade = r["tradeIds"][0].as_str().unwrap().to_string();
    wait_for(10, || (trade_status(&buyer, &s, &trade) == "CONFIRMED").then_some(()));
    assert_eq!(trade_status(&seller, &s, &trade), "CONFIRMED");
    assert_eq!(buyer.balance(&s, YES), m("10"));
    assert_eq!(buyer.balance(&s, "USDC"), m("94"));
    assert_eq!(seller.balance(&s, "USDC"), m("6"));
    assert_eq!((total("USDC"), total(YES)), (usdc0, yes0), "settlement conserves");

    // Both parties are told, each with its own side.
    let (st, n) = buyer.l2(&s, "GET", "/notifications", None);
    assert_eq!(st, 200, "{n}");
    assert_eq!(n.as_array().unwrap().len(), 1);
    assert_eq!(n[0]["type"], "TRADE_CONFIRMED");
    assert_eq!(n[0]["owner"], buyer.key.as_str());
    assert_eq!(n[0]["payload"]["tradeId"], trade.as_str());
    assert_eq!(n[0]["payload"]["trader_side"], "TAKER");
    let n = seller.l2(&s, "GET", "/notifications", None).1;
    assert_eq!((n[0]["type"].clone(), n[0]["payload"]["side"].clone()), (json!("TRADE_CONFIRMED"), json!("SELL")));

    // The seller invalidates its nonce (the exchange's incrementNonce) before the next fill
    // settles: its open order is cancelled and the trade fails; nothing moves.
    seller.place(&s, YES, "SELL", "0.60", "20");
    let r = buyer.place(&s, YES, "BUY", "0.60", "10");
    let failed = r["tradeIds"][0].as_str().unwrap().to_string();
    let (st, inc) = s.internal_post("/internal/nonce/increment", &json!({"address": seller.address}));
    assert_eq!(st, 200, "{inc}");
    assert_eq!((inc["nonce"].clone(), inc["canceled"].as_array().unwrap().len()), (json!(1), 1));
    wait_for(10, || (trade_status(&buyer, &s, &failed) == "FAILED").then_some(()));
    let t = &buyer.l2(&s, "GET", &format!("/data/trades?id={failed}"), None).1["data"][0];
    assert!(t["error_msg"].as_str().unwrap().contains("nonce"), "{t}");
    assert_eq!(buyer.balance(&s, YES), m("10"));
    assert_eq!(buyer.balances(&s)["USDC"]["reserved"], "0");
    assert_eq!(seller.balances(&s)[YES]["reserved"], "0");
    assert_eq!((total("USDC"), total(YES)), (usdc0, yes0));
    let n = buyer.l2(&s, "GET", "/notifications", None).1;
    assert_eq!(n[0]["type"], "TRADE_FAILED", "newest first: {n}");
    assert_eq!(n[1]["type"], "TRADE_CONFIRMED");
    // An order signed with the old nonce is refused from now on.
    let o = seller.order(&s, YES, "SELL", "0.60", "5");
    assert_eq!(err(seller.submit(&s, o, "GTC")), (400, "invalid nonce".into()));

    // DELETE clears the key's notifications only.
    assert_eq!(buyer.l2(&s, "DELETE", "/notifications", None), (200, json!({})));
    assert_eq!(buyer.l2(&s, "GET", "/notifications", None).1, json!([]));
    assert_eq!(seller.l2(&s, "GET", "/notifications", None).1.as_array().unwrap().len(), 2);
    // Paths with IDs count under their route, whatever the ID; unknown paths as one.
    for i in 0..3 {
        s.get(&format!("/markets/0x{i:064x}"));
        s.get(&format!("/no-such-route-{i}"));
    }
    let metrics = s.internal_get("/metrics").1;
    let text = metrics.as_str().unwrap();
    assert!(text.contains(r#"predex_http_requests_total{route="/markets/{condition_id}",status="404"} 3"#), "{text}");
    assert!(text.contains(r#"predex_http_requests_total{route="unmatched",status="404"} 3"#), "{text}");
    assert!(!text.contains("no-such-route") && !text.contains("0x0000"), "{text}");
    assert!(text.contains(r#"predex_settlements_total{result="confirmed"} 1"#), "{text}");
    assert!(text.contains(r#"predex_settlements_total{result="failed"} 1"#), "{text}");
    assert!(text.contains("predex_matches_total 2"), "{text}");
    assert!(text.contains(r#"predex_http_requests_total{route="/order",status="200"}"#), "{text}");
    // Five placements reached the engine: four accepted, one refused for its stale nonce.
    assert!(text.contains(r#"predex_order_command_seconds_count{command="place"} 5"#), "{text}");
    assert!(text.contains("predex_pending_trades 0"), "{text}");
    assert!(text.contains(r#"predex_worker_runs_total{worker="settlement"}"#), "{text}");
    assert!(text.contains("predex_persister_sync_seconds_count"), "{text}");
    assert!(sample(text, "predex_persister_write_bytes_total").is_some_and(|b| b > 0), "{text}");
    // One request at a time: some groups found the writer idle and nothing queued.
    assert!(sample(text, "predex_persister_inline_groups_total").is_some_and(|n| n > 0), "{text}");
    s.check();
}

/// The value of an unlabelled integer sample in a Prometheus text exposition.
fn sample(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn gtd_orders_are_cancelled_when_they_expire() {
    let s = Server::start_tuned(|c| c.gtd_interval_ms = 100);
    let t = s.trader(m("100"));
    let exp = (now() + 2) as u64;
    let o = t.signed(YES, "BUY", m("5"), m("10")).expiration(exp).sign(&s);
    let (st, r) = t.submit(&s, o, "GTD");
    assert_eq!(st, 200, "{r}");
    let id = r["orderID"].as_str().unwrap().to_string();
    let keep = t.place(&s, YES, "BUY", "0.40", "10")["orderID"].as_str().unwrap().to_string();
    assert_eq!(t.balances(&s)["USDC"]["reserved"], "9");
    wait_for(10, || (t.l2(&s, "GET", &format!("/data/order/{id}"), None).1["status"] == "CANCELED").then_some(()));
    assert_eq!(t.balances(&s)["USDC"]["reserved"], "4", "the GTD reservation is released");
    assert_eq!(s.get(&format!("/book?token_id={YES}")).1["bids"], json!([{"price": "0.4", "size": "10"}]));
    assert_eq!(t.l2(&s, "GET", &format!("/data/order/{keep}"), None).1["status"], "LIVE");
    let metrics = s.internal_get("/metrics").1;
    assert!(metrics.as_str().unwrap().contains(r#"predex_worker_cancels_total{worker="gtd-expiration"} 1"#));
    s.check();
}

#[test]
fn a_silent_heartbeat_cancels_that_keys_orders_only() {
    let s = Server::start_tuned(|c| c.heartbeat_check_ms = 200);
    let silent = s.trader(m("100"));
    let beating = s.trader(m("100"));
    let never = s.trader(m("100"));
    let (st, first) = silent.l2(&s, "POST", "/v1/heartbeats", Some(&json!({"heartbeat_id": null})));
    assert_eq!((st, &first["status"]), (200, &json!("ok")), "{first}");
    let id = first["heartbeat_id"].as_str().unwrap();
    assert!(id.parse::<uuid::Uuid>().is_ok(), "{first}");
    // The clients chain the id from one heartbeat to the next.
    let (st, next) = silent.l2(&s, "POST", "/v1/heartbeats", Some(&json!({ "heartbeat_id": id })));
    assert_eq!((st, &next["status"]), (200, &json!("ok")));
    assert_ne!(next["heartbeat_id"], first["heartbeat_id"]);
    assert!(next["heartbeat_id"].as_str().unwrap().parse::<uuid::Uuid>().is_ok());
    assert_eq!(beating.l2(&s, "GET", "/auth/heartbeat", None), (200, json!({})));
    for t in [&silent, &beating, &never] {
        t.place(&s, YES, "BUY", "0.40", "10");
    }
    // Unauthenticated heartbeats are refused.
    assert_eq!(s.post("/v1/heartbeats", &json!({})).0, 401);
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(13) {
        assert_eq!(beating.l2(&s, "POST", "/v1/heartbeats", None).0, 200);
        std::thread::sleep(std::time::Duration::from_secs(2));
    }
    let open = |t: &Trader| t.l2(&s, "GET", "/data/orders", None).1["count"].as_u64().unwrap();
    assert_eq!(open(&silent), 0, "more than 10 s without a heartbeat");
    assert_eq!(open(&beating), 1);
    assert_eq!(open(&never), 1, "a key never enrolled is not monitored");
    assert_eq!(silent.balances(&s)["USDC"]["reserved"], "0");
    // The next heartbeat enrols the key again; its new orders are kept while it beats.
    assert_eq!(silent.l2(&s, "POST", "/v1/heartbeats", None).0, 200);
    silent.place(&s, YES, "BUY", "0.40", "10");
    assert_eq!(open(&silent), 1);
    s.check();
}
