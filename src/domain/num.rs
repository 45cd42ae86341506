//! Fixed-point numbers: parsing and formatting of prices and amounts without floats.

use std::fmt;

/// 1.0 in price units (prices are integers in 1e-4).
pub const PRICE_ONE: u32 = 10_000;
/// 1.0 in amount units (amounts are integers in 1e-6).
pub const AMOUNT_ONE: u64 = 1_000_000;

/// Outcome-token side of an order, as the client signed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Side {
    Buy,
    Sell,
}

/// A market's last trade: its YES price and the taker's side in YES terms;
/// `None` before the first. Kept by the engine, written by the persister, shown by the
/// readers' snapshots and the feeds.
pub type LastTrade = Option<(Price, Side)>;

impl Side {
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Buy => "BUY",
            Side::Sell => "SELL",
        }
    }
    /// The other side: a taker BUY meets a maker SELL; a YES BUY is a NO SELL.
    pub fn opposite(self) -> Side {
        match self {
            Side::Buy => Side::Sell,
            Side::Sell => Side::Buy,
        }
    }
    /// The on-chain encoding (uint8): BUY = 0, SELL = 1.
    pub fn as_u8(self) -> u8 {
        match self {
            Side::Buy => 0,
            Side::Sell => 1,
        }
    }
    pub fn parse(s: &str) -> Option<Side> {
        match s {
            "BUY" | "buy" | "Buy" => Some(Side::Buy),
            "SELL" | "sell" | "Sell" => Some(Side::Sell),
            _ => None,
        }
    }
}

/// Formats a price (1e-4 units) with four decimals: `5000` → `"0.5000"`.
pub fn fmt_price(p: u32) -> String {
    format!("{}.{:04}", p / PRICE_ONE, p % PRICE_ONE)
}

/// Formats an amount (1e-6 units) as a plain decimal with trailing zeros trimmed:
/// `1_500_000` → `"1.5"`, `5_000_000` → `"5"`.
pub fn fmt_amount(a: u64) -> String {
    let int = a / AMOUNT_ONE;
    let frac = a % AMOUNT_ONE;
    if frac == 0 {
        return int.to_string();
    }
    let s = format!("{int}.{frac:06}");
    s.trim_end_matches('0').to_string()
}

/// Formats a tick size (1e-4 units) the way clients send it: `100` → `"0.01"`.
pub fn fmt_tick(t: u32) -> String {
    let s = fmt_price(t);
    let s = s.trim_end_matches('0');
    s.trim_end_matches('.').to_string()
}

/// A price in 1e-4 units: `Price(5000)` is 0.5. An order's limit, a fill's execution price
/// and a market's tick are prices; what a price applies to is an [`Amount`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
#[repr(transparent)]
pub struct Price(pub u32);

impl Price {
    /// 1.0: the price of a winning token.
    pub const ONE: Price = Price(PRICE_ONE);
    pub const ZERO: Price = Price(0);

    /// Parses a price string ("0.55"); it must lie in [0, 1].
    pub fn parse(s: &str) -> Result<Price, ParseNumError> {
        parse_price(s).map(Price)
    }
    pub fn units(self) -> u32 {
        self.0
    }
    /// The other outcome's price: 1 − self.
    pub fn complement(self) -> Price {
        Price(PRICE_ONE - self.0)
    }
    /// Strictly between 0 and 1: a price an order or a quote can be made at.
    pub fn is_inside(self) -> bool {
        self.0 > 0 && self.0 < PRICE_ONE
    }
    /// On the grid of `tick`.
    pub fn on_tick(self, tick: Price) -> bool {
        self.0.is_multiple_of(tick.0)
    }
    /// Halfway between a bid and an ask, rounded up (the midpoint clients are shown).
    pub fn midpoint(bid: Price, ask: Price) -> Price {
        Price((bid.0 + ask.0).div_ceil(2))
    }
    /// From `bid` up to `self`, or zero for a crossed pair: the spread.
    pub fn above(self, bid: Price) -> Price {
        Price(self.0.saturating_sub(bid.0))
    }
    /// What `size` tokens cost at this price, rounded down.
    pub fn cost(self, size: Amount) -> Amount {
        size.mul_div(self.0 as u64, PRICE_ONE as u64)
    }
    /// Four decimals, as the spec fixes for prices it names: `"0.5000"`.
    pub fn fixed(self) -> String {
        fmt_price(self.0)
    }
    /// The shortest decimal: `"0.5"`, `"0.01"` (how clients write a tick size).
    pub fn short(self) -> String {
        fmt_tick(self.0)
    }
}

/// An amount in 1e-6 units: `Amount(1_500_000)` is 1.5 tokens or 1.5 USDC. Sizes, fills,
/// fees and reservations are amounts; what one token costs is a [`Price`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
#[repr(transparent)]
pub struct Amount(pub u64);

impl Amount {
    pub const ZERO: Amount = Amount(0);
    /// 1.0: one token, one unit of collateral.
    pub const ONE: Amount = Amount(AMOUNT_ONE);

