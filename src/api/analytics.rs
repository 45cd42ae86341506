//! The analytics server's routes ({data_url}, SPEC §4.5, §2.15–2.16; Polymarket's Data API
//! where the spec shows no shape) and price history on the order-book server. The read
//! model and its definitions are `app::analytics`.

use std::ops::ControlFlow;
use std::sync::Arc;

use serde_json::{json, Value};
use warp::http::StatusCode;
use warp::{Filter, Reply};

use super::params::Params;
use super::{handle_now, number, recover, reply, req, respond, with_state, ApiError, ApiResult, Req, Routes};
use crate::app::analytics::{
    cash, ctf_activity, fill, market_positions as positions_of_market, sort_positions, token_ticks, walk_rows,
    wallet_positions, Fill, MarketCtx, Markets, PosRow, TradeFilter,
};
use crate::app::catalogue::{fmt_date, ResolutionStatus};
use crate::app::AppState;
use crate::auth::normalize_address;
use crate::commit::views::MarketView;
use crate::domain::analytics::{CtfActivity, DAY};
use crate::domain::{fmt_amount, parse_decimal, Amount, Price, Side, TradeRecord, TradeStatus, AMOUNT_ONE};

/// Rows a page may skip (`offset`), as Polymarket's data API bounds it: a deeper page would
/// scan that many rows on a request thread.
const MAX_OFFSET: u64 = 10_000;

/// An optional `side`: BUY or SELL (any case); present but anything else, empty included,
/// is a 400.
fn side_param(p: &Params) -> Result<Option<Side>, ApiError> {
    p.raw("side")
        .map(|x| Side::parse(&x.to_uppercase()).ok_or_else(|| ApiError::bad("side must be BUY or SELL")))
        .transpose()
}

pub fn routes(state: Arc<AppState>) -> Routes {
    macro_rules! get {
        ($f:ident, $($path:tt)+) => {
            handle_now(warp::path!($($path)+).and(warp::get()), &state, $f)
        };
    }
    let ok = warp::path!("ok").and(warp::get()).map(|| warp::reply::with_status("OK", StatusCode::OK).into_response());
    ok.or(get!(trades, "trades"))
        .unify()
        .or(get!(market_positions, "v1" / "market-positions"))
        .unify()
        .or(get!(positions, "positions"))
        .unify()
        .or(get!(value, "value"))
        .unify()
        .or(get!(holders, "holders"))
        .unify()
        .or(get!(activity, "activity"))
        .unify()
        .or(get!(leaderboard, "v1" / "leaderboard"))
        .unify()
        .or(get!(ohlc, "ohlc"))
        .unify()
        .recover(recover)
        .unify()
        .boxed()
}

/// GET /prices-history, mounted on the order-book server.
pub fn clob_routes(state: Arc<AppState>) -> Routes {
    // The V1 clients' path and the V2 clients'.
    let activity = warp::path!("live-activity" / "events" / String)
        .or(warp::path!("markets" / "live-activity" / String))
        .unify()
        .and(warp::get())
        .and(with_state(state.clone()))
        .map(|id: String, s: Arc<AppState>| respond(live_activity(&s, &id)));
    warp::path!("prices-history")
        .and(warp::get())
        .and(req())
        .and(with_state(state))
        .map(|r, s| respond(prices_history(s, r)))
        .or(activity)
        .unify()
        .boxed()
}

/// Trades `GET /live-activity/events/{condition_id}` lists: the market's newest.
const LIVE_ACTIVITY: usize = 100;

