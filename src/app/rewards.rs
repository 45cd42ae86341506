//! Liquidity rewards and maker rebates (SPEC §1, §1.4; docs/reference/rewards.md).
//!
//! - Rewards: a market may carry a reward program (daily rate, min size, max spread). The
//!   sampler scores the resting orders that qualify (Polymarket's quadratic curve, two-sided
//!   rule) every `reward-sample-ms` and accrues each maker's share of that slice of the
//!   daily rate into `rewards` counters.
//! - Payouts: once a UTC day is over (plus a grace for settlement), the payout worker pays
//!   each maker's accrued rewards and its maker rebate (tiered basis points of its settled
//!   maker volume) into the ledger, one engine Transfer per wallet and kind, each written
//!   with the record that marks it paid: a rerun pays nothing twice, and a worker that was
//!   down catches up on every day it missed.

use std::collections::BTreeMap;
use std::sync::Arc;

use alloy_primitives::{keccak256, U256};
use parking_lot::{Mutex, RwLock};
use serde::Deserialize;

use crate::app::AppState;
use crate::commit::views::mirror;
use crate::config::RebateTier;
use crate::domain::analytics::{CtfActivity, CtfKind, DAY};
use crate::domain::rewards::reward_weight;
use crate::domain::{
    fmt_date, mul_div_floor, now_micros, now_secs, parse_date, parse_decimal, Amount, BadDate, NumberText, OrderRecord,
    OrderStatus, TradeStatus, AMOUNT_ONE, COLLATERAL,
};
use crate::engine::{EngineError, LedgerChange, RewardScores};
use crate::store::{Batch, Store, StoreError};

