//! Question auctions (SPEC §1 names them without a shape; docs/resolution.md): agents bid
//! bonds to become the resolver of a new question.
//!
//! The operator opens an auction on a market (`POST /internal/auctions`). Until it closes,
//! agents bid (`POST /auctions/bid`, L2): each bid escrows collateral and an agent's bids
//! add up. When the auction closes (the resolution worker, each run), the highest total
//! wins — the earlier on a tie — and becomes the market's bond, posted by the winner, who
//! alone may then propose its outcome; every other bidder is refunded. `GET
//! /auctions/{condition_id}` shows the auction.
//!
//! Closing is crash-safe: the winner's bond and the CLOSED state are one batch, and each
//! refund deletes its bid in the same batch as the credit, so a rerun refunds only what is
//! left.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json as j, Value};
use warp::http::StatusCode;
use warp::Filter;

use crate::api::{authenticate, json, req, respond, with_state, ApiError, ApiResult, AppState, Req, Routes};
use crate::catalogue::fmt_date;
use crate::domain::{now_secs, COLLATERAL};
use crate::engine::{EngineError, LedgerChange};
use crate::resolution::{post_bond_records, Bond};
use crate::store::{cf, encode, Batch, Store};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Auction {
    pub condition_id: String,
    pub opened_at: u64,
    pub closes_at: u64,
    pub closed: bool,
    pub winner: Option<String>,
    pub winning_amount: u64,
}

/// An agent's bids on one auction, summed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bid {
    pub agent: String,
    pub amount: u64,
    pub last_bid_at: u64,
}

fn auction_key(condition_id: &str) -> Vec<u8> {
    format!("u/{condition_id}").into_bytes()
}
fn bid_key(condition_id: &str, agent: &str) -> Vec<u8> {
    format!("v/{condition_id}/{agent}").into_bytes()
}

pub fn auction_of(s: &AppState, condition_id: &str) -> Result<Option<Auction>, ApiError> {
    Ok(s.store.get(cf::BONDS, &auction_key(condition_id))?)
}

fn bids_of(s: &AppState, condition_id: &str) -> Result<Vec<Bid>, ApiError> {
    let mut out = Vec::new();
    s.store.try_walk::<ApiError>(cf::BONDS, format!("v/{condition_id}/").as_bytes(), None, false, |_, v| {
        out.push(Store::decode_value::<Bid>(cf::BONDS, v)?);
        Ok(ControlFlow::Continue(()))
    })?;
    Ok(out)
}

/// The winning bid: the highest total, the earlier last bid on a tie.
pub fn winning(bids: &[Bid]) -> Option<&Bid> {
    bids.iter().max_by(|a, b| a.amount.cmp(&b.amount).then(b.last_bid_at.cmp(&a.last_bid_at)))
}

fn auction_json(a: &Auction, bids: &[Bid]) -> Value {
    j!({
        "conditionId": a.condition_id,
        "status": if a.closed { "CLOSED" } else { "OPEN" },
        "openedAt": fmt_date(a.opened_at),
        "closesAt": fmt_date(a.closes_at),
        "bids": bids.iter().map(|b| j!({"agent": b.agent, "amount": b.amount.to_string()})).collect::<Vec<_>>(),
        "highestBid": winning(bids).map(|b| b.amount.to_string()),
        "winner": a.winner,
        "winningAmount": a.winning_amount.to_string(),
        "asset": COLLATERAL,
    })
}

pub fn routes(state: Arc<AppState>) -> Routes {
    let s = move || with_state(state.clone());
    let bid = warp::path!("auctions" / "bid")
        .and(warp::post())
        .and(req())
        .and(s())
        .then(|r, s| async move { respond(bid(s, r).await) });
    let show = warp::path!("auctions" / String)
        .and(warp::get())
        .and(s())
        .map(|c: String, s: Arc<AppState>| respond(show(&s, &c)));
    bid.or(show).unify().boxed()
}

