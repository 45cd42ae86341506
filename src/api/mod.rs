//! The public HTTP interface: one module per resource, each exposing route filters;
//! handlers are plain async functions returning a response. Every error is
//! `{"error": "<message>"}` with the status of SPEC §7 ([`ApiError`]).

pub mod account;
pub mod analytics;
pub mod auctions;
pub mod body;
pub mod book;
pub mod bridge;
pub mod builders;
pub mod catalogue;
pub mod ceiling;
pub mod clients;
pub mod connections;
pub mod ctf;
pub mod dashboard;
pub mod internal;
pub mod keys;
pub mod orders;
pub mod paging;
pub mod params;
pub mod plain_errors;
pub mod relay;
pub mod render;
pub mod resolution;
pub mod rewards;
pub mod rfq;
pub mod wire;
pub mod ws;

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use serde::Serialize;
use uuid::Uuid;
use warp::http::{HeaderMap, Method, StatusCode};
use warp::reply::Response;
use warp::{Filter, Reply};

use crate::app::AppState;
use crate::auth;
use crate::domain::ApiKeyRecord;
use crate::engine::EngineError;
use crate::store::StoreError;

pub use crate::auth::MAX_DRIFT_SECS;

/// An error reply: a status and the catalogued message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError { status, message: message.into() }
    }
    pub fn bad(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }
    pub fn unauthorized(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, message)
    }
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, message)
    }
    pub fn db() -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "database error")
    }
}

/// 409 in chain mode for what moves ledger balances the chain does not hold — the bridge,
/// bonds, CTF operations and the relay — until they run on chain (docs/operating/settlement.md).
pub fn ledger_only(s: &AppState) -> Result<(), ApiError> {
    match s.chain {
        Some(_) => Err(ApiError::new(StatusCode::CONFLICT, "not available in chain mode")),
        None => Ok(()),
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        tracing::error!(error = %e, "store");
        ApiError::db()
    }
}

