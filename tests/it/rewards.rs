//! Liquidity rewards and maker rebates: programs, sampling of the resting orders that
//! qualify, earnings per maker, the daily payout into the ledger (once), the REWARD rows in
//! /activity, and rebates by tier.

use serde_json::{json, Value};

use crate::support::*;
use predex::config::RebateTier;

fn earnings(t: &Trader, s: &Server, day: &str) -> u64 {
    let (st, r) = t.l2(s, "GET", &format!("/rewards/user/total?date={day}"), None);
    assert_eq!(st, 200, "{r}");
    r.as_array().unwrap().first().map_or(0, |row| m(&row["earnings"].to_string()))
}

/// One sample's share of `pool` for a maker scoring `q` out of `total`, as the server
/// computes it.
fn share(pool: u128, q: u128, total: u128) -> u64 {
    (pool * q / total) as u64
}

/// The program's makers: `a` rests on both sides near the midpoint, `b` on one side,
/// closest; `c` too small, `d` too far. `per_a` and `per_b` are one sample's earnings.
struct Makers {
    a: Trader,
    b: Trader,
    c: Trader,
    d: Trader,
    a_bid: Value,
    a_ask: Value,
    c_bid: Value,
    d_bid: Value,
    qa: u128,
    qb: u128,
    per_a: u64,
    per_b: u64,
}

#[test]
fn rewards_accrue_to_qualifying_makers_and_pay_once_with_rebates() {
    let s = Server::start_tuned(|c| {
        c.reward_sample_ms = 100;
        c.rebate_tiers = vec![RebateTier { min_volume: 1, bps: 10 }];
    });
    let today = predex::app::rewards::day_str((now() / 86_400) as u32);
    the_operator_sets_a_program_that_the_market_lists(&s);
    let k = makers_rest_orders_and_earn_by_the_quadratic_rule(&s, &today);
    scoring_and_shares_follow_the_samplers_rule(&s, &k, &today);
    let (ea, eb) = ending_the_program_stops_the_accrual(&s, &k, &today);
    let (paid_before, maker, taker) = payouts_pay_rewards_and_rebates_once(&s, &k, &today, (ea, eb));
    the_rebate_and_the_reward_show_in_the_rows(&s, (&k.a, &maker, &taker), &today, ea);
    nothing_is_paid_again_after_a_restart(s, &k.a, &today, paid_before + ea);
}

/// The operator's program: 86,400 USDC a day (0.1 per 100 ms sample), orders of at least
/// 10 shares within 5 cents of the midpoint; bad programs are refused.
fn the_operator_sets_a_program_that_the_market_lists(s: &Server) {
    let program = json!({"condition_id": COND, "rate_per_day": "86400", "min_size": 10, "max_spread": "5"});
    let refused = [
        (
            json!({"condition_id": "0xnone", "rate_per_day": "1", "min_size": 1, "max_spread": 1}),
            404,
            "market not found",
        ),
        (
            json!({"condition_id": COND, "rate_per_day": "1", "min_size": 1, "max_spread": 0}),
            400,
            "max_spread must be more than 0 and at most 50 (cents)",
        ),
        (
            json!({"condition_id": COND, "rate_per_day": "x", "min_size": 1, "max_spread": 1}),
            400,
            "invalid rate_per_day",
        ),
        (json!({"rate_per_day": "1"}), 400, "condition_id is required"),
    ];
    for (body, code, msg) in refused {
        assert_eq!(err(s.internal_post("/internal/rewards", &body)), (code, msg.to_string()), "{body}");
    }
    let (_, cur) = s.get("/rewards/markets/current");
    assert_eq!(cur["data"], json!([]), "no program yet");
    let (st, r) = s.internal_post("/internal/rewards", &program);
    assert_eq!(st, 200, "{r}");
    let (_, cur) = s.get("/rewards/markets/current");
    let row = &cur["data"][0];
    assert_eq!(
        (row["condition_id"].clone(), row["rewards_max_spread"].clone(), row["rewards_min_size"].clone()),
        (json!(COND), json!(5), json!(10)),
        "{cur}"
    );
    assert_eq!(row["rewards_config"][0]["rate_per_day"], json!(86400));
    let (_, simple) = s.get("/simplified-markets");
    assert_eq!(simple["data"][0]["rewards"]["max_spread"], json!(5), "{simple}");
}

