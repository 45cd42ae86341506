//! The catalogue server's routes ({gamma_url}, SPEC §4.6, §2.17; Polymarket's Gamma API where the spec shows
//! no shape) and the operator's catalogue writes on the internal server.
//!
//! Shapes follow Gamma: ids are numeric strings; a market's `outcomes`, `outcomePrices` and
//! `clobTokenIds` are JSON-encoded strings; `volume`/`liquidity` of a market are decimal
//! strings beside `volumeNum`/`liquidityNum` numbers, and numbers on events and series.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{json, Value};
use warp::http::StatusCode;
use warp::{Filter, Reply};

use super::params::Params;
use super::{handle_now, number, price_number, recover, reply, respond, with_state, ApiError, ApiResult, Req, Routes};
use crate::app::catalogue::reads::{
    comment_parent, comments, event_row, find_market, market_id, market_row, series_row, EventRow, MarketRow, SeriesRow,
};
use crate::app::catalogue::writes::{self, add_event, add_series, CommentInput, EventInput, SeriesInput};
use crate::app::catalogue::{
    current_price, fmt_date, slugify, CatalogueError, CommentRecord, ResolutionStatus, SeriesRecord,
};
use crate::app::AppState;
use crate::domain::fmt_amount;

impl From<CatalogueError> for ApiError {
    fn from(e: CatalogueError) -> ApiError {
        use CatalogueError as E;
        match e {
            E::Store(e) => e.into(),
            E::Engine(e) => e.into(),
            E::ResolutionFailed(_) => {
                tracing::error!("{e}");
                ApiError::db()
            }
            E::SeriesSlugTaken | E::EventSlugTaken => ApiError::new(StatusCode::CONFLICT, e.to_string()),
            E::ParentNotFound(_) | E::MarketNotFound => ApiError::not_found(e.to_string()),
            E::TitleRequired
            | E::BadSlug
            | E::UnknownSeries
            | E::MarketTwice(_)
            | E::MarketInEvent { .. }
            | E::BadMarket(_)
            | E::BadDate(_)
            | E::BadParentKind
            | E::ParentIdRequired
            | E::BadBody
            | E::BadUser
            | E::NotAReply
            | E::BadOutcome
            | E::NeedsOutcome => ApiError::bad(e.to_string()),
        }
    }
}

/// Largest page of /series, /events, /markets and /comments (SPEC §8 for /series).
pub const MAX_LIMIT: u64 = 500;
pub const DEFAULT_LIMIT: u64 = 25;

pub fn routes(state: Arc<AppState>) -> Routes {
    let s = || with_state(state.clone());
    macro_rules! get {
        ($f:ident, $($path:tt)+) => {
            handle_now(warp::path!($($path)+).and(warp::get()), &state, $f)
        };
    }
    macro_rules! get_id {
        ($f:ident, $($path:tt)+) => {
            warp::path!($($path)+).and(warp::get()).and(s()).map(|id: String, s| respond($f(s, id)))
        };
    }
    let ok = warp::path!("ok").and(warp::get()).map(|| warp::reply::with_status("OK", StatusCode::OK).into_response());
    ok.or(get!(list_series, "series"))
        .unify()
        .or(get_id!(one_series, "series" / String))
        .unify()
        .or(get!(list_events, "events"))
        .unify()
        .or(get_id!(event_by_id, "events" / String))
        .unify()
        .or(get_id!(event_by_slug, "events" / "slug" / String))
        .unify()
        .or(get!(list_markets, "markets"))
        .unify()
        .or(get_id!(market_by_id, "markets" / String))
        .unify()
        .or(get_id!(market_by_slug, "markets" / "slug" / String))
        .unify()
        .or(get!(list_comments, "comments"))
        .unify()
        .or(get!(search, "public-search"))
        .unify()
        .recover(recover)
        .unify()
        .boxed()
}

fn date(d: Option<u64>) -> Value {
    d.map(|d| Value::String(fmt_date(d))).unwrap_or(Value::Null)
}