/// What a rewards or rebates service refuses (the routes give each its SPEC §7 reply).
#[derive(Debug, thiserror::Error)]
pub enum RewardsError {
    #[error("invalid {0}")]
    Invalid(&'static str),
    #[error("max_spread must be more than 0 and at most 50 (cents)")]
    MaxSpread,
    #[error("end_date must be after start_date")]
    EndBeforeStart,
    #[error(transparent)]
    BadDate(#[from] BadDate),
    #[error("date must be YYYY-MM-DD")]
    BadDay,
    #[error("market not found")]
    NoMarket,
    #[error("through must not be after today")]
    AfterToday,
    /// A payout run failed part-way (what it paid is durable; a rerun pays the rest).
    #[error("payout failed: {0}")]
    PayoutFailed(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub use crate::domain::rewards::{Rebate, RewardConfig, RewardPaid};

/// A reward program as markets.json and POST /internal/rewards give it: the daily rate in
/// USDC, the min size in shares, the max spread in cents (Polymarket's units), dates as
/// RFC 3339 or YYYY-MM-DD.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RewardSpec {
    pub rate_per_day: NumberText,
    pub min_size: NumberText,
    pub max_spread: NumberText,
    #[serde(default)]
    pub start_date: Option<String>,
    #[serde(default)]
    pub end_date: Option<String>,
}

impl RewardSpec {
    pub fn config(&self, condition_id: &str) -> Result<RewardConfig, RewardsError> {
        let dec = |v: &NumberText, places: u32, what: &'static str| {
            parse_decimal(&v.text(), places).map_err(|_| RewardsError::Invalid(what))
        };
        let max_spread = dec(&self.max_spread, 2, "max_spread")?;
        if max_spread == 0 || max_spread > 5_000 {
            return Err(RewardsError::MaxSpread);
        }
        let date = |d: &Option<String>| d.as_deref().map(parse_date).transpose();
        let (start, end) = (date(&self.start_date)?, date(&self.end_date)?);
        if let (Some(s), Some(e)) = (start, end) {
            if e <= s {
                return Err(RewardsError::EndBeforeStart);
            }
        }
        Ok(RewardConfig {
            condition_id: condition_id.to_string(),
            rate_per_day: dec(&self.rate_per_day, 6, "rate_per_day")?,
            min_size: dec(&self.min_size, 6, "min_size")?,
            max_spread: max_spread as u32,
            start,
            end,
        })
    }
}

/// The rewards' state: every market's reward program, kept in memory (read by the sampler
/// and the listings), and the lock that serialises payouts (worker and operator).
pub struct Rewards {
    pub programs: RwLock<BTreeMap<String, RewardConfig>>,
    pub payouts: Mutex<()>,
}

impl Rewards {
    pub fn load(store: &Store) -> Result<Rewards, StoreError> {
        let programs = store.reward_configs()?.into_iter().map(|c| (c.condition_id.clone(), c)).collect();
        Ok(Rewards { programs: RwLock::new(programs), payouts: Mutex::new(()) })
    }
}

/// Sets (or replaces) a market's program once durable.
pub async fn set_config(s: &AppState, c: RewardConfig) -> Result<(), StoreError> {
    let mut b = Batch::default();
    b.put_reward_config(&c);
    s.commit(b).await?;
    s.rewards.programs.write().insert(c.condition_id.clone(), c);
    Ok(())
}

/// Polymarket's Q_min: the smaller side's score, or, while the midpoint is within
/// [0.10, 0.90], a third of the larger side's when that is more (a one-sided maker still
/// earns, less).
pub fn q_min(q: [u128; 2], midpoint2: u32) -> u128 {
    let lo = q[0].min(q[1]);
    if (2_000..=18_000).contains(&midpoint2) {
        lo.max(q[0].max(q[1]) / 3)
    } else {
        lo
    }
}

/// Splits `pool` between the makers in proportion to their Q_min (floored: the sum never
/// exceeds the pool). Makers with no score get nothing.
pub fn shares(pool: u64, sc: &RewardScores) -> Vec<(Arc<str>, u64)> {
    let q: Vec<u128> = sc.makers.iter().map(|(_, q)| q_min(*q, sc.midpoint2)).collect();
    let total: u128 = q.iter().sum();
    if total == 0 {
        return Vec::new();
    }
    sc.makers
        .iter()
        .zip(q)
        .filter(|(_, q)| *q > 0)
        .map(|((a, _), q)| {
            let v = U256::from(pool) * U256::from(q) / U256::from(total);
            (a.clone(), v.to::<u64>())
        })
        .filter(|(_, v)| *v > 0)
        .collect()
}

/// One reward sample: scores every active program's market and accrues each maker's share
/// of `interval_ms` worth of the daily rate. Returns how many accruals were written.
pub fn sample(s: &AppState, interval_ms: u64, now: u64) -> Result<usize, String> {
    let configs: Vec<(RewardConfig, u32)> = s
        .rewards
        .programs
        .read()
        .values()
        .filter(|c| c.active(now))
        .filter_map(|c| s.registry.condition(&c.condition_id).map(|v| (c.clone(), v.market.idx)))
        .collect();
    if configs.is_empty() {
        return Ok(0);
    }
    let queries = configs.iter().map(|(c, idx)| (*idx, c.max_spread, c.min_size)).collect();
    let scores = s.engine.blocking().reward_scores(queries).map_err(|e| format!("{e:?}"))?;
    let day = (now / DAY) as u32;
    let mut batch = Batch::default();
    let mut n = 0;
    for ((c, _), sc) in configs.iter().zip(scores) {
        let Some(sc) = sc else { continue };
        let pool = mul_div_floor(c.rate_per_day, interval_ms, DAY * 1_000);
        for (maker, earned) in shares(pool, &sc) {
            batch.accrue_reward(day, &maker, &c.condition_id, earned);
            n += 1;
        }
    }
    if n > 0 {
        s.commit_blocking(batch).map_err(|e| e.to_string())?;
    }
    Ok(n)
}

/// The days to pay: from the day after the last paid one (or the first day with data)
/// up to, not including, the first day not yet over by `grace` seconds.
pub fn due_days(through: Option<u32>, first: Option<u32>, now: u64, grace: u64) -> std::ops::Range<u32> {
    let open = (now.saturating_sub(grace) / DAY) as u32;
    let start = match through {
        Some(t) => t + 1,
        None => first.unwrap_or(open),
    };
    start..open.max(start)
}

/// What one day's payout paid.
#[derive(Debug, Default)]
pub struct DayPaid {
    pub day: u32,
    pub rewards: Vec<(String, u64)>,
    pub rebates: Vec<(String, Rebate)>,
}

pub fn day_str(day: u32) -> String {
    fmt_date(day as u64 * DAY)[..10].to_string()
}

/// A YYYY-MM-DD day as days since the epoch.
pub fn parse_day(s: &str) -> Result<u32, RewardsError> {
    if s.len() != 10 {
        return Err(RewardsError::BadDay);
    }
    parse_date(s).map(|t| (t / DAY) as u32).map_err(|_| RewardsError::BadDay)
}

/// The first day anything could be paid for: the earliest accrued reward or trade.
fn first_day(s: &AppState) -> Result<Option<u32>, StoreError> {
    let mut first: Option<u32> = None;
    let mut seen = |d: u32| first = Some(first.map_or(d, |f| f.min(d)));
    if let Some(d) = s.store.first_earning_day()? {
        seen(d);
    }
    for v in &s.registry.tables().list {
        if let Some(t) = s.store.first_market_trade_time(v.market.idx)? {
            seen((t / DAY) as u32);
        }
    }
    Ok(first)
}

/// Pays every unpaid day up to and including `last` (the worker passes the last finished
/// day; the operator may name today, which pays what it holds so far and closes it).
/// Serialised: the worker and the operator never pay at once.
pub fn pay_through(s: &AppState, last: u32) -> Result<Vec<DayPaid>, String> {
    let _one = s.rewards.payouts.lock();
    let err = |e: StoreError| e.to_string();
    let through: Option<u32> = s.store.payouts_through().map_err(err)?;
    let start = match through {
        Some(t) => t + 1,
        None => first_day(s).map_err(err)?.unwrap_or(last).min(last),
    };
    let mut out = Vec::new();
    for day in start..=last {
        let paid = pay_day(s, day)?;
        let mut b = Batch::default();
        b.put_payouts_through(day);
        s.commit_blocking(b).map_err(|e| e.to_string())?;
        out.push(paid);
    }
    Ok(out)
}

/// One day's rewards and rebates. Each wallet's payout is one Transfer written with the
/// record that marks it paid, so a rerun after a crash skips what was paid.
fn pay_day(s: &AppState, day: u32) -> Result<DayPaid, String> {
    let err = |e: StoreError| e.to_string();
    let now_us = now_micros();
    let mut out = DayPaid { day, ..Default::default() };

    // Rewards: per wallet, per market.
    let mut earned: BTreeMap<String, Vec<(String, u64)>> = BTreeMap::new();
    for (a, c, n) in s.store.earnings_on(day).map_err(err)? {
        if n > 0 {
            earned.entry(a).or_default().push((c, n as u64));
        }
    }
    for (address, markets) in earned {
        if s.store.reward_paid(&address, day).map_err(err)? {
            continue;
        }
        let total: u64 = markets.iter().map(|(_, n)| n).sum();
        let mut records = Batch::default();
        for (condition_id, n) in &markets {
            let Some(view) = s.registry.condition(condition_id) else { continue };
            let tx = keccak256(
                [b"predex-reward".as_slice(), &day.to_be_bytes(), address.as_bytes(), condition_id.as_bytes()].concat(),
            )
            .0;
            let row = CtfActivity {
                kind: CtfKind::Reward,
                condition_id: condition_id.clone(),
                market_idx: view.market.idx,
                size: Amount(*n),
                usdc_size: Amount(*n),
                tx_hash: tx,
                time: now_us / 1_000_000,
            };
            records.add_activity(&address, now_us, &row);
        }
        let rec = RewardPaid { day, amount: total, paid_at: now_us / 1_000_000 };
        records.put_reward_paid(&address, &rec);
        s.engine
            .blocking()
            .transfer(address.clone(), vec![(COLLATERAL.to_string(), LedgerChange::Credit(Amount(total)))], records)
            .map_err(|e| format!("reward payout to {address}: {e:?}"))?;
        out.rewards.push((address, total));
    }

    // Rebates: settled maker volume per maker address over the day's trades.
    let mut volume: BTreeMap<String, u64> = BTreeMap::new();
    let (from, to) = (day as u64 * DAY, (day as u64 + 1) * DAY);
    for v in &s.registry.tables().list {
        for (_, tick) in s.store.market_ticks(v.market.idx, from, to - 1).map_err(err)? {
            if let Some(tr) = s.store.get_trade(&tick.id).map_err(err)? {
                if tr.status == TradeStatus::Confirmed {
                    let [_, maker] = tr.legs();
                    *volume.entry(maker.address.to_string()).or_default() += maker.amount.units();
                }
            }
        }
    }
    for (address, vol) in volume {
        if s.store.rebate_paid(&address, day).map_err(err)? {
            continue;
        }
        let bps = tier_bps(&s.config.rebate_tiers, vol);
        let amount = mul_div_floor(vol, bps as u64, 10_000);
        let rec = Rebate { day, volume: vol, bps, amount, paid_at: now_us / 1_000_000 };
        let mut records = Batch::default();
        records.put_rebate(&address, &rec);
        s.engine
            .blocking()
            .transfer(address.clone(), vec![(COLLATERAL.to_string(), LedgerChange::Credit(Amount(amount)))], records)
            .map_err(|e| format!("rebate to {address}: {e:?}"))?;
        out.rebates.push((address, rec));
    }
    Ok(out)
}

/// The basis points of the highest tier a day's maker volume reaches (0 below the first).
pub fn tier_bps(tiers: &[RebateTier], volume: u64) -> u32 {
    tiers.iter().rev().find(|t| volume >= t.min_volume.saturating_mul(AMOUNT_ONE)).map_or(0, |t| t.bps)
}

/// The payout worker's run: settles what is pending (so the day's trades count), then pays
/// every finished day not yet paid.
pub fn run_due(s: &AppState) -> Result<Vec<DayPaid>, String> {
    let through: Option<u32> = s.store.payouts_through().map_err(|e| e.to_string())?;
    let first = if through.is_none() { first_day(s).map_err(|e| e.to_string())? } else { None };
    let due = due_days(through, first, now_secs(), s.config.payout_grace_secs);
    if due.is_empty() {
        if through.is_none() && first.is_none() {
            // Nothing ever happened: start counting from the last finished day.
            let mut b = Batch::default();
            b.put_payouts_through(due.end.saturating_sub(1));
            s.commit_blocking(b).map_err(|e| e.to_string())?;
        }
        return Ok(Vec::new());
    }
    crate::app::settlement::settle_all(&s.engine).map_err(|e| format!("{e:?}"))?;
    pay_through(s, due.end - 1)
}

// ---- services --------------------------------------------------------------------------

/// Whether an order counts for its market's rewards now — the sampler's rule for one
/// order: LIVE, in a market whose program runs now and that trades with both sides of its
/// book, with at least the program's minimum size left, within its max spread of the
/// midpoint (YES terms: a BUY NO at 0.49 is an ask at 0.51).
pub fn order_scoring(s: &AppState, o: &OrderRecord, now: u64) -> bool {
    if o.status != OrderStatus::Live {
        return false;
    }
    let Some(c) = s.rewards.programs.read().get(&*o.token.condition_id).cloned() else {
        return false;
    };
    let Some(view) = s.registry.condition(&o.token.condition_id) else {
        return false;
    };
    if !c.active(now)
        || o.remaining().units() < c.min_size
        || !view.market.accepting_orders
        || crate::app::resolution::is_closed(s, &view)
    {
        return false;
    }
    let (Some(bid), Some(ask)) = view.snapshot().best(0) else {
        return false;
    };
    let (price, _) = mirror(o.token.outcome_index, o.price, o.side);
    reward_weight(price.units(), bid.units() + ask.units(), c.max_spread).is_some()
}

/// A wallet's share of each running program now (the sampler's split of this instant),
/// in hundredths of a percent, for the markets where it scores.
pub async fn shares_now(s: &AppState, address: &str, now: u64) -> Result<Vec<(String, u64)>, EngineError> {
    let configs: Vec<(String, u32, u32, u64)> = s
        .rewards
        .programs
        .read()
        .values()
        .filter(|c| c.active(now))
        .filter_map(|c| {
            s.registry
                .condition(&c.condition_id)
                .map(|v| (c.condition_id.clone(), v.market.idx, c.max_spread, c.min_size))
        })
        .collect();
    let queries = configs.iter().map(|(_, idx, spread, size)| (*idx, *spread, *size)).collect();
    let scores = s.engine.reward_scores(queries).await?;
    Ok(configs
        .into_iter()
        .zip(scores)
        .filter_map(|((cid, ..), sc)| {
            let share = shares(10_000, &sc?).into_iter().find(|(a, _)| &**a == address)?.1;
            Some((cid, share))
        })
        .collect())
}

/// A wallet's accrued rewards on a day, per market (micro-units).
pub fn earnings(s: &AppState, address: &str, day: u32) -> Result<Vec<(String, u64)>, StoreError> {
    Ok(s.store.earnings_of(address, day)?.into_iter().map(|(c, n)| (c, n.max(0) as u64)).collect())
}

/// A wallet's maker rebates, newest day first (`only`: that day's).
pub fn rebates(s: &AppState, address: &str, only: Option<u32>) -> Result<Vec<Rebate>, StoreError> {
    Ok(s.store.rebates_of(address)?.into_iter().filter(|rb| only.is_none_or(|d| d == rb.day)).collect())
}

/// Sets a market's reward program (rate 0 ends it).
pub async fn set_program(s: &AppState, condition_id: &str, spec: &RewardSpec) -> Result<RewardConfig, RewardsError> {
    if s.registry.condition(condition_id).is_none() {
        return Err(RewardsError::NoMarket);
    }
    let c = spec.config(condition_id)?;
    set_config(s, c.clone()).await?;
    Ok(c)
}

/// Pays rewards and rebates for every unpaid day through `through` (default yesterday;
/// today closes today early), after settling what is pending. Returns the last day paid
/// for and what each day paid.
pub async fn payouts(s: Arc<AppState>, through: Option<u32>) -> Result<(u32, Vec<DayPaid>), RewardsError> {
    let today = (now_secs() / DAY) as u32;
    let last = through.unwrap_or(today - 1);
    if last > today {
        return Err(RewardsError::AfterToday);
    }
    let paid = tokio::task::spawn_blocking(move || {
        crate::app::settlement::settle_all(&s.engine).map_err(|e| format!("{e:?}"))?;
        pay_through(&s, last)
    })
    .await
    .map_err(|e| RewardsError::PayoutFailed(e.to_string()))?
    .map_err(RewardsError::PayoutFailed)?;
    Ok((last, paid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_days_catch_up_after_downtime() {
        let now = 100 * DAY + 3_600;
        // Paid through day 96: days 97, 98 and 99 are due; 100 is still running.
        assert_eq!(due_days(Some(96), None, now, 120), 97..100);
        // Within the grace after midnight, yesterday waits.
        assert_eq!(due_days(Some(96), None, 100 * DAY + 60, 120), 97..99);
        assert!(due_days(Some(99), None, now, 120).is_empty());
        // Never paid: from the first day with data; nothing at all: nothing due.
        assert_eq!(due_days(None, Some(98), now, 120), 98..100);
        assert!(due_days(None, None, now, 120).is_empty());
        // Paid ahead (the operator closed today early): nothing due until tomorrow is over.
        assert!(due_days(Some(100), None, now, 120).is_empty());
    }

    #[test]
    fn scoring_follows_the_two_sided_rule() {
        // Inside [0.10, 0.90] a one-sided maker scores a third.
        assert_eq!(q_min([900, 0], 10_000), 300);
        assert_eq!(q_min([900, 600], 10_000), 600);
        // Outside it, both sides are needed.
        assert_eq!(q_min([900, 0], 1_000), 0);
        assert_eq!(q_min([900, 600], 19_000), 600);
        let sc = RewardScores {
            midpoint2: 10_000,
            spread2: 600,
            makers: vec![("a".into(), [200, 100]), ("b".into(), [300, 0]), ("c".into(), [0, 0])],
        };
        // Q_min: a 100, b 100, c 0.
        let got = shares(1_001, &sc);
        assert_eq!(got, vec![("a".into(), 500), ("b".into(), 500)]);
        assert!(got.iter().map(|(_, n)| n).sum::<u64>() <= 1_001);
    }

    #[test]
    fn tiers_and_units() {
        let tiers = [RebateTier { min_volume: 1_000, bps: 1 }, RebateTier { min_volume: 100_000, bps: 2 }];
        assert_eq!(tier_bps(&tiers, 999 * AMOUNT_ONE), 0);
        assert_eq!(tier_bps(&tiers, 1_000 * AMOUNT_ONE), 1);
        assert_eq!(tier_bps(&tiers, 200_000 * AMOUNT_ONE), 2);
        assert_eq!(day_str(20_415), "2025-11-23");
    }
}
