//! The real server in-process on ephemeral ports in a temp dir, and the plain requests a
//! test sends it.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use predex::auth::OrderDomains;
use predex::config::Config;
use serde_json::{json, Value};

use super::*;

pub const YES: &str = "1001";
pub const NO: &str = "1002";
pub const COND: &str = "0xc0ffee";

/// A running server; dropping it shuts it down.
pub struct Server {
    pub clob: String,
    pub internal: String,
    /// Catalogue, analytics and bridge servers.
    pub catalogue: String,
    pub analytics: String,
    pub bridge: String,
    pub config: Config,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    _dir: Option<tempfile::TempDir>,
}

pub fn test_config(dir: &Path) -> Config {
    Config {
        data_dir: dir.to_path_buf(),
        // 128 MB written at each of the suite's many starts; the crash tests, which start
        // the binary with its defaults, keep them.
        wal_logs_ahead: 0,
        clob_addr: "127.0.0.1:0".parse().unwrap(),
        catalogue_addr: "127.0.0.1:0".parse().unwrap(),
        analytics_addr: "127.0.0.1:0".parse().unwrap(),
        bridge_addr: "127.0.0.1:0".parse().unwrap(),
        internal_addr: "127.0.0.1:0".parse().unwrap(),
        catalogue: PathBuf::from("/nonexistent"),
        // Tests settle explicitly (`Server::settle`) so trade states are deterministic;
        // the worker's own test shortens this.
        settlement_interval_ms: 3_600_000,
        // The limiter runs on every request, far above what a test sends.
        rate_limit_max: u32::MAX,
        ..Config::default()
    }
}

impl Server {
    /// A fresh server with one binary market (YES/NO, tick 0.01, min size 5).
    pub fn start() -> Server {
        Server::start_tuned(|_| {})
    }

