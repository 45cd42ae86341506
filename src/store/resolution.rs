//! The `bonds` family, typed: bonds, proposals, cluster assignments, question auctions,
//! bids and, in chain mode, payout reports.

use std::ops::ControlFlow;

use serde::de::DeserializeOwned;

use super::keys::resolution as key;
use super::{cf, encode, Batch, Store, StoreError};
use crate::domain::chain::PayoutReport;
use crate::domain::resolution::{Auction, Bid, Bond, Proposal};

impl Store {
    pub fn bond(&self, agent: &str, condition_id: &str) -> Result<Option<Bond>, StoreError> {
        self.get(cf::BONDS, &key::bond(agent, condition_id))
    }

    /// Every bond an agent has posted, by market.
    pub fn bonds_of_agent(&self, agent: &str) -> Result<Vec<Bond>, StoreError> {
        self.bonds_values(&key::bonds_of_agent(agent))
    }

    /// The agents with a bond on a market.
    pub fn bonded_agents(&self, condition_id: &str) -> Result<Vec<String>, StoreError> {
        let mut agents = Vec::new();
        self.walk(cf::BONDS, &key::bonds_of_market(condition_id), None, false, |k, _| {
            if let Some(a) = std::str::from_utf8(k).ok().and_then(|k| k.rsplit('/').next()) {
                agents.push(a.to_string());
            }
            ControlFlow::Continue(())
        })?;
        Ok(agents)
    }

    pub fn proposal(&self, condition_id: &str) -> Result<Option<Proposal>, StoreError> {
        self.get(cf::BONDS, &key::proposal(condition_id))
    }

    /// Every proposal that decodes (one that does not is skipped).
    pub fn proposals(&self) -> Result<Vec<Proposal>, StoreError> {
        let mut out = Vec::new();
        self.walk(cf::BONDS, key::PROPOSALS, None, false, |_, v| {
            out.extend(Store::decode_value::<Proposal>(cf::BONDS, v).ok());
            ControlFlow::Continue(())
        })?;
        Ok(out)
    }

    pub fn payout_report(&self, condition_id: &str) -> Result<Option<PayoutReport>, StoreError> {
        self.get(cf::BONDS, &key::payout_report(condition_id))
    }

    /// Every market's payout report.
    pub fn payout_reports(&self) -> Result<Vec<PayoutReport>, StoreError> {
        self.bonds_values(key::PAYOUT_REPORTS)
    }

    /// The cluster the operator assigned a market to.
    pub fn bond_cluster(&self, condition_id: &str) -> Result<Option<u64>, StoreError> {
        self.get(cf::BONDS, &key::cluster(condition_id))
    }

    pub fn auction(&self, condition_id: &str) -> Result<Option<Auction>, StoreError> {
        self.get(cf::BONDS, &key::auction(condition_id))
    }

    pub fn auctions(&self) -> Result<Vec<Auction>, StoreError> {
        self.bonds_values(key::AUCTIONS)
    }

    pub fn bid(&self, condition_id: &str, agent: &str) -> Result<Option<Bid>, StoreError> {
        self.get(cf::BONDS, &key::bid(condition_id, agent))
    }

    /// An auction's bids, by agent.
    pub fn bids(&self, condition_id: &str) -> Result<Vec<Bid>, StoreError> {
        self.bonds_values(&key::bids(condition_id))
    }

    fn bonds_values<T: DeserializeOwned>(&self, prefix: &[u8]) -> Result<Vec<T>, StoreError> {
        let mut out = Vec::new();
        self.try_walk::<StoreError>(cf::BONDS, prefix, None, false, |_, v| {
            out.push(Store::decode_value::<T>(cf::BONDS, v)?);
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }
}

impl Batch {
    /// A posted bond, indexed under its market.
    pub fn post_bond(&mut self, b: &Bond) {
        self.put_bond(b);
        self.put(cf::BONDS, key::market_bond(&b.condition_id, &b.agent), Vec::new());
    }

    /// A bond's new state.
    pub fn put_bond(&mut self, b: &Bond) {
        self.put(cf::BONDS, key::bond(&b.agent, &b.condition_id), encode(b));
    }

    pub fn put_proposal(&mut self, p: &Proposal) {
        self.put(cf::BONDS, key::proposal(&p.condition_id), encode(p));
    }

    pub fn put_payout_report(&mut self, r: &PayoutReport) {
        self.put(cf::BONDS, key::payout_report(&r.condition_id), encode(r));
    }

    pub fn put_bond_cluster(&mut self, condition_id: &str, cluster: u64) {
        self.put(cf::BONDS, key::cluster(condition_id), encode(&cluster));
    }

    pub fn put_auction(&mut self, a: &Auction) {
        self.put(cf::BONDS, key::auction(&a.condition_id), encode(a));
    }

    pub fn put_bid(&mut self, condition_id: &str, b: &Bid) {
        self.put(cf::BONDS, key::bid(condition_id, &b.agent), encode(b));
    }

    pub fn delete_bid(&mut self, condition_id: &str, agent: &str) {
        self.delete(cf::BONDS, key::bid(condition_id, agent));
    }
}
