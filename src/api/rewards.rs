//! Rewards' and rebates' routes (SPEC §1.4, §2.10; `app::rewards` has the rules): `GET
//! /rewards/markets/current`, `/rewards/user`, `/rewards/user/total`, `/rebates`, and the
//! operator's `POST /internal/rewards` and `/internal/payouts`.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{json, Value};
use warp::Filter;

use super::account::wallet;
use super::number;
use super::paging;
use super::{authenticate_read, handle, handle_now, ApiError, ApiResult, Req, Routes};
use crate::app::rewards::{self, day_str, DayPaid, RewardConfig, RewardSpec, RewardsError};
use crate::app::AppState;
use crate::domain::analytics::DAY;
use crate::domain::{fmt_amount, fmt_date, now_secs, COLLATERAL};

impl From<RewardsError> for ApiError {
    fn from(e: RewardsError) -> ApiError {
        use RewardsError as E;
        match e {
            E::Store(e) => e.into(),
            E::NoMarket => ApiError::not_found(e.to_string()),
            E::PayoutFailed(why) => {
                tracing::error!("payout failed: {why}");
                ApiError::db()
            }
            E::Invalid(_) | E::MaxSpread | E::EndBeforeStart | E::BadDate(_) | E::BadDay | E::AfterToday => {
                ApiError::bad(e.to_string())
            }
        }
    }
}

/// The `rewards` object of GET /simplified-markets and /markets (SPEC §2.10): rates per
/// asset, min size in shares, max spread in cents; a market without a program has none.
pub fn rewards_json(c: Option<&RewardConfig>) -> Value {
    match c {
        Some(c) => json!({
            "rates": [{ "asset_address": COLLATERAL, "rewards_daily_rate": number(&fmt_amount(c.rate_per_day)) }],
            "min_size": number(&fmt_amount(c.min_size)),
            "max_spread": number(&cents(c.max_spread)),
        }),
        None => json!({ "rates": [], "min_size": 0, "max_spread": 0 }),
    }
}

/// 1e-4 price units as cents ("3.5" for 350).
fn cents(p: u32) -> String {
    hundredths(p as u64)
}

fn day_paid_json(d: &DayPaid) -> Value {
    json!({
        "date": day_str(d.day),
        "rewards": d.rewards.iter().map(|(a, n)| json!({"address": a, "amount": fmt_amount(*n)})).collect::<Vec<_>>(),
        "rebates": d.rebates.iter().map(|(a, r)| json!({
            "address": a,
            "volume": fmt_amount(r.volume),
            "bps": r.bps,
            "amount": fmt_amount(r.amount),
        })).collect::<Vec<_>>(),
    })
}

pub fn routes(state: Arc<AppState>) -> Routes {
    let current = handle_now(warp::path!("rewards" / "markets" / "current").and(warp::get()), &state, current);
    let user = handle(warp::path!("rewards" / "user").and(warp::get()), &state, |s, r| async move {
        user_earnings(s, r, false).await
    });
    let total = handle(warp::path!("rewards" / "user" / "total").and(warp::get()), &state, |s, r| async move {
        user_earnings(s, r, true).await
    });
    let rebates = handle(warp::path!("rebates").and(warp::get()), &state, rebates);
    let market = warp::path!("rewards" / "markets" / String)
        .and(warp::get())
        .and(super::req())
        .and(super::with_state(state.clone()))
        .map(|id: String, r: Req, s: Arc<AppState>| super::respond(market_rewards(&s, &r, &id)));
    let user_markets = handle(warp::path!("rewards" / "user" / "markets").and(warp::get()), &state, user_markets);
    let percentages = handle(warp::path!("rewards" / "user" / "percentages").and(warp::get()), &state, percentages);
    let scoring = handle_now(warp::path!("order-scoring").and(warp::get()), &state, |s, r| order_scoring(&s, &r));
    let scorings = handle_now(warp::path!("orders-scoring").and(warp::post()), &state, |s, r| orders_scoring(&s, &r));
    // Boxed in groups: see `book::routes`.
    let rewards = current.or(user).unify().or(total).unify().or(rebates).unify().boxed();
    let more = user_markets.or(percentages).unify().or(market).unify().or(scoring).unify().or(scorings).unify().boxed();
    rewards.or(more).unify().boxed()
}

