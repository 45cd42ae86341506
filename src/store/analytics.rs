//! The analytics indexes, typed reads: a wallet's trade rows, a market's trade ticks
//! newest first, positions per market and per wallet, per-day sums, a wallet's activity.

use std::ops::ControlFlow;

use uuid::Uuid;

use super::index::{self, CtfActivity, Position, Tick};
use super::{cf, Store, StoreError};

/// A market's trade tick and where it sits in the market's time order.
pub struct TickAt {
    key: Vec<u8>,
    pub tick: Tick,
}

impl TickAt {
    /// Its (time, seq) order within the market, comparable across markets.
    pub fn order(&self) -> &[u8] {
        &self.key[4..]
    }
}

impl Store {
    /// Walks a wallet's trade rows newest first, calling `each` with (trade id, role: 0
    /// taker, 1 maker) until it breaks or fails.
    pub fn walk_wallet_trades<E: From<StoreError>>(
        &self,
        wallet: &str,
        mut each: impl FnMut(Uuid, u8) -> Result<ControlFlow<()>, E>,
    ) -> Result<(), E> {
        self.try_walk(cf::TRADES_BY_WALLET, &index::holder_prefix(wallet), None, true, |k, v| {
            let role = k.last().copied().unwrap_or(0);
            let id = Uuid::from_slice(v)
                .map_err(|e| StoreError::Corrupt { cf: cf::TRADES_BY_WALLET, msg: e.to_string() })?;
            each(id, role)
        })
    }

    /// A market's newest tick before `after` (None: its newest), in time order.
    pub fn tick_before(&self, market_idx: u32, after: Option<&TickAt>) -> Result<Option<TickAt>, StoreError> {
        let prefix = market_idx.to_be_bytes();
        let from = after.map(|a| a.key.as_slice());
        let mut got = None;
        self.walk(cf::TRADES_BY_MARKET, &prefix, from, true, |k, v| {
            if from == Some(k) {
                return ControlFlow::Continue(());
            }
            got = Some((k.to_vec(), Store::decode_value::<Tick>(cf::TRADES_BY_MARKET, v)));
            ControlFlow::Break(())
        })?;
        match got {
            Some((key, tick)) => Ok(Some(TickAt { key, tick: tick? })),
            None => Ok(None),
        }
    }

    /// Every position in a market: (wallet, token, position).
    pub fn positions_in_market(&self, market_idx: u32) -> Result<Vec<(String, String, Position)>, StoreError> {
        self.positions_under(cf::MARKET_HOLDERS, &market_idx.to_be_bytes(), 4)
    }

    /// Every position of a wallet: (wallet, token, position).
    pub fn positions_of_wallet(&self, wallet: &str) -> Result<Vec<(String, String, Position)>, StoreError> {
        self.positions_under(cf::POSITIONS, &index::holder_prefix(wallet), 0)
    }

    /// Every position of every wallet, all time (`days` None), or the sums of the days from
    /// `days` on: (wallet, token, position), one per key.
    pub fn positions_since(&self, day: Option<u32>) -> Result<Vec<(String, String, Position)>, StoreError> {
        match day {
            None => self.positions_under(cf::POSITIONS, b"", 0),
            Some(first) => {
                let mut out = Vec::new();
                self.walk(cf::WALLET_DAYS, b"", Some(&first.to_be_bytes()), false, |k, v| {
                    if let Some((w, t)) = index::split_position(&k[4..]) {
                        out.push((w, t, Position::decode(v)));
                    }
                    ControlFlow::Continue(())
                })?;
                Ok(out)
            }
        }
    }

    fn positions_under(
        &self,
        family: &'static str,
        prefix: &[u8],
        strip: usize,
    ) -> Result<Vec<(String, String, Position)>, StoreError> {
        let mut out = Vec::new();
        self.walk(family, prefix, None, false, |k, v| {
            if let Some((w, t)) = index::split_position(&k[strip..]) {
                out.push((w, t, Position::decode(v)));
            }
            ControlFlow::Continue(())
        })?;
        Ok(out)
    }

    /// Walks a wallet's non-trade activity newest first until `each` breaks.
    pub fn walk_activity(
        &self,
        wallet: &str,
        mut each: impl FnMut(CtfActivity) -> ControlFlow<()>,
    ) -> Result<(), StoreError> {
        self.try_walk::<StoreError>(cf::ACTIVITY, &index::wallet_prefix(wallet), None, true, |_, v| {
            Ok(each(Store::decode_value(cf::ACTIVITY, v)?))
        })
    }
}
