//! Request for quote: every §7.5 refusal, the best-quote rule both ways, acceptance by
//! quote ID, trades through the settlement path, and expiry by the worker.

use serde_json::{json, Value};

use crate::support::*;

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

/// The requester and three quoters, each holding 50 YES.
struct Desk {
    requester: Trader,
    q1: Trader,
    q2: Trader,
    q3: Trader,
}

/// An accept naming a quote that is not there.
fn gone() -> (u16, String) {
    (404, "quote not found, expired, or already processed".to_string())
}

/// A request already filled.
fn filled() -> (u16, String) {
    (400, "RFQ not found, expired, or already filled".to_string())
}

#[test]
fn rfq_best_quote_both_ways_acceptance_settlement_and_refusals() {
    let s = Server::start();
    let d =
        Desk { requester: s.trader(m("100")), q1: s.trader(m("100")), q2: s.trader(m("100")), q3: s.trader(m("100")) };
    for q in [&d.q1, &d.q2, &d.q3] {
        s.credit(&q.address, YES, m("50"));
    }
    let all = [&d.requester, &d.q1, &d.q2, &d.q3];
    let total = |asset: &str| -> u64 { all.iter().map(|t| t.balance(&s, asset)).sum() };
    let (usdc0, yes0) = (total("USDC"), total(YES));
    requests_are_refused_unless_well_formed(&s, &d.requester);
    let (rfq, quotes) = quotes_are_refused_until_well_formed_then_three_quote(&s, &d);
    accepts_are_refused_and_change_nothing(&s, &d, &rfq);
    accepting_a_buy_takes_the_lowest_quote_and_settles(&s, &d, &rfq, &quotes);
    accepting_a_sell_takes_the_highest_quote(&s, &d);
    accepting_by_quote_id_takes_that_quote(&s, &d, &rfq);
    let sink = a_quoter_that_spent_what_it_pays_is_not_accepted(&s, &d);
    s.settle();
    s.check();
    let all = [&d.requester, &d.q1, &d.q2, &d.q3, &sink];
    let sum = |asset: &str| -> u64 { all.iter().map(|t| t.balance(&s, asset)).sum() };
    assert_eq!((sum("USDC"), sum(YES)), (usdc0 + m("100"), yes0), "RFQ trades conserve collateral and tokens");
}

fn requests_are_refused_unless_well_formed(s: &Server, requester: &Trader) {
    let post = |body: Value| requester.l2(s, "POST", "/rfq/request", Some(&body));
    assert_eq!(err(s.post("/rfq/request", &json!({}))), (401, "L2 authentication failure".into()));
    let (st, b) = requester.l2_raw(s, "POST", "/rfq/request", "{nope");
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
}

/// A BUY request for 10 YES and its refused quotes; then three quotes. Returns the request
/// and the quotes (0.60, 0.55 — the best —, 0.58).
fn quotes_are_refused_until_well_formed_then_three_quote(s: &Server, d: &Desk) -> (String, [String; 3]) {
    let Desk { requester, q1, q2, q3 } = d;
    let rfq = request(requester, s, "BUY", "10", 300);
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
        assert_eq!(err(q1.l2(s, "POST", "/rfq/quote", Some(&body))), (400, msg.into()), "{body}");
    }
    assert_eq!(err(quote(requester, s, &rfq, "0.50")), (400, "cannot quote your own RFQ".into()));
    let broke = s.trader(0);
    assert_eq!(err(quote(&broke, s, &rfq, "0.50")), (400, "not enough balance / allowance".into()));
    let a = quote_id(q1, s, &rfq, "0.60");
    let best = quote_id(q2, s, &rfq, "0.55");
    let c = quote_id(q3, s, &rfq, "0.58");
    let (_, open) = q1.l2(s, "GET", "/rfq/requests/open", None);
    assert!(open["data"].as_array().unwrap().iter().any(|r| r["rfqId"] == rfq.as_str() && r.get("quotes").is_none()));

    (rfq, [a, best, c])
}

