//! The event stream out (`--events-to`) against a real `nats-server -js`: predex as a child
//! process, trading while the server is absent, then present, across a kill -9 of predex and
//! one of the NATS server. Every event reaches the stream once, in order, and the stream's
//! last word on each order and trade is what the venue holds.

use std::collections::{BTreeMap, HashMap};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use serde_json::Value;

use crate::support::*;
use crate::support::{all_trades, spawn_with, Load, Proc};

/// A `nats-server` with JetStream on loopback, its store in `dir`.
struct Nats {
    child: Child,
}

impl Nats {
    fn start(port: u16, dir: &Path) -> Nats {
        // Debian installs it in /usr/sbin, not on every user's PATH.
        let bin = ["/usr/sbin/nats-server", "/usr/bin/nats-server"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .unwrap_or("nats-server");
        let child = Command::new(bin)
            .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start nats-server ({bin}): {e}; scripts/setup.sh installs it"));
        wait_for(10, || TcpStream::connect(("127.0.0.1", port)).ok());
        Nats { child }
    }

    fn kill(mut self) {
        self.child.kill().unwrap(); // SIGKILL
        self.child.wait().unwrap();
    }
}

impl Drop for Nats {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// One message of the stream: its stream sequence, subject, `Nats-Msg-Id` and body.
struct Message {
    seq: u64,
    subject: String,
    id: String,
    body: Value,
}

/// Every message of stream PREDEX, in stream order.
fn read_stream(port: u16) -> Vec<Message> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let client = async_nats::connect(format!("nats://127.0.0.1:{port}")).await.unwrap();
        let js = async_nats::jetstream::new(client);
        let mut stream = js.get_stream("PREDEX").await.unwrap();
        let state = stream.info().await.unwrap().state.clone();
        let mut out = Vec::new();
        for seq in state.first_sequence..=state.last_sequence {
            let m = stream.get_raw_message(seq).await.unwrap();
            out.push(Message {
                seq: m.sequence,
                subject: m.subject.to_string(),
                id: m.headers.get("Nats-Msg-Id").map(|v| v.as_str().to_string()).unwrap_or_default(),
                body: serde_json::from_slice(&m.payload).unwrap(),
            });
        }
        out
    })
}

/// The stream's part of `GET /internal/overview`.
fn stream_status(s: &Server) -> Value {
    let (st, o) = s.internal_get("/internal/overview");
    assert_eq!(st, 200, "{o}");
    o["events"].clone()
}

/// A gauge's value in `GET /metrics`.
fn gauge(s: &Server, name: &str) -> i64 {
    let text = s.internal_request("GET", "/metrics").call().unwrap().into_string().unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(' ')))
        .unwrap_or_else(|| panic!("{name} not in /metrics"))
        .parse()
        .unwrap()
}

fn caught_up(s: &Server) -> Value {
    wait_for(60, || {
        let e = stream_status(s);
        (e["connected"] == true && e["lag"] == 0).then_some(e)
    })
}

