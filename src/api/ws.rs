//! The market feed, `/ws/market`, in the protocol of Polymarket's CLOB market channel
//! (docs/reference/websocket.md): subscribe with `{"assets_ids": [...], "type": "market"}`, change
//! later with `{"assets_ids": [...], "operation": "subscribe" | "unsubscribe"}`; a `book`
//! snapshot per asset on subscribe, then `price_change` and `last_trade_price` frames (and
//! `best_bid_ask` with `custom_feature_enabled`) from the event bus ([`crate::events`]);
//! text `PING` is answered `PONG`. The user feed, `/ws/user`, is here too.

use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use futures_util::stream::SplitSink;
use futures_util::{SinkExt, StreamExt};
use prometheus_client::metrics::gauge::Gauge;
use serde::Deserialize;
use serde_json::json;
use warp::filters::ws::{Message, WebSocket, Ws};
use warp::{Filter, Reply};

use super::{with_state, Routes};
use crate::app::AppState;
use crate::commit::bus::{Frame, Outbox, Topics};

pub fn routes(state: Arc<AppState>) -> Routes {
    let market_ch = market_route(state.clone());
    let user_ch = warp::path!("ws" / "user").and(warp::ws()).and(with_state(state)).map(|ws: Ws, s: Arc<AppState>| {
        ws.on_upgrade(move |socket| on_feed_runtime(user(socket, s.clone()), s)).into_response()
    });
    market_ch.or(user_ch).unify().boxed()
}

/// The market channel alone (the order-book server's, and the dashboard's on the internal
/// server).
pub fn market_route(state: Arc<AppState>) -> Routes {
    warp::path!("ws" / "market")
        .and(warp::ws())
        .and(with_state(state))
        .map(|ws: Ws, s: Arc<AppState>| {
            ws.on_upgrade(move |socket| on_feed_runtime(market(socket, s.clone()), s)).into_response()
        })
        .boxed()
}

/// Runs a connection on the feed runtime.
async fn on_feed_runtime(conn: impl std::future::Future<Output = ()> + Send + 'static, s: Arc<AppState>) {
    drop(s.feeds.runtime.spawn(conn));
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
    let rec = s.keys.get(&key)?;
    let ok = crate::auth::ct_eq(a.secret.as_bytes(), rec.secret.as_bytes())
        & crate::auth::ct_eq(a.passphrase.as_bytes(), rec.passphrase.as_bytes());
    ok.then_some(key)
}

