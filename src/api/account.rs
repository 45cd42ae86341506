//! The account endpoints of SPEC §4.1–4.2: heartbeats, balance and allowance, and
//! notifications.

use std::sync::Arc;

use serde_json::{json, Map, Value};
use warp::Filter;

use super::{authenticate, authenticate_read, handle, handle_now, reply, ApiError, ApiResult, Req, Routes};
use crate::app::AppState;
use crate::domain::{
    Amount, ApiKeyRecord, NotificationKind, NotificationRecord, Side, TradeStatus, TraderSide, COLLATERAL,
};

pub fn routes(state: Arc<AppState>) -> Routes {
    let hb = handle_now(warp::path!("v1" / "heartbeats").and(warp::post()), &state, |s, r| {
        // The id the official clients send with their next heartbeat (Polymarket returns
        // one); a fresh one each time, not checked when it comes back (docs/reference/spec-choices.md).
        heartbeat(&s, &r)
            .and_then(|_| reply(&json!({ "status": "ok", "heartbeat_id": uuid::Uuid::new_v4().to_string() })))
    });
    let hb_legacy = handle_now(warp::path!("auth" / "heartbeat").and(warp::get()), &state, |s, r| {
        heartbeat(&s, &r).and_then(|_| reply(&json!({})))
    });
    let balance = handle(warp::path!("balance-allowance").and(warp::get()), &state, balance_allowance);
    let update = handle(warp::path!("balance-allowance" / "update").and(warp::get()), &state, balance_update);
    let notes = handle_now(warp::path!("notifications").and(warp::get()), &state, |s, r| notifications(&s, &r));
    let drop_notes = handle(warp::path!("notifications").and(warp::delete()), &state, delete_notifications);
    hb.or(hb_legacy).unify().or(balance).unify().or(update).unify().or(notes).unify().or(drop_notes).unify().boxed()
}

/// Enrols the key in heartbeat monitoring, or resets its countdown (SPEC §4.2).
fn heartbeat(s: &AppState, r: &Req) -> Result<(), ApiError> {
    let key = authenticate(s, r)?;
    // No body, or the clients' `{"heartbeat_id": <previous id or null>}`.
    if !r.body.iter().all(u8::is_ascii_whitespace) {
        let body: Value = serde_json::from_slice(&r.body).map_err(|_| ApiError::bad("Invalid payload"))?;
        let id = body.as_object().ok_or_else(|| ApiError::bad("Invalid payload"))?.get("heartbeat_id");
        if !matches!(id, None | Some(Value::Null | Value::String(_))) {
            return Err(ApiError::bad("Invalid payload"));
        }
    }
    s.keys.heartbeats.beat(key.key);
    Ok(())
}

/// The `signature_type` query parameter: 0 (EOA, the default), 1 or 2; 400 otherwise.
fn signature_type(r: &Req) -> Result<u8, ApiError> {
    match r.query_map().get("signature_type").map(|x| x.trim()).filter(|x| !x.is_empty()) {
        None => Ok(0),
        Some(x) => x.parse::<u8>().ok().filter(|t| *t <= 2).ok_or_else(|| ApiError::bad("Invalid signature_type")),
    }
}

/// The token a balance request names: None for collateral (`asset_type` absent, empty or
/// COLLATERAL), the `token_id` for CONDITIONAL; 400 for anything else.
fn asset_token(s: &AppState, r: &Req) -> Result<Option<String>, ApiError> {
    let q = r.query_map();
    match q.get("asset_type").map(|x| x.to_ascii_uppercase()).as_deref() {
        None | Some("") | Some("COLLATERAL") => Ok(None),
        Some("CONDITIONAL") => {
            let t = q.get("token_id").filter(|t| !t.is_empty()).ok_or_else(|| ApiError::bad("Invalid token id"))?;
            if s.registry.token(t).is_none() {
                return Err(ApiError::bad("Invalid token id"));
            }
            Ok(Some(t.clone()))
        }
        Some(_) => Err(ApiError::bad("Invalid asset_type")),
    }
}

/// The wallet a balance request is about: the key's own address for signature type 0
/// (EOA), the proxy wallet (1) or the Safe (2) derived from it, as the official clients
/// derive their funder.
pub(crate) fn wallet(s: &AppState, key: &ApiKeyRecord, r: &Req) -> Result<String, ApiError> {
    Ok(crate::app::wallet_of_type(s, key, signature_type(r)?).to_string())
}

