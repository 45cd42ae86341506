//! The operator server (loopback only, never on a public listener): markets, the ledger
//! faucet, invitations, platform mode, address restrictions, deferred-order release,
//! backups, metrics, an invariant check, and the operator's dashboard (`super::dashboard`).

use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;
use warp::http::StatusCode;
use warp::Filter;

use super::auctions::open as open_auction;
use super::bridge::{confirm_deposit, open_withdrawals, settle_withdrawal};
use super::catalogue::{create_comment, create_event, create_series, set_resolution};
use super::resolution::assign_cluster;
use super::rewards::{run_payouts, set_program};
use super::{handle, recover, render, reply, req, respond, with_state, ApiError, ApiResult, Req, Routes};
use crate::app::markets::{Created, MarketSpec};
use crate::app::AppState;
use crate::auth::normalize_address;
use crate::domain::{parse_u64, AddressStatus, Amount, Asset, Mode};

/// The operator's routes, behind the gate (`dashboard::gate`) of the server bound at
/// `bound`.
pub fn routes(state: Arc<AppState>, bound: std::net::SocketAddr) -> Routes {
    let s = || with_state(state.clone());
    macro_rules! post {
        ($($seg:literal)/+, $f:ident) => {
            handle(warp::path!("internal" / $($seg)/+).and(warp::post()), &state, |s, r| async move { $f(s, r).await })
        };
    }
    let balances = handle(warp::path!("internal" / "balances").and(warp::get()), &state, balances);
    let check = warp::path!("internal" / "check").and(warp::get()).and(s()).then(check_engine);
    let metrics =
        warp::path!("internal" / "metrics").and(warp::get()).and(s()).map(|s: Arc<AppState>| metrics_json(&s));
    let prometheus = warp::path!("metrics").and(warp::get()).and(s()).map(|s: Arc<AppState>| prometheus_text(&s));
    let rate_get = warp::path!("internal" / "rate-limit").and(warp::get()).and(s()).map(|s: Arc<AppState>| {
        let (max, window) = s.access.limiter.settings();
        warp::reply::json(&json!({ "maxRequests": max, "windowSecs": window })).into_response()
    });
    let markets =
        warp::path!("internal" / "markets").and(warp::get()).and(s()).map(|s: Arc<AppState>| markets_json(&s));
    let mode_get = warp::path!("internal" / "mode")
        .and(warp::get())
        .and(s())
        .map(|s: Arc<AppState>| warp::reply::json(&json!({ "mode": s.access.mode() })).into_response());
    use warp::Reply;
    // Boxed in two halves: one long chain of `or`s overflows the compiler's type recursion.
    let setup = post!("markets", create_market)
        .or(post!("markets" / "fees", set_fees))
        .unify()
        .or(post!("ledger" / "credit", credit))
        .unify()
        .or(post!("faucet", faucet))
        .unify()
        .or(post!("waitlist" / "approve", approve))
        .unify()
        .or(post!("mode", mode))
        .unify()
        .or(post!("addresses", addresses))
        .unify()
        .or(post!("deferred" / "release", release))
        .unify()
        .or(post!("backup", backup))
        .unify()
        .boxed();
    let catalogue = post!("series", create_series)
        .or(post!("events", create_event))
        .unify()
        .or(post!("comments", create_comment))
        .unify()
        .or(post!("resolution", set_resolution))
        .unify()
        .or(post!("rewards", set_program))
        .unify()
        .or(post!("payouts", run_payouts))
        .unify()
        .or(post!("bonds" / "cluster", assign_cluster))
        .unify()
        .or(post!("auctions", open_auction))
        .unify()
        .boxed();
    // The bridge's operator side (docs/reference/bridge.md).
    let bridge = post!("bridge" / "deposits", confirm_deposit)
        .or(warp::path!("internal" / "bridge" / "withdrawals" / String)
            .and(warp::post())
            .and(req())
            .and(s())
            .then(|id, r, s| async move { respond(settle_withdrawal(s, id, r).await) }))
        .unify()
        .or(warp::path!("internal" / "bridge" / "withdrawals")
            .and(warp::get())
            .and(s())
            .map(|s: Arc<AppState>| respond(open_withdrawals(&s))))
        .unify()
        .boxed();
    super::dashboard::gate(state.access.internal_token.clone(), bound)
        .or(super::dashboard::cross_origin())
        .unify()
        .or(setup)
        .unify()
        .or(catalogue)
        .unify()
        .or(bridge)
        .unify()
        .or(post!("settle", settle).boxed())
        .unify()
        .or(post!("nonce" / "increment", increment_nonce))
        .unify()
        .or(post!("rate-limit", set_rate_limit))
        .unify()
        .or(rate_get)
        .unify()
        .or(mode_get)
        .unify()
        .or(markets)
        .unify()
        .or(prometheus)
        .unify()
        .or(balances)
        .unify()
        .or(check)
        .unify()
        .or(metrics)
        .unify()
        .or(super::dashboard::routes(state.clone()))
        .unify()
        .recover(recover)
        .unify()
        .boxed()
}

