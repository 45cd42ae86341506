//! The market feed over a real WebSocket client: snapshot then deltas reproduce GET /book
//! exactly after random orders, cancels and matches; sequences have no gaps; PING/PONG;
//! subscription errors and unsubscribe.

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

use crate::support::*;

/// A token's book rebuilt from the feed.
#[derive(Default, Debug)]
struct Local {
    bids: BTreeMap<String, String>,
    asks: BTreeMap<String, String>,
    seq: u64,
}

impl Local {
    fn apply(&mut self, asset: &str, m: &Value) {
        match m["event_type"].as_str() {
            Some("book") if m["asset_id"] == asset => {
                let side = |k: &str| {
                    m[k].as_array()
                        .unwrap()
                        .iter()
                        .map(|l| (l["price"].as_str().unwrap().into(), l["size"].as_str().unwrap().into()))
                        .collect()
                };
                self.bids = side("bids");
                self.asks = side("asks");
                self.seq = m["seq"].as_u64().unwrap();
            }
            Some("price_change") => {
                let mine: Vec<&Value> =
                    m["price_changes"].as_array().unwrap().iter().filter(|c| c["asset_id"] == asset).collect();
                if mine.is_empty() {
                    return;
                }
                let seq = m["seq"].as_u64().unwrap();
                assert_eq!(seq, self.seq + 1, "a gap in {asset}'s feed");
                self.seq = seq;
                for c in mine {
                    let book = if c["side"] == "BUY" { &mut self.bids } else { &mut self.asks };
                    let (p, sz) = (c["price"].as_str().unwrap().to_string(), c["size"].as_str().unwrap());
                    if sz == "0" {
                        assert!(book.remove(&p).is_some(), "removing a level that is not there");
                    } else {
                        book.insert(p, sz.into());
                    }
                }
            }
            _ => {}
        }
    }

    fn matches(&self, book: &Value) -> bool {
        let side = |k: &str| -> BTreeMap<String, String> {
            book[k]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| (l["price"].as_str().unwrap().into(), l["size"].as_str().unwrap().into()))
                .collect()
        };
        side("bids") == self.bids && side("asks") == self.asks
    }
}

