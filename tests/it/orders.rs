//! Order submission, validation messages, cancels, queries, modes (SPEC §4.2, §5.7, §7.4).

use serde_json::{json, Value};

use crate::support::*;

#[test]
fn resting_order_lifecycle_and_queries() {
    let s = Server::start();
    let t = s.trader(m("100"));
    let r = t.place(&s, YES, "BUY", "0.40", "10");
    assert_eq!(r["status"], "LIVE");
    assert_eq!(r["errorMsg"], "");
    assert_eq!(r["tradeIds"], json!([]));
    let id = r["orderID"].as_str().unwrap().to_string();
    // 4 USDC reserved.
    assert_eq!(t.balances(&s)["USDC"]["reserved"], "4");

    let (st, page) = t.l2(&s, "GET", "/data/orders", None);
    assert_eq!(st, 200);
    assert_eq!(page["count"], 1);
    assert_eq!(page["limit"], 100);
    assert_eq!(page["next_cursor"], "LTE=");
    let o = &page["data"][0];
    assert_eq!(o["id"], id.as_str());
    assert_eq!(o["status"], "LIVE");
    assert_eq!(o["owner"], t.key.as_str());
    assert_eq!(o["maker_address"], t.address.as_str());
    assert_eq!(o["market"], COND);
    assert_eq!(o["asset_id"], YES);
    assert_eq!(o["side"], "BUY");
    assert_eq!(o["original_size"], "10");
    assert_eq!(o["size_matched"], "0");
    assert_eq!(o["price"], "0.4");
    assert_eq!(o["outcome"], "Yes");
    assert_eq!(o["order_type"], "GTC");
    assert!(o["created_at"].is_u64());

    // Filters.
    assert_eq!(t.l2(&s, "GET", "/data/orders?market=0xother", None).1["count"], 0);
    assert_eq!(t.l2(&s, "GET", &format!("/data/orders?asset_id={YES}"), None).1["count"], 1);
    assert_eq!(t.l2(&s, "GET", &format!("/data/orders?id={id}"), None).1["count"], 1);
    let (st, one) = t.l2(&s, "GET", &format!("/data/order/{id}"), None);
    assert_eq!((st, one["id"].as_str().unwrap()), (200, id.as_str()));
    // Another key cannot see it.
    let other = s.trader(0);
    assert_eq!(other.l2(&s, "GET", &format!("/data/order/{id}"), None).0, 404);
    assert_eq!(other.l2(&s, "GET", "/data/orders", None).1["count"], 0);

    // Cancel it: another key cannot, the owner can, twice is "not canceled".
    let (st, c) = other.l2(&s, "DELETE", "/order", Some(&json!({"orderID": id})));
    assert_eq!(st, 200);
    assert_eq!(c["canceled"], json!([]));
    assert!(c["not_canceled"][&id].is_string());
    let (st, c) = t.l2(&s, "DELETE", "/order", Some(&json!({"orderID": id})));
    assert_eq!((st, c["canceled"].clone()), (200, json!([id])));
    let (_, c) = t.l2(&s, "DELETE", "/order", Some(&json!({"orderId": id})));
    assert!(c["not_canceled"][&id].is_string());
    assert_eq!(t.balances(&s)["USDC"]["reserved"], "0");
    assert_eq!(t.l2(&s, "GET", &format!("/data/order/{id}"), None).1["status"], "CANCELED");
    assert_eq!(t.l2(&s, "GET", "/data/orders", None).1["count"], 0);
    assert_eq!(err(t.l2(&s, "DELETE", "/order", Some(&json!({"orderID": "nope"})))), (400, "Invalid orderID".into()));
    s.check();
}

