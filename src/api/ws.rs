//! The market feed, `/ws/market`, in the protocol of Polymarket's CLOB market channel
//! (docs/websocket.md): subscribe with `{"assets_ids": [...], "type": "market"}`, change
//! later with `{"assets_ids": [...], "operation": "subscribe" | "unsubscribe"}`; a `book`
//! snapshot per asset on subscribe, then `price_change` and `last_trade_price` frames from
//! the event bus ([`crate::events`]); text `PING` is answered `PONG`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::{json as j, Value};
use tokio::sync::broadcast::{self, error::RecvError, error::TryRecvError};
use warp::filters::ws::{Message, WebSocket, Ws};
use warp::reply::Response;
use warp::{Filter, Reply};

use super::{with_state, AppState};
use crate::events::Frame;

pub fn routes(state: Arc<AppState>) -> impl Filter<Extract = (Response,), Error = warp::Rejection> + Clone {
    let market_ch = warp::path!("ws" / "market")
        .and(warp::ws())
        .and(with_state(state.clone()))
        .map(|ws: Ws, s: Arc<AppState>| ws.on_upgrade(move |socket| market(socket, s)).into_response());
    let user_ch = warp::path!("ws" / "user")
        .and(warp::ws())
        .and(with_state(state))
        .map(|ws: Ws, s: Arc<AppState>| ws.on_upgrade(move |socket| user(socket, s)).into_response());
    market_ch.or(user_ch).unify()
}

#[derive(Deserialize)]
struct Auth {
    #[serde(rename = "apiKey")]
    api_key: String,
    secret: String,
    passphrase: String,
}

#[derive(Deserialize)]
struct UserSubscription {
    auth: Option<Auth>,
    #[serde(default)]
    markets: Vec<String>,
}

/// The API key whose credentials a user subscription carries, if they are right.
fn user_key(s: &AppState, auth: Option<&Auth>) -> Option<uuid::Uuid> {
    let a = auth?;
    let key: uuid::Uuid = a.api_key.trim().parse().ok()?;
    let rec = s.api_key(&key)?;
    let ok = super::ct_eq(a.secret.as_bytes(), rec.secret.as_bytes())
        & super::ct_eq(a.passphrase.as_bytes(), rec.passphrase.as_bytes());
    ok.then_some(key)
}

/// One user-channel connection: after `{"auth": {apiKey, secret, passphrase}, "markets":
/// [...], "type": "user"}` it receives that key's `order` and `trade` events (optionally
/// only for the listed condition IDs) and nothing of anyone else's.
async fn user(socket: WebSocket, s: Arc<AppState>) {
    let Some(bus) = s.user_bus.clone() else { return };
    let (mut tx, mut rx) = socket.split();
    let mut who: Option<(uuid::Uuid, Vec<String>)> = None;
    let mut feed: Option<broadcast::Receiver<Arc<crate::events::UserFrame>>> = None;
    let idle = Duration::from_secs(s.config.ws_idle_secs);
    loop {
        match step(&mut rx, &mut tx, &mut feed, idle).await {
            Step::Stop => break,
            Step::Text(text) => {
                let sub = serde_json::from_str::<UserSubscription>(&text).ok();
                match sub.as_ref().and_then(|x| user_key(&s, x.auth.as_ref())) {
                    Some(key) => {
                        if feed.is_none() {
                            feed = Some(bus.subscribe());
                        }
                        who = Some((key, sub.map(|x| x.markets).unwrap_or_default()));
                    }
                    None => {
                        let _ = tx.send(error_frame("unauthenticated: auth needs apiKey, secret and passphrase")).await;
                        let _ = tx.send(Message::close_with(1008u16, "unauthenticated")).await;
                        break;
                    }
                }
            }
            Step::Frame(f) => {
                let Some((key, markets)) = &who else { continue };
                if f.owner == *key
                    && (markets.is_empty() || markets.iter().any(|m| **m == *f.market))
                    && tx.send(Message::text(f.text.to_string())).await.is_err()
                {
                    break;
                }
            }
        }
    }
}

#[derive(Deserialize)]
struct Subscription {
    #[serde(default)]
    assets_ids: Vec<String>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    operation: Option<String>,
    #[serde(default)]
    initial_dump: Option<bool>,
}

/// Close code for a client the feed left behind (it may reconnect for a fresh snapshot).
const TOO_SLOW: u16 = 1008;

fn error_frame(message: &str) -> Message {
    Message::text(j!({ "event_type": "error", "message": message }).to_string())
}

/// One market-channel connection.
async fn market(socket: WebSocket, s: Arc<AppState>) {
    let Some(bus) = s.bus.clone() else { return };
    let (mut tx, mut rx) = socket.split();
    // (market, outcome) subscribed → sequence of the last snapshot or frame delivered.
    let mut subs: HashMap<(u32, u8), u64> = HashMap::new();
    let mut feed: Option<broadcast::Receiver<Arc<Frame>>> = None;
    let idle = Duration::from_secs(s.config.ws_idle_secs);
    loop {
        match step(&mut rx, &mut tx, &mut feed, idle).await {
            Step::Stop => break,
            Step::Text(text) => {
                let msgs = match serde_json::from_str::<Subscription>(&text) {
                    Ok(sub) => subscribe(&s, &bus, sub, &mut subs, &mut feed),
                    Err(_) => vec![error_frame(
                        r#"invalid message: send {"assets_ids":[...],"type":"market"}, an operation, or PING"#,
                    )],
                };
                let mut gone = false;
                for m in msgs {
                    let close = m.is_close();
                    if tx.send(m).await.is_err() || close {
                        gone = true;
                        break;
                    }
                }
                if gone {
                    break;
                }
            }
            Step::Frame(frame) => {
                if let Some(last) = subs.get_mut(&(frame.market, frame.outcome)) {
                    if frame.seq > *last {
                        *last = frame.seq;
                        if tx.send(Message::text(frame.text.to_string())).await.is_err() {
                            break;
                        }
                    }
                }
            }
        }
    }
}