/// One user-channel connection: after `{"auth": {apiKey, secret, passphrase}, "markets":
/// [...], "type": "user"}` it receives that key's `order` and `trade` events (optionally
/// only for the listed condition IDs) and nothing of anyone else's.
async fn user(socket: WebSocket, s: Arc<AppState>) {
    let mut link = Link::new(socket, &s, s.feeds.user_bus.clone());
    let mut markets: Option<Vec<String>> = None;
    loop {
        let ok = match link.step().await {
            Step::Stop => break,
            Step::Text(text) => {
                let sub = serde_json::from_str::<UserSubscription>(&text).ok();
                match sub.as_ref().and_then(|x| user_key(&s, x.auth.as_ref())) {
                    Some(key) => {
                        // Later subscriptions on the connection replace the key and filter.
                        link.feed.clear();
                        link.feed.add(key);
                        markets = Some(sub.map(|x| x.markets).unwrap_or_default());
                        true
                    }
                    None => {
                        let refusal = vec![
                            error_frame("unauthenticated: auth needs apiKey, secret and passphrase"),
                            Message::close_with(1008u16, "unauthenticated"),
                        ];
                        link.send_all(refusal).await;
                        false
                    }
                }
            }
            Step::Frames => {
                let Some(markets) = &markets else { continue };
                let batch = std::mem::take(&mut link.batch);
                let mine = batch
                    .iter()
                    .filter(|f| markets.is_empty() || markets.iter().any(|m| **m == *f.market))
                    .map(|f| Message::text(&*f.text))
                    .collect::<Vec<_>>();
                let ok = link.send_all(mine).await;
                link.batch = batch;
                ok
            }
        };
        if !ok {
            break;
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
    #[serde(default)]
    custom_feature_enabled: Option<bool>,
}

/// Close code for a client the feed left behind (it may reconnect for a fresh snapshot).
const TOO_SLOW: u16 = 1008;

fn error_frame(message: &str) -> Message {
    Message::text(json!({ "event_type": "error", "message": message }).to_string())
}

/// One market-channel connection.
async fn market(socket: WebSocket, s: Arc<AppState>) {
    let mut link = Link::new(socket, &s, s.feeds.bus.clone());
    // (market, outcome) subscribed → sequence of the last snapshot or frame delivered.
    let mut subs: HashMap<(u32, u8), u64> = HashMap::new();
    // `custom_feature_enabled`: best_bid_ask messages too.
    let mut custom = false;
    loop {
        let ok = match link.step().await {
            Step::Stop => break,
            Step::Text(text) => {
                let msgs = match serde_json::from_str::<Subscription>(&text) {
                    Ok(sub) => {
                        custom = sub.custom_feature_enabled.unwrap_or(custom);
                        subscribe(&s, sub, &mut subs, &mut link.feed)
                    }
                    Err(_) => vec![error_frame(
                        r#"invalid message: send {"assets_ids":[...],"type":"market"}, an operation, or PING"#,
                    )],
                };
                link.send_all(msgs).await
            }
            Step::Frames => {
                let batch = std::mem::take(&mut link.batch);
                let due: Vec<Message> = batch
                    .iter()
                    .filter(|f| fresh(&mut subs, f))
                    .map(|f| Message::text(&**f.custom.as_ref().filter(|_| custom).unwrap_or(&f.text)))
                    .collect();
                let ok = link.send_all(due).await;
                link.batch = batch;
                ok
            }
        };
        if !ok {
            break;
        }
    }
}

/// Whether a feed frame is for a subscribed asset and newer than what the connection has;
/// if so it becomes the asset's latest.
fn fresh(subs: &mut HashMap<(u32, u8), u64>, f: &Frame) -> bool {
    match subs.get_mut(&(f.market, f.outcome)) {
        Some(last) if f.seq > *last => {
            *last = f.seq;
            true
        }
        _ => false,
    }
}

/// What a connection has to handle next.
enum Step {
    /// A text message from the client other than PING.
    Text(String),
    /// Feed items arrived: [`Link::batch`] holds every one that was queued (up to
    /// [`BATCH`]), so a connection that wakes late sends them all in one write.
    Frames,
    /// The connection is over (closed by the client, idle, or cut off by the feed).
    Stop,
}

/// Most feed items a connection takes per wake-up (and so per socket write).
const BATCH: usize = 256;

/// A connection's subscriptions and its bounded queue; dropping it unsubscribes.
struct Feed<K: Hash + Eq + Clone, T: Clone> {
    topics: Arc<Topics<K, T>>,
    outbox: Arc<Outbox<T>>,
    queue: tokio::sync::mpsc::Receiver<T>,
    keys: HashSet<K>,
}

impl<K: Hash + Eq + Clone, T: Clone> Feed<K, T> {
    fn add(&mut self, key: K) {
        self.topics.add(key.clone(), &self.outbox);
        self.keys.insert(key);
    }

    fn remove(&mut self, key: &K) {
        self.topics.remove(key, &self.outbox);
        self.keys.remove(key);
    }

    fn clear(&mut self) {
        for k in self.keys.drain() {
            self.topics.remove(&k, &self.outbox);
        }
    }
}

impl<K: Hash + Eq + Clone, T: Clone> Drop for Feed<K, T> {
    fn drop(&mut self) {
        self.clear();
    }
}

/// One WebSocket connection and its feed, doing what both channels do alike: PING is
/// answered PONG; an idle client, and one whose queue the feed filled, are closed with a
/// reason.
struct Link<K: Hash + Eq + Clone, T: Clone> {
    tx: SplitSink<WebSocket, Message>,
    /// The client's messages, read by a task of their own: polling the socket's read half
    /// costs tungstenite a 128 KiB buffer fill, too much to pay on every feed wake-up.
    inbox: tokio::sync::mpsc::Receiver<Message>,
    reader: tokio::task::JoinHandle<()>,
    feed: Feed<K, T>,
    batch: Vec<T>,
    idle: Duration,
    /// When the client will have been silent for `idle`; moved only when it sends something,
    /// so a busy feed costs no timer work.
    deadline: std::pin::Pin<Box<tokio::time::Sleep>>,
    connections: Gauge,
}

impl<K: Hash + Eq + Clone, T: Clone> Drop for Link<K, T> {
    fn drop(&mut self) {
        // Closes the socket even if the client never sends again.
        self.reader.abort();
        self.connections.dec();
    }
}

impl<K: Hash + Eq + Clone, T: Clone> Link<K, T> {
    fn new(socket: WebSocket, s: &AppState, topics: Arc<Topics<K, T>>) -> Link<K, T> {
        let (tx, mut rx) = socket.split();
        let (to_inbox, inbox) = tokio::sync::mpsc::channel(8);
        let reader = tokio::spawn(async move {
            while let Some(Ok(m)) = rx.next().await {
                if to_inbox.send(m).await.is_err() {
                    break;
                }
            }
        });
        let idle = Duration::from_secs(s.config.ws_idle_secs);
        let (outbox, queue) = topics.outbox();
        let feed = Feed { topics, outbox, queue, keys: HashSet::new() };
        let connections = s.exported.ws_connections.clone();
        connections.inc();
        let deadline = Box::pin(tokio::time::sleep(idle));
        Link { tx, inbox, reader, feed, batch: Vec::new(), idle, deadline, connections }
    }

    async fn step(&mut self) -> Step {
        self.batch.clear();
        loop {
            tokio::select! {
                biased;
                () = self.feed.outbox.cut.notified() => {
                    let why = "too slow: the feed filled this connection's queue; reconnect and subscribe for a fresh snapshot";
                    let close = self.tx.send(Message::close_with(TOO_SLOW, why));
                    let _ = tokio::time::timeout(Duration::from_secs(1), close).await;
                    return Step::Stop;
                }
                m = self.inbox.recv() => match m {
                    None => return Step::Stop,
                    Some(m) => {
                        self.deadline.as_mut().reset(tokio::time::Instant::now() + self.idle);
                        if m.is_close() {
                            return Step::Stop;
                        }
                        let Ok(text) = m.to_str() else { continue };
                        if !text.trim().eq_ignore_ascii_case("PING") {
                            return Step::Text(text.to_string());
                        }
                        if !self.send_all(vec![Message::text("PONG")]).await {
                            return Step::Stop;
                        }
                    }
                },
                () = self.deadline.as_mut() => {
                    let _ = self.tx.send(Message::close_with(1000u16, "idle: no message (PING) for too long")).await;
                    return Step::Stop;
                }
                n = self.feed.queue.recv_many(&mut self.batch, BATCH) => {
                    // The queue's sender lives in `feed.outbox`, so it never closes under us.
                    debug_assert!(n > 0);
                    return Step::Frames;
                }
            }
        }
    }

    /// Writes messages with one flush; false when the connection is gone, or was cut off
    /// meanwhile (a client that stopped reading leaves the write pending forever). A
    /// close message among them ends the connection too.
    async fn send_all(&mut self, msgs: Vec<Message>) -> bool {
        if msgs.is_empty() {
            return true;
        }
        let closing = msgs.iter().any(Message::is_close);
        let tx = &mut self.tx;
        let write = async move {
            for m in msgs {
                tx.feed(m).await?;
            }
            tx.flush().await
        };
        let written = tokio::select! {
            r = write => r.is_ok(),
            () = self.feed.outbox.cut.notified() => false,
        };
        written && !closing
    }
}

/// Applies a subscription message; returns the messages to send: snapshots and errors.
fn subscribe(
    s: &AppState,
    sub: Subscription,
    subs: &mut HashMap<(u32, u8), u64>,
    feed: &mut Feed<(u32, u8), Arc<Frame>>,
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
            feed.remove(&(v.market.idx, *o));
        }
        return out;
    }
    // Subscribed first, then the snapshot: every change after the snapshot is published
    // after it was taken, so it reaches the queue; queued frames the snapshot already
    // contains are skipped by sequence.
    for (view, outcome) in found {
        feed.add((view.market.idx, outcome));
        let snap = view.snapshot();
        if sub.initial_dump != Some(false) {
            let found = (view.clone(), outcome, snap.clone());
            let book = BookEvent {
                summary: super::book::summary(&found, s.config.order_version == 2),
                event_type: "book",
                seq: snap.seq,
            };
            out.push(Message::text(serde_json::to_string(&book).expect("a book serializes")));
        }
        subs.insert((view.market.idx, outcome), snap.seq);
    }
    out
}

/// The `book` message: the REST summary, its fields in the same order, then the event's
/// type and sequence (added after hashing, so its hash is the REST summary's).
#[derive(serde::Serialize)]
struct BookEvent<'a> {
    #[serde(flatten)]
    summary: super::book::Summary<'a>,
    event_type: &'static str,
    seq: u64,
}