fn makers_rest_orders_and_earn_by_the_quadratic_rule(s: &Server, today: &str) -> Makers {
    // a: both sides near the midpoint; b: one side, closest; c: too small; d: too far.
    let (a, b, c, d) = (s.trader(m("100")), s.trader(m("100")), s.trader(m("100")), s.trader(m("100")));
    s.credit(&a.address, YES, m("20"));
    let a_bid = a.place(s, YES, "BUY", "0.48", "20")["orderID"].clone();
    let a_ask = a.place(s, YES, "SELL", "0.52", "20")["orderID"].clone();
    b.place(s, YES, "BUY", "0.49", "20");
    let c_bid = c.place(s, YES, "BUY", "0.49", "5")["orderID"].clone();
    let d_bid = d.place(s, YES, "BUY", "0.40", "20")["orderID"].clone();
    // Midpoint 0.505 (×2: 10100); max spread ×2: 1000. Scores (v − s)² · size:
    // a: bid s=500 → 250000·20e6, ask s=300 → 490000·20e6, Q_min = the smaller side;
    // b: bid s=300 → 490000·20e6 one-sided, a third of it.
    let qa: u128 = 250_000 * 20_000_000;
    let qb: u128 = 490_000 * 20_000_000 / 3;
    let (per_a, per_b) = (share(100_000, qa, qa + qb), share(100_000, qb, qa + qb));
    wait_for(10, || (earnings(&a, s, today) >= 3 * per_a).then_some(()));

    Makers { a, b, c, d, a_bid, a_ask, c_bid, d_bid, qa, qb, per_a, per_b }
}

fn scoring_and_shares_follow_the_samplers_rule(s: &Server, k: &Makers, today: &str) {
    let Makers { a, b, c, d, a_bid, a_ask, c_bid, d_bid, qa, qb, per_a, .. } = k;
    let (qa, qb, per_a) = (*qa, *qb, *per_a);
    // The clients' scoring checks apply the sampler's rule to one order at a time.
    let scoring =
        |t: &Trader, id: &Value| t.l2(s, "GET", &format!("/order-scoring?order_id={}", id.as_str().unwrap()), None);
    assert_eq!(scoring(a, a_bid), (200, json!({"scoring": true})));
    assert_eq!(scoring(c, c_bid), (200, json!({"scoring": false})), "below the min size");
    assert_eq!(scoring(d, d_bid), (200, json!({"scoring": false})), "beyond the max spread");
    assert_eq!(scoring(b, a_bid), (200, json!({"scoring": false})), "another key's order says nothing");
    let ids = json!([a_bid, a_ask, c_bid]);
    let (st, many) = a.l2(s, "POST", "/orders-scoring", Some(&ids));
    assert_eq!(st, 200, "{many}");
    let (ab, aa, cb) = (a_bid.as_str().unwrap(), a_ask.as_str().unwrap(), c_bid.as_str().unwrap());
    assert_eq!(many, json!({ab: true, aa: true, cb: false}));
    assert_eq!(err(a.l2(s, "GET", "/order-scoring", None)), (400, "order_id required".into()));
    assert_eq!(err(a.l2(s, "GET", "/order-scoring?order_id=x", None)).0, 400);
    assert_eq!(err(a.l2(s, "POST", "/orders-scoring", Some(&json!({"x": 1})))), (400, "Invalid payload".into()));
    assert_eq!(err(s.get(&format!("/order-scoring?order_id={ab}"))), (401, "L2 authentication failure".into()));
    // Each maker's share of the program at this instant, in percent (two decimals).
    let pct = |t: &Trader| {
        let (st, v) = t.l2(s, "GET", "/rewards/user/percentages", None);
        assert_eq!(st, 200, "{v}");
        v.as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), (v.as_f64().unwrap() * 100.0).round() as u64))
            .collect::<Vec<_>>()
    };
    assert_eq!(pct(a), vec![(COND.to_string(), share(10_000, qa, qa + qb))]);
    assert_eq!(pct(b), vec![(COND.to_string(), share(10_000, qb, qa + qb))]);
    assert_eq!(pct(c), vec![], "c scores nothing");
    // The program as the clients' MarketReward and UserRewardsEarning show it.
    let (st, mr) = s.get(&format!("/rewards/markets/{COND}"));
    assert_eq!(st, 200, "{mr}");
    assert_eq!(mr["data"][0]["condition_id"], json!(COND));
    assert_eq!(mr["data"][0]["rewards_max_spread"], json!(5));
    assert_eq!(mr["data"][0]["tokens"][0]["token_id"], json!(YES));
    assert_eq!(mr["data"][0]["rewards_config"][0]["rate_per_day"], json!(86400));
    assert_eq!(err(s.get("/rewards/markets/0xnope")), (404, "market not found".into()));
    let (st, um) = a.l2(s, "GET", &format!("/rewards/user/markets?date={today}"), None);
    assert_eq!(st, 200, "{um}");
    let row = &um["data"][0];
    assert_eq!((row["condition_id"].clone(), row["maker_address"].clone()), (json!(COND), json!(a.address)));
    let pct_of_day = row["earning_percentage"].as_f64().unwrap();
    assert!(pct_of_day > 0.0 && pct_of_day < 100.0, "{row}");
    assert!(m(&row["earnings"][0]["earnings"].to_string()) >= 3 * per_a, "{row}");
}