fn accepts_are_refused_and_change_nothing(s: &Server, d: &Desk, rfq: &str) {
    let Desk { requester, q1, .. } = d;
    assert_eq!(err(s.post("/rfq/accept", &json!({"rfqId": rfq}))), (401, "invalid authorization".into()));
    let (st, b) = requester.l2_raw(s, "POST", "/rfq/accept", "[1,");
    assert!(st == 400 && b["error"].as_str().unwrap().starts_with("invalid JSON: "), "{b}");
    assert_eq!(err(accept(requester, s, json!({}))), (400, "rfqId or quoteId required".into()));
    assert_eq!(err(accept(requester, s, json!({"rfqId": "x"}))), (400, "valid rfqId required".into()));
    assert_eq!(err(accept(q1, s, json!({"rfqId": rfq}))), (400, "RFQ not found or not owned by you".into()));
    assert_eq!(
        err(accept(requester, s, json!({"rfqId": uuid::Uuid::new_v4().to_string()}))),
        (400, "RFQ not found or not owned by you".into())
    );
    let gone = gone();
    assert_eq!(err(accept(requester, s, json!({"quoteId": uuid::Uuid::new_v4().to_string()}))), gone);
    assert_eq!(err(accept(requester, s, json!({"quoteId": "nope"}))), gone);
    assert_eq!(mine(requester, s, rfq)["status"], "OPEN", "refusals change nothing");
}

/// Accepted by rfqId: the lowest price for a BUY; the trade settles like a book match.
fn accepting_a_buy_takes_the_lowest_quote_and_settles(s: &Server, d: &Desk, rfq: &str, [a, best, c]: &[String; 3]) {
    let Desk { requester, q1, q2, .. } = d;
    let (a, best, c) = (a.as_str(), best.as_str(), c.as_str());
    let (st, r) = accept(requester, s, json!({"rfqId": rfq}));
    assert_eq!(st, 200, "{r}");
    assert_eq!(
        (r["quoteId"].as_str(), r["rfqId"].as_str(), r["status"].as_str()),
        (Some(best), Some(rfq), Some("ACCEPTED"))
    );
    let view = mine(requester, s, rfq);
    assert_eq!((view["status"].as_str(), view["acceptedQuoteId"].as_str()), (Some("FILLED"), Some(best)));
    assert_eq!(quote_status(&view, best), "ACCEPTED");
    assert_eq!((quote_status(&view, a), quote_status(&view, c)), ("REJECTED".into(), "REJECTED".into()));
    let (_, mq) = q1.l2(s, "GET", "/rfq/quotes", None);
    assert_eq!((mq["data"][0]["quoteId"].as_str(), mq["data"][0]["status"].as_str()), (Some(a), Some("REJECTED")));
    // The trade is PENDING and holds both payments, like a book match.
    assert_eq!(requester.available(s, "USDC"), m("94.5"));
    assert_eq!(q2.available(s, YES), m("40"));
    let t = &requester.l2(s, "GET", "/data/trades", None).1["data"][0];
    assert_eq!(
        (t["status"].as_str(), t["price"].as_str(), t["size"].as_str()),
        (Some("PENDING"), Some("0.55"), Some("10"))
    );
    assert_eq!((t["taker_order_id"].as_str(), t["maker_orders"][0]["order_id"].as_str()), (Some(rfq), Some(best)));
    assert_eq!(q2.l2(s, "GET", "/data/trades", None).1["data"][0]["trader_side"], "MAKER");
    assert_eq!(s.settle(), (1, 0));
    assert_eq!((requester.balance(s, "USDC"), requester.balance(s, YES)), (m("94.5"), m("10")));
    assert_eq!((q2.balance(s, "USDC"), q2.balance(s, YES)), (m("105.5"), m("40")));
    assert_eq!(requester.l2(s, "GET", "/data/trades", None).1["data"][0]["status"], "CONFIRMED");
    // Filled: no second acceptance, no more quotes.
    assert_eq!(err(accept(requester, s, json!({"rfqId": rfq}))), filled());
    assert_eq!(err(quote(q1, s, rfq, "0.50")), filled());
}

