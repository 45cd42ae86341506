//! Attacks, each performed as a stranger would against a real server, and what must still
//! be true after it: nothing of the victim's moved, nothing of the attacker's request
//! stored.

use alloy_primitives::{Address, U256};
use serde_json::{json, Value};

use crate::fixture::*;

const POLY_USDC: &str = "0x2791bca1f2de4661ed88a30c99a7a9449aa84174";

/// Issue 93, item 1: a key holder names another user's address as the maker of a proxy or
/// Safe order, as the address of a withdrawal, a relayed `incrementNonce` or a CTF split,
/// and reads balances through signature types 1 and 2. Each is refused or answers for the
/// attacker's own derived wallets; the victim's balance and nonce do not change.
#[test]
fn a_stranger_cannot_act_for_another_users_wallet() {
    let s = Server::start_tuned(|c| c.catalogue = concat!(env!("CARGO_MANIFEST_DIR"), "/data/markets.json").into());
    let victim = s.trader(m("100"));
    let attacker = s.trader(0);
    let victim_addr: Address = victim.address.parse().unwrap();
    let usdc = |t: &Trader| t.available(&s, "USDC");

    // 1. Orders whose maker is the victim, signed by the attacker as proxy and as Safe.
    for t in [1u8, 2] {
        let o = attacker.order_full(&s, YES, "BUY", m("5"), m("10"), 0, 0, 0, false, Some((victim_addr, t)));
        assert_eq!(err(attacker.submit(&s, o, "GTC")), (400, "invalid signature".into()), "type {t}");
    }
    // An address that is neither of the attacker's derived wallets, and an unknown type.
    let other: Address = "0x00000000000000000000000000000000000000aa".parse().unwrap();
    let o = attacker.order_full(&s, YES, "BUY", m("5"), m("10"), 0, 0, 0, false, Some((other, 2)));
    assert_eq!(err(attacker.submit(&s, o, "GTC")), (400, "invalid signature".into()));
    // The attacker's proxy named as its Safe (the right wallet, the wrong type).
    let o = attacker.order_full(&s, YES, "BUY", m("5"), m("10"), 0, 0, 0, false, Some((attacker.derived(&s, 1), 2)));
    assert_eq!(err(attacker.submit(&s, o, "GTC")), (400, "invalid signature".into()));
    let o = attacker.order_full(&s, YES, "BUY", m("5"), m("10"), 0, 0, 0, false, Some((victim_addr, 3)));
    assert_eq!(err(attacker.submit(&s, o, "GTC")), (400, "Invalid order payload".into()));
    // An EOA order naming the victim.
    let o = attacker.order_full(&s, YES, "BUY", m("5"), m("10"), 0, 0, 0, false, Some((victim_addr, 0)));
    assert_eq!(err(attacker.submit(&s, o, "GTC")), (400, "the order owner has to be the owner of the API KEY".into()));
    assert_eq!(s.get(&format!("/book?token_id={YES}")).1["bids"], json!([]), "nothing rests");

    // 2. A withdrawal of the victim's collateral.
    let w = json!({"address": victim.address, "toChainId": "137", "toTokenAddress": POLY_USDC,
        "recipientAddr": attacker.address, "fromAmountBaseUnit": "90000000"});
    assert_eq!(
        err(attacker.l2_at(&s.bridge, "POST", "/withdraw", Some(&w))),
        (400, "the withdrawal address has to be the owner of the API KEY".into())
    );

    // 3. A relayed incrementNonce and a split for the victim.
    for op in [
        json!({"operation": "incrementNonce", "address": victim.address}),
        json!({"operation": "split", "conditionId": COND, "amount": "1000000", "address": victim.address}),
    ] {
        let (st, e) = attacker.l2(&s, "POST", "/submit", Some(&op));
        assert_eq!((st, e["error"].as_str()), (400, Some("the address has to be the owner of the API KEY")), "{op}");
    }
    let split = json!({"conditionId": COND, "amount": "1000000", "address": victim.address});
    assert_eq!(attacker.l2(&s, "POST", "/ctf/split", Some(&split)).0, 400);

    // 4. Balances through signature types 1 and 2 are the attacker's own derived wallets.
    for t in [1, 2] {
        let (st, b) = attacker.l2(&s, "GET", &format!("/balance-allowance?signature_type={t}"), None);
        assert_eq!((st, b), (200, json!({"balance": "0", "allowances": {}})), "type {t}");
    }

    // The victim's balance is whole, and its nonce 0 still places.
    assert_eq!(usdc(&victim), m("100"));
    victim.place(&s, YES, "BUY", "0.50", "10");
    assert_eq!(usdc(&victim), m("95"));
    s.check();
}