/// Returns what `a` and `b` earned.
fn ending_the_program_stops_the_accrual(s: &Server, k: &Makers, today: &str) -> (u64, u64) {
    let Makers { a, b, c, d, per_a, per_b, .. } = k;
    let (per_a, per_b) = (*per_a, *per_b);
    let off = json!({"condition_id": COND, "rate_per_day": "0", "min_size": 10, "max_spread": "5"});
    assert_eq!(s.internal_post("/internal/rewards", &off).0, 200);
    std::thread::sleep(std::time::Duration::from_millis(400));
    let (ea, eb) = (earnings(a, s, today), earnings(b, s, today));
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(earnings(a, s, today), ea, "no accrual after the program ends");
    // Both scored in the same samples: the same count of each one's share.
    assert_eq!(ea % per_a, 0, "{ea} {per_a}");
    assert_eq!(eb, ea / per_a * per_b, "a {ea} b {eb}");
    assert_eq!((earnings(c, s, today), earnings(d, s, today)), (0, 0));
    let (st, per_market) = a.l2(s, "GET", &format!("/rewards/user?date={today}"), None);
    assert_eq!(st, 200);
    assert_eq!(per_market["data"][0]["condition_id"], json!(COND), "{per_market}");
    assert_eq!(per_market["data"][0]["maker_address"], json!(a.address));
    let (_, cur) = s.get("/rewards/markets/current");
    assert_eq!(cur["data"], json!([]), "ended programs are not current");

    // Bad input.
    assert_eq!(err(s.get("/rewards/user")), (401, "L2 authentication failure".into()));
    assert_eq!(err(a.l2(s, "GET", "/rewards/user?date=23-11-2026", None)), (400, "date must be YYYY-MM-DD".into()));
    assert_eq!(err(a.l2(s, "GET", "/rebates?date=x", None)), (400, "date must be YYYY-MM-DD".into()));

    (ea, eb)
}