#[test]
fn cancel_many_all_and_market() {
    let s = Server::start();
    s.create_market("0xbeef", "2001", "2002", "0.01", false);
    let t = s.trader(m("1000"));
    let a = t.place(&s, YES, "BUY", "0.10", "10")["orderID"].as_str().unwrap().to_string();
    let b = t.place(&s, YES, "BUY", "0.11", "10")["orderID"].as_str().unwrap().to_string();
    let _c = t.place(&s, "2001", "BUY", "0.12", "10");
    let _d = t.place(&s, "2002", "BUY", "0.13", "10");
    let (st, r) = t.l2(&s, "DELETE", "/orders", Some(&json!([a, b])));
    assert_eq!(st, 200);
    assert_eq!(r["canceled"].as_array().unwrap().len(), 2);
    assert_eq!(err(t.l2(&s, "DELETE", "/orders", Some(&json!(["x"])))), (400, "Invalid orderID".into()));
    let many: Vec<String> = (0..3001).map(|_| uuid::Uuid::new_v4().to_string()).collect();
    assert_eq!(
        err(t.l2(&s, "DELETE", "/orders", Some(&json!(many)))),
        (400, "Too many orders in payload, max allowed: 3000".into())
    );
    let (_, r) = t.l2(&s, "DELETE", "/cancel-market-orders", Some(&json!({"market": "", "asset_id": "2002"})));
    assert_eq!(r["canceled"].as_array().unwrap().len(), 1);
    let (_, r) = t.l2(&s, "DELETE", "/cancel-all", None);
    assert_eq!(r["canceled"].as_array().unwrap().len(), 1);
    assert_eq!(t.balances(&s)["USDC"]["reserved"], "0");
    s.check();
}

/// Polymarket's exchanges and official clients sign orders under "Polymarket CTF Exchange":
/// with the name set, such orders verify and others do not; the default name refuses them.
#[test]
fn the_order_domain_name_is_a_setting() {
    let polymarket = Server::start_tuned(|c| c.order_domain_name = predex::auth::POLYMARKET_ORDER_DOMAIN.into());
    let service = Server::start();
    let t = polymarket.trader(m("100"));
    let r = t.place(&polymarket, YES, "BUY", "0.40", "10");
    assert_eq!(r["status"], "LIVE");
    let signed_for_service = t.order(&service, YES, "BUY", "0.41", "10");
    assert_eq!(err(t.submit(&polymarket, signed_for_service, "GTC")), (400, "invalid signature".into()));
    let u = service.trader(m("100"));
    let signed_for_polymarket = u.order(&polymarket, YES, "BUY", "0.40", "10");
    assert_eq!(err(u.submit(&service, signed_for_polymarket, "GTC")), (400, "invalid signature".into()));
    u.place(&service, YES, "BUY", "0.40", "10");
}

