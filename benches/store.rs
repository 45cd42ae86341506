//! `store/commit`: durable fills through the real persister (group commit, synced WAL) on
//! a temp RocksDB. Closed loop: `in_flight()` fills are outstanding at any time, as if that
//! many requests were waiting for their acknowledgement; each durable completion lets the
//! next fill in. A fill writes what a real one does: the taker and maker order records, the
//! trade with its per-owner index, and four balances.
//!
//! Reports criterion's time per fill and, from a separate timed run, durable fills/s,
//! commit latency p50/p99/max (enqueue → durable), the mean group size and the WAL bytes per
//! fill (the persister's). The timed run ends once the wallet analytics, written behind the
//! trades, are written too.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use predex::commit::persister::{self, Job, PersistMetrics};
use predex::commit::After;
use predex::domain::packed::PackedStr;
use predex::domain::*;
use predex::store::{cf, Batch, Store, Stored};
use uuid::Uuid;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Outstanding fills (requests awaiting acknowledgement); `PREDEX_BENCH_IN_FLIGHT` overrides.
fn in_flight() -> usize {
    env_or("PREDEX_BENCH_IN_FLIGHT", 96)
}

/// Fills of the timed run after criterion's samples; `PREDEX_BENCH_FILLS` overrides. The
/// default run is short enough that most families' memtables never flush; a few million
/// fills measure the store with its flushes and compactions running.
fn timed_fills() -> usize {
    env_or("PREDEX_BENCH_FILLS", 200_000)
}

/// Distinct makers and as many takers the fills rotate through; `PREDEX_BENCH_WALLETS`
/// overrides. With one of each (the default) every fill of a group writes the same balances
/// and position counters, which the persister writes once per group; with many, few keys
/// repeat within a group.
fn wallets() -> usize {
    env_or("PREDEX_BENCH_WALLETS", 1).max(1)
}

/// A market's ids, shaped like real ones (the demo catalogue's): they are most of the bytes
/// of the keys and records a fill writes.
const CONDITION: &str = "0xa9b44c58ef9f0915685744c2cb0b78af2dc08a716ac38dd828880a79204f758f";
/// An order's signature, as the engine writes it for a new order.
const SIGNATURE: &str = "0x8a2f9c0e5d7b4a1f3e6c9b2d8a7f4e1c0b5d3a9e7f2c6b8d4a1e9f3c7b5d2a8e6f4c1b9d3a7e5f2c8b6d4a1e9f3c7b5d2a8e6f4c1b9d3a7e5f2c8b6d4a1e9f1b";
const TOKEN: &str = "2533125062127029072497033382062890715058177690830198673817386145166809525645";

