//! Request bodies bounded however they are framed, the required fields of a
//! signed order, `GET /trades` on the order-book server, and JSON bodies on the HTTP-level
//! refusals.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;

const MAX_BODY: usize = predex::api::body::MAX_BODY;
const BUSY: &str = "server busy: too many request bodies in flight, retry shortly";

fn connect(base: &str) -> TcpStream {
    TcpStream::connect(base.trim_start_matches("http://")).unwrap()
}

/// One chunk of a chunked body.
fn chunk(data: &[u8]) -> Vec<u8> {
    let mut c = format!("{:x}\r\n", data.len()).into_bytes();
    c.extend_from_slice(data);
    c.extend_from_slice(b"\r\n");
    c
}

/// The last chunk.
const END: &[u8] = b"0\r\n\r\n";

/// A POST head with a chunked body and no length.
fn chunked_head(path: &str, extra: &[(&str, String)]) -> Vec<u8> {
    let mut h = format!("POST {path} HTTP/1.1\r\nHost: predex\r\nContent-Type: application/json\r\n");
    for (k, v) in extra {
        h.push_str(&format!("{k}: {v}\r\n"));
    }
    h.push_str("Transfer-Encoding: chunked\r\n\r\n");
    h.into_bytes()
}

/// Writes `head`, then `chunks` chunks of `chunk_len` spaces, from a thread of its own,
/// stopping at the first write the server refuses, while this thread reads the reply.
/// Returns the reply and how many bytes were written.
fn upload(base: &str, head: Vec<u8>, chunks: usize, chunk_len: usize) -> (Option<(u16, Value)>, usize) {
    let mut c = connect(base);
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut w = c.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        let block = chunk(&vec![b' '; chunk_len]);
        let mut sent = 0;
        if w.write_all(&head).is_err() {
            return sent;
        }
        sent += head.len();
        for _ in 0..chunks {
            if w.write_all(&block).is_err() {
                break;
            }
            sent += block.len();
        }
        sent
    });
    let reply = read_reply(&mut c);
    drop(c);
    (reply, writer.join().unwrap())
}

