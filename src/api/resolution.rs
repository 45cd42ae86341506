//! Bonds' and resolution's routes (`app::resolution` has the rules): `POST /bonds/post`,
//! `GET /bonds/agent/{address}`, `/bonds/market/{condition_id}`,
//! `/bonds/cluster/{id}/requirement`, `POST /resolution/propose`, `/resolution/dispute`,
//! and the operator's `POST /internal/bonds/cluster`.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{json, Value};
use warp::http::StatusCode;
use warp::Filter;

use super::{authenticate, handle, respond, with_state, ApiError, ApiResult, Req, Routes};
use crate::app::resolution::{self, Bond, ProposalView, ResolutionError};
use crate::app::AppState;
use crate::domain::fmt_date;
use crate::domain::COLLATERAL;

impl From<ResolutionError> for ApiError {
    fn from(e: ResolutionError) -> ApiError {
        use ResolutionError as E;
        match e {
            E::Store(e) => e.into(),
            E::Engine(e) => e.into(),
            E::NoMarket | E::NoCluster => ApiError::not_found(e.to_string()),
            E::Disputed => ApiError::new(StatusCode::CONFLICT, e.to_string()),
            E::Resolved
            | E::TooLarge
            | E::NotEnoughBalance
            | E::NoSuchOutcome
            | E::HasProposal
            | E::AuctionOpen
            | E::NotAuctionWinner
            | E::BondTooSmall { .. }
            | E::NotResolving
            | E::DisputeClosed
            | E::OwnProposal
            | E::NotEnded => ApiError::bad(e.to_string()),
        }
    }
}

fn bond_json(b: &Bond) -> Value {
    json!({
        "conditionId": b.condition_id,
        "clusterId": b.cluster_id,
        "agent": b.agent,
        "amount": b.amount.to_string(),
        "status": b.status.name(),
        "postedAt": fmt_date(b.posted_at),
    })
}

fn proposal_json(p: &ProposalView) -> Value {
    json!({
        "status": if p.resolved { "RESOLVED" } else { "RESOLVING" },
        "proposedOutcome": p.outcome,
        "proposer": p.proposer,
        "proposedAt": fmt_date(p.proposed_at),
        "disputeDeadline": fmt_date(p.dispute_deadline),
        "disputed": p.disputed_by.is_some(),
        "disputedBy": p.disputed_by,
    })
}

pub fn routes(state: Arc<AppState>) -> Routes {
    let s = || with_state(state.clone());
    let post = handle(warp::path!("bonds" / "post").and(warp::post()), &state, post_bond);
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
    let propose = handle(warp::path!("resolution" / "propose").and(warp::post()), &state, propose);
    let dispute = handle(warp::path!("resolution" / "dispute").and(warp::post()), &state, dispute);
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
    super::ledger_only(&s)?;
    let key = authenticate(&s, &r)?;
    let b: BondBody = r.json()?;
    let amount = crate::app::ctf::base_amount(Some(&b.amount))?;
    let bond = resolution::post_bond(&s, key.address.to_string(), &b.condition_id, amount).await?;
    super::reply(&bond_json(&bond))
}

fn agent_bonds(s: &AppState, address: &str) -> ApiResult {
    let a = crate::auth::normalize_address(address).ok_or_else(|| ApiError::bad("address must be a 0x address"))?;
    let bonds = resolution::agent_bonds(s, &a)?;
    super::reply(&json!({ "bonds": bonds.iter().map(bond_json).collect::<Vec<_>>() }))
}

/// GET /bonds/market/{condition_id}: the bond backing the market (the total posted and
/// each agent's bond) and its resolution proposal.
fn market_bonds(s: &AppState, condition_id: &str) -> ApiResult {
    let m = resolution::market_bonds(s, condition_id)?;
    super::reply(&json!({
        "conditionId": condition_id,
        "clusterId": m.cluster,
        "requiredAmount": m.required.to_string(),
        "totalAmount": m.total.to_string(),
        "asset": COLLATERAL,
        "bonds": m.bonds.iter().map(bond_json).collect::<Vec<_>>(),
        "resolution": m.proposal.as_ref().map(proposal_json),
    }))
}

fn cluster_requirement(s: &AppState, id: &str) -> ApiResult {
    let id: u64 = id.parse().map_err(|_| ApiError::bad("cluster_id must be an integer"))?;
    let required = resolution::cluster_requirement(s, id)?;
    super::reply(&json!({ "clusterId": id, "requiredAmount": required.to_string(), "asset": COLLATERAL }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ProposeBody {
    condition_id: String,
    outcome: String,
}

/// POST /resolution/propose: a bonded agent proposes the winning outcome.
async fn propose(s: Arc<AppState>, r: Req) -> ApiResult {
    let key = authenticate(&s, &r)?;
    let b: ProposeBody = r.json()?;
    let p = resolution::propose(&s, &key.address, &b.condition_id, &b.outcome).await?;
    super::reply(&json!({ "conditionId": b.condition_id, "resolution": proposal_json(&p) }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DisputeBody {
    condition_id: String,
}

/// POST /resolution/dispute: within the cooldown, another bonded agent blocks the proposal.
async fn dispute(s: Arc<AppState>, r: Req) -> ApiResult {
    let key = authenticate(&s, &r)?;
    let b: DisputeBody = r.json()?;
    let p = resolution::dispute(&s, &key.address, &b.condition_id).await?;
    super::reply(&json!({ "conditionId": b.condition_id, "resolution": proposal_json(&p) }))
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
    resolution::assign_cluster(&s, &b.condition_id, b.cluster_id).await?;
    super::reply(&json!({ "conditionId": b.condition_id, "clusterId": b.cluster_id }))
}
