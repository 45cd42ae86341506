//! API keys, invitation codes, L1 and L2 authentication (SPEC §4.1, §5.1–5.4, §7.1–7.2).

use serde_json::json;

use crate::support::*;

const BAD_ADDR: &str = "invalid OPENFISH_ADDRESS style message: invalid address header";

#[test]
fn waitlist_invite_create_derive_and_list() {
    let s = Server::start();
    let (st, b) = s.post("/waitlist", &json!({"email": "ann@example.com"}));
    assert_eq!(st, 200, "{b}");
    assert_eq!(s.post("/waitlist", &json!({"email": "nope"})).0, 400);
    assert_eq!(s.post("/waitlist", &json!({"mail": "x"})).0, 400);

    let code = s.invite("ann@example.com");
    assert_eq!(code.len(), 9);
    assert_eq!(&code[4..5], "-");

    let mut t = Trader::new();
    // First key without a code, or with a bad one: 400.
    let (st, b) = t.l1(&s, "POST", "/auth/api-key", 0, None);
    assert_eq!((st, b["error"].as_str().unwrap()), (400, BAD_ADDR));
    let (st, _) = t.l1(&s, "POST", "/auth/api-key", 0, Some("ZZZZ-ZZZZ"));
    assert_eq!(st, 400);
    let (st, b) = t.l1(&s, "POST", "/auth/api-key", 0, Some(&code));
    assert_eq!(st, 200, "{b}");
    assert!(b["apiKey"].as_str().unwrap().parse::<uuid::Uuid>().is_ok());
    assert!(b["secret"].as_str().unwrap().ends_with('='), "base64url with padding");
    t.set_creds(&b);

    // Same address and nonce again: 409.
    let (st, b) = t.l1(&s, "POST", "/auth/api-key", 0, None);
    assert_eq!((st, b["error"].as_str().unwrap()), (409, "API key already exists for this address and nonce"));
    // A code is single-use.
    let other = Trader::new();
    let (st, b) = other.l1(&s, "POST", "/auth/api-key", 0, Some(&code));
    assert_eq!((st, b["error"].as_str().unwrap()), (400, BAD_ADDR));

    // Derive returns the same credentials; an unknown nonce is 404.
    let (st, d) = t.l1(&s, "GET", "/auth/derive-api-key", 0, None);
    assert_eq!(st, 200);
    assert_eq!(d["apiKey"], t.key.as_str());
    assert_eq!(d["secret"], t.secret.as_str());
    assert_eq!(d["passphrase"], t.passphrase.as_str());
    let (st, b) = t.l1(&s, "GET", "/auth/derive-api-key", 7, None);
    assert_eq!((st, b["error"].as_str().unwrap()), (404, "no API key found for this address and nonce"));

    // Further keys (other nonces) need no code.
    let (st, k2) = t.l1(&s, "POST", "/auth/api-key", 1, None);
    assert_eq!(st, 200, "{k2}");
    let (st, list) = t.l2(&s, "GET", "/auth/api-keys", None);
    assert_eq!(st, 200);
    let keys = list["apiKeys"].as_array().unwrap();
    assert_eq!(keys.len(), 2);
    assert!(keys.iter().any(|k| k == t.key.as_str()));

    let (st, b) = t.l2(&s, "GET", "/auth/ban-status/closed-only", None);
    assert_eq!((st, b), (200, json!({"closed_only": false})));
    s.internal_post("/internal/addresses", &json!({"address": t.address, "status": "closed-only"}));
    assert_eq!(t.l2(&s, "GET", "/auth/ban-status/closed-only", None).1, json!({"closed_only": true}));

    // Delete the key: it stops working.
    let (st, b) = t.l2(&s, "DELETE", "/auth/api-key", None);
    assert_eq!((st, b), (200, json!({})));
    let (st, b) = t.l2(&s, "GET", "/auth/api-keys", None);
    assert_eq!((st, b["error"].as_str().unwrap()), (401, "Unauthorized/Invalid api key"));
}

