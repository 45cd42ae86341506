//! The event stream out (`--events-to`): every durable order, trade, settlement status and
//! market change, published to a NATS JetStream stream in engine order.
//!
//! The store numbers each event in the group write that makes it durable (`store::outbox`);
//! this task reads the outbox after the last sequence the server acknowledged and publishes
//! each event to `predex.<kind>.<condition id>` (kinds: `order`, `trade` — a trade created —,
//! `settlement` — a trade's later status —, `market`), its sequence as the message id
//! (`Nats-Msg-Id`), so JetStream's de-duplication drops a second copy. Nothing waits on it:
//! an order is acknowledged once its write is durable, and a slow or absent server only
//! lets the outbox grow (the lag, in `/metrics` and on the dashboard) until it catches up.
//!
//! Exactly once, in order: each session (a connection) first reads the last message of the
//! stream and resumes after the event it holds, or after the acknowledgement recorded in the
//! store if that is later; then each publish expects the stream's last sequence to be the
//! one before it (`Nats-Expected-Last-Sequence`), so a message the server lost makes every
//! later one fail instead of landing after a gap. Any failure ends the session; the next
//! one starts over from what the stream holds. The stream is predex's alone.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use async_nats::jetstream::{self, context::PublishAckFuture, message::PublishMessage, stream};
use async_nats::ServerAddr;
use serde_json::{json, Value};

use crate::commit::bus::{order_json, trade_json};
use crate::domain::{Market, TradeStatus};
use crate::metrics::Metrics;
use crate::store::{Recorded, Store, StreamEvent};

/// The subjects of the stream predex creates.
pub const SUBJECTS: &str = "predex.>";
/// Publishes awaiting their acknowledgement at once.
const WINDOW: usize = 256;
/// How long a publish may wait for its acknowledgement before the session ends.
const ACK_TIMEOUT: Duration = Duration::from_secs(5);
/// How often, at most, the acknowledged sequence is recorded in the store while events
/// keep coming (always when the stream has caught up).
const RECORD_EVERY: Duration = Duration::from_millis(200);
/// The wait before a new session after a failed one: doubling, up to the second figure.
const RETRY: (Duration, Duration) = (Duration::from_millis(250), Duration::from_secs(5));
/// JetStream's de-duplication window of the stream predex creates.
const DUPLICATE_WINDOW: Duration = Duration::from_secs(600);

/// The publisher's state, shared with the dashboard and `/metrics`.
pub struct EventStream {
    to: String,
    servers: Vec<ServerAddr>,
    stream: String,
    replicas: usize,
    store: Arc<Store>,
    /// The last event sequence durable in the store.
    durable: tokio::sync::watch::Receiver<u64>,
    /// The last one the server acknowledged.
    acked: AtomicU64,
    connected: AtomicBool,
    metrics: Arc<Metrics>,
}

impl EventStream {
    /// Turns the store's outbox on when the configuration names servers (None: the stream
    /// is off). Call before anything is written that should be published.
    pub fn new(
        config: &crate::config::Config,
        store: Arc<Store>,
        metrics: Arc<Metrics>,
    ) -> anyhow::Result<Option<Arc<EventStream>>> {
        let servers = config.events_servers()?;
        let Some(to) = config.events_to.clone().filter(|_| !servers.is_empty()) else { return Ok(None) };
        let (durable, acked) = store.stream_events().context("open the event outbox")?;
        let s = EventStream {
            to,
            servers,
            stream: config.events_stream.clone(),
            replicas: config.events_replicas,
            store,
            durable,
            acked: AtomicU64::new(acked),
            connected: AtomicBool::new(false),
            metrics,
        };
        s.refresh();
        Ok(Some(Arc::new(s)))
    }

    /// The stream as the dashboard shows it: `{to, stream, connected, acked, last, lag}`.
    pub fn status(&self) -> Value {
        let (last, acked) = self.refresh();
        json!({
            "to": self.to,
            "stream": self.stream,
            "connected": self.connected.load(Ordering::Relaxed),
            "acked": acked,
            "last": last,
            "lag": last.saturating_sub(acked),
        })
    }

    /// Sets the gauges; returns the last durable and the last acknowledged sequence.
    pub fn refresh(&self) -> (u64, u64) {
        let last = *self.durable.borrow();
        let acked = self.acked.load(Ordering::Relaxed);
        self.metrics.events_lag.set(last.saturating_sub(acked) as i64);
        self.metrics.events_connected.set(i64::from(self.connected.load(Ordering::Relaxed)));
        (last, acked)
    }