#[test]
fn market_feed_snapshot_and_deltas_reproduce_the_book() {
    let s = Server::start();
    let a = s.trader(m("5000"));
    let b = s.trader(m("5000"));
    for t in [&a, &b] {
        s.credit(&t.address, YES, m("2000"));
        s.credit(&t.address, NO, m("2000"));
    }
    b.place(&s, YES, "SELL", "0.70", "10"); // before the subscription: in the snapshot
    let mut c = Client::connect(&s);
    c.send(&json!({"assets_ids": [YES, NO], "type": "market"}).to_string());
    let (mut yes, mut no) = (Local::default(), Local::default());
    let first = c.drain(Duration::from_millis(300));
    assert_eq!(first.iter().filter(|m| m["event_type"] == "book").count(), 2, "{first:?}");
    for book in first.iter().filter(|m| m["event_type"] == "book") {
        assert_eq!(book["hash"], client_book_hash(book), "{book}");
    }
    for m in &first {
        yes.apply(YES, m);
        no.apply(NO, m);
    }
    assert!(yes.matches(&s.get(&format!("/book?token_id={YES}")).1));

    // Random orders on both tokens, cancels and crossings.
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut roll = |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    let mut open: Vec<(usize, String)> = Vec::new();
    let mut trades = 0;
    for _ in 0..80 {
        let who = roll(2) as usize;
        let t = [&a, &b][who];
        if roll(5) == 0 && !open.is_empty() {
            let (w, id) = open.swap_remove(roll(open.len() as u64) as usize);
            [&a, &b][w].l2(&s, "DELETE", "/order", Some(&json!({"orderID": id})));
            continue;
        }
        let token = if roll(2) == 0 { YES } else { NO };
        let side = if roll(2) == 0 { "BUY" } else { "SELL" };
        let price = format!("0.{}", 40 + roll(21));
        let size = format!("{}", 5 + roll(11));
        let r = t.place(&s, token, side, &price, &size);
        trades += r["tradeIds"].as_array().map_or(0, |v| v.len());
        if r["status"] == "LIVE" {
            open.push((who, r["orderID"].as_str().unwrap().to_string()));
        }
    }
    assert!(trades > 0, "the random walk should cross the book");
    let msgs = c.drain(Duration::from_millis(500));
    for m in &msgs {
        yes.apply(YES, m);
        no.apply(NO, m);
    }
    assert!(yes.matches(&s.get(&format!("/book?token_id={YES}")).1), "YES feed {yes:?}");
    assert!(no.matches(&s.get(&format!("/book?token_id={NO}")).1), "NO feed {no:?}");
    let ltp: Vec<&Value> = msgs.iter().filter(|m| m["event_type"] == "last_trade_price").collect();
    assert_eq!(ltp.len(), trades * 2, "one last_trade_price per trade for each token");
    let last_yes = ltp.iter().rev().find(|m| m["asset_id"] == YES).unwrap();
    assert_eq!(last_yes["price"], s.get(&format!("/last-trade-price?token_id={YES}")).1["price"]);
    for m in &msgs {
        assert_eq!(m["market"], COND);
        assert!(m["timestamp"].as_str().unwrap().parse::<u64>().is_ok());
    }

    // Keepalive, bad input, unsubscribe.
    c.send("PING");
    assert_eq!(c.drain(Duration::from_millis(200)), vec![json!("PONG")]);
    c.send("{nope");
    assert_eq!(c.drain(Duration::from_millis(200))[0]["event_type"], "error");
    c.send(&json!({"assets_ids": ["999"], "operation": "subscribe"}).to_string());
    assert_eq!(c.drain(Duration::from_millis(200))[0]["message"], "unknown asset id 999");
    c.send(&json!({"assets_ids": [NO], "operation": "unsubscribe"}).to_string());
    c.drain(Duration::from_millis(200));
    a.place(&s, YES, "BUY", "0.30", "5");
    let after = c.drain(Duration::from_millis(300));
    assert!(!after.is_empty());
    assert!(after.iter().all(|m| m["price_changes"].as_array().unwrap().iter().all(|c| c["asset_id"] == YES)));
}

/// `custom_feature_enabled` adds a `best_bid_ask` message when a token's best bid or ask
/// moves (in the same frame as the change), and never otherwise.
#[test]
fn best_bid_ask_goes_to_connections_that_enable_custom_features() {
    let s = Server::start();
    let t = s.trader(m("5000"));
    s.credit(&t.address, YES, m("100"));
    let mut plain = Client::connect(&s);
    plain.send(&json!({"assets_ids": [YES, NO], "type": "market"}).to_string());
    let mut custom = Client::connect(&s);
    custom.send(&json!({"assets_ids": [YES, NO], "type": "market", "custom_feature_enabled": true}).to_string());
    plain.drain(Duration::from_millis(300));
    custom.drain(Duration::from_millis(300));
    let bba = |msgs: &[Value]| -> Vec<Value> {
        msgs.iter().filter(|m| m["event_type"] == "best_bid_ask").cloned().collect::<Vec<_>>()
    };

    t.place(&s, YES, "BUY", "0.40", "5"); // a new best bid for YES, best ask for NO
    let got = custom.drain(Duration::from_millis(300));
    let b = bba(&got);
    assert_eq!(b.len(), 2, "{got:?}");
    let yes = b.iter().find(|m| m["asset_id"] == YES).unwrap();
    assert_eq!(
        (yes["best_bid"].as_str(), yes["best_ask"].as_str(), yes["spread"].as_str()),
        (Some("0.4"), Some(""), Some(""))
    );
    assert_eq!(yes["market"], COND);
    let no = b.iter().find(|m| m["asset_id"] == NO).unwrap();
    assert_eq!((no["best_bid"].as_str(), no["best_ask"].as_str()), (Some(""), Some("0.6")));

    t.place(&s, YES, "SELL", "0.55", "5"); // both sides now: a spread
    let got = custom.drain(Duration::from_millis(300));
    let yes = bba(&got).into_iter().find(|m| m["asset_id"] == YES).unwrap();
    assert_eq!(
        (yes["best_bid"].as_str(), yes["best_ask"].as_str(), yes["spread"].as_str()),
        (Some("0.4"), Some("0.55"), Some("0.1500"))
    );
    assert_eq!(yes["spread"], s.get(&format!("/spread?token_id={YES}")).1["spread"]);

    t.place(&s, YES, "BUY", "0.30", "5"); // behind the best: a price_change only
    let got = custom.drain(Duration::from_millis(300));
    assert!(got.iter().any(|m| m["event_type"] == "price_change"), "{got:?}");
    assert!(bba(&got).is_empty(), "{got:?}");

    let plain_got = plain.drain(Duration::from_millis(300));
    assert_eq!(plain_got.iter().filter(|m| m["event_type"] == "price_change").count(), 6);
    assert!(bba(&plain_got).is_empty(), "without custom features: {plain_got:?}");
}