#[test]
fn expired_invitation_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = test_config(dir.path());
    c.invite_ttl_secs = 0;
    let s = Server::start_with(c);
    let code = s.invite("late@example.com");
    let t = Trader::new();
    let (st, b) = t.l1(&s, "POST", "/auth/api-key", 0, Some(&code));
    assert_eq!((st, b["error"].as_str().unwrap()), (400, BAD_ADDR));
}

/// `invite-only = false` (an open testnet): the first key takes no code, as the official
/// clients' `create_or_derive_api_key` sends none; L1 still decides who gets keys.
#[test]
fn an_open_testnet_gives_the_first_key_without_a_code() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = test_config(dir.path());
    c.invite_only = false;
    let s = Server::start_with(c);
    let t = Trader::new();
    let (st, b) = t.l1(&s, "POST", "/auth/api-key", 0, None);
    assert_eq!(st, 200, "{b}");
    assert!(b["apiKey"].as_str().unwrap().parse::<uuid::Uuid>().is_ok());
    let (st, d) = t.l1(&s, "GET", "/auth/derive-api-key", 0, None);
    assert_eq!((st, &d["apiKey"]), (200, &b["apiKey"]));
    // A code sent anyway is not looked at, and a bad L1 signature still fails.
    let (st, _) = Trader::new().l1(&s, "POST", "/auth/api-key", 0, Some("ZZZZ-ZZZZ"));
    assert_eq!(st, 200);
    let h = t.l1_headers(80002, now(), 5);
    let mut r = ureq::post(&format!("{}/auth/api-key", s.clob));
    for (k, v) in h {
        r = r.set(k, &v);
    }
    let (st, b) = send(r, None);
    assert_eq!((st, b["error"].as_str().unwrap()), (401, "L1 verification failure"));
}

#[test]
fn l1_failures() {
    let s = Server::start();
    let t = Trader::new();
    let code = s.invite("l1@example.com");
    let post = |headers: Vec<(&str, String)>| {
        let mut r = ureq::post(&format!("{}/auth/api-key", s.clob)).set("SERVICE_INVITATION_CODE", &code);
        for (k, v) in headers {
            r = r.set(k, &v);
        }
        send(r, None)
    };
    // Malformed address header.
    let mut h = t.l1_headers(137, now(), 0);
    h[0].1 = "0x1234".into();
    let (st, b) = post(h);
    assert_eq!((st, b["error"].as_str().unwrap()), (400, BAD_ADDR));
    // Signature by another wallet.
    let mut h = t.l1_headers(137, now(), 0);
    h[1].1 = Trader::new().l1_headers(137, now(), 0)[1].1.clone();
    let (st, b) = post(h);
    assert_eq!((st, b["error"].as_str().unwrap()), (401, "L1 verification failure"));
    // Signed for another chain.
    let (st, b) = post(t.l1_headers(80002, now(), 0));
    assert_eq!((st, b["error"].as_str().unwrap()), (401, "L1 verification failure"));
    // Timestamp 31 s off.
    let (st, b) = post(t.l1_headers(137, now() - 31, 0));
    assert_eq!((st, b["error"].as_str().unwrap()), (401, "L1 verification failure"));
    // Garbage signature.
    let mut h = t.l1_headers(137, now(), 0);
    h[1].1 = "0xdeadbeef".into();
    let (st, b) = post(h);
    assert_eq!((st, b["error"].as_str().unwrap()), (401, "Invalid L1 Request headers"));
    // The code was not consumed by the failures.
    let (st, _) = post(t.l1_headers(137, now(), 0));
    assert_eq!(st, 200);
}