    fn set_connected(&self, up: bool) {
        self.connected.store(up, Ordering::Relaxed);
        self.refresh();
    }

    /// Publishes for as long as the process runs: one session after another.
    pub async fn run(self: Arc<Self>) {
        let mut retry = RETRY.0;
        let mut last_error = String::new();
        loop {
            let started = Instant::now();
            let Err(e) = self.session().await;
            self.set_connected(false);
            let error = format!("{e:#}");
            if error != last_error {
                tracing::warn!(to = %self.to, error = %error, "event stream: not publishing; retrying");
                last_error = error;
            }
            if started.elapsed() > Duration::from_secs(30) {
                retry = RETRY.0;
            }
            // Meanwhile the lag keeps growing: keep its gauge current.
            let until = tokio::time::Instant::now() + retry;
            let mut durable = self.durable.clone();
            loop {
                tokio::select! {
                    _ = tokio::time::sleep_until(until) => break,
                    changed = durable.changed() => {
                        if changed.is_err() {
                            return; // the store is gone: shutting down
                        }
                        self.refresh();
                    }
                }
            }
            retry = (retry * 2).min(RETRY.1);
        }
    }

    /// One connection: resume after what the stream holds, then publish until something
    /// fails.
    async fn session(&self) -> Result<std::convert::Infallible, anyhow::Error> {
        let (client, js, mut stream) = self.connect().await?;
        let (last_sequence, acked) = self.resume(&mut stream).await?;
        self.set_connected(true);
        tracing::info!(to = %self.to, stream = %self.stream, after = acked, "event stream: publishing");
        self.publish(&client, &js, last_sequence, acked).await
    }

    /// Connects and makes sure the stream exists.
    async fn connect(&self) -> Result<(async_nats::Client, jetstream::Context, stream::Stream), anyhow::Error> {
        let client = async_nats::ConnectOptions::new()
            .name("predex")
            .connection_timeout(Duration::from_secs(2))
            .connect(self.servers.as_slice())
            .await
            .context("connect")?;
        let js = jetstream::ContextBuilder::new()
            .timeout(ACK_TIMEOUT)
            .max_ack_inflight(WINDOW)
            .backpressure_on_inflight(true)
            .build(client.clone());
        let config = stream::Config {
            name: self.stream.clone(),
            subjects: vec![SUBJECTS.into()],
            storage: stream::StorageType::File,
            num_replicas: self.replicas,
            duplicate_window: DUPLICATE_WINDOW,
            ..Default::default()
        };
        let stream = js.get_or_create_stream(config).await.with_context(|| format!("stream {}", self.stream))?;
        Ok((client, js, stream))
    }

    /// Reads the last event the stream holds and counts it acknowledged; refuses a stream
    /// ahead of this data directory. Returns the stream's last sequence and the last
    /// acknowledged event.
    async fn resume(&self, stream: &mut stream::Stream) -> Result<(u64, u64), anyhow::Error> {
        let state = stream.info().await.context("stream info")?.state.clone();
        let acked = self.acked.load(Ordering::Relaxed);
        if state.messages == 0 {
            return Ok((state.last_sequence, acked));
        }
        let m = stream.get_raw_message(state.last_sequence).await.context("read the stream's last message")?;
        let id = m.headers.get(async_nats::header::NATS_MESSAGE_ID).map(|v| v.as_str().to_string());
        let held = id.as_deref().and_then(|i| i.parse::<u64>().ok()).with_context(|| {
            format!("the last message of stream {} ({}) is not a predex event", self.stream, m.subject)
        })?;
        let durable = *self.durable.borrow();
        if held > durable {
            anyhow::bail!(
                "stream {} already holds event {held}, past the last this data directory wrote ({durable}): \
                 it is another venue's, or this one's before a restore; give this one its own --events-stream",
                self.stream
            );
        }
        if held <= acked {
            return Ok((state.last_sequence, acked));
        }
        self.store.events_acked(held)?;
        self.acked.store(held, Ordering::Relaxed);
        Ok((state.last_sequence, held))
    }