fn market_json(s: &AppState, r: &MarketRow) -> Value {
    let m = &r.view.market;
    let meta = r.meta.as_deref();
    let event = meta.and_then(|x| x.event_id).and_then(|id| s.catalogue.event(id));
    let prices: Vec<String> = (0..2u8).map(|o| current_price(meta, &r.live, o).short()).collect();
    let outcomes: Vec<&str> = m.tokens.iter().map(|t| t.outcome.as_str()).collect();
    let tokens: Vec<&str> = m.tokens.iter().map(|t| t.token_id.as_str()).collect();
    let spread = match (r.live.best_bid, r.live.best_ask) {
        (Some(b), Some(a)) => Some(a.above(b)),
        _ => None,
    };
    json!({
        "id": market_id(&r.view).to_string(),
        "question": m.question,
        "conditionId": m.condition_id,
        "slug": m.slug,
        "description": meta.map(|x| x.description.as_str()).unwrap_or(""),
        "resolutionSource": meta.map(|x| x.resolution_source.as_str()).unwrap_or(""),
        "image": meta.map(|x| x.image.as_str()).unwrap_or(""),
        "icon": meta.map(|x| x.icon.as_str()).unwrap_or(""),
        "groupItemTitle": meta.map(|x| x.group_item_title.as_str()).unwrap_or(""),
        "startDate": date(meta.and_then(|x| x.start_date)),
        "endDate": date(meta.and_then(|x| x.end_date)),
        "createdAt": date(meta.map(|x| x.created_at).filter(|t| *t > 0)),
        "outcomes": encoded(&outcomes),
        "outcomePrices": encoded(&prices),
        "clobTokenIds": encoded(&tokens),
        "volume": fmt_amount(r.live.volume),
        "volumeNum": number(&fmt_amount(r.live.volume)),
        "liquidity": r.live.liquidity.fmt(),
        "liquidityNum": number(&r.live.liquidity.fmt()),
        "active": m.active,
        "closed": m.closed,
        "archived": false,
        "acceptingOrders": m.accepting_orders,
        "enableOrderBook": true,
        "orderPriceMinTickSize": number(&r.view.tick().short()),
        "orderMinSize": number(&m.min_order_size.fmt()),
        "negRisk": m.neg_risk,
        "negRiskMarketID": m.neg_risk_market_id.clone().unwrap_or_default(),
        "bestBid": price_number(r.live.best_bid),
        "bestAsk": price_number(r.live.best_ask),
        "lastTradePrice": price_number(r.live.last),
        "spread": price_number(spread),
        "resolutionStatus": meta.and_then(|x| x.resolution),
        "resolvedOutcome": meta
            .and_then(|x| x.resolved_outcome)
            .and_then(|i| m.tokens.get(i as usize))
            .map(|t| t.outcome.clone()),
        "payoutReport": payout_report_json(s, meta),
        "events": event.map(|e| vec![json!({ "id": e.id.to_string(), "slug": e.page.slug, "title": e.page.title })]).unwrap_or_default(),
    })
}

/// Chain mode: where a resolved market's payouts stand on chain (`status` as a trade's:
/// PENDING, MINED, CONFIRMED, FAILED; the reporting transaction's hash once signed; why it
/// failed). Null before resolution and in ledger mode.
fn payout_report_json(s: &AppState, meta: Option<&crate::app::catalogue::MarketMeta>) -> Value {
    let Some(meta) = meta.filter(|m| s.chain.is_some() && m.resolution == Some(ResolutionStatus::Resolved)) else {
        return Value::Null;
    };
    match s.store.payout_report(&meta.condition_id) {
        Ok(Some(r)) => json!({
            "status": r.state.as_str(),
            "transactionHash": r.hash.map(|h| format!("{:#x}", alloy_primitives::B256::from(h))),
            "error": r.error,
        }),
        _ => Value::Null,
    }
}

/// A value JSON-encoded into a string (Gamma's stringified arrays).
fn encoded<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

fn tags_json(tags: &[String]) -> Vec<Value> {
    tags.iter().map(|t| json!({ "label": t, "slug": slugify(t) })).collect()
}

fn series_brief(s: &SeriesRecord) -> Value {
    json!({
        "id": s.id.to_string(),
        "title": s.title,
        "slug": s.slug,
        "ticker": s.slug,
        "seriesType": s.series_type,
        "recurrence": s.recurrence,
        "active": s.active,
        "closed": s.closed,
    })
}

