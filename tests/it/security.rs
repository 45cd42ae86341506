//! Attacks, each performed as a stranger would against a real server, and what must still
//! be true after it: nothing of the victim's moved, nothing of the attacker's request
//! stored.

use alloy_primitives::{Address, U256};
use serde_json::{json, Value};

use crate::support::*;

const POLY_USDC: &str = "0x2791bca1f2de4661ed88a30c99a7a9449aa84174";

/// A key holder names another user's address as the maker of a proxy or
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
        let o = attacker.signed(YES, "BUY", m("5"), m("10")).maker(victim_addr, t).sign(&s);
        assert_eq!(err(attacker.submit(&s, o, "GTC")), (400, "invalid signature".into()), "type {t}");
    }
    // An address that is neither of the attacker's derived wallets, and an unknown type.
    let other: Address = "0x00000000000000000000000000000000000000aa".parse().unwrap();
    let o = attacker.signed(YES, "BUY", m("5"), m("10")).maker(other, 2).sign(&s);
    assert_eq!(err(attacker.submit(&s, o, "GTC")), (400, "invalid signature".into()));
    // The attacker's proxy named as its Safe (the right wallet, the wrong type).
    let o = attacker.signed(YES, "BUY", m("5"), m("10")).maker(attacker.derived(&s, 1), 2).sign(&s);
    assert_eq!(err(attacker.submit(&s, o, "GTC")), (400, "invalid signature".into()));
    // Type 3 (deposit wallets) is refused by name; a type past it is not a type.
    let o = attacker.signed(YES, "BUY", m("5"), m("10")).maker(victim_addr, 3).sign(&s);
    let (status, message) = err(attacker.submit(&s, o, "GTC"));
    assert!(
        status == 400 && message.starts_with("signature type 3 (POLY_1271, deposit wallets) is not supported"),
        "{message}"
    );
    let o = attacker.signed(YES, "BUY", m("5"), m("10")).maker(victim_addr, 4).sign(&s);
    assert_eq!(err(attacker.submit(&s, o, "GTC")), (400, "Invalid order payload".into()));
    // An EOA order naming the victim.
    let o = attacker.signed(YES, "BUY", m("5"), m("10")).maker(victim_addr, 0).sign(&s);
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
    let o = t.signed(YES, "BUY", m("5"), m("10")).maker(safe, 2).sign(&s);
    let (st, r) = t.submit(&s, o, "GTC");
    assert_eq!((st, r["success"].clone()), (200, json!(true)), "{r}");
    let ba = |q: &str| t.l2(&s, "GET", &format!("/balance-allowance?signature_type={q}"), None).1["balance"].clone();
    assert_eq!((ba("2"), ba("1"), ba("0")), (json!("45000000"), json!("0"), json!("10000000")));
    // The proxy without funds: refused for balance, not for who it is.
    let o = t.signed(YES, "BUY", m("5"), m("10")).maker(proxy, 1).sign(&s);
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

/// A salt is a uint256, kept whole. Orders salted up to 2²⁵⁶−1 are
/// accepted, match and settle (chain mode: `chain::matches_settle_on_chain_through_the_exchange`);
/// two orders differing only above the 64th bit of their salt are two orders; a salt past
/// 2²⁵⁶−1 is refused.
#[test]
fn salts_are_whole_uint256() {
    let s = Server::start();
    let (seller, buyer) = (s.trader(0), s.trader(m("100")));
    s.credit(&seller.address, YES, m("100"));
    let two64 = U256::from(u64::MAX) + U256::from(1);
    let sell = |salt: U256| seller.signed(YES, "SELL", m("10"), m("5")).salt(salt).sign(&s);
    let (st, a) = seller.submit(&s, sell(two64), "GTC");
    assert_eq!((st, &a["success"]), (200, &json!(true)), "{a}");
    // The same order but for a bit above the 64th of its salt: another order, not a duplicate.
    let (st, b) = seller.submit(&s, sell(two64 + two64), "GTC");
    assert_eq!((st, &b["success"]), (200, &json!(true)), "{b}");
    assert_ne!(a["orderID"], b["orderID"]);
    let buy = buyer.signed(YES, "BUY", m("10"), m("20")).salt(U256::MAX).sign(&s);
    let (st, t) = buyer.submit(&s, buy, "GTC");
    assert_eq!((st, &t["status"]), (200, &json!("MATCHED")), "{t}");
    assert_eq!(s.settle(), (2, 0));
    assert_eq!(buyer.balance(&s, YES), m("20"));

    let mut past = sell(U256::from(7));
    past["salt"] = json!("115792089237316195423570985008687907853269984665640564039457584007913129639936");
    assert_eq!(err(seller.submit(&s, past, "GTC")), (400, "Invalid order payload".into()));
    s.check();
}

