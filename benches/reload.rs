//! `reload`: startup with 1,000,000 LIVE orders across 1,000 markets. A child process
//! builds the data dir through the real store (orders, live index, markets, balances); then
//! three fresh processes, one after the other, each time `Store::open_with` +
//! `engine::recover` — the read-back and re-insertion of every order in priority order —
//! and the wait for the log files the store writes ahead meanwhile, as `predex serve` waits
//! before it takes a request: a restart, memory first touched included.
//! `PREDEX_BENCH_ORDERS` and `PREDEX_BENCH_MARKETS` change the sizes; with
//! `PREDEX_BENCH_CRASH=1` the builder is killed with SIGKILL once its last write is synced,
//! so the first start replays the write-ahead log.
//!
//! Each start also prints its CPU time, user and system. On a VM whose guest returns freed
//! memory to the host (virtio-balloon free page reporting, about two seconds after the
//! free), the system time of a start is mostly the host backing the pages it touches first;
//! `PREDEX_BENCH_PAUSE=<seconds>` waits that long before each start so every start pays it.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

use predex::domain::*;
use predex::store::{cf, encode, Batch, Store, Stored};
use uuid::Uuid;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A token id of the length of the exchange's (77 decimal digits).
fn token_id(n: u64) -> String {
    format!("71321045679252212594626385532706912750332728571942532289631379312455{n:09}")
}

/// The process's resident memory now and at its peak (Linux), for memory per open order.
fn resident() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = |field: &str| {
        status.lines().find_map(|l| l.strip_prefix(field)?.trim().strip_suffix("kB")?.trim().parse::<u64>().ok())
    };
    match (kb("VmRSS:"), kb("VmHWM:")) {
        (Some(now), Some(peak)) => format!("resident {} MB (peak {} MB)", now / 1024, peak / 1024),
        _ => "resident memory unknown".into(),
    }
}

/// The process's CPU time so far, user and system.
fn cpu() -> String {
    match predex::metrics::process_cpu() {
        Some(c) => format!("cpu user {:.2} s, system {:.2} s", c.user_s, c.system_s),
        None => "cpu time unknown".into(),
    }
}

/// The role of this process (`PREDEX_RELOAD_ROLE`: `build` or `open`) and its data dir.
const ROLE: &str = "PREDEX_RELOAD_ROLE";
const DIR: &str = "PREDEX_RELOAD_DIR";

