//! The operator's dashboard (docs/operating/running.md, "Dashboard"), on the internal server: one
//! static page with its own script and style sheet (no build step, nothing fetched from
//! elsewhere), `GET /internal/overview` for what it shows that the metrics do not, and the
//! market feed at `/ws/market` for the live book and trades. The page reads `GET /metrics`
//! for its time series and changes the mode and the rate limit through the internal
//! endpoints `predex admin` uses.
//!
//! A browser is a new kind of client for the internal server, and a page elsewhere could
//! make it send a request there: every request that changes something and carries an
//! `Origin` other than the server's own is refused (403).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use warp::http::{Method, StatusCode};
use warp::reply::Response;
use warp::{Filter, Reply};

use super::{respond, with_state, ApiError, ApiResult, Routes};
use crate::app::overview;
use crate::app::AppState;
use crate::domain::chain::ReportState;
use crate::domain::now_secs;

const PAGE: &str = include_str!("index.html");
const SCRIPT: &str = include_str!("dashboard.js");
const STYLE: &str = include_str!("dashboard.css");

/// What the page may load and connect to: this server only.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                      connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

pub fn routes(state: Arc<AppState>) -> Routes {
    let asset = |path: &'static str, body: &'static str, kind: &'static str| {
        warp::path(path).and(warp::path::end()).and(warp::get()).map(move || static_reply(body, kind))
    };
    let page = warp::path::end()
        .or(warp::path!("dashboard"))
        .unify()
        .and(warp::get())
        .map(|| static_reply(PAGE, "text/html; charset=utf-8"));
    let overview = warp::path!("internal" / "overview")
        .and(warp::get())
        .and(with_state(state.clone()))
        .then(|s: Arc<AppState>| async move { respond(overview(&s).await) });
    page.or(asset("dashboard.js", SCRIPT, "text/javascript; charset=utf-8"))
        .unify()
        .or(asset("dashboard.css", STYLE, "text/css; charset=utf-8"))
        .unify()
        .or(overview)
        .unify()
        .or(warp::path!("internal" / "trades")
            .and(warp::get())
            .and(super::req())
            .and(with_state(state.clone()))
            .map(|r: super::Req, s: Arc<AppState>| respond(recent_trades(&s, &r))))
        .unify()
        .or(super::ws::market_route(state))
        .unify()
        .boxed()
}

fn static_reply(body: &'static str, kind: &'static str) -> Response {
    let mut r = Response::new(body.into());
    let h = r.headers_mut();
    h.insert("content-type", warp::http::HeaderValue::from_static(kind));
    h.insert("cache-control", warp::http::HeaderValue::from_static("no-cache"));
    h.insert("content-security-policy", warp::http::HeaderValue::from_static(POLICY));
    h.insert("x-content-type-options", warp::http::HeaderValue::from_static("nosniff"));
    r
}

/// The internal server answers the operator only. Before any route: a request whose
/// `Host` is not one of the server's own loopback names is refused (403), so a page that
/// rebinds its own host name to 127.0.0.1 is not served; then every request but the
/// dashboard's static files (which hold no data) must carry `Authorization: Bearer
/// <token>` (401 without it) — the market feed's WebSocket, which a browser cannot give
/// that header, may carry it as `?token=` instead. Passes (rejects) what it lets through.
pub fn gate(token: Arc<str>, bound: std::net::SocketAddr) -> Routes {
    let port = bound.port();
    let names: Arc<[String]> =
        [format!("127.0.0.1:{port}"), format!("localhost:{port}"), format!("[::1]:{port}"), bound.to_string()].into();
    warp::path::full()
        .and(warp::header::headers_cloned())
        .and(warp::query::raw().or(warp::any().map(String::new)).unify())
        .and_then(move |path: warp::path::FullPath, headers: warp::http::HeaderMap, query: String| {
            let (token, names) = (token.clone(), names.clone());
            async move {
                let host = headers.get("host").and_then(|h| h.to_str().ok()).unwrap_or("");
                if !names.iter().any(|n| n.eq_ignore_ascii_case(host)) {
                    return Ok(ApiError::new(StatusCode::FORBIDDEN, "forbidden host").into_response());
                }
                let path = path.as_str();
                if matches!(path, "/" | "/dashboard" | "/dashboard.js" | "/dashboard.css") {
                    return Err(warp::reject::not_found());
                }
                let bearer = headers
                    .get("authorization")
                    .and_then(|h| h.to_str().ok())
                    .and_then(|h| h.strip_prefix("Bearer ").or_else(|| h.strip_prefix("bearer ")));
                let queried =
                    (path == "/ws/market").then(|| query.split('&').find_map(|kv| kv.strip_prefix("token="))).flatten();
                match bearer.or(queried) {
                    Some(t) if crate::auth::ct_eq(t.trim().as_bytes(), token.as_bytes()) => {
                        Err(warp::reject::not_found())
                    }
                    _ => Ok(ApiError::unauthorized("internal token required").into_response()),
                }
            }
        })
        .boxed()
}

/// Answers 403 to a request that would change something sent from a page of another
/// origin; rejects (passes on) every other request.
pub fn cross_origin() -> Routes {
    warp::method()
        .and(warp::header::optional::<String>("origin"))
        .and(warp::header::optional::<String>("host"))
        .and_then(|m: Method, origin: Option<String>, host: Option<String>| async move {
            let safe = m == Method::GET || m == Method::HEAD || m == Method::OPTIONS;
            match origin {
                Some(o) if !safe && !same_origin(&o, host.as_deref()) => {
                    Ok(ApiError::new(StatusCode::FORBIDDEN, "cross-origin request refused").into_response())
                }
                _ => Err(warp::reject::not_found()),
            }
        })
        .boxed()
}