impl From<crate::domain::BadDate> for ApiError {
    fn from(e: crate::domain::BadDate) -> ApiError {
        ApiError::bad(e.to_string())
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> ApiError {
        match e {
            EngineError::Rejected(r) => ApiError::bad(format!("{r:?}")),
            EngineError::Exists => ApiError::new(StatusCode::CONFLICT, "market already exists"),
            EngineError::Storage | EngineError::Down => ApiError::db(),
        }
    }
}

impl From<crate::app::markets::MarketError> for ApiError {
    fn from(e: crate::app::markets::MarketError) -> ApiError {
        use crate::app::markets::MarketError;
        match e {
            MarketError::Invalid(m) => ApiError::bad(m),
            MarketError::Exists => ApiError::new(StatusCode::CONFLICT, "market already exists"),
            MarketError::NotFound => ApiError::not_found("market not found"),
            MarketError::BadDate(e) => e.into(),
            MarketError::Rewards(e) => e.into(),
            MarketError::Onchain(e) => e.into(),
            MarketError::Engine(e) => e.into(),
            MarketError::Store(e) => e.into(),
        }
    }
}

impl From<crate::app::onchain::OnchainError> for ApiError {
    fn from(e: crate::app::onchain::OnchainError) -> ApiError {
        use crate::app::onchain::OnchainError;
        match e {
            OnchainError::Invalid(m) => ApiError::bad(m),
            OnchainError::Chain(_) => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
            OnchainError::Engine(e) => e.into(),
        }
    }
}

impl From<crate::app::faucet::FaucetError> for ApiError {
    fn from(e: crate::app::faucet::FaucetError) -> ApiError {
        use crate::app::faucet::FaucetError as F;
        let status = match e {
            F::Address | F::Amount(_) => StatusCode::BAD_REQUEST,
            F::LedgerMode | F::NotMintable => StatusCode::CONFLICT,
            F::TooSoon(_) => StatusCode::TOO_MANY_REQUESTS,
            F::Chain(_) => StatusCode::SERVICE_UNAVAILABLE,
        };
        ApiError::new(status, e.to_string())
    }
}

impl Reply for ApiError {
    fn into_response(self) -> Response {
        warp::reply::with_status(warp::reply::json(&serde_json::json!({ "error": self.message })), self.status)
            .into_response()
    }
}

pub type ApiResult = Result<Response, ApiError>;

/// Turns a handler result into a response.
pub fn respond(r: ApiResult) -> Response {
    match r {
        Ok(resp) => resp,
        Err(e) => e.into_response(),
    }
}

pub fn reply<T: Serialize>(v: &T) -> ApiResult {
    Ok(warp::reply::json(v).into_response())
}

/// A JSON number from a decimal string: only for fields the wire types as numbers (Gamma,
/// the Data API, the bridge), computed in integers and converted here, at the boundary.
pub fn number(decimal: &str) -> serde_json::Value {
    serde_json::from_str(decimal).unwrap_or(serde_json::Value::Null)
}

/// A price as a JSON number at its shortest (`0.5`), null when there is none.
pub fn price_number(p: Option<crate::domain::Price>) -> serde_json::Value {
    p.map_or(serde_json::Value::Null, |p| number(&p.short()))
}

/// The raw request: what authentication and body parsing need.
#[derive(Debug, Clone)]
pub struct Req {
    pub method: Method,
    pub path: String,
    pub query: Option<String>,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Req {
    /// A header by its SPEC name (`SERVICE_*`), also accepting the `POLY_*` spelling the
    /// official clients send.
    pub fn header(&self, name: &str) -> Option<&str> {
        let v = self.headers.get(name).or_else(|| {
            // The official clients' spelling, built on the stack: they send it on every
            // request, and every request reads five of these.
            let rest = name.strip_prefix("SERVICE_")?;
            let mut buf = [0u8; 64];
            let alt = buf.get_mut(..5 + rest.len())?;
            alt[..5].copy_from_slice(b"POLY_");
            alt[5..].copy_from_slice(rest.as_bytes());
            self.headers.get(std::str::from_utf8(alt).ok()?)
        })?;
        v.to_str().ok().map(str::trim).filter(|s| !s.is_empty())
    }

    /// The body as JSON; 400 `Invalid payload: …` when it is not the expected shape.
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T, ApiError> {
        serde_json::from_slice(&self.body).map_err(|e| ApiError::bad(format!("Invalid payload: {e}")))
    }

    pub fn query_map(&self) -> HashMap<String, String> {
        self.query.as_deref().and_then(|q| serde_urlencoded::from_str(q).ok()).unwrap_or_default()
    }
}

/// A server's or a module's routes, behind one `dyn` call.
///
/// warp's combinators nest their types, and a chain of `.or()` over routes that each take
/// [`req()`] makes huge type names whose monomorphization is most of the compile time
/// (docs/internals/performance.md, "Build time"). Boxing each module's routes, and `req()`, keeps
/// the types small; a request pays one allocation per boxed layer it enters, outside the
/// trading path (`connections` serves it without the tree).
pub type Routes = warp::filters::BoxedFilter<(Response,)>;

/// Captures method, path, query, headers and body (read whole and bounded by the server's
/// dispatch, [`connections`]).
pub fn req() -> warp::filters::BoxedFilter<(Req,)> {
    warp::method()
        .and(warp::path::full())
        .and(warp::query::raw().or(warp::any().map(String::new)).unify())
        .and(warp::header::headers_cloned())
        .and(warp::body::bytes())
        .map(|method, path: warp::path::FullPath, q: String, headers, body| Req {
            method,
            path: path.as_str().to_string(),
            query: if q.is_empty() { None } else { Some(q) },
            headers,
            body,
        })
        .boxed()
}

/// 429: over the client's request limit.
fn too_many() -> ApiError {
    ApiError::new(StatusCode::TOO_MANY_REQUESTS, "rate limit exceeded")
}

/// Counts a finished request under its route and status (`GET /metrics`).
fn count_request(m: &crate::metrics::Metrics, route: &str, status: u16) {
    let labels = crate::metrics::RouteLabels { route: route.to_string(), status };
    m.requests.get_or_create(&labels).inc();
}

/// The route label of a request path to the order-book server: the path of its OpenAPI
/// document it matches (`/data/order/{id}` for every order id), or `unmatched`. Only those
/// become label values, so no request, whatever its path, adds a series that stays.
fn route_label(path: &str) -> &'static str {
    type Template = (Vec<String>, String);
    static ROUTES: std::sync::LazyLock<Vec<Template>> = std::sync::LazyLock::new(|| {
        let doc: serde_json::Value = serde_json::from_str(openapi::CLOB).expect("the CLOB OpenAPI document is JSON");
        let paths = doc["paths"].as_object().expect("an OpenAPI document has paths");
        let mut routes: Vec<Template> =
            paths.keys().map(|p| (p.split('/').map(str::to_string).collect(), p.clone())).collect();
        // A literal segment wins over a parameter: fewer parameters first.
        routes.sort_by_key(|(segments, _)| segments.iter().filter(|s| s.starts_with('{')).count());
        routes
    });
    let segments: Vec<&str> = path.split('/').collect();
    ROUTES
        .iter()
        .find(|(t, _)| {
            t.len() == segments.len()
                && t.iter().zip(&segments).all(|(t, s)| t.starts_with('{') && !s.is_empty() || t == s)
        })
        .map_or("unmatched", |(_, p)| p.as_str())
}

pub fn with_state(s: Arc<AppState>) -> impl Filter<Extract = (Arc<AppState>,), Error = Infallible> + Clone {
    warp::any().map(move || s.clone())
}

/// A route: `path` (a path and a method) answered by `handler(state, request)`, its error
/// rendered as SPEC §7's `{"error": ...}`.
pub fn handle<P, F, Fut>(
    path: P,
    state: &Arc<AppState>,
    handler: F,
) -> impl Filter<Extract = (Response,), Error = warp::Rejection> + Clone + Send + Sync
where
    P: Filter<Extract = (), Error = warp::Rejection> + Clone + Send + Sync,
    F: Fn(Arc<AppState>, Req) -> Fut + Clone + Send + Sync,
    Fut: std::future::Future<Output = ApiResult> + Send,
{
    path.and(req()).and(with_state(state.clone())).then(move |r, s| {
        let handler = handler.clone();
        async move { respond(handler(s, r).await) }
    })
}

/// [`handle`] for a handler that does not wait.
pub fn handle_now<P, F>(
    path: P,
    state: &Arc<AppState>,
    handler: F,
) -> impl Filter<Extract = (Response,), Error = warp::Rejection> + Clone + Send + Sync
where
    P: Filter<Extract = (), Error = warp::Rejection> + Clone + Send + Sync,
    F: Fn(Arc<AppState>, Req) -> ApiResult + Clone + Send + Sync,
{
    path.and(req()).and(with_state(state.clone())).map(move |r, s| respond(handler(s, r)))
}

fn now_i64() -> i64 {
    crate::domain::now_secs() as i64
}

/// L2 authentication (SPEC §5.3–5.4): returns the API key the request is signed with.
pub fn authenticate(state: &AppState, req: &Req) -> Result<Arc<ApiKeyRecord>, ApiError> {
    let h = l2_headers(req)?;
    let rec = state.keys.get(&h.key).ok_or_else(invalid_key)?;
    h.verify(req, &rec.address, &rec.passphrase, &rec.secret)?;
    served_once(state, req, &h.key, h.signature, h.timestamp)?;
    Ok(rec)
}

/// A state-changing request's signature is served once while its timestamp is fresh
/// (`app::replay`): sent again, 409 `duplicate request`. Reads may repeat, and a signed
/// order's placement is refused as a duplicate by its hash already.
pub(crate) fn served_once(state: &AppState, req: &Req, key: &Uuid, signature: &str, ts: &str) -> Result<(), ApiError> {
    let placement = req.method == Method::POST && matches!(req.path.as_str(), "/order" | "/orders");
    if req.method == Method::GET || req.method == Method::HEAD || placement {
        return Ok(());
    }
    let ts: i64 = ts.parse().map_err(|_| ApiError::unauthorized("L2 authentication failure"))?;
    match state.keys.replays.first_use(key, signature, ts, now_i64()) {
        crate::app::replay::Use::First => Ok(()),
        crate::app::replay::Use::Replay => Err(ApiError::new(StatusCode::CONFLICT, "duplicate request")),
        crate::app::replay::Use::Full => {
            Err(ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "server busy: too many recent requests, retry shortly"))
        }
    }
}