/// An order id as scattered as a real one (the exchange derives it from the order's EIP-712
/// hash), so `orders` inserts land all over its memtable (and the open-order index's hash
/// map) rather than appending: splitmix64 of the sequence, twice.
fn order_id(seq: u64) -> Uuid {
    fn mix(mut z: u64) -> u64 {
        z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    Uuid::from_u64_pair(mix(seq), mix(!seq))
}

fn order(seq: u64, maker: &Arc<str>) -> Arc<OrderRecord> {
    Arc::new(OrderRecord {
        id: order_id(seq),
        seq,
        status: OrderStatus::Live,
        owner: Uuid::from_u128(7),
        maker: maker.clone(),
        signer: maker.clone(),
        taker: "0x0000000000000000000000000000000000000000".into(),
        token: Arc::new(OrderToken {
            market_idx: 0,
            condition_id: CONDITION.into(),
            token_id: TOKEN.into(),
            outcome_index: 0,
            outcome: "Yes".into(),
        }),
        side: Side::Buy,
        price: Price(5000),
        original_size: Amount(20_000_000),
        size_matched: Amount(10_000_000),
        maker_amount: Amount(10_000_000),
        taker_amount: Amount(20_000_000),
        fee_rate_bps: 0,
        expiration: 0,
        nonce: 0,
        salt: seq,
        signature_type: 0,
        // Written apart by the engine (`order_signatures`, see `fill`).
        signature: Default::default(),
        order_type: OrderType::Gtc,
        post_only: false,
        reserved: Amount(5_000_000),
        associate_trades: smallvec::smallvec![Uuid::from_u128(seq as u128 + 1)],
        created_at: 1_700_000_000,
        version: 1,
    })
}

fn fill(seq: u64, maker: &Arc<str>, taker: &Arc<str>) -> Batch {
    let mut b = Batch::default();
    let m = order(2 * seq, maker);
    let t = order(2 * seq + 1, taker);
    // The fill's token, sharing the taker order's strings.
    let token = TradeToken::of(&t.token);
    let trade = Arc::new(TradeRecord {
        id: Uuid::from_u128(1 << 64 | seq as u128),
        seq,
        taker_order_id: t.id,
        token: token.clone(),
        side: Side::Sell,
        size: Amount(10_000_000),
        price: Price(5000),
        fee_rate_bps: 0,
        status: TradeStatus::Pending,
        match_time: 1_700_000_000,
        last_update: 1_700_000_000,
        bucket_index: 0,
        owner: Uuid::from_u128(8),
        maker_address: taker.clone(),
        maker_orders: vec![MakerFill {
            order_id: m.id,
            owner: m.owner,
            maker_address: maker.clone(),
            matched_amount: Amount(10_000_000),
            price: Price(5000),
            token,
            side: Side::Buy,
            fee_rate_bps: 0,
            fee: Amount::ZERO,
        }],
        transaction_hash: String::new(),
        taker_fee: Amount::ZERO,
        error_msg: None,
        match_type: MatchType::Complementary,
        version: 1,
    });
    // The maker was resting; the taker is new and rests its remainder, its signature
    // written apart as the engine does.
    b.put_order(m, Stored::Open);
    b.put_signature(t.seq, PackedStr::new(SIGNATURE));
    b.put_order(t, Stored::New);
    b.put_trade(trade);
    for (a, asset) in [(maker, "USDC"), (maker, TOKEN), (taker, "USDC"), (taker, TOKEN)] {
        b.put_balance(a.clone(), asset.into(), Amount(seq));
    }
    b
}

/// Commits `n` fills with `IN_FLIGHT` outstanding; returns elapsed time and per-fill latencies.
fn run(tx: &crossbeam_channel::Sender<Job>, start_seq: u64, n: usize) -> (Duration, Vec<u64>) {
    let w = wallets();
    let makers: Vec<Arc<str>> = (0..w).map(|i| format!("0x11111111{i:032x}").into()).collect();
    let takers: Vec<Arc<str>> = (0..w).map(|i| format!("0x22222222{i:032x}").into()).collect();
    let (done_tx, done_rx) = crossbeam_channel::unbounded::<u64>();
    let mut lat = Vec::with_capacity(n);
    let t0 = Instant::now();
    let mut sent = 0usize;
    let send = |seq: u64| {
        let done = done_tx.clone();
        let enq = Instant::now();
        let (m, t) = (seq as usize % w, (seq as usize / w + seq as usize) % w);
        let batch = fill(seq, &makers[m], &takers[t]);
        tx.send(Job {
            batch,
            after: After::reply(move |ok| {
                assert!(ok, "commit failed");
                let _ = done.send(enq.elapsed().as_micros() as u64);
            }),
        })
        .unwrap();
    };
    while sent < in_flight().min(n) {
        send(start_seq + sent as u64);
        sent += 1;
    }
    while lat.len() < n {
        lat.push(done_rx.recv().unwrap());
        if sent < n {
            send(start_seq + sent as u64);
            sent += 1;
        }
    }
    (t0.elapsed(), lat)
}

fn bench(c: &mut Criterion) {
    // As `predex serve` runs: the pages this run touches are backed 4 KB at a time.
    predex::no_transparent_huge_pages();
    let dir = tempfile::tempdir().unwrap();
    // As `predex serve` opens it: the log's syncs overwrite files written ahead
    // (`PREDEX_BENCH_LOGS_AHEAD=0` opens it without).
    let logs_ahead = env_or("PREDEX_BENCH_LOGS_AHEAD", predex::config::Config::default().wal_logs_ahead);
    let store = Arc::new(Store::open_with(dir.path(), logs_ahead).unwrap());
    store.wait_logs_ahead().unwrap();
    let metrics = Arc::new(PersistMetrics::default());
    let (tx, _h) = persister::spawn(store.clone(), metrics.clone());
    let mut seq = 1u64;

    let mut g = c.benchmark_group("store");
    g.throughput(Throughput::Elements(1));
    g.sample_size(10);
    g.bench_function("commit", |b| {
        b.iter_custom(|iters| {
            let (el, _) = run(&tx, seq, iters as usize);
            seq += iters;
            el
        })
    });
    g.finish();

    // A longer timed run for the figures the README states.
    let (c0, j0) = (metrics.commits.load(Ordering::Relaxed), metrics.jobs.load(Ordering::Relaxed));
    let i0 = metrics.inline_commits.get();
    let s0 = metrics.sync_micros_total.load(Ordering::Relaxed);
    let b0 = metrics.bytes.get();
    let (slow0, slow_us0) =
        (metrics.slow_syncs.load(Ordering::Relaxed), metrics.slow_sync_micros_total.load(Ordering::Relaxed));
    let n = timed_fills();
    let (el, mut lat) = run(&tx, seq, n);
    // The wallet analytics are written behind the trades: the run ends once they are too
    // (a read of their families waits for them).
    let settled = Instant::now();
    store.get_raw(cf::POSITIONS, b"").unwrap();
    let el = el + settled.elapsed();
    lat.sort_unstable();
    let p = |q: f64| lat[((lat.len() as f64 * q) as usize).min(lat.len() - 1)];
    let commits = metrics.commits.load(Ordering::Relaxed) - c0;
    let inline = metrics.inline_commits.get() - i0;
    let jobs = metrics.jobs.load(Ordering::Relaxed) - j0;
    let sync = metrics.sync_micros_total.load(Ordering::Relaxed) - s0;
    let bytes = metrics.bytes.get() - b0;
    // The disk's stalls: a commit's worst latency is often one sync the host held.
    let slow = metrics.slow_syncs.load(Ordering::Relaxed) - slow0;
    let slow_ms = (metrics.slow_sync_micros_total.load(Ordering::Relaxed) - slow_us0) / 1_000;
    println!(
        "store/commit: {:.0} durable fills/s with {} in flight, {} wallets a side; commit latency p50 {} µs, p99 {} µs, max {} µs; {} groups ({} written by the preparer), mean {:.1} fills/group, mean write+sync {} µs ({} of {} ms or more, {} ms in all); {} WAL bytes/fill",
        n as f64 / el.as_secs_f64(),
        in_flight(),
        wallets(),
        p(0.5),
        p(0.99),
        lat[lat.len() - 1],
        commits,
        inline,
        jobs as f64 / commits.max(1) as f64,
        sync / commits.max(1),
        slow,
        persister::SLOW_SYNC_MICROS / 1_000,
        slow_ms,
        bytes / jobs.max(1)
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
