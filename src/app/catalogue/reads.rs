//! What the catalogue server reads: markets, events and series with their live numbers summed
//! (for nesting, ordering and totals), lookups by Gamma id, and a parent's comments.

use std::sync::Arc;

use super::{live, CatalogueError, CommentRecord, EventRecord, Live, MarketMeta, ParentKind, SeriesRecord};
use crate::app::AppState;
use crate::commit::views::MarketView;
use crate::domain::Amount;
use crate::store::StoreError;

/// Gamma's market id: the engine's dense index, from 1.
pub fn market_id(view: &MarketView) -> u64 {
    view.market.idx as u64 + 1
}

/// A market with its catalogue metadata and live numbers.
pub struct MarketRow {
    pub view: Arc<MarketView>,
    pub meta: Option<Arc<MarketMeta>>,
    pub live: Live,
}

pub fn market_row(s: &AppState, view: Arc<MarketView>) -> Result<MarketRow, StoreError> {
    let meta = s.catalogue.meta(&view.market.condition_id);
    let live = live(&s.store, &view)?;
    Ok(MarketRow { view, meta, live })
}

/// An event with its markets' rows.
pub struct EventRow {
    pub event: Arc<EventRecord>,
    pub markets: Vec<MarketRow>,
    pub volume: u64,
    pub liquidity: Amount,
}

pub fn event_row(s: &AppState, e: Arc<EventRecord>) -> Result<EventRow, StoreError> {
    let mut markets = Vec::with_capacity(e.page.markets.len());
    for c in &e.page.markets {
        if let Some(v) = s.registry.condition(c) {
            markets.push(market_row(s, v)?);
        }
    }
    let volume = markets.iter().map(|m| m.live.volume).sum();
    let liquidity = markets.iter().map(|m| m.live.liquidity).sum();
    Ok(EventRow { event: e, markets, volume, liquidity })
}

/// A series with its events' rows.
pub struct SeriesRow {
    pub series: Arc<SeriesRecord>,
    pub events: Vec<EventRow>,
    pub volume: u64,
    pub liquidity: Amount,
}

pub fn series_row(s: &AppState, x: Arc<SeriesRecord>) -> Result<SeriesRow, StoreError> {
    let mut events = Vec::new();
    for e in s.catalogue.events() {
        if e.page.series_id == Some(x.id) {
            events.push(event_row(s, e)?);
        }
    }
    let volume = events.iter().map(|e| e.volume).sum();
    let liquidity = events.iter().map(|e| e.liquidity).sum();
    Ok(SeriesRow { series: x, events, volume, liquidity })
}

/// A market by Gamma id (or, as a convenience, by condition id).
pub fn find_market(s: &AppState, id: &str) -> Option<Arc<MarketView>> {
    if id.starts_with("0x") {
        return s.registry.condition(id);
    }
    let n: u64 = id.parse().ok()?;
    let idx = n.checked_sub(1)?;
    s.registry.tables().list.iter().find(|v| v.market.idx as u64 == idx).cloned()
}

/// The parent a comment query or a new comment names: (kind, id), checked to exist.
pub fn comment_parent(s: &AppState, kind: Option<&str>, id: Option<&str>) -> Result<(ParentKind, u64), CatalogueError> {
    let kind = kind.and_then(ParentKind::parse).ok_or(CatalogueError::BadParentKind)?;
    let id = id.ok_or(CatalogueError::ParentIdRequired)?;
    let found = match kind {
        ParentKind::Event => id.parse().ok().filter(|&i| s.catalogue.event(i).is_some()),
        ParentKind::Series => id.parse().ok().filter(|&i| s.catalogue.series_by_id(i).is_some()),
        ParentKind::Market => find_market(s, id).map(|v| market_id(&v)),
    };
    let what = match kind {
        ParentKind::Event => "event",
        ParentKind::Series => "series",
        ParentKind::Market => "market",
    };
    found.map(|i| (kind, i)).ok_or(CatalogueError::ParentNotFound(what))
}

/// A parent's comments, newest first (oldest first when `ascending`): `limit` of them
/// after skipping `offset`, one range scan.
pub fn comments(
    s: &AppState,
    parent: (ParentKind, u64),
    ascending: bool,
    offset: u64,
    limit: usize,
) -> Result<Vec<CommentRecord>, StoreError> {
    s.store.comments(parent.0, parent.1, ascending, offset, limit)
}
