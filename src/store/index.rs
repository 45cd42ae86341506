//! The analytics indexes of the trades: exactly as durable as the trades, and every
//! analytics query is a range scan. `trades_by_market` and `market_stats` are written in
//! the trade's own WriteBatch; the wallets' entries and counters are written behind it,
//! from a log written in that batch ([`super::aggregator`]).
//!
//! - `trades_by_market`: market (4) + match time (8) + seq (8) → [`Tick`]: history, OHLC,
//!   a market's trades, in time order.
//! - `trades_by_wallet`: address + `/` + seq (8) + role (1) → trade id: a wallet's trades.
//! - Counters, kept by RocksDB's merge operator (each write adds, nothing is read back):
//!   `positions` (holder), `market_holders` (market (4) + holder) and `wallet_days` (UTC
//!   day (4) + holder) hold [`Position`] sums, where a holder is a wallet and a token in
//!   the compact form of [`position`]; `market_stats` (market (4)) holds volume and trade
//!   count.
//!
//! A trade adds its counters when first written (PENDING) and takes them back if its
//! settlement FAILS ([`counter_sign`]), so the sums follow the trades that stand.

pub use crate::domain::analytics::{CtfActivity, CtfKind, Position, Tick, DAY};
use crate::domain::{Leg, Side, TradeRecord, TradeStatus};

/// A position's counters as `positions`, `market_holders` and `wallet_days` hold them.
impl Position {
    pub fn encode(&self) -> Vec<u8> {
        encode_counters(&[self.size, self.bought, self.cost, self.sold, self.proceeds])
    }
    pub fn decode(v: &[u8]) -> Position {
        let c = decode_counters(v);
        let g = |i: usize| c.get(i).copied().unwrap_or(0);
        Position { size: g(0), bought: g(1), cost: g(2), sold: g(3), proceeds: g(4) }
    }
}

/// Counters: postcard's encoding of the slice (a count, then zigzag varints: a fill's
/// position change takes 15 bytes where eight bytes a counter would take 40).
pub fn encode_counters(c: &[i64]) -> Vec<u8> {
    postcard::to_extend(c, Vec::new()).expect("counters serialize")
}

pub fn decode_counters(v: &[u8]) -> Vec<i64> {
    postcard::take_from_bytes::<Vec<i64>>(v).map(|(c, _)| c).unwrap_or_default()
}

/// The merge operator of the counter families: element-wise sum (associative, so RocksDB
/// may combine operands in any grouping).
pub fn sum_counters(_key: &[u8], existing: Option<&[u8]>, operands: &rocksdb::MergeOperands) -> Option<Vec<u8>> {
    let mut acc = existing.map(decode_counters).unwrap_or_default();
    for op in operands.iter() {
        add_to(&mut acc, op);
    }
    Some(encode_counters(&acc))
}

/// Two counter values summed into one, as the merge operator would: the persister combines
/// a group's operands for one key before they reach RocksDB.
pub fn add_counters(a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut acc = decode_counters(a);
    add_to(&mut acc, b);
    encode_counters(&acc)
}

fn add_to(acc: &mut Vec<i64>, operand: &[u8]) {
    let c = decode_counters(operand);
    if acc.len() < c.len() {
        acc.resize(c.len(), 0);
    }
    for (a, b) in acc.iter_mut().zip(c) {
        *a = a.wrapping_add(b);
    }
}