fn event_json(s: &AppState, r: &EventRow, nested: bool) -> Value {
    let e = &r.event;
    let mut v = json!({
        "id": e.id.to_string(),
        "ticker": e.page.slug,
        "slug": e.page.slug,
        "title": e.page.title,
        "description": e.page.description,
        "startDate": date(e.page.start_date),
        "endDate": date(e.page.end_date),
        "creationDate": date(Some(e.created_at)),
        "createdAt": date(Some(e.created_at)),
        "image": e.page.image,
        "icon": e.page.icon,
        "active": e.page.active,
        "closed": e.page.closed,
        "archived": e.page.archived,
        "featured": e.page.featured,
        "negRisk": e.page.neg_risk,
        "volume": number(&fmt_amount(r.volume)),
        "liquidity": number(&r.liquidity.fmt()),
        "tags": tags_json(&e.page.tags),
        "series": e.page.series_id.and_then(|id| s.catalogue.series_by_id(id)).map(|x| vec![series_brief(&x)]).unwrap_or_default(),
    });
    if nested {
        v["markets"] = Value::Array(r.markets.iter().map(|m| market_json(s, m)).collect());
    }
    v
}

fn series_json(s: &AppState, r: &SeriesRow) -> Value {
    let x = &r.series;
    let mut v = series_brief(x);
    v["description"] = json!(x.description);
    v["image"] = json!(x.image);
    v["archived"] = json!(x.archived);
    v["startDate"] = date(x.start_date);
    v["createdAt"] = date(Some(x.created_at));
    v["volume"] = number(&fmt_amount(r.volume));
    v["liquidity"] = number(&r.liquidity.fmt());
    v["events"] = Value::Array(r.events.iter().map(|e| event_json(s, e, false)).collect());
    v
}

/// Sorts by `key` (direction `ascending`), ties by id ascending so pages are stable.
fn sort_rows<T>(rows: &mut [T], ascending: bool, key: impl Fn(&T) -> (u64, u64)) {
    rows.sort_by(|a, b| {
        let (ka, ia) = key(a);
        let (kb, ib) = key(b);
        let o = if ascending { ka.cmp(&kb) } else { kb.cmp(&ka) };
        o.then(ia.cmp(&ib))
    });
}

fn page<T>(rows: Vec<T>, p: &Params) -> Result<Vec<T>, ApiError> {
    let limit = p.int("limit", DEFAULT_LIMIT, MAX_LIMIT)? as usize;
    let offset = p.int("offset", 0, u64::MAX)?.min(usize::MAX as u64) as usize;
    Ok(rows.into_iter().skip(offset).take(limit).collect())
}

fn params(r: &Req) -> Result<Params, ApiError> {
    Params::parse(r.query.as_deref())
}

fn flag_matches(want: Option<bool>, have: bool) -> bool {
    want.is_none_or(|w| w == have)
}

fn list_series(s: Arc<AppState>, r: Req) -> ApiResult {
    let p = params(&r)?;
    let order = p.choice("order", &["volume", "liquidity", "start_date", "created_at"], "volume")?;
    let ascending = p.bool("ascending")?.unwrap_or(false);
    let (closed, active) = (p.bool("closed")?, p.bool("active")?);
    let slugs = p.list("slug");
    let recurrence = p.get("recurrence");
    let mut rows = Vec::new();
    for x in s.catalogue.series() {
        if !flag_matches(closed, x.closed)
            || !flag_matches(active, x.active)
            || (!slugs.is_empty() && !slugs.contains(&x.slug))
            || recurrence.is_some_and(|want| !want.eq_ignore_ascii_case(&x.recurrence))
        {
            continue;
        }
        rows.push(series_row(&s, x)?);
    }
    sort_rows(&mut rows, ascending, |r| {
        let k = match order {
            "volume" => r.volume,
            "liquidity" => r.liquidity.units(),
            "start_date" => r.series.start_date.unwrap_or(0),
            _ => r.series.created_at,
        };
        (k, r.series.id)
    });
    let rows = page(rows, &p)?;
    reply(&rows.iter().map(|r| series_json(&s, r)).collect::<Vec<_>>())
}

fn one_series(s: Arc<AppState>, id: String) -> ApiResult {
    let x = id
        .parse()
        .ok()
        .and_then(|id| s.catalogue.series_by_id(id))
        .ok_or_else(|| ApiError::not_found("series not found"))?;
    reply(&series_json(&s, &series_row(&s, x)?))
}

