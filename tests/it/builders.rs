//! Builders (keys, attributed orders and cancels, what a builder sees, its volume) and the
//! gasless relay in both authentication modes.

use serde_json::{json, Value};

use crate::support::{l2_with as with, *};

/// A request signed with builder credentials only (SPEC §5.5).
fn as_builder(s: &Server, creds: &Value, path: &str) -> (u16, Value) {
    let ts = now().to_string();
    let sig = predex::auth::build_hmac_signature(creds["secret"].as_str().unwrap(), &ts, "GET", path, "");
    let r = ureq::get(&format!("{}{path}", s.clob))
        .set("SERVICE_BUILDER_API_KEY", creds["apiKey"].as_str().unwrap())
        .set("SERVICE_BUILDER_PASSPHRASE", creds["passphrase"].as_str().unwrap())
        .set("SERVICE_BUILDER_SIGNATURE", &sig)
        .set("SERVICE_BUILDER_TIMESTAMP", &ts);
    send(r, None)
}

fn submission(t: &Trader, order: Value) -> String {
    json!({"order": order, "owner": t.key, "orderType": "GTC"}).to_string()
}

#[test]
fn builder_keys_attribution_and_what_a_builder_sees() {
    let s = Server::start();
    let builder = s.trader(0);
    let (alice, bob) = (s.trader(m("100")), s.trader(0));
    s.credit(&bob.address, YES, m("50"));
    let (creds, second) = a_builder_manages_its_keys(&s, &builder, &alice);
    builder_orders_are_refused_without_a_valid_builder(&s, &alice, &second, &creds);
    let (alice_order, rest) = orders_placed_through_a_builder_are_attributed(&s, &alice, &bob, &creds);
    the_builder_sees_its_orders_trades_and_volume(&s, &bob, &creds, &second, (&alice_order, &rest));
    a_builder_cancel_cancels_only_the_owners_order(&s, (&alice, &bob), &creds, &alice_order);
    let (cfg, _dir) = s.stop();
    let s = Server::start_with(cfg);
    assert_eq!(as_builder(&s, &creds, "/data/trades").1["count"], 1, "attribution survives a restart");
}

/// Creating, listing and deleting builder API keys; returns the two keys made (the
/// second deleted).
fn a_builder_manages_its_keys(s: &Server, builder: &Trader, alice: &Trader) -> (Value, Value) {
    let path = "/auth/builder-api-key";
    assert_eq!(err(builder.l2(s, "POST", path, Some(&json!({})))), (400, "builderId required".into()));
    assert_eq!(err(builder.l2(s, "POST", path, None)), (400, "builderId required".into()));
    assert_eq!(err(s.post(path, &json!({"builderId": "acme"}))), (401, "L2 authentication failure".into()));
    let (st, creds) = builder.l2(s, "POST", path, Some(&json!({"builderId": "acme"})));
    assert_eq!(st, 200, "{creds}");
    assert_eq!(creds["builderId"], "acme");
    assert!(creds["secret"].is_string() && creds["passphrase"].is_string());
    let (_, second) = builder.l2(s, "POST", path, Some(&json!({"builderId": "acme"})));
    assert_eq!(
        err(alice.l2(s, "POST", path, Some(&json!({"builderId": "acme"})))),
        (409, "builderId belongs to another address".into())
    );
    let (_, list) = builder.l2(s, "GET", path, None);
    let mut keys: Vec<&str> =
        list["apiKeys"].as_array().unwrap().iter().map(|k| k["apiKey"].as_str().unwrap()).collect();
    let mut want = vec![creds["apiKey"].as_str().unwrap(), second["apiKey"].as_str().unwrap()];
    keys.sort();
    want.sort();
    assert_eq!(keys, want);
    assert!(list["apiKeys"][0].get("secret").is_none());
    assert_eq!(alice.l2(s, "GET", path, None).1, json!({"apiKeys": []}));
    assert_eq!(err(builder.l2(s, "DELETE", &format!("{path}?apiKey=nope"), None)), (400, "invalid apiKey".into()));
    let del_second = format!("{path}?apiKey={}", second["apiKey"].as_str().unwrap());
    assert_eq!(err(alice.l2(s, "DELETE", &del_second, None)), (404, "builder API key not found".into()));
    assert_eq!(builder.l2(s, "DELETE", &del_second, None), (200, json!({})), "SPEC §4.1: an empty object");
    assert_eq!(err(builder.l2(s, "DELETE", &del_second, None)), (404, "builder API key not found".into()));
    assert_eq!(builder.l2(s, "GET", path, None).1["apiKeys"].as_array().unwrap().len(), 1);

    (creds, second)
}