/// Polymarket's tick rule: once the market's price passes 0.96 (or 0.04) a 0.01 market
/// moves to 0.001 — a `tick_size_change` per subscribed token, first in the frame of the
/// change that caused it. Finer prices are accepted from then on, every endpoint shows the
/// new tick, and it survives a restart.
#[test]
fn the_tick_gets_finer_past_the_price_bounds_and_stays_fine() {
    let s = Server::start();
    let t = s.trader(m("5000"));
    let mut c = Client::connect(&s);
    c.send(&json!({"assets_ids": [YES, NO], "type": "market"}).to_string());
    c.drain(Duration::from_millis(300));
    let buy_at = |t: &Trader, s: &Server, price: &str| err(t.submit(s, t.order(s, YES, "BUY", price, "10"), "GTC"));
    let tick = |s: &Server| s.get(&format!("/tick-size?token_id={YES}")).1;

    let (st, msg) = buy_at(&t, &s, "0.975");
    assert_eq!(st, 400);
    assert!(msg.ends_with("breaks minimum tick size rule: 0.01"), "{msg}");
    // 0.96 is inside the bounds.
    t.place(&s, YES, "BUY", "0.96", "10");
    let got = c.drain(Duration::from_millis(300));
    assert!(got.iter().all(|m| m["event_type"] != "tick_size_change"), "{got:?}");
    assert_eq!(tick(&s), json!({"minimum_tick_size": 0.01}));

    // A best bid of 0.97 passes it.
    t.place(&s, YES, "BUY", "0.97", "10");
    let got = c.drain(Duration::from_millis(300));
    for asset in [YES, NO] {
        let of_asset: Vec<&Value> = got
            .iter()
            .filter(|m| m["asset_id"] == asset || m["price_changes"].get(0).is_some_and(|c| c["asset_id"] == asset))
            .collect();
        let kinds: Vec<&str> = of_asset.iter().map(|m| m["event_type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["tick_size_change", "price_change"], "{got:?}");
        let m = of_asset[0];
        assert_eq!(
            (m["market"].as_str(), m["old_tick_size"].as_str(), m["new_tick_size"].as_str()),
            (Some(COND), Some("0.01"), Some("0.001"))
        );
        assert_eq!(m["seq"], of_asset[1]["seq"], "one change, one sequence number");
    }
    assert_eq!(tick(&s), json!({"minimum_tick_size": 0.001}));
    assert_eq!(s.get(&format!("/book?token_id={NO}")).1["tick_size"], "0.001");
    t.place(&s, YES, "BUY", "0.975", "10");
    let (st, msg) = buy_at(&t, &s, "0.9755");
    assert_eq!(st, 400);
    assert!(msg.ends_with("breaks minimum tick size rule: 0.001"), "{msg}");
    // Back inside the bounds, the tick stays fine.
    let o = t.l2(&s, "GET", "/data/orders", None).1;
    let ids: Vec<Value> = o["data"].as_array().unwrap().iter().map(|o| o["id"].clone()).collect();
    assert_eq!(t.l2(&s, "DELETE", "/orders", Some(&json!(ids))).0, 200);
    t.place(&s, YES, "BUY", "0.501", "10");
    assert!(c.drain(Duration::from_millis(300)).iter().all(|m| m["event_type"] != "tick_size_change"));
    drop(c);

    let (cfg, _dir) = s.stop();
    let s = Server::start_with(cfg);
    assert_eq!(tick(&s), json!({"minimum_tick_size": 0.001}));
    t.place(&s, YES, "BUY", "0.502", "10");
    s.check();
}

#[test]
fn idle_clients_are_closed_with_a_reason() {
    let s = Server::start_tuned(|c| c.ws_idle_secs = 1);
    let mut idle = Client::connect(&s);
    let got = idle.drain(Duration::from_secs(3));
    assert_eq!(got.last().unwrap()["closed"], "idle: no message (PING) for too long");
}

/// A subscriber that stops reading is cut off once its queue (`ws-window` frames) is full,
/// while another subscriber of the same book receives every frame, without a gap; the
/// stalled one can subscribe again for a fresh snapshot.
#[test]
fn a_stalled_client_is_cut_off_while_others_keep_receiving() {
    let s = Server::start_tuned(|c| c.ws_window = 64);
    let trader = s.trader(m("5000"));
    s.credit(&trader.address, YES, m("5000"));
    // A deep book, so that each snapshot is a few kilobytes.
    for i in 0..30 {
        trader.place(&s, YES, "BUY", &format!("0.{:02}", 1 + i), "5");
        trader.place(&s, YES, "SELL", &format!("0.{:02}", 70 + i), "5");
    }
    let sub = json!({"assets_ids": [YES, NO], "type": "market"}).to_string();

    // The stalled client never reads. Loopback lets the kernel buffer megabytes for it, so
    // it fills them first, asking for snapshots again and again; then the server's writes
    // to it block, and the order flow below fills its queue.
    let stalled_rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let addr: std::net::SocketAddr = s.clob.trim_start_matches("http://").parse().unwrap();
    let mut stalled = stalled_rt.block_on(async {
        let sock = tokio::net::TcpSocket::new_v4().unwrap();
        sock.set_recv_buffer_size(2048).unwrap();
        let stream = sock.connect(addr).await.unwrap();
        let (mut ws, _) = tokio_tungstenite::client_async(format!("ws://{addr}/ws/market"), stream).await.unwrap();
        for _ in 0..1500 {
            ws.send(Message::text(sub.clone())).await.unwrap();
        }
        ws
    });

    // The healthy client reads all along, on its own thread.
    let mut healthy = Client::connect(&s);
    healthy.send(&sub);
    let mut local = Local::default();
    let snapshots = healthy.drain(Duration::from_millis(500));
    assert_eq!(snapshots.iter().filter(|m| m["event_type"] == "book").count(), 2, "{snapshots:?}");
    for m in &snapshots {
        local.apply(YES, m);
    }
    let reader = std::thread::spawn(move || {
        let mut frames = 0;
        loop {
            let msgs = healthy.drain(Duration::from_secs(2));
            if msgs.is_empty() {
                break (local, frames);
            }
            for m in &msgs {
                assert!(m.get("closed").is_none(), "the healthy client was closed: {m}");
                frames += usize::from(m["event_type"] == "price_change");
                local.apply(YES, m);
            }
        }
    });

    let orders = 200;
    for i in 0..orders {
        let r = trader.place(&s, YES, "BUY", &format!("0.{:02}", 31 + i % 30), "5");
        assert_eq!(r["status"], "LIVE", "{r}");
    }
    let (local, frames) = reader.join().unwrap();
    let metrics = s.internal_get("/metrics").1;
    let text = metrics.as_str().unwrap();
    assert_eq!(frames, orders * 2, "the healthy client got every change of both tokens: {text}");
    assert!(local.matches(&s.get(&format!("/book?token_id={YES}")).1), "{local:?}");
    assert!(text.contains("predex_ws_too_slow_total 1\n"), "only the stalled client was cut: {text}");

    // The stalled client now reads what was buffered for it, then finds the connection
    // closed: with "too slow" when the close frame fitted, or at the end of the stream.
    let (got, end) = stalled_rt.block_on(async {
        let mut got = 0;
        loop {
            match tokio::time::timeout(Duration::from_secs(10), stalled.next()).await {
                Ok(Some(Ok(Message::Text(t)))) => got += usize::from(t.contains(r#""event_type":"price_change""#)),
                Ok(Some(Ok(Message::Close(c)))) => break (got, c.map(|c| c.reason.to_string())),
                Ok(Some(Ok(_))) => {}
                Ok(Some(Err(_)) | None) => break (got, None),
                Err(_) => panic!("the stalled client was never cut off ({got} frames read)"),
            }
        }
    });
    assert!(got < orders * 2, "a cut-off client cannot have every frame ({got})");
    if let Some(reason) = end {
        assert!(reason.starts_with("too slow"), "{reason}");
    }

    // Subscribing again gives a fresh snapshot equal to the book.
    let mut again = Client::connect(&s);
    again.send(&sub);
    let mut fresh = Local::default();
    for m in &again.drain(Duration::from_millis(300)) {
        fresh.apply(YES, m);
    }
    assert!(fresh.matches(&s.get(&format!("/book?token_id={YES}")).1));
}

fn kinds(msgs: &[Value]) -> Vec<String> {
    msgs.iter()
        .map(|m| match m["event_type"].as_str().unwrap() {
            "order" => format!("order {}", m["type"].as_str().unwrap()),
            _ => format!("trade {}", m["status"].as_str().unwrap()),
        })
        .collect()
}

#[test]
fn user_channel_follows_own_orders_and_trades_only() {
    let s = Server::start();
    let maker = s.trader(0);
    let taker = s.trader(m("100"));
    let other = s.trader(m("100"));
    s.credit(&maker.address, YES, m("50"));
    let mut mc = user_channel(&s, &maker, json!([]));
    let mut tc = user_channel(&s, &taker, json!([COND]));
    let mut oc = user_channel(&s, &other, json!(["0xelsewhere"]));
    std::thread::sleep(Duration::from_millis(100));

    let sell = maker.place(&s, YES, "SELL", "0.60", "20");
    let buy = taker.place(&s, YES, "BUY", "0.60", "10");
    let trade_id = buy["tradeIds"][0].as_str().unwrap().to_string();
    let q = Duration::from_millis(300);
    let got = mc.drain(q);
    assert_eq!(kinds(&got), ["order PLACEMENT", "order UPDATE", "trade MATCHED"], "{got:?}");
    assert_eq!(got[0]["id"], sell["orderID"]);
    assert_eq!(got[1]["size_matched"], "10");
    assert_eq!((got[2]["id"].as_str().unwrap(), got[2]["trader_side"].as_str().unwrap()), (trade_id.as_str(), "MAKER"));
    let got = tc.drain(q);
    assert_eq!(kinds(&got), ["order PLACEMENT", "trade MATCHED"], "{got:?}");
    assert_eq!(got[0]["status"], "MATCHED");
    assert_eq!(got[1]["trader_side"], "TAKER");

    s.settle();
    let got = mc.drain(q);
    assert_eq!(kinds(&got), ["trade CONFIRMED"]);
    assert!(got[0]["transaction_hash"].as_str().unwrap().starts_with("0x"));
    assert_eq!(kinds(&tc.drain(q)), ["trade CONFIRMED"]);

    maker.l2(&s, "DELETE", "/order", Some(&json!({"orderID": sell["orderID"]})));
    assert_eq!(kinds(&mc.drain(q)), ["order CANCELLATION"]);
    assert!(tc.drain(q).is_empty(), "nothing of another key's orders");
    // The other key trades in this market, but filters on another one: nothing.
    other.place(&s, YES, "BUY", "0.20", "5");
    assert!(oc.drain(q).is_empty());
    assert!(mc.drain(q).is_empty() && tc.drain(q).is_empty());

    // Wrong credentials: refused.
    let mut bad = Client::connect_to(&s, "/ws/user");
    let auth = json!({"apiKey": taker.key, "secret": maker.secret, "passphrase": taker.passphrase});
    bad.send(&json!({"auth": auth, "type": "user"}).to_string());
    let got = bad.drain(q);
    assert_eq!(got[0]["event_type"], "error");
    assert_eq!(got.last().unwrap()["closed"], "unauthenticated");
    let mut none = Client::connect_to(&s, "/ws/user");
    none.send(&json!({"type": "user", "markets": []}).to_string());
    assert_eq!(none.drain(q).last().unwrap()["closed"], "unauthenticated");
}