    /// Parses a decimal string ("12.5") with at most six decimals.
    pub fn parse(s: &str) -> Result<Amount, ParseNumError> {
        parse_decimal(s, 6).map(Amount)
    }
    pub fn units(self) -> u64 {
        self.0
    }
    pub fn is_zero(self) -> bool {
        self.0 == 0
    }
    pub fn checked_sub(self, rhs: Amount) -> Option<Amount> {
        self.0.checked_sub(rhs.0).map(Amount)
    }
    pub fn saturating_add(self, rhs: Amount) -> Amount {
        Amount(self.0.saturating_add(rhs.0))
    }
    pub fn saturating_sub(self, rhs: Amount) -> Amount {
        Amount(self.0.saturating_sub(rhs.0))
    }
    /// `self × num / den`, rounded down: a share of an amount (a fee rate, a pro-rata part).
    pub fn mul_div(self, num: u64, den: u64) -> Amount {
        Amount(mul_div_floor(self.0, num, den))
    }
    /// The plain decimal with trailing zeros trimmed: `"1.5"`, `"5"`.
    pub fn fmt(self) -> String {
        fmt_amount(self.0)
    }
}

impl std::ops::Add for Amount {
    type Output = Amount;
    fn add(self, rhs: Amount) -> Amount {
        Amount(self.0 + rhs.0)
    }
}
impl std::ops::Sub for Amount {
    type Output = Amount;
    fn sub(self, rhs: Amount) -> Amount {
        Amount(self.0 - rhs.0)
    }
}
impl std::ops::AddAssign for Amount {
    fn add_assign(&mut self, rhs: Amount) {
        self.0 += rhs.0;
    }
}
impl std::ops::SubAssign for Amount {
    fn sub_assign(&mut self, rhs: Amount) {
        self.0 -= rhs.0;
    }
}
impl std::iter::Sum for Amount {
    fn sum<I: Iterator<Item = Amount>>(it: I) -> Amount {
        Amount(it.map(|a| a.0).sum())
    }
}

/// Error from parsing a decimal string into fixed point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseNumError;

impl fmt::Display for ParseNumError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("invalid number")
    }
}

/// Parses a non-negative decimal string ("0.01", "5", "12.345") into an integer scaled by
/// `10^decimals`. More fractional digits than `decimals` is an error, never a rounding.
pub fn parse_decimal(s: &str, decimals: u32) -> Result<u64, ParseNumError> {
    let s = s.trim();
    if s.is_empty() {
        return Err(ParseNumError);
    }
    let (int, frac) = match s.split_once('.') {
        Some((i, f)) => (i, f),
        None => (s, ""),
    };
    if (int.is_empty() && frac.is_empty())
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
        || frac.len() > decimals as usize
    {
        return Err(ParseNumError);
    }
    let scale = 10u64.pow(decimals);
    let int_v: u64 = if int.is_empty() { 0 } else { int.parse().map_err(|_| ParseNumError)? };
    let mut frac_v: u64 = if frac.is_empty() { 0 } else { frac.parse().map_err(|_| ParseNumError)? };
    frac_v *= 10u64.pow(decimals - frac.len() as u32);
    int_v.checked_mul(scale).and_then(|v| v.checked_add(frac_v)).ok_or(ParseNumError)
}

/// Parses a price string ("0.55") into 1e-4 units; must lie in [0, 1].
pub fn parse_price(s: &str) -> Result<u32, ParseNumError> {
    let v = parse_decimal(s, 4)?;
    if v > PRICE_ONE as u64 {
        return Err(ParseNumError);
    }
    Ok(v as u32)
}

/// Parses an integer string (the signed order's uint fields) into u64.
pub fn parse_u64(s: &str) -> Result<u64, ParseNumError> {
    let s = s.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ParseNumError);
    }
    s.parse().map_err(|_| ParseNumError)
}

/// `a * b / c` rounded down, never overflowing for u64 inputs: in 64 bits when the
/// product fits (every fill's amount: size × price), else in 128 (a 128-bit division is a
/// call into compiler-builtins, many instructions against one `div`).
#[inline]
pub fn mul_div_floor(a: u64, b: u64, c: u64) -> u64 {
    match a.checked_mul(b) {
        Some(p) => p / c,
        None => ((a as u128 * b as u128) / c as u128) as u64,
    }
}

/// A field that clients send either as a JSON string or as a number (`salt` and
/// `signatureType` from the official clients, amounts from hand-written bots).
#[derive(Debug, Clone)]
pub enum NumberText {
    Text(String),
    Number(serde_json::Number),
}

impl NumberText {
    /// The field as text: a string as sent, a number as `serde_json` writes it.
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            NumberText::Text(s) => std::borrow::Cow::Borrowed(s),
            NumberText::Number(n) => std::borrow::Cow::Owned(n.to_string()),
        }
    }
}