fn event_order(p: &Params) -> Result<(&'static str, bool), ApiError> {
    // Without `order`, Gamma lists by id, oldest first; with it, largest first unless
    // `ascending=true` (as /series, SPEC §4.6).
    let given = p.get("order").is_some();
    let order = p.choice("order", &["id", "volume", "liquidity", "start_date", "end_date", "created_at"], "id")?;
    let ascending = p.bool("ascending")?.unwrap_or(!given);
    Ok((order, ascending))
}

fn has_tag(tags: &[String], want: &str) -> bool {
    tags.iter().any(|t| t.eq_ignore_ascii_case(want) || slugify(t) == want.to_ascii_lowercase())
}

fn list_events(s: Arc<AppState>, r: Req) -> ApiResult {
    let p = params(&r)?;
    let (order, ascending) = event_order(&p)?;
    let (closed, active, archived, featured) =
        (p.bool("closed")?, p.bool("active")?, p.bool("archived")?, p.bool("featured")?);
    let ids = p.list("id");
    let slugs = p.list("slug");
    let tag = p.any(&["tag_slug", "tag"]);
    let series_id = p.get("series_id");
    let mut rows = Vec::new();
    for e in s.catalogue.events() {
        if !flag_matches(closed, e.page.closed)
            || !flag_matches(active, e.page.active)
            || !flag_matches(archived, e.page.archived)
            || !flag_matches(featured, e.page.featured)
            || (!ids.is_empty() && !ids.contains(&e.id.to_string()))
            || (!slugs.is_empty() && !slugs.contains(&e.page.slug))
            || tag.is_some_and(|t| !has_tag(&e.page.tags, t))
            || series_id.is_some_and(|x| e.page.series_id.map(|i| i.to_string()).as_deref() != Some(x))
        {
            continue;
        }
        rows.push(event_row(&s, e)?);
    }
    sort_rows(&mut rows, ascending, |r| {
        let e = &r.event;
        let k = match order {
            "volume" => r.volume,
            "liquidity" => r.liquidity.units(),
            "start_date" => e.page.start_date.unwrap_or(0),
            "end_date" => e.page.end_date.unwrap_or(0),
            "created_at" => e.created_at,
            _ => e.id,
        };
        (k, e.id)
    });
    let rows = page(rows, &p)?;
    reply(&rows.iter().map(|r| event_json(&s, r, true)).collect::<Vec<_>>())
}

fn event_by_id(s: Arc<AppState>, id: String) -> ApiResult {
    let e =
        id.parse().ok().and_then(|id| s.catalogue.event(id)).ok_or_else(|| ApiError::not_found("event not found"))?;
    reply(&event_json(&s, &event_row(&s, e)?, true))
}

fn event_by_slug(s: Arc<AppState>, slug: String) -> ApiResult {
    let e = s
        .catalogue
        .events()
        .into_iter()
        .find(|e| e.page.slug == slug)
        .ok_or_else(|| ApiError::not_found("event not found"))?;
    reply(&event_json(&s, &event_row(&s, e)?, true))
}

fn list_markets(s: Arc<AppState>, r: Req) -> ApiResult {
    let p = params(&r)?;
    let (order, ascending) = event_order(&p)?;
    let (closed, active) = (p.bool("closed")?, p.bool("active")?);
    if p.bool("archived")? == Some(true) {
        // No market is archived; the page's parameters are still checked.
        return reply(&page(Vec::<Value>::new(), &p)?);
    }
    let ids = p.list("id");
    let slugs = p.list("slug");
    let conditions = p.list("condition_ids");
    let tokens = p.list("clob_token_ids");
    let tag = p.any(&["tag_slug", "tag"]);
    let mut rows = Vec::new();
    for v in s.registry.tables().list.iter() {
        let m = &v.market;
        if !flag_matches(closed, m.closed)
            || !flag_matches(active, m.active)
            || (!ids.is_empty() && !ids.contains(&market_id(v).to_string()))
            || (!slugs.is_empty() && !slugs.contains(&m.slug))
            || (!conditions.is_empty() && !conditions.iter().any(|c| c.eq_ignore_ascii_case(&m.condition_id)))
            || (!tokens.is_empty() && !m.tokens.iter().any(|t| tokens.contains(&t.token_id)))
        {
            continue;
        }
        let row = market_row(&s, v.clone())?;
        if let Some(t) = tag {
            let tagged = row.meta.as_ref().and_then(|x| x.event_id).and_then(|id| s.catalogue.event(id));
            if !tagged.is_some_and(|e| has_tag(&e.page.tags, t)) {
                continue;
            }
        }
        rows.push(row);
    }
    sort_rows(&mut rows, ascending, |r| {
        let meta = r.meta.as_deref();
        let k = match order {
            "volume" => r.live.volume,
            "liquidity" => r.live.liquidity.units(),
            "start_date" => meta.and_then(|x| x.start_date).unwrap_or(0),
            "end_date" => meta.and_then(|x| x.end_date).unwrap_or(0),
            "created_at" => meta.map(|x| x.created_at).unwrap_or(0),
            _ => market_id(&r.view),
        };
        (k, market_id(&r.view))
    });
    let rows = page(rows, &p)?;
    reply(&rows.iter().map(|r| market_json(&s, r)).collect::<Vec<_>>())
}