#[test]
fn l2_failures() {
    let s = Server::start();
    let mut t = s.trader(0);
    let fail = |r: (u16, serde_json::Value)| (r.0, r.1["error"].as_str().unwrap_or_default().to_string());
    let l2 = (401, "L2 authentication failure".to_string());

    // Within 30 s of drift passes; beyond fails.
    t.skew = 25;
    assert_eq!(t.l2(&s, "GET", "/auth/api-keys", None).0, 200);
    t.skew = -31;
    assert_eq!(fail(t.l2(&s, "GET", "/auth/api-keys", None)), l2);
    t.skew = 0;

    // Bad HMAC: signed over another path.
    let mut r = ureq::get(&format!("{}/auth/api-keys", s.clob));
    for (k, v) in t.l2_headers("GET", "/auth/other", "") {
        r = r.set(k, &v);
    }
    assert_eq!(fail(send(r, None)), l2);

    // Secret used as a raw string instead of decoded: rejected.
    let ts = now().to_string();
    let raw = {
        use base64::Engine;
        use hmac::Mac;
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(t.secret.as_bytes()).unwrap();
        mac.update(format!("{ts}GET/auth/api-keys").as_bytes());
        base64::engine::general_purpose::URL_SAFE.encode(mac.finalize().into_bytes())
    };
    let r = ureq::get(&format!("{}/auth/api-keys", s.clob))
        .set("SERVICE_ADDRESS", &t.address)
        .set("SERVICE_SIGNATURE", &raw)
        .set("SERVICE_TIMESTAMP", &ts)
        .set("SERVICE_API_KEY", &t.key)
        .set("SERVICE_PASSPHRASE", &t.passphrase);
    assert_eq!(fail(send(r, None)), l2);

    // Wrong passphrase, missing header, unknown key.
    let pass = t.passphrase.clone();
    t.passphrase = "wrong".into();
    assert_eq!(fail(t.l2(&s, "GET", "/auth/api-keys", None)), l2);
    t.passphrase = pass;
    let r = ureq::get(&format!("{}/auth/api-keys", s.clob)).set("SERVICE_ADDRESS", &t.address);
    assert_eq!(fail(send(r, None)), l2);
    let key = t.key.clone();
    t.key = uuid::Uuid::new_v4().to_string();
    assert_eq!(fail(t.l2(&s, "GET", "/auth/api-keys", None)), (401, "Unauthorized/Invalid api key".to_string()));
    t.key = key;

    // The official clients sign the path without its query string: accepted too.
    let ts = now().to_string();
    let sig = predex::auth::build_hmac_signature(&t.secret, &ts, "GET", "/data/orders", "");
    let r = ureq::get(&format!("{}/data/orders?market=0xc0ffee", s.clob))
        .set("POLY_ADDRESS", &t.address)
        .set("POLY_SIGNATURE", &sig)
        .set("POLY_TIMESTAMP", &ts)
        .set("POLY_API_KEY", &t.key)
        .set("POLY_PASSPHRASE", &t.passphrase);
    assert_eq!(send(r, None).0, 200);
}

#[test]
fn time_ok_and_json_404() {
    let s = Server::start();
    let (st, b) = s.get("/time");
    assert_eq!(st, 200);
    assert!((b.as_i64().unwrap() - now()).abs() < 5);
    let (st, b) = s.get("/ok");
    assert_eq!((st, b), (200, serde_json::Value::String("OK".into())));
    let (st, b) = s.get("/");
    assert_eq!((st, b), (200, serde_json::Value::String("OK".into())), "the clients' get_ok() asks /");
    let (st, b) = s.get("/no/such/path");
    assert_eq!(st, 404);
    assert!(b["error"].is_string());
    // The operator API is not on the public listener.
    let (st, _) = s.post("/internal/mode", &serde_json::json!({"mode": "trading-disabled"}));
    assert_eq!(st, 404);
    assert_eq!(s.post("/internal/ledger/credit", &serde_json::json!({})).0, 404);
}