    /// Publishes the outbox from `acked + 1`, a window in flight, until something fails.
    async fn publish(
        &self,
        client: &async_nats::Client,
        js: &jetstream::Context,
        last_sequence: u64,
        acked: u64,
    ) -> Result<std::convert::Infallible, anyhow::Error> {
        let mut expected = last_sequence;
        let mut next = acked + 1;
        let mut inflight: VecDeque<(u64, PublishAckFuture)> = VecDeque::with_capacity(WINDOW);
        let mut recorded = Instant::now();
        let mut durable = self.durable.clone();
        loop {
            // Refilled by half a window at a time: one read of the outbox per batch, not per
            // acknowledgement.
            if inflight.len() <= WINDOW / 2 {
                for (seq, event) in self.store.events_from(next, WINDOW - inflight.len())? {
                    let (subject, payload) = render(seq, &event);
                    let publish = PublishMessage::build()
                        .payload(payload.to_string().into())
                        .message_id(seq.to_string())
                        .expected_last_sequence(expected);
                    inflight.push_back((seq, js.send_publish(subject, publish).await.context("publish")?));
                    expected += 1;
                    next = seq + 1;
                }
            }
            if let Some((seq, ack)) = inflight.pop_front() {
                ack.await.with_context(|| format!("event {seq} not acknowledged"))?;
                self.acked.store(seq, Ordering::Relaxed);
                self.metrics.events_published.inc();
                if inflight.is_empty() || recorded.elapsed() >= RECORD_EVERY {
                    self.store.events_acked(seq)?;
                    recorded = Instant::now();
                    self.refresh();
                }
                continue;
            }
            // Caught up: wait for the next durable event, watching the connection.
            self.refresh();
            tokio::select! {
                woke = async { durable.wait_for(|d| *d >= next).await.map(|_| ()) } => {
                    woke.context("the store is gone")?;
                    // Durable but not readable yet (written out of turn): look again soon.
                    if self.store.events_from(next, 1)?.is_empty() {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
                _ = tokio::time::sleep(Duration::from_secs(1)) => {
                    if client.connection_state() != async_nats::connection::State::Connected {
                        anyhow::bail!("connection to the server lost");
                    }
                }
            }
        }
    }
}

/// An event's subject and message: the user channel's `order` and `trade` events (a trade
/// as its taker sees it) and a `market` event, each with its `event_seq`.
pub fn render(seq: u64, e: &StreamEvent) -> (String, Value) {
    let ts = e.at_ms.to_string();
    let (kind, market, mut v) = match &e.what {
        Recorded::Order { placed, order } => ("order", &*order.token.condition_id, order_json(order, *placed, &ts)),
        Recorded::Trade(t) => {
            let kind = if t.status == TradeStatus::Pending { "trade" } else { "settlement" };
            (kind, &*t.token.condition_id, trade_json(t, t.owner, &ts))
        }
        Recorded::Market(m) => ("market", m.condition_id.as_str(), market_json(m, &ts)),
    };
    v["event_seq"] = seq.into();
    (format!("predex.{kind}.{}", subject_token(market)), v)
}

/// A market as its `market` event shows it.
fn market_json(m: &Market, ts: &str) -> Value {
    json!({
        "event_type": "market", "market": m.condition_id, "question": m.question, "market_slug": m.slug,
        "tokens": m.tokens.iter().map(|t| json!({ "token_id": t.token_id, "outcome": t.outcome })).collect::<Vec<_>>(),
        "minimum_tick_size": m.tick.short(), "minimum_order_size": m.min_order_size.fmt(),
        "neg_risk": m.neg_risk, "active": m.active, "closed": m.closed, "accepting_orders": m.accepting_orders,
        "timestamp": ts,
    })
}

/// A condition id as one subject token: the characters a subject gives meaning to replaced.
fn subject_token(id: &str) -> String {
    id.chars().map(|c| if c == '.' || c == '*' || c == '>' || c.is_whitespace() { '_' } else { c }).collect()
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::domain::{Amount, Price, Token};

    #[test]
    fn events_go_to_a_subject_per_kind_and_market_with_their_sequence() {
        let token = |t: &str, o: &str| Token { token_id: t.into(), outcome: o.into() };
        let mut m = Market::binary("0xabc", token("1", "Yes"), token("2", "No"), Price(100), Amount(5_000_000));
        m.accepting_orders = false;
        let e = StreamEvent { at_ms: 1_700_000_000_123, what: Recorded::Market(Cow::Owned(m)) };
        let (subject, v) = render(42, &e);
        assert_eq!(subject, "predex.market.0xabc");
        assert_eq!(v["event_seq"], 42);
        assert_eq!(v["event_type"], "market");
        assert_eq!(v["accepting_orders"], false);
        assert_eq!(v["minimum_tick_size"], "0.01");
        assert_eq!(v["minimum_order_size"], "5");
        assert_eq!(v["timestamp"], "1700000000123");
        assert_eq!(subject_token("a.b*c>d e"), "a_b_c_d_e");
    }
}
