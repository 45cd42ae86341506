//! predex-loadgen: drives signed order flow at a predex CLOB over HTTP and measures it next to
//! the machine's ceilings.
//!
//! Phases, each over the same pre-signed corpus shape, one HTTP/1.1 keep-alive connection
//! per client:
//!
//! 1. `ceiling-parse`: closed loop against a bare warp endpoint that only parses the order
//!    JSON (same request filter and body types as predex).
//! 2. `ceiling-crypto`: the same plus L2 HMAC verification and EIP-712 signer recovery.
//! 3. `ceiling-sync`: no requests — one thread appends [`SYNC_BYTES`] to a fresh file in the
//!    temporary directory (where the in-process server keeps its store) and `fdatasync`s it,
//!    again and again: the disk's own price for one durable write, which every predex
//!    acknowledgement pays once per group. Its latencies are read beside the persister's.
//! 4. `predex-orders`: closed loop of signed POST /order (resting and crossing orders over
//!    many markets and API keys) against predex, every reply durable (synced) before it is
//!    sent — the throughput figure, comparable with the ceilings.
//! 5. `predex-open`: open loop at `--rate` orders/s with cancels of acknowledged resting
//!    orders mixed in — the latency figure. Latency is measured from each request's
//!    scheduled send time, so a stalled server is charged for the requests it held back
//!    (no coordinated omission).
//!
//! With `--subscribers N`, N WebSocket connections subscribe to the first market's YES
//! token on `/ws/market` during the predex phases and record, per frame, the time from the
//! change becoming durable (`published_us`) to its receipt — the feed's delivery latency —
//! while the order figures show what the subscribers cost. Then `ceiling-fanout`: the same
//! subscribers connect to a bare writer that sends one pre-encoded frame to every socket
//! (one thread per core, a blocking write each) as often as predex's feed sent one — the
//! delivery floor of this machine, for the ratio `feed_p99_over_fanout_ceiling_p99`.
//!
//! Latencies go into HDR histograms (µs, 3 significant digits); the summary is printed and
//! written as JSON (`--out`). Without `--clob`, a predex server is started in this process
//! on a fresh temporary data directory (the ceilings always run in-process).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use alloy_primitives::{Address, U256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use anyhow::{bail, Context};
use bytes::Bytes;
use clap::Parser;
use hdrhistogram::Histogram;
use predex::api::ceiling::{self, Ceiling, KeySecret};
use predex::auth::{self, OrderDomains, SignedOrderFields};
use predex::config::Config;
// In-process, the server's threads are this process's: a phase's CPU covers them and
// the clients alike.
use predex::commit::persister::SLOW_SYNC_MICROS;
use predex::metrics::{process_cpu_s, threads_cpu_s, USER_HZ};
use serde_json::{json, Value};
use tokio::sync::watch;

#[derive(Parser, Debug, Clone)]
#[command(name = "predex-loadgen", about = "Load generator for the predex CLOB, with machine ceilings")]
struct Args {
    /// CLOB server address (host:port) of a running predex; default: start one in-process.
    #[arg(long, requires = "internal")]
    clob: Option<SocketAddr>,
    /// Internal server address of that predex (markets, credits, invitations).
    #[arg(long)]
    internal: Option<SocketAddr>,
    /// API keys (each with its own wallet) the flow is spread over.
    #[arg(long, default_value_t = 32)]
    keys: usize,
    /// Binary markets the flow is spread over.
    #[arg(long, default_value_t = 16)]
    markets: usize,
    /// Connections (= requests in flight) of the closed-loop phases and of the open loop.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// POST /order per second offered in the open-loop phase (cancels come on top); 0 skips it.
    #[arg(long, default_value_t = 5000)]
    rate: u64,
    /// Seconds measured per phase (after the warm-up).
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Seconds per phase before measuring starts.
    #[arg(long, default_value_t = 2.0)]
    warmup: f64,
    /// Percent of orders that cross the spread (FAK) instead of resting (GTC).
    #[arg(long, default_value_t = 10)]
    cross_pct: u64,
    /// Percent of the API keys whose orders name a proxy wallet as maker (signature type 2,
    /// the key's wallet signing), as most of Polymarket's users trade; the proxy holds the
    /// key's funds.
    #[arg(long, default_value_t = 0)]
    proxy_pct: u64,
    /// Open loop: percent of requests that cancel an acknowledged resting order.
    #[arg(long, default_value_t = 20)]
    cancel_pct: u64,
    /// Closed-loop corpus size, in orders/s the server might reach (orders are pre-signed).
    #[arg(long, default_value_t = 25_000)]
    max_rate: u64,
    /// WebSocket subscribers to the first market during the predex phases (0: none).
    #[arg(long, default_value_t = 0)]
    subscribers: usize,
    /// Feed runtime threads of the in-process predex (`--ws-threads` of `predex serve`).
    #[arg(long, default_value_t = 1)]
    ws_threads: usize,
    /// Log files written ahead by the in-process predex (`--wal-logs-ahead` of `predex
    /// serve`; 0 = off).
    #[arg(long, default_value_t = Config::default().wal_logs_ahead)]
    wal_logs_ahead: usize,
    /// Skip the ceiling phases.
    #[arg(long)]
    no_ceilings: bool,
    /// Skip the closed-loop predex phase.
    #[arg(long)]
    no_closed: bool,
    /// With subscribers: skip the fan-out ceiling (a bare writer of pre-encoded frames to
    /// as many sockets, at the rate the predex feed had).
    #[arg(long)]
    no_fanout_ceiling: bool,
    /// Where the JSON summary goes.
    #[arg(long, default_value = "target/loadgen.json")]
    out: PathBuf,
}

// ------------------------------------------------------------------------------- HTTP

use predex::client::{call, Conn};

// ------------------------------------------------------------------------------ setup

#[derive(Clone)]
struct Key {
    wallet: PrivateKeySigner,
    address: String,
    /// The maker its orders name: its wallet, or the proxy wallet it signs for.
    maker: Address,
    key: String,
    secret: String,
    passphrase: String,
}

impl Key {
    fn l2(&self, method: &str, path: &str, body: &[u8]) -> Vec<(&'static str, String)> {
        let c = auth::L2Creds {
            address: &self.address,
            api_key: &self.key,
            secret: &self.secret,
            passphrase: &self.passphrase,
        };
        let body = std::str::from_utf8(body).unwrap_or("");
        auth::l2_headers(&c, predex::domain::now_secs() as i64, method, path, body)
    }
}

fn token(market: usize, yes: bool) -> String {
    (7_000_000 + 2 * market as u64 + u64::from(!yes)).to_string()
}

