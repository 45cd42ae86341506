//! Bonds and agent resolution (SPEC §1.4, §2.13, §3.4–3.5, §4.4; docs/resolution.md).
//!
//! An agent escrows collateral as a bond on a market (`POST /bonds/post`, adding up per
//! market). With a bond that meets its cluster's requirement it may propose the market's
//! outcome (`POST /resolution/propose`): the market goes RESOLVING. Within the cooldown
//! (24 h by default) another bonded agent may dispute it (`POST /resolution/dispute`),
//! which blocks it until the operator resolves it. The resolution worker moves undisputed
//! RESOLVING markets to RESOLVED once the cooldown is over. Resolving a market stops its
//! trading, cancels its open orders, makes redeem possible and returns the bonds (a
//! disputed market's losing party forfeits its bond to the other).

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json as j, Value};
use warp::http::StatusCode;
use warp::Filter;

use crate::api::{authenticate, json, req, respond, with_state, ApiError, ApiResult, AppState, Req, Routes};
use crate::catalogue::{fmt_date, MarketMeta, ResolutionStatus};
use crate::commit::views::MarketView;
use crate::domain::{fmt_amount, now_secs, COLLATERAL};
use crate::engine::{EngineError, LedgerChange};
use crate::store::{cf, encode, Batch, Store, StoreError};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum BondStatus {
    Posted,
    Released,
    Slashed,
}

impl BondStatus {
    fn name(self) -> &'static str {
        match self {
            BondStatus::Posted => "POSTED",
            BondStatus::Released => "RELEASED",
            BondStatus::Slashed => "SLASHED",
        }
    }
}

/// An agent's bond on one market.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bond {
    pub agent: String,
    pub condition_id: String,
    pub cluster_id: u64,
    /// Escrowed collateral, micro-units.
    pub amount: u64,
    pub status: BondStatus,
    pub posted_at: u64,
}

impl Bond {
    fn to_json(&self) -> Value {
        j!({
            "conditionId": self.condition_id,
            "clusterId": self.cluster_id,
            "agent": self.agent,
            "amount": self.amount.to_string(),
            "status": self.status.name(),
            "postedAt": fmt_date(self.posted_at),
        })
    }
}

/// A market's proposed resolution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    pub condition_id: String,
    pub outcome: u8,
    pub proposer: String,
    pub proposed_at: u64,
    pub disputed_by: Option<String>,
    pub disputed_at: Option<u64>,
    pub resolved: bool,
}

pub(crate) fn bond_key(agent: &str, condition_id: &str) -> Vec<u8> {
    format!("b/{agent}/{condition_id}").into_bytes()
}
fn market_bond_key(condition_id: &str, agent: &str) -> Vec<u8> {
    format!("m/{condition_id}/{agent}").into_bytes()
}
fn proposal_key(condition_id: &str) -> Vec<u8> {
    format!("r/{condition_id}").into_bytes()
}
fn cluster_key(condition_id: &str) -> Vec<u8> {
    format!("k/{condition_id}").into_bytes()
}

/// The cluster a market belongs to (the first configured one unless the operator
/// assigned another).
pub fn cluster_of(s: &AppState, condition_id: &str) -> Result<u64, StoreError> {
    Ok(s.store.get::<u64>(cf::BONDS, &cluster_key(condition_id))?.unwrap_or_else(|| default_cluster(s)))
}

fn default_cluster(s: &AppState) -> u64 {
    s.config.bond_clusters.first().map_or(0, |c| c.id)
}

/// What a cluster requires of a bond, micro-units (None: no such cluster).
fn requirement(s: &AppState, cluster: u64) -> Option<u64> {
    s.config.bond_clusters.iter().find(|c| c.id == cluster).map(|c| c.required.saturating_mul(1_000_000))
}

fn bonds_of_market(s: &AppState, condition_id: &str) -> Result<Vec<Bond>, StoreError> {
    let mut agents = Vec::new();
    s.store.walk(cf::BONDS, format!("m/{condition_id}/").as_bytes(), None, false, |k, _| {
        if let Some(a) = std::str::from_utf8(k).ok().and_then(|k| k.rsplit('/').next()) {
            agents.push(a.to_string());
        }
        ControlFlow::Continue(())
    })?;
    let mut out = Vec::new();
    for a in agents {
        if let Some(b) = s.store.get::<Bond>(cf::BONDS, &bond_key(&a, condition_id))? {
            out.push(b);
        }
    }
    Ok(out)
}

fn market(s: &AppState, condition_id: &str) -> Result<Arc<MarketView>, ApiError> {
    s.registry.condition(condition_id).ok_or_else(|| ApiError::not_found("market not found"))
}

