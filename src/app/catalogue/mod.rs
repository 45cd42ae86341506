//! The catalogue ({gamma_url}): series, events, market metadata and comments.
//!
//! Series, events and market metadata are few and read often, so they live in memory
//! ([`Catalogue`]) and in RocksDB (`series`, `events`, `market_meta`); a change is written
//! through the persister first, then published to the in-memory copy. Comments stay in
//! RocksDB only, keyed (parent kind, parent id, comment id) so a page is one range scan.
//! Volume and liquidity are never stored here: they come from the trade counters and the
//! books at read time ([`live`]). The catalogue server's routes are `api::catalogue`; what they read is
//! in [`reads`], the operator's writes in [`writes`].

pub mod reads;
pub mod writes;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::app::AppState;
use crate::commit::views::{BookSnapshot, MarketView};
use crate::domain::BadDate;
pub use crate::domain::{fmt_date, parse_date};
use crate::domain::{now_secs, Amount, Price};
use crate::engine::EngineError;
use crate::store::{Batch, Store, StoreError};

/// What a catalogue service refuses (the routes give each its SPEC §7 reply).
#[derive(Debug, thiserror::Error)]
pub enum CatalogueError {
    #[error("title is required")]
    TitleRequired,
    #[error("slug must be lowercase letters, digits and '-'")]
    BadSlug,
    #[error("series slug already exists")]
    SeriesSlugTaken,
    #[error("event slug already exists")]
    EventSlugTaken,
    #[error("unknown series")]
    UnknownSeries,
    #[error("market {0} listed twice")]
    MarketTwice(String),
    #[error("market {market} belongs to event {event}")]
    MarketInEvent { market: String, event: u64 },
    #[error("{0}")]
    BadMarket(String),
    #[error(transparent)]
    BadDate(#[from] BadDate),
    #[error("parent_entity_type must be Event, Series or market")]
    BadParentKind,
    #[error("parent_entity_id is required")]
    ParentIdRequired,
    #[error("{0} not found")]
    ParentNotFound(&'static str),
    #[error("body must be 1 to 10000 bytes")]
    BadBody,
    #[error("invalid user_address")]
    BadUser,
    #[error("parent_comment_id is not a comment of this parent")]
    NotAReply,
    #[error("market not found")]
    MarketNotFound,
    #[error("outcome must name one of the market's outcomes")]
    BadOutcome,
    #[error("a RESOLVED market needs its outcome")]
    NeedsOutcome,
    #[error("resolution failed: {0}")]
    ResolutionFailed(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Engine(#[from] EngineError),
}

pub use crate::domain::catalogue::{
    CommentRecord, EventRecord, MarketMeta, ParentKind, ResolutionStatus, SeriesRecord,
};

#[derive(Debug, Default)]
struct Inner {
    series: BTreeMap<u64, Arc<SeriesRecord>>,
    events: BTreeMap<u64, Arc<EventRecord>>,
    meta: HashMap<String, Arc<MarketMeta>>,
    next_series: u64,
    next_event: u64,
    next_comment: u64,
}

/// The catalogue as its server reads it.
#[derive(Debug, Default)]
pub struct Catalogue {
    inner: RwLock<Inner>,
    /// Serialises changes (id assignment, slug uniqueness); reads never take it.
    pub write: tokio::sync::Mutex<()>,
}

impl Catalogue {
    pub fn load(store: &Store) -> Result<Catalogue, StoreError> {
        let mut inner = Inner::default();
        for s in store.all_series()? {
            inner.series.insert(s.id, Arc::new(s));
        }
        for e in store.all_events()? {
            inner.events.insert(e.id, Arc::new(e));
        }
        for m in store.all_market_meta()? {
            inner.meta.insert(m.condition_id.clone(), Arc::new(m));
        }
        (inner.next_series, inner.next_event, inner.next_comment) = store.catalogue_next_ids()?;
        Ok(Catalogue { inner: RwLock::new(inner), write: Default::default() })
    }

    pub fn series(&self) -> Vec<Arc<SeriesRecord>> {
        self.inner.read().series.values().cloned().collect()
    }
    pub fn series_by_id(&self, id: u64) -> Option<Arc<SeriesRecord>> {
        self.inner.read().series.get(&id).cloned()
    }
    pub fn events(&self) -> Vec<Arc<EventRecord>> {
        self.inner.read().events.values().cloned().collect()
    }
    pub fn event(&self, id: u64) -> Option<Arc<EventRecord>> {
        self.inner.read().events.get(&id).cloned()
    }
    pub fn meta(&self, condition_id: &str) -> Option<Arc<MarketMeta>> {
        self.inner.read().meta.get(condition_id).cloned()
    }

    /// Ids the next series, event and comment get (the caller holds `write`).
    pub fn next_ids(&self) -> (u64, u64, u64) {
        let i = self.inner.read();
        (i.next_series, i.next_event, i.next_comment)
    }

    /// Publishes what a durable batch wrote.
    pub fn publish(&self, series: Option<SeriesRecord>, event: Option<EventRecord>, metas: Vec<MarketMeta>) {
        let mut i = self.inner.write();
        if let Some(s) = series {
            i.next_series = i.next_series.max(s.id + 1);
            i.series.insert(s.id, Arc::new(s));
        }
        if let Some(e) = event {
            i.next_event = i.next_event.max(e.id + 1);
            i.events.insert(e.id, Arc::new(e));
        }
        for m in metas {
            i.meta.insert(m.condition_id.clone(), Arc::new(m));
        }
    }

    pub fn published_comment(&self, id: u64) {
        let mut i = self.inner.write();
        i.next_comment = i.next_comment.max(id + 1);
    }
}

/// A market's numbers at read time, in integers: volume (collateral notional of its trades,
/// from the trade counters), liquidity (collateral value of its resting orders at their
/// prices) and its YES price marks.
#[derive(Debug, Clone, Copy, Default)]
pub struct Live {
    pub volume: u64,
    pub trades: u64,
    pub liquidity: Amount,
    pub best_bid: Option<Price>,
    pub best_ask: Option<Price>,
    pub last: Option<Price>,
    /// YES price: midpoint of a two-sided book, else the last trade.
    pub mark: Option<Price>,
}

/// Liquidity of a book: Σ size × price over both sides (YES prices), in micro-USDC.
pub fn liquidity(snap: &BookSnapshot) -> Amount {
    snap.bids.iter().chain(snap.asks.iter()).map(|&(p, s)| p.cost(s)).sum()
}

/// The mark of a book's YES token (see [`Live::mark`]).
pub fn mark(snap: &BookSnapshot) -> Option<Price> {
    match snap.best(0) {
        (Some(b), Some(a)) => Some(Price::midpoint(b, a)),
        _ => snap.last_trade(0).map(|x| x.0),
    }
}

pub fn live(store: &Store, view: &MarketView) -> Result<Live, StoreError> {
    let (volume, trades) = store.market_stats(view.market.idx)?;
    let snap = view.snapshot();
    let (best_bid, best_ask) = snap.best(0);
    Ok(Live {
        volume,
        trades,
        liquidity: liquidity(&snap),
        best_bid,
        best_ask,
        last: snap.last_trade(0).map(|x| x.0),
        mark: mark(&snap),
    })
}

/// A token's current price for valuation: 1 or 0 once its market resolved, else the mark
/// (YES mark, or 1 − it for NO), else 0.
pub fn current_price(meta: Option<&MarketMeta>, live: &Live, outcome: u8) -> Price {
    if let Some(m) = meta {
        if m.resolution == Some(ResolutionStatus::Resolved) {
            if let Some(w) = m.resolved_outcome {
                return if w == outcome { Price::ONE } else { Price::ZERO };
            }
        }
    }
    match (live.mark, outcome) {
        (Some(p), 0) => p,
        (Some(p), _) => p.complement(),
        (None, _) => Price::ZERO,
    }
}

/// A slug from a title: lowercase ASCII letters and digits, other runs become one `-`.
pub fn slugify(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

/// A market's catalogue metadata, or fresh metadata for a market that has none yet.
pub fn meta_or_new(s: &AppState, condition_id: &str) -> MarketMeta {
    s.catalogue.meta(condition_id).map(|m| (*m).clone()).unwrap_or_else(|| MarketMeta {
        condition_id: condition_id.to_string(),
        created_at: now_secs(),
        ..Default::default()
    })
}

/// [`put_meta`] from a worker's OS thread.
pub fn put_meta_blocking(s: &AppState, meta: MarketMeta) -> Result<(), StoreError> {
    let _w = s.catalogue.write.blocking_lock();
    let mut b = Batch::default();
    b.put_market_meta(&meta);
    s.commit_blocking(b)?;
    s.catalogue.publish(None, None, vec![meta]);
    Ok(())
}

/// Writes a market's catalogue metadata and publishes it.
pub async fn put_meta(s: &AppState, meta: MarketMeta) -> Result<(), StoreError> {
    let _w = s.catalogue.write.lock().await;
    let mut b = Batch::default();
    b.put_market_meta(&meta);
    s.commit(b).await?;
    s.catalogue.publish(None, None, vec![meta]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_slugs() {
        assert_eq!(parse_date("2026-12-31").unwrap(), 1_798_675_200);
        assert_eq!(parse_date("2026-12-31T00:00:00Z").unwrap(), 1_798_675_200);
        assert_eq!(fmt_date(1_798_675_200), "2026-12-31T00:00:00Z");
        assert!(parse_date("31/12/2026").is_err());
        assert_eq!(slugify("Will BTC hit $150k?"), "will-btc-hit-150k");
    }
}

#[cfg(test)]
mod event_tests {
    use super::writes::{EventInput, SeriesRef};
    use super::*;
    use crate::domain::catalogue::EventPage;

    /// The record's storage bytes are its fields in a row: the page nested inside adds none.
    #[test]
    fn event_record_bytes_are_the_flat_field_list() {
        let page = EventPage {
            title: "T".into(),
            slug: "t".into(),
            series_id: Some(2),
            tags: vec!["x".into()],
            markets: vec!["0xab".into()],
            featured: true,
            start_date: Some(1),
            ..EventPage::default()
        };
        let rec = EventRecord { id: 7, page, created_at: 9 };
        let bytes = crate::store::encode(&rec);
        let want: &[u8] =
            &[7, 1, b'T', 1, b't', 0, 1, 2, 1, 1, b'x', 1, 4, b'0', b'x', b'a', b'b', 1, 0, 0, 1, 0, 0, 0, 1, 1, 0, 9];
        assert_eq!(&bytes[1..], want);
    }

    #[test]
    fn event_input_names_its_series_by_id_or_slug_and_defaults_to_active() {
        let by_id: EventInput = serde_json::from_str(r#"{"title":"A","series_id":3}"#).unwrap();
        assert_eq!(by_id.series_id, Some(SeriesRef::Id(3)));
        assert!(by_id.active && by_id.slug.is_empty() && by_id.markets.is_empty());
        let by_slug: EventInput = serde_json::from_str(r#"{"title":"A","series_slug":"weekly"}"#).unwrap();
        assert_eq!(by_slug.series_id, Some(SeriesRef::Slug("weekly".into())));
        let off: EventInput = serde_json::from_str(r#"{"active":false}"#).unwrap();
        assert!(!off.active);
        for bad in [r#"{"title":"A","series_id":3,"series_slug":"weekly"}"#, r#"{"title":"A","colour":"red"}"#] {
            assert!(serde_json::from_str::<EventInput>(bad).is_err(), "{bad}");
        }
    }
}