/// GET /rewards/markets/current: every market whose program runs now, in the paginated
/// envelope.
fn current(s: Arc<AppState>, r: Req) -> ApiResult {
    let now = now_secs();
    let items: Vec<Value> = s
        .rewards
        .programs
        .read()
        .values()
        .filter(|c| c.active(now))
        .map(|c| {
            json!({
                "condition_id": c.condition_id,
                "rewards_max_spread": number(&cents(c.max_spread)),
                "rewards_min_size": number(&fmt_amount(c.min_size)),
                "rewards_config": rewards_config(c),
                "total_daily_rate": number(&fmt_amount(c.rate_per_day)),
            })
        })
        .collect();
    paging::page(items, paging::offset(r.query_map().get("next_cursor"))?)
}

/// A program's `rewards_config` entries: one per asset paid (collateral), with its window
/// (open ends shown as 1970-01-01 and 2500-12-31) and daily rate; `total_rewards` is the
/// window's whole budget, 0 for an open-ended program.
fn rewards_config(c: &RewardConfig) -> Value {
    let date = |t: Option<u64>, none: &str| t.map_or(none.to_string(), |t| fmt_date(t)[..10].to_string());
    let total = match (c.start, c.end) {
        (Some(a), Some(b)) if b > a => c.rate_per_day.saturating_mul((b - a).div_ceil(DAY)),
        _ => 0,
    };
    json!([{
        "asset_address": COLLATERAL,
        "start_date": date(c.start, "1970-01-01"),
        "end_date": date(c.end, "2500-12-31"),
        "rate_per_day": number(&fmt_amount(c.rate_per_day)),
        "total_rewards": number(&fmt_amount(total)),
    }])
}

/// A program as the clients' `MarketReward` shows it: the market's question, slug,
/// picture and token prices with the program's terms.
fn market_reward(s: &AppState, c: &RewardConfig) -> Value {
    let view = s.registry.condition(&c.condition_id);
    let meta = s.catalogue.meta(&c.condition_id);
    let tokens: Vec<Value> = view.as_deref().map(super::render::token_numbers).unwrap_or_default();
    json!({
        "condition_id": c.condition_id,
        "question": view.as_ref().map_or("", |v| v.market.question.as_str()),
        "market_slug": view.as_ref().map_or("", |v| v.market.slug.as_str()),
        "event_slug": "",
        "image": meta.as_ref().map_or("", |m| m.image.as_str()),
        "rewards_max_spread": number(&cents(c.max_spread)),
        "rewards_min_size": number(&fmt_amount(c.min_size)),
        "tokens": tokens,
        "rewards_config": rewards_config(c),
    })
}

/// GET /rewards/markets/{condition_id}: the market's running program, in the paginated
/// envelope (empty when it has none running); 404 for a market predex does not list.
fn market_rewards(s: &AppState, r: &Req, condition_id: &str) -> ApiResult {
    let offset = paging::offset(r.query_map().get("next_cursor"))?;
    if s.registry.condition(condition_id).is_none() {
        return Err(ApiError::not_found("market not found"));
    }
    let c = s.rewards.programs.read().get(condition_id).filter(|c| c.active(now_secs())).cloned();
    paging::page(c.iter().map(|c| market_reward(s, c)).collect(), offset)
}

/// GET /rewards/user/markets (`date`, `signature_type`, `next_cursor`): for each market
/// whose program runs now or paid the wallet on that day, the program, the wallet's
/// earnings that day and its share of the market's earnings that day (a percentage).
async fn user_markets(s: Arc<AppState>, r: Req) -> ApiResult {
    let key = authenticate_read(&s, &r)?;
    let day = date_param(&r)?;
    let offset = paging::offset(r.query_map().get("next_cursor"))?;
    let address = wallet(&s, &key, &r)?;
    let mine: BTreeMap<String, u64> = rewards::earnings(&s, &address, day)?.into_iter().collect();
    let mut all: BTreeMap<String, u64> = BTreeMap::new();
    for (_, c, n) in s.store.earnings_on(day)? {
        *all.entry(c).or_default() += n.max(0) as u64;
    }
    let now = now_secs();
    let programs: Vec<RewardConfig> = s
        .rewards
        .programs
        .read()
        .values()
        .filter(|c| c.active(now) || mine.contains_key(&c.condition_id))
        .cloned()
        .collect();
    let items = programs
        .iter()
        .map(|c| {
            let earned = mine.get(&c.condition_id).copied().unwrap_or(0);
            let total = all.get(&c.condition_id).copied().unwrap_or(0);
            let mut v = market_reward(&s, c);
            v["maker_address"] = json!(address);
            v["market_competitiveness"] = json!(0);
            v["earning_percentage"] = number(&percent(earned, total));
            v["earnings"] = json!([{
                "asset_address": COLLATERAL,
                "earnings": number(&fmt_amount(earned)),
                "asset_rate": 1,
            }]);
            v
        })
        .collect();
    paging::page(items, offset)
}

