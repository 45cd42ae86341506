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

/// A market's last trade: its YES price (1e-4 units) and the taker's side in YES terms;
/// `None` before the first. Kept by the engine, written by the persister, shown by the
/// readers' snapshots and the feeds.
pub type LastTrade = Option<(u32, Side)>;

impl Side {
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Buy => "BUY",
            Side::Sell => "SELL",
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
/// call into compiler-builtins, ≈ 20 instructions against one `div`).
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