/// A proxy (type 1) or Safe (type 2) maker is the wallet derived from the signer as
/// Polymarket's exchange derives it; its funds are its own, apart from the signer's, and
/// every address-taking endpoint acts for it.
#[test]
fn a_signers_derived_proxy_and_safe_trade_with_their_own_funds() {
    let s = Server::start();
    let t = s.trader(m("10"));
    let seller = s.trader(0);
    let (proxy, safe) = (t.derived(&s, 1), t.derived(&s, 2));
    assert_ne!(proxy, safe);
    s.credit(&format!("{safe:#x}"), "USDC", m("50"));
    s.credit(&seller.address, YES, m("20"));
    let o = t.order_full(&s, YES, "BUY", m("5"), m("10"), 0, 0, 0, false, Some((safe, 2)));
    let (st, r) = t.submit(&s, o, "GTC");
    assert_eq!((st, r["success"].clone()), (200, json!(true)), "{r}");
    let ba = |q: &str| t.l2(&s, "GET", &format!("/balance-allowance?signature_type={q}"), None).1["balance"].clone();
    assert_eq!((ba("2"), ba("1"), ba("0")), (json!("45000000"), json!("0"), json!("10000000")));
    // The proxy without funds: refused for balance, not for who it is.
    let o = t.order_full(&s, YES, "BUY", m("5"), m("10"), 0, 0, 0, false, Some((proxy, 1)));
    assert_eq!(err(t.submit(&s, o, "GTC")), (400, "not enough balance / allowance".into()));
    // A fill: the Safe receives the tokens, and the trade names it.
    seller.place(&s, YES, "SELL", "0.50", "10");
    let (_, trades) = t.l2(&s, "GET", "/data/trades", None);
    assert_eq!(trades["count"], 1, "{trades}");
    assert!(trades["data"][0].to_string().contains(&format!("{safe:#x}")), "{trades}");
    s.settle();
    let safe_tokens: Value = s.internal_get(&format!("/internal/balances?address={safe:#x}")).1;
    assert_eq!(m(safe_tokens[YES]["balance"].as_str().unwrap()), m("10"), "{safe_tokens}");
    // A withdrawal and a relayed call for the Safe are the signer's to make.
    let (st, tx) =
        t.l2(&s, "POST", "/submit", Some(&json!({"operation": "incrementNonce", "address": format!("{safe:#x}")})));
    assert_eq!((st, tx["from"].clone()), (200, json!(format!("{safe:#x}"))), "{tx}");
    s.check();
}

/// Issue 93, item 5: a salt is a uint256, kept whole. Orders salted up to 2²⁵⁶−1 are
/// accepted, match and settle (chain mode: `chain::matches_settle_on_chain_through_the_exchange`);
/// two orders differing only above the 64th bit of their salt are two orders; a salt past
/// 2²⁵⁶−1 is refused.
#[test]
fn salts_are_whole_uint256() {
    let s = Server::start();
    let (seller, buyer) = (s.trader(0), s.trader(m("100")));
    s.credit(&seller.address, YES, m("100"));
    let two64 = U256::from(u64::MAX) + U256::from(1);
    let sell = |salt: U256| seller.order_salted(&s, YES, "SELL", (m("10"), m("5")), (0, 0, 0), false, None, salt);
    let (st, a) = seller.submit(&s, sell(two64), "GTC");
    assert_eq!((st, &a["success"]), (200, &json!(true)), "{a}");
    // The same order but for a bit above the 64th of its salt: another order, not a duplicate.
    let (st, b) = seller.submit(&s, sell(two64 + two64), "GTC");
    assert_eq!((st, &b["success"]), (200, &json!(true)), "{b}");
    assert_ne!(a["orderID"], b["orderID"]);
    let buy = buyer.order_salted(&s, YES, "BUY", (m("10"), m("20")), (0, 0, 0), false, None, U256::MAX);
    let (st, t) = buyer.submit(&s, buy, "GTC");
    assert_eq!((st, &t["status"]), (200, &json!("MATCHED")), "{t}");
    assert_eq!(s.settle(), (2, 0));
    assert_eq!(buyer.balance(&s, YES), m("20"));

    let mut past = sell(U256::from(7));
    past["salt"] = json!("115792089237316195423570985008687907853269984665640564039457584007913129639936");
    assert_eq!(err(seller.submit(&s, past, "GTC")), (400, "Invalid order payload".into()));
    s.check();
}