#[test]
fn validation_messages() {
    let s = Server::start();
    let t = s.trader(m("10"));
    let sub = |o: Value, ty: &str| err(t.submit(&s, o, ty));

    // Malformed payloads.
    assert_eq!(err(t.l2(&s, "POST", "/order", Some(&json!({"nope": 1})))), (400, "Invalid order payload".into()));
    let mut o = t.order(&s, YES, "BUY", "0.50", "10");
    o["makerAmount"] = json!("-5");
    assert_eq!(sub(o, "GTC"), (400, "Invalid order payload".into()));
    assert_eq!(sub(t.order(&s, YES, "BUY", "0.50", "10"), "XYZ"), (400, "Invalid order payload".into()));

    // Tick, size.
    let (st, msg) = sub(t.order(&s, YES, "BUY", "0.505", "10"), "GTC");
    assert_eq!(st, 400);
    assert!(
        msg.starts_with("order ") && msg.ends_with(" is invalid. Price (0.5050) breaks minimum tick size rule: 0.01"),
        "{msg}"
    );
    let (st, msg) = sub(t.order(&s, YES, "BUY", "0.50", "4"), "GTC");
    assert_eq!(st, 400);
    assert!(msg.ends_with(" is invalid. Size (4) lower than the minimum: 5"), "{msg}");

    // Balance: 10 USDC cannot buy 30 at 0.50.
    assert_eq!(sub(t.order(&s, YES, "BUY", "0.50", "30"), "GTC"), (400, "not enough balance / allowance".into()));
    // No tokens to sell.
    assert_eq!(sub(t.order(&s, YES, "SELL", "0.50", "10"), "GTC"), (400, "not enough balance / allowance".into()));

    // Expiration in the past; GTD without one.
    let o = t.signed(YES, "BUY", m("5"), m("10")).expiration((now() - 10) as u64).sign(&s);
    assert_eq!(sub(o, "GTD"), (400, "invalid expiration".into()));
    let o = t.signed(YES, "BUY", m("5"), m("10")).sign(&s);
    assert_eq!(sub(o, "GTD"), (400, "invalid expiration".into()));
    let o = t.signed(YES, "BUY", m("5"), m("10")).expiration((now() + 3600) as u64).sign(&s);
    assert_eq!(t.submit(&s, o, "GTD").0, 200);

    // Nonce other than the maker's current one.
    let o = t.signed(YES, "BUY", m("1"), m("10")).nonce(5).sign(&s);
    assert_eq!(sub(o, "GTC"), (400, "invalid nonce".into()));

    // Duplicate: the same signed order twice.
    let o = t.order(&s, YES, "BUY", "0.01", "10");
    let (st, first) = t.submit(&s, o.clone(), "GTC");
    assert_eq!(st, 200);
    let (st, msg) = sub(o.clone(), "GTC");
    assert_eq!(st, 400);
    assert!(msg.ends_with(" is invalid. Duplicated."), "{msg}");
    // Still a duplicate once cancelled (closed orders are kept by id).
    let id = first["orderID"].as_str().unwrap().to_string();
    assert_eq!(t.l2(&s, "DELETE", "/order", Some(&json!({ "orderID": id }))).0, 200);
    let (st, msg) = sub(o, "GTC");
    assert_eq!(st, 400);
    assert!(msg.ends_with(" is invalid. Duplicated."), "{msg}");

    // Signature: tampered amount, or signed for the wrong exchange.
    let mut o = t.order(&s, YES, "BUY", "0.01", "20");
    o["takerAmount"] = json!(m("21").to_string());
    assert_eq!(sub(o, "GTC"), (400, "invalid signature".into()));
    let o = t.signed(YES, "BUY", m("0.1"), m("10")).neg_risk().sign(&s);
    assert_eq!(sub(o, "GTC"), (400, "invalid signature".into()));

    // Owner: another key's UUID, or an order signed by another wallet.
    let o = t.order(&s, YES, "BUY", "0.01", "10");
    let body = json!({"order": o, "owner": uuid::Uuid::new_v4().to_string(), "orderType": "GTC"});
    assert_eq!(
        err(t.l2(&s, "POST", "/order", Some(&body))),
        (400, "the order owner has to be the owner of the API KEY".into())
    );
    let stranger = Trader::new();
    let o = stranger.order(&s, YES, "BUY", "0.01", "10");
    assert_eq!(sub(o, "GTC"), (400, "the order owner has to be the owner of the API KEY".into()));

    // Unknown token.
    let o = t.order(&s, "999", "BUY", "0.01", "10");
    assert_eq!(sub(o, "GTC"), (400, "Invalid token id".into()));
    s.check();
}

#[test]
fn banned_and_closed_only() {
    let s = Server::start();
    let t = s.trader(m("100"));
    s.credit(&t.address, YES, m("50"));
    s.internal_post("/internal/addresses", &json!({"address": t.address, "status": "closed-only"}));
    let r = err(t.submit(&s, t.order(&s, YES, "BUY", "0.50", "10"), "GTC"));
    assert_eq!(r, (400, format!("'{}' address in closed only mode", t.address)));
    // Closing (selling) is still allowed.
    t.place(&s, YES, "SELL", "0.60", "10");
    s.internal_post("/internal/addresses", &json!({"address": t.address, "status": "banned"}));
    let r = err(t.submit(&s, t.order(&s, YES, "SELL", "0.70", "10"), "GTC"));
    assert_eq!(r, (400, format!("'{}' address banned", t.address)));
    s.internal_post("/internal/addresses", &json!({"address": t.address, "status": "none"}));
    t.place(&s, YES, "BUY", "0.50", "10");
}