/// GET /live-activity/events/{condition_id} and /markets/live-activity/{condition_id} (the
/// V1 and V2 clients' `get_market_trades_events`): the
/// market's newest trades, newest first, as Polymarket's `MarketTradeEvent`s — each seen
/// from its taker's side.
fn live_activity(s: &AppState, condition_id: &str) -> ApiResult {
    let view = s.registry.condition(condition_id).ok_or_else(|| ApiError::not_found("market not found"))?;
    let mut ctxs = Markets::default();
    let ctx = ctxs.get(s, &view)?;
    let m = &view.market;
    let mut out = Vec::new();
    walk_rows::<ApiError>(s, None, std::slice::from_ref(&view), true, |t, role| {
        if out.len() >= LIVE_ACTIVITY {
            return Ok(ControlFlow::Break(()));
        }
        if t.status == TradeStatus::Failed {
            return Ok(ControlFlow::Continue(()));
        }
        let f = fill(t, role);
        out.push(json!({
            "event_type": "trade",
            "market": {
                "condition_id": m.condition_id,
                "asset_id": f.asset,
                "question": m.question,
                "icon": ctx.icon(),
                "slug": m.slug,
            },
            "user": {
                "address": f.wallet,
                "username": "",
                "profile_picture": "",
                "optimized_profile_picture": "",
                "pseudonym": "",
            },
            "side": f.side.as_str(),
            "size": f.size.fmt(),
            "fee_rate_bps": t.fee_rate_bps.to_string(),
            "price": f.price.short(),
            "outcome": f.outcome,
            "outcome_index": m.outcome_index(f.asset).unwrap_or(0),
            "transaction_hash": t.tx_hash(),
            "timestamp": t.match_time.to_string(),
        }));
        Ok(ControlFlow::Continue(()))
    })?;
    reply(&out)
}

fn params(r: &Req) -> Result<Params, ApiError> {
    Params::parse(r.query.as_deref())
}

/// A signed micro-unit amount as a decimal string.
fn fmt_signed(v: i64) -> String {
    if v < 0 {
        format!("-{}", fmt_amount(v.unsigned_abs()))
    } else {
        fmt_amount(v as u64)
    }
}

fn signed_number(v: i64) -> Value {
    number(&fmt_signed(v))
}

fn user_param(p: &Params, required: bool) -> Result<Option<String>, ApiError> {
    match p.get("user") {
        Some(u) => normalize_address(u).map(Some).ok_or_else(|| ApiError::bad("user must be a 0x address")),
        None if required => Err(ApiError::bad("user is required")),
        None => Ok(None),
    }
}

/// Condition IDs → markets; an unknown one is a 400 naming it.
fn markets_param(s: &AppState, list: Vec<String>) -> Result<Vec<Arc<MarketView>>, ApiError> {
    list.iter().map(|c| s.registry.condition(c).ok_or_else(|| ApiError::bad(format!("unknown market: {c}")))).collect()
}

// ---- trades ----

fn trade_json(t: &TradeRecord, f: &Fill, ctx: &MarketCtx) -> Value {
    let m = &ctx.view.market;
    json!({
        "proxyWallet": f.wallet,
        "side": f.side.as_str(),
        "asset": f.asset,
        "conditionId": m.condition_id,
        "size": f.size.fmt(),
        "price": f.price.short(),
        "timestamp": t.match_time,
        "title": m.question,
        "slug": m.slug,
        "icon": ctx.icon(),
        "eventSlug": ctx.event_slug,
        "outcome": f.outcome,
        "outcomeIndex": m.outcome_index(f.asset).unwrap_or(0),
        "transactionHash": t.tx_hash(),
        "name": "",
        "profileImage": "",
    })
}