/// A SELL request: the highest price wins.
fn accepting_a_sell_takes_the_highest_quote(s: &Server, d: &Desk) {
    let Desk { requester, q1, q2, q3 } = d;
    let sell = request(requester, s, "SELL", "10", 300);
    let low = quote_id(q1, s, &sell, "0.40");
    let high = quote_id(q3, s, &sell, "0.45");
    quote_id(q2, s, &sell, "0.42");
    assert_eq!(accept(requester, s, json!({"rfqId": sell})).1["quoteId"], high.as_str());
    assert_eq!(quote_status(&mine(requester, s, &sell), &low), "REJECTED");
    assert_eq!(s.settle(), (1, 0));
    assert_eq!((requester.balance(s, "USDC"), requester.balance(s, YES)), (m("99"), 0));
}

/// Accepted by quoteId: that quote, even when it is not the best.
fn accepting_by_quote_id_takes_that_quote(s: &Server, d: &Desk, rfq: &str) {
    let Desk { requester, q1, q3, .. } = d;
    let gone = gone();
    let third = request(requester, s, "BUY", "5", 300);
    let cheap = quote_id(q1, s, &third, "0.50");
    let dear = quote_id(q3, s, &third, "0.52");
    assert_eq!(err(accept(requester, s, json!({"rfqId": rfq, "quoteId": dear}))), gone, "a quote of another request");
    let (st, r) = accept(requester, s, json!({"quoteId": dear}));
    assert_eq!((st, r["quoteId"].as_str()), (200, Some(&*dear)));
    assert_eq!(quote_status(&mine(requester, s, &third), &cheap), "REJECTED");
    assert_eq!(err(accept(requester, s, json!({"quoteId": cheap}))), filled());
}

