//! Request for quote: every §7.5 refusal, the best-quote rule both ways, acceptance by
//! quote ID, trades through the settlement path, and expiry by the worker.

use serde_json::{json, Value};

use crate::fixture::*;

fn request(t: &Trader, s: &Server, side: &str, size: &str, ttl: u64) -> String {
    let (st, b) =
        t.l2(s, "POST", "/rfq/request", Some(&json!({"tokenId": YES, "side": side, "size": size, "ttl": ttl})));
    assert_eq!(st, 200, "{b}");
    assert_eq!(b["status"], "OPEN");
    b["rfqId"].as_str().unwrap().to_string()
}

fn quote(t: &Trader, s: &Server, rfq: &str, price: &str) -> (u16, Value) {
    t.l2(s, "POST", "/rfq/quote", Some(&json!({"rfqId": rfq, "price": price})))
}

fn quote_id(t: &Trader, s: &Server, rfq: &str, price: &str) -> String {
    let (st, b) = quote(t, s, rfq, price);
    assert_eq!(st, 200, "{b}");
    assert_eq!(b["status"], "PENDING");
    b["quoteId"].as_str().unwrap().to_string()
}

fn accept(t: &Trader, s: &Server, body: Value) -> (u16, Value) {
    t.l2(s, "POST", "/rfq/accept", Some(&body))
}

/// The requester's view of one of its requests.
fn mine(t: &Trader, s: &Server, rfq: &str) -> Value {
    let (st, b) = t.l2(s, "GET", "/rfq/requests", None);
    assert_eq!(st, 200, "{b}");
    b["data"].as_array().unwrap().iter().find(|r| r["rfqId"] == rfq).cloned().expect("own request listed")
}