#[test]
fn platform_modes() {
    let s = Server::start();
    let t = s.trader(m("100"));
    let id = t.place(&s, YES, "BUY", "0.50", "10")["orderID"].as_str().unwrap().to_string();
    s.internal_post("/internal/mode", &json!({"mode": "cancel-only"}));
    assert_eq!(t.submit(&s, t.order(&s, YES, "BUY", "0.50", "10"), "GTC").0, 503);
    let (st, b) = t.l2(&s, "POST", "/orders", Some(&json!([])));
    assert_eq!(st, 503);
    assert!(b["error"].is_string());
    s.internal_post("/internal/mode", &json!({"mode": "trading-disabled"}));
    assert_eq!(t.l2(&s, "DELETE", "/order", Some(&json!({"orderID": id}))).0, 503);
    assert_eq!(t.l2(&s, "DELETE", "/cancel-all", None).0, 503);
    s.internal_post("/internal/mode", &json!({"mode": "cancel-only"}));
    assert_eq!(t.l2(&s, "DELETE", "/order", Some(&json!({"orderID": id}))).1["canceled"], json!([id]));
    s.internal_post("/internal/mode", &json!({"mode": "normal"}));
    t.place(&s, YES, "BUY", "0.50", "10");
    let (st, _) = s.internal_post("/internal/mode", &json!({"mode": "sideways"}));
    assert_eq!(st, 400);
}

#[test]
fn batch_orders() {
    let s = Server::start();
    let t = s.trader(m("100"));
    let w = |o: Value| json!({"order": o, "owner": t.key, "orderType": "GTC"});
    let batch = json!([
        w(t.order(&s, YES, "BUY", "0.30", "10")),
        w(t.order(&s, YES, "BUY", "0.305", "10")),
        {"order": {"bad": true}},
        w(t.order(&s, YES, "BUY", "0.31", "10")),
    ]);
    let (st, r) = t.l2(&s, "POST", "/orders", Some(&batch));
    assert_eq!(st, 200, "{r}");
    let r = r.as_array().unwrap();
    assert_eq!(r.len(), 4);
    assert_eq!(r[0]["success"], true);
    assert_eq!(r[1]["success"], false);
    assert_eq!(r[1]["orderID"], "");
    assert_eq!(r[1]["status"], "CANCELED");
    assert_eq!(r[1]["makingAmount"], "0");
    assert!(r[1]["errorMsg"].as_str().unwrap().contains("breaks minimum tick size rule: 0.01"));
    assert_eq!(r[2]["errorMsg"], "Invalid order payload");
    assert_eq!(r[3]["success"], true);
    let too_many: Vec<Value> = (0..16).map(|_| w(t.order(&s, YES, "BUY", "0.01", "5"))).collect();
    assert_eq!(
        err(t.l2(&s, "POST", "/orders", Some(&json!(too_many)))),
        (400, "Too many orders in payload: 16, max allowed: 15".into())
    );
    s.check();
}

#[test]
fn deferred_orders_rest_outside_matching_until_released() {
    let s = Server::start();
    let a = s.trader(m("100"));
    let b = s.trader(0);
    s.credit(&b.address, YES, m("10"));
    a.place(&s, YES, "BUY", "0.50", "10");
    let o = b.order(&s, YES, "SELL", "0.50", "10");
    let (st, r) =
        b.l2(&s, "POST", "/order", Some(&json!({"order": o, "owner": b.key, "orderType": "GTC", "deferExec": true})));
    assert_eq!(st, 200, "{r}");
    assert_eq!(r["status"], "DEFERRED");
    let id = r["orderID"].as_str().unwrap().to_string();
    // Not matched, not on the public book, but reserved and listed.
    assert_eq!(s.get(&format!("/book?token_id={YES}")).1["asks"], json!([]));
    assert_eq!(b.balances(&s)[YES]["reserved"], "10");
    assert_eq!(b.l2(&s, "GET", "/data/orders", None).1["data"][0]["status"], "DEFERRED");
    let (st, rel) = s.internal_post("/internal/deferred/release", &json!({}));
    assert_eq!(st, 200);
    assert_eq!(rel, json!([{"orderID": id, "status": "MATCHED"}]));
    assert_eq!(b.available(&s, "USDC"), m("5"));
    s.settle();
    assert_eq!(b.balance(&s, "USDC"), m("5"));
    s.check();
}

