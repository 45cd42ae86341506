//! The operator's catalogue writes (the internal server, and the demo catalogue at start):
//! series, events (with their markets, new or existing), comments, a market's metadata and
//! its resolution status. Everything is checked first (bad input changes nothing), then
//! written through the persister, then published to the in-memory copy.

use std::sync::Arc;

use serde::Deserialize;

use super::reads::comment_parent;
use super::{
    meta_or_new, put_meta, slugify, CatalogueError, CommentRecord, EventRecord, ResolutionStatus, SeriesRecord,
};
use crate::app::markets::{opt_date, MarketSpec};
use crate::app::AppState;
use crate::auth::normalize_address;
use crate::commit::views::MarketView;
use crate::domain::catalogue::EventPage;
use crate::domain::now_secs;
use crate::engine::EngineError;
use crate::store::Batch;

fn slug_or_title(slug: Option<&str>, title: &str) -> Result<String, CatalogueError> {
    let slug = slug.filter(|x| !x.is_empty()).map_or_else(|| slugify(title), str::to_string);
    if slug.is_empty() || !slug.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
        return Err(CatalogueError::BadSlug);
    }
    Ok(slug)
}

/// Every field may be left out; a missing or empty title is refused.
#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct SeriesInput {
    pub title: String,
    pub slug: Option<String>,
    pub series_type: String,
    pub recurrence: String,
    pub description: String,
    pub image: String,
    pub active: Option<bool>,
    pub closed: bool,
    pub archived: bool,
    pub start_date: Option<String>,
}

pub async fn add_series(s: &AppState, input: SeriesInput) -> Result<SeriesRecord, CatalogueError> {
    if input.title.trim().is_empty() {
        return Err(CatalogueError::TitleRequired);
    }
    let slug = slug_or_title(input.slug.as_deref(), &input.title)?;
    let _w = s.catalogue.write.lock().await;
    if s.catalogue.series().iter().any(|x| x.slug == slug) {
        return Err(CatalogueError::SeriesSlugTaken);
    }
    let rec = SeriesRecord {
        id: s.catalogue.next_ids().0,
        title: input.title,
        slug,
        series_type: if input.series_type.is_empty() { "single".into() } else { input.series_type },
        recurrence: input.recurrence,
        description: input.description,
        image: input.image,
        active: input.active.unwrap_or(true),
        closed: input.closed,
        archived: input.archived,
        start_date: opt_date(&input.start_date)?,
        created_at: now_secs(),
    };
    let mut b = Batch::default();
    b.add_series(&rec);
    s.commit(b).await?;
    s.catalogue.publish(Some(rec.clone()), None, Vec::new());
    Ok(rec)
}

/// An event as the operator gives it (every field may be left out; a missing or empty title
/// is refused): dates as strings, the series by id or by slug (`series_slug`), and each
/// market an existing one (by `condition_id` alone, plus any metadata) or a new one (a whole
/// market as POST /internal/markets takes it).
pub type EventInput = EventPage<String, MarketSpec, SeriesRef>;

/// The series an input names.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum SeriesRef {
    Id(u64),
    Slug(String),
}