fn market_by_id(s: Arc<AppState>, id: String) -> ApiResult {
    let v = find_market(&s, &id).ok_or_else(|| ApiError::not_found("market not found"))?;
    reply(&market_json(&s, &market_row(&s, v)?))
}

fn market_by_slug(s: Arc<AppState>, slug: String) -> ApiResult {
    let v = s
        .registry
        .tables()
        .list
        .iter()
        .find(|v| v.market.slug == slug)
        .cloned()
        .ok_or_else(|| ApiError::not_found("market not found"))?;
    reply(&market_json(&s, &market_row(&s, v)?))
}

fn comment_json(c: &CommentRecord) -> Value {
    json!({
        "id": c.id.to_string(),
        "body": c.body,
        "parentEntityType": c.parent_kind.name(),
        "parentEntityID": c.parent_id,
        "parentCommentID": c.reply_to.map(|x| x.to_string()),
        "userAddress": c.user_address,
        "createdAt": fmt_date(c.created_at),
        "updatedAt": fmt_date(c.created_at),
    })
}

/// GET /comments: a parent's comments, newest first (or oldest first with
/// `ascending=true`), one range scan.
fn list_comments(s: Arc<AppState>, r: Req) -> ApiResult {
    let p = params(&r)?;
    let parent = comment_parent(&s, p.get("parent_entity_type"), p.get("parent_entity_id"))?;
    let limit = p.int("limit", DEFAULT_LIMIT, MAX_LIMIT)? as usize;
    let offset = p.int("offset", 0, u64::MAX)?;
    let ascending = p.bool("ascending")?.unwrap_or(false);
    let out: Vec<Value> = comments(&s, parent, ascending, offset, limit)?.iter().map(comment_json).collect();
    reply(&out)
}

/// How well `q` (lowercase) matches a title or slug: exact, prefix, a word's start,
/// anywhere (4, 3, 2, 1; 0 for no match), doubled, and a slug match ranks just below the
/// same kind of title match.
fn score(q: &str, title: &str, slug: &str) -> u32 {
    let one = |text: &str| {
        let t = text.to_lowercase();
        if t == q {
            4
        } else if t.starts_with(q) {
            3
        } else if t.split(|c: char| !c.is_alphanumeric()).any(|w| w.starts_with(q)) {
            2
        } else if t.contains(q) {
            1
        } else {
            0
        }
    };
    (one(title) * 2).max(one(slug) * 2 - u32::from(one(slug) > 0))
}

