//! Markets as the operator describes them: [`MarketSpec`] (the internal API's body and the
//! demo catalogue's entries), its checks, and [`create`], which makes the market in the
//! engine (on chain first in chain mode) with its catalogue metadata and reward program.
//! The demo catalogue in `data/` is loaded through it (`app::demo`).

use alloy_primitives::{Bytes, B256};
use serde::Deserialize;

use super::catalogue::put_meta;
use super::onchain::{chain_err, on_chain, OnchainError};
use super::rewards::{self, RewardSpec, RewardsError};
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
    /// A liquidity-reward program (docs/reference/rewards.md).
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
    #[error("market not found")]
    NotFound,
    #[error(transparent)]
    BadDate(#[from] BadDate),
    #[error(transparent)]
    Rewards(#[from] RewardsError),
    #[error(transparent)]
    Onchain(#[from] OnchainError),
    #[error(transparent)]
    Engine(EngineError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Sets a market's fee description for version 2 takers (None: no fee): durable in the
/// engine first, then published (`/clob-markets`).
pub async fn set_fees(
    s: &AppState,
    condition_id: &str,
    fees: Option<crate::domain::FeeSchedule>,
) -> Result<(), MarketError> {
    let view = s.registry.condition(condition_id).ok_or(MarketError::NotFound)?;
    s.engine.set_fees(condition_id.to_string(), fees).await.map_err(MarketError::Engine)?;
    view.set_fees(fees);
    Ok(())
}

/// A market [`create`] made (or found it had made).
pub struct Created {
    pub market: Market,
    /// Chain mode: the question its condition is prepared for.
    pub question_id: Option<B256>,
}

/// Creates a market. In chain mode the condition and its tokens are made on chain first
/// ([`make_market`]), and a retry with the same question id answers the market it
/// made.
pub async fn create(s: &AppState, spec: MarketSpec) -> Result<Created, MarketError> {
    write(s, spec, s.chain.is_some()).await
}

/// `ours`: an existing market with the spec's condition and tokens is the one this spec
/// made before (a retried chain-mode creation, a demo catalogue loaded again after a stop
/// before it was marked loaded); its metadata and program are written again.
pub(crate) async fn write(s: &AppState, mut spec: MarketSpec, ours: bool) -> Result<Created, MarketError> {
    let question_id = match &s.chain {
        Some(_) => Some(make_market(s, &mut spec).await?),
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
        rewards::set_config(s, c).await?;
    }
    Ok(Created { market, question_id })
}

/// Makes `spec`'s market on chain and fills in what the chain decided: its condition id,
/// its YES and NO token ids and, for negative risk, the adapter market. Returns the
/// question id. Bad input is refused before anything is sent.
pub async fn make_market(s: &AppState, spec: &mut MarketSpec) -> Result<B256, OnchainError> {
    let chain = &on_chain(s)?.link;
    if !spec.condition_id.is_empty() || spec.tokens.iter().any(|t| !t.token_id.is_empty()) {
        return Err(OnchainError::Invalid(
            "in chain mode the condition and its tokens are made on chain: leave condition_id and token ids out".into(),
        ));
    }
    // The outcomes' labels, when the body names them (YES first), else Yes and No.
    let outcomes = match &spec.tokens[..] {
        [] => ["Yes".to_string(), "No".to_string()],
        [yes, no] if !yes.outcome.trim().is_empty() && !no.outcome.trim().is_empty() => {
            [yes.outcome.clone(), no.outcome.clone()]
        }
        _ => return Err(OnchainError::Invalid("a binary market has exactly two outcomes, each named".into())),
    };
    let hash = |name: &str, v: &Option<String>| -> Result<Option<B256>, OnchainError> {
        v.as_deref()
            .map(|t| t.parse::<B256>().map_err(|_| OnchainError::Invalid(format!("{name} must be 32 bytes of hex"))))
            .transpose()
    };
    let question_id = hash("question_id", &spec.question_id)?;
    let market_id = hash("neg_risk_market_id", &spec.neg_risk_market_id)?;
    // The rest of the body must make a market before the chain is touched.
    let mut probe = spec.clone();
    probe.condition_id = "0x00".into();
    probe.tokens = vec![
        Token { token_id: "1".into(), outcome: "Yes".into() },
        Token { token_id: "2".into(), outcome: "No".into() },
    ];
    probe.rewards = None;
    probe.into_market().map_err(OnchainError::Invalid)?;

    let made = if spec.neg_risk {
        let mut salt = [0u8; 32];
        getrandom::getrandom(&mut salt).map_err(|e| OnchainError::Chain(e.to_string()))?;
        let metadata = Bytes::from([spec.question.as_bytes(), &salt].concat());
        chain.prepare_neg_risk(question_id, market_id, metadata).await.map_err(chain_err)?
    } else {
        if market_id.is_some() {
            return Err(OnchainError::Invalid("neg_risk_market_id is for negative-risk markets".into()));
        }
        let q = match question_id {
            Some(q) => q,
            None => {
                let mut q = [0u8; 32];
                getrandom::getrandom(&mut q).map_err(|e| OnchainError::Chain(e.to_string()))?;
                B256::from(q)
            }
        };
        chain.prepare_binary(q).await.map_err(chain_err)?
    };
    spec.condition_id = made.condition_id.to_string();
    let [yes, no] = outcomes;
    spec.tokens = vec![
        Token { token_id: made.yes.to_string(), outcome: yes },
        Token { token_id: made.no.to_string(), outcome: no },
    ];
    spec.neg_risk_market_id = made.neg_risk_market_id.map(|m| m.to_string());
    Ok(made.question_id)
}