async fn setup(clob: SocketAddr, internal: SocketAddr, args: &Args, chain_id: u64) -> anyhow::Result<Vec<Key>> {
    for m in 0..args.markets {
        let (st, b) = call(
            internal,
            "POST",
            "/internal/markets",
            &[],
            Some(json!({"condition_id": format!("0x{:064x}", 0x10ad_0000 + m), "question": format!("Load market {m}?"),
                "slug": format!("load-{m}"),
                "tokens": [{"token_id": token(m, true), "outcome": "Yes"}, {"token_id": token(m, false), "outcome": "No"}],
                "tick_size": "0.01", "min_order_size": "5", "neg_risk": false})),
        )
        .await;
        if st != 200 && st != 409 {
            bail!("create market {m}: {st} {b}");
        }
    }
    let mut keys = Vec::new();
    for i in 0..args.keys {
        let wallet = PrivateKeySigner::random();
        let address = format!("{:#x}", wallet.address());
        let (st, b) = call(
            internal,
            "POST",
            "/internal/waitlist/approve",
            &[],
            Some(json!({"email": format!("load{i}@example.com")})),
        )
        .await;
        let code = b["code"].as_str().with_context(|| format!("invitation: {st} {b}"))?.to_string();
        let ts = predex::domain::now_secs().to_string();
        let h = auth::eip712::clob_auth_hash(chain_id, wallet.address(), &ts, U256::ZERO, auth::CLOB_AUTH_MESSAGE);
        let sig = format!("0x{}", alloy_primitives::hex::encode(wallet.sign_hash_sync(&h)?.as_bytes()));
        let headers = [
            ("SERVICE_ADDRESS", address.clone()),
            ("SERVICE_SIGNATURE", sig),
            ("SERVICE_TIMESTAMP", ts),
            ("SERVICE_NONCE", "0".to_string()),
            ("SERVICE_INVITATION_CODE", code),
        ];
        let (st, b) = call(clob, "POST", "/auth/api-key", &headers, None).await;
        if st != 200 {
            bail!("create API key: {st} {b}");
        }
        let s = |f: &str| b[f].as_str().unwrap_or_default().to_string();
        // The first `proxy_pct`% of the keys trade through a proxy: an address of their
        // own, derived from the wallet's (a stand-in for the proxy factory's).
        let maker = match (i as u64 * 100) < args.proxy_pct * args.keys as u64 {
            true => Address::from_slice(&alloy_primitives::keccak256(wallet.address())[12..]),
            false => wallet.address(),
        };
        let mut credits = vec![("USDC".to_string(), 1_000_000_000_000u64)];
        credits.extend((0..args.markets).map(|m| (token(m, true), 1_000_000_000_000)));
        for (asset, amount) in credits {
            let (st, b) = call(
                internal,
                "POST",
                "/internal/ledger/credit",
                &[],
                Some(json!({"address": format!("{maker:#x}"), "asset": asset, "amount": amount.to_string()})),
            )
            .await;
            if st != 200 {
                bail!("credit: {st} {b}");
            }
        }
        keys.push(Key { wallet, address, maker, key: s("apiKey"), secret: s("secret"), passphrase: s("passphrase") });
    }
    Ok(keys)
}

// ----------------------------------------------------------------------------- corpus

/// A pre-signed POST /order body.
#[derive(Clone)]
struct Signed {
    body: Bytes,
    id: String,
    rests: bool,
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// `n` orders for one connection (its key `k`): resting bids 0.40–0.49 and asks 0.51–0.60 on
/// YES, and `cross_pct`% FAK orders at 0.60 (buy) or 0.40 (sell) that take from them.
fn corpus(key: &Key, n: usize, seed: u64, args: &Args, domains: &OrderDomains) -> Vec<Signed> {
    let mut rng = Rng(seed | 1);
    let mut out = Vec::with_capacity(n);
    let sig_type: u8 = if key.maker == key.wallet.address() { 0 } else { 2 };
    for _ in 0..n {
        let m = (rng.next() % args.markets as u64) as usize;
        let buy = rng.next().is_multiple_of(2);
        let cross = rng.next() % 100 < args.cross_pct;
        let price: u64 = match (cross, buy) {
            (true, true) => 6000,
            (true, false) => 4000,
            (false, true) => 4000 + 100 * (rng.next() % 10),
            (false, false) => 5100 + 100 * (rng.next() % 10),
        };
        let size = 1_000_000 * (5 + rng.next() % (if cross { 10 } else { 45 }));
        let cost = size * price / 10_000;
        let (maker_amount, taker_amount) = if buy { (cost, size) } else { (size, cost) };
        let salt = rng.next() >> 12;
        let tok = token(m, true);
        let f = SignedOrderFields {
            salt: U256::from(salt),
            maker: key.maker,
            signer: key.wallet.address(),
            taker: Address::ZERO,
            token_id: U256::from_str_radix(&tok, 10).expect("token id"),
            maker_amount: U256::from(maker_amount),
            taker_amount: U256::from(taker_amount),
            expiration: U256::ZERO,
            nonce: U256::ZERO,
            fee_rate_bps: U256::ZERO,
            side: u8::from(!buy),
            signature_type: sig_type,
        };
        let h = auth::order_hash(&f, &domains.standard);
        let sig = key.wallet.sign_hash_sync(&h).expect("sign");
        let body = json!({
            "order": {
                "salt": salt, "maker": format!("{:#x}", key.maker), "signer": key.address,
                "taker": format!("{:#x}", Address::ZERO), "tokenId": tok,
                "makerAmount": maker_amount.to_string(), "takerAmount": taker_amount.to_string(),
                "expiration": "0", "nonce": "0", "feeRateBps": "0",
                "side": if buy { "BUY" } else { "SELL" }, "signatureType": sig_type,
                "signature": format!("0x{}", alloy_primitives::hex::encode(sig.as_bytes())),
            },
            "owner": key.key,
            "orderType": if cross { "FAK" } else { "GTC" },
        });
        out.push(Signed { body: Bytes::from(body.to_string()), id: auth::order_id(&h).to_string(), rests: !cross });
    }
    out
}

/// Corpora for `conns` connections of `per` orders each, signed on every core.
fn corpora(
    keys: &[Arc<Key>],
    conns: usize,
    per: usize,
    seed: u64,
    args: &Args,
    domains: &OrderDomains,
) -> Vec<Vec<Signed>> {
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
    let mut out: Vec<Option<Vec<Signed>>> = (0..conns).map(|_| None).collect();
    std::thread::scope(|sc| {
        for (t, chunk) in out.chunks_mut(conns.div_ceil(threads)).enumerate() {
            sc.spawn(move || {
                for (j, slot) in chunk.iter_mut().enumerate() {
                    let c = t * conns.div_ceil(threads) + j;
                    *slot =
                        Some(corpus(&keys[c % keys.len()], per, seed ^ ((c as u64 + 1) * 0x9e37_79b9), args, domains));
                }
            });
        }
    });
    out.into_iter().map(|c| c.expect("signed")).collect()
}

// ------------------------------------------------------------------------------- runs

#[derive(Clone, Copy)]
enum Mode {
    Closed,
    Open {
        rate: u64,
    },
    /// No orders: one frame to every subscriber this many times a second.
    Fanout {
        per_sec: f64,
    },
    /// No requests: appends of this many bytes, each synced (the sync ceiling).
    Sync {
        bytes: usize,
    },
}

struct Tally {
    orders: Histogram<u64>,
    cancels: Histogram<u64>,
    /// Completions inside the measured window, by kind.
    orders_done: u64,
    cancels_done: u64,
    statuses: BTreeMap<u16, u64>,
    errors: BTreeMap<String, u64>,
    exhausted: bool,
}

impl Tally {
    fn new() -> Tally {
        let h = || Histogram::new_with_bounds(1, 120_000_000, 3).expect("histogram bounds");
        Tally {
            orders: h(),
            cancels: h(),
            orders_done: 0,
            cancels_done: 0,
            statuses: BTreeMap::new(),
            errors: BTreeMap::new(),
            exhausted: false,
        }
    }
    fn merge(&mut self, o: Tally) {
        self.orders.add(o.orders).expect("same bounds");
        self.cancels.add(o.cancels).expect("same bounds");
        self.orders_done += o.orders_done;
        self.cancels_done += o.cancels_done;
        for (k, v) in o.statuses {
            *self.statuses.entry(k).or_default() += v;
        }
        for (k, v) in o.errors {
            *self.errors.entry(k).or_default() += v;
        }
        self.exhausted |= o.exhausted;
    }
}

struct Client {
    key: Arc<Key>,
    orders: Vec<Signed>,
    next: usize,
    /// Start over at the end of the corpus (the ceilings keep nothing, so repeats are fine).
    cycle: bool,
    resting: VecDeque<String>,
}

impl Client {
    fn next_order(&mut self) -> Option<&Signed> {
        if self.next == self.orders.len() && self.cycle {
            self.next = 0;
        }
        let o = self.orders.get(self.next)?;
        self.next += 1;
        Some(o)
    }
}

#[allow(clippy::too_many_arguments)]
async fn connection(
    addr: SocketAddr,
    mut cl: Client,
    tickets: Option<Tickets>,
    cancel_pct: u64,
    start: Instant,
    warm: Duration,
    end: Duration,
    seed: u64,
) -> Tally {
    let mut t = Tally::new();
    let Ok(mut conn) = Conn::open(addr).await else {
        *t.statuses.entry(0).or_default() += 1;
        return t;
    };
    let mut rng = Rng(seed | 1);
    loop {
        let sent = match &tickets {
            // Open loop: the next scheduled send time, whichever connection is free.
            Some(schedule) => match schedule.lock().await.next().await {
                Some(t) => t,
                None => break,
            },
            None if start.elapsed() >= end => break,
            None => Instant::now(),
        };
        let cancel = cancel_pct > 0 && !cl.resting.is_empty() && rng.next() % 100 < cancel_pct;
        let (status, body, rests_id) = if cancel {
            let id = cl.resting.pop_front().expect("non-empty");
            let body = Bytes::from(json!({ "orderID": id }).to_string());
            let h = cl.key.l2("DELETE", "/order", &body);
            let (st, b) = conn.send("DELETE", "/order", &h, body).await;
            (st, b, None)
        } else {
            let key = cl.key.clone();
            let Some(o) = cl.next_order() else {
                t.exhausted = true;
                break;
            };
            let (body, rests) = (o.body.clone(), o.rests.then(|| o.id.clone()));
            let h = key.l2("POST", "/order", &body);
            let (st, b) = conn.send("POST", "/order", &h, body).await;
            (st, b, rests)
        };
        let done = Instant::now();
        if sent >= start + warm && done <= start + end {
            let us = done.saturating_duration_since(sent).as_micros().max(1) as u64;
            if cancel {
                t.cancels.saturating_record(us);
                t.cancels_done += 1;
            } else {
                t.orders.saturating_record(us);
                t.orders_done += 1;
            }
            *t.statuses.entry(status).or_default() += 1;
            if status != 200 {
                let msg = serde_json::from_slice::<Value>(&body)
                    .ok()
                    .and_then(|v| v["error"].as_str().map(str::to_string))
                    .unwrap_or_else(|| String::from_utf8_lossy(&body).chars().take(80).collect());
                *t.errors.entry(format!("{status} {msg}")).or_default() += 1;
            }
        }
        if status == 0 {
            match Conn::open(addr).await {
                Ok(c) => conn = c,
                Err(_) => break,
            }
        }
        if status == 200 {
            if let Some(id) = rests_id {
                cl.resting.push_back(id);
            }
        }
    }
    t
}

/// Spawns a named thread: the load generator's helpers then stand apart from its client
/// (the main thread) and from the server's threads in a profile by thread name.
fn named<T: Send + 'static>(name: &str, f: impl FnOnce() -> T + Send + 'static) -> std::thread::JoinHandle<T> {
    std::thread::Builder::new().name(name.into()).spawn(f).expect("spawn a load generator thread")
}