/// Sends `head` (a request without its body) to the order-book server on a fresh
/// connection and reads one reply.
fn raw(s: &Server, head: &str) -> (u16, Value) {
    raw_request(&s.clob, head.as_bytes())
}

#[test]
fn trading_routes_answer_like_the_rest_of_the_server() {
    // The trading routes are dispatched before warp's filter tree (api::connections): what the
    // tree does around a route must happen there too.
    let s = Server::start();
    for (method, path) in
        [("GET", "/order"), ("PUT", "/orders"), ("GET", "/cancel-all"), ("POST", "/cancel-market-orders")]
    {
        let r = send(ureq::request(method, &format!("{}{path}", s.clob)), None);
        assert_eq!(err(r), (405, "method not allowed".into()), "{method} {path}");
    }
    let big =
        "POST /order HTTP/1.1\r\nHost: predex\r\nContent-Type: application/json\r\nContent-Length: 1048577\r\n\r\n";
    assert_eq!(err(raw(&s, big)), (413, "payload too large".into()));
    let bad = "DELETE /order HTTP/1.1\r\nHost: predex\r\nContent-Length: 3\r\n\r\n{x}";
    assert_eq!(err(raw(&s, bad)), (401, "L2 authentication failure".into()));
    let t = s.trader(m("10"));
    let r = t.l2_raw(&s, "POST", "/order", "{");
    assert_eq!(err(r), (400, "Invalid order payload".into()));

    let metrics = s.internal_get("/metrics").1;
    let text = metrics.as_str().unwrap();
    for line in [
        r#"predex_http_requests_total{route="/order",status="405"} 1"#,
        r#"predex_http_requests_total{route="/order",status="413"} 1"#,
        r#"predex_http_requests_total{route="/order",status="401"} 1"#,
        r#"predex_http_requests_total{route="/order",status="400"} 1"#,
    ] {
        assert!(text.contains(line), "{line} in {text}");
    }
}