/// GET /trades (SPEC §4.5): newest first.
fn trades(s: Arc<AppState>, r: Req) -> ApiResult {
    let p = params(&r)?;
    let user = user_param(&p, false)?;
    let (market, event) = (p.get("market"), p.get("eventId"));
    if market.is_some() && event.is_some() {
        return Err(ApiError::bad("market and eventId are mutually exclusive"));
    }
    let limit = p.int("limit", 100, 10_000)? as usize;
    let offset = p.int("offset", 0, MAX_OFFSET)?;
    let taker_only = p.bool("takerOnly")?.unwrap_or(true);
    let side = side_param(&p)?;
    let (cash_min, tokens_min) = match (p.raw("filterType"), p.raw("filterAmount")) {
        (None, None) => (None, None),
        (Some(_), None) | (None, Some(_)) => {
            return Err(ApiError::bad("filterType and filterAmount must be used together"))
        }
        (Some(ty), Some(a)) => {
            let a = Amount::parse(a).map_err(|_| ApiError::bad("filterAmount must be a non-negative number"))?;
            match ty.to_uppercase().as_str() {
                "CASH" => (Some(a), None),
                "TOKENS" => (None, Some(a)),
                _ => return Err(ApiError::bad("filterType must be CASH or TOKENS")),
            }
        }
    };
    let mut views = match (market, event) {
        (Some(_), _) => markets_param(&s, p.list("market"))?,
        (None, Some(_)) => {
            let mut v = Vec::new();
            for id in p.list("eventId") {
                let e = id
                    .parse()
                    .ok()
                    .and_then(|i| s.catalogue.event(i))
                    .ok_or_else(|| ApiError::bad(format!("unknown event: {id}")))?;
                v.extend(e.page.markets.iter().filter_map(|c| s.registry.condition(c)));
            }
            v
        }
        (None, None) => s.registry.tables().list.clone(),
    };
    views.dedup_by_key(|v| v.market.idx);
    let filter = TradeFilter {
        side,
        cash_min,
        tokens_min,
        markets: (market.is_some() || event.is_some()).then(|| views.iter().map(|v| v.market.idx).collect()),
    };
    let mut ctxs = Markets::default();
    let (mut out, mut skipped) = (Vec::new(), 0u64);
    walk_rows::<ApiError>(&s, user.as_deref(), &views, taker_only, |t, role| {
        if out.len() >= limit {
            return Ok(ControlFlow::Break(()));
        }
        let f = fill(t, role);
        if user.as_deref().is_some_and(|u| u != f.wallet) || !filter.keeps(t, &f) {
            return Ok(ControlFlow::Continue(()));
        }
        if skipped < offset {
            skipped += 1;
        } else if let Some(view) = s.registry.condition(&t.token.condition_id) {
            out.push(trade_json(t, &f, &*ctxs.get(&s, &view)?));
        }
        Ok(ControlFlow::Continue(()))
    })?;
    reply(&out)
}

// ---- positions ----

/// GET /v1/market-positions (SPEC §4.5, §2.15).
fn market_positions(s: Arc<AppState>, r: Req) -> ApiResult {
    let p = params(&r)?;
    let market = p.get("market").ok_or_else(|| ApiError::bad("market is required"))?;
    let view = s.registry.condition(market).ok_or_else(|| ApiError::bad(format!("unknown market: {market}")))?;
    let user = user_param(&p, false)?;
    let status = p.choice("status", &["open", "closed"], "open")?;
    let sort = p.choice("sortBy", &["SIZE", "CASHPNL", "AVGPRICE", "CURPRICE"], "SIZE")?;
    let asc = p.choice("sortDirection", &["ASC", "DESC"], "DESC")? == "ASC";
    let limit = p.int("limit", 50, 500)? as usize;
    let offset = p.int("offset", 0, MAX_OFFSET)? as usize;
    let mut rows: Vec<PosRow> = positions_of_market(&s, &view)?
        .into_iter()
        .filter(|r| user.as_deref().is_none_or(|u| u == r.wallet))
        .filter(|r| (r.pos.size > 0) == (status == "open"))
        .collect();
    sort_positions(
        &mut rows,
        |r| match sort {
            "CASHPNL" => r.cash_pnl,
            "AVGPRICE" => r.avg as i64,
            "CURPRICE" => r.cur.units() as i64,
            _ => r.pos.size,
        },
        asc,
    );
    let out: Vec<Value> = rows
        .iter()
        .skip(offset)
        .take(limit)
        .map(|r| {
            json!({
                "proxyWallet": r.wallet,
                "asset": r.token,
                "conditionId": r.ctx.view.market.condition_id,
                "size": fmt_amount(r.pos.size.max(0) as u64),
                "avgPrice": fmt_amount(r.avg),
                "curPrice": r.cur.short(),
                "cashPnl": fmt_signed(r.cash_pnl),
                "outcomeIndex": r.outcome,
                "outcome": r.ctx.view.market.tokens[r.outcome as usize].outcome,
            })
        })
        .collect();
    reply(&out)
}