/// `GET /internal/check`: the engine's books and ledger checked against each other.
async fn check_engine(s: Arc<AppState>) -> warp::reply::Response {
    respond(match s.engine.check().await {
        Ok(Ok(())) => reply(&json!({ "ok": true })),
        Ok(Err(e)) => Err(ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e)),
        Err(e) => Err(e.into()),
    })
}

/// `GET /internal/metrics`: the persister's counters and the process's CPU.
fn metrics_json(s: &AppState) -> warp::reply::Response {
    use std::sync::atomic::Ordering::Relaxed;
    use warp::Reply;
    let m = &s.metrics;
    warp::reply::json(&json!({
        "commits": m.commits.load(Relaxed),
        "inline_commits": m.inline_commits.get(),
        "jobs": m.jobs.load(Relaxed),
        "sync_micros_total": m.sync_micros_total.load(Relaxed),
        "last_batch_jobs": m.last_batch_jobs.load(Relaxed),
        "last_sync_micros": m.last_sync_micros.load(Relaxed),
        "slow_syncs": m.slow_syncs.load(Relaxed),
        "slow_sync_micros_total": m.slow_sync_micros_total.load(Relaxed),
        // The server's own CPU (user + system, every thread), for a load generator
        // in another process to count per request.
        "process_cpu_s": crate::metrics::process_cpu_s(),
        "bytes": m.bytes.get(),
    }))
    .into_response()
}

/// `GET /metrics`: the Prometheus text exposition of every metric (requests, order
/// commands, matches, settlement, books, persister, workers).
fn prometheus_text(s: &AppState) -> warp::reply::Response {
    use warp::Reply;
    if let Some(e) = &s.events {
        e.refresh(); // the stream's gauges as of now
    }
    warp::http::Response::builder()
        .header("content-type", "application/openmetrics-text; version=1.0.0; charset=utf-8")
        .body(warp::hyper::body::Bytes::from(s.exported.render()))
        .map(Reply::into_response)
        .unwrap_or_else(|_| ApiError::db().into_response())
}

/// `GET /internal/markets`: every market as the operator set it up.
fn markets_json(s: &AppState) -> warp::reply::Response {
    use warp::Reply;
    let list = super::book::market_rows(s, |v| {
        let m = &v.market;
        json!({
            "condition_id": m.condition_id,
            "question": m.question,
            "slug": m.slug,
            "tokens": m.tokens.iter().map(|t| json!({"token_id": t.token_id, "outcome": t.outcome})).collect::<Vec<_>>(),
            "tick_size": v.tick().fixed(),
            "min_order_size": m.min_order_size.fmt(),
            "neg_risk": m.neg_risk,
            "active": m.active,
            "closed": m.closed,
            "accepting_orders": m.accepting_orders,
        })
    });
    warp::reply::json(&list).into_response()
}