/// Read-only keys (the clients' `create_readonly_api_key` …): an L2 key that reads what the
/// key that made it reads — orders, trades, balances, notifications, scoring — and is
/// refused with 401 by every route that trades or manages keys.
#[test]
fn readonly_keys_read_and_never_trade() {
    let s = Server::start();
    let t = s.trader(m("100"));
    let placed = t.place(&s, YES, "BUY", "0.40", "10");
    let id = placed["orderID"].as_str().unwrap().to_string();

    let (st, made) = t.l2(&s, "POST", "/auth/readonly-api-key", None);
    assert_eq!(st, 200, "{made}");
    let ro = Trader {
        wallet: t.wallet.clone(),
        address: t.address.clone(),
        key: made["apiKey"].as_str().unwrap().to_string(),
        secret: made["secret"].as_str().unwrap().to_string(),
        passphrase: made["passphrase"].as_str().unwrap().to_string(),
        skew: 0,
    };
    assert_ne!(ro.key, t.key);
    assert_eq!(t.l2(&s, "GET", "/auth/readonly-api-keys", None).1, json!([ro.key]));
    let valid = format!("/auth/validate-readonly-api-key?address={}&key={}", t.address, ro.key);
    assert_eq!(s.get(&valid), (200, json!("valid")));
    let other = Trader::new();
    let wrong = format!("/auth/validate-readonly-api-key?address={}&key={}", other.address, ro.key);
    assert_eq!(err(s.get(&wrong)), (401, "invalid readonly api key".into()));
    assert_eq!(err(s.get("/auth/validate-readonly-api-key?address=x")), (400, "address and key required".into()));

    // Reads: what the key that made it sees.
    for path in ["/data/orders", "/data/trades", "/notifications", "/balance-allowance", "/auth/ban-status/closed-only"]
    {
        let (st, got) = ro.l2(&s, "GET", path, None);
        assert_eq!(st, 200, "{path}: {got}");
        assert_eq!(got, t.l2(&s, "GET", path, None).1, "{path}");
    }
    assert_eq!(ro.l2(&s, "GET", &format!("/data/order/{id}"), None).1["id"], json!(id));
    assert_eq!(ro.l2(&s, "GET", &format!("/order-scoring?order_id={id}"), None), (200, json!({"scoring": false})));

    // Never a trade, a cancel, a heartbeat or a key.
    let unauthorized = (401, "Unauthorized/Invalid api key".to_string());
    let order = t.order(&s, YES, "BUY", "0.30", "10");
    let refused = [
        ("POST", "/order", Some(json!({"order": order, "owner": ro.key, "orderType": "GTC"}))),
        ("POST", "/orders", Some(json!([{"order": order, "owner": ro.key, "orderType": "GTC"}]))),
        ("DELETE", "/order", Some(json!({"orderID": id}))),
        ("DELETE", "/orders", Some(json!([id]))),
        ("DELETE", "/cancel-all", None),
        ("DELETE", "/cancel-market-orders", Some(json!({"market": COND}))),
        ("POST", "/v1/heartbeats", Some(json!({"heartbeat_id": null}))),
        ("POST", "/auth/readonly-api-key", None),
        ("GET", "/auth/readonly-api-keys", None),
        ("DELETE", "/auth/api-key", None),
        ("DELETE", "/notifications", None),
    ];
    for (method, path, body) in refused {
        assert_eq!(err(ro.l2(&s, method, path, body.as_ref())), unauthorized, "{method} {path}");
    }
    assert_eq!(t.l2(&s, "GET", "/data/orders", None).1["count"], json!(1), "the order is still there");

    // Deleting it: the reads stop.
    let bad = json!({"key": "nope"});
    assert_eq!(err(t.l2(&s, "DELETE", "/auth/readonly-api-key", Some(&bad))), (400, "invalid key".into()));
    let gone = json!({"key": other_uuid()});
    assert_eq!(
        err(t.l2(&s, "DELETE", "/auth/readonly-api-key", Some(&gone))),
        (404, "readonly API key not found".into())
    );
    let body = json!({"key": ro.key});
    assert_eq!(t.l2(&s, "DELETE", "/auth/readonly-api-key", Some(&body)), (200, json!(true)));
    assert_eq!(err(ro.l2(&s, "GET", "/data/orders", None)), unauthorized);
    assert_eq!(t.l2(&s, "GET", "/auth/readonly-api-keys", None).1, json!([]));
    assert_eq!(err(s.get(&valid)), (401, "invalid readonly api key".into()));
}

fn other_uuid() -> String {
    "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b".into()
}