/// Open-loop schedule: one send time every 1/rate s from `start` to `start + end`. The
/// connection that takes the next ticket waits for its time on a timerfd (nanosecond
/// precision, where the async timer's wheel turns every millisecond) inside the client's
/// own runtime. A pacer thread sleeping until each ticket and handing it over cost each
/// request a sleeper's wake-up and a cross-thread wake of the client: ≈ 20 µs of CPU a
/// request on the build VM, taken from the cores the server under test shares.
fn schedule(rate: u64, start: Instant, end: Duration) -> Tickets {
    let step = Duration::from_secs_f64(1.0 / rate as f64);
    let timer = Timer::new().expect("create the open loop's timerfd");
    Arc::new(tokio::sync::Mutex::new(Schedule { timer, step, at: start, stop: start + end }))
}

type Tickets = Arc<tokio::sync::Mutex<Schedule>>;

/// The open loop's send times, handed out in order (see [`schedule`]).
struct Schedule {
    timer: Timer,
    step: Duration,
    at: Instant,
    stop: Instant,
}

impl Schedule {
    /// The next send time once it has come (at once when it is already past), or `None`
    /// at the end of the phase.
    async fn next(&mut self) -> Option<Instant> {
        let at = self.at;
        if at >= self.stop {
            return None;
        }
        self.at += self.step;
        if let Some(wait) = at.checked_duration_since(Instant::now()).filter(|w| !w.is_zero()) {
            self.timer.sleep(wait).await.expect("wait on the open loop's timerfd");
        }
        Some(at)
    }
}

/// A one-shot monotonic timerfd registered with the runtime's reactor.
struct Timer(tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>);

impl Timer {
    fn new() -> std::io::Result<Timer> {
        use std::os::fd::FromRawFd;
        // SAFETY: plain system call; the descriptor it returns is owned here alone.
        let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh, valid descriptor nothing else owns; the `OwnedFd` keeps
        // it open, and always the same, for as long as the `AsyncFd` holds it.
        Ok(Timer(unsafe { tokio::io::unix::AsyncFd::register(std::os::fd::OwnedFd::from_raw_fd(fd)) }?))
    }

