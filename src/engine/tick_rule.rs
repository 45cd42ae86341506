//! Polymarket's tick rule: a market near either end moves to the fine tick.

use crate::domain::Price;

/// The fine tick a market moves to (Polymarket's rule): when its YES price passes 0.96 or
/// 0.04 — a best bid above 0.96, a best ask below 0.04, or a last trade beyond either — a
/// market on a coarser tick moves to 0.001. It never moves back: every price on the coarse
/// tick stays on the fine one, so no resting order or client quote becomes invalid.
pub fn finer_tick(tick: Price, best: (Option<u32>, Option<u32>), last_trade: Option<Price>) -> Option<Price> {
    const FINE: u32 = 10;
    const HIGH: u32 = 9_600;
    const LOW: u32 = 400;
    let extreme = best.0.is_some_and(|b| b > HIGH)
        || best.1.is_some_and(|a| a < LOW)
        || last_trade.is_some_and(|p| !(LOW..=HIGH).contains(&p.units()));
    let tick = tick.units();
    (tick > FINE && tick.is_multiple_of(FINE) && extreme).then_some(Price(FINE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coarse_ticks_move_to_the_fine_one_past_the_bounds_and_never_back() {
        // Inside the bounds nothing moves, including exactly 0.96 and 0.04.
        assert_eq!(finer_tick(Price(100), (Some(9600), Some(400)), Some(Price(9600))), None);
        assert_eq!(finer_tick(Price(100), (Some(300), Some(9900)), Some(Price(400))), None);
        // Past them, by the best bid, the best ask or the last trade.
        assert_eq!(finer_tick(Price(100), (Some(9700), None), None), Some(Price(10)));
        assert_eq!(finer_tick(Price(100), (None, Some(300)), None), Some(Price(10)));
        assert_eq!(finer_tick(Price(1000), (None, None), Some(Price(9700))), Some(Price(10)));
        assert_eq!(finer_tick(Price(100), (None, None), Some(Price(300))), Some(Price(10)));
        // Already fine (or finer): no change.
        assert_eq!(finer_tick(Price(10), (Some(9900), Some(9950)), Some(Price(9990))), None);
        assert_eq!(finer_tick(Price(1), (Some(9900), Some(9950)), Some(Price(9990))), None);
    }
}
