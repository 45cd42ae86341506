//! Question auctions (SPEC §1 names them without a shape; docs/reference/resolution.md): agents bid
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

use super::{post_bond_records, Bond};
use crate::app::AppState;
use crate::domain::{now_secs, Amount, COLLATERAL};
use crate::engine::{EngineError, LedgerChange};
use crate::store::{Batch, StoreError};

/// What an auction service refuses (the routes give each its SPEC §7 reply).
#[derive(Debug, thiserror::Error)]
pub enum AuctionError {
    #[error("auction not found")]
    NotFound,
    #[error("market not found")]
    NoMarket,
    #[error("market is already resolved")]
    Resolved,
    #[error("duration_secs must be at least 1")]
    NoDuration,
    #[error("market already has a question auction")]
    Exists,
    #[error("no open question auction for this market")]
    NotOpen,
    #[error("amount too large")]
    TooLarge,
    #[error("not enough balance / allowance")]
    NotEnoughBalance,
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Engine(#[from] EngineError),
}

pub use crate::domain::resolution::{Auction, Bid};

pub fn auction_of(s: &AppState, condition_id: &str) -> Result<Option<Auction>, StoreError> {
    s.store.auction(condition_id)
}

pub fn bids_of(s: &AppState, condition_id: &str) -> Result<Vec<Bid>, StoreError> {
    s.store.bids(condition_id)
}

/// The winning bid: the highest total, the earlier last bid on a tie.
pub fn winning(bids: &[Bid]) -> Option<&Bid> {
    bids.iter().max_by(|a, b| a.amount.cmp(&b.amount).then(b.last_bid_at.cmp(&a.last_bid_at)))
}

/// An auction and its bids.
pub fn show(s: &AppState, condition_id: &str) -> Result<(Auction, Vec<Bid>), AuctionError> {
    let a = auction_of(s, condition_id)?.ok_or(AuctionError::NotFound)?;
    Ok((a, bids_of(s, condition_id)?))
}

/// Escrows `amount` more into `agent`'s bid on the open auction of `condition_id`.
pub async fn bid(
    s: &AppState,
    agent: String,
    condition_id: &str,
    amount: u64,
) -> Result<(Auction, Vec<Bid>), AuctionError> {
    let _one = s.resolution.changes.lock().await;
    let now = now_secs();
    let a = auction_of(s, condition_id)?.filter(|a| !a.closed && now < a.closes_at).ok_or(AuctionError::NotOpen)?;
    let mut bid =
        s.store.bid(condition_id, &agent)?.unwrap_or(Bid { agent: agent.clone(), amount: 0, last_bid_at: now });
    bid.amount = bid.amount.checked_add(amount).ok_or(AuctionError::TooLarge)?;
    bid.last_bid_at = now;
    let mut records = Batch::default();
    records.put_bid(condition_id, &bid);
    match s.engine.transfer(agent, vec![(COLLATERAL.to_string(), LedgerChange::Debit(Amount(amount)))], records).await {
        Ok(_) => Ok((a, bids_of(s, condition_id)?)),
        Err(EngineError::Rejected(_)) => Err(AuctionError::NotEnoughBalance),
        Err(e) => Err(e.into()),
    }
}

/// Opens a question auction on a market for `duration_secs`.
pub async fn open(s: &AppState, condition_id: &str, duration_secs: u64) -> Result<Auction, AuctionError> {
    let view = s.registry.condition(condition_id).ok_or(AuctionError::NoMarket)?;
    if super::is_closed(s, &view) {
        return Err(AuctionError::Resolved);
    }
    if duration_secs == 0 {
        return Err(AuctionError::NoDuration);
    }
    let _one = s.resolution.changes.lock().await;
    if auction_of(s, condition_id)?.is_some() {
        return Err(AuctionError::Exists);
    }
    let now = now_secs();
    let a = Auction {
        condition_id: condition_id.to_string(),
        opened_at: now,
        closes_at: now + duration_secs,
        closed: false,
        winner: None,
        winning_amount: 0,
    };
    let mut batch = Batch::default();
    batch.put_auction(&a);
    s.commit(batch).await?;
    Ok(a)
}
/// Closes every auction past its close (the winner's bid becomes its bond) and refunds
/// the losing bids of closed auctions. Called by the resolution worker, holding the
/// bonds lock. Returns the auctions closed.
pub fn close_due(s: &AppState, now: u64) -> Result<Vec<String>, AuctionError> {
    let mut auctions = BTreeMap::new();
    for a in s.store.auctions()? {
        auctions.insert(a.condition_id.clone(), a);
    }
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
                let cluster = super::cluster_of(s, &c)?;
                let bond = match s.store.bond(&w.agent, &c)? {
                    Some(b) if b.status == super::BondStatus::Posted => {
                        Bond { amount: b.amount + w.amount, posted_at: now, ..b }
                    }
                    _ => Bond {
                        agent: w.agent.clone(),
                        condition_id: c.clone(),
                        cluster_id: cluster,
                        amount: w.amount,
                        status: super::BondStatus::Posted,
                        posted_at: now,
                    },
                };
                post_bond_records(&mut batch, &bond);
                batch.delete_bid(&c, &w.agent);
                bids.retain(|b| b.agent != w.agent);
            }
            a.closed = true;
            batch.put_auction(&a);
            s.commit_blocking(batch)?;
            closed.push(c.clone());
        }
        for b in bids {
            let mut records = Batch::default();
            records.delete_bid(&c, &b.agent);
            s.engine.blocking().transfer(
                b.agent.clone(),
                vec![(COLLATERAL.to_string(), LedgerChange::Credit(Amount(b.amount)))],
                records,
            )?;
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
