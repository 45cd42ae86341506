//! Markets as the operator describes them: [`MarketSpec`] (the internal API's body and the
//! demo catalogue's entries), its checks, and [`create`], which makes the market in the
//! engine (on chain first in chain mode) with its catalogue metadata and reward program.
//! The demo catalogue in `data/` is loaded through it once per data directory
//! ([`load_demo`]).

use std::path::Path;

use alloy_primitives::B256;
use anyhow::Context;
use serde::Deserialize;

use super::catalogue::{put_meta, writes};
use super::incentives::{self, IncentiveError, RewardSpec};
use super::onchain::{self, OnchainError};
use super::AppState;
use crate::domain::catalogue::MarketMeta;
use crate::domain::{now_secs, parse_date, Amount, BadDate, Market, Price, Token};
use crate::engine::EngineError;
use crate::store::StoreError;

/// A market as the internal API and the demo catalogue describe it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarketSpec {
    /// Required in ledger mode; made on chain in chain mode.
    #[serde(default)]
    pub condition_id: String,
    #[serde(default)]
    pub question: String,
    #[serde(default)]
    pub slug: String,
    /// Required to create a market; a spec naming an existing market (in an event) may
    /// leave it out.
    #[serde(default)]
    pub tokens: Vec<Token>,
    #[serde(default = "default_tick")]
    pub tick_size: String,
    #[serde(default = "default_min")]
    pub min_order_size: String,
    #[serde(default)]
    pub neg_risk: bool,
    #[serde(default)]
    pub neg_risk_market_id: Option<String>,
    /// Chain mode: the question the market's condition is prepared for (32 bytes, hex);
    /// predex makes one when absent. Ignored in ledger mode.
    #[serde(default)]
    pub question_id: Option<String>,
    // Catalogue metadata (the engine does not keep these).
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub resolution_source: String,
    #[serde(default)]
    pub image: String,
    #[serde(default)]
    pub icon: String,
    #[serde(default)]
    pub group_item_title: String,
    /// RFC 3339 date-times or dates.
    #[serde(default)]
    pub start_date: Option<String>,
    #[serde(default)]
    pub end_date: Option<String>,
    /// A liquidity-reward program (docs/rewards.md).
    #[serde(default)]
    pub rewards: Option<RewardSpec>,
}

fn default_tick() -> String {
    "0.01".into()
}
fn default_min() -> String {
    "5".into()
}

pub(crate) fn opt_date(d: &Option<String>) -> Result<Option<u64>, BadDate> {
    d.as_deref().map(parse_date).transpose()
}

impl MarketSpec {
    /// Validates into a market (idx assigned by the engine).
    pub fn into_market(self) -> Result<Market, String> {
        if self.question.trim().is_empty() {
            return Err("question is required".into());
        }
        let tick = Price::parse(&self.tick_size).map_err(|_| "invalid tick_size")?;
        if ![1000, 100, 10, 1].contains(&tick.units()) {
            return Err("tick_size must be 0.1, 0.01, 0.001 or 0.0001".into());
        }
        let min = Amount::parse(&self.min_order_size).map_err(|_| "invalid min_order_size")?;
        let [a, b]: [Token; 2] = self.tokens.try_into().map_err(|_| "a binary market has exactly two tokens")?;
        if self.condition_id.is_empty() || a.token_id.is_empty() || b.token_id.is_empty() || a.token_id == b.token_id {
            return Err("condition_id and two distinct token_ids are required".into());
        }
        for t in [&a.token_id, &b.token_id] {
            if alloy_primitives::U256::from_str_radix(t, 10).is_err() {
                return Err("token_id must be a decimal uint256".into());
            }
        }
        Ok(Market {
            slug: self.slug,
            question: self.question,
            neg_risk: self.neg_risk,
            neg_risk_market_id: self.neg_risk_market_id,
            ..Market::binary(&self.condition_id, a, b, tick, min)
        })
    }