/// By hand rather than `#[serde(untagged)]`, which buffers every value before trying the
/// variants and builds (and formats) an error for each number it first reads as a string:
/// twice per order from the official clients. Accepts what the untagged enum accepted.
impl<'de> serde::Deserialize<'de> for NumberText {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = NumberText;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or a number")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<NumberText, E> {
                Ok(NumberText::Text(v.to_owned()))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<NumberText, E> {
                Ok(NumberText::Text(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<NumberText, E> {
                Ok(NumberText::Number(v.into()))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<NumberText, E> {
                Ok(NumberText::Number(v.into()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<NumberText, E> {
                serde_json::Number::from_f64(v)
                    .map(NumberText::Number)
                    .ok_or_else(|| E::invalid_value(serde::de::Unexpected::Float(v), &self))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(fmt_price(5000), "0.5000");
        assert_eq!(fmt_price(10000), "1.0000");
        assert_eq!(fmt_price(1), "0.0001");
        assert_eq!(fmt_amount(1_500_000), "1.5");
        assert_eq!(fmt_amount(5_000_000), "5");
        assert_eq!(fmt_amount(1), "0.000001");
        assert_eq!(fmt_amount(0), "0");
        assert_eq!(fmt_tick(100), "0.01");
        assert_eq!(fmt_tick(1000), "0.1");
        assert_eq!(fmt_tick(1), "0.0001");
    }

    #[test]
    fn parses() {
        assert_eq!(parse_decimal("0.01", 4), Ok(100));
        assert_eq!(parse_decimal("5", 6), Ok(5_000_000));
        assert_eq!(parse_decimal(".5", 6), Ok(500_000));
        assert_eq!(parse_decimal("1.0000001", 6), Err(ParseNumError));
        assert_eq!(parse_decimal("-1", 6), Err(ParseNumError));
        assert_eq!(parse_decimal("1e3", 6), Err(ParseNumError));
        assert_eq!(parse_decimal("", 6), Err(ParseNumError));
        assert_eq!(parse_decimal(".", 6), Err(ParseNumError));
        assert_eq!(parse_price("1.01"), Err(ParseNumError));
        assert_eq!(parse_u64("123"), Ok(123));
        assert_eq!(parse_u64("12a"), Err(ParseNumError));
        assert_eq!(mul_div_floor(10, 1, 3), 3);
    }

    #[test]
    fn price_rules_and_renderings() {
        let p = Price::parse("0.42").unwrap();
        assert_eq!(
            (p, p.complement(), p.fixed(), p.short()),
            (Price(4200), Price(5800), "0.4200".into(), "0.42".into())
        );
        assert_eq!(Price::parse("1.01"), Err(ParseNumError));
        assert!(p.is_inside() && !Price::ZERO.is_inside() && !Price::ONE.is_inside());
        assert!(p.on_tick(Price(100)) && !Price(4250).on_tick(Price(100)) && Price(4250).on_tick(Price(10)));
        assert_eq!(p.cost(Amount(3_000_000)), Amount(1_260_000));
        assert_eq!(Price(3).cost(Amount(1)), Amount::ZERO, "rounded down");
        assert_eq!(Price::midpoint(Price(4200), Price(4301)), Price(4251), "rounded up");
        assert_eq!((Price(4300).above(Price(4200)), Price(4200).above(Price(4300))), (Price(100), Price::ZERO));
        // The wire and the storage see the bare integer.
        assert_eq!(serde_json::to_string(&p).unwrap(), "4200");
        assert_eq!(postcard::to_allocvec(&p).unwrap(), postcard::to_allocvec(&4200u32).unwrap());
    }

    #[test]
    fn amount_arithmetic_and_renderings() {
        let a = Amount::parse("1.5").unwrap();
        assert_eq!((a, a.fmt(), Amount::ONE.fmt()), (Amount(1_500_000), "1.5".into(), "1".into()));
        assert_eq!(Amount::parse("0.0000001"), Err(ParseNumError));
        assert_eq!(a + Amount::ONE - Amount(500_000), Amount(2_000_000));
        assert_eq!((Amount::ONE.checked_sub(a), a.saturating_sub(Amount(2_000_000))), (None, Amount::ZERO));
        assert_eq!([a, a, Amount(1)].into_iter().sum::<Amount>(), Amount(3_000_001));
        assert_eq!(Amount(1_000_001).mul_div(25, 10_000), Amount(2_500), "rounded down");
        assert_eq!(serde_json::to_string(&a).unwrap(), "1500000");
        assert_eq!(postcard::to_allocvec(&a).unwrap(), postcard::to_allocvec(&1_500_000u64).unwrap());
    }

    /// Both paths, and the edge where the product stops fitting in 64 bits.
    #[test]
    fn mul_div_floor_in_64_and_128_bits() {
        assert_eq!(mul_div_floor(7_000_000, 3_333, 10_000), 2_333_100);
        assert_eq!(mul_div_floor(u64::MAX, 1, 1), u64::MAX);
        assert_eq!(mul_div_floor(u64::MAX, 2, 2), u64::MAX);
        assert_eq!(mul_div_floor(u64::MAX, u64::MAX, u64::MAX), u64::MAX);
        assert_eq!(mul_div_floor(1 << 32, 1 << 32, 3), ((1u128 << 64) / 3) as u64);
        assert_eq!(mul_div_floor((1 << 32) - 1, 1 << 32, 7), (((1u128 << 32) - 1) * (1 << 32) / 7) as u64);
    }
}
