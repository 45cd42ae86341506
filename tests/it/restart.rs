//! Restart: every LIVE order is back on its book in its original priority; nothing else.

use serde_json::json;

use crate::support::*;

#[test]
fn restart_restores_books_orders_trades_and_balances() {
    let s = Server::start();
    let a = s.trader(m("100"));
    let b = s.trader(0);
    // A third trader's bid behind `first`: b would cancel an order of its own instead of
    // filling it (self-trade prevention).
    let c = s.trader(0);
    s.credit(&b.address, YES, m("30"));
    s.credit(&c.address, NO, m("10"));
    let first = a.place(&s, YES, "BUY", "0.40", "10")["orderID"].clone();
    let second = c.place(&s, NO, "SELL", "0.60", "10")["orderID"].clone(); // YES bid 0.40, later
    let gone = a.place(&s, YES, "BUY", "0.30", "10")["orderID"].as_str().unwrap().to_string();
    a.l2(&s, "DELETE", "/order", Some(&json!({"orderID": gone})));
    let r = b.place(&s, YES, "SELL", "0.45", "5"); // rests at 0.45
    assert_eq!(r["status"], "LIVE");
    let filled = b.place(&s, YES, "SELL", "0.40", "5"); // fills 5 of `first`
    assert_eq!(filled["status"], "MATCHED");
    let book_before = s.get(&format!("/book?token_id={YES}")).1;
    let bal_a = a.balances(&s);
    let bal_b = b.balances(&s);
    let (cfg, dir) = s.stop();

    let s = Server::start_with(cfg);
    let mut book_after = s.get(&format!("/book?token_id={YES}")).1;
    let mut before = book_before.clone();
    // The timestamp (and with it the hash) is the snapshot's; each hash checks its own book.
    for b in [&mut before, &mut book_after] {
        assert_eq!(b["hash"], client_book_hash(b));
        b["timestamp"] = json!(null);
        b["hash"] = json!(null);
    }
    assert_eq!(before, book_after);
    assert_eq!(a.balances(&s), bal_a);
    assert_eq!(b.balances(&s), bal_b);
    assert_eq!(a.l2(&s, "GET", "/data/trades", None).1["count"], 1);
    let o = a.l2(&s, "GET", &format!("/data/order/{}", first.as_str().unwrap()), None).1;
    assert_eq!((o["size_matched"].clone(), o["status"].clone()), (json!("5"), json!("LIVE")));
    assert_eq!(a.l2(&s, "GET", &format!("/data/order/{gone}"), None).1["status"], "CANCELED");
    s.check();

    // Priority survived: a seller at 0.40 fills `first` (5 left) before `second`.
    s.credit(&b.address, YES, m("8"));
    let r = b.place(&s, YES, "SELL", "0.40", "8");
    let trades = b.l2(&s, "GET", "/data/trades", None).1;
    let makers: Vec<_> = trades["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| r["tradeIds"].as_array().unwrap().contains(&t["id"]))
        .map(|t| t["maker_orders"][0]["order_id"].clone())
        .collect();
    assert!(makers.contains(&first));
    assert!(makers.contains(&second));
    // Trade sequences continued across the restart: the old trade is still listed.
    assert_eq!(trades["count"], 3, "{trades}");
    let order_of_first = trades["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["maker_orders"][0]["order_id"] == first && t["taker_order_id"] == r["orderID"])
        .unwrap();
    assert_eq!(order_of_first["bucket_index"], 0);

    // The trade matched before the restart was still PENDING: its holds came back with it,
    // and it settles like the new ones.
    assert_eq!(s.settle(), (3, 0));
    assert_eq!(a.balance(&s, YES), m("10"));
    assert_eq!(a.balances(&s)["USDC"]["reserved"], "0", "every hold settled and no order of a left");
    s.check();
    drop(dir);
}

#[test]
fn demo_catalogue_loads_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = test_config(dir.path());
    c.catalogue = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/data/markets.json"));
    let s = Server::start_with(c.clone());
    let all = s.get("/simplified-markets").1;
    let n = all["count"].as_u64().unwrap();
    assert!(n >= 6, "{all}");
    let nr = all["data"].as_array().unwrap().iter().filter(|m| {
        let t = m["tokens"][0]["token_id"].as_str().unwrap();
        s.get(&format!("/neg-risk?token_id={t}")).1["neg_risk"] == true
    });
    assert_eq!(nr.count(), 3);
    // The demo events (data/events.json) group every demo market, once.
    let events = s.catalogue_get("/events").1;
    let grouped: usize = events.as_array().unwrap().iter().map(|e| e["markets"].as_array().unwrap().len()).sum();
    assert_eq!(grouped as u64, n, "{events}");
    drop(s);
    let s = Server::start_with(c);
    assert_eq!(s.get("/simplified-markets").1["count"].as_u64().unwrap(), n);
    assert_eq!(s.catalogue_get("/events").1, events);
}