fn position_json(r: &PosRow) -> Value {
    let m = &r.ctx.view.market;
    let other = 1 - r.outcome as usize;
    let pct = |pnl: i64, base: i64| {
        if base > 0 {
            // Percent with 4 decimals, in integers.
            signed_number(((pnl as i128 * 100 * AMOUNT_ONE as i128) / base as i128) as i64)
        } else {
            json!(0)
        }
    };
    let resolved = r.ctx.meta.as_deref().and_then(|x| x.resolution) == Some(ResolutionStatus::Resolved);
    json!({
        "proxyWallet": r.wallet,
        "asset": r.token,
        "conditionId": m.condition_id,
        "size": signed_number(r.pos.size.max(0)),
        "avgPrice": number(&fmt_amount(r.avg)),
        "initialValue": signed_number(r.initial),
        "currentValue": signed_number(r.current),
        "cashPnl": signed_number(r.cash_pnl),
        "percentPnl": pct(r.cash_pnl, r.initial),
        "totalBought": signed_number(r.pos.bought),
        "realizedPnl": signed_number(r.realized),
        "curPrice": number(&r.cur.short()),
        "redeemable": resolved && r.pos.size > 0,
        "mergeable": false,
        "title": m.question,
        "slug": m.slug,
        "icon": r.ctx.icon(),
        "eventSlug": r.ctx.event_slug,
        "outcome": m.tokens[r.outcome as usize].outcome,
        "outcomeIndex": r.outcome,
        "oppositeOutcome": m.tokens[other].outcome,
        "oppositeAsset": m.tokens[other].token_id,
        "endDate": r.ctx.meta.as_deref().and_then(|x| x.end_date).map(fmt_date),
        "negativeRisk": m.neg_risk,
    })
}

fn wallet_rows(s: &AppState, p: &Params) -> Result<(String, Vec<PosRow>), ApiError> {
    let user = user_param(p, true)?.expect("required");
    let markets: Vec<u32> = markets_param(s, p.list("market"))?.iter().map(|v| v.market.idx).collect();
    let rows = wallet_positions(s, &user)?
        .into_iter()
        .filter(|r| markets.is_empty() || markets.contains(&r.ctx.view.market.idx))
        .collect();
    Ok((user, rows))
}

/// GET /positions: a wallet's open positions.
fn positions(s: Arc<AppState>, r: Req) -> ApiResult {
    let p = params(&r)?;
    let (_, rows) = wallet_rows(&s, &p)?;
    let threshold = match p.get("sizeThreshold") {
        None => AMOUNT_ONE,
        Some(x) => parse_decimal(x, 6).map_err(|_| ApiError::bad("sizeThreshold must be a non-negative number"))?,
    };
    let sort = p.choice(
        "sortBy",
        &["TOKENS", "CURRENT", "INITIAL", "CASHPNL", "PERCENTPNL", "PRICE", "AVGPRICE", "TITLE"],
        "TOKENS",
    )?;
    let asc = p.choice("sortDirection", &["ASC", "DESC"], "DESC")? == "ASC";
    let limit = p.int("limit", 100, 500)? as usize;
    let offset = p.int("offset", 0, MAX_OFFSET)? as usize;
    let mut rows: Vec<PosRow> = rows.into_iter().filter(|r| r.pos.size > 0 && r.pos.size as u64 >= threshold).collect();
    if sort == "TITLE" {
        rows.sort_by(|a, b| {
            let o = a.ctx.view.market.question.cmp(&b.ctx.view.market.question);
            if asc {
                o
            } else {
                o.reverse()
            }
        });
    } else {
        sort_positions(
            &mut rows,
            |r| match sort {
                "CURRENT" => r.current,
                "INITIAL" => r.initial,
                "CASHPNL" => r.cash_pnl,
                "PERCENTPNL" if r.initial > 0 => r.cash_pnl * 1_000_000 / r.initial,
                "PERCENTPNL" => 0,
                "PRICE" => r.cur.units() as i64,
                "AVGPRICE" => r.avg as i64,
                _ => r.pos.size,
            },
            asc,
        );
    }
    reply(&rows.iter().skip(offset).take(limit).map(position_json).collect::<Vec<_>>())
}

/// GET /value: what a wallet's open positions are worth at current prices.
fn value(s: Arc<AppState>, r: Req) -> ApiResult {
    let p = params(&r)?;
    let (user, rows) = wallet_rows(&s, &p)?;
    let total: i64 = rows.iter().filter(|r| r.pos.size > 0).map(|r| r.current).sum();
    reply(&json!([{ "user": user, "value": signed_number(total) }]))
}