#[test]
fn a_chunked_body_over_the_limit_is_cut_off_on_every_server() {
    let s = Server::start();
    for (base, path) in [
        (&s.clob, "/waitlist"),
        (&s.catalogue, "/events"),
        (&s.analytics, "/trades"),
        (&s.bridge, "/quote"),
        (&s.internal, "/internal/rate-limit"),
    ] {
        // 100 MiB offered in 64 KiB chunks.
        let (reply, sent) = upload(base, chunked_head(path, &[]), 1600, 64 << 10);
        assert_eq!(reply.map(err), Some((413, "payload too large".into())), "{base}{path}");
        assert!(sent < 32 << 20, "{base}{path}: {sent} bytes taken before the server stopped reading");
    }
    // The same body with a declared length is refused before it is sent.
    let head = format!("POST /waitlist HTTP/1.1\r\nHost: predex\r\nContent-Length: {}\r\n\r\n", 100 << 20);
    assert_eq!(err(raw_request(&s.clob, head.as_bytes())), (413, "payload too large".into()));
    // Just under the limit, chunked: read whole and served (leading spaces are JSON).
    let mut body = vec![b' '; MAX_BODY - 64];
    body.extend_from_slice(br#"{"email":"chunked@example.com"}"#);
    let mut req = chunked_head("/waitlist", &[]);
    for part in body.chunks(100_000) {
        req.extend(chunk(part));
    }
    req.extend_from_slice(END);
    let (st, b) = raw_request(&s.clob, &req);
    assert_eq!((st, b["status"].as_str()), (200, Some("PENDING")), "{b}");
    let metrics = s.internal_get("/metrics").1;
    let text = metrics.as_str().unwrap();
    let line = r#"predex_http_requests_total{route="(before routing)",status="413"} 2"#;
    assert!(text.contains(line), "{line} in {text}");
}

#[test]
fn concurrent_bodies_are_held_within_the_budget() {
    // A budget of eight undeclared bodies (8 MiB): of twelve at once, four are refused.
    let s = Server::start_tuned(|c| c.body_bytes_in_flight = 8 * MAX_BODY);
    let mut open: Vec<TcpStream> = (0..12)
        .map(|_| {
            let mut c = connect(&s.clob);
            c.write_all(&chunked_head("/waitlist", &[])).unwrap();
            c
        })
        .collect();
    // A refusal comes on the head; a held body gets no reply until it ends. Wait until no
    // refusal has come for two seconds.
    let mut refused = 0;
    let mut last = std::time::Instant::now();
    while last.elapsed() < Duration::from_secs(2) {
        let mut i = 0;
        while i < open.len() {
            open[i].set_read_timeout(Some(Duration::from_millis(10))).unwrap();
            if open[i].peek(&mut [0u8; 1]).is_ok_and(|n| n > 0) {
                let mut c = open.swap_remove(i);
                c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                assert_eq!(read_reply(&mut c).map(err), Some((503, BUSY.into())));
                refused += 1;
                last = std::time::Instant::now();
            } else {
                i += 1;
            }
        }
    }
    assert_eq!((refused, open.len()), (4, 8), "refused, and held");
    // Each held body goes on to just under the limit, all of them in flight together, and
    // is served.
    let served: Vec<_> = open
        .into_iter()
        .enumerate()
        .map(|(i, mut c)| {
            std::thread::spawn(move || {
                for _ in 0..15 {
                    c.write_all(&chunk(&vec![b' '; 64 << 10])).unwrap();
                }
                c.write_all(&chunk(format!(r#"{{"email":"held{i}@example.com"}}"#).as_bytes())).unwrap();
                c.write_all(END).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
                read_reply(&mut c).map(|(st, b)| (st, b["status"].clone()))
            })
        })
        .collect();
    for t in served {
        assert_eq!(t.join().unwrap(), Some((200, json!("PENDING"))));
    }
    // Their shares are given back: a body fits again.
    let mut c = connect(&s.clob);
    c.write_all(&chunked_head("/waitlist", &[])).unwrap();
    c.write_all(&chunk(br#"{"email":"after@example.com"}"#)).unwrap();
    c.write_all(END).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    assert_eq!(read_reply(&mut c).map(|(st, _)| st), Some(200));
}

#[test]
fn an_oversize_body_is_413_on_every_post_route() {
    let s = Server::start();
    let t = s.trader(0);
    let big = format!(r#"{{"builderId":"acme","pad":"{}"}}"#, " ".repeat(2 * MAX_BODY));
    for (base, path, signed) in [
        (&s.clob, "/auth/builder-api-key", true),
        (&s.internal, "/internal/rate-limit", false),
        (&s.clob, "/order", true),
        (&s.clob, "/orders", true),
        (&s.clob, "/auth/api-key", false),
        (&s.clob, "/rfq/request", true),
        (&s.clob, "/no-such-route", false),
        (&s.bridge, "/quote", false),
        (&s.internal, "/internal/markets", false),
    ] {
        let headers = if signed { t.l2_headers("POST", path, &big) } else { Vec::new() };
        // Declared: refused on its head.
        let mut head = format!("POST {path} HTTP/1.1\r\nHost: predex\r\nContent-Length: {}\r\n", big.len());
        for (k, v) in &headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        assert_eq!(err(raw_request(base, head.as_bytes())), (413, "payload too large".into()), "{path}");
        // Chunked: refused at the chunk that crosses the limit (2 MiB offered).
        let (reply, _) = upload(base, chunked_head(path, &headers), 32, 64 << 10);
        assert_eq!(reply.map(err), Some((413, "payload too large".into())), "{path}, chunked");
    }
    assert_eq!(t.l2(&s, "GET", "/auth/builder-api-key", None).1["apiKeys"], json!([]), "nothing created");
    assert_eq!(s.internal_get("/internal/rate-limit").1["maxRequests"], s.config.rate_limit_max, "unchanged");
}

/// Each way of leaving out a field: missing, null, empty.
fn without(order: &Value, field: &str, how: &str) -> Value {
    let mut o = order.clone();
    match how {
        "missing" => {
            o.as_object_mut().unwrap().remove(field);
        }
        "null" => o[field] = Value::Null,
        _ => o[field] = json!(""),
    }
    o
}

#[test]
fn every_required_order_field_is_required() {
    let s = Server::start();
    let t = s.trader(m("100"));
    let order = t.order(&s, YES, "BUY", "0.50", "10");
    let builder = [("SERVICE_BUILDER_ID", "acme")];
    let invalid = (400, "Invalid order payload".to_string());
    let fields = ["taker", "expiration", "nonce", "feeRateBps", "signatureType"];
    for field in fields {
        for how in ["missing", "null", "empty"] {
            let sub = json!({"order": without(&order, field, how), "owner": t.key, "orderType": "GTC"});
            assert_eq!(err(t.l2(&s, "POST", "/order", Some(&sub))), invalid, "/order, {field} {how}");
            let (st, many) = t.l2(&s, "POST", "/orders", Some(&json!([sub])));
            assert_eq!(st, 200, "{many}");
            assert_eq!((&many[0]["success"], &many[0]["errorMsg"]), (&json!(false), &json!("Invalid order payload")));
            let r = l2_with(&t, &s, "POST", "/builder/order", &sub.to_string(), &builder);
            assert_eq!(err(r), invalid, "/builder/order, {field} {how}");
        }
    }
    // `signer` must be there, and may be empty (the maker signs then).
    for how in ["missing", "null"] {
        let sub = json!({"order": without(&order, "signer", how), "owner": t.key});
        assert_eq!(err(t.l2(&s, "POST", "/order", Some(&sub))), invalid, "signer {how}");
    }
    assert_eq!(t.l2(&s, "GET", "/data/orders", None).1["count"], 0, "nothing rests");
    assert_eq!(s.get(&format!("/book?token_id={YES}")).1["bids"], json!([]));
    assert_eq!(t.available(&s, "USDC"), m("100"), "nothing reserved");

    let sub = json!({"order": without(&order, "signer", "empty"), "owner": t.key});
    let (st, b) = t.l2(&s, "POST", "/order", Some(&sub));
    assert_eq!((st, b["status"].as_str()), (200, Some("LIVE")), "an empty signer is the maker: {b}");
    // Re-encodings of the same values stay accepted: numbers as strings and as numbers.
    let mut o = t.order(&s, YES, "BUY", "0.40", "10");
    o["salt"] = json!(o["salt"].to_string());
    o["nonce"] = json!(0);
    o["expiration"] = json!(0);
    o["feeRateBps"] = json!(0);
    o["signatureType"] = json!("0");
    let (st, b) = t.submit(&s, o, "GTC");
    assert_eq!((st, b["status"].as_str()), (200, Some("LIVE")), "{b}");
    assert_eq!(t.l2(&s, "GET", "/data/orders", None).1["count"], 2);
}

#[test]
fn the_order_book_server_serves_get_trades() {
    let s = Server::start();
    let (a, b) = (s.trader(m("100")), s.trader(0));
    s.credit(&b.address, YES, m("50"));
    b.place(&s, YES, "SELL", "0.60", "10");
    let r = a.place(&s, YES, "BUY", "0.65", "10");
    let id = r["tradeIds"][0].as_str().unwrap().to_string();

    let (st, page) = a.l2(&s, "GET", "/trades", None);
    assert_eq!(st, 200, "{page}");
    assert_eq!(page, a.l2(&s, "GET", "/data/trades", None).1, "the same history and envelope as /data/trades");
    assert_eq!((page["count"].as_u64(), page["limit"].as_u64()), (Some(1), Some(100)));
    assert_eq!(page["next_cursor"], "LTE=");
    let trade = &page["data"][0];
    assert_eq!((trade["id"].as_str(), trade["trader_side"].as_str()), (Some(id.as_str()), Some("TAKER")));
    assert_eq!((trade["size"].as_str(), trade["price"].as_str()), (Some("10"), Some("0.6")));
    assert_eq!(b.l2(&s, "GET", "/trades", None).1["data"][0]["trader_side"], "MAKER");

    let at: u64 = trade["match_time"].as_str().unwrap().parse().unwrap();
    let count = |path: &str| {
        let (st, p) = a.l2(&s, "GET", path, None);
        assert_eq!(st, 200, "{path}: {p}");
        p["count"].as_u64().unwrap()
    };
    let other = uuid::Uuid::new_v4();
    for (query, n) in [
        (format!("market={COND}"), 1),
        ("market=0xother".into(), 0),
        (format!("asset_id={YES}"), 1),
        ("asset_id=42".into(), 0),
        (format!("id={id}"), 1),
        (format!("id={other}"), 0),
        (format!("maker_address={}", b.address), 1),
        (format!("maker_address={:#x}", alloy_primitives::Address::repeat_byte(7)), 0),
        (format!("before={}", at + 1), 1),
        (format!("before={at}"), 0),
        (format!("after={}", at - 1), 1),
        (format!("after={at}"), 0),
        (format!("market={COND}&asset_id={YES}&after={}", at - 1), 1),
    ] {
        assert_eq!(count(&format!("/trades?{query}")), n, "{query}");
    }
    assert_eq!(err(a.l2(&s, "GET", "/trades?before=soon", None)), (400, "Invalid payload".into()));
    assert_eq!(err(s.get("/trades")), (401, "L2 authentication failure".into()));
}

#[test]
fn http_level_refusals_carry_the_json_error() {
    let s = Server::start();
    let long_url = format!("GET /{} HTTP/1.1\r\nHost: predex\r\n\r\n", "a".repeat(MAX_BODY));
    let mut many_headers = String::from("GET /ok HTTP/1.1\r\nHost: predex\r\n");
    for i in 0..300 {
        many_headers.push_str(&format!("X-H{i}: {i}\r\n"));
    }
    many_headers.push_str("\r\n");
    for (base, request, status) in [
        (&s.clob, long_url.as_str(), 431),
        (&s.catalogue, long_url.as_str(), 431),
        (&s.clob, many_headers.as_str(), 431),
        (&s.internal, many_headers.as_str(), 431),
        (&s.clob, "\x01\x02 garbage \x7f\r\n\r\n", 400),
        (&s.analytics, "GET / HTTP/1.1 extra\r\n\r\n", 400),
        (&s.clob, "POST /waitlist HTTP/1.1\r\nHost: predex\r\nContent-Length: abc\r\n\r\n", 400),
        (&s.bridge, "POST /quote HTTP/1.1\r\nHost: predex\r\nContent-Length: abc\r\n\r\n", 400),
    ] {
        let (reply, _) = upload(base, request.as_bytes().to_vec(), 0, 0);
        let (st, body) = reply.unwrap_or_else(|| panic!("no reply to {:?}", &request[..request.len().min(40)]));
        assert_eq!(st, status, "{body}");
        let msg = body["error"].as_str().unwrap_or_default();
        assert!(!msg.is_empty() && body.as_object().unwrap().len() == 1, "{status}: {body}");
    }
    // The server still answers afterwards.
    assert_eq!(s.get("/ok").0, 200);
}