fn quote_status(r: &Value, quote: &str) -> String {
    r["quotes"].as_array().unwrap().iter().find(|q| q["quoteId"] == quote).unwrap()["status"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn rfq_best_quote_both_ways_acceptance_settlement_and_refusals() {
    let s = Server::start();
    let requester = s.trader(m("100"));
    let (q1, q2, q3) = (s.trader(m("100")), s.trader(m("100")), s.trader(m("100")));
    for q in [&q1, &q2, &q3] {
        s.credit(&q.address, YES, m("50"));
    }
    let all = [&requester, &q1, &q2, &q3];
    let total = |asset: &str| -> u64 { all.iter().map(|t| t.balance(&s, asset)).sum() };
    let (usdc0, yes0) = (total("USDC"), total(YES));

    // POST /rfq/request refusals.
    let post = |body: Value| requester.l2(&s, "POST", "/rfq/request", Some(&body));
    assert_eq!(err(s.post("/rfq/request", &json!({}))), (401, "L2 authentication failure".into()));
    let (st, b) = requester.l2_raw(&s, "POST", "/rfq/request", "{nope");
    assert_eq!(st, 400);
    assert!(b["error"].as_str().unwrap().starts_with("invalid JSON: "), "{b}");
    for body in [
        json!({"side": "BUY", "size": "10"}),
        json!({"tokenId": YES, "side": "BUY"}),
        json!({"tokenId": YES, "side": "BUY", "size": "0"}),
        json!({"tokenId": "", "side": "BUY", "size": "10"}),
        json!({"tokenId": "0", "side": "BUY", "size": "10"}),
        json!({"tokenId": 0, "side": "BUY", "size": "10"}),
        json!({"tokenId": "000", "side": "BUY", "size": "10"}),
        json!({"tokenId": YES, "side": "BUY", "size": "ten"}),
    ] {
        assert_eq!(err(post(body)), (400, "tokenId and size required".into()));
    }
    assert_eq!(err(post(json!({"tokenId": YES, "side": "HOLD", "size": "10"}))), (400, "Invalid side".into()));
    assert_eq!(
        err(post(json!({"tokenId": "999", "side": "BUY", "size": "10"}))),
        (404, "No orderbook exists for the requested token id".into())
    );
    assert_eq!(err(post(json!({"tokenId": YES, "side": "BUY", "size": "1"}))).1, "Size (1) lower than the minimum: 5");
    assert_eq!(
        err(post(json!({"tokenId": YES, "side": "BUY", "size": "10", "ttl": 0}))).1,
        "ttl must be a whole number of seconds from 1 to 86400"
    );

    // A BUY request for 10 YES; three quotes, the lowest wins.
    let rfq = request(&requester, &s, "BUY", "10", 300);
    let refusals = [
        (json!({"price": "0.5"}), "valid rfqId required"),
        (json!({"rfqId": "abc", "price": "0.5"}), "valid rfqId required"),
        (json!({"rfqId": rfq}), "price required"),
        (json!({"rfqId": rfq, "price": "cheap"}), "price required"),
        (
            json!({"rfqId": uuid::Uuid::new_v4().to_string(), "price": "0.5"}),
            "RFQ not found, expired, or already filled",
        ),
        (json!({"rfqId": rfq, "price": "0.555"}), "Price (0.555) breaks minimum tick size rule: 0.01"),
        (json!({"rfqId": rfq, "price": "1"}), "Price (1) breaks minimum tick size rule: 0.01"),
    ];
    for (body, msg) in refusals {
        assert_eq!(err(q1.l2(&s, "POST", "/rfq/quote", Some(&body))), (400, msg.into()), "{body}");
    }
    assert_eq!(err(quote(&requester, &s, &rfq, "0.50")), (400, "cannot quote your own RFQ".into()));
    let broke = s.trader(0);
    assert_eq!(err(quote(&broke, &s, &rfq, "0.50")), (400, "not enough balance / allowance".into()));
    let a = quote_id(&q1, &s, &rfq, "0.60");
    let best = quote_id(&q2, &s, &rfq, "0.55");
    let c = quote_id(&q3, &s, &rfq, "0.58");
    let (_, open) = q1.l2(&s, "GET", "/rfq/requests/open", None);
    assert!(open["data"].as_array().unwrap().iter().any(|r| r["rfqId"] == rfq.as_str() && r.get("quotes").is_none()));

    // POST /rfq/accept refusals.
    assert_eq!(err(s.post("/rfq/accept", &json!({"rfqId": rfq}))), (401, "invalid authorization".into()));
    let (st, b) = requester.l2_raw(&s, "POST", "/rfq/accept", "[1,");
    assert!(st == 400 && b["error"].as_str().unwrap().starts_with("invalid JSON: "), "{b}");
    assert_eq!(err(accept(&requester, &s, json!({}))), (400, "rfqId or quoteId required".into()));
    assert_eq!(err(accept(&requester, &s, json!({"rfqId": "x"}))), (400, "valid rfqId required".into()));
    assert_eq!(err(accept(&q1, &s, json!({"rfqId": rfq}))), (400, "RFQ not found or not owned by you".into()));
    assert_eq!(
        err(accept(&requester, &s, json!({"rfqId": uuid::Uuid::new_v4().to_string()}))),
        (400, "RFQ not found or not owned by you".into())
    );
    let gone = (404, "quote not found, expired, or already processed".to_string());
    assert_eq!(err(accept(&requester, &s, json!({"quoteId": uuid::Uuid::new_v4().to_string()}))), gone);
    assert_eq!(err(accept(&requester, &s, json!({"quoteId": "nope"}))), gone);
    assert_eq!(mine(&requester, &s, &rfq)["status"], "OPEN", "refusals change nothing");

    // Accept by rfqId: the lowest price for a BUY.
    let (st, r) = accept(&requester, &s, json!({"rfqId": rfq}));
    assert_eq!(st, 200, "{r}");
    assert_eq!(
        (r["quoteId"].as_str(), r["rfqId"].as_str(), r["status"].as_str()),
        (Some(&*best), Some(&*rfq), Some("ACCEPTED"))
    );
    let view = mine(&requester, &s, &rfq);
    assert_eq!((view["status"].as_str(), view["acceptedQuoteId"].as_str()), (Some("FILLED"), Some(&*best)));
    assert_eq!(quote_status(&view, &best), "ACCEPTED");
    assert_eq!((quote_status(&view, &a), quote_status(&view, &c)), ("REJECTED".into(), "REJECTED".into()));
    let (_, mq) = q1.l2(&s, "GET", "/rfq/quotes", None);
    assert_eq!((mq["data"][0]["quoteId"].as_str(), mq["data"][0]["status"].as_str()), (Some(&*a), Some("REJECTED")));
    // The trade is PENDING and holds both payments, like a book match.
    assert_eq!(requester.available(&s, "USDC"), m("94.5"));
    assert_eq!(q2.available(&s, YES), m("40"));
    let t = &requester.l2(&s, "GET", "/data/trades", None).1["data"][0];
    assert_eq!(
        (t["status"].as_str(), t["price"].as_str(), t["size"].as_str()),
        (Some("PENDING"), Some("0.55"), Some("10"))
    );
    assert_eq!((t["taker_order_id"].as_str(), t["maker_orders"][0]["order_id"].as_str()), (Some(&*rfq), Some(&*best)));
    assert_eq!(q2.l2(&s, "GET", "/data/trades", None).1["data"][0]["trader_side"], "MAKER");
    assert_eq!(s.settle(), (1, 0));
    assert_eq!((requester.balance(&s, "USDC"), requester.balance(&s, YES)), (m("94.5"), m("10")));
    assert_eq!((q2.balance(&s, "USDC"), q2.balance(&s, YES)), (m("105.5"), m("40")));
    assert_eq!(requester.l2(&s, "GET", "/data/trades", None).1["data"][0]["status"], "CONFIRMED");
    // Filled: no second acceptance, no more quotes.
    let filled = (400, "RFQ not found, expired, or already filled".to_string());
    assert_eq!(err(accept(&requester, &s, json!({"rfqId": rfq}))), filled);
    assert_eq!(err(quote(&q1, &s, &rfq, "0.50")), filled);

    // A SELL request: the highest price wins.
    let sell = request(&requester, &s, "SELL", "10", 300);
    let low = quote_id(&q1, &s, &sell, "0.40");
    let high = quote_id(&q3, &s, &sell, "0.45");
    quote_id(&q2, &s, &sell, "0.42");
    assert_eq!(accept(&requester, &s, json!({"rfqId": sell})).1["quoteId"], high.as_str());
    assert_eq!(quote_status(&mine(&requester, &s, &sell), &low), "REJECTED");
    assert_eq!(s.settle(), (1, 0));
    assert_eq!((requester.balance(&s, "USDC"), requester.balance(&s, YES)), (m("99"), 0));

    // Accept by quoteId: that quote, even when it is not the best.
    let third = request(&requester, &s, "BUY", "5", 300);
    let cheap = quote_id(&q1, &s, &third, "0.50");
    let dear = quote_id(&q3, &s, &third, "0.52");
    assert_eq!(err(accept(&requester, &s, json!({"rfqId": rfq, "quoteId": dear}))), gone, "a quote of another request");
    let (st, r) = accept(&requester, &s, json!({"quoteId": dear}));
    assert_eq!((st, r["quoteId"].as_str()), (200, Some(&*dear)));
    assert_eq!(quote_status(&mine(&requester, &s, &third), &cheap), "REJECTED");
    assert_eq!(err(accept(&requester, &s, json!({"quoteId": cheap}))), filled);

    // A quoter that no longer holds what it pays: the accept is refused and changes nothing.
    let fourth = request(&requester, &s, "BUY", "5", 300);
    let empty = quote_id(&q1, &s, &fourth, "0.50");
    let spend = q1.balance(&s, YES);
    let sink = s.trader(m("100"));
    q1.place(&s, YES, "SELL", "0.50", &predex::domain::fmt_amount(spend));
    sink.place(&s, YES, "BUY", "0.50", &predex::domain::fmt_amount(spend));
    assert_eq!(err(accept(&requester, &s, json!({"quoteId": empty}))), (400, "not enough balance / allowance".into()));
    assert_eq!(mine(&requester, &s, &fourth)["status"], "OPEN");
    assert_eq!(quote_status(&mine(&requester, &s, &fourth), &empty), "PENDING");

    s.settle();
    s.check();
    let all = [&requester, &q1, &q2, &q3, &sink];
    let sum = |asset: &str| -> u64 { all.iter().map(|t| t.balance(&s, asset)).sum() };
    assert_eq!((sum("USDC"), sum(YES)), (usdc0 + m("100"), yes0), "RFQ trades conserve collateral and tokens");
}

#[test]
fn the_expiration_worker_expires_requests_and_quotes_past_their_ttl() {
    let s = Server::start_tuned(|c| c.rfq_interval_ms = 100);
    let requester = s.trader(m("100"));
    let quoter = s.trader(m("100"));
    s.credit(&quoter.address, YES, m("50"));

    let short = request(&requester, &s, "BUY", "10", 2);
    let late = quote_id(&quoter, &s, &short, "0.5"); // capped at its request's expiry
    let long = request(&requester, &s, "BUY", "10", 300);
    let (st, q) = quoter.l2(&s, "POST", "/rfq/quote", Some(&json!({"rfqId": long, "price": "0.5", "ttl": 1})));
    assert_eq!(st, 200, "{q}");
    let q = q["quoteId"].as_str().unwrap().to_string();
    wait_for(10, || (mine(&requester, &s, &short)["status"] == "EXPIRED").then_some(()));
    wait_for(10, || (quote_status(&mine(&requester, &s, &long), &q) == "EXPIRED").then_some(()));
    assert_eq!(quote_status(&mine(&requester, &s, &short), &late), "EXPIRED");
    assert_eq!(mine(&requester, &s, &long)["status"], "OPEN");

    let filled = (400, "RFQ not found, expired, or already filled".to_string());
    assert_eq!(err(accept(&requester, &s, json!({"rfqId": short}))), filled);
    assert_eq!(err(quote(&quoter, &s, &short, "0.5")), filled);
    assert_eq!(
        err(accept(&requester, &s, json!({"quoteId": q}))),
        (404, "quote not found, expired, or already processed".into())
    );
    assert_eq!(err(accept(&requester, &s, json!({"rfqId": long}))), (404, "no valid quotes available".into()));
    let (_, open) = quoter.l2(&s, "GET", "/rfq/requests/open", None);
    let ids: Vec<&str> = open["data"].as_array().unwrap().iter().map(|r| r["rfqId"].as_str().unwrap()).collect();
    assert_eq!(ids, vec![long.as_str()]);
    assert_eq!(requester.available(&s, "USDC"), m("100"), "expiry moves nothing");

    // Survives a restart: the expired stay expired, the open one still takes quotes.
    let (cfg, _dir) = s.stop();
    let s = Server::start_with(cfg);
    assert_eq!(mine(&requester, &s, &short)["status"], "EXPIRED");
    let fresh = quote_id(&quoter, &s, &long, "0.45");
    assert_eq!(accept(&requester, &s, json!({"rfqId": long})).1["quoteId"], fresh.as_str());
}

/// The clients' cancels (`cancel_rfq_request`, `cancel_rfq_quote`) and settings
/// (`rfq_config`): a withdrawn quote or request cannot be accepted, and only its owner
/// withdraws it.
#[test]
fn rfq_cancels_and_config() {
    let s = Server::start();
    let requester = s.trader(m("100"));
    let (q1, q2) = (s.trader(m("100")), s.trader(m("100")));
    for q in [&q1, &q2] {
        s.credit(&q.address, YES, m("50"));
    }
    let del = |t: &Trader, path: &str, body: Value| t.l2(&s, "DELETE", path, Some(&body));
    let rfq = request(&requester, &s, "BUY", "10", 60);
    let (a, b) = (quote_id(&q1, &s, &rfq, "0.55"), quote_id(&q2, &s, &rfq, "0.60"));

    // A quote: its quoter only, then gone.
    let gone = (404, "quote not found, expired, or already processed".to_string());
    assert_eq!(err(del(&q2, "/rfq/quote", json!({"quoteId": a}))), gone, "another quoter's quote");
    assert_eq!(err(del(&q1, "/rfq/quote", json!({"quoteId": "x"}))), (400, "valid quoteId required".into()));
    assert_eq!(del(&q1, "/rfq/quote", json!({"quoteId": a})), (200, json!("OK")));
    assert_eq!(err(del(&q1, "/rfq/quote", json!({"quoteId": a}))), gone, "twice");
    assert_eq!(quote_status(&mine(&requester, &s, &rfq), &a), "CANCELLED");
    assert_eq!(err(accept(&requester, &s, json!({"quoteId": a}))), gone);

    // The request: its requester only; its pending quotes are rejected with it.
    let not_owned = (400, "RFQ not found or not owned by you".to_string());
    assert_eq!(err(del(&q1, "/rfq/request", json!({"requestId": rfq}))), not_owned);
    assert_eq!(err(del(&requester, "/rfq/request", json!({}))), (400, "valid requestId required".into()));
    assert_eq!(del(&requester, "/rfq/request", json!({"requestId": rfq})), (200, json!("OK")));
    let r = mine(&requester, &s, &rfq);
    assert_eq!((r["status"].as_str(), quote_status(&r, &b).as_str()), (Some("CANCELLED"), "REJECTED"));
    assert_eq!(
        err(del(&requester, "/rfq/request", json!({"requestId": rfq}))),
        (400, "RFQ not found, expired, or already filled".into())
    );
    assert_eq!(
        err(accept(&requester, &s, json!({"rfqId": rfq}))),
        (400, "RFQ not found, expired, or already filled".into())
    );
    assert_eq!(err(quote(&q1, &s, &rfq, "0.5")), (400, "RFQ not found, expired, or already filled".into()));

    let (st, c) = requester.l2(&s, "GET", "/rfq/config", None);
    assert_eq!(st, 200, "{c}");
    assert_eq!((c["requestTtlSecs"].as_u64(), c["maxTtlSecs"].as_u64()), (Some(300), Some(86_400)));
    assert_eq!(err(s.get("/rfq/config")), (401, "L2 authentication failure".into()));
}