/// What a connection has to handle next.
enum Step<T> {
    /// A text message from the client other than PING.
    Text(String),
    /// The next item of the connection's window on the feed.
    Frame(T),
    /// The connection is over (closed by the client, idle, or left behind by the feed).
    Stop,
}

/// Waits for the client's next message or the next feed item, doing what both channels
/// do alike: PING is answered PONG; an idle client, and one the feed got a whole window
/// ahead of, are closed with a reason.
async fn step<T: Clone>(
    rx: &mut SplitStream<WebSocket>,
    tx: &mut SplitSink<WebSocket, Message>,
    feed: &mut Option<broadcast::Receiver<T>>,
    idle: Duration,
) -> Step<T> {
    loop {
        tokio::select! {
            m = tokio::time::timeout(idle, rx.next()) => match m {
                Err(_) => {
                    let _ = tx.send(Message::close_with(1000u16, "idle: no message (PING) for too long")).await;
                    return Step::Stop;
                }
                Ok(None | Some(Err(_))) => return Step::Stop,
                Ok(Some(Ok(m))) => {
                    if m.is_close() {
                        return Step::Stop;
                    }
                    let Ok(text) = m.to_str() else { continue };
                    if !text.trim().eq_ignore_ascii_case("PING") {
                        return Step::Text(text.to_string());
                    }
                    if tx.send(Message::text("PONG")).await.is_err() {
                        return Step::Stop;
                    }
                }
            },
            f = next(feed) => match f {
                Ok(item) => return Step::Frame(item),
                Err(RecvError::Lagged(_)) => {
                    let why = "too slow: the feed got a full window ahead; reconnect and subscribe for a fresh snapshot";
                    let _ = tx.send(Message::close_with(TOO_SLOW, why)).await;
                    return Step::Stop;
                }
                Err(RecvError::Closed) => return Step::Stop,
            },
        }
    }
}

async fn next<T: Clone>(feed: &mut Option<broadcast::Receiver<T>>) -> Result<T, RecvError> {
    match feed.as_mut() {
        Some(r) => r.recv().await,
        None => std::future::pending().await,
    }
}

/// Applies a subscription message; returns the frames to send: queued feed frames,
/// snapshots, errors — or ends with a close frame when the connection fell behind.
fn subscribe(
    s: &AppState,
    bus: &crate::events::Bus,
    sub: Subscription,
    subs: &mut HashMap<(u32, u8), u64>,
    feed: &mut Option<broadcast::Receiver<Arc<Frame>>>,
) -> Vec<Message> {
    let op = sub.operation.as_deref().map(str::to_ascii_lowercase);
    let kind_ok = sub.kind.as_deref().is_none_or(|k| k.eq_ignore_ascii_case("market"));
    if !kind_ok || !matches!(op.as_deref(), None | Some("subscribe") | Some("unsubscribe")) {
        return vec![error_frame("unsupported message: type must be market; operation subscribe or unsubscribe")];
    }
    let mut out = Vec::new();
    let mut found = Vec::new();
    for id in &sub.assets_ids {
        match s.registry.token(id) {
            Some((view, outcome)) => found.push((view, outcome)),
            None => out.push(error_frame(&format!("unknown asset id {id}"))),
        }
    }
    if op.as_deref() == Some("unsubscribe") {
        for (v, o) in &found {
            subs.remove(&(v.market.idx, *o));
        }
        return out;
    }
    // A fresh window first, then the snapshots: every frame after a snapshot reaches the new
    // window. Frames still queued in the old window are delivered first (by sequence, so
    // none twice).
    let fresh = bus.subscribe();
    if let Some(mut old) = feed.take() {
        loop {
            match old.try_recv() {
                Ok(f) => {
                    if let Some(last) = subs.get_mut(&(f.market, f.outcome)) {
                        if f.seq > *last {
                            *last = f.seq;
                            out.push(Message::text(f.text.to_string()));
                        }
                    }
                }
                Err(TryRecvError::Lagged(_)) => {
                    return vec![Message::close_with(TOO_SLOW, "too slow: reconnect and subscribe")];
                }
                Err(_) => break,
            }
        }
    }
    *feed = Some(fresh);
    for (view, outcome) in found {
        let snap = view.book.load_full();
        if sub.initial_dump != Some(false) {
            let mut book = super::book::summary(&(view.clone(), outcome, snap.clone()));
            if let Value::Object(o) = &mut book {
                o.insert("event_type".into(), j!("book"));
                o.insert("seq".into(), j!(snap.seq));
            }
            out.push(Message::text(book.to_string()));
        }
        subs.insert((view.market.idx, outcome), snap.seq);
    }
    out
}