/// L2 authentication of a read: an L2 key, or a read-only key (`POST
/// /auth/readonly-api-key`), which reads as the L2 key that made it. Every route that
/// trades or changes credentials takes [`authenticate`] instead, so a read-only key gets
/// 401 there.
pub fn authenticate_read(state: &AppState, req: &Req) -> Result<Arc<ApiKeyRecord>, ApiError> {
    let h = l2_headers(req)?;
    if let Some(rec) = state.keys.get(&h.key) {
        h.verify(req, &rec.address, &rec.passphrase, &rec.secret)?;
        served_once(state, req, &h.key, h.signature, h.timestamp)?;
        return Ok(rec);
    }
    let (ro, parent) = crate::app::builders::readonly_key(state, &h.key)?.ok_or_else(invalid_key)?;
    h.verify(req, &ro.address, &ro.passphrase, &ro.secret)?;
    served_once(state, req, &h.key, h.signature, h.timestamp)?;
    Ok(parent)
}

fn invalid_key() -> ApiError {
    ApiError::unauthorized("Unauthorized/Invalid api key")
}

/// The five L2 headers of a request (SPEC §5.4), the key parsed.
struct L2Headers<'a> {
    address: &'a str,
    signature: &'a str,
    timestamp: &'a str,
    key: Uuid,
    passphrase: &'a str,
}