/// GET /holders: a market's largest holders, per token.
fn holders(s: Arc<AppState>, r: Req) -> ApiResult {
    let p = params(&r)?;
    let market = p.get("market").ok_or_else(|| ApiError::bad("market is required"))?;
    let view = s.registry.condition(market).ok_or_else(|| ApiError::bad(format!("unknown market: {market}")))?;
    let limit = p.int("limit", 20, 500)? as usize;
    let min = match p.get("minBalance") {
        None => 1,
        Some(x) => parse_decimal(x, 6).map_err(|_| ApiError::bad("minBalance must be a non-negative number"))?,
    };
    let rows = positions_of_market(&s, &view)?;
    let out: Vec<Value> = view
        .market
        .tokens
        .iter()
        .enumerate()
        .map(|(i, tok)| {
            let mut hs: Vec<&PosRow> =
                rows.iter().filter(|r| r.outcome as usize == i && r.pos.size > 0 && r.pos.size as u64 >= min).collect();
            hs.sort_by(|a, b| b.pos.size.cmp(&a.pos.size).then_with(|| a.wallet.cmp(&b.wallet)));
            json!({
                "token": tok.token_id,
                "holders": hs.iter().take(limit).map(|r| json!({
                    "proxyWallet": r.wallet,
                    "asset": r.token,
                    "amount": signed_number(r.pos.size),
                    "outcomeIndex": r.outcome,
                    "name": "",
                    "pseudonym": "",
                    "profileImage": "",
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    reply(&out)
}

/// GET /activity: a wallet's trades (the only activity kind recorded so far), newest first.
fn activity(s: Arc<AppState>, r: Req) -> ApiResult {
    let p = params(&r)?;
    let user = user_param(&p, true)?.expect("required");
    let limit = p.int("limit", 100, 500)? as usize;
    let offset = p.int("offset", 0, MAX_OFFSET)?;
    let types: Vec<String> = p.list("type").iter().map(|t| t.to_uppercase()).collect();
    const KINDS: [&str; 6] = ["TRADE", "SPLIT", "MERGE", "REDEEM", "REWARD", "CONVERSION"];
    if let Some(bad) = types.iter().find(|t| !KINDS.contains(&t.as_str())) {
        return Err(ApiError::bad(format!("unknown activity type: {bad}")));
    }
    let wants = |kind: &str| types.is_empty() || types.iter().any(|t| t == kind);
    let side = side_param(&p)?;
    let (start, end) = (p.i64("start")?, p.i64("end")?);
    let markets: Vec<u32> = markets_param(&s, p.list("market"))?.iter().map(|v| v.market.idx).collect();
    let want = offset.saturating_add(limit as u64);

    // Splits, merges and redeems (no side: a side filter keeps trades only), newest first;
    // at most as many as the page can reach.
    let mut ops =
        if side.is_none() { ctf_activity(&s, &user, (start, end), &markets, wants, want)? } else { Default::default() };

    // Trades streamed newest first, the operations merged in by time.
    let mut page = Page { out: Vec::new(), skipped: 0, offset, limit, ctxs: Markets::default() };
    if wants("TRADE") {
        let filter =
            TradeFilter { side, cash_min: None, tokens_min: None, markets: (!markets.is_empty()).then_some(markets) };
        walk_rows::<ApiError>(&s, Some(&user), &[], false, |t, role| {
            let f = fill(t, role);
            let ts = t.match_time as i64;
            if end.is_some_and(|e| ts > e) || f.wallet != user || !filter.keeps(t, &f) {
                return Ok(ControlFlow::Continue(()));
            }
            if start.is_some_and(|st| ts < st) {
                return Ok(ControlFlow::Break(()));
            }
            while ops.front().is_some_and(|a| a.time > t.match_time) {
                let a = ops.pop_front().expect("front");
                page.push(&s, &a.condition_id, |ctx| ctf_json(&a, &user, ctx))?;
            }
            page.push(&s, &t.token.condition_id, |ctx| {
                let mut v = trade_json(t, &f, ctx);
                v["type"] = json!("TRADE");
                v["size"] = number(&f.size.fmt());
                v["price"] = number(&f.price.short());
                v["usdcSize"] = number(&cash(&f).fmt());
                v["pseudonym"] = json!("");
                v
            })?;
            Ok(if page.full() { ControlFlow::Break(()) } else { ControlFlow::Continue(()) })
        })?;
    }
    while let Some(a) = ops.pop_front() {
        if page.full() {
            break;
        }
        page.push(&s, &a.condition_id, |ctx| ctf_json(&a, &user, ctx))?;
    }
    reply(&page.out)
}

/// A page being filled: rows before `offset` are counted, not rendered.
struct Page {
    out: Vec<Value>,
    skipped: u64,
    offset: u64,
    limit: usize,
    ctxs: Markets,
}

impl Page {
    fn full(&self) -> bool {
        self.out.len() >= self.limit
    }

    fn push(&mut self, s: &AppState, condition: &str, row: impl FnOnce(&MarketCtx) -> Value) -> Result<(), ApiError> {
        if self.full() {
            return Ok(());
        }
        if self.skipped < self.offset {
            self.skipped += 1;
        } else if let Some(view) = s.registry.condition(condition) {
            self.out.push(row(&*self.ctxs.get(s, &view)?));
        }
        Ok(())
    }
}

/// A split, merge or redeem as Polymarket's activity rows show one: no asset, side or
/// price; outcomeIndex 999.
fn ctf_json(a: &CtfActivity, wallet: &str, ctx: &MarketCtx) -> Value {
    let m = &ctx.view.market;
    json!({
        "proxyWallet": wallet,
        "timestamp": a.time,
        "conditionId": a.condition_id,
        "type": a.kind.name(),
        "size": number(&a.size.fmt()),
        "usdcSize": number(&a.usdc_size.fmt()),
        "transactionHash": a.tx_hex(),
        "price": 0,
        "asset": "",
        "side": "",
        "outcomeIndex": 999,
        "title": m.question,
        "slug": m.slug,
        "icon": ctx.icon(),
        "eventSlug": ctx.event_slug,
        "outcome": "",
        "name": "",
        "pseudonym": "",
        "profileImage": "",
    })
}

/// GET /v1/leaderboard: wallets ranked by PnL or volume over a window.
fn leaderboard(s: Arc<AppState>, r: Req) -> ApiResult {
    let p = params(&r)?;
    let period = p.choice("timePeriod", &["DAY", "WEEK", "MONTH", "ALL"], "DAY")?;
    let order = p.choice("orderBy", &["PNL", "VOL"], "PNL")?;
    let limit = p.int("limit", 25, 500)? as usize;
    let offset = p.int("offset", 0, MAX_OFFSET)? as usize;
    let days = match period {
        "DAY" => Some(1),
        "WEEK" => Some(7),
        "MONTH" => Some(30),
        _ => None,
    };
    let board = crate::app::analytics::leaderboard(&s, days)?;
    let mut rows: Vec<(String, i64, i64)> = board.into_iter().map(|(w, (pnl, vol))| (w, pnl, vol)).collect();
    rows.sort_by(|a, b| {
        let (ka, kb) = if order == "PNL" { (a.1, b.1) } else { (a.2, b.2) };
        kb.cmp(&ka).then_with(|| a.0.cmp(&b.0))
    });
    let out: Vec<Value> = rows
        .iter()
        .enumerate()
        .skip(offset)
        .take(limit)
        .map(|(i, (w, pnl, vol))| {
            json!({ "rank": (i + 1).to_string(), "proxyWallet": w, "userName": "", "vol": signed_number(*vol),
                 "pnl": signed_number(*pnl), "profileImage": "", "xUsername": "", "verifiedBadge": false })
        })
        .collect();
    reply(&out)
}

// ---- price history and candles ----

fn token_param(s: &AppState, p: &Params) -> Result<(Arc<MarketView>, String), ApiError> {
    let token = p.get("market").ok_or_else(|| ApiError::bad("market is required"))?;
    let (view, _) = s.registry.token(token).ok_or_else(|| ApiError::bad(format!("unknown token: {token}")))?;
    Ok((view, token.to_string()))
}

/// The window of a history query: `interval` back from now, or `startTs`/`endTs`
/// (not both kinds).
fn window(p: &Params, intervals: &[(&'static str, u64)]) -> Result<(u64, u64), ApiError> {
    let now = crate::domain::now_secs();
    let (st, et) = (p.i64("startTs")?, p.i64("endTs")?);
    let names: Vec<&str> = intervals.iter().map(|x| x.0).collect();
    match p.get("interval") {
        Some(_) if st.is_some() || et.is_some() => {
            Err(ApiError::bad("interval and startTs/endTs are mutually exclusive"))
        }
        Some(_) => {
            let name = p.choice("interval", &names, "max")?;
            let span = intervals.iter().find(|x| x.0 == name).map(|x| x.1).unwrap_or(0);
            Ok((if span == 0 { 0 } else { now.saturating_sub(span) }, now))
        }
        None => {
            let (a, b) = (st.unwrap_or(0).max(0) as u64, et.map(|e| e.max(0) as u64).unwrap_or(now));
            if a > b {
                return Err(ApiError::bad("startTs must not be after endTs"));
            }
            Ok((a, b))
        }
    }
}

/// GET /prices-history (order-book server): the token's last traded price per `fidelity`
/// minutes (default 1), buckets with trades only, oldest first.
fn prices_history(s: Arc<AppState>, r: Req) -> ApiResult {
    let p = params(&r)?;
    let (view, token) = token_param(&s, &p)?;
    let (from, to) =
        window(&p, &[("1h", 3600), ("6h", 6 * 3600), ("1d", DAY), ("1w", 7 * DAY), ("1m", 30 * DAY), ("max", 0)])?;
    let fidelity = p.int("fidelity", 1, 60 * 24 * 30)?.max(1) * 60;
    let mut history: Vec<(u64, Price)> = Vec::new();
    for (t, price, _) in token_ticks(&s, &view, &token, from, to)? {
        let bucket = t - t % fidelity;
        match history.last_mut() {
            Some(last) if last.0 == bucket => last.1 = price,
            _ => history.push((bucket, price)),
        }
    }
    reply(
        &json!({ "history": history.iter().map(|(t, p)| json!({ "t": t, "p": number(&p.short()) })).collect::<Vec<_>>() }),
    )
}

/// GET /ohlc (analytics server): candles of a token's trades.
fn ohlc(s: Arc<AppState>, r: Req) -> ApiResult {
    let p = params(&r)?;
    let (view, token) = token_param(&s, &p)?;
    let widths = [("1m", 60), ("5m", 300), ("15m", 900), ("1h", 3600), ("4h", 4 * 3600), ("1d", DAY)];
    let names: Vec<&'static str> = widths.iter().map(|x| x.0).collect();
    let name = p.choice("resolution", &names, "1h")?;
    let width = widths.iter().find(|x| x.0 == name).map(|x| x.1).expect("listed");
    let (st, et) = (p.i64("startTs")?, p.i64("endTs")?);
    let now = crate::domain::now_secs();
    let (from, to) = (st.unwrap_or(0).max(0) as u64, et.map(|e| e.max(0) as u64).unwrap_or(now));
    if from > to {
        return Err(ApiError::bad("startTs must not be after endTs"));
    }
    let limit = p.int("limit", 500, 5000)? as usize;
    struct Candle {
        start: u64,
        open: Price,
        high: Price,
        low: Price,
        close: Price,
        tokens: Amount,
        notional: Amount,
        trades: u64,
    }
    let mut candles: Vec<Candle> = Vec::new();
    for (t, price, size) in token_ticks(&s, &view, &token, from, to)? {
        let start = t - t % width;
        let notional = price.cost(size);
        match candles.last_mut() {
            Some(c) if c.start == start => {
                c.high = c.high.max(price);
                c.low = c.low.min(price);
                c.close = price;
                c.tokens += size;
                c.notional += notional;
                c.trades += 1;
            }
            _ => candles.push(Candle {
                start,
                open: price,
                high: price,
                low: price,
                close: price,
                tokens: size,
                notional,
                trades: 1,
            }),
        }
    }
    let skip = candles.len().saturating_sub(limit);
    let price = |p: Price| number(&p.short());
    let out: Vec<Value> = candles
        .iter()
        .skip(skip)
        .map(|c| {
            json!({ "t": c.start, "open": price(c.open), "high": price(c.high), "low": price(c.low),
                 "close": price(c.close), "volume": number(&c.tokens.fmt()),
                 "usdcVolume": number(&c.notional.fmt()), "trades": c.trades })
        })
        .collect();
    reply(&json!({ "market": token, "resolution": name, "candles": out }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_amounts() {
        assert_eq!(fmt_signed(-1_500_000), "-1.5");
        assert_eq!(fmt_signed(2_000_000), "2");
        assert_eq!(fmt_signed(0), "0");
    }
}
