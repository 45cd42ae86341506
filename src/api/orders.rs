//! Orders (SPEC §2.2–2.7, §4.2, §5.7, §7.4): submission, cancellation and queries. The
//! payload is parsed here; what an order must satisfy is `app::orders`.

use std::sync::Arc;

use serde_json::{json, Value};
use warp::http::{Method, StatusCode};
use warp::Filter;

use super::paging;
use super::render::{canceled_json, order_json, rejected_json, result_json, trade_json};
use super::wire::{check_version, invalid, new_order, parse_id, Submission};
use super::{
    authenticate, authenticate_read, handle_now, reply, req, respond, with_state, ApiError, ApiResult, Req, Routes,
};
use crate::app::orders::{self, OrderError};
use crate::app::AppState;
use crate::domain::ApiKeyRecord;
use crate::engine::Placed;

/// Orders per POST /orders (SPEC §8).
pub const MAX_BATCH: usize = 15;
/// IDs per cancel request.
pub const MAX_CANCEL: usize = 3000;

/// The trading routes: what market makers send most. The order-book server's front
/// ([`super::front`]) matches these on method and path ahead of warp's filter tree; the
/// tree ([`routes`]) is built from the same table, so a wrong method still gets warp's 405.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trading {
    Place,
    PlaceMany,
    Cancel,
    CancelMany,
    CancelAll,
    CancelMarket,
}

impl Trading {
    pub const ALL: [Trading; 6] = [
        Trading::Place,
        Trading::PlaceMany,
        Trading::Cancel,
        Trading::CancelMany,
        Trading::CancelAll,
        Trading::CancelMarket,
    ];

    /// Its method (POST or DELETE) and path.
    pub fn route(self) -> (Method, &'static str) {
        match self {
            Trading::Place => (Method::POST, "/order"),
            Trading::PlaceMany => (Method::POST, "/orders"),
            Trading::Cancel => (Method::DELETE, "/order"),
            Trading::CancelMany => (Method::DELETE, "/orders"),
            Trading::CancelAll => (Method::DELETE, "/cancel-all"),
            Trading::CancelMarket => (Method::DELETE, "/cancel-market-orders"),
        }
    }

    /// The trading route of a request's method and path, if it is one (an exact match, as
    /// warp's `path!` makes).
    pub fn of(method: &Method, path: &str) -> Option<Trading> {
        Trading::ALL.into_iter().find(|t| {
            let (m, p) = t.route();
            m == method && p == path
        })
    }

    pub async fn handle(self, s: Arc<AppState>, r: Req) -> ApiResult {
        match self {
            Trading::Place => post_order(s, r).await,
            Trading::PlaceMany => post_orders(s, r).await,
            Trading::Cancel => cancel_one(s, r).await,
            Trading::CancelMany => cancel_many(s, r).await,
            Trading::CancelAll => cancel_all(s, r).await,
            Trading::CancelMarket => cancel_market(s, r).await,
        }
    }
}

pub fn routes(state: Arc<AppState>) -> Routes {
    let s = || with_state(state.clone());
    // The trading routes, from their table (boxed: the order-book server's front answers
    // them first, so this is not their hot path).
    let trading = Trading::ALL
        .into_iter()
        .map(|t| {
            let (method, path) = t.route();
            let method = match method {
                Method::POST => warp::post().boxed(),
                _ => warp::delete().boxed(),
            };
            let path = path.strip_prefix('/').expect("trading paths are absolute");
            warp::path(path)
                .and(warp::path::end())
                .and(method)
                .and(req())
                .and(s())
                .then(move |r, s| async move { respond(t.handle(s, r).await) })
                .boxed()
        })
        .reduce(|a, b| a.or(b).unify().boxed())
        .expect("trading routes");
    let list = handle_now(warp::path!("data" / "orders").and(warp::get()), &state, list_orders);
    let migrated =
        handle_now(warp::path!("data" / "pre-migration-orders").and(warp::get()), &state, list_pre_migration_orders);
    let one = warp::path!("data" / "order" / String)
        .and(warp::get())
        .and(req())
        .and(s())
        .then(|id, r, s| async move { respond(get_order(s, r, id)) });
    // The L2 trade history, at the path of SPEC §4.2 and at the CLOB's `GET /trades`
    // (§4.9), which serves the same history with the same filters and envelope.
    let trades = warp::path!("data" / "trades")
        .or(warp::path!("trades"))
        .unify()
        .and(warp::get())
        .and(req())
        .and(s())
        .then(|r, s| async move { respond(list_trades(s, r)) });
    trading.or(list).unify().or(migrated).unify().or(one).unify().or(trades).unify().boxed()
}