    /// The catalogue metadata this spec carries, for the event `event_id` (0: none), over
    /// what the market already had (a field the spec leaves empty keeps its value).
    pub fn meta(&self, event_id: u64, had: Option<&MarketMeta>) -> Result<MarketMeta, BadDate> {
        let old = had.cloned().unwrap_or_default();
        let text = |new: &String, old: String| if new.is_empty() { old } else { new.clone() };
        Ok(MarketMeta {
            condition_id: self.condition_id.clone(),
            event_id: Some(event_id).filter(|&e| e > 0).or(old.event_id),
            description: text(&self.description, old.description),
            resolution_source: text(&self.resolution_source, old.resolution_source),
            image: text(&self.image, old.image),
            icon: text(&self.icon, old.icon),
            group_item_title: text(&self.group_item_title, old.group_item_title),
            start_date: opt_date(&self.start_date)?.or(old.start_date),
            end_date: opt_date(&self.end_date)?.or(old.end_date),
            resolution: old.resolution,
            resolved_outcome: old.resolved_outcome,
            created_at: if old.created_at > 0 { old.created_at } else { now_secs() },
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum MarketError {
    /// The spec makes no market.
    #[error("{0}")]
    Invalid(String),
    #[error("market already exists")]
    Exists,
    #[error(transparent)]
    BadDate(#[from] BadDate),
    #[error(transparent)]
    Rewards(#[from] IncentiveError),
    #[error(transparent)]
    Onchain(#[from] OnchainError),
    #[error(transparent)]
    Engine(EngineError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A market [`create`] made (or found it had made).
pub struct Created {
    pub market: Market,
    /// Chain mode: the question its condition is prepared for.
    pub question_id: Option<B256>,
}

/// Creates a market. In chain mode the condition and its tokens are made on chain first
/// (`onchain::make_market`), and a retry with the same question id answers the market it
/// made.
pub async fn create(s: &AppState, spec: MarketSpec) -> Result<Created, MarketError> {
    write(s, spec, s.chain.is_some()).await
}

/// `ours`: an existing market with the spec's condition and tokens is the one this spec
/// made before (a retried chain-mode creation, a demo catalogue loaded again after a stop
/// before it was marked loaded); its metadata and program are written again.
async fn write(s: &AppState, mut spec: MarketSpec, ours: bool) -> Result<Created, MarketError> {
    let question_id = match &s.chain {
        Some(_) => Some(onchain::make_market(s, &mut spec).await?),
        None => None,
    };
    let meta = spec.meta(0, s.catalogue.meta(&spec.condition_id).as_deref())?;
    let program = spec.rewards.as_ref().map(|r| r.config(&spec.condition_id)).transpose()?;
    let m = spec.into_market().map_err(MarketError::Invalid)?;
    let (condition_id, tokens) = (m.condition_id.clone(), m.tokens.clone());
    let market = match s.engine.create_market(m).await {
        Ok(m) => m,
        Err(EngineError::Exists) if ours => match s.registry.condition(&condition_id) {
            Some(v) if v.market.tokens == tokens => v.market.clone(),
            _ => return Err(MarketError::Exists),
        },
        Err(EngineError::Exists) => return Err(MarketError::Exists),
        Err(e) => return Err(MarketError::Engine(e)),
    };
    put_meta(s, meta).await?;
    if let Some(c) = program {
        incentives::set_config(s, c).await?;
    }
    Ok(Created { market, question_id })
}

/// Loads the demo catalogue — `catalogue` (markets) and `events.json` beside it (series
/// and events) — once into a data directory. Ledger mode only: its tokens exist on no
/// chain.
pub async fn load_demo(s: &AppState, catalogue: &Path) -> anyhow::Result<()> {
    if !s.store.demo_loaded(false)? {
        let specs: Vec<MarketSpec> = read_or_default(catalogue, "no demo catalogue loaded")?;
        let n = specs.len();
        for spec in specs {
            write(s, spec, true).await.context("catalogue")?;
        }
        s.store.set_demo_loaded(false)?;
        tracing::info!(markets = n, "demo catalogue loaded");
    }
    if !s.store.demo_loaded(true)? {
        let file: EventsFile = read_or_default(&catalogue.with_file_name("events.json"), "no demo events loaded")?;
        let (ns, ne) = (file.series.len(), file.events.len());
        for series in file.series {
            writes::add_series(s, series).await.context("catalogue series")?;
        }
        for event in file.events {
            writes::add_event(s, event).await.context("catalogue event")?;
        }
        s.store.set_demo_loaded(true)?;
        tracing::info!(series = ns, events = ne, "demo events loaded");
    }
    Ok(())
}

/// The demo catalogue's series and events.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct EventsFile {
    #[serde(default)]
    series: Vec<writes::SeriesInput>,
    #[serde(default)]
    events: Vec<writes::EventInput>,
}

/// `path` parsed, or the default (with a warning naming `missing`) when it cannot be read.
fn read_or_default<T: serde::de::DeserializeOwned + Default>(path: &Path, missing: &str) -> anyhow::Result<T> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).with_context(|| format!("parse {}", path.display())),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "{missing}");
            Ok(T::default())
        }
    }
}
