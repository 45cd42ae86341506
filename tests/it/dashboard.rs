//! The operator's dashboard in a real browser: Debian's chromium, headless, driven by
//! playwright-core (`tests/browser/dashboard.mjs`; `scripts/setup.sh` installs both),
//! against a real predex with the demo catalogue and trades flowing. Screenshots of each
//! view go to `target/dashboard/`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};

use crate::support::*;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The browser driver: one JSON command a line, one JSON answer a line.
struct Browser {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Browser {
    fn start() -> Browser {
        assert!(Path::new("/usr/bin/chromium").exists(), "chromium is missing: run scripts/setup.sh");
        assert!(
            root().join("tools/node_modules/playwright-core").exists(),
            "playwright-core is missing: run scripts/setup.sh"
        );
        let mut child = Command::new("node")
            .arg(root().join("tests/browser/dashboard.mjs"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("node starts");
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        Browser { child, input, output }
    }

    fn try_cmd(&mut self, c: Value) -> Result<Value, String> {
        writeln!(self.input, "{c}").unwrap();
        let mut line = String::new();
        self.output.read_line(&mut line).unwrap();
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|_| panic!("driver answered {line:?} to {c}"));
        if v["ok"] == true {
            Ok(v["value"].clone())
        } else {
            Err(v["error"].as_str().unwrap_or_default().to_string())
        }
    }

    fn cmd(&mut self, c: Value) -> Value {
        let what = c.to_string();
        self.try_cmd(c).unwrap_or_else(|e| panic!("{what}: {e}"))
    }

    fn shot(&mut self, name: &str, full: bool) {
        let path = shots().join(format!("{name}.png"));
        self.cmd(json!({"cmd": "shot", "path": path, "full": full}));
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.try_cmd(json!({"cmd": "close"}));
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn shots() -> PathBuf {
    let d = root().join("target/dashboard");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A price as the page shows it ("0.55", "–") and as Gamma gives it (0.55, null) agree.
fn same_price(page: &str, gamma: &Value) -> bool {
    match gamma.as_f64() {
        None => page == "–",
        Some(g) => page.parse::<f64>().is_ok_and(|p| (p - g).abs() < 1e-9),
    }
}

/// The page's markets table against the catalogue's `GET /markets`: the same markets, each
/// with its question and YES prices. None when they agree.
fn table_differs(rows: &Value, gamma: &Value) -> Option<String> {
    let (rows, markets) = (rows.as_array().unwrap(), gamma.as_array().unwrap());
    if rows.len() != markets.len() {
        return Some(format!("{} rows, {} markets", rows.len(), markets.len()));
    }
    for m in markets {
        let id = m["conditionId"].as_str().unwrap();
        let Some(r) = rows.iter().find(|r| r["condition_id"] == id) else {
            return Some(format!("{id} missing"));
        };
        let cells: Vec<&str> = r["cells"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
        let agree = cells[0] == m["question"].as_str().unwrap()
            && same_price(cells[1], &m["bestBid"])
            && same_price(cells[2], &m["bestAsk"])
            && same_price(cells[3], &m["lastTradePrice"]);
        if !agree {
            return Some(format!("{id}: page {cells:?}, catalogue {m}"));
        }
    }
    None
}

#[test]
fn the_dashboard_in_a_real_browser() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = test_config(dir.path());
    c.catalogue = root().join("data/markets.json");
    // An event stream whose server is away: its panel shows the events waiting.
    let nats = format!("nats://{}", std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap());
    c.events_to = Some(nats.clone());
    let s = Arc::new(Server::start_with(c));
    let demo: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("data/markets.json")).unwrap()).unwrap();
    let token = |m: usize, o: usize| demo[m]["tokens"][o]["token_id"].as_str().unwrap().to_string();
    let (cond_a, yes_a, yes_b) = (demo[0]["condition_id"].as_str().unwrap().to_string(), token(0, 0), token(1, 0));

    let (flowing, flow) = trades_flow_on_the_second_market_all_along(&s, &yes_b);
    // A resting bid on the first market, for its depth chart.
    let maker = s.trader(1_000_000_000);
    maker.place(&s, &yes_a, "BUY", "0.40", "25");

    let mut b = Browser::start();
    // The login link `predex admin dashboard-url` prints: the token in the fragment.
    let page = format!("{}/dashboard#token={}", s.internal, s.internal_token());
    b.cmd(json!({"cmd": "open", "url": page, "width": 1280, "height": 800}));
    the_markets_table_is_the_catalogue_and_the_stream_panel_shows_events_waiting(&mut b, &s, &nats);
    let t2 = a_trade_made_over_http_appears_on_the_page(&mut b, &s, &cond_a, &yes_a);
    cancel_only_from_the_page_and_back_by_keyboard(&mut b, &s, &t2, &yes_a);
    the_rate_limit_from_its_form(&mut b, &s);
    every_control_is_labelled_and_a_phone_needs_no_sideways_scrolling(&mut b);

    flowing.store(false, Ordering::Relaxed);
    let trades = flow.join().unwrap();
    assert!(trades > 0, "trades flowed meanwhile");
    // No console error, page error or failed request, all along.
    assert_eq!(b.cmd(json!({"cmd": "errors"})), json!([]));
    drop(b);
    s.check();
}

/// A seller and a buyer crossing at 0.50 (refused while the platform is cancel-only, like
/// any order) until told to stop; the thread returns the trades made.
fn trades_flow_on_the_second_market_all_along(
    s: &Arc<Server>,
    yes_b: &str,
) -> (Arc<AtomicBool>, std::thread::JoinHandle<usize>) {
    let (seller, buyer) = (s.trader(0), s.trader(1_000_000_000));
    s.credit(&seller.address, yes_b, 1_000_000_000);
    let flowing = Arc::new(AtomicBool::new(true));
    let flow = {
        let (s, flowing, yes_b) = (s.clone(), flowing.clone(), yes_b.to_string());
        std::thread::spawn(move || {
            let mut trades = 0;
            while flowing.load(Ordering::Relaxed) {
                let sold = seller.submit(&s, seller.order(&s, &yes_b, "SELL", "0.50", "5"), "GTC").0 == 200;
                if sold && buyer.submit(&s, buyer.order(&s, &yes_b, "BUY", "0.50", "5"), "GTC").0 == 200 {
                    trades += 1;
                }
                std::thread::sleep(std::time::Duration::from_millis(150));
            }
            trades
        })
    };
    (flowing, flow)
}

/// The table is the catalogue's GET /markets (the page refreshes every 2 s).
fn the_markets_table_is_the_catalogue_and_the_stream_panel_shows_events_waiting(
    b: &mut Browser,
    s: &Server,
    nats: &str,
) {
    let mut last = String::new();
    let agreed = (0..40).any(|_| {
        let rows = b.cmd(json!({"cmd": "rows"}));
        let (st, gamma) = s.catalogue_get("/markets?limit=100");
        assert_eq!(st, 200);
        match table_differs(&rows, &gamma) {
            None => true,
            Some(d) => {
                last = d;
                std::thread::sleep(std::time::Duration::from_millis(250));
                false
            }
        }
    });
    assert!(agreed, "the markets table never matched GET /markets: {last}");
    b.cmd(json!({"cmd": "charts"}));
    let stream = b.cmd(json!({"cmd": "stream"}));
    assert_eq!(stream["events-to"], format!("{nats} (not connected)"), "{stream}");
    assert!(stream["events-acked"].as_str().unwrap().starts_with("0 of "), "{stream}");
    b.shot("1-overview-1280x800", false);
    b.shot("2-overview-full-page", true);
}

/// Within ten seconds; the feed's frame and the overview agree on the market's last price.
/// Returns the buyer.
fn a_trade_made_over_http_appears_on_the_page(b: &mut Browser, s: &Server, cond_a: &str, yes_a: &str) -> Trader {
    b.cmd(json!({"cmd": "select", "market": cond_a}));
    let depth = b.cmd(json!({"cmd": "depth"}));
    assert!(depth["label"].as_str().unwrap().contains("1 bid levels up to 0.4"), "{depth}");
    let (t1, t2) = (s.trader(0), s.trader(1_000_000_000));
    s.credit(&t1.address, yes_a, 100_000_000);
    t1.place(s, yes_a, "SELL", "0.55", "12");
    t2.place(s, yes_a, "BUY", "0.55", "12");
    let seen = b.cmd(json!({"cmd": "trade", "price": "0.55", "size": "12", "timeoutMs": 10_000}));
    // The feed's frame and the overview agree on the market's last price.
    wait_for(10, || {
        let rows = b.cmd(json!({"cmd": "rows"}));
        let row = rows.as_array().unwrap().iter().find(|r| r["condition_id"] == cond_a).cloned().unwrap();
        (row["cells"][3] == "0.55" && row["cells"][5] == "1").then_some(())
    });
    eprintln!("trade on the page after {} ms", seen["ms"]);
    b.shot("3-book-and-trades", true);
    t2
}

/// With its confirmation: the next POST /order is 503; back to normal with the keyboard
/// alone, and orders are taken again.
fn cancel_only_from_the_page_and_back_by_keyboard(b: &mut Browser, s: &Server, t2: &Trader, yes_a: &str) {
    let confirm = shots().join("4-confirm-cancel-only.png");
    let pressed = b.cmd(json!({"cmd": "mode", "mode": "cancel-only", "shot": confirm}));
    assert_eq!(pressed["pressed"], "true");
    let (st, body) = t2.submit(s, t2.order(s, yes_a, "BUY", "0.30", "5"), "GTC");
    assert_eq!(st, 503, "{body}");
    assert_eq!(s.internal_get("/internal/mode").1["mode"], "cancel-only");
    b.shot("5-cancel-only", false);
    b.cmd(json!({"cmd": "keyboard_mode", "mode": "normal"}));
    let (st, body) = t2.submit(s, t2.order(s, yes_a, "BUY", "0.30", "5"), "GTC");
    assert_eq!(st, 200, "{body}");
}

fn the_rate_limit_from_its_form(b: &mut Browser, s: &Server) {
    let r = b.cmd(json!({"cmd": "limit", "max": 100_000, "window": 30}));
    assert!(r["result"].as_str().unwrap().starts_with("Applied"), "{r}");
    assert_eq!(s.internal_get("/internal/rate-limit").1, json!({"maxRequests": 100_000, "windowSecs": 30}));
}

fn every_control_is_labelled_and_a_phone_needs_no_sideways_scrolling(b: &mut Browser) {
    assert_eq!(b.cmd(json!({"cmd": "unlabelled"})), json!([]));
    b.cmd(json!({"cmd": "viewport", "width": 390, "height": 844}));
    b.shot("6-phone-390", true);
    let o = b.cmd(json!({"cmd": "overflow"}));
    assert_eq!(o["wider"], false, "wider than a phone: {o}");
}

/// A page elsewhere cannot make an operator's browser change predex: a request that
/// changes something and names another origin is refused, and changes nothing.
#[test]
fn the_internal_server_refuses_cross_origin_changes() {
    let s = Server::start();
    let host = s.internal.trim_start_matches("http://").to_string();
    let post = |origin: Option<&str>| {
        let mut r = s.internal_request("POST", "/internal/mode");
        if let Some(o) = origin {
            r = r.set("origin", o);
        }
        send(r, Some(json!({"mode": "trading-disabled"}).to_string()))
    };
    assert_eq!(err(post(Some("http://evil.example"))), (403, "cross-origin request refused".into()));
    assert_eq!(err(post(Some("null"))).0, 403);
    assert_eq!(err(post(Some(&format!("https://{host}")))).0, 403);
    assert_eq!(s.internal_get("/internal/mode").1["mode"], "normal");
    // The page itself (same origin), and tools that send no Origin, are served.
    assert_eq!(post(Some(&format!("http://{host}"))).0, 200);
    assert_eq!(s.internal_get("/internal/mode").1["mode"], "trading-disabled");
    assert_eq!(s.internal_post("/internal/mode", &json!({"mode": "normal"})).0, 200);
    // Reading is not a change: the page and its data load from anywhere the server is reached.
    let page = ureq::get(&format!("{}/", s.internal)).set("origin", "http://evil.example").call().unwrap();
    assert!(page.header("content-security-policy").unwrap().contains("default-src 'none'"));
    assert!(page.into_string().unwrap().contains("operator console"));
    let (st, o) = s.internal_get("/internal/overview");
    assert_eq!(st, 200);
    assert_eq!(o["markets"][0]["condition_id"], COND);
    assert_eq!(o["settlement"]["settles"], "ledger");
    assert_eq!(s.internal_get("/internal/trades?market=0xnope").0, 404);
    assert_eq!(s.internal_get("/internal/trades").0, 400);
}

/// The overview's 24-hour volume is the notional of the market's trades, kept up to date
/// read after read; its recent trades are the newest first, in YES terms.
#[test]
fn the_overview_counts_the_days_volume_and_lists_the_newest_trades() {
    let s = Server::start();
    let (a, b) = (s.trader(m("1000")), s.trader(m("1000")));
    s.credit(&a.address, YES, m("1000"));
    let volume = || {
        let (st, o) = s.internal_get("/internal/overview");
        assert_eq!(st, 200, "{o}");
        let row = o["markets"].as_array().unwrap().iter().find(|r| r["condition_id"] == COND).cloned().unwrap();
        m(row["volume_24h"].as_str().unwrap())
    };
    assert_eq!(volume(), 0);
    a.place(&s, YES, "SELL", "0.40", "10");
    b.place(&s, YES, "BUY", "0.40", "10");
    assert_eq!(volume(), m("4"));
    a.place(&s, YES, "SELL", "0.55", "20");
    b.place(&s, YES, "BUY", "0.55", "20");
    // A NO trade at 0.30 is a YES trade at 0.70; its notional is the NO price's.
    s.credit(&a.address, NO, m("100"));
    a.place(&s, NO, "SELL", "0.30", "10");
    b.place(&s, NO, "BUY", "0.30", "10");
    assert_eq!(volume(), m("4") + m("11") + m("3"));
    let (st, trades) = s.internal_get(&format!("/internal/trades?market={COND}"));
    assert_eq!(st, 200, "{trades}");
    let got: Vec<(&str, &str)> = trades
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["price"].as_str().unwrap(), t["size"].as_str().unwrap()))
        .collect();
    assert_eq!(got, [("0.7", "10"), ("0.55", "20"), ("0.4", "10")]);
}