impl From<OrderError> for ApiError {
    fn from(e: OrderError) -> ApiError {
        match e {
            OrderError::Store(e) => e.into(),
            OrderError::Engine(e) => e.into(),
            OrderError::CancelOnly | OrderError::Disabled | OrderError::Chain(_) => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string())
            }
            _ => ApiError::bad(e.to_string()),
        }
    }
}

/// Validates and places one submission.
async fn place_submission(s: &AppState, key: &ApiKeyRecord, sub: Submission) -> Result<Placed, ApiError> {
    Ok(orders::place(s, key, new_order(sub, s.config.order_version)?, None).await?)
}

async fn post_order(s: Arc<AppState>, r: Req) -> ApiResult {
    orders::check_new_orders(&s)?;
    let key = authenticate(&s, &r)?;
    let sub: Submission = serde_json::from_slice(&r.body).map_err(|_| invalid())?;
    let p = place_submission(&s, &key, sub).await?;
    reply(&result_json(&p, s.chain.is_none(), s.config.order_version == 2))
}

async fn post_orders(s: Arc<AppState>, r: Req) -> ApiResult {
    orders::check_new_orders(&s)?;
    let key = authenticate(&s, &r)?;
    let items: Vec<Value> = serde_json::from_slice(&r.body).map_err(|_| invalid())?;
    if items.len() > MAX_BATCH {
        return Err(ApiError::bad(format!("Too many orders in payload: {}, max allowed: {MAX_BATCH}", items.len())));
    }
    let subs: Vec<_> = items.into_iter().map(serde_json::from_value::<Submission>).collect();
    // An order of the other version refuses the whole batch, before anything is placed:
    // a client that signed for the wrong version learns it from the status, as from
    // `POST /order`, and signs again for the version `GET /version` names.
    for sub in subs.iter().flatten() {
        check_version(&sub.order, s.config.order_version)?;
    }
    // One after another, so the engine sees them in input order.
    let mut out = Vec::with_capacity(subs.len());
    for sub in subs {
        out.push(match sub {
            Ok(sub) => match place_submission(&s, &key, sub).await {
                Ok(p) => result_json(&p, s.chain.is_none(), s.config.order_version == 2),
                Err(e) => rejected_json(&e.message),
            },
            Err(_) => rejected_json("Invalid order payload"),
        });
    }
    reply(&out)
}

async fn cancel_one(s: Arc<AppState>, r: Req) -> ApiResult {
    orders::check_cancels(&s)?;
    let key = authenticate(&s, &r)?;
    let v: Value = serde_json::from_slice(&r.body).map_err(|_| ApiError::bad("Invalid orderID"))?;
    let id = v
        .get("orderID")
        .or_else(|| v.get("orderId"))
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::bad("Invalid orderID"))?;
    let id = parse_id(id)?;
    let _t = s.time_command("cancel");
    canceled_json(&s.engine.cancel(key.key, vec![id]).await?)
}

async fn cancel_many(s: Arc<AppState>, r: Req) -> ApiResult {
    orders::check_cancels(&s)?;
    let key = authenticate(&s, &r)?;
    let v: Vec<String> = serde_json::from_slice(&r.body).map_err(|_| ApiError::bad("Invalid orderID"))?;
    if v.len() > MAX_CANCEL {
        return Err(ApiError::bad(format!("Too many orders in payload, max allowed: {MAX_CANCEL}")));
    }
    let ids = v.iter().map(|x| parse_id(x)).collect::<Result<Vec<_>, _>>()?;
    let _t = s.time_command("cancel");
    canceled_json(&s.engine.cancel(key.key, ids).await?)
}

async fn cancel_all(s: Arc<AppState>, r: Req) -> ApiResult {
    orders::check_cancels(&s)?;
    let key = authenticate(&s, &r)?;
    let _t = s.time_command("cancel");
    canceled_json(&s.engine.cancel_where(key.key, None, None).await?)
}