/// A quoter that no longer holds what it pays: the accept is refused and changes nothing.
/// Returns the trader that bought the quoter's tokens.
fn a_quoter_that_spent_what_it_pays_is_not_accepted(s: &Server, d: &Desk) -> Trader {
    let Desk { requester, q1, .. } = d;
    let fourth = request(requester, s, "BUY", "5", 300);
    let empty = quote_id(q1, s, &fourth, "0.50");
    let spend = q1.balance(s, YES);
    let sink = s.trader(m("100"));
    q1.place(s, YES, "SELL", "0.50", &predex::domain::fmt_amount(spend));
    sink.place(s, YES, "BUY", "0.50", &predex::domain::fmt_amount(spend));
    assert_eq!(err(accept(requester, s, json!({"quoteId": empty}))), (400, "not enough balance / allowance".into()));
    assert_eq!(mine(requester, s, &fourth)["status"], "OPEN");
    assert_eq!(quote_status(&mine(requester, s, &fourth), &empty), "PENDING");

    sink
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

/// The official clients' form over the same requests and quotes: a request and a quote in
/// asset amounts, the data lists with their filters, the best quote, the requester's
/// accept and the quoter's approve with signed orders — mixed with the spec's form.
#[test]
fn rfq_the_clients_form_over_the_same_state() {
    let s = Server::start();
    let c = Clients { requester: s.trader(m("100")), q1: s.trader(m("100")), q2: s.trader(m("100")), s };
    for q in [&c.q1, &c.q2] {
        c.s.credit(&q.address, YES, m("50"));
    }
    let rfq = a_buy_in_asset_amounts_is_checked_then_requested(&c);
    quoters_see_it_with_the_clients_fields_and_filter_it(&c, &rfq);
    let (a, b) = quotes_come_in_asset_amounts_and_in_the_spec_form(&c, &rfq);
    the_requester_sees_both_quotes_and_the_best_is_the_lowest(&c, &rfq, &a, &b);
    accept_and_approve_carry_signed_orders_at_the_quote(&c, &rfq, &a, &b);
    a_sell_request_in_asset_amounts_flips_the_sizes(&c);
    c.s.check();
}

/// The requester and two quoters holding 50 YES each, on the clients' forms.
struct Clients {
    s: Server,
    requester: Trader,
    q1: Trader,
    q2: Trader,
}

impl Clients {
    fn post(&self, t: &Trader, path: &str, body: Value) -> (u16, Value) {
        t.l2(&self.s, "POST", path, Some(&body))
    }

    fn get(&self, t: &Trader, path: &str) -> Value {
        let (st, b) = t.l2(&self.s, "GET", path, None);
        assert_eq!(st, 200, "{path}: {b}");
        b
    }
}

/// A request or quote body in asset amounts, as the clients send it.
fn form(a_in: &str, a_out: &str, n_in: &str, n_out: &str) -> Value {
    json!({"assetIn": a_in, "assetOut": a_out, "amountIn": n_in, "amountOut": n_out, "userType": 0})
}

/// A BUY of 10 YES at 0.50 in asset amounts; the bad forms change nothing.
fn a_buy_in_asset_amounts_is_checked_then_requested(c: &Clients) -> String {
    let requester = &c.requester;
    let assets = "assetIn, assetOut, amountIn and amountOut required: one asset 0 (collateral), the other a token";
    for (body, msg) in [
        (form("0", "0", "10000000", "5000000"), assets),
        (form(YES, NO, "10000000", "5000000"), assets),
        (form(YES, "0", "0", "5000000"), assets),
        (form(YES, "0", "10000000", "x"), assets),
        (form(YES, "0", "3000000", "1000000"), "amountIn and amountOut must give a price below 1 in steps of 0.0001"),
        (form(YES, "0", "10000000", "10000000"), "amountIn and amountOut must give a price below 1 in steps of 0.0001"),
        (form(YES, "0", "10000000", "5050000"), "Price (0.505) breaks minimum tick size rule: 0.01"),
    ] {
        assert_eq!(err(c.post(requester, "/rfq/request", body.clone())), (400, msg.to_string()), "{body}");
    }
    assert_eq!(c.get(requester, "/rfq/data/requests")["count"], 0, "refusals change nothing");
    let (st, r) = c.post(requester, "/rfq/request", form(YES, "0", "10000000", "5000000"));
    assert_eq!(st, 200, "{r}");
    let rfq = r["requestId"].as_str().unwrap().to_string();
    assert_eq!((r["rfqId"].as_str(), r["side"].as_str(), r["size"].as_str()), (Some(&*rfq), Some("BUY"), Some("10")));
    rfq
}

fn quoters_see_it_with_the_clients_fields_and_filter_it(c: &Clients, rfq: &str) {
    let (s, q1) = (&c.s, &c.q1);
    let listed = c.get(q1, "/rfq/data/requests");
    let x = &listed["data"][0];
    assert_eq!(
        (x["requestId"].as_str(), x["token"].as_str(), x["complement"].as_str(), x["condition"].as_str()),
        (Some(rfq), Some(YES), Some(NO), Some(COND))
    );
    assert_eq!((x["side"].as_str(), x["sizeIn"].as_str(), x["sizeOut"].as_str()), (Some("BUY"), Some("10"), Some("5")));
    assert_eq!((x["price"].as_f64(), x["state"].as_str()), (Some(0.5), Some("OPEN")));
    assert_eq!((listed["count"].as_u64(), listed["total_count"].as_u64()), (Some(1), Some(1)));
    for (query, n) in [
        ("state=active", 1),
        ("state=inactive", 0),
        (&*format!("markets={COND}"), 1),
        ("markets=0xother", 0),
        (&*format!("requestIds={rfq}&requestIds={}", uuid::Uuid::new_v4()), 1),
        ("sizeMin=11", 0),
        ("sizeMax=10&priceMin=0.5&sizeUsdcMax=5", 1),
        ("priceMax=0.49", 0),
    ] {
        assert_eq!(c.get(q1, &format!("/rfq/data/requests?{query}"))["count"], n, "{query}");
    }
    assert_eq!(err(q1.l2(s, "GET", "/rfq/data/requests?state=open", None)).0, 400);
    assert_eq!(err(q1.l2(s, "GET", "/rfq/data/requests?limit=101", None)).0, 400);
    assert_eq!(err(s.get("/rfq/data/requests")), (401, "L2 authentication failure".into()));
}

/// q1 in asset amounts (it SELLs 10 YES for 5.2), q2 in the spec's form. Returns both ids.
fn quotes_come_in_asset_amounts_and_in_the_spec_form(c: &Clients, rfq: &str) -> (String, String) {
    let quote_form = |a_in: &str, a_out: &str, n_in: &str, n_out: &str| {
        let mut b = form(a_in, a_out, n_in, n_out);
        b["requestId"] = json!(rfq);
        b
    };
    let q1 = &c.q1;
    let terms = (400, "quote must take the other side of the request's token for its whole size".to_string());
    assert_eq!(err(c.post(q1, "/rfq/quote", quote_form(YES, "0", "10000000", "5200000"))), terms, "same side");
    assert_eq!(err(c.post(q1, "/rfq/quote", quote_form("0", YES, "2600000", "5000000"))), terms, "part of the size");
    assert_eq!(err(c.post(q1, "/rfq/quote", quote_form("0", NO, "5200000", "10000000"))), terms, "the other token");
    let (st, a) = c.post(q1, "/rfq/quote", quote_form("0", YES, "5200000", "10000000"));
    assert_eq!((st, a["status"].as_str(), a["price"].as_str()), (200, Some("PENDING"), Some("0.52")), "{a}");
    let a = a["quoteId"].as_str().unwrap().to_string();
    let b = quote_id(&c.q2, &c.s, rfq, "0.55");
    (a, b)
}

/// Sorted and filtered; the best for a BUY is the lowest.
fn the_requester_sees_both_quotes_and_the_best_is_the_lowest(c: &Clients, rfq: &str, a: &str, b: &str) {
    let (s, requester, q1) = (&c.s, &c.requester, &c.q1);
    let theirs = c.get(requester, "/rfq/data/requester/quotes?sortBy=price&sortDir=asc");
    let ids: Vec<&str> = theirs["data"].as_array().unwrap().iter().map(|q| q["quoteId"].as_str().unwrap()).collect();
    assert_eq!(ids, [a, b]);
    let qa = &theirs["data"][0];
    assert_eq!(
        (qa["side"].as_str(), qa["sizeIn"].as_str(), qa["sizeOut"].as_str(), qa["matchType"].as_str()),
        (Some("SELL"), Some("5.2"), Some("10"), Some("COMPLEMENTARY"))
    );
    assert_eq!((qa["price"].as_f64(), qa["userAddress"].as_str()), (Some(0.52), Some(&*q1.address)));
    assert_eq!(c.get(requester, &format!("/rfq/data/requester/quotes?quoteIds={b}"))["data"][0]["quoteId"], b);
    assert_eq!(c.get(q1, "/rfq/data/requester/quotes")["count"], 0, "a quoter's requests have no quotes");
    assert_eq!(c.get(q1, "/rfq/data/quoter/quotes")["data"][0]["quoteId"], a);
    assert_eq!(c.get(requester, &format!("/rfq/data/best-quote?requestId={rfq}"))["quoteId"], a);
    assert_eq!(
        err(q1.l2(s, "GET", &format!("/rfq/data/best-quote?requestId={rfq}"), None)),
        (400, "RFQ not found or not owned by you".into())
    );
    assert_eq!(err(q1.l2(s, "GET", "/rfq/data/best-quote", None)), (400, "valid requestId required".into()));
}

/// Accept and approve carry a signed order for the signer's side at the quote's price; the
/// wrong ones change nothing, the right ones fill and settle.
fn accept_and_approve_carry_signed_orders_at_the_quote(c: &Clients, rfq: &str, a: &str, b: &str) {
    let (s, requester, q1, q2) = (&c.s, &c.requester, &c.q1, &c.q2);
    let signed = |t: &Trader, side: &str, price: &str, size: &str, quote: &str, owner: &str| {
        let mut o = t.order(s, YES, side, price, size);
        o["requestId"] = json!(rfq);
        o["quoteId"] = json!(quote);
        o["owner"] = json!(owner);
        o
    };
    let accept_with = |o: Value| c.post(requester, "/rfq/request/accept", o);
    let no_match = (400, "order does not match the quote".to_string());
    assert_eq!(err(accept_with(signed(requester, "BUY", "0.55", "10", a, &requester.key))), no_match, "price");
    assert_eq!(err(accept_with(signed(requester, "SELL", "0.52", "10", a, &requester.key))), no_match, "side");
    assert_eq!(err(accept_with(signed(requester, "BUY", "0.52", "9", a, &requester.key))), no_match, "size");
    assert_eq!(
        err(accept_with(signed(requester, "BUY", "0.52", "10", a, &q1.key))),
        (400, "the order owner has to be the owner of the API KEY".into())
    );
    assert_eq!(
        err(accept_with(signed(q1, "BUY", "0.52", "10", a, &requester.key))),
        (400, "the order owner has to be the owner of the API KEY".into()),
        "another wallet's order"
    );
    let mut forged = signed(requester, "BUY", "0.52", "10", a, &requester.key);
    forged["takerAmount"] = json!("10000001");
    assert_eq!(err(accept_with(forged)), (400, "invalid signature".into()));
    let mut unsigned = signed(requester, "BUY", "0.52", "10", a, &requester.key);
    unsigned.as_object_mut().unwrap().remove("makerAmount");
    assert_eq!(err(accept_with(unsigned)), (400, "Invalid order payload".into()));
    assert_eq!(
        err(c.post(q1, "/rfq/quote/approve", signed(q1, "SELL", "0.52", "10", a, &q1.key))),
        (400, "quote has not been accepted".into())
    );
    assert_eq!(c.get(requester, "/rfq/data/requests?state=active")["count"], 1, "refusals change nothing");

    let (st, ok) = accept_with(signed(requester, "BUY", "0.52", "10", a, &requester.key));
    assert_eq!((st, ok), (200, json!("OK")));
    let r = mine(requester, s, rfq);
    assert_eq!((r["status"].as_str(), quote_status(&r, a).as_str()), (Some("FILLED"), "ACCEPTED"));
    assert_eq!(quote_status(&r, b), "REJECTED");
    assert_eq!(c.get(requester, "/rfq/data/requests?state=inactive")["data"][0]["acceptedQuoteId"], a);
    assert_eq!(err(c.post(q2, "/rfq/quote/approve", signed(q2, "SELL", "0.52", "10", a, &q2.key))), gone());
    assert_eq!(err(c.post(q1, "/rfq/quote/approve", signed(q1, "BUY", "0.52", "10", a, &q1.key))), no_match);
    assert_eq!(c.post(q1, "/rfq/quote/approve", signed(q1, "SELL", "0.52", "10", a, &q1.key)), (200, json!("OK")));
    assert_eq!(s.settle(), (1, 0));
    assert_eq!((requester.balance(s, "USDC"), requester.balance(s, YES)), (m("94.8"), m("10")));
    assert_eq!((q1.balance(s, "USDC"), q1.balance(s, YES)), (m("105.2"), m("40")));
}

/// A SELL request in asset amounts, quoted in the spec's form.
fn a_sell_request_in_asset_amounts_flips_the_sizes(c: &Clients) {
    let q2 = &c.q2;
    let (st, r) = c.post(&c.requester, "/rfq/request", form("0", YES, "4000000", "10000000"));
    assert_eq!(st, 200, "{r}");
    let sell = r["requestId"].as_str().unwrap().to_string();
    let x = c.get(q2, &format!("/rfq/data/requests?requestIds={sell}"));
    assert_eq!(
        (x["data"][0]["side"].as_str(), x["data"][0]["sizeIn"].as_str(), x["data"][0]["sizeOut"].as_str()),
        (Some("SELL"), Some("4"), Some("10"))
    );
    let id = quote_id(q2, &c.s, &sell, "0.41");
    let view = c.get(q2, "/rfq/data/quoter/quotes?state=active");
    assert_eq!((view["count"].as_u64(), view["data"][0]["quoteId"].as_str()), (Some(1), Some(&*id)));
    assert_eq!((view["data"][0]["side"].as_str(), view["data"][0]["sizeIn"].as_str()), (Some("BUY"), Some("10")));
}