fn builder_orders_are_refused_without_a_valid_builder(s: &Server, alice: &Trader, second: &Value, creds: &Value) {
    let o = alice.order(s, YES, "BUY", "0.50", "10");
    let body = submission(alice, o.clone());
    let id = [("SERVICE_BUILDER_ID", "acme")];
    assert_eq!(
        err(with(alice, s, "POST", "/builder/order", &body, &[])),
        (400, "OPENFISH_BUILDER_ID header required (header SERVICE_BUILDER_ID)".into())
    );
    assert_eq!(
        err(with(alice, s, "POST", "/builder/order", &body, &[("SERVICE_BUILDER_ID", " ")])).0,
        400,
        "an empty builder ID is missing"
    );
    let (st, b) = with(alice, s, "POST", "/builder/order", "{oops", &id);
    assert!(st == 400 && b["error"].as_str().unwrap().starts_with("invalid JSON: "), "{b}");
    assert_eq!(
        err(with(alice, s, "POST", "/builder/order", r#"{"owner":"x"}"#, &id)),
        (400, "missing 'order' field".into())
    );
    let bad_key = [("SERVICE_BUILDER_ID", "acme"), ("SERVICE_BUILDER_API_KEY", second["apiKey"].as_str().unwrap())];
    assert_eq!(err(with(alice, s, "POST", "/builder/order", &body, &bad_key)), (401, "invalid builder API key".into()));
    let other_id = [("SERVICE_BUILDER_ID", "other"), ("SERVICE_BUILDER_API_KEY", creds["apiKey"].as_str().unwrap())];
    assert_eq!(
        err(with(alice, s, "POST", "/builder/order", &body, &other_id)),
        (401, "invalid builder API key".into())
    );
    assert_eq!(alice.l2(s, "GET", "/data/orders", None).1["count"], 0, "refusals place nothing");
}

/// Alice's BUY through acme (with its key), bob's SELL through acme (no key), and one of
/// bob's outside it; returns alice's order and bob's resting one.
fn orders_placed_through_a_builder_are_attributed(
    s: &Server,
    alice: &Trader,
    bob: &Trader,
    creds: &Value,
) -> (String, String) {
    let id = [("SERVICE_BUILDER_ID", "acme")];
    let body = submission(alice, alice.order(s, YES, "BUY", "0.50", "10"));
    let verified = [("SERVICE_BUILDER_ID", "acme"), ("SERVICE_BUILDER_API_KEY", creds["apiKey"].as_str().unwrap())];
    let (st, placed) = with(alice, s, "POST", "/builder/order", &body, &verified);
    assert_eq!((st, placed["status"].as_str()), (200, Some("LIVE")), "{placed}");
    let alice_order = placed["orderID"].as_str().unwrap().to_string();
    let rest = bob.place(s, YES, "SELL", "0.70", "5")["orderID"].as_str().unwrap().to_string();
    let sell = submission(bob, bob.order(s, YES, "SELL", "0.50", "6"));
    let (st, filled) = with(bob, s, "POST", "/builder/order", &sell, &id);
    assert_eq!((st, filled["status"].as_str()), (200, Some("MATCHED")), "{filled}");

    (alice_order, rest)
}

/// The builder sees its attributed open orders and their trades, nothing else.
fn the_builder_sees_its_orders_trades_and_volume(
    s: &Server,
    bob: &Trader,
    creds: &Value,
    second: &Value,
    (alice_order, rest): (&str, &str),
) {
    let (st, orders) = as_builder(s, creds, "/data/orders");
    assert_eq!(st, 200, "{orders}");
    let ids: Vec<&str> = orders["data"].as_array().unwrap().iter().map(|o| o["id"].as_str().unwrap()).collect();
    assert_eq!(ids, vec![alice_order], "bob's resting order is not acme's");
    let (_, trades) = as_builder(s, creds, "/data/trades");
    assert_eq!(trades["count"], 1);
    assert_eq!((trades["data"][0]["size"].as_str(), trades["data"][0]["price"].as_str()), (Some("6"), Some("0.5")));
    // The clients' get_builder_trades: the same trade as a BuilderTrade.
    let (st, bt) = as_builder(s, creds, "/builder/trades");
    assert_eq!(st, 200, "{bt}");
    let row = &bt["data"][0];
    assert_eq!(bt["count"], 1);
    assert_eq!(row["id"], trades["data"][0]["id"]);
    assert_eq!(
        (row["builder"].as_str(), row["tradeType"].as_str(), row["side"].as_str(), row["size"].as_str()),
        (Some("acme"), Some("TAKER"), Some("SELL"), Some("6"))
    );
    assert_eq!(
        (row["price"].as_str(), row["sizeUsdc"].as_str(), row["market"].as_str()),
        (Some("0.5"), Some("6"), Some(COND))
    );
    assert_eq!((row["assetId"].as_str(), row["outcomeIndex"].as_u64()), (Some(YES), Some(0)));
    assert_eq!(as_builder(s, creds, "/builder/trades?market=0xother").1["count"], 0);
    assert_eq!(err(s.get("/builder/trades")), (401, "L2 authentication failure".into()));
    // The market's live activity (the clients' get_market_trades_events): the trade from
    // its taker's side.
    let (st, live) = s.get(&format!("/live-activity/events/{COND}"));
    assert_eq!(st, 200, "{live}");
    assert_eq!(live.as_array().unwrap().len(), 1, "{live}");
    assert_eq!(
        (live[0]["event_type"].as_str(), live[0]["side"].as_str(), live[0]["price"].as_str(), live[0]["size"].as_str()),
        (Some("trade"), Some("SELL"), Some("0.5"), Some("6"))
    );
    assert_eq!(
        (live[0]["market"]["condition_id"].as_str(), live[0]["user"]["address"].as_str()),
        (Some(COND), Some(bob.address.as_str()))
    );
    assert_eq!(err(s.get("/live-activity/events/0xnope")), (404, "market not found".into()));
    // Volume: both sides of the one trade were attributed: 3 USDC each.
    let (_, v) = as_builder(s, creds, "/builder/volume");
    assert_eq!(v, json!({"builderId": "acme", "orders": 2, "trades": 1, "volume": "6"}));
    assert_eq!(as_builder(s, creds, "/builder/volume?market=0xother").1["volume"], "0");
    // Bad builder credentials.
    let mut forged = creds.clone();
    forged["secret"] = json!("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=");
    assert_eq!(err(as_builder(s, &forged, "/data/orders")), (401, "L2 authentication failure".into()));
    let mut gone = creds.clone();
    gone["apiKey"] = second["apiKey"].clone();
    assert_eq!(err(as_builder(s, &gone, "/data/trades")), (401, "Unauthorized/Invalid api key".into()));
    // The user's own view is unchanged by attribution.
    assert_eq!(bob.l2(s, "GET", "/data/orders", None).1["data"][0]["id"], rest);
}

fn a_builder_cancel_cancels_only_the_owners_order(
    s: &Server,
    (alice, bob): (&Trader, &Trader),
    creds: &Value,
    alice_order: &str,
) {
    let id = [("SERVICE_BUILDER_ID", "acme")];
    let cancel = json!({"orderID": alice_order}).to_string();
    assert_eq!(
        err(with(alice, s, "POST", "/builder/cancel", &cancel, &[])),
        (400, "OPENFISH_BUILDER_ID header required (header SERVICE_BUILDER_ID)".into())
    );
    assert_eq!(
        err(with(alice, s, "POST", "/builder/cancel", "{\"orderID\": \"x\"}", &id)),
        (400, "Invalid orderID".into())
    );
    let (_, c) = with(bob, s, "POST", "/builder/cancel", &cancel, &id);
    assert_eq!(c["canceled"], json!([]), "only the owner cancels");
    let (st, c) = with(alice, s, "POST", "/builder/cancel", &cancel, &id);
    assert_eq!((st, c["canceled"].clone()), (200, json!([alice_order])));
    assert_eq!(as_builder(s, creds, "/data/orders").1["count"], 0);
    s.settle();
    assert_eq!(as_builder(s, creds, "/builder/volume").1["volume"], "6", "confirmed trades still count");
}

#[test]
fn the_relay_executes_ledger_operations_with_relayer_keys_or_l2() {
    let s = Server::start();
    let (t, other) = (s.trader(m("100")), s.trader(m("10")));
    let rpath = "/relayer/api-key";
    let (st, rk) = t.l2(&s, "POST", rpath, None);
    assert_eq!(st, 200, "{rk}");
    let relayer =
        [("RELAYER_API_KEY", rk["apiKey"].as_str().unwrap()), ("RELAYER_API_KEY_ADDRESS", t.address.as_str())];
    assert_eq!(t.l2(&s, "GET", rpath, None).1["apiKeys"].as_array().unwrap().len(), 1);

    let post = |headers: &[(&str, &str)], body: &Value| {
        let mut r = ureq::post(&format!("{}/submit", s.clob));
        for (k, v) in headers {
            r = r.set(k, v);
        }
        send(r, Some(body.to_string()))
    };
    let split = json!({"operation": "split", "conditionId": COND, "amount": "6000000"});

    // Relayer mode.
    let (st, tx) = post(&relayer, &split);
    assert_eq!(st, 200, "{tx}");
    assert_eq!(
        (tx["state"].as_str(), tx["operation"].as_str(), tx["from"].as_str()),
        (Some("STATE_CONFIRMED"), Some("split"), Some(t.address.as_str()))
    );
    assert!(tx["transactionHash"].as_str().unwrap().starts_with("0x") && tx["transactionID"].is_string());
    assert_eq!((t.balance(&s, "USDC"), t.balance(&s, YES), t.balance(&s, NO)), (m("94"), m("6"), m("6")));
    let merge = json!({"operation": "merge", "conditionId": COND, "amount": "1000000"});
    assert_eq!(post(&relayer, &merge).0, 200);
    assert_eq!(t.balance(&s, "USDC"), m("95"));

    // Relayer refusals, checked before anything else, and changing nothing.
    let wrong_addr = [relayer[0], ("RELAYER_API_KEY_ADDRESS", other.address.as_str())];
    let unknown = [("RELAYER_API_KEY", "6d2f1c3a-0000-4000-8000-000000000000"), relayer[1]];
    for h in [&wrong_addr[..], &unknown[..], &[relayer[0]][..], &[("RELAYER_API_KEY", "nope"), relayer[1]][..]] {
        let (st, _) = post(h, &split);
        assert_eq!(st, 401, "{h:?}");
    }
    assert_eq!(err(post(&wrong_addr, &split)), (401, "invalid relayer api key".into()));
    // The credentials are checked before the body (SPEC §5.6): bad ones are 401 whatever it is.
    for body in [json!({}), json!({"operation": "mint"}), json!([1])] {
        assert_eq!(err(post(&unknown, &body)), (401, "invalid relayer api key".into()), "{body}");
        assert_eq!(err(post(&[], &body)), (401, "L2 authentication failure".into()), "{body}");
    }
    assert_eq!(err(post(&[], &split)), (401, "L2 authentication failure".into()));
    let (st, e) =
        post(&relayer, &json!({"operation": "split", "conditionId": COND, "amount": "1", "address": other.address}));
    assert_eq!((st, e["error"].as_str()), (400, Some("the address has to be the owner of the API KEY")));
    assert_eq!(err(post(&relayer, &json!({"operation": "mint"}))), (400, "unsupported operation: mint".into()));
    assert_eq!(err(post(&relayer, &json!({"conditionId": COND}))).0, 400);
    assert_eq!(
        err(post(&relayer, &json!({"operation": "split", "conditionId": COND, "amount": "999000000"}))),
        (400, "not enough balance / allowance".into())
    );
    assert_eq!(t.balance(&s, "USDC"), m("95"));

    // L2 mode: cancelOrder and incrementNonce.
    let l2 = |body: &Value| t.l2(&s, "POST", "/submit", Some(body));
    let a = t.place(&s, YES, "SELL", "0.60", "5")["orderID"].as_str().unwrap().to_string();
    let b = t.place(&s, YES, "BUY", "0.40", "5")["orderID"].as_str().unwrap().to_string();
    assert_eq!(err(l2(&json!({"operation": "cancelOrder", "orderID": "x"}))), (400, "Invalid orderID".into()));
    let (st, e) = other.l2(&s, "POST", "/submit", Some(&json!({"operation": "cancelOrder", "orderID": a})));
    assert_eq!((st, e["error"].as_str()), (404, Some("order not found or not open")), "another wallet's order");
    let (st, tx) = l2(&json!({"operation": "cancelOrder", "orderID": a}));
    assert_eq!((st, tx["result"]["canceled"].clone()), (200, json!([a])), "{tx}");
    assert_eq!(t.l2(&s, "GET", &format!("/data/order/{a}"), None).1["status"], "CANCELED");
    let (st, tx) = post(&relayer, &json!({"operation": "incrementNonce"}));
    assert_eq!(
        (st, tx["result"]["nonce"].as_str(), tx["result"]["canceled"].clone()),
        (200, Some("1"), json!([b])),
        "{tx}"
    );
    assert_eq!(t.l2(&s, "GET", "/data/orders", None).1["count"], 0);
    assert_eq!(t.available(&s, "USDC"), m("95"), "cancelled orders release their reservations");
    // Redeem through the relay once resolved.
    let (st, _) =
        s.internal_post("/internal/resolution", &json!({"condition_id": COND, "status": "RESOLVED", "outcome": "Yes"}));
    assert_eq!(st, 200);
    let (st, tx) = l2(&json!({"operation": "redeem", "conditionId": COND}));
    assert_eq!((st, tx["result"]["usdcSize"].as_str()), (200, Some("5000000")), "{tx}");
    assert_eq!(t.balance(&s, "USDC"), m("100"));

    // Deleting the relayer key ends relayer access.
    let del = format!("{rpath}?apiKey={}", rk["apiKey"].as_str().unwrap());
    assert_eq!(err(other.l2(&s, "DELETE", &del, None)), (404, "relayer API key not found".into()));
    assert_eq!(t.l2(&s, "DELETE", &del, None), (200, json!({})));
    assert_eq!(err(post(&relayer, &merge)), (401, "invalid relayer api key".into()));
    s.check();
}

/// On a version 2 venue an order names its builder by code (keccak256 of the builder ID)
/// and is attributed as builder headers attribute it; a code no builder has attributes
/// nothing and is not refused. `GET /fees/builder-fees/{code}` knows the codes (predex's
/// builders charge no fee).
#[test]
fn a_version_2_orders_builder_code_attributes_it() {
    let s = Server::start_tuned(|c| c.order_version = 2);
    let builder = s.trader(0);
    let (alice, bob) = (s.trader(m("100")), s.trader(0));
    s.credit(&bob.address, YES, m("50"));
    let (_, creds) = builder.l2(&s, "POST", "/auth/builder-api-key", Some(&json!({"builderId": "acme"})));
    let code = alloy_primitives::keccak256(b"acme");
    let stranger = alloy_primitives::keccak256(b"nobody");

    let fees = |c: &str| s.get(&format!("/fees/builder-fees/{c}"));
    assert_eq!(
        fees(&format!("{code}")),
        (200, json!({"builder_maker_fee_rate_bps": 0, "builder_taker_fee_rate_bps": 0}))
    );
    assert_eq!(err(fees(&format!("{stranger}"))), (404, "builder code not found".into()));
    assert_eq!(err(fees("0x12")), (400, "invalid builder code".into()));

    let ask = bob.signed(YES, "SELL", m("10"), m("5")).sign_v2(&s, stranger);
    let (st, rested) = bob.submit(&s, ask, "GTC");
    assert_eq!((st, &rested["status"]), (200, &json!("live")), "an unknown code is no refusal: {rested}");
    let bid = alice.signed(YES, "BUY", m("5"), m("10")).sign_v2(&s, code);
    let (st, took) = alice.submit(&s, bid, "GTC");
    assert_eq!((st, &took["status"]), (200, &json!("matched")), "{took}");
    let (_, trades) = as_builder(&s, &creds, "/builder/trades");
    assert_eq!((&trades["count"], &trades["data"][0]["tradeType"]), (&json!(1), &json!("TAKER")), "{trades}");
    // Only alice's order is acme's: the volume is its side of the trade, 10 at 0.50.
    let (_, v) = as_builder(&s, &creds, "/builder/volume");
    assert_eq!((&v["orders"], &v["volume"]), (&json!(1), &json!("5")), "{v}");

    // A builder ID claimed before builder codes existed is found by its code after the
    // store's upgrade (unit-tested in store::upgrade); a restart keeps the index.
    let (c, dir) = s.stop();
    let s = Server::start_with(c);
    assert_eq!(s.get(&format!("/fees/builder-fees/{code}")).0, 200);
    drop(s);
    drop(dir);
}