/// A trade for the rebates, then the day's payout: each maker's rewards and the rebate
/// into the ledger, once. Returns `a`'s collateral before the payout, and the trade's
/// maker and taker.
fn payouts_pay_rewards_and_rebates_once(
    s: &Server,
    k: &Makers,
    today: &str,
    (ea, eb): (u64, u64),
) -> (u64, Trader, Trader) {
    let Makers { a, b, c, d, .. } = k;
    for t in [&a, &b, &c, &d] {
        assert_eq!(t.l2(s, "DELETE", "/cancel-all", None).0, 200);
    }
    let maker = s.trader(m("100"));
    let taker = s.trader(m("100"));
    s.credit(&maker.address, YES, m("10"));
    maker.place(s, YES, "SELL", "0.50", "10");
    let fill = taker.place(s, YES, "BUY", "0.50", "10");
    assert_eq!(fill["status"], "MATCHED", "{fill}");

    let before = [a.balance(s, "USDC"), b.balance(s, "USDC"), maker.balance(s, "USDC")];
    let (st, paid) = s.internal_post("/internal/payouts", &json!({"through": today}));
    assert_eq!(st, 200, "{paid}");
    let day = paid["days"].as_array().unwrap().last().expect("today paid").clone();
    assert_eq!(day["date"], json!(today));
    let rewards: Vec<(String, u64)> = day["rewards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["address"].as_str().unwrap().to_string(), m(r["amount"].as_str().unwrap())))
        .collect();
    assert!(rewards.contains(&(a.address.clone(), ea)) && rewards.contains(&(b.address.clone(), eb)), "{day}");
    assert_eq!(rewards.len(), 2, "{day}");
    // Maker volume 5 USDC at 10 bps: 0.005; the taker earns no rebate.
    assert_eq!(
        day["rebates"],
        json!([{"address": maker.address, "volume": "5", "bps": 10, "amount": "0.005"}]),
        "{day}"
    );
    // The trade settled before the rebate counted it: the maker got the proceeds too.
    assert_eq!(
        [a.balance(s, "USDC"), b.balance(s, "USDC"), maker.balance(s, "USDC")],
        [before[0] + ea, before[1] + eb, before[2] + m("5") + 5_000]
    );

    // Paid once: a second run pays nothing.
    let (_, again) = s.internal_post("/internal/payouts", &json!({"through": today}));
    assert_eq!(again["days"], json!([]), "{again}");
    assert_eq!(a.balance(s, "USDC"), before[0] + ea);
    assert_eq!(
        err(s.internal_post("/internal/payouts", &json!({"through": "2999-01-01"}))),
        (400, "through must not be after today".into())
    );

    (before[0], maker, taker)
}

fn the_rebate_and_the_reward_show_in_the_rows(
    s: &Server,
    (a, maker, taker): (&Trader, &Trader, &Trader),
    today: &str,
    ea: u64,
) {
    let (_, rb) = maker.l2(s, "GET", "/rebates", None);
    assert_eq!(rb.as_array().unwrap().len(), 1, "{rb}");
    assert_eq!(
        (rb[0]["date"].clone(), rb[0]["maker_volume"].clone(), rb[0]["rebated_fees_usdc"].clone()),
        (json!(today), json!(5), json!(0.005))
    );
    let (_, none) = taker.l2(s, "GET", &format!("/rebates?date={today}"), None);
    assert_eq!(none, json!([]));
    let (_, act) = s.analytics_get(&format!("/activity?user={}&type=REWARD", a.address));
    let rows = act.as_array().unwrap();
    assert_eq!(rows.len(), 1, "{act}");
    assert_eq!(
        (rows[0]["type"].clone(), rows[0]["conditionId"].clone(), rows[0]["usdcSize"].clone()),
        (json!("REWARD"), json!(COND), serde_json::from_str::<Value>(&predex::domain::fmt_amount(ea)).unwrap())
    );
    let (_, all) = s.analytics_get(&format!("/activity?user={}", a.address));
    assert_eq!(all[0]["type"], json!("REWARD"), "the payout is the newest activity: {all}");
    s.check();
}

fn nothing_is_paid_again_after_a_restart(s: Server, a: &Trader, today: &str, balance: u64) {
    let (config, dir) = s.stop();
    let s = Server::start_with(config);
    let (_, again) = s.internal_post("/internal/payouts", &json!({"through": today}));
    assert_eq!(again["days"], json!([]));
    assert_eq!(a.balance(&s, "USDC"), balance);
    drop(dir);
}