/// GET /public-search?q=: events, markets and series whose title or slug contains `q`
/// (case-insensitive), best match first, then by volume, then by id; `limit_per_type`
/// (default 10, max 100) of each.
fn search(s: Arc<AppState>, r: Req) -> ApiResult {
    let p = params(&r)?;
    let q = p.get("q").map(|q| q.trim().to_lowercase()).filter(|q| !q.is_empty());
    let q = q.ok_or_else(|| ApiError::bad("q is required"))?;
    let limit = p.int("limit_per_type", 10, 100)? as usize;
    let rank = |sc: u32, vol: u64, id: u64| (std::cmp::Reverse(sc), std::cmp::Reverse(vol), id);

    let mut events = Vec::new();
    for e in s.catalogue.events() {
        let sc = score(&q, &e.page.title, &e.page.slug);
        if sc > 0 {
            let row = event_row(&s, e)?;
            events.push((rank(sc, row.volume, row.event.id), row));
        }
    }
    let mut markets = Vec::new();
    for v in s.registry.tables().list.iter() {
        let sc = score(&q, &v.market.question, &v.market.slug);
        if sc > 0 {
            let row = market_row(&s, v.clone())?;
            markets.push((rank(sc, row.live.volume, market_id(v)), row));
        }
    }
    let mut series = Vec::new();
    for x in s.catalogue.series() {
        let sc = score(&q, &x.title, &x.slug);
        if sc > 0 {
            let row = series_row(&s, x)?;
            series.push((rank(sc, row.volume, row.series.id), row));
        }
    }
    let total = events.len() + markets.len() + series.len();
    let more = events.len() > limit || markets.len() > limit || series.len() > limit;
    fn best<K: Ord, T>(mut v: Vec<(K, T)>, n: usize) -> Vec<T> {
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v.into_iter().take(n).map(|x| x.1).collect()
    }
    reply(&json!({
        "events": best(events, limit).iter().map(|r| event_json(&s, r, true)).collect::<Vec<_>>(),
        "markets": best(markets, limit).iter().map(|r| market_json(&s, r)).collect::<Vec<_>>(),
        "series": best(series, limit).iter().map(|r| series_json(&s, r)).collect::<Vec<_>>(),
        "pagination": { "hasMore": more, "totalResults": total },
    }))
}

// ---- Operator writes (internal server) ----

/// POST /internal/series.
pub async fn create_series(s: Arc<AppState>, r: Req) -> ApiResult {
    let input: SeriesInput = r.json()?;
    let x = add_series(&s, input).await?;
    reply(&series_json(&s, &series_row(&s, Arc::new(x))?))
}

/// POST /internal/events.
pub async fn create_event(s: Arc<AppState>, r: Req) -> ApiResult {
    let input: EventInput = r.json()?;
    let e = add_event(&s, input).await?;
    reply(&event_json(&s, &event_row(&s, Arc::new(e))?, true))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CommentRequest {
    parent_entity_type: String,
    parent_entity_id: Value,
    body: String,
    user_address: String,
    #[serde(default)]
    parent_comment_id: Option<u64>,
}

/// POST /internal/comments.
pub async fn create_comment(s: Arc<AppState>, r: Req) -> ApiResult {
    let input: CommentRequest = r.json()?;
    let pid = match &input.parent_entity_id {
        Value::String(x) => x.clone(),
        Value::Number(n) => n.to_string(),
        _ => return Err(ApiError::bad("parent_entity_id must be a string or a number")),
    };
    let c = writes::add_comment(
        &s,
        CommentInput {
            parent_kind: &input.parent_entity_type,
            parent_id: &pid,
            body: &input.body,
            user_address: &input.user_address,
            reply_to: input.parent_comment_id,
        },
    )
    .await?;
    reply(&comment_json(&c))
}

/// POST /internal/resolution {condition_id, status, outcome?}: records a market's
/// resolution status; answers with the market.
pub async fn set_resolution(s: Arc<AppState>, r: Req) -> ApiResult {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct B {
        condition_id: String,
        status: ResolutionStatus,
        #[serde(default)]
        outcome: Option<String>,
    }
    let b: B = r.json()?;
    let view = writes::set_resolution(&s, &b.condition_id, b.status, b.outcome.as_deref()).await?;
    let row = market_row(&s, view)?;
    reply(&market_json(&s, &row))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_scores_rank_exact_over_prefix_over_word_over_substring() {
        assert!(score("btc", "BTC", "x") > score("btc", "BTC above 150k", "x"));
        assert!(score("btc", "BTC above", "x") > score("btc", "Will BTC rise", "x"));
        assert!(score("btc", "Will BTC rise", "x") > score("btc", "WBTC flows", "x"));
        assert_eq!(score("btc", "Fed", "fed-cut"), 0);
        assert!(score("fed-cut", "Fed", "fed-cut") > 0);
        assert!(score("fed", "Fed", "x") > score("fed", "x", "fed"));
    }
}
