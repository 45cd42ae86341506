//! Balances and allowances, and the rate limit of the order-book server.

use serde_json::json;

use crate::support::*;

#[test]
fn balance_allowance_counts_fills_at_once_and_reconciles_after_settlement() {
    let s = Server::start();
    let buyer = s.trader(m("100"));
    let seller = s.trader(0);
    s.credit(&seller.address, YES, m("30"));
    let ba = |t: &Trader, q: &str| {
        let (st, b) = t.l2(&s, "GET", &format!("/balance-allowance{q}"), None);
        assert_eq!(st, 200, "{b}");
        b
    };
    assert_eq!(ba(&buyer, ""), json!({"balance": "100000000", "allowances": {}}));
    assert_eq!(ba(&seller, "?asset_type=COLLATERAL&signature_type=0")["allowances"], json!({ YES: "30000000" }));
    seller.place(&s, YES, "SELL", "0.60", "20");
    assert_eq!(ba(&seller, "")["allowances"][YES], "10000000", "net of what the open order reserves");
    buyer.place(&s, YES, "BUY", "0.60", "10");
    // Right the moment the fill is acknowledged, before settlement.
    assert_eq!(ba(&buyer, "")["balance"], "94000000");
    assert_eq!(ba(&buyer, &format!("?asset_type=CONDITIONAL&token_id={YES}"))["balance"], "10000000");
    assert_eq!(ba(&seller, "")["balance"], "6000000");
    let up = buyer.l2(&s, "GET", "/balance-allowance/update", None).1;
    assert_eq!(up, json!({"balance": "100000000", "net_usdc_taker": "0", "net_usdc_maker": "0"}));
    s.settle();
    assert_eq!(ba(&buyer, "")["balance"], "94000000");
    let up = buyer.l2(&s, "GET", "/balance-allowance/update", None).1;
    assert_eq!(up, json!({"balance": "94000000", "net_usdc_taker": "-6000000", "net_usdc_maker": "0"}));
    let up = seller.l2(&s, "GET", "/balance-allowance/update", None).1;
    assert_eq!(up, json!({"balance": "6000000", "net_usdc_taker": "0", "net_usdc_maker": "6000000"}));

    // Signature types 1 and 2 read the proxy wallet and the Safe derived from the key's
    // address.
    assert_eq!(ba(&buyer, "?signature_type=2"), json!({"balance": "0", "allowances": {}}));
    let safe = buyer.derived(&s, 2);
    s.credit(&format!("{safe:#x}"), "USDC", m("50"));
    assert_eq!(ba(&buyer, "?signature_type=2")["balance"], "50000000");
    let o = buyer.signed(YES, "BUY", m("2"), m("10")).maker(safe, 2).sign(&s);
    assert_eq!(buyer.submit(&s, o, "GTC").0, 200);
    assert_eq!(ba(&buyer, "?signature_type=2")["balance"], "48000000");
    assert_eq!(ba(&buyer, "?signature_type=1")["balance"], "0");
    assert_eq!(ba(&buyer, "?signature_type=0")["balance"], "94000000");

    // Bad input.
    assert_eq!(
        err(buyer.l2(&s, "GET", "/balance-allowance?signature_type=3", None)),
        (400, "Invalid signature_type".into())
    );
    assert_eq!(
        err(buyer.l2(&s, "GET", "/balance-allowance?asset_type=CONDITIONAL", None)),
        (400, "Invalid token id".into())
    );
    assert_eq!(
        err(buyer.l2(&s, "GET", "/balance-allowance?asset_type=CONDITIONAL&token_id=999", None)),
        (400, "Invalid token id".into())
    );
    assert_eq!(
        err(buyer.l2(&s, "GET", "/balance-allowance?asset_type=GOLD", None)),
        (400, "Invalid asset_type".into())
    );
    assert_eq!(s.get("/balance-allowance").0, 401);
    assert_eq!(s.get("/notifications").0, 401);
    s.check();
}