/// Whether `origin` (`scheme://host[:port]`) names the server the request was sent to.
fn same_origin(origin: &str, host: Option<&str>) -> bool {
    let Some(host) = host else { return false };
    origin.strip_prefix("http://").is_some_and(|o| o.eq_ignore_ascii_case(host))
}

/// GET /internal/overview: the markets with their book tops, last price, 24-hour volume and
/// resting orders; the settlement backlog; in chain mode the operator's gas balance and
/// last transaction and its resolved markets' payout reports; the mode and the rate limit.
async fn overview(s: &AppState) -> ApiResult {
    let o = s.engine.overview().await?;
    let now = now_secs();
    let tables = s.registry.tables();
    let mut markets = Vec::with_capacity(tables.list.len());
    for v in tables.list.iter() {
        let m = &v.market;
        let snap = v.snapshot();
        let (bid, ask) = snap.best(0);
        let day = s.day_volumes.of(&s.store, m.idx, now)?;
        let price = |p: Option<crate::domain::Price>| p.map(|p| p.short());
        markets.push(json!({
            "condition_id": m.condition_id,
            "question": m.question,
            "asset_id": m.tokens[0].token_id,
            "outcome": m.tokens[0].outcome,
            "best_bid": price(bid),
            "best_ask": price(ask),
            "last": price(snap.last_trade(0).map(|x| x.0)),
            "volume_24h": day.fmt(),
            "open_orders": o.resting.get(m.idx as usize).copied().unwrap_or(0),
            "accepting_orders": m.accepting_orders,
            "closed": m.closed,
        }));
    }
    let chain = match s.chain.as_ref().map(|c| &c.link) {
        None => Value::Null,
        Some(c) => {
            use alloy_provider::Provider;
            let gas = |account| async move {
                tokio::time::timeout(
                    Duration::from_secs(2),
                    std::future::IntoFuture::into_future(c.provider.get_balance(account)),
                )
                .await
                .ok()
                .and_then(Result::ok)
                .map(alloy_primitives::utils::format_ether)
            };
            let relayer = c.relayer().address;
            let (balance, relayer_balance) = tokio::join!(gas(c.operator.address), gas(relayer));
            let last = *c.last_tx.lock();
            let reports = s.store.payout_reports()?;
            let count = |states: &[ReportState]| reports.iter().filter(|r| states.contains(&r.state)).count();
            json!({
                "operator": format!("{:#x}", c.operator.address),
                "gasBalance": balance,
                "relayer": format!("{relayer:#x}"),
                "relayerGasBalance": relayer_balance,
                "inFlight": s.store.chain_txs()?.len(),
                "outOfGas": s.exported.chain_out_of_gas.get() == 1,
                "payoutReports": {
                    "pending": count(&[ReportState::Pending, ReportState::Mined]),
                    "confirmed": count(&[ReportState::Confirmed]),
                    "failed": count(&[ReportState::Failed]),
                },
                "lastTx": last.map(|t| json!({ "hash": format!("{:#x}", t.hash), "at": t.at, "status": t.status })),
            })
        }
    };
    let (max, window) = s.access.limiter.settings();
    Ok(warp::reply::json(&json!({
        "mode": s.access.mode(),
        "rateLimit": { "maxRequests": max, "windowSecs": window },
        "markets": markets,
        "settlement": {
            "settles": if s.chain.is_some() { "chain" } else { "ledger" },
            "pending": o.pending,
            "oldestPendingSecs": o.oldest_pending.map(|t| now.saturating_sub(t)),
            "chain": chain,
        },
        "events": s.events.as_ref().map(|e| e.status()),
    }))
    .into_response())
}

/// GET /internal/trades?market=CONDITION_ID: the market's last 50 trades of the past day,
/// newest first, in YES terms (as the market feed's `last_trade_price` for the YES token).
fn recent_trades(s: &AppState, r: &super::Req) -> ApiResult {
    let q = r.query_map();
    let id = q.get("market").ok_or_else(|| ApiError::bad("market required"))?;
    let v = s.registry.condition(id).ok_or_else(|| ApiError::not_found("market not found"))?;
    let yes = &v.market.tokens[0].token_id;
    let out: Vec<Value> = overview::recent_trades(&s.store, v.market.idx, now_secs(), 50)?
        .iter()
        .map(|(t, tick)| {
            let side = if &tick.asset_id == yes { tick.side } else { tick.side.opposite() };
            json!({ "time": t, "price": tick.price_of(yes).short(), "size": tick.size.fmt(), "side": side.as_str() })
        })
        .collect();
    super::reply(&out)
}

#[cfg(test)]
mod tests {
    use super::same_origin;

    #[test]
    fn only_the_servers_own_origin_is_the_same() {
        assert!(same_origin("http://127.0.0.1:9000", Some("127.0.0.1:9000")));
        assert!(same_origin("http://LOCALHOST:9000", Some("localhost:9000")));
        assert!(!same_origin("http://127.0.0.1:9001", Some("127.0.0.1:9000")));
        assert!(!same_origin("https://127.0.0.1:9000", Some("127.0.0.1:9000")));
        assert!(!same_origin("http://evil.example", Some("127.0.0.1:9000")));
        assert!(!same_origin("null", Some("127.0.0.1:9000")));
        assert!(!same_origin("http://127.0.0.1:9000", None));
    }
}