fn l2_headers(req: &Req) -> Result<L2Headers<'_>, ApiError> {
    let fail = || ApiError::unauthorized("L2 authentication failure");
    let (Some(address), Some(signature), Some(timestamp), Some(key), Some(passphrase)) = (
        req.header("SERVICE_ADDRESS"),
        req.header("SERVICE_SIGNATURE"),
        req.header("SERVICE_TIMESTAMP"),
        req.header("SERVICE_API_KEY"),
        req.header("SERVICE_PASSPHRASE"),
    ) else {
        return Err(fail());
    };
    // One spelling per request: the five headers all `SERVICE_*` or all `POLY_*`.
    let spelled = |prefix: &str| {
        ["ADDRESS", "SIGNATURE", "TIMESTAMP", "API_KEY", "PASSPHRASE"]
            .iter()
            .any(|n| req.headers.contains_key(format!("{prefix}{n}").as_str()))
    };
    if spelled("SERVICE_") && spelled("POLY_") {
        return Err(fail());
    }
    let key: Uuid = key.parse().map_err(|_| invalid_key())?;
    Ok(L2Headers { address, signature, timestamp, key, passphrase })
}

impl L2Headers<'_> {
    /// The request is fresh, from `address`, with the key's passphrase, and signed with its
    /// secret.
    fn verify(&self, req: &Req, address: &str, passphrase: &str, secret: &str) -> Result<(), ApiError> {
        let fail = || ApiError::unauthorized("L2 authentication failure");
        let t: i64 = self.timestamp.parse().map_err(|_| fail())?;
        if (now_i64() - t).abs() > MAX_DRIFT_SECS {
            return Err(fail());
        }
        if auth::normalize_address(self.address).as_deref() != Some(address) {
            return Err(fail());
        }
        // Passphrase: constant-time via HMAC-free comparison of equal-length digests.
        if !auth::ct_eq(self.passphrase.as_bytes(), passphrase.as_bytes()) {
            return Err(fail());
        }
        if !signed_with(req, secret, self.timestamp, self.signature) {
            return Err(fail());
        }
        Ok(())
    }
}

/// Whether `sig` is the L2 HMAC of the request with `secret` (API keys and builder keys
/// sign the same way): over the path with or without its query, and the body as sent or
/// in the py/rs clients' form with `'` replaced by `"` — that form only when the body sent
/// and the body signed are the same JSON value. A spelling that is the same bytes as
/// another (no query; no `'` in the body) is not hashed twice: which spellings exist
/// depends on the request alone, never on the secret.
pub(crate) fn signed_with(req: &Req, secret: &str, ts: &str, sig: &str) -> bool {
    let path = req.path.as_str();
    let with_query = req.query.as_ref().map(|q| format!("{path}?{q}"));
    let both_paths;
    let paths: &[&str] = match &with_query {
        Some(w) => {
            both_paths = [w.as_str(), path];
            &both_paths
        }
        None => std::slice::from_ref(&path),
    };
    let body: &[u8] = &req.body;
    if auth::verify_hmac(secret, ts, req.method.as_str(), paths, &[body], sig) {
        return true;
    }
    // The clients' quirk: the HMAC over the body with `'` made `"`. Only when what was sent
    // is the same JSON value as what was signed, so a body bent by the substitution (a
    // field swallowed into a string) does not verify.
    if !body.contains(&b'\'') {
        return false;
    }
    let quoted: Vec<u8> = body.iter().map(|&b| if b == b'\'' { b'"' } else { b }).collect();
    let value = |b: &[u8]| serde_json::from_slice::<serde_json::Value>(b).ok();
    match (value(body), value(&quoted)) {
        (Some(sent), Some(signed)) if sent == signed => {
            auth::verify_hmac(secret, ts, req.method.as_str(), paths, &[quoted.as_slice()], sig)
        }
        _ => false,
    }
}