pub fn market_time_seq(market: u32, time: u64, seq: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(20);
    k.extend_from_slice(&market.to_be_bytes());
    k.extend_from_slice(&time.to_be_bytes());
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

pub fn wallet_prefix(address: &str) -> Vec<u8> {
    let mut k = address.as_bytes().to_vec();
    k.push(b'/');
    k
}

/// `trades_by_wallet` key: the wallet's [`holder_prefix`] (two per fill, so compact like the
/// position keys), the trade's seq and the wallet's role in it. Walk a wallet's trades
/// with its `holder_prefix`.
pub fn wallet_trade(address: &str, seq: u64, role: u8) -> Vec<u8> {
    let mut k = holder_prefix(address);
    k.extend_from_slice(&seq.to_be_bytes());
    k.push(role);
    k
}

/// The key of a wallet's position in a token, the part of the counter families' keys
/// after their 4-byte prefix. A fill writes six, so they are kept short: a lowercase 0x
/// address is its 20 bytes after a 0 tag, then a token id in decimal (as the exchange's
/// are) is 0 and its 32 big-endian bytes, any other token 1 and its text — 54 bytes where
/// the text was 121. Any other address is kept as text, address + `/` + token (text never
/// starts with a 0 byte).
pub fn position(address: &str, token: &str) -> Vec<u8> {
    let mut k = holder_prefix(address);
    if k[0] == COMPACT {
        match crate::domain::packed::decimal_u256(token) {
            Some(t) => {
                k.push(COMPACT);
                k.extend_from_slice(&t);
            }
            None => {
                k.push(1);
                k.extend_from_slice(token.as_bytes());
            }
        }
    } else {
        k.extend_from_slice(token.as_bytes());
    }
    k
}

/// The first byte of a compact holder key.
const COMPACT: u8 = 0;

/// What every [`position`] and [`wallet_trade`] key of a wallet starts with.
pub fn holder_prefix(address: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(54);
    match address.strip_prefix("0x").filter(|h| h.len() == 40 && crate::domain::packed::lower_hex(h)) {
        Some(hex) => {
            k.push(COMPACT);
            k.resize(21, 0);
            alloy_primitives::hex::decode_to_slice(hex, &mut k[1..]).expect("checked hex");
        }
        None => {
            k.extend_from_slice(address.as_bytes());
            k.push(b'/');
        }
    }
    k
}

pub fn market_holder(market: u32, address: &str, token: &str) -> Vec<u8> {
    under(market, &position(address, token))
}

pub fn wallet_day(day: u32, address: &str, token: &str) -> Vec<u8> {
    under(day, &position(address, token))
}

/// A [`position`] key under a 4-byte prefix (a market or a day).
fn under(prefix: u32, position: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(4 + position.len());
    k.extend_from_slice(&prefix.to_be_bytes());
    k.extend_from_slice(position);
    k
}

/// (address, token) of a [`position`] key: a `positions` key, or what follows the 4-byte
/// prefix of a `market_holders` or `wallet_days` key.
pub fn split_position(k: &[u8]) -> Option<(String, String)> {
    match k.split_first()? {
        (&COMPACT, rest) if rest.len() > 20 => {
            let address = format!("0x{}", alloy_primitives::hex::encode(&rest[..20]));
            let token = match rest[20..].split_first()? {
                (&COMPACT, t) => alloy_primitives::U256::try_from_be_slice(t).filter(|_| t.len() == 32)?.to_string(),
                (1, t) => std::str::from_utf8(t).ok()?.to_string(),
                _ => return None,
            };
            Some((address, token))
        }
        _ => {
            let (a, t) = std::str::from_utf8(k).ok()?.split_once('/')?;
            Some((a.to_string(), t.to_string()))
        }
    }
}

/// Merge operands: (family, key, operand).
pub type CounterOps = Vec<(&'static str, Vec<u8>, Vec<u8>)>;

/// The keys of one wallet's position in a token: its position, the market's holders and
/// the day's sums.
pub fn position_keys(market: u32, day: u32, address: &str, token: &str) -> [(&'static str, Vec<u8>); 3] {
    let position = position(address, token);
    let (holder, day) = (under(market, &position), under(day, &position));
    [(super::cf::POSITIONS, position), (super::cf::MARKET_HOLDERS, holder), (super::cf::WALLET_DAYS, day)]
}

/// The operands of one change of a wallet's position in a token (see [`position_keys`]).
pub fn position_ops(market: u32, day: u32, address: &str, token: &str, p: &Position, out: &mut CounterOps) {
    let v = p.encode();
    for (cf, k) in position_keys(market, day, address, token) {
        out.push((cf, k, v.clone()));
    }
}

/// `activity` key: wallet + `/` + time in µs (8) + tx hash (32), so a wallet's rows walk
/// in time order.
pub fn activity(address: &str, micros: u64, tx: &[u8; 32]) -> Vec<u8> {
    let mut k = wallet_prefix(address);
    k.extend_from_slice(&micros.to_be_bytes());
    k.extend_from_slice(tx);
    k
}

/// Whether a trade adds to the counters (+1: when written PENDING) or takes its share back
/// (−1: when it FAILED); None for other states.
pub fn counter_sign(status: TradeStatus) -> Option<i64> {
    match status {
        TradeStatus::Pending => Some(1),
        TradeStatus::Failed => Some(-1),
        _ => None,
    }
}

/// What one leg of a trade does to its wallet's position in its token, times `sign`.
pub fn leg_position(leg: &Leg, sign: i64) -> Position {
    let p = match leg.side {
        Side::Buy => Position {
            size: (leg.size - leg.fee).units() as i64,
            bought: (leg.size - leg.fee).units() as i64,
            cost: leg.amount.units() as i64,
            ..Default::default()
        },
        Side::Sell => Position {
            size: -(leg.size.units() as i64),
            sold: leg.size.units() as i64,
            proceeds: (leg.amount - leg.fee).units() as i64,
            ..Default::default()
        },
    };
    if sign < 0 {
        p.negated()
    } else {
        p
    }
}

/// The `market_stats` operand of a trade (volume in collateral and count), times `sign`.
pub fn market_stats(t: &TradeRecord, sign: i64) -> (&'static str, Vec<u8>, Vec<u8>) {
    let notional = t.price.cost(t.size).units() as i64;
    (super::cf::MARKET_STATS, t.token.market_idx.to_be_bytes().to_vec(), encode_counters(&[sign * notional, sign]))
}

/// The UTC day of a trade, as `wallet_days` keys it.
pub fn trade_day(t: &TradeRecord) -> u32 {
    (t.match_time / DAY) as u32
}

#[cfg(test)]
mod tests {
    use crate::domain::{Amount, Price};
    use uuid::Uuid;

    use super::*;

    #[test]
    fn holder_keys_are_compact_for_real_ids_and_give_back_the_same_strings() {
        let addr = "0x9d84ce0306f8551e02efef1680475fc0f1dc1344";
        let token = "52114319501245915516055106046884209969926127482827954674443846427813813222426";
        let k = position(addr, token);
        assert_eq!(k.len(), 54);
        assert!(k.starts_with(&holder_prefix(addr)));
        assert_eq!(split_position(&k), Some((addr.to_string(), token.to_string())));
        // Tokens that are not canonical decimal u256s stay text after a compact address.
        let max = alloy_primitives::U256::MAX.to_string();
        let over = format!("{max}0");
        for t in ["0", "7", max.as_str(), "yes", "0123", "", "-1", over.as_str()] {
            let k = position(addr, t);
            assert!(k.starts_with(&holder_prefix(addr)), "{t}");
            assert_eq!(split_position(&k), Some((addr.to_string(), t.to_string())), "{t}");
        }
        assert_eq!(position(addr, "7").len(), 54);
        assert_eq!(position(addr, "0123").len(), 26);
        // Addresses that are not lowercase 0x hex keep the text layout.
        for a in ["0xtaker", "0x9D84CE0306F8551E02EFEF1680475FC0F1DC1344", "9d84ce0306f8551e02efef1680475fc0f1dc1344"] {
            let k = position(a, token);
            assert_eq!(k, format!("{a}/{token}").into_bytes());
            assert!(k.starts_with(&holder_prefix(a)));
            assert_eq!(split_position(&k), Some((a.to_string(), token.to_string())));
        }
        // Truncated or unknown compact keys read as nothing rather than panicking.
        assert_eq!(split_position(&k[..30]), None);
        assert_eq!(split_position(&[COMPACT; 22]), None);
        assert_eq!(split_position(&[COMPACT, 1]), None);
    }

    #[test]
    fn counters_round_trip_and_sum() {
        let p = Position { size: -5, bought: 1, cost: 2, sold: 6, proceeds: 3 };
        assert_eq!(Position::decode(&p.encode()), p);
        let mut q = p;
        q.add(&p.negated());
        assert_eq!(q, Position::default());
        assert_eq!(decode_counters(&encode_counters(&[i64::MIN, 0, 7])), vec![i64::MIN, 0, 7]);
        // A fill's change is a fraction of five 8-byte integers.
        let buy = Position { size: 10_000_000, bought: 10_000_000, cost: 5_000_000, ..Default::default() };
        assert_eq!(buy.encode().len(), 15);
        for c in [&[][..], &[0], &[-1, 1 << 62, i64::MAX], &[1 << 40, 0]] {
            assert_eq!(decode_counters(&encode_counters(c)), c);
        }
    }

    /// RocksDB's merge operator sums what each write added.
    #[test]
    fn counters_merged_in_the_store_sum() {
        let dir = tempfile::tempdir().unwrap();
        let store = super::super::Store::open(dir.path()).unwrap();
        let cf = super::super::cf::POSITIONS;
        // One write each, so RocksDB's merge operator (not the persister's coalescing of a
        // group) sums them.
        for (put, v) in [(true, [10, -4, 1, 2, 3]), (false, [1, 1, 1, 1, 1]), (false, [-1, 0, 0, 0, 0])] {
            let mut b = super::super::Batch::default();
            if put {
                b.put(cf, b"k".to_vec(), encode_counters(&v));
            } else {
                b.merge(cf, b"k".to_vec(), encode_counters(&v));
            }
            store.write([&b], true).unwrap();
        }
        assert_eq!(store.counters(cf, b"k").unwrap(), vec![10, -3, 2, 3, 4]);
    }

    /// A tick keeps a decimal token id as its 32 bytes, any other as text.
    #[test]
    fn ticks_keep_the_token_as_bytes() {
        let token = "52114319501245915516055106046884209969926127482827954674443846427813813222426";
        let cf = super::super::cf::TRADES_BY_MARKET;
        for (asset_id, most) in [(token, 60), ("yes", 40)] {
            let t = Tick {
                id: Uuid::from_u128(3),
                asset_id: asset_id.into(),
                price: Price(4200),
                size: Amount(7),
                side: Side::Sell,
            };
            let v = super::super::encode(&t);
            assert!(v.len() < most, "{} bytes", v.len());
            assert_eq!(super::super::Store::decode_value::<Tick>(cf, &v).unwrap(), t);
        }
    }
}