/// `part` of `whole` as a percentage with two decimals ("37.5"), 0 of nothing.
fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "0".into();
    }
    // Hundredths of a percent, as a price-like 1e-4 fraction of 100.
    let bp = (part as u128 * 10_000 / whole as u128) as u64;
    hundredths(bp)
}

/// A count of hundredths as a short decimal: 350 → "3.5", 6051 → "60.51", 100 → "1".
fn hundredths(bp: u64) -> String {
    let (int, frac) = (bp / 100, bp % 100);
    match frac {
        0 => int.to_string(),
        f if f % 10 == 0 => format!("{int}.{}", f / 10),
        f => format!("{int}.{f:02}"),
    }
}

/// GET /rewards/user/percentages (`signature_type`): the wallet's share of each running
/// program's market at this instant — what the next sample would give it — as
/// `{condition_id: percent}`, for the markets where it scores.
async fn percentages(s: Arc<AppState>, r: Req) -> ApiResult {
    let key = authenticate_read(&s, &r)?;
    let address = wallet(&s, &key, &r)?;
    let shares = rewards::shares_now(&s, &address, now_secs()).await.map_err(ApiError::from)?;
    let out: serde_json::Map<String, Value> = shares.into_iter().map(|(c, bp)| (c, number(&hundredths(bp)))).collect();
    super::reply(&out)
}

/// The caller's order `id` if it exists; None for another key's or an unknown one (which
/// score nothing, and say no more).
fn own_order(s: &AppState, owner: uuid::Uuid, id: &str) -> Result<Option<crate::domain::OrderRecord>, ApiError> {
    let id = super::wire::parse_id(id)?;
    Ok(s.store.get_order(&id)?.filter(|o| o.owner == owner))
}

/// GET /order-scoring?order_id=: `{"scoring": bool}` — whether the caller's order counts
/// for its market's rewards now.
fn order_scoring(s: &AppState, r: &Req) -> ApiResult {
    let key = authenticate_read(s, r)?;
    let q = r.query_map();
    let id = q.get("order_id").filter(|x| !x.is_empty()).ok_or_else(|| ApiError::bad("order_id required"))?;
    let now = now_secs();
    let scoring = own_order(s, key.key, id)?.is_some_and(|o| rewards::order_scoring(s, &o, now));
    super::reply(&json!({ "scoring": scoring }))
}

/// POST /orders-scoring `["id", ...]` (or `{"orderIds": [...]}`): `{id: bool}` for each.
fn orders_scoring(s: &AppState, r: &Req) -> ApiResult {
    let key = authenticate_read(s, r)?;
    let v: Value = serde_json::from_slice(&r.body).map_err(|_| ApiError::bad("Invalid payload"))?;
    let ids = match &v {
        Value::Array(a) => a,
        Value::Object(o) => match o.get("orderIds") {
            Some(Value::Array(a)) => a,
            _ => return Err(ApiError::bad("Invalid payload")),
        },
        _ => return Err(ApiError::bad("Invalid payload")),
    };
    if ids.len() > super::orders::MAX_CANCEL {
        return Err(ApiError::bad("Payload exceeds the limit"));
    }
    let now = now_secs();
    let mut out = serde_json::Map::new();
    for id in ids {
        let id = id.as_str().ok_or_else(|| ApiError::bad("Invalid orderID"))?;
        let scoring = own_order(s, key.key, id)?.is_some_and(|o| rewards::order_scoring(s, &o, now));
        out.insert(id.to_string(), json!(scoring));
    }
    super::reply(&out)
}