/// Catch-all: every rejection becomes a JSON error.
pub async fn recover(r: warp::Rejection) -> Result<Response, Infallible> {
    let e = if r.is_not_found() {
        ApiError::not_found("not found")
    } else if r.find::<warp::reject::MethodNotAllowed>().is_some() {
        ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "method not allowed")
    } else {
        ApiError::bad("Invalid payload")
    };
    Ok(e.into_response())
}

/// The public servers' OpenAPI documents (docs/reference/openapi/, written by its build.py).
pub mod openapi {
    pub const CLOB: &str = include_str!("../../docs/reference/openapi/clob.json");
    pub const CATALOGUE: &str = include_str!("../../docs/reference/openapi/catalogue.json");
    pub const ANALYTICS: &str = include_str!("../../docs/reference/openapi/analytics.json");
    pub const BRIDGE: &str = include_str!("../../docs/reference/openapi/bridge.json");
}

/// GET /openapi.json: the server's OpenAPI document; like the health probe, outside the
/// rate limit.
pub fn openapi_route(doc: &'static str) -> Routes {
    warp::path!("openapi.json")
        .and(warp::get())
        .map(move || warp::reply::with_header(doc, "content-type", "application/json").into_response())
        .boxed()
}

/// A server's routes with its OpenAPI document in front.
pub fn with_openapi(doc: &'static str, routes: Routes) -> Routes {
    openapi_route(doc).or(routes).unify().boxed()
}

