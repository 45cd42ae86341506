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

/// An event's page, as the operator describes it: the one field list that both the stored
/// record and the operator's input use. `Date`, `Market` and `Series` are how each holds
/// its dates, markets and series: the record keeps UNIX seconds, condition IDs and the
/// series' id; the input (`app::catalogue::writes::EventInput`) takes date strings, market
/// specs and the series by id or by slug. The record's storage bytes are its fields in this
/// order, so new fields go at the end of the record, never in here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EventPage<Date, Market, Series> {
    pub title: String,
    /// Empty in an input: made from the title.
    pub slug: String,
    pub description: String,
    /// `series_slug` is the input's other way to name it.
    #[serde(alias = "series_slug")]
    pub series_id: Option<Series>,
    pub tags: Vec<String>,
    /// In the order given.
    pub markets: Vec<Market>,
    pub active: bool,
    pub closed: bool,
    pub archived: bool,
    pub featured: bool,
    pub neg_risk: bool,
    pub image: String,
    pub icon: String,
    pub start_date: Option<Date>,
    pub end_date: Option<Date>,
}

/// What an input leaves out: an active event with nothing else said.
impl<D, M, S> Default for EventPage<D, M, S> {
    fn default() -> Self {
        EventPage {
            title: String::new(),
            slug: String::new(),
            description: String::new(),
            series_id: None,
            tags: Vec::new(),
            markets: Vec::new(),
            active: true,
            closed: false,
            archived: false,
            featured: false,
            neg_risk: false,
            image: String::new(),
            icon: String::new(),
            start_date: None,
            end_date: None,
        }
    }
}

/// An event: one question's page, grouping one or more binary markets (by condition ID);
/// dates in UNIX seconds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventRecord {
    pub id: u64,
    pub page: EventPage<u64, String, u64>,
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
