//! Catalogue records (SPEC §4.6): series, events, a market's metadata beyond the engine's
//! record, and comments.

use serde::{Deserialize, Serialize};

/// A series: a recurring family of events (a weekly question, a season).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeriesRecord {
    pub id: u64,
    pub title: String,
    pub slug: String,
    pub series_type: String,
    pub recurrence: String,
    pub description: String,
    pub image: String,
    pub active: bool,
    pub closed: bool,
    pub archived: bool,
    /// UNIX seconds.
    pub start_date: Option<u64>,
    pub created_at: u64,
}

/// An event: one question's page, grouping one or more binary markets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventRecord {
    pub id: u64,
    pub title: String,
    pub slug: String,
    pub description: String,
    pub series_id: Option<u64>,
    pub tags: Vec<String>,
    /// Condition IDs, in the order given.
    pub markets: Vec<String>,
    pub active: bool,
    pub closed: bool,
    pub archived: bool,
    pub featured: bool,
    pub neg_risk: bool,
    pub image: String,
    pub icon: String,
    pub start_date: Option<u64>,
    pub end_date: Option<u64>,
    pub created_at: u64,
}

/// Where a market's resolution stands (SPEC §3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum ResolutionStatus {
    Resolving,
    Resolved,
}

/// What the catalogue knows of a market beyond the engine's record.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct MarketMeta {
    pub condition_id: String,
    pub event_id: Option<u64>,
    pub description: String,
    pub resolution_source: String,
    pub image: String,
    pub icon: String,
    pub group_item_title: String,
    pub start_date: Option<u64>,
    pub end_date: Option<u64>,
    pub resolution: Option<ResolutionStatus>,
    /// Index of the winning outcome once resolved (0 = first token).
    pub resolved_outcome: Option<u8>,
    pub created_at: u64,
}

/// What a comment is attached to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ParentKind {
    Event,
    Series,
    Market,
}

impl ParentKind {
    pub fn code(self) -> u8 {
        match self {
            ParentKind::Event => 0,
            ParentKind::Series => 1,
            ParentKind::Market => 2,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            ParentKind::Event => "Event",
            ParentKind::Series => "Series",
            ParentKind::Market => "market",
        }
    }
    pub fn parse(s: &str) -> Option<ParentKind> {
        match s.to_ascii_lowercase().as_str() {
            "event" => Some(ParentKind::Event),
            "series" => Some(ParentKind::Series),
            "market" => Some(ParentKind::Market),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommentRecord {
    pub id: u64,
    pub parent_kind: ParentKind,
    pub parent_id: u64,
    pub reply_to: Option<u64>,
    pub body: String,
    pub user_address: String,
    pub created_at: u64,
}