/// Whether a market is closed to trading: closed in the engine, or resolved.
pub fn is_closed(s: &AppState, view: &MarketView) -> bool {
    view.market.closed
        || s.catalogue.meta(&view.market.condition_id).is_some_and(|m| m.resolution == Some(ResolutionStatus::Resolved))
}

// ---- HTTP ----------------------------------------------------------------------------

pub fn routes(state: Arc<AppState>) -> Routes {
    let s = move || with_state(state.clone());
    let post = warp::path!("bonds" / "post")
        .and(warp::post())
        .and(req())
        .and(s())
        .then(|r, s| async move { respond(post_bond(s, r).await) });
    let agent = warp::path!("bonds" / "agent" / String)
        .and(warp::get())
        .and(s())
        .map(|a: String, s: Arc<AppState>| respond(agent_bonds(&s, &a)));
    let by_market = warp::path!("bonds" / "market" / String)
        .and(warp::get())
        .and(s())
        .map(|c: String, s: Arc<AppState>| respond(market_bonds(&s, &c)));
    let cluster = warp::path!("bonds" / "cluster" / String / "requirement")
        .and(warp::get())
        .and(s())
        .map(|c: String, s: Arc<AppState>| respond(cluster_requirement(&s, &c)));
    let propose = warp::path!("resolution" / "propose")
        .and(warp::post())
        .and(req())
        .and(s())
        .then(|r, s| async move { respond(propose(s, r).await) });
    let dispute = warp::path!("resolution" / "dispute")
        .and(warp::post())
        .and(req())
        .and(s())
        .then(|r, s| async move { respond(dispute(s, r).await) });
    post.or(agent).unify().or(by_market).unify().or(cluster).unify().or(propose).unify().or(dispute).unify().boxed()
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BondBody {
    condition_id: String,
    /// Base units (micro-units) as an integer string.
    amount: String,
}

/// POST /bonds/post: escrows collateral from the key's address into its bond on the
/// market (adding to what it already posted).
async fn post_bond(s: Arc<AppState>, r: Req) -> ApiResult {
    let key = authenticate(&s, &r)?;
    let b: BondBody = r.json()?;
    let amount = crate::api::ctf::amount(Some(&b.amount))?;
    let view = market(&s, &b.condition_id)?;
    if is_closed(&s, &view) {
        return Err(ApiError::bad("market is already resolved"));
    }
    let _one = s.bonds.lock().await;
    let agent = key.address.to_string();
    let now = now_secs();
    let mut bond = match s.store.get::<Bond>(cf::BONDS, &bond_key(&agent, &b.condition_id))? {
        Some(x) if x.status == BondStatus::Posted => x,
        _ => Bond {
            agent: agent.clone(),
            condition_id: b.condition_id.clone(),
            cluster_id: cluster_of(&s, &b.condition_id)?,
            amount: 0,
            status: BondStatus::Posted,
            posted_at: now,
        },
    };
    bond.amount = bond.amount.checked_add(amount).ok_or_else(|| ApiError::bad("amount too large"))?;
    bond.posted_at = now;
    let mut records = Batch::default();
    post_bond_records(&mut records, &bond);
    match s.engine.transfer(agent, vec![(COLLATERAL.to_string(), LedgerChange::Debit(amount))], records).await {
        Ok(_) => json(&bond.to_json()),
        Err(EngineError::Rejected(_)) => Err(ApiError::bad("not enough balance / allowance")),
        Err(e) => Err(e.into()),
    }
}

/// The writes of a posted bond: the bond and the market's index of its agents.
pub(crate) fn post_bond_records(batch: &mut Batch, bond: &Bond) {
    batch.put(cf::BONDS, bond_key(&bond.agent, &bond.condition_id), encode(bond));
    batch.put(cf::BONDS, market_bond_key(&bond.condition_id, &bond.agent), Vec::new());
}

fn agent_bonds(s: &AppState, address: &str) -> ApiResult {
    let a = crate::auth::normalize_address(address).ok_or_else(|| ApiError::bad("address must be a 0x address"))?;
    let mut out = Vec::new();
    s.store.try_walk::<ApiError>(cf::BONDS, format!("b/{a}/").as_bytes(), None, false, |_, v| {
        out.push(Store::decode_value::<Bond>(cf::BONDS, v)?.to_json());
        Ok(ControlFlow::Continue(()))
    })?;
    json(&j!({ "bonds": out }))
}

/// GET /bonds/market/{condition_id}: the bond backing the market (the total posted and
/// each agent's bond) and its resolution proposal.
fn market_bonds(s: &AppState, condition_id: &str) -> ApiResult {
    market(s, condition_id)?;
    let bonds = bonds_of_market(s, condition_id)?;
    let cluster = cluster_of(s, condition_id)?;
    let total: u64 = bonds.iter().filter(|b| b.status == BondStatus::Posted).map(|b| b.amount).sum();
    let proposal = s.store.get::<Proposal>(cf::BONDS, &proposal_key(condition_id))?;
    let meta = s.catalogue.meta(condition_id);
    json(&j!({
        "conditionId": condition_id,
        "clusterId": cluster,
        "requiredAmount": requirement(s, cluster).unwrap_or(0).to_string(),
        "totalAmount": total.to_string(),
        "asset": COLLATERAL,
        "bonds": bonds.iter().map(Bond::to_json).collect::<Vec<_>>(),
        "resolution": proposal.map(|p| proposal_json(s, &p, meta.as_deref())),
    }))
}

fn proposal_json(s: &AppState, p: &Proposal, meta: Option<&MarketMeta>) -> Value {
    let status = match meta.and_then(|m| m.resolution) {
        Some(ResolutionStatus::Resolved) => "RESOLVED",
        _ => "RESOLVING",
    };
    let outcome = s.registry.condition(&p.condition_id).map(|v| v.market.tokens[p.outcome as usize].outcome.clone());
    j!({
        "status": status,
        "proposedOutcome": outcome,
        "proposer": p.proposer,
        "proposedAt": fmt_date(p.proposed_at),
        "disputeDeadline": fmt_date(p.proposed_at + s.config.resolution_cooldown_secs),
        "disputed": p.disputed_by.is_some(),
        "disputedBy": p.disputed_by,
    })
}

fn cluster_requirement(s: &AppState, id: &str) -> ApiResult {
    let id: u64 = id.parse().map_err(|_| ApiError::bad("cluster_id must be an integer"))?;
    let required = requirement(s, id).ok_or_else(|| ApiError::not_found("cluster not found"))?;
    json(&j!({ "clusterId": id, "requiredAmount": required.to_string(), "asset": COLLATERAL }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ProposeBody {
    condition_id: String,
    outcome: String,
}

/// The agent's POSTED bond on a market, if it meets the cluster's requirement.
fn qualified(s: &AppState, agent: &str, condition_id: &str, action: &str) -> Result<(), ApiError> {
    let need = requirement(s, cluster_of(s, condition_id)?).unwrap_or(0);
    let have = s
        .store
        .get::<Bond>(cf::BONDS, &bond_key(agent, condition_id))?
        .filter(|b| b.status == BondStatus::Posted)
        .map_or(0, |b| b.amount);
    if have < need.max(1) {
        return Err(ApiError::bad(format!("a bond of at least {} is required to {action}", fmt_amount(need.max(1)))));
    }
    Ok(())
}

/// POST /resolution/propose: a bonded agent proposes the winning outcome; the market
/// goes RESOLVING and the cooldown starts.
async fn propose(s: Arc<AppState>, r: Req) -> ApiResult {
    let key = authenticate(&s, &r)?;
    let b: ProposeBody = r.json()?;
    let view = market(&s, &b.condition_id)?;
    let outcome = view
        .market
        .tokens
        .iter()
        .position(|t| t.outcome.eq_ignore_ascii_case(&b.outcome) || t.token_id == b.outcome)
        .ok_or_else(|| ApiError::bad("outcome must name one of the market's outcomes"))? as u8;
    let _one = s.bonds.lock().await;
    let meta = crate::catalogue::routes::meta_or_new(&s, &b.condition_id);
    match meta.resolution {
        Some(ResolutionStatus::Resolved) => return Err(ApiError::bad("market is already resolved")),
        Some(ResolutionStatus::Resolving) => return Err(ApiError::bad("market already has a proposal")),
        None => {}
    }
    if let Some(a) = crate::auctions::auction_of(&s, &b.condition_id)? {
        if !a.closed {
            return Err(ApiError::bad("the question auction is still open"));
        }
        if a.winner.as_deref().is_some_and(|w| *w != *key.address) {
            return Err(ApiError::bad("only the question auction's winner may propose"));
        }
    }
    qualified(&s, &key.address, &b.condition_id, "propose")?;
    let p = Proposal {
        condition_id: b.condition_id.clone(),
        outcome,
        proposer: key.address.to_string(),
        proposed_at: now_secs(),
        disputed_by: None,
        disputed_at: None,
        resolved: false,
    };
    let mut batch = Batch::default();
    batch.put(cf::BONDS, proposal_key(&b.condition_id), encode(&p));
    s.commit(batch).await?;
    let meta = MarketMeta { resolution: Some(ResolutionStatus::Resolving), resolved_outcome: None, ..meta };
    crate::catalogue::routes::put_meta(&s, meta.clone()).await?;
    json(&j!({ "conditionId": b.condition_id, "resolution": proposal_json(&s, &p, Some(&meta)) }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DisputeBody {
    condition_id: String,
}

/// POST /resolution/dispute: within the cooldown, another bonded agent blocks the
/// proposal; the operator then resolves the market.
async fn dispute(s: Arc<AppState>, r: Req) -> ApiResult {
    let key = authenticate(&s, &r)?;
    let b: DisputeBody = r.json()?;
    market(&s, &b.condition_id)?;
    let _one = s.bonds.lock().await;
    let p = s.store.get::<Proposal>(cf::BONDS, &proposal_key(&b.condition_id))?;
    let Some(mut p) = p.filter(|p| !p.resolved) else {
        return Err(ApiError::bad("market is not resolving"));
    };
    if p.disputed_by.is_some() {
        return Err(ApiError::new(StatusCode::CONFLICT, "market already disputed"));
    }
    let now = now_secs();
    if now >= p.proposed_at + s.config.resolution_cooldown_secs {
        return Err(ApiError::bad("dispute window has closed"));
    }
    if *p.proposer == *key.address {
        return Err(ApiError::bad("the proposer cannot dispute its own proposal"));
    }
    qualified(&s, &key.address, &b.condition_id, "dispute")?;
    p.disputed_by = Some(key.address.to_string());
    p.disputed_at = Some(now);
    let mut batch = Batch::default();
    batch.put(cf::BONDS, proposal_key(&b.condition_id), encode(&p));
    s.commit(batch).await?;
    let meta = s.catalogue.meta(&b.condition_id);
    json(&j!({ "conditionId": b.condition_id, "resolution": proposal_json(&s, &p, meta.as_deref()) }))
}

// ---- resolving ------------------------------------------------------------------------

/// Resolves a market for `winner`: stops its trading and cancels its open orders, records
/// RESOLVED with the winner (redeem reads it), and settles its bonds. Safe to repeat: each
/// step is skipped once done.
pub fn resolve(s: &AppState, condition_id: &str, winner: u8) -> Result<(), String> {
    let e = |x: ApiError| x.message;
    let _one = s.bonds.blocking_lock();
    s.engine.blocking().close_market(condition_id.to_string()).map_err(|x| format!("{x:?}"))?;
    let proposal = s.store.get::<Proposal>(cf::BONDS, &proposal_key(condition_id)).map_err(|x| x.to_string())?;
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
        records.put(cf::BONDS, bond_key(&b.agent, condition_id), encode(&b));
        s.engine
            .blocking()
            .transfer(b.agent.clone(), vec![(COLLATERAL.to_string(), LedgerChange::Credit(back))], records)
            .map_err(|x| format!("bond of {}: {x:?}", b.agent))?;
    }
    let mut meta = crate::catalogue::routes::meta_or_new(s, condition_id);
    meta.resolution = Some(ResolutionStatus::Resolved);
    meta.resolved_outcome = Some(winner);
    crate::catalogue::routes::put_meta_blocking(s, meta).map_err(e)?;
    if let Some(mut p) = proposal {
        p.resolved = true;
        let mut batch = Batch::default();
        batch.put(cf::BONDS, proposal_key(condition_id), encode(&p));
        s.commit_blocking(batch).map_err(e)?;
    }
    Ok(())
}

/// The resolution worker's run: resolves every undisputed proposal whose cooldown is over.
pub fn run_due(s: &AppState) -> Result<Vec<String>, String> {
    let now = now_secs();
    {
        let _one = s.bonds.blocking_lock();
        crate::auctions::close_due(s, now).map_err(|e| format!("question auctions: {}", e.message))?;
    }
    let mut due = BTreeMap::new();
    s.store
        .walk(cf::BONDS, b"r/", None, false, |_, v| {
            if let Ok(p) = Store::decode_value::<Proposal>(cf::BONDS, v) {
                if !p.resolved && p.disputed_by.is_none() && now >= p.proposed_at + s.config.resolution_cooldown_secs {
                    due.insert(p.condition_id.clone(), p.outcome);
                }
            }
            ControlFlow::Continue(())
        })
        .map_err(|e| e.to_string())?;
    let mut done = Vec::new();
    for (c, w) in due {
        resolve(s, &c, w)?;
        done.push(c);
    }
    Ok(done)
}

/// POST /internal/bonds/cluster {condition_id, cluster_id}: assigns a market to a
/// configured bond cluster.
pub async fn assign_cluster(s: Arc<AppState>, r: Req) -> ApiResult {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct B {
        condition_id: String,
        cluster_id: u64,
    }
    let b: B = r.json()?;
    market(&s, &b.condition_id)?;
    if requirement(&s, b.cluster_id).is_none() {
        return Err(ApiError::not_found("cluster not found"));
    }
    let mut batch = Batch::default();
    batch.put(cf::BONDS, cluster_key(&b.condition_id), encode(&b.cluster_id));
    s.commit(batch).await?;
    json(&j!({ "conditionId": b.condition_id, "clusterId": b.cluster_id }))
}