/// A version 2 venue keys `allowances` by spender, as Polymarket does and its V2 clients
/// parse them: each of its exchanges (Polygon's V2 exchanges unless set) → the balance.
#[test]
fn a_version_2_venue_keys_allowances_by_its_exchanges() {
    let s = Server::start_tuned(|c| c.order_version = 2);
    let t = s.trader(m("100"));
    s.credit(&t.address, YES, m("30"));
    let ba = |q: &str| {
        let (st, b) = t.l2(&s, "GET", &format!("/balance-allowance{q}"), None);
        assert_eq!(st, 200, "{b}");
        b
    };
    let exchanges = ["0xE111180000d2663C0091e4f400237545B87B996B", "0xe2222d279d744050d28e00520010520000310F59"];
    let each =
        |amount: &str| serde_json::Value::Object(exchanges.iter().map(|e| (e.to_string(), json!(amount))).collect());
    assert_eq!(ba(""), json!({"balance": "100000000", "allowances": each("100000000")}));
    assert_eq!(
        ba(&format!("?asset_type=CONDITIONAL&token_id={YES}")),
        json!({"balance": "30000000", "allowances": each("30000000")})
    );
    assert_eq!(ba("?signature_type=2"), json!({"balance": "0", "allowances": each("0")}));
    s.check();
}

fn hit(s: &Server, path: &str, xff: Option<&str>) -> u16 {
    let mut r = ureq::get(&format!("{}{}", s.clob, path));
    if let Some(x) = xff {
        r = r.set("X-Forwarded-For", x);
    }
    send(r, None).0
}

#[test]
fn rate_limit_counts_every_path_per_client_ip() {
    // Loopback is a trusted proxy by default: X-Forwarded-For names the client.
    let s = Server::start_tuned(|c| c.rate_limit_max = 5);
    assert_eq!(s.internal_get("/internal/rate-limit"), (200, json!({"maxRequests": 5, "windowSecs": 60})));
    let t = s.trader(0); // its key creation is counted against 127.0.0.1
    for p in ["/time", "/book?token_id=1001", "/nope", "/time"] {
        assert_ne!(hit(&s, p, Some("203.0.113.1")), 429);
    }
    assert_eq!(hit(&s, "/tick-size?token_id=1001", Some("203.0.113.1")), 200);
    let r = send(ureq::get(&format!("{}/time", s.clob)).set("X-Forwarded-For", "203.0.113.1"), None);
    assert_eq!(r, (429, json!({"error": "rate limit exceeded"})), "one counter across paths, 404s included");
    let body = json!({"orderID": "x"});
    let mut req = ureq::delete(&format!("{}/order", s.clob)).set("X-Forwarded-For", "203.0.113.1");
    for (k, v) in t.l2_headers("DELETE", "/order", &body.to_string()) {
        req = req.set(k, &v);
    }
    assert_eq!(send(req, Some(body.to_string())).0, 429, "authenticated paths share it");
    assert_eq!(hit(&s, "/ok", Some("203.0.113.1")), 200, "the health probe is not counted");
    assert_eq!(hit(&s, "/", Some("203.0.113.1")), 200, "nor at /");
    assert_eq!(hit(&s, "/time", Some("203.0.113.2")), 200, "another client has its own counter");
    assert_eq!(hit(&s, "/time", Some("203.0.113.9, 203.0.113.2")), 200, "the proxy's own entry is the client");

    // Raised at runtime.
    let (st, b) = s.internal_post("/internal/rate-limit", &json!({"maxRequests": 1000, "windowSecs": 30}));
    assert_eq!((st, b), (200, json!({"maxRequests": 1000, "windowSecs": 30})));
    assert_eq!(hit(&s, "/time", Some("203.0.113.1")), 200);
    assert_eq!(s.internal_post("/internal/rate-limit", &json!({"maxRequests": 10, "windowSecs": 0})).0, 400);
    assert_eq!(s.internal_post("/internal/rate-limit", &json!({"maxRequests": "ten", "windowSecs": 5})).0, 400);
    assert_eq!(s.internal_get("/internal/rate-limit").1, json!({"maxRequests": 1000, "windowSecs": 30}));
}

#[test]
fn forwarded_headers_from_an_untrusted_peer_do_not_evade_the_limit() {
    let s = Server::start_tuned(|c| {
        c.rate_limit_max = 3;
        c.trusted_proxies = vec![];
    });
    for i in 0..3 {
        assert_eq!(hit(&s, "/time", Some(&format!("198.51.100.{i}"))), 200);
    }
    // Every request came from 127.0.0.1 whatever the header says.
    assert_eq!(hit(&s, "/time", Some("198.51.100.77")), 429);
    let r = ureq::get(&format!("{}/time", s.clob)).set("X-Real-IP", "198.51.100.78");
    assert_eq!(send(r, None).0, 429);
    assert_eq!(hit(&s, "/ok", None), 200);
}