fn date_param(r: &Req) -> Result<u32, ApiError> {
    match r.query_map().get("date").filter(|d| !d.is_empty()) {
        Some(d) => Ok(rewards::parse_day(d)?),
        None => Ok((now_secs() / DAY) as u32),
    }
}

/// GET /rewards/user (per market, paginated) and /rewards/user/total (summed): a wallet's
/// rewards on a day (`date`, default today; today's are still accruing), for the key's
/// address or, with signature_type 1 or 2, its derived proxy wallet or Safe.
async fn user_earnings(s: Arc<AppState>, r: Req, total: bool) -> ApiResult {
    let key = authenticate_read(&s, &r)?;
    let day = date_param(&r)?;
    let offset = paging::offset(r.query_map().get("next_cursor"))?;
    let address = wallet(&s, &key, &r)?;
    let rows = rewards::earnings(&s, &address, day)?;
    let date = day_str(day);
    if total {
        let sum: u64 = rows.iter().map(|(_, n)| n).sum();
        if rows.is_empty() {
            return super::reply(&Vec::<Value>::new());
        }
        return super::reply(&json!([{
            "date": date,
            "asset_address": COLLATERAL,
            "maker_address": address,
            "earnings": number(&fmt_amount(sum)),
            "asset_rate": 1,
        }]));
    }
    let items = rows
        .into_iter()
        .map(|(c, n)| {
            json!({
                "date": date,
                "condition_id": c,
                "asset_address": COLLATERAL,
                "maker_address": address,
                "earnings": number(&fmt_amount(n)),
                "asset_rate": 1,
            })
        })
        .collect();
    paging::page(items, offset)
}

/// GET /rebates: a wallet's maker rebates, newest day first (`date` keeps one day).
async fn rebates(s: Arc<AppState>, r: Req) -> ApiResult {
    let key = authenticate_read(&s, &r)?;
    let only = match r.query_map().get("date").filter(|d| !d.is_empty()) {
        Some(d) => Some(rewards::parse_day(d)?),
        None => None,
    };
    let address = wallet(&s, &key, &r)?;
    let out: Vec<Value> = rewards::rebates(&s, &address, only)?
        .iter()
        .map(|rb| {
            json!({
                "date": day_str(rb.day),
                "maker_address": address,
                "asset_address": COLLATERAL,
                "maker_volume": number(&fmt_amount(rb.volume)),
                "rebate_bps": rb.bps,
                "rebated_fees_usdc": number(&fmt_amount(rb.amount)),
                "paid_at": rb.paid_at,
            })
        })
        .collect();
    super::reply(&out)
}

/// POST /internal/rewards: sets a market's reward program (rate 0 ends it).
pub async fn set_program(s: Arc<AppState>, r: Req) -> ApiResult {
    let b: serde_json::Value = r.json()?;
    let condition_id = b
        .get("condition_id")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .ok_or_else(|| ApiError::bad("condition_id is required"))?
        .to_string();
    let mut rest = b.clone();
    rest.as_object_mut().map(|o| o.remove("condition_id"));
    let spec: RewardSpec = serde_json::from_value(rest).map_err(|e| ApiError::bad(format!("Invalid payload: {e}")))?;
    let c = rewards::set_program(&s, &condition_id, &spec).await?;
    super::reply(&json!({ "condition_id": c.condition_id, "rewards": rewards_json(Some(&c)) }))
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct PayoutBody {
    through: Option<String>,
}

/// POST /internal/payouts: pays rewards and rebates for every unpaid day through `through`
/// (YYYY-MM-DD, default yesterday; today closes today early), after settling what is
/// pending.
pub async fn run_payouts(s: Arc<AppState>, r: Req) -> ApiResult {
    let b: PayoutBody = if r.body.is_empty() { PayoutBody::default() } else { r.json()? };
    let through = b.through.as_deref().map(rewards::parse_day).transpose()?;
    let (last, paid) = rewards::payouts(s, through).await?;
    super::reply(&json!({ "through": day_str(last), "days": paid.iter().map(day_paid_json).collect::<Vec<_>>() }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads_in_cents() {
        assert_eq!(cents(350), "3.5");
        assert_eq!(cents(300), "3");
        assert_eq!(cents(1), "0.01");
    }
}
