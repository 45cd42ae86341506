//! The `rewards` and `rebates` families, typed: reward programs, accrued earnings, paid
//! rewards and rebates, and the day payouts are done through (in `meta`).

use std::ops::ControlFlow;

use super::index::{decode_counters, encode_counters, wallet_prefix};
use super::keys::rewards as key;
use super::{cf, encode, meta, Batch, Store, StoreError};
use crate::domain::rewards::{Rebate, RewardConfig, RewardPaid};

impl Store {
    /// Every reward program that decodes (one that does not is skipped).
    pub fn reward_configs(&self) -> Result<Vec<RewardConfig>, StoreError> {
        let mut out = Vec::new();
        self.walk(cf::REWARDS, key::CONFIGS, None, false, |_, v| {
            out.extend(Store::decode_value::<RewardConfig>(cf::REWARDS, v).ok());
            ControlFlow::Continue(())
        })?;
        Ok(out)
    }

    /// The earliest day with accrued earnings.
    pub fn first_earning_day(&self) -> Result<Option<u32>, StoreError> {
        let mut first = None;
        self.walk(cf::REWARDS, key::EARNINGS, None, false, |k, _| {
            first = key::earning_day(k);
            ControlFlow::Break(())
        })?;
        Ok(first)
    }

    /// A day's accrued earnings: (address, condition id, micro-units).
    pub fn earnings_on(&self, day: u32) -> Result<Vec<(String, String, i64)>, StoreError> {
        let mut rows = Vec::new();
        self.walk(cf::REWARDS, &key::earnings(day, None), None, false, |k, v| {
            if let Some((a, c)) = key::split_earning(k) {
                rows.push((a.to_string(), c.to_string(), decode_counters(v).first().copied().unwrap_or(0)));
            }
            ControlFlow::Continue(())
        })?;
        Ok(rows)
    }

    /// A wallet's accrued earnings on a day: (condition id, micro-units).
    pub fn earnings_of(&self, address: &str, day: u32) -> Result<Vec<(String, i64)>, StoreError> {
        let mut rows = Vec::new();
        self.walk(cf::REWARDS, &key::earnings(day, Some(address)), None, false, |k, v| {
            if let Some((_, c)) = key::split_earning(k) {
                rows.push((c.to_string(), decode_counters(v).first().copied().unwrap_or(0)));
            }
            ControlFlow::Continue(())
        })?;
        Ok(rows)
    }

    pub fn reward_paid(&self, address: &str, day: u32) -> Result<bool, StoreError> {
        Ok(self.get_raw(cf::REWARDS, &key::paid(address, day))?.is_some())
    }

    pub fn rebate_paid(&self, address: &str, day: u32) -> Result<bool, StoreError> {
        Ok(self.get_raw(cf::REBATES, &key::rebate(address, day))?.is_some())
    }

    /// A wallet's rebates, newest day first.
    pub fn rebates_of(&self, address: &str) -> Result<Vec<Rebate>, StoreError> {
        let mut out = Vec::new();
        self.try_walk::<StoreError>(cf::REBATES, &wallet_prefix(address), None, true, |_, v| {
            out.push(Store::decode_value(cf::REBATES, v)?);
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }

    /// The last day whose rewards and rebates were paid.
    pub fn payouts_through(&self) -> Result<Option<u32>, StoreError> {
        self.get(cf::META, meta::PAYOUTS_THROUGH)
    }
}

impl Batch {
    pub fn put_reward_config(&mut self, c: &RewardConfig) {
        self.put(cf::REWARDS, key::config(&c.condition_id), encode(c));
    }

    /// Adds `earned` micro-units and one scored sample to a maker's day in a market.
    pub fn accrue_reward(&mut self, day: u32, maker: &str, condition_id: &str, earned: u64) {
        self.merge(cf::REWARDS, key::earning(day, maker, condition_id), encode_counters(&[earned as i64, 1]));
    }

    pub fn put_reward_paid(&mut self, address: &str, r: &RewardPaid) {
        self.put(cf::REWARDS, key::paid(address, r.day), encode(r));
    }

    pub fn put_rebate(&mut self, address: &str, r: &Rebate) {
        self.put(cf::REBATES, key::rebate(address, r.day), encode(r));
    }

    pub fn put_payouts_through(&mut self, day: u32) {
        self.put(cf::META, meta::PAYOUTS_THROUGH, encode(&day));
    }
}