/// The operator's server answers the operator only. A page that rebinds
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

/// An agent cannot resolve a market before its end date, however much it
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

/// A body in which `"` was sent as `'` (hiding a field inside a
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

/// A captured state-changing request sent again within the drift window
/// is refused and done once — an RFQ request, and a `cancel-all` replayed to cancel orders
/// placed since (also with another query, which the signature does not cover).
#[test]
fn a_captured_request_is_served_once() {
    let s = Server::start();
    let t = s.trader(m("100"));
    let raw = |method: &str, path: &str, body: &str, headers: &[(&'static str, String)]| {
        let mut r = ureq::request(method, &format!("{}{path}", s.clob));
        for (k, v) in headers {
            r = r.set(k, v);
        }
        send(r, if body.is_empty() { None } else { Some(body.to_string()) })
    };
    let body = json!({"tokenId": YES, "side": "BUY", "size": "10", "ttl": 100}).to_string();
    let headers = t.l2_headers("POST", "/rfq/request", &body);
    assert_eq!(raw("POST", "/rfq/request", &body, &headers).0, 200);
    for _ in 0..2 {
        assert_eq!(err(raw("POST", "/rfq/request", &body, &headers)), (409, "duplicate request".into()));
    }
    let (_, mine) = t.l2(&s, "GET", "/rfq/requests", None);
    assert_eq!(mine["data"].as_array().unwrap().len(), 1, "one request made: {mine}");

    let cancel = t.l2_headers("DELETE", "/cancel-all", "");
    assert_eq!(raw("DELETE", "/cancel-all", "", &cancel).0, 200);
    let order = t.place(&s, YES, "BUY", "0.40", "10");
    let id = order["orderID"].as_str().unwrap().to_string();
    assert_eq!(err(raw("DELETE", "/cancel-all", "", &cancel)), (409, "duplicate request".into()));
    assert_eq!(err(raw("DELETE", "/cancel-all?x=1", "", &cancel)), (409, "duplicate request".into()));
    let (_, o) = t.l2(&s, "GET", &format!("/data/order/{id}"), None);
    assert_eq!(o["status"], "LIVE", "the order placed since stands: {o}");
    // Reads may repeat.
    let read = t.l2_headers("GET", "/rfq/requests", "");
    for _ in 0..2 {
        assert_eq!(raw("GET", "/rfq/requests", "", &read).0, 200);
    }
}

/// What a stranger can make the server store is bounded — a
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

/// A connection from `ip` (another loopback address: a stranger beside the tests' own
/// 127.0.0.1, which is a trusted proxy and so not counted per IP) to a server's URL.
fn connect_from(ip: [u8; 4], base: &str) -> std::io::Result<std::net::TcpStream> {
    use socket2::{Domain, SockAddr, Socket, Type};
    let to: std::net::SocketAddr = base.trim_start_matches("http://").parse().unwrap();
    let sock = Socket::new(Domain::IPV4, Type::STREAM, None)?;
    sock.bind(&SockAddr::from(std::net::SocketAddr::from((ip, 0))))?;
    sock.connect(&SockAddr::from(to))?;
    Ok(sock.into())
}

/// Whether the server closed `c` (or answered on it) within `secs`: what a read finds.
fn read_within(c: &mut std::net::TcpStream, secs: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    c.set_read_timeout(Some(std::time::Duration::from_secs(secs))).unwrap();
    let mut got = vec![0u8; 4096];
    let n = c.read(&mut got)?;
    got.truncate(n);
    Ok(got)
}

const TOO_MANY_CONNECTIONS: &str = "too many connections from this address";

/// A stranger holds 70 connections to each public server, each declaring
/// a 1 MiB body it never sends. The order-book server and the operator's server still
/// answer at once: each server has its own budget, an address holds a quarter of one at
/// most, and its connections past the cap are refused.
#[test]
fn idle_connections_cannot_stall_the_others() {
    use std::io::Write;
    let s = Server::start();
    let t = s.trader(1_000_000_000);
    let order = t.order(&s, YES, "BUY", "0.50", "10");
    let mut held = Vec::new();
    for (base, path) in
        [(&s.clob, "/order"), (&s.catalogue, "/markets"), (&s.analytics, "/trades"), (&s.bridge, "/deposit")]
    {
        let (mut refused, mut busy) = (0, 0);
        for _ in 0..70 {
            let mut c = connect_from([127, 0, 0, 2], base).unwrap();
            let head = format!(
                "POST {path} HTTP/1.1\r\nHost: predex\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                1 << 20
            );
            // A refused connection may be closed before the head is written.
            let _ = c.write_all(head.as_bytes());
            held.push(c);
        }
        // What each connection got at once: the cap's 429, the address's share spent
        // (503), or nothing (its body is awaited).
        std::thread::sleep(std::time::Duration::from_millis(500));
        for c in held.iter_mut().rev().take(70) {
            c.set_read_timeout(Some(std::time::Duration::from_millis(50))).unwrap();
            match read_reply(c).map(err) {
                Some((429, m)) if m == TOO_MANY_CONNECTIONS => refused += 1,
                Some((503, _)) => busy += 1,
                None => {}
                other => panic!("{base}: {other:?}"),
            }
        }
        // 16 MiB of a 64 MiB budget each address: 16 bodies held, the rest refused (503,
        // or 429 while the address holds its 64 connections: a 503's connection closes).
        assert_eq!(refused + busy, 54, "{base}");
    }
    let started = std::time::Instant::now();
    let placed = t.submit(&s, order, "GTC");
    assert_eq!((placed.0, placed.1["success"].clone()), (200, json!(true)), "{placed:?}");
    let mode = s.internal_post("/internal/mode", &json!({"mode": "normal"}));
    assert_eq!(mode.0, 200, "{mode:?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(1), "{:?}", started.elapsed());
    // Another address has the whole of its own share and connections.
    let mut other = connect_from([127, 0, 0, 3], &s.bridge).unwrap();
    other.write_all(b"GET /openapi.json HTTP/1.1\r\nHost: predex\r\n\r\n").unwrap();
    assert_eq!(read_reply(&mut other).map(|r| r.0), Some(200));
    drop(held);
}

/// A head left unfinished, and a keep-alive connection left idle, are
/// closed once the head deadline (10 s) passes.
#[test]
fn a_slow_head_and_an_idle_connection_are_closed() {
    use std::io::Write;
    let s = Server::start();
    let mut half = connect_from([127, 0, 0, 4], &s.clob).unwrap();
    half.write_all(b"POST /order HTTP/1.1\r\nHost: predex\r\nContent-Ty").unwrap();
    let mut idle = connect_from([127, 0, 0, 4], &s.catalogue).unwrap();
    idle.write_all(b"GET /markets HTTP/1.1\r\nHost: predex\r\n\r\n").unwrap();
    assert_eq!(read_reply(&mut idle).map(|r| r.0), Some(200));
    let started = std::time::Instant::now();
    // Nothing comes before the deadline; then the server closes (end of stream, or a
    // reset), with no answer served to either.
    for c in [&mut half, &mut idle] {
        let got = read_within(c, 12).unwrap_or_default();
        assert!(got.is_empty(), "{}", String::from_utf8_lossy(&got));
    }
    let waited = started.elapsed();
    assert!(waited > std::time::Duration::from_secs(9) && waited < std::time::Duration::from_secs(12), "{waited:?}");
    assert!(
        half.write_all(b"pe: application/json\r\n\r\n").and_then(|_| half.flush()).is_err()
            || read_within(&mut half, 2).unwrap_or_default().is_empty()
    );
}

/// One address holds at most `max-connections-per-ip` connections to a
/// public server, WebSocket connections included, and gets one back when one closes.
#[test]
fn connections_per_address_are_capped_websockets_included() {
    use std::io::Write;
    use tokio_tungstenite::tungstenite;
    let s = Server::start_tuned(|c| c.max_connections_per_ip = 2);
    let ws = |ip| {
        let c = connect_from(ip, &s.clob).unwrap();
        let url = format!("ws://{}/ws/market", s.clob.trim_start_matches("http://"));
        tungstenite::client::client(url, c).map(|(ws, _)| ws).ok()
    };
    let mut first = ws([127, 0, 0, 5]).expect("a first WebSocket");
    let _second = ws([127, 0, 0, 5]).expect("a second WebSocket");
    // The third is answered 429 at once and closed, whatever it asks.
    let mut third = connect_from([127, 0, 0, 5], &s.clob).unwrap();
    let _ = third.write_all(b"GET /ok HTTP/1.1\r\nHost: predex\r\n\r\n");
    third.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
    assert_eq!(read_reply(&mut third).map(err), Some((429, TOO_MANY_CONNECTIONS.into())));
    // Another address is not affected; nor are other servers.
    assert!(ws([127, 0, 0, 6]).is_some());
    let mut gamma = connect_from([127, 0, 0, 5], &s.catalogue).unwrap();
    gamma.write_all(b"GET /markets HTTP/1.1\r\nHost: predex\r\n\r\n").unwrap();
    assert_eq!(read_reply(&mut gamma).map(|r| r.0), Some(200));
    // A WebSocket closed gives its place back.
    first.close(None).unwrap();
    while first.read().is_ok() {}
    drop(first);
    wait_for(5, || ws([127, 0, 0, 5]));
}

/// The rate limit is counted before a body is read, and a
/// stranger's unauthenticated writes count in it (bridge deposit registrations).
#[test]
fn the_rate_limit_comes_before_the_body_and_counts_strangers_writes() {
    let s = Server::start_tuned(|c| {
        c.rate_limit_max = 3;
        // The bridge's asset table is found beside the catalogue.
        c.catalogue = concat!(env!("CARGO_MANIFEST_DIR"), "/data/markets.json").into();
    });
    let addr = "0x00000000000000000000000000000000000000aa";
    for _ in 0..3 {
        assert_eq!(s.bridge_post("/deposit", &json!({ "address": addr })).0, 201);
    }
    assert_eq!(err(s.bridge_post("/deposit", &json!({ "address": addr }))), (429, "rate limit exceeded".into()));
    // Reads of the bridge are not counted; the order-book server's requests share the
    // counter, and a refused one's body is never read: one declaring 1 MiB is answered at
    // once.
    assert_eq!(s.bridge_get("/supported-assets").0, 200);
    let head = format!("POST /waitlist HTTP/1.1\r\nHost: predex\r\nContent-Length: {}\r\n\r\n", 1 << 20);
    assert_eq!(err(raw_request(&s.clob, head.as_bytes())), (429, "rate limit exceeded".into()));
    assert_eq!(s.get("/ok").0, 200, "the health probe is not counted");
}

/// What one address can make the server store is bounded: its keys of
/// each kind, its open RFQ requests, and how deep an analytics page may reach.
#[test]
fn what_one_address_can_store_is_bounded() {
    let s = Server::start();
    let t = s.trader(0);
    // L2 keys: 20 per address (the first made by `trader`), then a clear 400, and
    // nothing stored; deleting one makes room.
    for nonce in 1..20 {
        assert_eq!(t.l1(&s, "POST", "/auth/api-key", nonce, None).0, 200, "nonce {nonce}");
    }
    let over = (400, "too many API keys for this address: at most 20; delete one first".to_string());
    assert_eq!(err(t.l1(&s, "POST", "/auth/api-key", 20, None)), over);
    assert_eq!(t.l2(&s, "GET", "/auth/api-keys", None).1["apiKeys"].as_array().unwrap().len(), 20);
    assert_eq!(err(t.l1(&s, "GET", "/auth/derive-api-key", 20, None)).0, 404, "the refused key was not made");
    // Builder, relayer and read-only keys: 20 of each.
    for (path, body, kind) in [
        ("/auth/builder-api-key", Some(json!({"builderId": "acme"})), "builder"),
        ("/relayer/api-key", None, "relayer"),
        ("/auth/readonly-api-key", None, "read-only"),
    ] {
        for _ in 0..20 {
            // The same request 20 times: each signed a second later than the last.
            let r = t.l2(&s, "POST", path, body.as_ref());
            assert_eq!(r.0, 200, "{path}: {r:?}");
        }
        let refused = err(t.l2(&s, "POST", path, body.as_ref()));
        assert_eq!(refused, (400, format!("too many {kind} keys for this address: at most 20; delete one first")));
    }
    // Open RFQ requests: 100 per address, whichever key asks.
    let ask = |i: u32| json!({"tokenId": YES, "side": "BUY", "size": (10 + i).to_string(), "ttl": 3600});
    for i in 0..100 {
        let r = t.l2(&s, "POST", "/rfq/request", Some(&ask(i)));
        assert_eq!(r.0, 200, "request {i}: {r:?}");
    }
    let refused = err(t.l2(&s, "POST", "/rfq/request", Some(&ask(100))));
    assert_eq!(refused, (400, "too many open RFQ requests for this address: at most 100".into()));
    assert_eq!(s.trader(0).l2(&s, "POST", "/rfq/request", Some(&ask(0))).0, 200, "another address is not affected");
    // An analytics page skips at most 10,000 rows.
    for path in ["/trades", "/v1/leaderboard", &format!("/activity?user={}", t.address)] {
        let sep = if path.contains('?') { '&' } else { '?' };
        let r = err(s.analytics_get(&format!("{path}{sep}offset=10001")));
        assert_eq!(r, (400, "offset must be an integer between 0 and 10000".into()), "{path}");
    }
}

/// Trades against a key's orders each leave it a notification: what it is listed is its
/// newest thousand, newest first (older ones, and any past two days, are not read on a
/// request), and a delete drops them all, the unlisted too.
#[test]
fn a_keys_notifications_are_bounded() {
    const LISTED: usize = 1_000;
    let s = Server::start();
    let maker = s.trader(0);
    s.credit(&maker.address, YES, m("1100"));
    let taker = s.trader(m("600"));
    maker.place(&s, YES, "SELL", "0.50", "1100");
    let trades = LISTED + 5;
    let mut ids = Vec::new();
    while ids.len() < trades {
        let batch: Vec<Value> = (0..15.min(trades - ids.len()))
            .map(|_| json!({"order": taker.order(&s, YES, "BUY", "0.50", "1"), "owner": taker.key, "orderType": "FAK"}))
            .collect();
        let (st, r) = taker.l2(&s, "POST", "/orders", Some(&json!(batch)));
        assert_eq!(st, 200, "{r}");
        for o in r.as_array().unwrap() {
            assert_eq!(o["success"], true, "{o}");
            ids.push(o["tradeIds"][0].as_str().unwrap().to_string());
        }
    }
    assert_eq!(s.settle(), (trades as u64, 0));
    for t in [&taker, &maker] {
        let n = t.l2(&s, "GET", "/notifications", None).1;
        let n = n.as_array().unwrap();
        assert_eq!(n.len(), LISTED);
        assert_eq!(n[0]["payload"]["tradeId"], ids[trades - 1].as_str(), "newest first");
        assert_eq!(n[LISTED - 1]["payload"]["tradeId"], ids[trades - LISTED].as_str());
        assert!(n.windows(2).all(|w| w[0]["id"].as_u64() > w[1]["id"].as_u64()));
    }
    assert_eq!(taker.l2(&s, "DELETE", "/notifications", None), (200, json!({})));
    assert_eq!(taker.l2(&s, "GET", "/notifications", None).1, json!([]), "the five unlisted went too");
    assert_eq!(maker.l2(&s, "GET", "/notifications", None).1.as_array().unwrap().len(), LISTED);
}