fn show(s: &AppState, condition_id: &str) -> ApiResult {
    let a = auction_of(s, condition_id)?.ok_or_else(|| ApiError::not_found("auction not found"))?;
    json(&auction_json(&a, &bids_of(s, condition_id)?))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BidBody {
    condition_id: String,
    /// Base units as an integer string.
    amount: String,
}

/// POST /auctions/bid {conditionId, amount}: escrows `amount` more into the agent's bid.
async fn bid(s: Arc<AppState>, r: Req) -> ApiResult {
    let key = authenticate(&s, &r)?;
    let b: BidBody = r.json()?;
    let amount = crate::api::ctf::amount(Some(&b.amount))?;
    let _one = s.bonds.lock().await;
    let now = now_secs();
    let a = auction_of(&s, &b.condition_id)?
        .filter(|a| !a.closed && now < a.closes_at)
        .ok_or_else(|| ApiError::bad("no open question auction for this market"))?;
    let agent = key.address.to_string();
    let mut bid = s.store.get::<Bid>(cf::BONDS, &bid_key(&b.condition_id, &agent))?.unwrap_or(Bid {
        agent: agent.clone(),
        amount: 0,
        last_bid_at: now,
    });
    bid.amount = bid.amount.checked_add(amount).ok_or_else(|| ApiError::bad("amount too large"))?;
    bid.last_bid_at = now;
    let mut records = Batch::default();
    records.put(cf::BONDS, bid_key(&b.condition_id, &agent), encode(&bid));
    match s.engine.transfer(agent, vec![(COLLATERAL.to_string(), LedgerChange::Debit(amount))], records).await {
        Ok(_) => json(&auction_json(&a, &bids_of(&s, &b.condition_id)?)),
        Err(EngineError::Rejected(_)) => Err(ApiError::bad("not enough balance / allowance")),
        Err(e) => Err(e.into()),
    }
}

/// POST /internal/auctions {condition_id, duration_secs}: opens a question auction.
pub async fn open(s: Arc<AppState>, r: Req) -> ApiResult {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct B {
        condition_id: String,
        duration_secs: u64,
    }
    let b: B = r.json()?;
    let view = s.registry.condition(&b.condition_id).ok_or_else(|| ApiError::not_found("market not found"))?;
    if crate::resolution::is_closed(&s, &view) {
        return Err(ApiError::bad("market is already resolved"));
    }
    if b.duration_secs == 0 {
        return Err(ApiError::bad("duration_secs must be at least 1"));
    }
    let _one = s.bonds.lock().await;
    if auction_of(&s, &b.condition_id)?.is_some() {
        return Err(ApiError::new(StatusCode::CONFLICT, "market already has a question auction"));
    }
    let now = now_secs();
    let a = Auction {
        condition_id: b.condition_id.clone(),
        opened_at: now,
        closes_at: now + b.duration_secs,
        closed: false,
        winner: None,
        winning_amount: 0,
    };
    let mut batch = Batch::default();
    batch.put(cf::BONDS, auction_key(&a.condition_id), encode(&a));
    s.commit(batch).await?;
    json(&auction_json(&a, &[]))
}

/// Closes every auction past its close (the winner's bid becomes its bond) and refunds
/// the losing bids of closed auctions. Called by the resolution worker, holding the
/// bonds lock. Returns the auctions closed.
pub fn close_due(s: &AppState, now: u64) -> Result<Vec<String>, ApiError> {
    let mut auctions = BTreeMap::new();
    s.store.try_walk::<ApiError>(cf::BONDS, b"u/", None, false, |_, v| {
        let a = Store::decode_value::<Auction>(cf::BONDS, v)?;
        auctions.insert(a.condition_id.clone(), a);
        Ok(ControlFlow::Continue(()))
    })?;
    let mut closed = Vec::new();
    for (c, mut a) in auctions {
        if !a.closed && now < a.closes_at {
            continue;
        }
        let mut bids = bids_of(s, &c)?;
        if !a.closed {
            let mut batch = Batch::default();
            if let Some(w) = winning(&bids).cloned() {
                a.winner = Some(w.agent.clone());
                a.winning_amount = w.amount;
                let cluster = crate::resolution::cluster_of(s, &c)?;
                let bond = match s.store.get::<Bond>(cf::BONDS, &crate::resolution::bond_key(&w.agent, &c))? {
                    Some(b) if b.status == crate::resolution::BondStatus::Posted => {
                        Bond { amount: b.amount + w.amount, posted_at: now, ..b }
                    }
                    _ => Bond {
                        agent: w.agent.clone(),
                        condition_id: c.clone(),
                        cluster_id: cluster,
                        amount: w.amount,
                        status: crate::resolution::BondStatus::Posted,
                        posted_at: now,
                    },
                };
                post_bond_records(&mut batch, &bond);
                batch.delete(cf::BONDS, bid_key(&c, &w.agent));
                bids.retain(|b| b.agent != w.agent);
            }
            a.closed = true;
            batch.put(cf::BONDS, auction_key(&c), encode(&a));
            s.commit_blocking(batch)?;
            closed.push(c.clone());
        }
        for b in bids {
            let mut records = Batch::default();
            records.delete(cf::BONDS, bid_key(&c, &b.agent));
            s.engine
                .blocking()
                .transfer(b.agent.clone(), vec![(COLLATERAL.to_string(), LedgerChange::Credit(b.amount))], records)
                .map_err(ApiError::from)?;
        }
    }
    Ok(closed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_highest_total_wins_and_the_earlier_on_a_tie() {
        let b = |agent: &str, amount, at| Bid { agent: agent.into(), amount, last_bid_at: at };
        assert_eq!(winning(&[b("a", 5, 1), b("b", 7, 2), b("c", 7, 3)]).unwrap().agent, "b");
        assert_eq!(winning(&[b("a", 5, 1), b("b", 7, 4), b("c", 7, 3)]).unwrap().agent, "c");
        assert!(winning(&[]).is_none());
    }
}