/// What the V2 clients read before and after an order, on a venue of SPEC's version-1
/// orders: the version they are to sign, a token's market, and the trade ids under the
/// name they read as well as SPEC's.
#[test]
fn the_v2_clients_lookups_answer_on_a_version_1_venue() {
    let s = Server::start();
    assert_eq!(s.get("/version"), (200, json!({"version": 1})));
    let market = json!({"condition_id": COND, "primary_token_id": YES, "secondary_token_id": NO});
    for token in [YES, NO] {
        assert_eq!(s.get(&format!("/markets-by-token/{token}")), (200, market.clone()), "{token}");
    }
    assert_eq!(err(s.get("/markets-by-token/999")), (404, "No orderbook exists for the requested token id".into()));
    assert_eq!(err(s.get("/markets-by-token/0xabc")), (400, "Invalid token id".into()));

    let info = json!({
        "c": COND,
        "t": [{"t": YES, "o": "Yes"}, {"t": NO, "o": "No"}],
        "mts": 0.01, "mos": 5, "nr": false, "mbf": 0, "tbf": 0, "ao": true, "sd": 0, "rfqe": true,
    });
    assert_eq!(s.get(&format!("/clob-markets/{COND}")), (200, info));
    assert_eq!(err(s.get("/clob-markets/0xdead")), (404, "market not found".into()));

    let (maker, taker) = (s.trader(m("100")), s.trader(m("100")));
    s.credit(&maker.address, YES, m("10"));
    let rested = maker.place(&s, YES, "SELL", "0.50", "10");
    assert_eq!((&rested["tradeIds"], &rested["transactionsHashes"]), (&json!([]), &json!([])), "{rested}");
    // One key for the trade ids: the Rust V2 client refuses a reply with both.
    assert!(rested.get("tradeIDs").is_none(), "{rested}");
    let took = taker.place(&s, YES, "BUY", "0.50", "10");
    assert_eq!(took["status"], "MATCHED", "{took}");
    // In the ledger the settlement's hash is known at the match: the V2 clients return at
    // once rather than poll the trade.
    let id: uuid::Uuid = took["tradeIds"][0].as_str().unwrap().parse().unwrap();
    assert_eq!(took["transactionsHashes"], json!([predex::domain::ledger_settlement_hash(&id)]), "{took}");
    let (_, live) = s.get(&format!("/markets/live-activity/{COND}"));
    assert_eq!(s.get(&format!("/live-activity/events/{COND}")), (200, live.clone()));
    assert_eq!(live.as_array().map(Vec::len), Some(1), "{live}");

    // An order of version 2 is refused by name, alone or in a batch, and nothing is placed.
    let v2 = |o: Value| {
        let mut o = o;
        let fields = o.as_object_mut().unwrap();
        for k in ["nonce", "feeRateBps"] {
            fields.remove(k);
        }
        fields.insert("timestamp".into(), json!("1790000000000"));
        fields.insert("metadata".into(), json!(format!("0x{}", "0".repeat(64))));
        fields.insert("builder".into(), json!(format!("0x{}", "0".repeat(64))));
        o
    };
    let mismatch = (400, "order_version_mismatch: this venue takes version 1 orders".to_string());
    let one = json!({"order": v2(taker.order(&s, YES, "BUY", "0.40", "1")), "owner": taker.key, "orderType": "GTC"});
    let (st, body) = taker.l2(&s, "POST", "/order", Some(&one));
    assert_eq!(err((st, body)), mismatch);
    let good = json!({"order": taker.order(&s, YES, "BUY", "0.41", "5"), "owner": taker.key, "orderType": "GTC"});
    let (st, body) = taker.l2(&s, "POST", "/orders", Some(&json!([good.clone(), one])));
    assert_eq!(err((st, body)), mismatch);
    let (_, open) = taker.l2(&s, "GET", "/data/orders", None);
    assert_eq!(open["data"], json!([]), "{open}");
    let (st, batch) = taker.l2(&s, "POST", "/orders", Some(&json!([good])));
    assert_eq!((st, &batch[0]["tradeIds"], &batch[0]["success"]), (200, &json!([]), &json!(true)), "{batch}");
    s.check();
}

