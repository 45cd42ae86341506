//! Trading fees as the exchange contracts charge them: version 1's signed rate (the
//! formula and the highest rate an order may carry) and version 2's per-market fee
//! description, set by the operator and capped as the V2 exchange caps it.

use super::{Amount, Price, Side, PRICE_ONE};
use alloy_primitives::U256;

/// Highest fee rate a signed order may carry (basis points; the exchange contract's limit).
pub const MAX_FEE_BPS: u64 = 1000;

/// The exchange contract's fee on a fill (Polymarket's `CalculatorHelper.calculateFee`),
/// so that what predex records is what `matchOrders` charges to the base unit. The price
/// is the ratio of `maker_amount` to `taker_amount` (BUY: paid per token; SELL: received
/// per token) in 1e-18; the fee is charged on what the order receives (tokens for a BUY,
/// collateral for a SELL), symmetric in the price: `bps × min(p, 1 − p) × tokens`, over
/// `p` for a BUY. A maker's fee is taken at its signed price, a taker's at the price its
/// match averaged.
pub fn exchange_fee(side: Side, bps: u32, tokens: Amount, maker_amount: Amount, taker_amount: Amount) -> Amount {
    let (num, den) = match side {
        Side::Buy => (maker_amount.0, taker_amount.0),
        Side::Sell => (taker_amount.0, maker_amount.0),
    };
    if bps == 0 || den == 0 {
        return Amount::ZERO;
    }
    let one = U256::from(10u64).pow(U256::from(18));
    let p = U256::from(num) * one / U256::from(den);
    if p.is_zero() || p > one {
        return Amount::ZERO;
    }
    let m = p.min(one - p);
    let scaled = U256::from(bps) * m * U256::from(tokens.0);
    let fee = match side {
        Side::Buy => scaled / (p * U256::from(10_000u64)),
        Side::Sell => scaled / (U256::from(10_000u64) * one),
    };
    // At most `bps` ≤ 100 % of the tokens (BUY) or of their collateral worth (SELL).
    Amount(fee.to())
}

/// Whether an order's fee is charged in collateral: always in version 2 (on top of what a
/// BUY pays), only on a SELL (out of its proceeds) in version 1, whose BUY pays in the
/// tokens it receives.
pub fn fee_in_collateral(side: Side, version: u8) -> bool {
    side == Side::Sell || version == 2
}

/// The most a version 2 fill may be charged, in basis points of its value in collateral
/// (the V2 exchange's `maxFeeRateBps` as deployed: it reverts a match charging more).
pub const MAX_FEE_RATE_BPS_V2: u64 = 500;

/// The highest exponent a fee description may have.
pub const MAX_FEE_EXPONENT: u8 = 4;

/// A market's fee description for version 2 orders (Polymarket's `fd`): a taker filling
/// `shares` at price `p` pays `shares × rate × (p(1 − p))^exponent` in collateral — on top
/// of what it pays when it buys, out of its proceeds when it sells — and never more than
/// [`MAX_FEE_RATE_BPS_V2`] of the fill's value. Makers pay nothing (`to`: taker only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FeeSchedule {
    /// The rate in basis points: 2500 is `r` = 0.25. At most 10 000 (`r` = 1).
    pub rate_bps: u32,
    pub exponent: u8,
}

impl FeeSchedule {
    /// A description the operator may set, or why not.
    pub fn new(rate_bps: u32, exponent: u8) -> Result<FeeSchedule, String> {
        if rate_bps > 10_000 {
            return Err("the fee rate must be between 0 and 1".into());
        }
        if exponent > MAX_FEE_EXPONENT {
            return Err(format!("the fee exponent must be between 0 and {MAX_FEE_EXPONENT}"));
        }
        Ok(FeeSchedule { rate_bps, exponent })
    }

    /// The fee of a fill of `shares` at `price`, rounded down to the base unit and capped
    /// at [`MAX_FEE_RATE_BPS_V2`] of `value`, the fill's cash value as the V2 exchange
    /// bounds a fee by it: what a BUY pays before the fee, what a SELL is owed at its own
    /// limit price.
    pub fn fee(&self, shares: Amount, price: Price, value: Amount) -> Amount {
        let one = U256::from(PRICE_ONE);
        let p = U256::from(price.units().min(PRICE_ONE));
        let e = U256::from(self.exponent);
        // p(1 − p) in 1e-8, raised to the exponent: at most 0.25⁴ in 1e-32, so the product
        // stays far inside 256 bits.
        let spread = (p * (one - p)).pow(e);
        let num = U256::from(shares.units()) * U256::from(self.rate_bps) * spread;
        let den = U256::from(10_000u64) * U256::from(10u64).pow(U256::from(8) * e);
        let fee = Amount((num / den).to());
        fee.min(value.mul_div(MAX_FEE_RATE_BPS_V2, 10_000))
    }

    /// The rate as the clients read it (`fd.r`): a decimal number. The rate is in the
    /// units of a price, and prints as a tick does.
    pub fn rate_text(&self) -> String {
        super::fmt_tick(self.rate_bps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(units: u64) -> Amount {
        Amount(units * 1_000_000)
    }

    #[test]
    fn a_fee_description_charges_shares_times_rate_times_the_spread_to_the_exponent() {
        // r = 0.25, e = 2, 100 shares at 0.5: 100 × 0.25 × 0.0625 = 1.5625 — under the
        // cap of 5 % of 50.
        let s = FeeSchedule::new(2500, 2).unwrap();
        assert_eq!(s.fee(m(100), Price(5000), m(50)), Amount(1_562_500));
        // e = 1 at 0.2: 100 × 0.25 × 0.16 = 4, over the cap of 5 % of 20 = 1.
        let s = FeeSchedule::new(2500, 1).unwrap();
        assert_eq!(s.fee(m(100), Price(2000), m(20)), m(1));
        // e = 0: a flat rate of the shares; r = 0 charges nothing; rounding is down.
        assert_eq!(FeeSchedule::new(10, 0).unwrap().fee(m(100), Price(9000), m(90)), Amount(100_000));
        assert_eq!(FeeSchedule::new(0, 2).unwrap().fee(m(100), Price(5000), m(50)), Amount::ZERO);
        assert_eq!(FeeSchedule::new(2500, 2).unwrap().fee(Amount(1), Price(5000), Amount(1)), Amount::ZERO);
        // The largest inputs do not overflow.
        let s = FeeSchedule::new(10_000, MAX_FEE_EXPONENT).unwrap();
        assert_eq!(s.fee(Amount(u64::MAX), Price(5000), Amount(u64::MAX)), Amount(u64::MAX / 256));
    }

    #[test]
    fn a_fee_description_out_of_bounds_is_refused_and_its_rate_prints_as_a_decimal() {
        assert!(FeeSchedule::new(10_001, 1).is_err());
        assert!(FeeSchedule::new(100, MAX_FEE_EXPONENT + 1).is_err());
        assert_eq!(FeeSchedule::new(2500, 2).unwrap().rate_text(), "0.25");
        assert_eq!(FeeSchedule::new(10_000, 2).unwrap().rate_text(), "1");
        assert_eq!(FeeSchedule::new(7, 2).unwrap().rate_text(), "0.0007");
        assert_eq!(FeeSchedule::new(0, 2).unwrap().rate_text(), "0");
    }
}