async fn cancel_market(s: Arc<AppState>, r: Req) -> ApiResult {
    orders::check_cancels(&s)?;
    let key = authenticate(&s, &r)?;
    let v: Value = if r.body.is_empty() {
        json!({})
    } else {
        serde_json::from_slice(&r.body).map_err(|_| ApiError::bad("Invalid payload"))?
    };
    // A filter that is not text must not widen the cancel to every order of the key.
    let obj = v.as_object().ok_or_else(|| ApiError::bad("Invalid payload"))?;
    let pick = |k: &str| match obj.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(x)) => Ok(Some(x.clone()).filter(|x| !x.is_empty())),
        Some(_) => Err(ApiError::bad("Invalid payload")),
    };
    let (market, asset) = (pick("market")?, pick("asset_id")?);
    let _t = s.time_command("cancel");
    canceled_json(&s.engine.cancel_where(key.key, market, asset).await?)
}

fn list_orders(s: Arc<AppState>, r: Req) -> ApiResult {
    let key = authenticate_read(&s, &r)?;
    let q = r.query_map();
    let offset = paging::offset(q.get("next_cursor"))?;
    let mut items = Vec::new();
    for o in s.store.open_orders_of(&key.key)? {
        if q.get("id").is_some_and(|x| !x.is_empty() && *x != o.id.to_string())
            || q.get("market").is_some_and(|x| !x.is_empty() && **x != *o.token.condition_id)
            || q.get("asset_id").is_some_and(|x| !x.is_empty() && **x != *o.token.token_id)
        {
            continue;
        }
        items.push(order_json(&o));
    }
    paging::page(items, offset)
}

/// The caller's orders of another version than the venue's, cancelled when it changed
/// version (the V2 clients' `get_pre_migration_orders`), in the shape of `/data/orders`.
fn list_pre_migration_orders(s: Arc<AppState>, r: Req) -> ApiResult {
    let key = authenticate_read(&s, &r)?;
    let offset = paging::offset(r.query_map().get("next_cursor"))?;
    let mut items = Vec::new();
    for id in s.store.pre_migration_orders_of(&key.key)? {
        if let Some(o) = s.store.get_order(&id)? {
            items.push(order_json(&o));
        }
    }
    paging::page(items, offset)
}

fn get_order(s: Arc<AppState>, r: Req, id: String) -> ApiResult {
    let key = authenticate_read(&s, &r)?;
    let id = parse_id(&id)?;
    match s.store.get_order(&id)? {
        Some(o) if o.owner == key.key => reply(&order_json(&o)),
        _ => Err(ApiError::not_found("order not found")),
    }
}

fn list_trades(s: Arc<AppState>, r: Req) -> ApiResult {
    let key = authenticate_read(&s, &r)?;
    let q = r.query_map();
    let offset = paging::offset(q.get("next_cursor"))?;
    let num = |k: &str| -> Result<Option<u64>, ApiError> {
        match q.get(k).filter(|x| !x.is_empty()) {
            Some(v) => v.parse().map(Some).map_err(|_| ApiError::bad("Invalid payload")),
            None => Ok(None),
        }
    };
    let (before, after) = (num("before")?, num("after")?);
    let mut items = Vec::new();
    for id in s.store.trade_ids_of(&key.key)?.into_iter().rev() {
        let Some(t) = s.store.get_trade(&id)? else { continue };
        let f = |k: &str| q.get(k).filter(|x| !x.is_empty());
        if f("id").is_some_and(|x| *x != t.id.to_string())
            || f("market").is_some_and(|x| **x != *t.token.condition_id)
            || f("asset_id")
                .is_some_and(|x| **x != *t.token.token_id && !t.maker_orders.iter().any(|m| *m.token.token_id == **x))
            || f("maker_address").is_some_and(|x| {
                let x = x.to_lowercase();
                *x != *t.maker_address && !t.maker_orders.iter().any(|m| *m.maker_address == *x)
            })
            || before.is_some_and(|b| t.match_time >= b)
            || after.is_some_and(|a| t.match_time <= a)
        {
            continue;
        }
        items.push(trade_json(&t, key.key, s.config.order_version == 2));
    }
    paging::page(items, offset)
}
