//! The `predex` binary as a child process, and clients trading against it from threads.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::*;

pub(crate) struct Proc {
    pub(crate) child: Child,
    pub(crate) server: Server,
    /// The server wrote its log files ahead at start (its default), so the writes before a
    /// kill went into reused log files.
    pub(crate) logs_ahead: bool,
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
    server.catalogue = format!("http://{}", addrs["catalogue"]);
    Proc { child, server, logs_ahead }
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
