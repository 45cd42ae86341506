//! Bonds and agent resolution (SPEC §1.4, §2.13, §3.4–3.5, §4.4; docs/reference/resolution.md).
//!
//! An agent escrows collateral as a bond on a market (`POST /bonds/post`, adding up per
//! market). With a bond that meets its cluster's requirement it may propose the market's
//! outcome (`POST /resolution/propose`): the market goes RESOLVING. Within the cooldown
//! (24 h by default) another bonded agent may dispute it (`POST /resolution/dispute`),
//! which blocks it until the operator resolves it. The resolution worker moves undisputed
//! RESOLVING markets to RESOLVED once the cooldown is over. Resolving a market stops its
//! trading, cancels its open orders, makes redeem possible and returns the bonds (a
//! disputed market's losing party forfeits its bond to the other).
//! Question auctions ([`auctions`]) decide which agent may propose on a market.

pub mod auctions;
pub mod payouts;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::app::catalogue::{MarketMeta, ResolutionStatus};
use crate::app::AppState;
use crate::commit::views::MarketView;
use crate::domain::{fmt_amount, now_secs, Amount, COLLATERAL};
use crate::engine::{EngineError, LedgerChange};
use crate::store::{Batch, StoreError};

/// The resolution's state: the lock that serialises bond and resolution changes (handlers,
/// auctions and the resolution worker).
#[derive(Default)]
pub struct Resolution {
    pub changes: tokio::sync::Mutex<()>,
}