    /// Waits `wait` (> 0: a zero time would disarm the timer).
    async fn sleep(&self, wait: Duration) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        let fd = self.0.get_ref().as_raw_fd();
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec {
                tv_sec: wait.as_secs() as libc::time_t,
                tv_nsec: wait.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: `fd` is this timer's open descriptor and `spec` a valid, initialised value.
        if unsafe { libc::timerfd_settime(fd, 0, &spec, std::ptr::null_mut()) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        loop {
            let mut guard = self.0.readable().await?;
            let mut expirations = 0u64;
            // SAFETY: reads at most 8 bytes into a u64 this call owns.
            let n = unsafe { libc::read(fd, (&raw mut expirations).cast(), 8) };
            let err = (n < 0).then(std::io::Error::last_os_error);
            // Read or not yet due, the timer is not readable now: the next wait goes to the
            // reactor rather than trying a read first.
            guard.clear_ready();
            match err {
                None => return Ok(()),
                Some(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Some(e) => return Err(e),
            }
        }
    }
}

struct PhaseResult {
    name: String,
    mode: Mode,
    seconds: f64,
    tally: Tally,
    /// Feed delivery latency (µs) over the measured window, and the frames received.
    feed: Option<(Histogram<u64>, u64)>,
    /// CPU seconds the whole process (server, clients, subscribers) spent in the measured
    /// window, plus the server's own against a server in another process (`--clob`);
    /// `None` where /proc is not readable.
    cpu_s: Option<f64>,
    /// Of `cpu_s`, what the load generator's own threads spent (its clients and
    /// subscribers): the rest is the server's, or the ceiling's.
    client_cpu_s: Option<f64>,
    /// The machine's CPU seconds in the measured window (every CPU, busy or idle), and those
    /// the hypervisor took from its vCPUs (steal time); `None` where /proc/stat is not
    /// readable.
    machine: Option<MachineTime>,
    /// The persister's group commits over the measured window (predex phases only).
    persister: Option<PersisterReading>,
}

/// The persister's group commits between two readings of the internal server's counters
/// (`GET /internal/metrics`). At a fixed rate the open loop's tail follows how much of the
/// time the persister spends writing: near 100%, each request waits for the group being
/// synced before its own, and a slow sync holds every request that arrives meanwhile.
#[derive(Clone, Copy, Debug, PartialEq)]
struct PersisterReading {
    /// Groups written (each one synced RocksDB write).
    groups: u64,
    /// Commands those groups carried.
    jobs: u64,
    /// Time spent writing and syncing them.
    writing_s: f64,
    /// Of those groups, the ones whose synced write took [`SLOW_SYNC_MICROS`] or more, and
    /// their time: a disk that stalls now and then sets the open loop's tail alone,
    /// whatever predex does.
    slow_syncs: u64,
    slow_sync_s: f64,
    /// The server process's CPU seconds between the readings (None where it has no /proc):
    /// a phase against a server in another process adds them to its own.
    server_cpu_s: Option<f64>,
    /// Time between the two readings.
    seconds: f64,
}

impl PersisterReading {
    /// The difference of two `/internal/metrics` bodies read `seconds` apart; None when
    /// either lacks a counter or the counters went back (another server answered).
    fn between(before: &Value, after: &Value, seconds: f64) -> Option<PersisterReading> {
        let d = |f: &str| after[f].as_u64()?.checked_sub(before[f].as_u64()?);
        Some(PersisterReading {
            groups: d("commits")?,
            jobs: d("jobs")?,
            writing_s: d("sync_micros_total")? as f64 / 1e6,
            slow_syncs: d("slow_syncs")?,
            slow_sync_s: d("slow_sync_micros_total")? as f64 / 1e6,
            server_cpu_s: after["process_cpu_s"]
                .as_f64()
                .zip(before["process_cpu_s"].as_f64())
                .map(|(b, a)| b - a)
                .filter(|d| *d >= 0.0),
            seconds,
        })
        .filter(|_| seconds > 0.0)
    }

    fn groups_per_s(&self) -> f64 {
        self.groups as f64 / self.seconds
    }

    fn jobs_per_group(&self) -> Option<f64> {
        (self.groups > 0).then(|| self.jobs as f64 / self.groups as f64)
    }

    fn write_us_per_group(&self) -> Option<f64> {
        (self.groups > 0).then(|| self.writing_s * 1e6 / self.groups as f64)
    }

    /// Percent of the window spent writing groups.
    fn writing_pct(&self) -> f64 {
        self.writing_s * 100.0 / self.seconds
    }
}

/// Reads the persister's counters at the start and the end of a phase's measured window.
async fn persister_window(
    internal: SocketAddr,
    start: Instant,
    warm: Duration,
    end: Duration,
) -> Option<PersisterReading> {
    let read = || async {
        let (status, body) = call(internal, "GET", "/internal/metrics", &[], None).await;
        (status == 200).then_some((Instant::now(), body))
    };
    tokio::time::sleep_until((start + warm).into()).await;
    let before = read().await;
    tokio::time::sleep_until((start + end).into()).await;
    let ((t0, a), (t1, b)) = before.zip(read().await)?;
    PersisterReading::between(&a, &b, (t1 - t0).as_secs_f64())
}

/// CPU time of the whole machine, from /proc/stat's `cpu` line.
#[derive(Clone, Copy, Debug)]
struct MachineTime {
    /// Every state's time summed (user through steal): wall time × the CPUs the kernel
    /// counts, whatever this process's affinity mask allows.
    total_s: f64,
    steal_s: f64,
    /// Time with nothing to run: idle, and idle with I/O outstanding (iowait).
    idle_s: f64,
    iowait_s: f64,
}

impl MachineTime {
    /// The time between an earlier reading and this one.
    fn since(self, a: MachineTime) -> MachineTime {
        MachineTime {
            total_s: self.total_s - a.total_s,
            steal_s: self.steal_s - a.steal_s,
            idle_s: self.idle_s - a.idle_s,
            iowait_s: self.iowait_s - a.iowait_s,
        }
    }
}

/// The machine's CPU time so far. Steal is the time its vCPUs were runnable but the
/// hypervisor ran something else (the 8th value of /proc/stat's `cpu` line); on a shared VM
/// it comes in freezes of every vCPU at once, which no thread can schedule around, so a
/// phase's tail is read beside it.
fn machine_time() -> Option<MachineTime> {
    machine_ticks(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// The machine's time from /proc/stat's machine line: the first eight values (user, nice,
/// system, idle, iowait, irq, softirq, steal), in ticks; guest time is already inside user
/// and nice.
fn machine_ticks(stat: &str) -> Option<MachineTime> {
    let cpu = stat.lines().next()?.strip_prefix("cpu ")?;
    let v: Vec<u64> = cpu.split_whitespace().take(8).map(|t| t.parse().ok()).collect::<Option<_>>()?;
    let s = |ticks: u64| ticks as f64 / USER_HZ;
    (v.len() == 8).then(|| MachineTime {
        total_s: s(v.iter().sum()),
        steal_s: s(v[7]),
        idle_s: s(v[3]),
        iowait_s: s(v[4]),
    })
}

/// A share of all the machine's CPU time in a phase's window, in percent (one decimal).
fn machine_pct(r: &PhaseResult, part: impl Fn(&MachineTime) -> f64) -> Option<f64> {
    r.machine.filter(|m| m.total_s > 0.0).map(|m| (part(&m) * 1000.0 / m.total_s).round() / 10.0)
}

/// Steal time of a phase as a percentage of all the machine's CPU time in its window.
fn steal_pct(r: &PhaseResult) -> Option<f64> {
    machine_pct(r, |m| m.steal_s)
}

/// The machine's time with nothing to run (idle and iowait) in a phase's window, in
/// percent: what a closed loop leaves unused when its requests wait on something other
/// than the CPU (the persister's syncs, a hand-off), and a ceiling phase's reference.
fn idle_pct(r: &PhaseResult) -> Option<f64> {
    machine_pct(r, |m| m.idle_s + m.iowait_s)
}

/// CPU microseconds per request of a phase.
fn cpu_us_per_request(r: &PhaseResult) -> Option<f64> {
    per_request_us(r, r.cpu_s)
}

/// Of those, the load generator's own.
fn client_cpu_us_per_request(r: &PhaseResult) -> Option<f64> {
    per_request_us(r, r.client_cpu_s)
}

fn per_request_us(r: &PhaseResult, seconds: Option<f64>) -> Option<f64> {
    let n = r.tally.orders_done + r.tally.cancels_done;
    seconds.filter(|_| n > 0).map(|s| (s * 1e6 / n as f64).round())
}

type FeedConn = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A feed subscriber connected and subscribed to `token`, its snapshot received.
async fn subscribe(addr: SocketAddr, token: String) -> Option<FeedConn> {
    use futures_util::{SinkExt, StreamExt};
    // A small read buffer: tungstenite zero-fills all of it before every read.
    let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default().read_buffer_size(8 * 1024);
    let url = format!("ws://{addr}/ws/market");
    let (mut ws, _) = tokio_tungstenite::connect_async_with_config(url, Some(config), true).await.ok()?;
    let sub = json!({ "assets_ids": [token], "type": "market" }).to_string();
    ws.send(tokio_tungstenite::tungstenite::Message::text(sub)).await.ok()?;
    match ws.next().await {
        Some(Ok(tokio_tungstenite::tungstenite::Message::Text(t))) if t.contains("\"book\"") => Some(ws),
        _ => None,
    }
}

/// One feed subscriber: delivery latency of each frame received in the measured window.
async fn subscriber(mut ws: FeedConn, start: Instant, warm: Duration, end: Duration) -> Histogram<u64> {
    use futures_util::StreamExt;
    let mut h = Histogram::new_with_bounds(1, 120_000_000, 3).expect("histogram bounds");
    let deadline = tokio::time::Instant::from_std(start + end);
    while let Ok(Some(Ok(m))) = tokio::time::timeout_at(deadline, ws.next()).await {
        let tokio_tungstenite::tungstenite::Message::Text(t) = m else { continue };
        let now = predex::domain::now_micros();
        // The first `published_us` of the frame, without parsing the whole JSON.
        let Some(i) = t.find("\"published_us\":") else { continue };
        let digits: String = t[i + 15..].chars().take_while(char::is_ascii_digit).collect();
        if let Ok(at) = digits.parse::<u64>() {
            if Instant::now() >= start + warm {
                h.saturating_record(now.saturating_sub(at).max(1));
            }
        }
    }
    h
}

#[allow(clippy::too_many_arguments)]
async fn phase(
    name: &str,
    feed_rt: &tokio::runtime::Handle,
    addr: SocketAddr,
    internal: Option<SocketAddr>,
    clients: Vec<Client>,
    mode: Mode,
    cancel_pct: u64,
    args: &Args,
) -> PhaseResult {
    // Subscribers connect and get their snapshots before the clock starts.
    let feeds: Vec<FeedConn> = if name.starts_with("predex") && args.subscribers > 0 {
        let tasks: Vec<_> = (0..args.subscribers).map(|_| feed_rt.spawn(subscribe(addr, token(0, true)))).collect();
        let mut conns = Vec::new();
        for t in tasks {
            conns.extend(t.await.expect("subscribe task"));
        }
        eprintln!("{} of {} subscribers connected", conns.len(), args.subscribers);
        conns
    } else {
        Vec::new()
    };
    let (start, warm, end) = phase_clock(args);
    let tickets = match mode {
        // Cancels are drawn from the same schedule, so it runs faster by their share.
        Mode::Open { rate } => Some(schedule(rate * 100 / (100 - cancel_pct.min(90)), start, end)),
        Mode::Closed | Mode::Fanout { .. } | Mode::Sync { .. } => None,
    };
    let subs: Vec<_> = feeds.into_iter().map(|ws| feed_rt.spawn(subscriber(ws, start, warm, end))).collect();
    let cpu = cpu_window(start, warm, end);
    let persister = internal.map(|a| tokio::spawn(persister_window(a, start, warm, end)));
    let tasks: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(i, cl)| {
            let seed = 0x5eed_0000 + i as u64 * 7919;
            tokio::spawn(connection(addr, cl, tickets.clone(), cancel_pct, start, warm, end, seed))
        })
        .collect();
    let mut tally = Tally::new();
    for t in tasks {
        tally.merge(t.await.expect("connection task"));
    }
    let feed = if subs.is_empty() {
        None
    } else {
        let mut h = Histogram::new_with_bounds(1, 120_000_000, 3).expect("histogram bounds");
        for s in subs {
            h.add(s.await.expect("subscriber task")).expect("same bounds");
        }
        let n = h.len();
        Some((h, n))
    };
    let (cpu_s, client_cpu_s, machine) = cpu.join().expect("cpu window thread");
    let persister = match persister {
        Some(t) => t.await.expect("persister window task"),
        None => None,
    };
    // A server in another process: its CPU counts too, as it does in-process.
    let cpu_s = match (&args.clob, persister) {
        (Some(_), Some(p)) => cpu_s.zip(p.server_cpu_s).map(|(a, b)| a + b),
        _ => cpu_s,
    };
    let r = PhaseResult {
        name: name.to_string(),
        mode,
        seconds: args.duration,
        tally,
        feed,
        cpu_s,
        client_cpu_s,
        machine,
        persister,
    };
    eprintln!("{}", line(&r));
    r
}

/// A phase's clock: its start (a moment from now, once everything is set up) and, from
/// there, the end of the warm-up and of the measured window.
fn phase_clock(args: &Args) -> (Instant, Duration, Duration) {
    let start = Instant::now() + Duration::from_millis(50);
    (start, Duration::from_secs_f64(args.warmup), Duration::from_secs_f64(args.warmup + args.duration))
}

/// The load generator's own threads besides the main one (which drives the requests), by
/// name; every other thread of this process is a server's (predex in-process, or a
/// ceiling).
const CLIENT_THREADS: [&str; 2] = ["feed-client", "cpu-window"];

/// CPU seconds of this process's server threads so far (see [`CLIENT_THREADS`]). The main
/// thread is told by its id, not its name: a copy of the binary renamed to compare builds
/// side by side names it after the copy.
fn server_threads_cpu_s() -> Option<f64> {
    let main = std::process::id();
    threads_cpu_s(|tid, n| tid != main && !CLIENT_THREADS.contains(&n))
}

/// A phase's CPU: the process's seconds, the load generator's own share of them, and the
/// machine's time, over the measured window.
type CpuWindow = (Option<f64>, Option<f64>, Option<MachineTime>);

/// The process's CPU seconds (and the load generator's share) and the machine's CPU and
/// steal time between `start + warm` and `start + end`, read by a thread of its own so the
/// reading is on time whatever the runtimes are doing.
fn cpu_window(start: Instant, warm: Duration, end: Duration) -> std::thread::JoinHandle<CpuWindow> {
    named("cpu-window", move || {
        std::thread::sleep((start + warm).saturating_duration_since(Instant::now()));
        let (cpu, server, machine) = (process_cpu_s(), server_threads_cpu_s(), machine_time());
        std::thread::sleep((start + end).saturating_duration_since(Instant::now()));
        let cpu = cpu.zip(process_cpu_s()).map(|(a, b)| b - a);
        let server = server.zip(server_threads_cpu_s()).map(|(a, b)| b - a);
        let client = cpu.zip(server).map(|(c, s)| (c - s).max(0.0));
        let machine = machine.zip(machine_time()).map(|(a, b)| b.since(a));
        (cpu, client, machine)
    })
}

fn pct(h: &Histogram<u64>) -> Value {
    let ms = |us: u64| us as f64 / 1000.0;
    if h.is_empty() {
        return Value::Null;
    }
    json!({
        "count": h.len(),
        "p50_ms": ms(h.value_at_quantile(0.5)), "p90_ms": ms(h.value_at_quantile(0.9)),
        "p99_ms": ms(h.value_at_quantile(0.99)), "p999_ms": ms(h.value_at_quantile(0.999)), "max_ms": ms(h.max()),
    })
}

/// One printed row: rate and latency percentiles (ms) of one kind of request.
fn row(label: &str, kind: &str, rate: f64, h: &Histogram<u64>) -> String {
    let q = |x: f64| h.value_at_quantile(x) as f64 / 1000.0;
    format!(
        "{label:<15} {rate:>9.0} {kind:<9} p50 {:>7.3} ms  p90 {:>7.3}  p99 {:>7.3}  p99.9 {:>7.3}  max {:>8.3}",
        q(0.5),
        q(0.9),
        q(0.99),
        q(0.999),
        h.max() as f64 / 1000.0
    )
}

fn line(r: &PhaseResult) -> String {
    let t = &r.tally;
    if let (Mode::Fanout { .. }, Some((h, n))) = (r.mode, &r.feed) {
        return row(&r.name, "frames/s", *n as f64 / r.seconds, h);
    }
    if let Mode::Sync { bytes } = r.mode {
        let mut s = row(&r.name, "syncs/s", t.orders_done as f64 / r.seconds, &t.orders);
        if let Some(us) = cpu_us_per_request(r) {
            s += &format!("  cpu {us:.0} µs/sync");
        }
        return s + &format!("  ({bytes} bytes appended, then fdatasync)");
    }
    let mut s = row(&r.name, "orders/s", t.orders_done as f64 / r.seconds, &t.orders);
    if let Some(us) = cpu_us_per_request(r) {
        s += &format!("  cpu {us:.0} µs/req");
        if let Some(c) = client_cpu_us_per_request(r) {
            s += &format!(" ({c:.0} of them the load generator's)");
        }
    }
    if let Some(p) = idle_pct(r) {
        s += &format!("  idle {p:.1}%");
    }
    if let Some(p) = steal_pct(r) {
        s += &format!("  steal {p:.1}%");
    }
    if t.cancels_done > 0 {
        s += "\n";
        s += &row("", "cancels/s", t.cancels_done as f64 / r.seconds, &t.cancels);
    }
    if let Some(p) = &r.persister {
        s += &format!("\n{:<15} persister {:>7.0} groups/s", "", p.groups_per_s());
        if let Some((jobs, us)) = p.jobs_per_group().zip(p.write_us_per_group()) {
            s += &format!(" of {jobs:.2} commands, {us:.0} µs each: writing {:.0}% of the time", p.writing_pct());
        }
        if p.slow_syncs > 0 {
            let n = p.slow_syncs;
            s += &format!(
                "; {n} synced write{} of {} ms or more, {:.0} ms in all",
                if n == 1 { "" } else { "s" },
                SLOW_SYNC_MICROS / 1_000,
                p.slow_sync_s * 1e3
            );
        }
    }
    for (e, n) in &t.errors {
        s += &format!("\n{:<15} error x{n}: {e}", "");
    }
    if t.exhausted {
        s += &format!("\n{:<15} (corpus exhausted: raise --max-rate)", "");
    }
    if let Some((h, n)) = &r.feed {
        s += "\n";
        s += &row("", "frames/s", *n as f64 / r.seconds, h);
    }
    s
}

fn summary(args: &Args, results: &[PhaseResult]) -> Value {
    let rate = |n: &str| {
        results.iter().find(|r| r.name == n).map(|r| r.tally.orders_done as f64 / r.seconds).filter(|&x| x > 0.0)
    };
    let phases: Vec<Value> = results
        .iter()
        .map(|r| {
            json!({
                "name": r.name,
                "mode": match r.mode { Mode::Closed => json!({"closed_loop": args.concurrency}),
                                       Mode::Open { rate } => json!({"open_loop_rate": rate}),
                                       Mode::Fanout { per_sec } => json!({"fanouts_per_s": per_sec}),
                                       Mode::Sync { bytes } => json!({"synced_append_bytes": bytes}) },
                "seconds": r.seconds,
                "orders_per_s": r.tally.orders_done as f64 / r.seconds,
                "cancels_per_s": r.tally.cancels_done as f64 / r.seconds,
                "order_latency": pct(&r.tally.orders),
                "cancel_latency": pct(&r.tally.cancels),
                "statuses": r.tally.statuses.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
                "errors": r.tally.errors,
                "corpus_exhausted": r.tally.exhausted,
                "cpu_s": r.cpu_s,
                "cpu_us_per_request": cpu_us_per_request(r),
                "client_cpu_us_per_request": client_cpu_us_per_request(r),
                "steal_s": r.machine.map(|m| m.steal_s),
                "steal_pct": steal_pct(r),
                "idle_pct": idle_pct(r),
                "iowait_pct": machine_pct(r, |m| m.iowait_s),
                "persister": r.persister.map(|p| json!({
                    "groups_per_s": p.groups_per_s(), "commands_per_group": p.jobs_per_group(),
                    "write_us_per_group": p.write_us_per_group(), "writing_pct": p.writing_pct(),
                    "slow_syncs": p.slow_syncs, "slow_sync_s": p.slow_sync_s,
                })),
                "feed": r.feed.as_ref().map(|(h, n)| json!({
                    "subscribers": args.subscribers, "frames": n, "frames_per_s": *n as f64 / r.seconds,
                    "delivery_latency": pct(h),
                })),
            })
        })
        .collect();
    let ratio = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| (a / b * 1000.0).round() / 1000.0);
    let cpu = |n: &str| results.iter().find(|r| r.name == n).and_then(cpu_us_per_request);
    // Feed delivery p99 (ms): predex's (its last phase with subscribers) and the bare fan-out's.
    let feed_p99 = |fanout: bool| {
        results
            .iter()
            .rev()
            .filter(|r| matches!(r.mode, Mode::Fanout { .. }) == fanout)
            .find_map(|r| r.feed.as_ref())
            .filter(|(h, _)| !h.is_empty())
            .map(|(h, _)| h.value_at_quantile(0.99) as f64 / 1000.0)
    };
    // Mean µs of a group's synced write in the open loop, and of a bare synced append.
    let open_write_us =
        results.iter().find(|r| r.name == "predex-open").and_then(|r| r.persister?.write_us_per_group());
    let bare_sync_us = results
        .iter()
        .find(|r| matches!(r.mode, Mode::Sync { .. }))
        .filter(|r| !r.tally.orders.is_empty())
        .map(|r| r.tally.orders.mean());
    json!({
        "machine": { "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0) },
        "args": { "keys": args.keys, "markets": args.markets, "concurrency": args.concurrency, "rate": args.rate,
                  "duration_s": args.duration, "warmup_s": args.warmup, "cross_pct": args.cross_pct,
                  "cancel_pct": args.cancel_pct, "subscribers": args.subscribers,
                  "in_process_server": args.clob.is_none() },
        "phases": phases,
        "ratios": {
            "predex_over_crypto_ceiling": ratio(rate("predex-orders"), rate("ceiling-crypto")),
            "predex_over_parse_ceiling": ratio(rate("predex-orders"), rate("ceiling-parse")),
            "crypto_over_parse_ceiling": ratio(rate("ceiling-crypto"), rate("ceiling-parse")),
            // The same comparison by CPU spent per request (the ceiling's over predex's).
            "crypto_ceiling_cpu_over_predex_cpu": ratio(cpu("ceiling-crypto"), cpu("predex-orders")),
            "feed_p99_over_fanout_ceiling_p99": ratio(feed_p99(false), feed_p99(true)),
            // The open loop's groups (one or two commands) against one bare synced append.
            "open_group_write_over_bare_sync": ratio(open_write_us, bare_sync_us),
        },
    })
}

/// A predex server in this process, on its own runtime and a fresh data directory.
struct LocalServer {
    clob: SocketAddr,
    internal: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    dir: PathBuf,
}

impl LocalServer {
    fn start(args: &Args) -> anyhow::Result<LocalServer> {
        let dir = std::env::temp_dir().join(format!("predex-loadgen-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let config = Config {
            data_dir: dir.clone(),
            clob_addr: "127.0.0.1:0".parse()?,
            gamma_addr: "127.0.0.1:0".parse()?,
            data_addr: "127.0.0.1:0".parse()?,
            bridge_addr: "127.0.0.1:0".parse()?,
            internal_addr: "127.0.0.1:0".parse()?,
            catalogue: PathBuf::from("/nonexistent"),
            // One client IP sends everything: the limiter runs, but never refuses.
            rate_limit_max: u32::MAX,
            ws_threads: args.ws_threads,
            wal_logs_ahead: args.wal_logs_ahead,
            ..Config::default()
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = named("server", move || {
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
            rt.block_on(async move {
                match predex::App::start(config).await {
                    Ok(app) => {
                        let _ = tx.send(Ok(app.bound));
                        let _ = stop_rx.await;
                        app.shutdown().await;
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                    }
                }
            });
        });
        let bound = rx.recv()??;
        Ok(LocalServer { clob: bound.clob, internal: bound.internal, stop: Some(stop), thread: Some(thread), dir })
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The two ceiling servers, on their own runtime (as predex's is).
/// Size of the ceiling's frames: about a one-level `price_change` of predex.
const FANOUT_FRAME: usize = 350;

/// The fan-out ceiling: `n` subscribers connect exactly as to predex (WebSocket handshake,
/// subscription, a `book` reply), then one OS thread writes one pre-encoded text frame
/// stamped with `published_us` to every socket in turn, `per_sec` times a second — no
/// tasks, queues or per-connection encoding, one blocking write per subscriber. What the
/// subscribers measure is the floor a feed server has on this machine: the kernel's
/// loopback sends and the subscribers' own reading.
fn fanout_ceiling(feed_rt: &tokio::runtime::Handle, args: &Args, per_sec: f64) -> anyhow::Result<PhaseResult> {
    use futures_util::{SinkExt, StreamExt};
    use std::io::Write;
    let n = args.subscribers;
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    let accept = named("ws-accept", move || -> anyhow::Result<Vec<std::net::TcpStream>> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        rt.block_on(async move {
            let l = tokio::net::TcpListener::from_std(listener)?;
            let mut socks = Vec::with_capacity(n);
            while socks.len() < n {
                let (tcp, _) = l.accept().await?;
                tcp.set_nodelay(true)?;
                let mut ws = tokio_tungstenite::accept_async(tcp).await?;
                let _subscription = ws.next().await;
                ws.send(tokio_tungstenite::tungstenite::Message::text(r#"{"event_type":"book"}"#)).await?;
                let tcp = ws.into_inner().into_std()?;
                tcp.set_nonblocking(false)?;
                socks.push(tcp);
            }
            Ok(socks)
        })
    });
    let conns: Vec<FeedConn> = feed_rt.block_on(async {
        let tasks: Vec<_> = (0..n).map(|_| tokio::spawn(subscribe(addr, String::new()))).collect();
        let mut conns = Vec::with_capacity(n);
        for t in tasks {
            conns.extend(t.await.expect("subscribe task"));
        }
        conns
    });
    let mut socks = accept.join().expect("accept thread")?;
    eprintln!("{} of {n} subscribers connected to the bare fan-out", conns.len());
    let (start, warm, end) = phase_clock(args);
    let subs: Vec<_> = conns.into_iter().map(|ws| feed_rt.spawn(subscriber(ws, start, warm, end))).collect();
    // One writer per core the machine has, each over its share of the sockets.
    let writers = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(socks.len().max(1));
    let share = socks.len().div_ceil(writers).max(1);
    let mut handles = Vec::new();
    while !socks.is_empty() {
        let mut mine: Vec<std::net::TcpStream> = socks.drain(..share.min(socks.len())).collect();
        handles.push(std::thread::Builder::new().name("fanout".into()).spawn(move || {
            let every = Duration::from_secs_f64(1.0 / per_sec.max(0.1));
            let mut next = start;
            while next < start + end {
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
                let now = predex::domain::now_micros();
                let head = format!(r#"{{"event_type":"price_change","published_us":{now},"pad":""#);
                let payload = format!("{head}{}\"}}", "x".repeat(FANOUT_FRAME - head.len() - 2));
                // An unmasked server text frame with a 16-bit length.
                let mut frame = vec![0x81, 126];
                frame.extend_from_slice(&(payload.len() as u16).to_be_bytes());
                frame.extend_from_slice(payload.as_bytes());
                mine.retain_mut(|s| s.write_all(&frame).is_ok());
                next += every;
            }
            mine
        })?);
    }
    let mut h = Histogram::new_with_bounds(1, 120_000_000, 3).expect("histogram bounds");
    for s in subs {
        h.add(feed_rt.block_on(s).expect("subscriber task")).expect("same bounds");
    }
    for w in handles {
        drop(w.join().expect("fan-out writer"));
    }
    let frames = h.len();
    let r = PhaseResult {
        name: "ceiling-fanout".into(),
        mode: Mode::Fanout { per_sec },
        seconds: args.duration,
        tally: Tally::new(),
        feed: Some((h, frames)),
        cpu_s: None,
        client_cpu_s: None,
        machine: None,
        persister: None,
    };
    eprintln!("{}", line(&r));
    Ok(r)
}

/// Bytes of each synced append of the sync ceiling: about one command's share of a group
/// (≈ 430 bytes of WriteBatch a command in the closed loop) — what a group of one or two,
/// the open loop's, writes to RocksDB's log.
const SYNC_BYTES: usize = 512;

/// The sync ceiling: one thread appends [`SYNC_BYTES`] to a new file and `fdatasync`s it,
/// over and over for the phase, timing each write and sync together — what a fresh store's
/// log does once per group commit, with nothing else in it. In the temporary directory,
/// where the in-process server keeps its store (against `--clob`, point `TMPDIR` at the
/// server's disk). A recycled RocksDB log is overwritten in place instead, which skips the
/// file's size and block map; RocksDB recycles only logs retired in the
/// same run, so appending is what a fresh store does, and any store after a start until its
/// first logs retire.
fn sync_ceiling(args: &Args) -> anyhow::Result<PhaseResult> {
    use std::io::Write;
    let path = std::env::temp_dir().join(format!("predex-loadgen-sync-{}", std::process::id()));
    let mut file = std::fs::File::create(&path).with_context(|| format!("create {}", path.display()))?;
    let (start, warm, end) = phase_clock(args);
    let cpu = cpu_window(start, warm, end);
    let mut tally = Tally::new();
    let record = [b'x'; SYNC_BYTES];
    std::thread::sleep(start.saturating_duration_since(Instant::now()));
    let written = loop {
        let t = Instant::now();
        if t >= start + end {
            break Ok(());
        }
        if let Err(e) = file.write_all(&record).and_then(|()| file.sync_data()) {
            break Err(e);
        }
        let done = Instant::now();
        if t >= start + warm && done <= start + end {
            tally.orders.saturating_record(done.duration_since(t).as_micros().max(1) as u64);
            tally.orders_done += 1;
        }
    };
    drop(file);
    let _ = std::fs::remove_file(&path);
    written.with_context(|| format!("synced append to {}", path.display()))?;
    let (cpu_s, client_cpu_s, machine) = cpu.join().expect("cpu window thread");
    let r = PhaseResult {
        name: "ceiling-sync".into(),
        mode: Mode::Sync { bytes: SYNC_BYTES },
        seconds: args.duration,
        tally,
        feed: None,
        cpu_s,
        client_cpu_s,
        machine,
        persister: None,
    };
    eprintln!("{}", line(&r));
    Ok(r)
}

fn ceilings(
    keys: &[Arc<Key>],
    domains: &OrderDomains,
) -> anyhow::Result<(SocketAddr, SocketAddr, watch::Sender<bool>)> {
    let secrets: HashMap<String, KeySecret> = keys
        .iter()
        .map(|k| (k.key.clone(), KeySecret { secret: k.secret.clone(), address: k.address.clone() }))
        .collect();
    let domain = domains.standard.clone();
    let (stop, rx) = watch::channel(false);
    let (tx, ready) = std::sync::mpsc::channel();
    named("ceiling", move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .thread_name("ceiling-worker")
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let bind = || async {
                let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
                let a = l.local_addr().expect("addr");
                (l, a)
            };
            let (pl, pa) = bind().await;
            let (cl, ca) = bind().await;
            // Bodies read within the budget `predex serve` gives them by default.
            let bodies = predex::api::body::Bodies::new(predex::config::Config::default().body_bytes_in_flight);
            let parse = ceiling::routes(Ceiling::Parse, secrets.clone(), domain.clone());
            let p = predex::serve(pl, parse, bodies.clone(), rx.clone());
            let c = predex::serve(cl, ceiling::routes(Ceiling::Crypto, secrets, domain), bodies, rx.clone());
            tx.send((pa, ca)).expect("report");
            let _ = tokio::join!(p, c);
        });
    });
    let (pa, ca) = ready.recv()?;
    Ok((pa, ca, stop))
}

fn main() -> anyhow::Result<()> {
    // As `predex serve` runs, for the server this process starts and for the client.
    predex::no_transparent_huge_pages();
    let args = Args::parse();
    let config = Config::default();
    let domains = OrderDomains::new(
        config.chain_id,
        config.exchange_address.parse().context("exchange address")?,
        config.neg_risk_exchange_address.parse().context("neg-risk exchange address")?,
    );
    let local = match args.clob {
        Some(_) => None,
        None => Some(LocalServer::start(&args)?),
    };
    let (clob, internal) = match &local {
        Some(l) => (l.clob, l.internal),
        None => (args.clob.expect("given"), args.internal.expect("required with --clob")),
    };
    // Clients on one thread of their own: they share the machine with the server.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    // Feed subscribers on another thread, so their reading does not delay the order clients.
    let feed_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("feed-client")
        .enable_all()
        .build()?;
    let keys: Vec<Arc<Key>> =
        rt.block_on(setup(clob, internal, &args, config.chain_id))?.into_iter().map(Arc::new).collect();
    eprintln!("setup: {} markets, {} API keys", args.markets, keys.len());

    let conns = args.concurrency.max(1);
    let total = args.warmup + args.duration;
    let closed_per = ((args.max_rate as f64 * total * 1.2) as usize).div_ceil(conns);
    let open_per = ((args.rate as f64 * total * 1.2) as usize).div_ceil(conns);
    let t = Instant::now();
    let closed_corpus = if args.no_closed && args.no_ceilings {
        Vec::new()
    } else {
        corpora(&keys, conns, closed_per, 1, &args, &domains)
    };
    let open_corpus = if args.rate > 0 { corpora(&keys, conns, open_per, 2, &args, &domains) } else { Vec::new() };
    eprintln!(
        "signed {} orders in {:.1} s",
        closed_corpus.iter().chain(&open_corpus).map(Vec::len).sum::<usize>(),
        t.elapsed().as_secs_f64()
    );
    // Clients over a corpus: the ceilings replay the closed-loop corpus (they keep nothing),
    // then predex gets it fresh.
    // The ceilings replay the closed-loop corpus, cycling (they keep nothing); predex then
    // gets it once.
    let clients = |c: Vec<Vec<Signed>>, cycle: bool| -> Vec<Client> {
        c.into_iter()
            .enumerate()
            .map(|(i, v)| Client {
                key: keys[i % keys.len()].clone(),
                orders: v,
                next: 0,
                cycle,
                resting: VecDeque::new(),
            })
            .collect()
    };
    let mut results = Vec::new();
    if !args.no_ceilings {
        let (pa, ca, stop) = ceilings(&keys, &domains)?;
        for (name, addr) in [("ceiling-parse", pa), ("ceiling-crypto", ca)] {
            let cl = clients(closed_corpus.clone(), true);
            results.push(rt.block_on(phase(name, feed_rt.handle(), addr, None, cl, Mode::Closed, 0, &args)));
        }
        let _ = stop.send(true);
        results.push(sync_ceiling(&args)?);
    }
    if !args.no_closed {
        let cl = clients(closed_corpus, false);
        results.push(rt.block_on(phase(
            "predex-orders",
            feed_rt.handle(),
            clob,
            Some(internal),
            cl,
            Mode::Closed,
            0,
            &args,
        )));
    }
    if args.rate > 0 {
        let cl = clients(open_corpus, false);
        let mode = Mode::Open { rate: args.rate };
        results.push(rt.block_on(phase(
            "predex-open",
            feed_rt.handle(),
            clob,
            Some(internal),
            cl,
            mode,
            args.cancel_pct,
            &args,
        )));
    }
    if args.subscribers > 0 && !args.no_fanout_ceiling {
        // The same number of subscribers and frames per second as predex's feed had.
        let per_sec = results
            .iter()
            .rev()
            .find_map(|r| r.feed.as_ref())
            .map(|(_, n)| *n as f64 / args.duration / args.subscribers as f64)
            .filter(|&x| x > 0.0)
            .unwrap_or(25.0);
        results.push(fanout_ceiling(feed_rt.handle(), &args, per_sec)?);
    }
    let s = summary(&args, &results);
    if let Some(parent) = args.out.parent() {
        std::fs::create_dir_all(parent).ok();
    }
    std::fs::write(&args.out, serde_json::to_string_pretty(&s)?)
        .with_context(|| format!("write {}", args.out.display()))?;
    println!("{}", serde_json::to_string_pretty(&s["ratios"])?);
    eprintln!("summary written to {}", args.out.display());
    drop(rt);
    drop(local);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The open loop's schedule hands out every send time in order, one step apart, each
    /// once it has come (never before: latency is counted from it), and ends with the phase.
    #[test]
    fn the_schedule_hands_out_each_send_time_once_it_has_come() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let start = Instant::now() + Duration::from_millis(5);
            let tickets = schedule(2_000, start, Duration::from_millis(30));
            let mut times = Vec::new();
            while let Some(at) = tickets.lock().await.next().await {
                assert!(Instant::now() >= at, "ticket {} handed out before its time", times.len());
                times.push(at);
            }
            let expected: Vec<Instant> = (0..60).map(|i| start + Duration::from_micros(500) * i).collect();
            assert_eq!(times, expected);
        });
    }

    #[test]
    fn steal_idle_and_iowait_are_values_of_the_machine_line_and_shares_of_all_eight() {
        let stat = "cpu  424155 0 42491 111535 15634 0 3015 3221 7 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n";
        let ticks = |m: Option<MachineTime>| {
            m.map(|m| [m.total_s, m.steal_s, m.idle_s, m.iowait_s].map(|s| (s * USER_HZ).round() as u64))
        };
        // Guest time (the 9th value) is inside user already: not counted twice.
        assert_eq!(
            ticks(machine_ticks(stat)),
            Some([424155 + 42491 + 111535 + 15634 + 3015 + 3221, 3221, 111535, 15634])
        );
        // A kernel too old to report steal, or not the machine line first: no reading.
        assert!(machine_ticks("cpu  1 2 3 4 5 6 7\n").is_none());
        assert!(machine_ticks("cpu0 1 2 3 4 5 6 7 8 0 0\n").is_none());
        assert!(machine_ticks("cpu  1 2 3 4 x 6 7 8\n").is_none());
        // A window is the difference of two readings.
        let (a, b) = (machine_ticks("cpu  10 0 5 100 20 0 1 2\n"), machine_ticks("cpu  70 0 25 130 30 0 3 4\n"));
        assert_eq!(ticks(b.zip(a).map(|(b, a)| b.since(a))), Some([124, 2, 30, 10]));
        // The percentages are of the machine's time in the window, whatever the CPU count;
        // idle counts the time waiting on I/O too (nothing to run either way).
        let r = |total_s, steal_s, idle_s, iowait_s| PhaseResult {
            name: "p".into(),
            mode: Mode::Closed,
            seconds: 10.0,
            tally: Tally::new(),
            feed: None,
            cpu_s: None,
            client_cpu_s: None,
            machine: Some(MachineTime { total_s, steal_s, idle_s, iowait_s }),
            persister: None,
        };
        assert_eq!(steal_pct(&r(80.0, 4.0, 0.0, 0.0)), Some(5.0));
        assert_eq!(steal_pct(&r(20.0, 0.25, 0.0, 0.0)), Some(1.3));
        assert_eq!(idle_pct(&r(20.0, 0.25, 2.0, 0.5)), Some(12.5));
        assert_eq!(idle_pct(&r(20.0, 0.0, 0.0, 0.0)), Some(0.0));
        assert_eq!(steal_pct(&r(0.0, 0.0, 0.0, 0.0)), None);
        assert_eq!(idle_pct(&r(0.0, 0.0, 0.0, 0.0)), None);
    }

    #[test]
    fn the_persister_reading_is_the_difference_of_two_counter_readings() {
        let m = |commits: u64, jobs: u64, micros: u64| {
            // One group in a thousand slow, 20 ms each.
            json!({"bytes": 0, "commits": commits, "inline_commits": 0, "jobs": jobs, "last_batch_jobs": 1,
                   "last_sync_micros": 1, "sync_micros_total": micros,
                   "slow_syncs": commits / 1_000, "slow_sync_micros_total": commits / 1_000 * 20_000,
                   "process_cpu_s": micros as f64 / 400_000.0})
        };
        let p = PersisterReading::between(&m(1_000, 1_500, 400_000), &m(6_000, 11_500, 1_200_000), 2.0).unwrap();
        let want = PersisterReading {
            groups: 5_000,
            jobs: 10_000,
            writing_s: 0.8,
            slow_syncs: 5,
            slow_sync_s: 0.1,
            server_cpu_s: Some(2.0),
            seconds: 2.0,
        };
        assert_eq!(p, want);
        assert_eq!(p.groups_per_s(), 2_500.0);
        assert_eq!(p.jobs_per_group(), Some(2.0));
        assert_eq!(p.write_us_per_group(), Some(160.0));
        assert_eq!(p.writing_pct(), 40.0);
        // A window without a group: a rate of nothing, no per-group figures.
        let idle = PersisterReading::between(&m(7, 9, 100), &m(7, 9, 100), 1.0).unwrap();
        assert_eq!((idle.groups_per_s(), idle.jobs_per_group(), idle.write_us_per_group()), (0.0, None, None));
        // A server without /proc (or an older one): the reading stands, without its CPU.
        let no_cpu = |v: Value| {
            let mut v = v;
            v.as_object_mut().unwrap().remove("process_cpu_s");
            v
        };
        let p = PersisterReading::between(&no_cpu(m(1_000, 1_500, 400_000)), &m(6_000, 11_500, 1_200_000), 2.0);
        assert_eq!(p.map(|p| (p.groups, p.server_cpu_s)), Some((5_000, None)));
        // Counters that went back (a restarted server), a missing one, or no time: no reading.
        assert_eq!(PersisterReading::between(&m(8, 9, 100), &m(7, 9, 100), 1.0), None);
        assert_eq!(PersisterReading::between(&json!({}), &m(7, 9, 100), 1.0), None);
        assert_eq!(PersisterReading::between(&m(7, 9, 100), &m(8, 10, 200), 0.0), None);
    }
}
