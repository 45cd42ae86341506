//! Engine alone, one core: a realistic command mix (≈70% resting limit orders, 25% cancels,
//! 5% crossing orders sweeping 1–3 levels) on one market. The criterion run replays 10,000
//! commands from an empty book; the percentile run times each of 200,000 commands one by
//! one (the book grows as it goes; its final size is printed).

use std::time::Instant;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use predex::domain::*;
use predex::engine::Core;
use predex::store::Batch;
use uuid::Uuid;

const USERS: usize = 8;

fn addr(u: usize) -> String {
    format!("0x{:040x}", u + 1)
}

thread_local! {
    /// Addresses and strings shared by every generated order, so stream setup is cheap and
    /// a profile of the bench shows the engine, not string formatting.
    static ADDRS: Vec<std::sync::Arc<str>> = (0..USERS).map(|u| addr(u).into()).collect();
    static STRS: [std::sync::Arc<str>; 4] = ["".into(), "0xc".into(), "1".into(), "Yes".into()];
}

fn setup() -> Core {
    let mut c = Core::new("0xfee".into());
    c.add_market(Market::binary(
        "0xc",
        Token { token_id: "1".into(), outcome: "Yes".into() },
        Token { token_id: "2".into(), outcome: "No".into() },
        100,
        0,
    ));
    let mut b = Batch::default();
    for u in 0..USERS {
        c.credit(&addr(u), "USDC", u64::MAX / 64, &mut b);
        c.credit(&addr(u), "1", u64::MAX / 64, &mut b);
    }
    c
}

fn order(n: u64, user: usize, side: Side, price: u32, size: u64, ty: OrderType) -> OrderRecord {
    let cost = size * price as u64 / PRICE_ONE as u64;
    let who = ADDRS.with(|a| a[user].clone());
    let [empty, cond, token, outcome] = STRS.with(|s| s.clone());
    let (maker_amount, taker_amount) = if side == Side::Buy { (cost, size) } else { (size, cost) };
    OrderRecord {
        id: Uuid::from_u128(n as u128),
        seq: 0,
        status: OrderStatus::Live,
        owner: Uuid::from_u128(1 + user as u128),
        maker: who.clone(),
        signer: who,
        taker: empty.clone(),
        market_idx: 0,
        condition_id: cond,
        token_id: token,
        outcome_index: 0,
        outcome,
        side,
        price,
        original_size: size,
        size_matched: 0,
        maker_amount,
        taker_amount,
        fee_rate_bps: 0,
        expiration: 0,
        nonce: 0,
        salt: n,
        signature_type: 0,
        signature: empty,
        order_type: ty,
        post_only: false,
        reserved: 0,
        associate_trades: vec![],
        created_at: 0,
    }
}

/// A deterministic command stream: (order to place) or (order to cancel).
enum Cmd {
    Place(Box<OrderRecord>),
    Cancel(Uuid, Uuid),
}

fn stream(n: usize) -> Vec<Cmd> {
    let mut rng = 0x9e3779b97f4a7c15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut live: Vec<(Uuid, Uuid)> = Vec::new();
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let r = next() % 100;
        let user = (next() % USERS as u64) as usize;
        let id = i as u64 + 1;
        if r < 25 && !live.is_empty() {
            let k = (next() as usize) % live.len();
            let (oid, owner) = live.swap_remove(k);
            out.push(Cmd::Cancel(oid, owner));
        } else if r < 30 {
            // Crossing: sweep 1–3 levels from the touch.
            let buy = next() % 2 == 0;
            let levels = 1 + next() % 3;
            let (side, price) = if buy {
                (Side::Buy, (5000 + 100 * levels) as u32)
            } else {
                (Side::Sell, (5000 - 100 * levels) as u32)
            };
            out.push(Cmd::Place(Box::new(order(id, user, side, price, 1_000_000 * (5 + next() % 20), OrderType::Fak))));
        } else {
            // Resting: bids 0.40–0.49, asks 0.51–0.60.
            let buy = next() % 2 == 0;
            let off = (1 + next() % 10) as u32 * 100;
            let (side, price) = if buy { (Side::Buy, 5000 - off) } else { (Side::Sell, 5000 + off) };
            let o = order(id, user, side, price, 1_000_000 * (5 + next() % 50), OrderType::Gtc);
            live.push((o.id, o.owner));
            out.push(Cmd::Place(Box::new(o)));
        }
    }
    out
}

fn run(c: &mut Core, cmds: Vec<Cmd>) -> Batch {
    let mut b = Batch::default();
    for cmd in cmds {
        match cmd {
            Cmd::Place(o) => {
                let _ = c.place(*o, false, 0, &mut b);
            }
            Cmd::Cancel(id, owner) => {
                c.cancel(owner, &[id], &mut b);
            }
        }
        b.ops.clear();
    }
    b
}

fn bench(cr: &mut Criterion) {
    const N: usize = 10_000;
    let mut g = cr.benchmark_group("engine");
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("mix", |bch| {
        bch.iter_batched(|| (setup(), stream(N)), |(mut c, s)| run(&mut c, s), BatchSize::LargeInput)
    });
    g.finish();

    // Per-command latency percentiles over a longer stream.
    let mut c = setup();
    let cmds = stream(200_000);
    let mut lat = Vec::with_capacity(cmds.len());
    let mut b = Batch::default();
    for cmd in cmds {
        let t = Instant::now();
        match cmd {
            Cmd::Place(o) => {
                let _ = c.place(*o, false, 0, &mut b);
            }
            Cmd::Cancel(id, owner) => {
                c.cancel(owner, &[id], &mut b);
            }
        }
        lat.push(t.elapsed().as_nanos() as u64);
        b.ops.clear();
    }
    lat.sort_unstable();
    let p = |q: f64| lat[((lat.len() as f64 * q) as usize).min(lat.len() - 1)];
    println!(
        "engine/mix per command: p50 {} ns, p99 {} ns, p99.9 {} ns, max {} ns (book ends at {} orders)",
        p(0.5),
        p(0.99),
        p(0.999),
        lat[lat.len() - 1],
        c.markets[0].book.len()
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