fn main() {
    // As `predex serve` starts.
    predex::no_transparent_huge_pages();
    if let (Ok(role), Ok(dir)) = (std::env::var(ROLE), std::env::var(DIR)) {
        match role.as_str() {
            "build" => build(Path::new(&dir)),
            _ => open(Path::new(&dir)),
        }
        return;
    }
    // `cargo bench` passes "--bench"; a filter that names another bench skips this one.
    if std::env::args().skip(1).any(|a| !a.starts_with('-') && !"reload".contains(a.as_str())) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let child = |role: &str| {
        Command::new(std::env::current_exe().unwrap())
            .env(ROLE, role)
            .env(DIR, dir.path())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let crash = std::env::var("PREDEX_BENCH_CRASH").is_ok();
    let mut builder = child("build");
    for line in BufReader::new(builder.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        println!("{line}");
        if line.starts_with("reload: built") && crash {
            builder.kill().unwrap(); // SIGKILL: the memtables never reach the disk
            break;
        }
    }
    builder.wait().unwrap();
    // What the first start replays after a crash (and what a clean close leaves).
    let wal: u64 = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum();
    println!(
        "reload: {:.1} MB of write-ahead log files in the data dir (retired ones kept for reuse included)",
        wal as f64 / 1e6
    );
    let pause = std::time::Duration::from_secs(env("PREDEX_BENCH_PAUSE", 0));
    for run in 1..=3 {
        std::thread::sleep(pause);
        let out = child("open").wait_with_output().unwrap();
        assert!(out.status.success(), "run {run} failed");
        print!("reload: run {run}: {}", String::from_utf8_lossy(&out.stdout));
    }
}

/// Builds the data dir; after its last (synced) write, prints a line and waits to be killed
/// when the parent simulates a crash, or closes the store cleanly.
fn build(dir: &Path) {
    let orders = env("PREDEX_BENCH_ORDERS", 1_000_000);
    let markets = env("PREDEX_BENCH_MARKETS", 1_000);
    let store = Store::open_with(dir, predex::config::Config::default().wal_logs_ahead).unwrap();
    store.wait_logs_ahead().unwrap();
    let t0 = Instant::now();
    let mut b = Batch::default();
    let mut yes = Vec::with_capacity(markets as usize);
    for i in 0..markets {
        let mut m = Market::binary(
            &format!("0x{i:064x}"),
            Token { token_id: token_id(2 * i + 1), outcome: "Yes".into() },
            Token { token_id: token_id(2 * i + 2), outcome: "No".into() },
            Price(100),
            Amount(5_000_000),
        );
        m.idx = i as u32;
        yes.push(OrderToken::of(&m, 0));
        b.put(cf::MARKETS, m.condition_id.as_bytes().to_vec(), encode(&m));
    }
    let users: Vec<Arc<str>> = (0..100).map(|u| Arc::from(format!("0x{:040x}", u + 1))).collect();
    for u in &users {
        b.put_balance(u.clone(), "USDC".into(), Amount(u64::MAX / 256));
    }
    store.write([&b], false).unwrap();
    let sig = predex::domain::packed::PackedStr::new(&format!("0x{}", "ab".repeat(65)));
    let zero: Arc<str> = "0x0000000000000000000000000000000000000000".into();
    let mut b = Batch::default();
    for n in 0..orders {
        let mi = (n % markets) as usize;
        let user = &users[(n % 100) as usize];
        // Bids 0.01–0.49 so nothing crosses.
        let price = 100 * (1 + (n / markets) % 49) as u32;
        let size = 10_000_000;
        // The signature apart, as the engine writes it.
        b.put_signature(n + 1, sig.clone());
        b.put_order(
            Arc::new(OrderRecord {
                id: Uuid::from_u128(n as u128 + 1),
                seq: n + 1,
                status: OrderStatus::Live,
                owner: Uuid::from_u128(1 + n as u128 % 100),
                maker: user.clone(),
                signer: user.clone(),
                taker: zero.clone(),
                token: yes[mi].clone(),
                side: Side::Buy,
                price: Price(price),
                original_size: Amount(size),
                size_matched: Amount::ZERO,
                maker_amount: Amount(size * price as u64 / PRICE_ONE as u64),
                taker_amount: Amount(size),
                fee_rate_bps: 0,
                expiration: 0,
                nonce: 0,
                salt: n,
                signature_type: 0,
                signature: Default::default(),
                order_type: OrderType::Gtc,
                post_only: false,
                reserved: Amount(size * price as u64 / PRICE_ONE as u64),
                associate_trades: Default::default(),
                created_at: 1_700_000_000,
                version: 1,
            }),
            Stored::New,
        );
        if b.ops.len() == 10_000 {
            store.write([&b], false).unwrap();
            b.ops.clear();
        }
    }
    store.write([&b], true).unwrap();
    println!("reload: built {orders} LIVE orders across {markets} markets in {:.1} s", t0.elapsed().as_secs_f64());
    if std::env::var("PREDEX_BENCH_CRASH").is_ok() {
        std::thread::park(); // until SIGKILL
    }
    drop(store); // a clean close flushes the memtables
}

/// One start, timed in a fresh process: open the store, restore the engine.
fn open(dir: &Path) {
    let t = Instant::now();
    // As `predex serve` opens it, log files written ahead included.
    let store = Store::open_with(dir, predex::config::Config::default().wal_logs_ahead).unwrap();
    let opened = t.elapsed();
    let core = predex::engine::recover(&store, "0xfee".into()).unwrap();
    let recovered = t.elapsed();
    // As `predex serve` does before it takes a request: the files written meanwhile.
    store.wait_logs_ahead().unwrap();
    let el = t.elapsed();
    let resting: usize = core.markets.iter().map(|m| m.book.len()).sum();
    assert_eq!(resting as u64, env("PREDEX_BENCH_ORDERS", 1_000_000));
    println!(
        "open + recover of {resting} orders in {:.3} s (open {:.3} s, recovered at {:.3} s); {}; {}",
        el.as_secs_f64(),
        opened.as_secs_f64(),
        recovered.as_secs_f64(),
        resident(),
        cpu()
    );
    std::mem::forget(core); // the process ends: freeing a million orders would only take time
    drop(store); // a clean stop flushes what the open replayed
}