/// Issue 93, item 2: the operator's server answers the operator only. A page that rebinds
/// its own host name to 127.0.0.1 sends `Host` and `Origin` both its own: refused before
/// anything else, token or not. Every request without the token — reads included — is
/// 401. Nothing is credited, no mode changes.
#[test]
fn the_internal_server_answers_the_operator_only() {
    let s = Server::start();
    let t = s.trader(0);
    let addr = s.internal.trim_start_matches("http://").to_string();
    let port = addr.rsplit(':').next().unwrap().to_string();
    let token = s.internal_token();
    let request = |method: &str, path: &str, host: &str, extra: &str, body: &str| {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        raw_request(&s.internal, head.as_bytes())
    };
    let bearer = format!("Authorization: Bearer {token}\r\n");
    let credit = json!({"address": t.address, "asset": "USDC", "amount": "1000000000"}).to_string();

    // DNS rebinding: the attacker's name in Host (and Origin), with or without the token.
    let rebound = format!("rebind.example:{port}");
    for extra in
        [format!("Origin: http://{rebound}\r\n"), format!("Origin: http://{rebound}\r\n{bearer}"), bearer.clone()]
    {
        let r = request("POST", "/internal/ledger/credit", &rebound, &extra, &credit);
        assert_eq!(err(r), (403, "forbidden host".into()), "{extra}");
        assert_eq!(err(request("GET", "/internal/overview", &rebound, &extra, "")).0, 403);
        assert_eq!(err(request("GET", "/dashboard", &rebound, &extra, "")).0, 403, "the page too");
    }
    assert_eq!(err(request("GET", "/internal/mode", "localhost", &bearer, "")).0, 403, "no port");
    assert_eq!(err(request("GET", "/internal/mode", &format!("127.0.0.1:{port}.evil"), &bearer, "")).0, 403);

    // Without the token, or with another: 401, reads included.
    let host = format!("127.0.0.1:{port}");
    let wrong = format!("Authorization: Bearer {}\r\n", "0".repeat(64));
    for extra in ["", wrong.as_str(), "Authorization: Basic b3A6b3A=\r\n"] {
        for (method, path, body) in [
            ("GET", "/internal/overview", ""),
            ("GET", "/internal/mode", ""),
            ("GET", "/metrics", ""),
            ("GET", "/internal/balances?address=0x0000000000000000000000000000000000000001", ""),
            ("POST", "/internal/mode", r#"{"mode":"trading-disabled"}"#),
            ("POST", "/internal/ledger/credit", credit.as_str()),
            ("POST", "/internal/backup", r#"{"to":"/tmp/predex-stolen"}"#),
        ] {
            let r = request(method, path, &host, extra, body);
            assert_eq!(err(r), (401, "internal token required".into()), "{method} {path} {extra}");
        }
    }
    // The market feed: the token in the query, as the page sends it (a browser cannot set
    // the header on a WebSocket).
    let ws = "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n";
    assert_eq!(request("GET", "/ws/market", &host, ws, "").0, 401);
    assert_eq!(request("GET", "/ws/market?token=nope", &host, ws, "").0, 401);
    assert_eq!(request("GET", &format!("/ws/market?token={token}"), &host, ws, "").0, 101);
    // The dashboard's static files hold no data: served without it, to the server's names.
    for name in [host.clone(), format!("localhost:{port}")] {
        assert_eq!(request("GET", "/dashboard", &name, "", "").0, 200, "{name}");
    }
    assert!(!std::path::Path::new("/tmp/predex-stolen").exists());
    assert_eq!(t.balance(&s, "USDC"), 0, "nothing credited");
    assert_eq!(s.internal_get("/internal/mode").1["mode"], "normal");

    // The token file is the server's user's alone.
    use std::os::unix::fs::MetadataExt;
    let file = predex::keyfile::default_token_path(&s.config.data_dir);
    assert_eq!(std::fs::metadata(file).unwrap().mode() & 0o777, 0o600);
}

/// Issue 93, item 8: an agent cannot resolve a market before its end date, however much it
/// bonded; once the end date has passed it may.
#[test]
fn a_resolution_proposal_waits_for_the_markets_end() {
    let s = Server::start_tuned(|c| c.bond_clusters = vec![predex::config::BondCluster { id: 1, required: 10 }]);
    let agent = s.trader(m("100"));
    for (cond, yes, no, end) in [("0xfeed01", "2001", "2002", "2099-01-01"), ("0xfeed02", "2003", "2004", "2020-01-01")]
    {
        let (st, b) = s.internal_post(
            "/internal/markets",
            &json!({"condition_id": cond, "question": "Later?", "slug": cond, "end_date": end,
                "tokens": [{"token_id": yes, "outcome": "Yes"}, {"token_id": no, "outcome": "No"}],
                "tick_size": "0.01", "min_order_size": "5", "neg_risk": false}),
        );
        assert_eq!(st, 200, "{b}");
        let (st, b) = agent.l2(&s, "POST", "/bonds/post", Some(&json!({"conditionId": cond, "amount": "10000000"})));
        assert_eq!(st, 200, "{b}");
    }
    let propose =
        |cond: &str| agent.l2(&s, "POST", "/resolution/propose", Some(&json!({"conditionId": cond, "outcome": "Yes"})));
    assert_eq!(err(propose("0xfeed01")), (400, "the market has not ended: proposals open at its end date".into()));
    assert_eq!(s.get("/bonds/market/0xfeed01").1["resolution"], Value::Null, "no proposal recorded");
    let (st, b) = propose("0xfeed02");
    assert_eq!((st, &b["resolution"]["status"]), (200, &json!("RESOLVING")), "{b}");
}

/// Issue 93, item 7 (in part): a body in which `"` was sent as `'` (hiding a field inside a
/// string) does not verify; headers of both spellings in one request are refused.
#[test]
fn l2_requests_cannot_be_bent() {
    let s = Server::start();
    let t = s.trader(m("100"));
    let post = |body: &str, headers: &[(&'static str, String)]| {
        let mut r = ureq::post(&format!("{}/rfq/request", s.clob));
        for (k, v) in headers {
            r = r.set(k, v);
        }
        send(r, Some(body.to_string()))
    };
    // Signed with a TTL of 1 s; sent with the TTL hidden in the size's string.
    let signed = format!(r#"{{"tokenId": "{YES}", "side": "BUY", "size": "10", "ttl": "1"}}"#);
    let bent = format!(r#"{{"tokenId": "{YES}", "side": "BUY", "size": "10', 'ttl': '1"}}"#);
    assert_eq!(bent.replace('\'', "\""), signed);
    let headers = t.l2_headers("POST", "/rfq/request", &signed);
    assert_eq!(err(post(&bent, &headers)), (401, "L2 authentication failure".into()));

    // Mixed spellings: one POLY_ header among the SERVICE_ ones.
    let body = json!({"tokenId": YES, "side": "SELL", "size": "10", "ttl": 100}).to_string();
    let mut headers = t.l2_headers("POST", "/rfq/request", &body);
    headers[1].0 = "POLY_SIGNATURE";
    assert_eq!(err(post(&body, &headers)), (401, "L2 authentication failure".into()));
    let (_, mine) = t.l2(&s, "GET", "/rfq/requests", None);
    assert_eq!(mine["data"].as_array().unwrap().len(), 0, "nothing was made: {mine}");
    // The same requests, signed as they are sent, in one spelling: served.
    let (st, b) = t.l2(&s, "POST", "/rfq/request", Some(&serde_json::from_str::<Value>(&body).unwrap()));
    assert_eq!(st, 200, "{b}");
}

/// Issue 93, item 4 (in part): what a stranger can make the server store is bounded — a
/// 900 KiB "email" is refused and nothing is kept; one of 254 bytes is kept.
#[test]
fn the_waitlist_keeps_no_huge_email() {
    let s = Server::start();
    let huge = format!("{}@example.com", "a".repeat(900 << 10));
    assert_eq!(err(s.post("/waitlist", &json!({ "email": huge }))), (400, "invalid email".into()));
    let longest = format!("{}@example.com", "a".repeat(254 - "@example.com".len()));
    assert_eq!(s.post("/waitlist", &json!({ "email": longest })).0, 200);
    let over = format!("a{longest}");
    assert_eq!(err(s.post("/waitlist", &json!({ "email": over }))), (400, "invalid email".into()));
}
