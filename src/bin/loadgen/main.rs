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

mod ceilings;
mod chain;
mod phase;
mod report;
#[cfg(test)]
mod tests;

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
use predex::client::Operator;
use predex::config::Config;
// In-process, the server's threads are this process's: a phase's CPU covers them and
// the clients alike.
use predex::commit::persister::SLOW_SYNC_MICROS;
use predex::metrics::{process_cpu_s, threads_cpu_s, USER_HZ};
use serde_json::{json, Value};
use tokio::sync::watch;

use ceilings::*;
use phase::*;
use report::*;

#[derive(Parser, Debug, Clone)]
#[command(name = "predex-loadgen", about = "Load generator for the predex CLOB, with machine ceilings")]
struct Args {
    /// CLOB server address (host:port) of a running predex; default: start one in-process.
    #[arg(long, requires = "internal")]
    clob: Option<SocketAddr>,
    /// Internal server address of that predex (markets, credits, invitations).
    #[arg(long, requires = "internal_token_file")]
    internal: Option<SocketAddr>,
    /// That predex's internal token file (`internal.token` in its data directory).
    #[arg(long)]
    internal_token_file: Option<std::path::PathBuf>,
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
    /// Only the chain settlement benchmark (`chain.rs`): anvil with 2-second blocks and a
    /// 30M block gas limit, the contracts deployed, predex settling on them.
    #[arg(long)]
    chain_settlement: bool,
    /// Matches per second offered in the chain settlement benchmark.
    #[arg(long, default_value_t = 50)]
    chain_rate: u64,
    /// The anvil binary (scripts/setup.sh installs it here).
    #[arg(long, default_value = "tools/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil")]
    anvil: PathBuf,
    /// The contract artifacts the chain benchmark deploys.
    #[arg(long, default_value = "contracts")]
    contracts_dir: PathBuf,
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

async fn setup(clob: SocketAddr, internal: &Operator, args: &Args, chain_id: u64) -> anyhow::Result<Vec<Key>> {
    for m in 0..args.markets {
        let (st, b) = internal.call("POST", "/internal/markets",
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
        let Key { wallet, address, key, secret, passphrase, .. } =
            open_key(clob, internal, &format!("load{i}@example.com"), chain_id).await?;
        // The first `proxy_pct`% of the keys trade through their Safe, derived from the
        // wallet with Polygon's factory (the server's default).
        let maker = match (i as u64 * 100) < args.proxy_pct * args.keys as u64 {
            true => predex::auth::wallets::WalletFactories::polygon().safe(wallet.address()),
            false => wallet.address(),
        };
        let mut credits = vec![("USDC".to_string(), 1_000_000_000_000u64)];
        credits.extend((0..args.markets).map(|m| (token(m, true), 1_000_000_000_000)));
        for (asset, amount) in credits {
            let (st, b) = internal
                .call(
                    "POST",
                    "/internal/ledger/credit",
                    Some(json!({"address": format!("{maker:#x}"), "asset": asset, "amount": amount.to_string()})),
                )
                .await;
            if st != 200 {
                bail!("credit: {st} {b}");
            }
        }
        keys.push(Key { wallet, address, maker, key, secret, passphrase });
    }
    Ok(keys)
}

/// A new wallet with an API key, invited under `email`; its orders name the wallet.
async fn open_key(clob: SocketAddr, internal: &Operator, email: &str, chain_id: u64) -> anyhow::Result<Key> {
    let wallet = PrivateKeySigner::random();
    let address = format!("{:#x}", wallet.address());
    let (st, b) = internal.call("POST", "/internal/waitlist/approve", Some(json!({"email": email}))).await;
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
    let maker = wallet.address();
    Ok(Key { wallet, address, maker, key: s("apiKey"), secret: s("secret"), passphrase: s("passphrase") })
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
/// own runtime: no pacer thread handing tickets over, whose sleeper's wake-up and
/// cross-thread wake of the client per request would take CPU from the cores the server
/// under test shares.
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

/// The orders each connection sends, signed before any phase starts: the closed loop's
/// (replayed by the ceilings too) and the open loop's.
fn sign_corpora(keys: &[Arc<Key>], args: &Args, domains: &OrderDomains) -> (Vec<Vec<Signed>>, Vec<Vec<Signed>>) {
    let conns = args.concurrency.max(1);
    let total = args.warmup + args.duration;
    let closed_per = ((args.max_rate as f64 * total * 1.2) as usize).div_ceil(conns);
    let open_per = ((args.rate as f64 * total * 1.2) as usize).div_ceil(conns);
    let t = Instant::now();
    let closed_corpus = if args.no_closed && args.no_ceilings {
        Vec::new()
    } else {
        corpora(keys, conns, closed_per, 1, args, domains)
    };
    let open_corpus = if args.rate > 0 { corpora(keys, conns, open_per, 2, args, domains) } else { Vec::new() };
    eprintln!(
        "signed {} orders in {:.1} s",
        closed_corpus.iter().chain(&open_corpus).map(Vec::len).sum::<usize>(),
        t.elapsed().as_secs_f64()
    );
    (closed_corpus, open_corpus)
}

/// What every phase shares: the arguments, the feed clients' runtime, the keys, predex.
struct Phases<'a> {
    args: &'a Args,
    feed: &'a tokio::runtime::Handle,
    keys: &'a [Arc<Key>],
    clob: SocketAddr,
    internal: &'a Operator,
}

impl Phases<'_> {
    /// The phases the arguments ask for, in order: the ceilings (replaying the closed-loop
    /// corpus, cycling: they keep nothing), predex's closed loop (the corpus once), its open
    /// loop, the fan-out ceiling.
    fn all(
        &self,
        rt: &tokio::runtime::Runtime,
        domains: &OrderDomains,
        closed_corpus: Vec<Vec<Signed>>,
        open_corpus: Vec<Vec<Signed>>,
    ) -> anyhow::Result<Vec<PhaseResult>> {
        let args = self.args;
        let mut results = Vec::new();
        if !args.no_ceilings {
            let (pa, ca, stop) = ceilings(self.keys, domains)?;
            for (name, addr) in [("ceiling-parse", pa), ("ceiling-crypto", ca)] {
                let cl = self.clients(closed_corpus.clone(), true);
                results.push(rt.block_on(phase(name, self.feed, addr, None, cl, Mode::Closed, 0, args)));
            }
            let _ = stop.send(true);
            results.push(sync_ceiling(args)?);
        }
        if !args.no_closed {
            results.push(rt.block_on(self.predex("predex-orders", closed_corpus, Mode::Closed, 0)));
        }
        if args.rate > 0 {
            let mode = Mode::Open { rate: args.rate };
            results.push(rt.block_on(self.predex("predex-open", open_corpus, mode, args.cancel_pct)));
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
            results.push(fanout_ceiling(self.feed, args, per_sec)?);
        }
        Ok(results)
    }

    /// A phase against predex: each connection sends its share of `corpus` once.
    async fn predex(&self, name: &str, corpus: Vec<Vec<Signed>>, mode: Mode, cancel_pct: u64) -> PhaseResult {
        let clients = self.clients(corpus, false);
        let internal = Some(self.internal.clone());
        phase(name, self.feed, self.clob, internal, clients, mode, cancel_pct, self.args).await
    }

    /// A client per connection over its share of `corpus`.
    fn clients(&self, corpus: Vec<Vec<Signed>>, cycle: bool) -> Vec<Client> {
        corpus
            .into_iter()
            .enumerate()
            .map(|(i, v)| Client {
                key: self.keys[i % self.keys.len()].clone(),
                orders: v,
                next: 0,
                cycle,
                resting: VecDeque::new(),
            })
            .collect()
    }
}

fn main() -> anyhow::Result<()> {
    // As `predex serve` runs, for the server this process starts and for the client.
    predex::no_transparent_huge_pages();
    let args = Args::parse();
    if args.chain_settlement {
        return chain::run(&args);
    }
    let config = Config::default();
    let domains = OrderDomains::new(
        &config.order_domain_name,
        config.chain_id,
        config.exchange_address.parse().context("exchange address")?,
        config.neg_risk_exchange_address.parse().context("neg-risk exchange address")?,
    );
    let local = match args.clob {
        Some(_) => None,
        None => Some(LocalServer::start(&args)?),
    };
    let (clob, internal) = match &local {
        Some(l) => (l.clob, l.internal.clone()),
        None => {
            let token = args.internal_token_file.as_deref().expect("required with --internal");
            (args.clob.expect("given"), Operator::from_file(args.internal.expect("required with --clob"), token)?)
        }
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
        rt.block_on(setup(clob, &internal, &args, config.chain_id))?.into_iter().map(Arc::new).collect();
    eprintln!("setup: {} markets, {} API keys", args.markets, keys.len());

    let (closed_corpus, open_corpus) = sign_corpora(&keys, &args, &domains);
    let run = Phases { args: &args, feed: feed_rt.handle(), keys: &keys, clob, internal: &internal };
    let results = run.all(&rt, &domains, closed_corpus, open_corpus)?;
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