/// A version 2 venue: `/version` says 2; version 2 orders, signed under domain version "2"
/// and the V2 exchanges, rest and match; a version 1 order is refused by name; an order
/// hash seen before, an expired order and signature type 3 are refused. Restarted as a
/// version 1 venue, the open version 2 orders are cancelled and listed as the owner's
/// pre-migration orders.
#[test]
fn version_2_orders_trade_on_a_version_2_venue_and_a_change_of_version_cancels_them() {
    let s = Server::start_tuned(|c| c.order_version = 2);
    assert_eq!(s.get("/version"), (200, json!({"version": 2})));
    let (maker, taker) = (s.trader(m("100")), s.trader(m("100")));
    s.credit(&maker.address, YES, m("20"));
    let zero = alloy_primitives::B256::ZERO;
    let submit = |t: &Trader, o: Value| t.submit(&s, o, "GTC");

    let v1 = maker.order(&s, YES, "SELL", "0.50", "10");
    assert_eq!(err(submit(&maker, v1)), (400, "order_version_mismatch: this venue takes version 2 orders".into()));
    let ask = maker.signed(YES, "SELL", m("10"), m("5")).sign_v2(&s, zero);
    let (st, rested) = submit(&maker, ask.clone());
    assert_eq!((st, &rested["status"]), (200, &json!("live")), "{rested}");
    assert_eq!(err(submit(&maker, ask)).0, 400, "the same order hash again is refused");
    let bid = taker.signed(YES, "BUY", m("2.5"), m("5")).sign_v2(&s, zero);
    let (st, took) = submit(&taker, bid);
    assert_eq!((st, &took["status"]), (200, &json!("matched")), "{took}");
    s.settle();
    assert_eq!(taker.balance(&s, YES), m("5"));

    let past = predex::domain::now_secs() - 60;
    let expired = maker.signed(YES, "SELL", m("5"), m("3")).expiration(past).sign_v2(&s, zero);
    assert_eq!(err(maker.submit(&s, expired, "GTD")), (400, "invalid expiration".into()));
    let mut wallet = maker.signed(YES, "SELL", m("5"), m("3")).sign_v2(&s, zero);
    wallet["signatureType"] = json!(3);
    let (st, body) = submit(&maker, wallet);
    assert!(st == 400 && body["error"].as_str().unwrap().contains("signature type 3"), "{st} {body}");
    // Signed under version 1's domain, a version 2 order's signature does not verify.
    let (st, body) = submit(&maker, {
        let mut o = maker.signed(YES, "SELL", m("5"), m("3")).sign_v2(&s, zero);
        o["signature"] = maker.order(&s, YES, "SELL", "0.60", "5")["signature"].clone();
        o
    });
    assert_eq!(err((st, body)).0, 400);
    let open_id = rested["orderID"].as_str().unwrap().to_string();
    s.check();

    let (mut c, dir) = s.stop();
    c.order_version = 1;
    let s = Server::start_with(c);
    assert_eq!(s.get("/version"), (200, json!({"version": 1})));
    let (_, open) = maker.l2(&s, "GET", "/data/orders", None);
    assert_eq!(open["data"], json!([]), "{open}");
    let (st, listed) = maker.l2(&s, "GET", "/data/pre-migration-orders", None);
    assert_eq!((st, listed["data"].as_array().map(Vec::len)), (200, Some(1)), "{listed}");
    assert_eq!((&listed["data"][0]["id"], &listed["data"][0]["status"]), (&json!(open_id), &json!("CANCELED")));
    let (_, none) = taker.l2(&s, "GET", "/data/pre-migration-orders", None);
    assert_eq!(none["data"], json!([]), "{none}");
    assert_eq!(maker.available(&s, YES), m("15"), "the cancelled order's reserve is released");
    maker.place(&s, YES, "SELL", "0.50", "5");
    s.check();
    drop(s);
    drop(dir);
}

