//! The catalogue's families, typed: series, events, market metadata, comments, and the
//! id counters in `meta`; and the market counters the catalogue reads.

use std::ops::ControlFlow;

use super::keys::catalogue as key;
use super::{cf, encode, meta, Batch, Store, StoreError};
use crate::domain::catalogue::{CommentRecord, EventRecord, MarketMeta, ParentKind, SeriesRecord};

impl Store {
    pub fn all_series(&self) -> Result<Vec<SeriesRecord>, StoreError> {
        Ok(self.all(cf::SERIES)?.into_iter().map(|(_, v)| v).collect())
    }

    pub fn all_events(&self) -> Result<Vec<EventRecord>, StoreError> {
        Ok(self.all(cf::EVENTS)?.into_iter().map(|(_, v)| v).collect())
    }

    pub fn all_market_meta(&self) -> Result<Vec<MarketMeta>, StoreError> {
        Ok(self.all(cf::MARKET_META)?.into_iter().map(|(_, v)| v).collect())
    }

    /// The ids the next series, event and comment get (1 when none was written).
    pub fn catalogue_next_ids(&self) -> Result<(u64, u64, u64), StoreError> {
        let next = |k| self.meta_u64(k).map(|v| v.unwrap_or(1));
        Ok((next(meta::NEXT_SERIES)?, next(meta::NEXT_EVENT)?, next(meta::NEXT_COMMENT)?))
    }

    pub fn comment(&self, kind: ParentKind, parent: u64, id: u64) -> Result<Option<CommentRecord>, StoreError> {
        self.get(cf::COMMENTS, &key::comment(kind, parent, id))
    }

    /// A parent's comments, newest first (oldest first when `ascending`): `limit` of them
    /// after skipping `offset`, one range scan.
    pub fn comments(
        &self,
        kind: ParentKind,
        parent: u64,
        ascending: bool,
        offset: u64,
        limit: usize,
    ) -> Result<Vec<CommentRecord>, StoreError> {
        let mut out = Vec::new();
        let mut skipped = 0u64;
        self.try_walk(cf::COMMENTS, &key::comments_of(kind, parent), None, !ascending, |_, v| {
            if out.len() >= limit {
                return Ok(ControlFlow::Break(()));
            }
            if skipped < offset {
                skipped += 1;
            } else {
                out.push(Store::decode_value::<CommentRecord>(cf::COMMENTS, v)?);
            }
            Ok::<_, StoreError>(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }

    /// A market's trade counters: (collateral volume, trades).
    pub fn market_stats(&self, market_idx: u32) -> Result<(u64, u64), StoreError> {
        let c = self.counters(cf::MARKET_STATS, &market_idx.to_be_bytes())?;
        let at = |i: usize| c.get(i).copied().unwrap_or(0).max(0) as u64;
        Ok((at(0), at(1)))
    }
}

impl Batch {
    /// A new series, and the id counter past it.
    pub fn add_series(&mut self, s: &SeriesRecord) {
        self.put(cf::SERIES, s.id.to_be_bytes().to_vec(), encode(s));
        self.put(cf::META, meta::NEXT_SERIES.to_vec(), (s.id + 1).to_be_bytes().to_vec());
    }

    /// A new event, and the id counter past it.
    pub fn add_event(&mut self, e: &EventRecord) {
        self.put(cf::EVENTS, e.id.to_be_bytes().to_vec(), encode(e));
        self.put(cf::META, meta::NEXT_EVENT.to_vec(), (e.id + 1).to_be_bytes().to_vec());
    }

    pub fn put_market_meta(&mut self, m: &MarketMeta) {
        self.put(cf::MARKET_META, m.condition_id.as_bytes().to_vec(), encode(m));
    }

    /// A new comment, and the id counter past it.
    pub fn add_comment(&mut self, c: &CommentRecord) {
        self.put(cf::COMMENTS, key::comment(c.parent_kind, c.parent_id, c.id), encode(c));
        self.put(cf::META, meta::NEXT_COMMENT.to_vec(), (c.id + 1).to_be_bytes().to_vec());
    }
}