/// What a bond or resolution service refuses (the routes give each its SPEC §7 reply).
#[derive(Debug, thiserror::Error)]
pub enum ResolutionError {
    #[error("market not found")]
    NoMarket,
    #[error("cluster not found")]
    NoCluster,
    #[error("market is already resolved")]
    Resolved,
    #[error("amount too large")]
    TooLarge,
    #[error("not enough balance / allowance")]
    NotEnoughBalance,
    #[error("outcome must name one of the market's outcomes")]
    NoSuchOutcome,
    #[error("market already has a proposal")]
    HasProposal,
    #[error("the question auction is still open")]
    AuctionOpen,
    #[error("only the question auction's winner may propose")]
    NotAuctionWinner,
    #[error("a bond of at least {} is required to {action}", fmt_amount(*.need))]
    BondTooSmall { need: u64, action: &'static str },
    #[error("market is not resolving")]
    NotResolving,
    #[error("the market has not ended: proposals open at its end date")]
    NotEnded,
    #[error("market already disputed")]
    Disputed,
    #[error("dispute window has closed")]
    DisputeClosed,
    #[error("the proposer cannot dispute its own proposal")]
    OwnProposal,
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Engine(#[from] EngineError),
}

pub use crate::domain::resolution::{Bond, BondStatus, Proposal};

/// The cluster a market belongs to (the first configured one unless the operator
/// assigned another).
pub fn cluster_of(s: &AppState, condition_id: &str) -> Result<u64, StoreError> {
    Ok(s.store.bond_cluster(condition_id)?.unwrap_or_else(|| default_cluster(s)))
}

fn default_cluster(s: &AppState) -> u64 {
    s.config.bond_clusters.first().map_or(0, |c| c.id)
}

/// What a cluster requires of a bond, micro-units (None: no such cluster).
fn requirement(s: &AppState, cluster: u64) -> Option<u64> {
    s.config.bond_clusters.iter().find(|c| c.id == cluster).map(|c| c.required.saturating_mul(1_000_000))
}

fn bonds_of_market(s: &AppState, condition_id: &str) -> Result<Vec<Bond>, StoreError> {
    let mut out = Vec::new();
    for a in s.store.bonded_agents(condition_id)? {
        if let Some(b) = s.store.bond(&a, condition_id)? {
            out.push(b);
        }
    }
    Ok(out)
}

fn market(s: &AppState, condition_id: &str) -> Result<Arc<MarketView>, ResolutionError> {
    s.registry.condition(condition_id).ok_or(ResolutionError::NoMarket)
}

/// Whether a market is closed to trading: closed in the engine, or resolved.
pub fn is_closed(s: &AppState, view: &MarketView) -> bool {
    view.market.closed
        || s.catalogue.meta(&view.market.condition_id).is_some_and(|m| m.resolution == Some(ResolutionStatus::Resolved))
}

// ---- services --------------------------------------------------------------------------

/// Escrows `amount` of collateral from `agent` into its bond on the market (adding to
/// what it already posted).
pub async fn post_bond(s: &AppState, agent: String, condition_id: &str, amount: u64) -> Result<Bond, ResolutionError> {
    let view = market(s, condition_id)?;
    if is_closed(s, &view) {
        return Err(ResolutionError::Resolved);
    }
    let _one = s.resolution.changes.lock().await;
    let now = now_secs();
    let mut bond = match s.store.bond(&agent, condition_id)? {
        Some(x) if x.status == BondStatus::Posted => x,
        _ => Bond {
            agent: agent.clone(),
            condition_id: condition_id.to_string(),
            cluster_id: cluster_of(s, condition_id)?,
            amount: 0,
            status: BondStatus::Posted,
            posted_at: now,
        },
    };
    bond.amount = bond.amount.checked_add(amount).ok_or(ResolutionError::TooLarge)?;
    bond.posted_at = now;
    let mut records = Batch::default();
    post_bond_records(&mut records, &bond);
    match s.engine.transfer(agent, vec![(COLLATERAL.to_string(), LedgerChange::Debit(Amount(amount)))], records).await {
        Ok(_) => Ok(bond),
        Err(EngineError::Rejected(_)) => Err(ResolutionError::NotEnoughBalance),
        Err(e) => Err(e.into()),
    }
}

/// The writes of a posted bond: the bond and the market's index of its agents.
pub(crate) fn post_bond_records(batch: &mut Batch, bond: &Bond) {
    batch.post_bond(bond);
}

/// Every bond an agent (a normalized address) has posted.
pub fn agent_bonds(s: &AppState, agent: &str) -> Result<Vec<Bond>, StoreError> {
    s.store.bonds_of_agent(agent)
}

/// A proposal as it is shown: its state, the outcome's name and the dispute deadline.
pub struct ProposalView {
    pub resolved: bool,
    pub outcome: Option<String>,
    pub proposer: String,
    pub proposed_at: u64,
    pub dispute_deadline: u64,
    pub disputed_by: Option<String>,
}

fn proposal_view(s: &AppState, p: &Proposal, meta: Option<&MarketMeta>) -> ProposalView {
    let outcome = s.registry.condition(&p.condition_id).map(|v| v.market.tokens[p.outcome as usize].outcome.clone());
    ProposalView {
        resolved: meta.and_then(|m| m.resolution) == Some(ResolutionStatus::Resolved),
        outcome,
        proposer: p.proposer.clone(),
        proposed_at: p.proposed_at,
        dispute_deadline: p.proposed_at + s.config.resolution_cooldown_secs,
        disputed_by: p.disputed_by.clone(),
    }
}

/// The bond backing a market: its cluster, what the cluster requires, the total posted,
/// each agent's bond and the resolution proposal.
pub struct MarketBonds {
    pub cluster: u64,
    pub required: u64,
    pub total: u64,
    pub bonds: Vec<Bond>,
    pub proposal: Option<ProposalView>,
}

pub fn market_bonds(s: &AppState, condition_id: &str) -> Result<MarketBonds, ResolutionError> {
    market(s, condition_id)?;
    let bonds = bonds_of_market(s, condition_id)?;
    let cluster = cluster_of(s, condition_id)?;
    let total: u64 = bonds.iter().filter(|b| b.status == BondStatus::Posted).map(|b| b.amount).sum();
    let proposal = s.store.proposal(condition_id)?;
    let meta = s.catalogue.meta(condition_id);
    Ok(MarketBonds {
        cluster,
        required: requirement(s, cluster).unwrap_or(0),
        total,
        bonds,
        proposal: proposal.map(|p| proposal_view(s, &p, meta.as_deref())),
    })
}

/// What a configured cluster requires of a bond, micro-units.
pub fn cluster_requirement(s: &AppState, cluster: u64) -> Result<u64, ResolutionError> {
    requirement(s, cluster).ok_or(ResolutionError::NoCluster)
}

/// The agent's POSTED bond on a market, if it meets the cluster's requirement.
fn qualified(s: &AppState, agent: &str, condition_id: &str, action: &'static str) -> Result<(), ResolutionError> {
    let need = requirement(s, cluster_of(s, condition_id)?).unwrap_or(0);
    let have = s.store.bond(agent, condition_id)?.filter(|b| b.status == BondStatus::Posted).map_or(0, |b| b.amount);
    if have < need.max(1) {
        return Err(ResolutionError::BondTooSmall { need: need.max(1), action });
    }
    Ok(())
}

/// A bonded agent proposes the winning outcome (named, or by token ID); the market goes
/// RESOLVING and the cooldown starts.
pub async fn propose(
    s: &AppState,
    agent: &str,
    condition_id: &str,
    outcome: &str,
) -> Result<ProposalView, ResolutionError> {
    let view = market(s, condition_id)?;
    let outcome = view
        .market
        .tokens
        .iter()
        .position(|t| t.outcome.eq_ignore_ascii_case(outcome) || t.token_id == outcome)
        .ok_or(ResolutionError::NoSuchOutcome)? as u8;
    let _one = s.resolution.changes.lock().await;
    let meta = crate::app::catalogue::meta_or_new(s, condition_id);
    match meta.resolution {
        Some(ResolutionStatus::Resolved) => return Err(ResolutionError::Resolved),
        Some(ResolutionStatus::Resolving) => return Err(ResolutionError::HasProposal),
        None => {}
    }
    // What a market asks is answered once it has ended, not before (a market without an
    // end date may be proposed on at any time).
    if meta.end_date.is_some_and(|end| now_secs() < end) {
        return Err(ResolutionError::NotEnded);
    }
    if let Some(a) = auctions::auction_of(s, condition_id)? {
        if !a.closed {
            return Err(ResolutionError::AuctionOpen);
        }
        if a.winner.as_deref().is_some_and(|w| w != agent) {
            return Err(ResolutionError::NotAuctionWinner);
        }
    }
    qualified(s, agent, condition_id, "propose")?;
    let p = Proposal {
        condition_id: condition_id.to_string(),
        outcome,
        proposer: agent.to_string(),
        proposed_at: now_secs(),
        disputed_by: None,
        disputed_at: None,
        resolved: false,
    };
    let mut batch = Batch::default();
    batch.put_proposal(&p);
    s.commit(batch).await?;
    let meta = MarketMeta { resolution: Some(ResolutionStatus::Resolving), resolved_outcome: None, ..meta };
    crate::app::catalogue::put_meta(s, meta.clone()).await?;
    Ok(proposal_view(s, &p, Some(&meta)))
}

/// Within the cooldown, another bonded agent blocks the proposal; the operator then
/// resolves the market.
pub async fn dispute(s: &AppState, agent: &str, condition_id: &str) -> Result<ProposalView, ResolutionError> {
    market(s, condition_id)?;
    let _one = s.resolution.changes.lock().await;
    let p = s.store.proposal(condition_id)?;
    let Some(mut p) = p.filter(|p| !p.resolved) else {
        return Err(ResolutionError::NotResolving);
    };
    if p.disputed_by.is_some() {
        return Err(ResolutionError::Disputed);
    }
    let now = now_secs();
    if now >= p.proposed_at + s.config.resolution_cooldown_secs {
        return Err(ResolutionError::DisputeClosed);
    }
    if p.proposer == agent {
        return Err(ResolutionError::OwnProposal);
    }
    qualified(s, agent, condition_id, "dispute")?;
    p.disputed_by = Some(agent.to_string());
    p.disputed_at = Some(now);
    let mut batch = Batch::default();
    batch.put_proposal(&p);
    s.commit(batch).await?;
    let meta = s.catalogue.meta(condition_id);
    Ok(proposal_view(s, &p, meta.as_deref()))
}

/// Assigns a market to a configured bond cluster.
pub async fn assign_cluster(s: &AppState, condition_id: &str, cluster: u64) -> Result<(), ResolutionError> {
    market(s, condition_id)?;
    if requirement(s, cluster).is_none() {
        return Err(ResolutionError::NoCluster);
    }
    let mut batch = Batch::default();
    batch.put_bond_cluster(condition_id, cluster);
    s.commit(batch).await?;
    Ok(())
}

// ---- resolving ------------------------------------------------------------------------

/// Resolves a market for `winner`: stops its trading and cancels its open orders, records
/// RESOLVED with the winner (redeem reads it), settles its bonds and, in chain mode, makes
/// its payouts due to be reported on chain ([`payouts`]). Safe to repeat: each step is
/// skipped once done.
pub fn resolve(s: &AppState, condition_id: &str, winner: u8) -> Result<(), String> {
    let _one = s.resolution.changes.blocking_lock();
    s.engine.blocking().close_market(condition_id.to_string()).map_err(|x| format!("{x:?}"))?;
    let proposal = s.store.proposal(condition_id).map_err(|x| x.to_string())?;
    // A disputed market: whoever was wrong, proposer or disputer, forfeits its bond to
    // the other.
    let (loser, gainer) = match &proposal {
        Some(p) if p.disputed_by.is_some() => {
            let d = p.disputed_by.clone().expect("disputed");
            if p.outcome == winner {
                (Some(d), Some(p.proposer.clone()))
            } else {
                (Some(p.proposer.clone()), Some(d))
            }
        }
        _ => (None, None),
    };
    let bonds = bonds_of_market(s, condition_id).map_err(|x| x.to_string())?;
    // What the loser forfeits (its record keeps the amount once SLASHED, so a repeat after
    // a crash still pays the gainer in full).
    let forfeited: u64 = bonds.iter().filter(|b| Some(&b.agent) == loser.as_ref()).map(|b| b.amount).sum();
    for mut b in bonds.into_iter().filter(|b| b.status == BondStatus::Posted) {
        let slashed = Some(&b.agent) == loser.as_ref();
        let mut back = if slashed { 0 } else { b.amount };
        if Some(&b.agent) == gainer.as_ref() {
            back += forfeited;
        }
        b.status = if slashed { BondStatus::Slashed } else { BondStatus::Released };
        let mut records = Batch::default();
        records.put_bond(&b);
        s.engine
            .blocking()
            .transfer(b.agent.clone(), vec![(COLLATERAL.to_string(), LedgerChange::Credit(Amount(back)))], records)
            .map_err(|x| format!("bond of {}: {x:?}", b.agent))?;
    }
    let mut report = Batch::default();
    payouts::due(s, condition_id, winner, &mut report).map_err(|x| x.to_string())?;
    if !report.is_empty() {
        s.commit_blocking(report).map_err(|x| x.to_string())?;
    }
    let mut meta = crate::app::catalogue::meta_or_new(s, condition_id);
    meta.resolution = Some(ResolutionStatus::Resolved);
    meta.resolved_outcome = Some(winner);
    crate::app::catalogue::put_meta_blocking(s, meta).map_err(|x| x.to_string())?;
    if let Some(mut p) = proposal {
        p.resolved = true;
        let mut batch = Batch::default();
        batch.put_proposal(&p);
        s.commit_blocking(batch).map_err(|x| x.to_string())?;
    }
    Ok(())
}

/// The resolution worker's run: resolves every undisputed proposal whose cooldown is over.
pub fn run_due(s: &AppState) -> Result<Vec<String>, String> {
    let now = now_secs();
    {
        let _one = s.resolution.changes.blocking_lock();
        auctions::close_due(s, now).map_err(|e| format!("question auctions: {e}"))?;
    }
    let mut due = BTreeMap::new();
    for p in s.store.proposals().map_err(|e| e.to_string())? {
        if !p.resolved && p.disputed_by.is_none() && now >= p.proposed_at + s.config.resolution_cooldown_secs {
            due.insert(p.condition_id.clone(), p.outcome);
        }
    }
    let mut done = Vec::new();
    for (c, w) in due {
        resolve(s, &c, w)?;
        done.push(c);
    }
    Ok(done)
}