/// Checks everything first, then creates the new markets, then writes the event and its
/// markets' metadata in one batch.
pub async fn add_event(s: &AppState, input: EventInput) -> Result<EventRecord, CatalogueError> {
    if input.title.trim().is_empty() {
        return Err(CatalogueError::TitleRequired);
    }
    let slug = slug_or_title(Some(&input.slug), &input.title)?;
    let _w = s.catalogue.write.lock().await;
    if s.catalogue.events().iter().any(|e| e.page.slug == slug) {
        return Err(CatalogueError::EventSlugTaken);
    }
    let series_id = match &input.series_id {
        Some(SeriesRef::Id(id)) => Some(s.catalogue.series_by_id(*id).ok_or(CatalogueError::UnknownSeries)?.id),
        Some(SeriesRef::Slug(sl)) => {
            Some(s.catalogue.series().iter().find(|x| &x.slug == sl).ok_or(CatalogueError::UnknownSeries)?.id)
        }
        None => None,
    };
    let (start, end) = (opt_date(&input.start_date)?, opt_date(&input.end_date)?);
    let id = s.catalogue.next_ids().1;
    let mut seen = std::collections::HashSet::new();
    let mut new_markets = Vec::new();
    let mut metas = Vec::new();
    for spec in input.markets {
        if !seen.insert(spec.condition_id.clone()) {
            return Err(CatalogueError::MarketTwice(spec.condition_id));
        }
        if let Some(other) = s.catalogue.meta(&spec.condition_id).and_then(|m| m.event_id) {
            return Err(CatalogueError::MarketInEvent { market: spec.condition_id, event: other });
        }
        let meta = spec.meta(id, s.catalogue.meta(&spec.condition_id).as_deref())?;
        if s.registry.condition(&spec.condition_id).is_none() {
            new_markets.push(spec.into_market().map_err(CatalogueError::BadMarket)?);
        }
        metas.push(meta);
    }
    for m in new_markets {
        match s.engine.create_market(m).await {
            Ok(_) | Err(EngineError::Exists) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let page = EventPage {
        title: input.title,
        slug,
        description: input.description,
        series_id,
        tags: input.tags,
        markets: metas.iter().map(|m| m.condition_id.clone()).collect(),
        active: input.active,
        closed: input.closed,
        archived: input.archived,
        featured: input.featured,
        neg_risk: input.neg_risk,
        image: input.image,
        icon: input.icon,
        start_date: start,
        end_date: end,
    };
    let rec = EventRecord { id, page, created_at: now_secs() };
    let mut b = Batch::default();
    b.add_event(&rec);
    for m in &metas {
        b.put_market_meta(m);
    }
    s.commit(b).await?;
    s.catalogue.publish(None, Some(rec.clone()), metas);
    Ok(rec)
}

/// A new comment on a parent (kind and id as the request names them), by `user_address`,
/// optionally replying to another comment of the same parent.
pub struct CommentInput<'a> {
    pub parent_kind: &'a str,
    pub parent_id: &'a str,
    pub body: &'a str,
    pub user_address: &'a str,
    pub reply_to: Option<u64>,
}

pub async fn add_comment(s: &AppState, input: CommentInput<'_>) -> Result<CommentRecord, CatalogueError> {
    let (kind, parent) = comment_parent(s, Some(input.parent_kind), Some(input.parent_id))?;
    let text = input.body.trim();
    if text.is_empty() || text.len() > 10_000 {
        return Err(CatalogueError::BadBody);
    }
    let user = normalize_address(input.user_address).ok_or(CatalogueError::BadUser)?;
    let _w = s.catalogue.write.lock().await;
    if let Some(reply) = input.reply_to {
        if s.store.comment(kind, parent, reply)?.is_none() {
            return Err(CatalogueError::NotAReply);
        }
    }
    let c = CommentRecord {
        id: s.catalogue.next_ids().2,
        parent_kind: kind,
        parent_id: parent,
        reply_to: input.reply_to,
        body: text.to_string(),
        user_address: user,
        created_at: now_secs(),
    };
    let mut b = Batch::default();
    b.add_comment(&c);
    s.commit(b).await?;
    s.catalogue.published_comment(c.id);
    Ok(c)
}

/// Records a market's resolution status (RESOLVING while its cooldown runs, RESOLVED with
/// the winning outcome, named by outcome or token id). Resolving stops trading, cancels
/// the market's orders and settles its bonds (`app::resolution::resolve`).
pub async fn set_resolution(
    s: &Arc<AppState>,
    condition_id: &str,
    status: ResolutionStatus,
    outcome: Option<&str>,
) -> Result<Arc<MarketView>, CatalogueError> {
    let view = s.registry.condition(condition_id).ok_or(CatalogueError::MarketNotFound)?;
    let winner = match (outcome, status) {
        (Some(o), _) => Some(
            view.market
                .tokens
                .iter()
                .position(|t| t.outcome.eq_ignore_ascii_case(o) || t.token_id == o)
                .ok_or(CatalogueError::BadOutcome)? as u8,
        ),
        (None, ResolutionStatus::Resolved) => return Err(CatalogueError::NeedsOutcome),
        (None, ResolutionStatus::Resolving) => None,
    };
    if let (ResolutionStatus::Resolved, Some(w)) = (status, winner) {
        let (s2, c) = (s.clone(), condition_id.to_string());
        tokio::task::spawn_blocking(move || crate::app::resolution::resolve(&s2, &c, w))
            .await
            .map_err(|e| CatalogueError::ResolutionFailed(e.to_string()))?
            .map_err(CatalogueError::ResolutionFailed)?;
    } else {
        let mut meta = meta_or_new(s, condition_id);
        meta.resolution = Some(status);
        meta.resolved_outcome = winner;
        put_meta(s, meta).await?;
    }
    Ok(view)
}