/// GET /balance-allowance: what the wallet can trade now, in micro-units as Polymarket
/// reports it — settled balance plus receipts of matched trades not yet settled, minus what
/// open orders and unsettled payments hold. `balance` is collateral (or, with
/// `asset_type=CONDITIONAL&token_id=…`, that token); `allowances` maps every conditional
/// token the wallet has to its figure (SPEC §2.11). A version 2 venue answers `allowances`
/// as Polymarket does, by spender: each of the venue's two exchanges to `balance`, what it
/// may take of the asset (the unified SDK reads the keys as addresses).
///
/// In chain mode an asset predex has not read for the wallet yet is read from the chain
/// first (once; the chain watch follows it from then on), and the collateral's
/// `allowances` are Polymarket's: each spender — the exchange, the negative-risk exchange
/// and the negative-risk adapter — to what the wallet lets it move, as read.
/// `balance` is the wallet's collateral on chain less what its open orders hold.
async fn balance_allowance(s: Arc<AppState>, r: Req) -> ApiResult {
    let key = authenticate_read(&s, &r)?;
    let token = asset_token(&s, &r)?;
    let address = wallet(&s, &key, &r)?;
    let want = token.as_deref().unwrap_or(COLLATERAL);
    if s.chain.is_some() {
        crate::app::onchain::ensure(&s, &address, want).await?;
    }
    let accounts = s.engine.accounts(address.clone()).await?;
    let balance = accounts.iter().find(|(a, _)| a == want).map_or(Amount::ZERO, |(_, acc)| acc.available());
    let mut allowances = Map::new();
    let held = s.chain.as_ref().filter(|_| want == COLLATERAL).and_then(|on| Some((on, on.collateral_of(&address)?)));
    if let Some((on, held)) = held {
        let c = &on.link.settings;
        for (spender, allowed) in [
            (c.exchange, held.exchange),
            (c.neg_risk_exchange, held.neg_risk_exchange),
            (c.neg_risk_adapter, held.adapter),
        ] {
            allowances.insert(spender.to_string(), Value::String(allowed.to_string()));
        }
    } else if s.config.order_version == 2 {
        for exchange in s.domains.exchanges(2) {
            allowances.insert(exchange.to_string(), Value::String(balance.units().to_string()));
        }
    } else {
        for (asset, acc) in &accounts {
            if asset != COLLATERAL {
                allowances.insert(asset.clone(), Value::String(acc.available().units().to_string()));
            }
        }
    }
    reply(&json!({ "balance": balance.units().to_string(), "allowances": allowances }))
}

/// GET /balance-allowance/update: the settled collateral balance, and the collateral the
/// key's CONFIRMED trades moved as taker and as maker (net, signed, micro-units).
///
/// In chain mode it first reads the wallet's collateral (and the token a CONDITIONAL query
/// names) from the chain and makes that the settled balance.
async fn balance_update(s: Arc<AppState>, r: Req) -> ApiResult {
    let key = authenticate(&s, &r)?;
    let token = asset_token(&s, &r)?;
    let address = wallet(&s, &key, &r)?;
    if s.chain.is_some() {
        crate::app::onchain::refresh(&s, &address, COLLATERAL).await?;
        if let Some(t) = &token {
            crate::app::onchain::refresh(&s, &address, t).await?;
        }
    }
    let balance = s
        .engine
        .accounts(address)
        .await?
        .into_iter()
        .find(|(a, _)| a == COLLATERAL)
        .map_or(Amount::ZERO, |(_, x)| x.balance);
    let (mut taker, mut maker) = (0i128, 0i128);
    for id in s.store.trade_ids_of(&key.key)? {
        let Some(t) = s.store.get_trade(&id)? else { continue };
        if t.status != TradeStatus::Confirmed {
            continue;
        }
        let [tl, ml] = t.legs();
        let flow = |l: &crate::domain::Leg| match l.side {
            Side::Buy => -(l.amount.units() as i128),
            Side::Sell => (l.amount - l.fee).units() as i128,
        };
        if t.owner == key.key {
            taker += flow(&tl);
        }
        if t.maker_orders.iter().any(|m| m.owner == key.key) {
            maker += flow(&ml);
        }
    }
    reply(&json!({
        "balance": balance.units().to_string(),
        "net_usdc_taker": taker.to_string(),
        "net_usdc_maker": maker.to_string(),
    }))
}

/// The notification id: unique per key, ordered like the trades.
fn notification_id(n: &NotificationRecord) -> u64 {
    n.trade_seq * 2 + n.kind as u64
}

fn notification_json(n: &NotificationRecord) -> Value {
    json!({
        "id": notification_id(n),
        "type": n.kind.as_str(),
        "owner": n.owner.to_string(),
        "payload": {
            "tradeId": n.trade_id.to_string(),
            "market": n.market,
            "asset_id": n.asset_id,
            "side": n.side.as_str(),
            "size": n.size.fmt(),
            "price": n.price.short(),
            "trader_side": match n.trader_side { TraderSide::Taker => "TAKER", TraderSide::Maker => "MAKER" },
            "status": match n.kind { NotificationKind::TradeConfirmed => "CONFIRMED", NotificationKind::TradeFailed => "FAILED" },
            "error_msg": n.error_msg,
        },
        "timestamp": n.time,
    })
}

/// GET /notifications: the key's notifications, newest first.
fn notifications(s: &AppState, r: &Req) -> ApiResult {
    let key = authenticate_read(s, r)?;
    // The clients send it; notifications are the key's whichever wallet it trades from.
    signature_type(r)?;
    let v = s.store.notifications(&key.key, crate::domain::now_secs())?;
    reply(&v.iter().map(notification_json).collect::<Vec<_>>())
}

/// DELETE /notifications: drops every notification of the key, listed or not.
async fn delete_notifications(s: Arc<AppState>, r: Req) -> ApiResult {
    let key = authenticate(&s, &r)?;
    let store = s.store.clone();
    // One synced range deletion, on a blocking thread: the runtime's threads never wait
    // for the disk.
    tokio::task::spawn_blocking(move || store.delete_notifications(&key.key)).await.map_err(|_| ApiError::db())??;
    reply(&json!({}))
}