    /// [`Server::start`] with some settings changed.
    pub fn start_tuned(tune: impl FnOnce(&mut Config)) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let mut c = test_config(dir.path());
        tune(&mut c);
        let mut s = Server::start_with(c);
        s._dir = Some(dir);
        s.create_market(COND, YES, NO, "0.01", false);
        s
    }

    /// A handle on a server run elsewhere (a child process): no lifecycle of its own.
    pub fn external(clob: String, internal: String, config: Config) -> Server {
        let none = String::new();
        Server {
            clob,
            internal,
            catalogue: none.clone(),
            analytics: none.clone(),
            bridge: none,
            config,
            stop: None,
            thread: None,
            _dir: None,
        }
    }

    pub fn start_with(config: Config) -> Server {
        let (tx, rx) = mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let c = config.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
            rt.block_on(async move {
                let app = predex::App::start(c).await.expect("server starts");
                tx.send(app.bound).unwrap();
                let _ = stop_rx.await;
                app.shutdown().await;
            });
        });
        let bound = rx.recv_timeout(Duration::from_secs(60)).expect("server bound");
        Server {
            clob: format!("http://{}", bound.clob),
            internal: format!("http://{}", bound.internal),
            catalogue: format!("http://{}", bound.catalogue),
            analytics: format!("http://{}", bound.analytics),
            bridge: format!("http://{}", bound.bridge),
            config,
            stop: Some(stop_tx),
            thread: Some(thread),
            _dir: None,
        }
    }

    /// Stops the server and returns its data dir (kept alive) for a restart.
    pub fn stop(mut self) -> (Config, Option<tempfile::TempDir>) {
        self.shutdown();
        (self.config.clone(), self._dir.take())
    }

    fn shutdown(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    pub fn create_market(&self, cond: &str, yes: &str, no: &str, tick: &str, neg_risk: bool) {
        let (st, _) = self.internal_post(
            "/internal/markets",
            &json!({"condition_id": cond, "question": "Will it?", "slug": "will-it",
                "tokens": [{"token_id": yes, "outcome": "Yes"}, {"token_id": no, "outcome": "No"}],
                "tick_size": tick, "min_order_size": "5", "neg_risk": neg_risk}),
        );
        assert_eq!(st, 200);
    }

    /// The internal server's bearer token, as `predex admin` reads it.
    pub fn internal_token(&self) -> String {
        predex::keyfile::internal_token(&self.config.internal_token_path(), false).expect("the internal token")
    }

    /// A request to the internal server carrying its token.
    pub fn internal_request(&self, method: &str, path: &str) -> ureq::Request {
        ureq::request(method, &format!("{}{}", self.internal, path))
            .set("authorization", &format!("Bearer {}", self.internal_token()))
    }

    pub fn internal_post(&self, path: &str, body: &Value) -> (u16, Value) {
        send(self.internal_request("POST", path), Some(body.to_string()))
    }

    pub fn internal_get(&self, path: &str) -> (u16, Value) {
        send(self.internal_request("GET", path), None)
    }

    pub fn catalogue_get(&self, path: &str) -> (u16, Value) {
        send(ureq::get(&format!("{}{}", self.catalogue, path)), None)
    }

    pub fn analytics_get(&self, path: &str) -> (u16, Value) {
        send(ureq::get(&format!("{}{}", self.analytics, path)), None)
    }

    pub fn bridge_get(&self, path: &str) -> (u16, Value) {
        send(ureq::get(&format!("{}{}", self.bridge, path)), None)
    }

    pub fn bridge_post(&self, path: &str, body: &Value) -> (u16, Value) {
        send(ureq::post(&format!("{}{}", self.bridge, path)), Some(body.to_string()))
    }

    pub fn get(&self, path: &str) -> (u16, Value) {
        send(ureq::get(&format!("{}{}", self.clob, path)), None)
    }

    pub fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        send(ureq::post(&format!("{}{}", self.clob, path)), Some(body.to_string()))
    }

    pub fn credit(&self, address: &str, asset: &str, amount: u64) {
        let (st, b) = self.internal_post(
            "/internal/ledger/credit",
            &json!({"address": address, "asset": asset, "amount": amount.to_string()}),
        );
        assert_eq!(st, 200, "{b}");
    }

    pub fn invite(&self, email: &str) -> String {
        let (st, b) = self.internal_post("/internal/waitlist/approve", &json!({ "email": email }));
        assert_eq!(st, 200, "{b}");
        b["code"].as_str().unwrap().to_string()
    }

    /// Settles every PENDING trade now; returns (confirmed, failed).
    pub fn settle(&self) -> (u64, u64) {
        let (st, b) = self.internal_post("/internal/settle", &json!({}));
        assert_eq!(st, 200, "{b}");
        (b["confirmed"].as_u64().unwrap(), b["failed"].as_u64().unwrap())
    }

    /// Engine invariants (books never crossed, reservations match open orders).
    pub fn check(&self) {
        let (st, b) = self.internal_get("/internal/check");
        assert_eq!(st, 200, "invariants: {b}");
    }

    /// A trader with an API key and `usdc` collateral.
    pub fn trader(&self, usdc: u64) -> Trader {
        let mut t = Trader::new();
        let code = self.invite(&format!("{}@example.com", &t.address[2..10]));
        let (st, b) = t.l1(self, "POST", "/auth/api-key", 0, Some(&code));
        assert_eq!(st, 200, "{b}");
        t.set_creds(&b);
        if usdc > 0 {
            self.credit(&t.address, "USDC", usdc);
        }
        t
    }

    pub fn domains(&self) -> OrderDomains {
        self.config.order_domains().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Sends a request and returns (status, JSON body); non-JSON bodies come back as a string.
pub fn send(req: ureq::Request, body: Option<String>) -> (u16, Value) {
    let r = match body {
        Some(b) => req.set("content-type", "application/json").send_string(&b),
        None => req.call(),
    };
    let resp = match r {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("transport: {e}"),
    };
    let st = resp.status();
    let text = resp.into_string().unwrap();
    (st, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

/// An L2-signed request to the order-book server with extra headers; a raw body (sent
/// when not empty, and always on POST).
pub fn l2_with(t: &Trader, s: &Server, method: &str, path: &str, body: &str, extra: &[(&str, &str)]) -> (u16, Value) {
    let mut r = ureq::request(method, &format!("{}{path}", s.clob));
    for (k, v) in t.l2_headers(method, path, body) {
        r = r.set(k, &v);
    }
    for (k, v) in extra {
        r = r.set(k, v);
    }
    send(r, if body.is_empty() && method != "POST" { None } else { Some(body.to_string()) })
}

/// Polls `f` every 50 ms until it returns Some, for at most `secs` seconds.
pub fn wait_for<T>(secs: u64, mut f: impl FnMut() -> Option<T>) -> T {
    let end = std::time::Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(std::time::Instant::now() < end, "condition not reached in {secs} s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sends `bytes` as they are on a fresh connection to `base` (a server's URL) and reads one
/// reply: (status, JSON body, or Null when the body is not JSON).
pub fn raw_request(base: &str, bytes: &[u8]) -> (u16, Value) {
    use std::io::Write;
    let mut c = std::net::TcpStream::connect(base.trim_start_matches("http://")).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(bytes).unwrap();
    read_reply(&mut c).expect("a whole reply")
}

/// Reads one HTTP/1.1 reply with a `Content-Length` from `c`: (status, JSON body, or Null
/// when the body is not JSON); None when the connection fails or ends before a whole one.
pub fn read_reply(c: &mut impl std::io::Read) -> Option<(u16, Value)> {
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&got).to_string();
        if let Some((headers, body)) = text.split_once("\r\n\r\n") {
            let len = headers
                .lines()
                .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_string()))
                .map(|v| v.parse::<usize>().unwrap())
                .unwrap_or(0);
            if body.len() >= len {
                let status = headers.split(' ').nth(1).unwrap().parse().unwrap();
                return Some((status, serde_json::from_str(&body[..len]).unwrap_or(Value::Null)));
            }
        }
        match c.read(&mut chunk) {
            Ok(n) if n > 0 => got.extend_from_slice(&chunk[..n]),
            _ => return None,
        }
    }
}

/// (status, error message) of an error response.
pub fn err(r: (u16, Value)) -> (u16, String) {
    (r.0, r.1["error"].as_str().unwrap_or_default().to_string())
}

pub fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

/// `ts`, or a later second when the same request of the same key was signed at `ts` or
/// after: the server serves one signature of a state-changing request once (a second
/// identical request in one second is a replay to it), and the tests that repeat an
/// operation on purpose mean two requests, as a client that waits a second does.
pub(crate) fn fresh_timestamp(key: &str, method: &str, path: &str, body: &str, ts: i64) -> i64 {
    static SIGNED: std::sync::Mutex<Option<std::collections::HashMap<String, i64>>> = std::sync::Mutex::new(None);
    let mut signed = SIGNED.lock().unwrap_or_else(|e| e.into_inner());
    let last = signed.get_or_insert_with(Default::default).entry(format!("{key} {method} {path} {body}")).or_insert(0);
    // Only a recent repeat is moved (a drift test's skewed timestamp is kept).
    *last = if (ts..ts + 25).contains(last) { *last + 1 } else { ts };
    *last
}

/// Micro-units of a decimal.
pub fn m(x: &str) -> u64 {
    predex::domain::parse_decimal(x, 6).unwrap()
}

/// A book summary's hash as the official clients compute it to check the book they hold
/// (py-clob-client's `generate_orderbook_summary_hash`): SHA-1 over the compact JSON of
/// the summary's fields in the server's order, `hash` set empty, values as received.
pub fn client_book_hash(b: &Value) -> String {
    use sha1::Digest;
    let levels = |side: &str| -> Vec<Value> {
        b[side].as_array().unwrap().iter().map(|l| json!({"price": l["price"], "size": l["size"]})).collect()
    };
    let f = |v: &Value| serde_json::to_string(v).unwrap();
    let payload = format!(
        r#"{{"market":{},"asset_id":{},"timestamp":{},"hash":"","bids":{},"asks":{},"min_order_size":{},"tick_size":{},"neg_risk":{},"last_trade_price":{}}}"#,
        f(&b["market"]),
        f(&b["asset_id"]),
        f(&b["timestamp"]),
        f(&json!(levels("bids"))),
        f(&json!(levels("asks"))),
        f(&b["min_order_size"]),
        f(&b["tick_size"]),
        f(&b["neg_risk"]),
        f(&b["last_trade_price"]),
    );
    alloy_primitives::hex::encode(sha1::Sha1::digest(payload.as_bytes()))
}
