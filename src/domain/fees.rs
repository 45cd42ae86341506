//! Trading fees as the exchange contract charges them: the formula and the highest rate a
//! signed order may carry.

use super::{Amount, Side};

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
    use alloy_primitives::U256;
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
