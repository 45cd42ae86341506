//! Crash safety: the `predex` binary as a child process, clients trading concurrently while
//! trades settle, then `kill -9` (or SIGTERM, which must drain and exit 0), restart on the
//! same data dir. Everything acknowledged is there; everything unacknowledged is wholly
//! there or wholly absent; books match the persisted orders; collateral and tokens are
//! conserved.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::fixture::*;

pub(crate) struct Proc {
    pub(crate) child: Child,
    pub(crate) server: Server,
    /// The server wrote its log files ahead at start (its default), so the writes before a
    /// kill went into reused log files.
    logs_ahead: bool,
}

/// Starts `predex serve` and reads the bound addresses from its JSON log.
pub(crate) fn spawn(dir: &std::path::Path) -> Proc {
    spawn_with(dir, &[])
}

pub(crate) fn spawn_with(dir: &std::path::Path, env: &[(&str, String)]) -> Proc {
    // Through `sh -c 'exec …'` so the server can be told its own PID before it starts, as
    // systemd does with WATCHDOG_PID (the shell's PID is the server's after exec).
    let mut child = Command::new("sh")
        .args(["-c", r#"export WATCHDOG_PID=$$; exec "$0" "$@""#, env!("CARGO_BIN_EXE_predex")])
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .args(["serve", "--log-json", "--catalogue", "/nonexistent"])
        .arg("--data-dir")
        .arg(dir)
        .args(["--clob-addr", "127.0.0.1:0", "--catalogue-addr", "127.0.0.1:0", "--analytics-addr", "127.0.0.1:0"])
        // Some settings through their PREDEX_* environment twins rather than flags.
        .env("PREDEX_BRIDGE_ADDR", "127.0.0.1:0")
        .env("PREDEX_RATE_LIMIT_MAX", "0")
        .env("PREDEX_SETTLEMENT_INTERVAL_MS", "200")
        .env("PREDEX_INTERNAL_ADDR", "127.0.0.2:0")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn predex");
    let out = BufReader::new(child.stdout.take().unwrap());
    let mut addrs = HashMap::new();
    let mut lines = out.lines();
    let mut logs_ahead = false;
    while addrs.len() < 5 {
        let line = lines.next().expect("predex exited early").unwrap();
        let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        logs_ahead |= v["fields"]["message"] == "log files written ahead";
        if v["fields"]["message"] == "listening" {
            addrs.insert(
                v["fields"]["server"].as_str().unwrap().to_string(),
                v["fields"]["addr"].as_str().unwrap().to_string(),
            );
        }
    }
    assert!(addrs["internal"].starts_with("127.0.0.2:"), "PREDEX_INTERNAL_ADDR ignored: {addrs:?}");
    // Keep draining the log so the child never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    let mut config = test_config(dir);
    config.clob_addr = addrs["clob"].parse().unwrap();
    let mut server =
        Server::external(format!("http://{}", addrs["clob"]), format!("http://{}", addrs["internal"]), config);
    server.analytics = format!("http://{}", addrs["analytics"]);
    Proc { child, server, logs_ahead }
}

#[test]
fn kill_9_loses_nothing_acknowledged() {
    stop_under_load(false);
}

#[test]
fn sigterm_drains_and_loses_nothing_acknowledged() {
    stop_under_load(true);
}

fn stop_under_load(sigterm: bool) {
    let dir = tempfile::tempdir().unwrap();
    let mut p = spawn(dir.path());
    assert!(p.logs_ahead, "the server did not write its log files ahead");
    let s = &p.server;
    s.create_market(COND, YES, NO, "0.01", false);
    let traders: Vec<Arc<Trader>> = (0..4).map(|_| Arc::new(s.trader(m("1000")))).collect();
    for t in &traders {
        s.credit(&t.address, YES, m("1000"));
    }
    let (usdc0, yes0) = (m("4000"), m("4000"));

    let load = Load::start(s, &traders);
    // Let them trade, then kill the server mid-flight.
    load.wait_acked(150);
    if sigterm {
        let pid = p.child.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
        let status = p.child.wait().unwrap();
        assert!(status.success(), "SIGTERM must drain and exit 0, got {status}");
    } else {
        p.child.kill().unwrap(); // SIGKILL
        p.child.wait().unwrap();
    }
    let (acked, sent) = load.stop();
    assert!(acked.len() >= 100, "only {} acknowledged", acked.len());

    let p2 = spawn(dir.path());
    let s = &p2.server;
    s.check();

    let trades_now = || all_trades(s, &traders);
    let all_trades = trades_now();
    let owner_of =
        |id: &str| traders.iter().find(|t| t.l2(s, "GET", &format!("/data/order/{id}"), None).0 == 200).cloned();

    // Every acknowledged order and its trades survived, with at least the acked fill.
    for (id, res) in &acked {
        let t = owner_of(id).unwrap_or_else(|| panic!("acknowledged order {id} lost"));
        let o = t.l2(s, "GET", &format!("/data/order/{id}"), None).1;
        if res["status"] == "MATCHED" {
            assert_eq!(o["status"], "MATCHED");
        }
        for tid in res["tradeIds"].as_array().unwrap() {
            assert!(all_trades.contains_key(tid.as_str().unwrap()), "acknowledged trade {tid} lost");
        }
    }
    // Unacknowledged ones: wholly there (with all their trades) or wholly absent.
    let unacked: Vec<&String> = sent.iter().filter(|id| !acked.contains_key(*id)).collect();
    let mut survived = 0;
    for id in &unacked {
        if let Some(t) = owner_of(id) {
            survived += 1;
            let o = t.l2(s, "GET", &format!("/data/order/{id}"), None).1;
            for tid in o["associate_trades"].as_array().unwrap() {
                assert!(all_trades.contains_key(tid.as_str().unwrap()), "partial write of {id}");
            }
        }
    }
    eprintln!(
        "crash: {} acknowledged, {} unacknowledged ({} persisted), {} trades",
        acked.len(),
        unacked.len(),
        survived,
        all_trades.len()
    );
    // The book is exactly the persisted open orders.
    let mut want: BTreeMap<(String, String), u64> = BTreeMap::new();
    for t in &traders {
        let page = t.l2(s, "GET", "/data/orders", None).1;
        let mut cursor = page["next_cursor"].as_str().unwrap().to_string();
        let mut items = page["data"].as_array().unwrap().clone();
        while cursor != "LTE=" {
            let p = t.l2(s, "GET", &format!("/data/orders?next_cursor={cursor}"), None).1;
            items.extend(p["data"].as_array().unwrap().clone());
            cursor = p["next_cursor"].as_str().unwrap().to_string();
        }
        for o in items {
            let rem = m(o["original_size"].as_str().unwrap()) - m(o["size_matched"].as_str().unwrap());
            let side = if o["side"] == "BUY" { "bids" } else { "asks" };
            *want.entry((side.to_string(), o["price"].as_str().unwrap().to_string())).or_default() += rem;
        }
    }
    let book = s.get(&format!("/book?token_id={YES}")).1;
    let mut got: BTreeMap<(String, String), u64> = BTreeMap::new();
    for side in ["bids", "asks"] {
        for l in book[side].as_array().unwrap() {
            got.insert((side.to_string(), l["price"].as_str().unwrap().to_string()), m(l["size"].as_str().unwrap()));
        }
    }
    assert_eq!(got, want);
    // Conservation: complementary trades move USDC and YES between traders only. Read
    // once every trade is settled: the settlement worker runs meanwhile, and balances
    // read one trader after another around one of its passes would not add up.
    let start = Instant::now();
    while trades_now().values().any(|t| !["CONFIRMED", "FAILED"].contains(&t["status"].as_str().unwrap())) {
        assert!(start.elapsed() < Duration::from_secs(30), "trades still unsettled after 30 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (mut usdc, mut yes) = (0, 0);
    for t in &traders {
        usdc += t.balance(s, "USDC");
        yes += t.balance(s, YES);
    }
    assert_eq!((usdc, yes), (usdc0, yes0));
    // Each wallet's history in the data API (written behind the trades, from a log a
    // start applies) holds exactly its trades that stand, those of the last moments
    // before the kill included.
    let trades = trades_now();
    for t in &traders {
        let (st, rows) = s.analytics_get(&format!("/trades?user={}&takerOnly=false&limit=10000", t.address));
        assert_eq!(st, 200, "{rows}");
        let history: std::collections::BTreeSet<&str> =
            rows.as_array().unwrap().iter().map(|r| r["transactionHash"].as_str().unwrap()).collect();
        let own = |tr: &Value| {
            tr["maker_address"] == t.address.as_str()
                || tr["maker_orders"].as_array().unwrap().iter().any(|m| m["maker_address"] == t.address.as_str())
        };
        let standing: std::collections::BTreeSet<&str> = trades
            .values()
            .filter(|tr| tr["status"] != "FAILED" && own(tr))
            .map(|tr| tr["transaction_hash"].as_str().unwrap())
            .collect();
        assert_eq!(history, standing, "{}", t.address);
    }
    drop(p2);
}

type Shared<T> = Arc<Mutex<T>>;

/// Clients trading concurrently, one thread each, until stopped (or 2000 orders each, or
/// the server is gone): orders around 0.50 on alternating sides, so they cross and rest.
pub(crate) struct Load {
    /// Acknowledged orders: id → reply (status, tradeIds). Sent orders: their ids.
    acked: Shared<BTreeMap<String, Value>>,
    sent: Shared<Vec<String>>,
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Load {
    /// Starts one thread per trader, trading the YES token of `COND`.
    pub(crate) fn start(s: &Server, traders: &[Arc<Trader>]) -> Load {
        let (acked, sent): (Shared<BTreeMap<String, Value>>, Shared<Vec<String>>) = Default::default();
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        for (i, t) in traders.iter().enumerate() {
            let (t, acked, sent, stop, clob) = (t.clone(), acked.clone(), sent.clone(), stop.clone(), s.clob.clone());
            let cfg = s.config.clone();
            threads.push(std::thread::spawn(move || {
                let shadow = Server::external(clob, String::new(), cfg);
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) && n < 2000 {
                    n += 1;
                    let side = if (n + i as u64).is_multiple_of(2) { "BUY" } else { "SELL" };
                    let px = ["0.48", "0.49", "0.50", "0.51", "0.52"][(n as usize * 7 + i) % 5];
                    let o = t.order(&shadow, YES, side, px, "5");
                    let id = order_id(&shadow, &o);
                    sent.lock().unwrap().push(id.clone());
                    let body = json!({"order": o, "owner": t.key, "orderType": "GTC"}).to_string();
                    let mut r = ureq::post(&format!("{}/order", shadow.clob)).timeout(Duration::from_secs(5));
                    for (k, v) in t.l2_headers("POST", "/order", &body) {
                        r = r.set(k, &v);
                    }
                    match r.set("content-type", "application/json").send_string(&body) {
                        Ok(resp) => {
                            let v: Value = resp.into_json().unwrap();
                            acked.lock().unwrap().insert(id, v);
                        }
                        Err(ureq::Error::Status(_, _)) => {}
                        Err(_) => break, // the server is gone
                    }
                }
            }));
        }
        Load { acked, sent, stop, threads }
    }

    /// Waits (up to a minute) until `n` orders in all were acknowledged.
    pub(crate) fn wait_acked(&self, n: usize) {
        let start = Instant::now();
        while self.acked.lock().unwrap().len() < n && start.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the threads; the acknowledged replies by order id, and every order id sent.
    pub(crate) fn stop(self) -> (BTreeMap<String, Value>, Vec<String>) {
        self.stop.store(true, Ordering::Relaxed);
        for th in self.threads {
            th.join().unwrap();
        }
        let acked = self.acked.lock().unwrap().clone();
        let sent = self.sent.lock().unwrap().clone();
        (acked, sent)
    }
}

/// Every trade the traders took part in, by id (`GET /data/trades`, every page).
pub(crate) fn all_trades(s: &Server, traders: &[Arc<Trader>]) -> HashMap<String, Value> {
    let mut all: HashMap<String, Value> = HashMap::new();
    for t in traders {
        let mut cursor = String::from("MA==");
        loop {
            let (st, page) = t.l2(s, "GET", &format!("/data/trades?next_cursor={cursor}"), None);
            assert_eq!(st, 200);
            for tr in page["data"].as_array().unwrap() {
                all.insert(tr["id"].as_str().unwrap().to_string(), tr.clone());
            }
            cursor = page["next_cursor"].as_str().unwrap().to_string();
            if cursor == "LTE=" {
                break;
            }
        }
    }
    all
}

/// The order ID the server derives from the order's EIP-712 hash.
fn order_id(s: &Server, o: &Value) -> String {
    use alloy_primitives::U256;
    let u = |k: &str| U256::from_str_radix(o[k].as_str().unwrap(), 10).unwrap();
    let f = predex::auth::SignedOrderFields {
        salt: U256::from(o["salt"].as_u64().unwrap()),
        maker: o["maker"].as_str().unwrap().parse().unwrap(),
        signer: o["signer"].as_str().unwrap().parse().unwrap(),
        taker: o["taker"].as_str().unwrap().parse().unwrap(),
        token_id: u("tokenId"),
        maker_amount: u("makerAmount"),
        taker_amount: u("takerAmount"),
        expiration: u("expiration"),
        nonce: u("nonce"),
        fee_rate_bps: u("feeRateBps"),
        side: if o["side"] == "BUY" { 0 } else { 1 },
        signature_type: 0,
    };
    let h = predex::auth::order_hash(&f, &s.domains().standard);
    uuid::Builder::from_custom_bytes(h.0[..16].try_into().unwrap()).into_uuid().to_string()
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Under systemd (Type=notify): READY=1 once listening, WATCHDOG=1 at half WatchdogSec while
/// the engine answers, STOPPING=1 on SIGTERM, then a clean exit.
#[test]
fn tells_systemd_ready_watchdog_and_stopping() {
    use std::os::unix::net::UnixDatagram;
    let dir = tempfile::tempdir().unwrap();
    let sock_path = dir.path().join("notify.sock");
    let sock = UnixDatagram::bind(&sock_path).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let data = dir.path().join("data");
    let mut p =
        spawn_with(&data, &[("NOTIFY_SOCKET", sock_path.display().to_string()), ("WATCHDOG_USEC", "200000".into())]);
    let mut buf = [0u8; 256];
    let mut recv = || {
        let n = sock.recv(&mut buf).expect("a notification");
        String::from_utf8_lossy(&buf[..n]).trim().to_string()
    };
    assert_eq!(recv(), "READY=1", "ready comes first, after the listeners are bound");
    assert!(p.server.get("/ok").0 == 200);
    for _ in 0..3 {
        assert_eq!(recv(), "WATCHDOG=1");
    }
    let pid = p.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let mut seen = recv();
    while seen == "WATCHDOG=1" {
        seen = recv();
    }
    assert_eq!(seen, "STOPPING=1");
    assert!(p.child.wait().unwrap().success());
}