/// Creates a market (`app::markets::create`).
async fn create_market(s: Arc<AppState>, r: Req) -> ApiResult {
    let spec: MarketSpec = r.json()?;
    let Created { market, question_id } = crate::app::markets::create(&s, spec).await?;
    let mut body = json!({ "condition_id": market.condition_id, "idx": market.idx });
    if let Some(q) = question_id {
        body["question_id"] = json!(q.to_string());
        body["tokens"] = json!(market.tokens);
        body["neg_risk"] = json!(market.neg_risk);
        body["neg_risk_market_id"] = json!(market.neg_risk_market_id);
    }
    reply(&body)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FeesBody {
    condition_id: String,
    /// The rate `r` as a decimal ("0.25"), at most four decimals; absent or null removes
    /// the market's fee description.
    #[serde(default)]
    rate: Option<String>,
    #[serde(default)]
    exponent: u8,
}

/// Sets a market's fee description for version 2 takers (docs/reference/order-versions.md).
async fn set_fees(s: Arc<AppState>, r: Req) -> ApiResult {
    let b: FeesBody = r.json()?;
    let fees = match &b.rate {
        None => None,
        Some(rate) => {
            // A rate is in [0, 1] with four decimals, as a price is.
            let bps =
                crate::domain::parse_price(rate).map_err(|_| ApiError::bad("the fee rate must be between 0 and 1"))?;
            Some(crate::domain::FeeSchedule::new(bps, b.exponent).map_err(ApiError::bad)?)
        }
    };
    crate::app::markets::set_fees(&s, &b.condition_id, fees).await?;
    reply(&json!({ "condition_id": b.condition_id, "fd": render::fee_description(fees) }))
}

#[derive(Deserialize)]
struct CreditBody {
    address: String,
    asset: String,
    amount: String,
}

async fn credit(s: Arc<AppState>, r: Req) -> ApiResult {
    if s.chain.is_some() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "the ledger faucet is closed in chain mode: balances are the chain's (mint or transfer collateral on chain)",
        ));
    }
    let b: CreditBody = r.json()?;
    let address = normalize_address(&b.address).ok_or_else(|| ApiError::bad("invalid address"))?;
    let amount = parse_u64(&b.amount).map_err(|_| ApiError::bad("amount must be a 6-decimal integer string"))?;
    let asset = Asset::parse(&b.asset);
    if let Asset::Token(t) = &asset {
        if s.registry.token(t).is_none() {
            return Err(ApiError::bad("Invalid token id"));
        }
    }
    let acc = s.engine.credit(address.clone(), asset.key().to_string(), Amount(amount)).await?;
    reply(
        &json!({ "address": address, "asset": asset.key(), "balance": acc.balance.units().to_string(), "available": acc.available().units().to_string() }),
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FaucetBody {
    address: String,
    amount: String,
}

/// POST /internal/faucet {address, amount}: chain mode's faucet (`app::faucet`).
async fn faucet(s: Arc<AppState>, r: Req) -> ApiResult {
    let b: FaucetBody = r.json()?;
    let g = crate::app::faucet::give(&s, &b.address, &b.amount).await?;
    reply(&json!({
        "address": format!("{:#x}", g.address),
        "amount": g.amount.to_string(),
        "transactionHash": format!("{:#x}", g.mint),
        "gas": g.gas.map(|(wei, hash)| json!({ "wei": wei.to_string(), "transactionHash": format!("{hash:#x}") })),
    }))
}

#[derive(Deserialize)]
struct EmailBody {
    email: String,
}

async fn approve(s: Arc<AppState>, r: Req) -> ApiResult {
    let b: EmailBody = r.json()?;
    let inv = crate::app::keys::approve(&s, &b.email).await?;
    reply(&json!({ "code": inv.code, "expiresAt": inv.expires_at }))
}

#[derive(Deserialize)]
struct ModeBody {
    mode: Mode,
}

async fn mode(s: Arc<AppState>, r: Req) -> ApiResult {
    let b: ModeBody = r.json()?;
    crate::app::access::set_mode(&s, b.mode).await?;
    reply(&json!({ "mode": b.mode }))
}

#[derive(Deserialize)]
struct AddressBody {
    address: String,
    status: AddressStatus,
}

async fn addresses(s: Arc<AppState>, r: Req) -> ApiResult {
    let b: AddressBody = r.json()?;
    let a = normalize_address(&b.address).ok_or_else(|| ApiError::bad("invalid address"))?;
    crate::app::access::set_address_status(&s, &a, b.status).await?;
    reply(&json!({ "address": a, "status": b.status }))
}

#[derive(Deserialize)]
struct ReleaseBody {
    #[serde(default, rename = "orderIDs")]
    order_ids: Option<Vec<String>>,
}

async fn release(s: Arc<AppState>, r: Req) -> ApiResult {
    let b: ReleaseBody = if r.body.is_empty() { ReleaseBody { order_ids: None } } else { r.json()? };
    let ids = b
        .order_ids
        .map(|v| {
            v.iter()
                .map(|x| x.parse::<Uuid>().map_err(|_| ApiError::bad("Invalid orderID")))
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()?;
    let placed = s.engine.release_deferred(ids).await?;
    reply(
        &placed
            .iter()
            .map(|p| json!({ "orderID": p.order.id.to_string(), "status": p.order.status.as_str() }))
            .collect::<Vec<_>>(),
    )
}

async fn balances(s: Arc<AppState>, r: Req) -> ApiResult {
    let q = r.query_map();
    let a = q.get("address").and_then(|x| normalize_address(x)).ok_or_else(|| ApiError::bad("invalid address"))?;
    let accs = s.engine.accounts(a).await?;
    let mut out = serde_json::Map::new();
    for (asset, acc) in accs {
        out.insert(
            asset,
            json!({
                "balance": acc.balance.fmt(),
                "reserved": acc.reserved.fmt(),
                "incoming": acc.incoming.fmt(),
                "available": acc.available().fmt(),
            }),
        );
    }
    reply(&out)
}

/// POST /internal/backup {"to": absolute directory}: an online backup (`app::backup`);
/// the books it holds, in YES terms, and how long writes were held.
async fn backup(s: Arc<AppState>, r: Req) -> ApiResult {
    use crate::app::backup::{self, BackupError};
    let body: serde_json::Value = serde_json::from_slice(&r.body).map_err(|_| ApiError::bad("Invalid payload"))?;
    let to = body["to"].as_str().filter(|t| !t.is_empty()).ok_or_else(|| ApiError::bad("to required"))?;
    let b = backup::backup(&s, std::path::PathBuf::from(to)).await.map_err(|e| match e {
        BackupError::Failed(_) | BackupError::Io(_) => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        _ => ApiError::bad(e.to_string()),
    })?;
    tracing::info!(dir = %b.dir.display(), held_ms = b.held_ms, "backup taken");
    let levels = |l: &crate::commit::views::Levels| {
        l.iter().map(|(p, q)| json!({"price": p.short(), "size": q.fmt()})).collect::<Vec<_>>()
    };
    let books: Vec<serde_json::Value> = b
        .books
        .iter()
        .map(|(v, book)| {
            json!({
                "market": v.market.condition_id,
                "asset_id": v.market.tokens[0].token_id,
                "bids": levels(&book.bids),
                "asks": levels(&book.asks),
            })
        })
        .collect();
    reply(&json!({ "to": b.dir.display().to_string(), "heldMs": b.held_ms, "books": books }))
}

/// Settles every PENDING trade now instead of at the worker's next run.
async fn settle(s: Arc<AppState>, _r: Req) -> ApiResult {
    if s.chain.is_some() {
        return Err(ApiError::new(StatusCode::CONFLICT, "chain mode settles on chain, not in the ledger"));
    }
    // The worker's own pass, on a blocking thread (its engine calls wait synchronously).
    let engine = s.engine.clone();
    let (confirmed, failed) = tokio::task::spawn_blocking(move || crate::app::settlement::settle_all(&engine))
        .await
        .map_err(|_| ApiError::db())??;
    reply(&json!({ "confirmed": confirmed, "failed": failed }))
}

/// The exchange's incrementNonce for an address, as the chain would see it: the address's
/// open orders are cancelled and its PENDING trades will fail settlement.
async fn increment_nonce(s: Arc<AppState>, r: Req) -> ApiResult {
    #[derive(Deserialize)]
    struct B {
        address: String,
    }
    let b: B = r.json()?;
    let a = normalize_address(&b.address).ok_or_else(|| ApiError::bad("invalid address"))?;
    let (nonce, ids) = s.engine.increment_nonce(a.clone(), Default::default()).await?;
    reply(&json!({ "address": a, "nonce": nonce, "canceled": ids.iter().map(|i| i.to_string()).collect::<Vec<_>>() }))
}

/// POST /internal/rate-limit (SPEC §4.8): changes the limit at runtime (until restart; the
/// configuration file is the lasting setting). `maxRequests` 0 turns it off.
async fn set_rate_limit(s: Arc<AppState>, r: Req) -> ApiResult {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct B {
        max_requests: u32,
        window_secs: u64,
    }
    let b: B = r.json()?;
    if b.window_secs == 0 || b.window_secs > 86_400 {
        return Err(ApiError::bad("windowSecs must be between 1 and 86400"));
    }
    s.access.limiter.set(b.max_requests, b.window_secs);
    tracing::info!(max = b.max_requests, window_secs = b.window_secs, "rate limit changed");
    reply(&json!({ "maxRequests": b.max_requests, "windowSecs": b.window_secs }))
}