/// The order-book (CLOB) server.
pub fn clob_routes(state: Arc<AppState>) -> Routes {
    // The health probe at `/ok`, and at `/` where Polymarket answers it (the official
    // clients' `get_ok()`): the JSON string "OK", which the Rust client reads as JSON and
    // the others as either.
    let ok = warp::path!("ok")
        .or(warp::path::end())
        .unify()
        .and(warp::get())
        .map(|| warp::reply::json(&"OK").into_response());
    let time =
        warp::path!("time").and(warp::get()).map(|| warp::reply::json(&crate::domain::now_secs()).into_response());
    // The order version the venue takes (`order-version`; SPEC's orders are version 1): the
    // V2 clients ask before they sign, and build version-1 orders when told 1.
    let order_version = state.config.order_version;
    let version = warp::path!("version")
        .and(warp::get())
        .map(move || warp::reply::json(&serde_json::json!({ "version": order_version })).into_response());
    // Each module's routes are boxed already (`Routes`), so this chain's type stays shallow
    // without boxing it again (each boxed layer is an allocation per request).
    let routes = time
        .or(version)
        .unify()
        .or(keys::routes(state.clone()))
        .unify()
        .or(account::routes(state.clone()))
        .unify()
        .or(ctf::routes(state.clone()))
        .unify()
        .or(rewards::routes(state.clone()))
        .unify()
        .or(resolution::routes(state.clone()))
        .unify()
        .or(rfq::routes(state.clone()))
        .unify()
        .or(builders::routes(state.clone()))
        .unify()
        .or(relay::routes(state.clone()))
        .unify()
        .or(auctions::routes(state.clone()))
        .unify()
        .or(orders::routes(state.clone()))
        .unify()
        .or(book::routes(state.clone()))
        .unify()
        .or(ws::routes(state.clone()))
        .unify()
        .or(analytics::clob_routes(state.clone()))
        .unify();
    // The rate limit is the connection loop's (`connections::Role::OrderBook`): it is applied before a body
    // is read, and the health probe is not counted (SPEC §8).
    let m = state.exported.clone();
    let count = warp::log::custom(move |info: warp::log::Info<'_>| {
        count_request(&m, route_label(info.path()), info.status().as_u16())
    });
    ok.or(openapi_route(openapi::CLOB))
        .unify()
        .or(routes)
        .unify()
        .recover(recover)
        .unify()
        .with(count)
        .map(Reply::into_response)
        .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(query: Option<&str>, body: &str, headers: &[(&'static str, &str)]) -> Req {
        let mut h = HeaderMap::new();
        for (k, v) in headers {
            h.insert(*k, v.parse().unwrap());
        }
        Req {
            method: Method::POST,
            path: "/order".into(),
            query: query.map(String::from),
            headers: h,
            body: Bytes::from(body.to_string()),
        }
    }

    const SECRET: &str = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";

    /// A request counts under its OpenAPI path: IDs never become label values, and a path
    /// the server does not have is `unmatched` whatever its status.
    #[test]
    fn requests_count_under_their_documented_route() {
        assert_eq!(route_label("/order"), "/order");
        assert_eq!(route_label("/"), "/");
        assert_eq!(route_label("/data/order/0f1e2d3c-0000-4000-8000-000000000001"), "/data/order/{id}");
        assert_eq!(route_label("/markets/0xabc"), "/markets/{condition_id}");
        assert_eq!(route_label("/bonds/cluster/7/requirement"), "/bonds/cluster/{cluster_id}/requirement");
        for unknown in ["/nope/123", "/data/order/", "/markets/0xabc/extra", "/order/", ""] {
            assert_eq!(route_label(unknown), "unmatched", "{unknown:?}");
        }
    }

    /// Each spelling a client may have signed verifies, and only those: the path with or
    /// without the query, the body as sent or with `'` as `"`.
    #[test]
    fn signed_over_any_spelling_the_clients_use() {
        let sign = |path: &str, body: &str| auth::build_hmac_signature(SECRET, "1000", "POST", path, body);
        let plain = req(None, r#"{"a": 1}"#, &[]);
        assert!(signed_with(&plain, SECRET, "1000", &sign("/order", r#"{"a": 1}"#)));
        assert!(!signed_with(&plain, SECRET, "1001", &sign("/order", r#"{"a": 1}"#)));
        assert!(!signed_with(&plain, SECRET, "1000", &sign("/order?x=1", r#"{"a": 1}"#)));
        assert!(!signed_with(&plain, SECRET, "1000", &sign("/order", r#"{'a': 1}"#)));

        let queried = req(Some("x=1"), r#"{"a": 1}"#, &[]);
        assert!(signed_with(&queried, SECRET, "1000", &sign("/order?x=1", r#"{"a": 1}"#)));
        assert!(signed_with(&queried, SECRET, "1000", &sign("/order", r#"{"a": 1}"#)));
        assert!(!signed_with(&queried, SECRET, "1000", &sign("/order?x=2", r#"{"a": 1}"#)));

        // The py/rs clients' form, `'` turned into `"`, verifies only when the body sent is
        // the JSON value signed: a body sent with `'` for `"` is not JSON, and a body whose
        // `'` sit inside strings means another value once they are turned.
        let quoted = req(Some("x=1"), "{'a': 1}", &[]);
        assert!(signed_with(&quoted, SECRET, "1000", &sign("/order", "{'a': 1}")));
        assert!(!signed_with(&quoted, SECRET, "1000", &sign("/order", r#"{"a": 1}"#)));
        assert!(!signed_with(&quoted, SECRET, "1000", &sign("/order?x=1", r#"{"a": 1}"#)));
        // The attack — `"` sent as `'` so a field hides inside a string.
        let bent = req(None, r#"{"size": "5', 'ttl': '1"}"#, &[]);
        assert!(!signed_with(&bent, SECRET, "1000", &sign("/order", r#"{"size": "5", "ttl": "1"}"#)));
        let apostrophe = req(None, r#"{"a": "it's"}"#, &[]);
        assert!(signed_with(&apostrophe, SECRET, "1000", &sign("/order", r#"{"a": "it's"}"#)));
        assert!(!signed_with(&apostrophe, SECRET, "1000", &sign("/order", r#"{"a": "it"s"}"#)));
    }

    /// `SERVICE_*` names also find the `POLY_*` headers the official clients send; the
    /// SPEC's own spelling wins when both are there.
    #[test]
    fn headers_by_either_spelling() {
        let r = req(None, "", &[("POLY_API_KEY", " k "), ("SERVICE_NONCE", "1"), ("POLY_NONCE", "2")]);
        assert_eq!(r.header("SERVICE_API_KEY"), Some("k"));
        assert_eq!(r.header("SERVICE_NONCE"), Some("1"));
        assert_eq!(r.header("SERVICE_PASSPHRASE"), None);
        assert_eq!(r.header("POLY_API_KEY"), Some("k"));
        let long = format!("SERVICE_{}", "X".repeat(80));
        assert_eq!(r.header(&long), None);
    }
}
