//! Rewards' and rebates' routes (SPEC §1.4, §2.10; `app::incentives` has the rules): `GET
//! /rewards/markets/current`, `/rewards/user`, `/rewards/user/total`, `/rebates`, and the
//! operator's `POST /internal/rewards` and `/internal/payouts`.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{json, Value};
use warp::Filter;

use super::account::wallet;
use super::number;
use super::orders::{cursor_offset, page};
use super::{authenticate, handle, handle_now, ApiError, ApiResult, Req, Routes};
use crate::app::incentives::{self, day_str, DayPaid, IncentiveError, RewardConfig, RewardSpec};
use crate::app::AppState;
use crate::domain::analytics::DAY;
use crate::domain::{fmt_amount, fmt_date, now_secs, COLLATERAL};

impl From<IncentiveError> for ApiError {
    fn from(e: IncentiveError) -> ApiError {
        use IncentiveError as E;
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
    let (int, frac) = (p / 100, p % 100);
    match frac {
        0 => int.to_string(),
        f if f % 10 == 0 => format!("{int}.{}", f / 10),
        f => format!("{int}.{f:02}"),
    }
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
    current.or(user).unify().or(total).unify().or(rebates).unify().boxed()
}

/// GET /rewards/markets/current: every market whose program runs now, in the paginated
/// envelope.
fn current(s: Arc<AppState>, r: Req) -> ApiResult {
    let now = now_secs();
    let date = |t: Option<u64>, none: &str| t.map_or(none.to_string(), |t| fmt_date(t)[..10].to_string());
    let items: Vec<Value> = s
        .rewards
        .read()
        .values()
        .filter(|c| c.active(now))
        .map(|c| {
            json!({
                "condition_id": c.condition_id,
                "rewards_max_spread": number(&cents(c.max_spread)),
                "rewards_min_size": number(&fmt_amount(c.min_size)),
                "rewards_config": [{
                    "asset_address": COLLATERAL,
                    "start_date": date(c.start, "1970-01-01"),
                    "end_date": date(c.end, "2500-12-31"),
                    "rate_per_day": number(&fmt_amount(c.rate_per_day)),
                }],
                "total_daily_rate": number(&fmt_amount(c.rate_per_day)),
            })
        })
        .collect();
    page(items, cursor_offset(&r.query_map())?)
}

fn date_param(r: &Req) -> Result<u32, ApiError> {
    match r.query_map().get("date").filter(|d| !d.is_empty()) {
        Some(d) => Ok(incentives::parse_day(d)?),
        None => Ok((now_secs() / DAY) as u32),
    }
}

/// GET /rewards/user (per market, paginated) and /rewards/user/total (summed): a wallet's
/// rewards on a day (`date`, default today; today's are still accruing), for the key's
/// address or, with signature_type 1 or 2, its proxy wallet.
async fn user_earnings(s: Arc<AppState>, r: Req, total: bool) -> ApiResult {
    let key = authenticate(&s, &r)?;
    let day = date_param(&r)?;
    let offset = cursor_offset(&r.query_map())?;
    let Some(address) = wallet(&s, &key, &r).await? else {
        return if total { super::reply(&Vec::<Value>::new()) } else { page(Vec::new(), 0) };
    };
    let rows = incentives::earnings(&s, &address, day)?;
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
    page(items, offset)
}

/// GET /rebates: a wallet's maker rebates, newest day first (`date` keeps one day).
async fn rebates(s: Arc<AppState>, r: Req) -> ApiResult {
    let key = authenticate(&s, &r)?;
    let only = match r.query_map().get("date").filter(|d| !d.is_empty()) {
        Some(d) => Some(incentives::parse_day(d)?),
        None => None,
    };
    let Some(address) = wallet(&s, &key, &r).await? else { return super::reply(&Vec::<Value>::new()) };
    let out: Vec<Value> = incentives::rebates(&s, &address, only)?
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
    let c = incentives::set_program(&s, &condition_id, &spec).await?;
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
    let through = b.through.as_deref().map(incentives::parse_day).transpose()?;
    let (last, paid) = incentives::payouts(s, through).await?;
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