#[test]
fn every_event_reaches_jetstream_once_in_order_across_kill_9_and_a_nats_restart() {
    let (dir, nats_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let port = free_port();
    let to = format!("nats://127.0.0.1:{port}");
    let env = [("PREDEX_EVENTS_TO", to.clone())];

    let mut p: Proc = spawn_with(dir.path(), &env);
    let (traders, mut acked) = with_no_server_orders_are_acknowledged_and_the_stream_lags(&p.server, &to);
    let nats = Nats::start(port, nats_dir.path());
    the_stream_catches_up_when_the_server_comes(&p.server);
    acked.extend(predex_is_killed_under_load(&mut p, &traders));
    let p = spawn_with(dir.path(), &env);
    let s = &p.server;
    let before = acked.len();
    let (more, nats) = the_nats_server_is_killed_under_load_and_comes_back(s, &traders, nats, port, nats_dir.path());
    acked.extend(more);
    eprintln!("events: {} orders acknowledged, {before} before the NATS kill", acked.len());

    // Every trade settled (its status events included), then everything published.
    wait_for(60, || {
        let open =
            all_trades(s, &traders).values().any(|t| !["CONFIRMED", "FAILED"].contains(&t["status"].as_str().unwrap()));
        (!open).then_some(())
    });
    let e = caught_up(s);
    let msgs = read_stream(port);
    drop(nats);
    the_nth_message_is_event_n_once(&msgs, &e);
    every_order_and_trade_is_in_the_stream_ending_where_the_venue_is(s, &traders, &msgs, &acked);
}

/// No server yet: orders are acknowledged all the same, and the stream lags, visibly.
fn with_no_server_orders_are_acknowledged_and_the_stream_lags(
    s: &Server,
    to: &str,
) -> (Vec<Arc<Trader>>, BTreeMap<String, Value>) {
    s.create_market(COND, YES, NO, "0.01", false);
    let traders: Vec<Arc<Trader>> = (0..4).map(|_| Arc::new(s.trader(m("1000")))).collect();
    for t in &traders {
        s.credit(&t.address, YES, m("1000"));
    }
    let mut acked: BTreeMap<String, Value> = BTreeMap::new();
    for (i, px) in ["0.50", "0.51", "0.49"].iter().enumerate() {
        let b = traders[0].place(s, YES, "SELL", px, "10");
        acked.insert(b["orderID"].as_str().unwrap().into(), b);
        let b = traders[1 + i % 3].place(s, YES, "BUY", px, "10");
        acked.insert(b["orderID"].as_str().unwrap().into(), b);
    }
    let e = stream_status(s);
    assert_eq!((e["to"].as_str(), &e["connected"]), (Some(to), &Value::Bool(false)), "{e}");
    assert!(e["lag"].as_u64().unwrap() >= 7, "{e}");
    assert_eq!(e["acked"], 0, "{e}");
    assert!(gauge(s, "predex_events_lag") >= 7);
    assert_eq!(gauge(s, "predex_events_connected"), 0);
    (traders, acked)
}

fn the_stream_catches_up_when_the_server_comes(s: &Server) {
    let e = caught_up(s);
    assert!(e["acked"].as_u64().unwrap() >= 7, "{e}");
    // The settlement worker may write a trade's next status meanwhile: the gauge comes back
    // to zero as the stream takes it.
    wait_for(60, || (gauge(s, "predex_events_lag") == 0).then_some(()));
    assert_eq!(gauge(s, "predex_events_connected"), 1);
}

/// kill -9 of predex under load; the orders it acknowledged.
fn predex_is_killed_under_load(p: &mut Proc, traders: &[Arc<Trader>]) -> BTreeMap<String, Value> {
    let load = Load::start(&p.server, traders);
    load.wait_acked(150);
    p.child.kill().unwrap();
    p.child.wait().unwrap();
    load.stop().0
}

/// kill -9 of the NATS server under load: orders are still acknowledged while it is gone;
/// it comes back on the same store. The orders acknowledged meanwhile, and the server.
fn the_nats_server_is_killed_under_load_and_comes_back(
    s: &Server,
    traders: &[Arc<Trader>],
    nats: Nats,
    port: u16,
    store: &Path,
) -> (BTreeMap<String, Value>, Nats) {
    let load = Load::start(s, traders);
    load.wait_acked(100);
    nats.kill();
    load.wait_acked(250);
    let lag = stream_status(s)["lag"].as_u64().unwrap();
    assert!(lag > 0, "no lag with the NATS server down");
    let nats = Nats::start(port, store);
    load.wait_acked(400);
    let (more, _) = load.stop();
    assert!(more.len() >= 250, "only {} orders acknowledged with the NATS server down and back", more.len());
    eprintln!("events: lag {lag} while the NATS server was down");
    (more, nats)
}

/// Once, in order: the n-th message of the stream is event n, and there are as many as the
/// store numbered.
fn the_nth_message_is_event_n_once(msgs: &[Message], e: &Value) {
    assert_eq!(msgs.len() as u64, e["last"].as_u64().unwrap(), "{e}");
    for (i, msg) in msgs.iter().enumerate() {
        let n = i as u64 + 1;
        assert_eq!((msg.seq, msg.id.as_str()), (n, n.to_string().as_str()), "message {n}");
        assert_eq!(msg.body["event_seq"], n);
        let kind = match (msg.body["event_type"].as_str().unwrap(), msg.body["status"].as_str()) {
            ("trade", Some("MATCHED")) => "trade",
            ("trade", _) => "settlement",
            (other, _) => other,
        };
        assert_eq!(msg.subject, format!("predex.{kind}.{COND}"), "{}", msg.body);
    }
    assert_eq!(msgs[0].body["event_type"], "market");
}

fn every_order_and_trade_is_in_the_stream_ending_where_the_venue_is(
    s: &Server,
    traders: &[Arc<Trader>],
    msgs: &[Message],
    acked: &BTreeMap<String, Value>,
) {
    // The stream's events of each order and trade, in stream order.
    let mut orders: HashMap<&str, Vec<&Value>> = HashMap::new();
    let mut trades: HashMap<&str, Vec<&Value>> = HashMap::new();
    for msg in msgs {
        let id = msg.body["id"].as_str();
        match msg.body["event_type"].as_str().unwrap() {
            "order" => orders.entry(id.unwrap()).or_default().push(&msg.body),
            "trade" => trades.entry(id.unwrap()).or_default().push(&msg.body),
            _ => {}
        }
    }
    // Every acknowledged order was placed in the stream, first; its fills only grow; and
    // the stream's last word is what the venue holds.
    for id in acked.keys() {
        let events = orders.get(id.as_str()).unwrap_or_else(|| panic!("acknowledged order {id} not in the stream"));
        assert_eq!(events[0]["type"], "PLACEMENT", "{id}");
    }
    let key_of: HashMap<&str, &Trader> = traders.iter().map(|t| (t.key.as_str(), t.as_ref())).collect();
    for (id, events) in &orders {
        assert_eq!(events.iter().filter(|e| e["type"] == "PLACEMENT").count(), 1, "{id}");
        let filled: Vec<u64> = events.iter().map(|e| m(e["size_matched"].as_str().unwrap())).collect();
        assert!(filled.windows(2).all(|w| w[0] <= w[1]), "{id}: {filled:?}");
        let last = events.last().unwrap();
        let owner = key_of[last["owner"].as_str().unwrap()];
        let (st, held) = owner.l2(s, "GET", &format!("/data/order/{id}"), None);
        assert_eq!(st, 200, "order {id} in the stream, not in the venue: {held}");
        assert_eq!((&last["status"], &last["size_matched"]), (&held["status"], &held["size_matched"]), "{id}");
    }
    // Every trade: created (MATCHED) first, then its settlement, ending where the venue is.
    let venue = all_trades(s, traders);
    assert_eq!(trades.len(), venue.len());
    for (id, held) in &venue {
        let events = trades.get(id.as_str()).unwrap_or_else(|| panic!("trade {id} not in the stream"));
        assert_eq!(events[0]["status"], "MATCHED", "{id}");
        assert_eq!(events.iter().filter(|e| e["status"] == "MATCHED").count(), 1, "{id}");
        assert_eq!(events.last().unwrap()["status"], held["status"], "{id}");
    }
    for reply in acked.values() {
        for tid in reply["tradeIds"].as_array().unwrap() {
            assert!(trades.contains_key(tid.as_str().unwrap()), "acknowledged trade {tid} not in the stream");
        }
    }
    eprintln!("events: {} messages, {} orders, {} trades", msgs.len(), orders.len(), trades.len());
}