/// A version 2 taker pays the market's fee description — in collateral, on top of what it
/// buys with and out of what it sells for, capped at 5 % of the fill's value — and a
/// maker pays nothing. The operator sets it, `/clob-markets` publishes it, the trade
/// records it, and it survives a restart.
#[test]
fn version_2_takers_pay_the_fee_description_the_operator_sets() {
    let s = Server::start_tuned(|c| c.order_version = 2);
    let zero = alloy_primitives::B256::ZERO;
    let fees = |body: Value| s.internal_post("/internal/markets/fees", &body);
    let fee_usdc = |s: &Server| {
        let to = s.config.fee_address.clone().unwrap_or_else(|| s.config.exchange_address.clone());
        let b = s.internal_get(&format!("/internal/balances?address={to}")).1;
        b["USDC"]["balance"].as_str().map(m).unwrap_or(0)
    };
    // Refusals change nothing.
    for (body, status) in [
        (json!({"condition_id": COND, "rate": "1.5", "exponent": 2}), 400),
        (json!({"condition_id": COND, "rate": "0.25", "exponent": 9}), 400),
        (json!({"condition_id": COND, "rate": "0.00001", "exponent": 2}), 400),
        (json!({"condition_id": "0xdead", "rate": "0.25", "exponent": 2}), 404),
    ] {
        assert_eq!(fees(body.clone()).0, status, "{body}");
    }
    assert!(s.get(&format!("/clob-markets/{COND}")).1.get("fd").is_none());
    // r = 0.25, e = 2: 100 shares at 0.40 pay 100 × 0.25 × 0.24² = 1.44 (under 5 % of 40).
    let (st, set) = fees(json!({"condition_id": COND, "rate": "0.25", "exponent": 2}));
    assert_eq!((st, &set["fd"]), (200, &json!({"r": 0.25, "e": 2, "to": true})), "{set}");
    assert_eq!(s.get(&format!("/clob-markets/{COND}")).1["fd"], json!({"r": 0.25, "e": 2, "to": true}));

    let maker = s.trader(m("100"));
    s.credit(&maker.address, YES, m("200"));
    let ask = maker.signed(YES, "SELL", m("100"), m("40")).sign_v2(&s, zero);
    assert_eq!(maker.submit(&s, ask, "GTC").1["status"], json!("live"));
    // A buyer whose balance covers the price but not the fee is refused; one that covers
    // both takes the whole ask.
    let short = s.trader(m("40"));
    let bid = short.signed(YES, "BUY", m("40"), m("100")).sign_v2(&s, zero);
    assert_eq!(err(short.submit(&s, bid, "GTC")).0, 400, "the fee is reserved with the price");
    let buyer = s.trader(m("41.44"));
    let bid = buyer.signed(YES, "BUY", m("40"), m("100")).sign_v2(&s, zero);
    let (st, took) = buyer.submit(&s, bid, "FOK");
    assert_eq!((st, &took["status"]), (200, &json!("matched")), "{took}");
    assert_eq!((&took["makingAmount"], &took["takingAmount"]), (&json!("41.44"), &json!("100")), "{took}");
    let (_, trades) = buyer.l2(&s, "GET", "/data/trades", None);
    let t = &trades["data"][0];
    assert_eq!((&t["taker_fee"], &t["fee_rate_bps"]), (&json!("1.44"), &json!("360")), "{t}");
    s.settle();
    assert_eq!((buyer.balance(&s, "USDC"), buyer.balance(&s, YES)), (0, m("100")));
    assert_eq!(maker.balance(&s, "USDC"), m("140"), "the maker pays no fee");
    assert_eq!(fee_usdc(&s), m("1.44"));

    // A seller pays out of its proceeds: 40 − 1.44.
    let bid = maker.signed(YES, "BUY", m("40"), m("100")).sign_v2(&s, zero);
    assert_eq!(maker.submit(&s, bid, "GTC").1["status"], json!("live"));
    let ask = buyer.signed(YES, "SELL", m("100"), m("40")).sign_v2(&s, zero);
    let (st, took) = buyer.submit(&s, ask, "FAK");
    assert_eq!((st, &took["takingAmount"]), (200, &json!("38.56")), "{took}");
    s.settle();
    assert_eq!(buyer.balance(&s, "USDC"), m("38.56"));
    assert_eq!(fee_usdc(&s), m("2.88"));
    s.check();

    // It is durable; removed, nothing is charged.
    let (c, dir) = s.stop();
    let s = Server::start_with(c);
    assert_eq!(s.get(&format!("/clob-markets/{COND}")).1["fd"], json!({"r": 0.25, "e": 2, "to": true}));
    let fees = |body: Value| s.internal_post("/internal/markets/fees", &body);
    assert_eq!(fees(json!({"condition_id": COND})), (200, json!({"condition_id": COND, "fd": null})));
    assert!(s.get(&format!("/clob-markets/{COND}")).1.get("fd").is_none());
    let ask = maker.signed(YES, "SELL", m("10"), m("4")).sign_v2(&s, zero);
    maker.submit(&s, ask, "GTC");
    let plain = s.trader(m("4"));
    let bid = plain.signed(YES, "BUY", m("4"), m("10")).sign_v2(&s, zero);
    assert_eq!(plain.submit(&s, bid, "FOK").1["status"], json!("matched"));
    s.settle();
    assert_eq!(plain.balance(&s, YES), m("10"));
    assert_eq!(fee_usdc(&s), m("2.88"));
    s.check();
    drop(s);
    drop(dir);
}
