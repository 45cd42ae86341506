//! What the operator's overview (the dashboard) reads that nothing else keeps: each
//! market's volume of the last 24 hours, summed per minute and brought up to date from the
//! trades since the last read. A page refreshing every 2 seconds then reads only the new
//! trades, not a busy market's whole day each time (a benchmark's day holds millions).

use std::collections::{HashMap, VecDeque};
use std::ops::ControlFlow;

use parking_lot::Mutex;

use crate::domain::analytics::Tick;
use crate::domain::Amount;
use crate::store::{Store, StoreError};

/// The window of the overview's volume and recent trades (seconds).
pub const DAY: u64 = 86_400;

/// Each market's volume window, by market index.
#[derive(Default)]
pub struct DayVolumes {
    markets: Mutex<HashMap<u32, Window>>,
}

impl DayVolumes {
    /// The collateral notional of a market's trades of the 24 hours up to `now`, to the
    /// minute (the oldest minute counts whole).
    pub fn of(&self, store: &Store, market_idx: u32, now: u64) -> Result<Amount, StoreError> {
        let mut markets = self.markets.lock();
        let w = markets.entry(market_idx).or_insert_with(|| Window::since(now.saturating_sub(DAY)));
        store.walk_market_ticks(market_idx, Some(w.next), false, |key, tick| {
            w.add(key, tick.price.cost(tick.size));
            ControlFlow::Continue(())
        })?;
        Ok(w.total(now))
    }
}

/// One market's volume by minute, and the (time, trade seq) its next read starts at.
struct Window {
    next: (u64, u64),
    minutes: VecDeque<(u64, Amount)>,
}

impl Window {
    fn since(time: u64) -> Window {
        Window { next: (time, 0), minutes: VecDeque::new() }
    }

    /// A trade read, under its (time, seq): trades come in that order.
    fn add(&mut self, (time, seq): (u64, u64), notional: Amount) {
        let minute = time / 60;
        match self.minutes.back_mut() {
            Some((m, sum)) if *m == minute => *sum += notional,
            _ => self.minutes.push_back((minute, notional)),
        }
        self.next = (time, seq + 1);
    }

    /// The sum of the minutes of the 24 hours up to `now`, dropping older ones.
    fn total(&mut self, now: u64) -> Amount {
        let first = now.saturating_sub(DAY) / 60;
        while self.minutes.front().is_some_and(|(m, _)| *m < first) {
            self.minutes.pop_front();
        }
        self.minutes.iter().map(|(_, a)| *a).sum()
    }
}

/// A market's newest trades of the 24 hours up to `now`, newest first, at most `limit`.
pub fn recent_trades(store: &Store, market_idx: u32, now: u64, limit: usize) -> Result<Vec<(u64, Tick)>, StoreError> {
    let since = now.saturating_sub(DAY);
    let mut out = Vec::new();
    store.walk_market_ticks(market_idx, None, true, |(time, _), tick| {
        if time < since || out.len() >= limit {
            return ControlFlow::Break(());
        }
        out.push((time, tick));
        ControlFlow::Continue(())
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The window sums the trades of the last 24 hours to the minute, forgets older
    /// minutes as time passes, and resumes after the last trade it read.
    #[test]
    fn the_window_keeps_the_last_day_by_minute() {
        let t0 = 1_700_000_000 / 60 * 60; // a minute's start
        let mut w = Window::since(t0);
        w.add((t0, 1), Amount(5));
        w.add((t0 + 30, 2), Amount(7));
        w.add((t0 + 60, 3), Amount(11));
        assert_eq!(w.next, (t0 + 60, 4));
        assert_eq!(w.minutes.len(), 2);
        assert_eq!(w.total(t0 + 120), Amount(23));
        // The first minute counts while any of it is in the window, whole.
        assert_eq!(w.total(t0 + DAY + 59), Amount(23));
        assert_eq!(w.total(t0 + DAY + 60), Amount(11));
        w.add((t0 + DAY + 61, 4), Amount(2));
        assert_eq!(w.total(t0 + DAY + 119), Amount(13));
        assert_eq!(w.total(t0 + DAY + 120), Amount(2));
        assert_eq!(w.total(t0 + 2 * DAY + 120), Amount::ZERO);
        assert!(w.minutes.is_empty());
    }
}
