//! The stored form of the hex and decimal strings records carry. Addresses, condition ids,
//! signatures and token ids are most of an order's and a trade's bytes as text (a 77-digit
//! token id, a 132-character signature); the write-ahead log bounds durable throughput, so
//! the binary store form keeps them as bytes:
//!
//! - `0x` and lowercase hex of an even length up to 2·[`MAX_HEX`] digits: [`HEX`] and the
//!   bytes;
//! - a decimal number in canonical form (no sign, no leading zero) below 2^256: [`DECIMAL`]
//!   and its big-endian bytes without leading zeros;
//! - anything else: its UTF-8 text as it is.
//!
//! The two tags are bytes that never occur in UTF-8, so a plain string is read as itself,
//! and every value unpacks to exactly the string it was packed from. Human-readable formats (JSON) keep the plain string.

use std::borrow::Cow;

use alloy_primitives::{hex, U256};
use serde::{de, Deserializer, Serializer};

/// Tag of lowercase `0x` hex.
pub const HEX: u8 = 0xFF;
/// Tag of a canonical decimal below 2^256.
pub const DECIMAL: u8 = 0xFE;
/// The longest hex string packed, in bytes (a signature is 65).
pub const MAX_HEX: usize = 96;

/// A string's stored form, on the stack.
pub struct Packed {
    buf: [u8; MAX_HEX + 1],
    len: usize,
}

impl Packed {
    /// The packed form, or None when `s` is kept as text.
    pub fn new(s: &str) -> Option<Packed> {
        let mut p = Packed { buf: [0; MAX_HEX + 1], len: 0 };
        if let Some(h) = s.strip_prefix("0x").filter(|h| lower_hex(h) && h.len() / 2 <= MAX_HEX) {
            p.buf[0] = HEX;
            p.len = 1 + h.len() / 2;
            hex::decode_to_slice(h, &mut p.buf[1..p.len]).expect("checked hex");
            return Some(p);
        }
        let v = decimal_u256(s)?;
        let skip = v.iter().take_while(|&&b| b == 0).count();
        p.buf[0] = DECIMAL;
        p.len = 1 + 32 - skip;
        p.buf[1..p.len].copy_from_slice(&v[skip..]);
        Some(p)
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// Even-length lowercase hex digits (empty included).
pub fn lower_hex(h: &str) -> bool {
    h.len().is_multiple_of(2) && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A number written in canonical decimal (no sign, no leading zero) that fits 256 bits, as
/// big-endian bytes; None for any other text, so the bytes give back the same string.
pub fn decimal_u256(s: &str) -> Option<[u8; 32]> {
    // Short numbers parse in one or two chunks: not worth a lookup.
    if s.len() < MEMO_MIN_LEN || s.len() > MAX_DIGITS {
        return parse_decimal_u256(s);
    }
    MEMO.with_borrow_mut(|m| m.get(s))
}

/// Digits of the shortest number [`decimal_u256`] remembers (token ids have 70–78).
const MEMO_MIN_LEN: usize = 24;
/// Digits of the longest number that fits 256 bits.
const MAX_DIGITS: usize = 78;
/// Numbers each thread remembers (a power of two: a slot is the top bits of a hash).
const MEMO_SLOTS: usize = 64;

thread_local! {
    static MEMO: std::cell::RefCell<DecimalMemo> = const { std::cell::RefCell::new(DecimalMemo::EMPTY) };
}

/// The long numbers a thread parsed last, by a hash of their last digits, each slot
/// holding the digits and what they parse to (None included). The persister packs the
/// same few token ids many times per group — six position keys per fill, the trade's
/// assets — and parsing one costs far more than comparing its digits.
struct DecimalMemo {
    slots: [(u8, [u8; MAX_DIGITS], Option<[u8; 32]>); MEMO_SLOTS],
}

impl DecimalMemo {
    const EMPTY: DecimalMemo = DecimalMemo { slots: [(0, [0; MAX_DIGITS], None); MEMO_SLOTS] };

    fn get(&mut self, s: &str) -> Option<[u8; 32]> {
        let b = s.as_bytes();
        let tail = u64::from_le_bytes(b[b.len() - 8..].try_into().expect("8 bytes"));
        let hash = (tail ^ b.len() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) as usize;
        let i = hash >> (usize::BITS - MEMO_SLOTS.trailing_zeros());
        let (len, digits, v) = &mut self.slots[i];
        if *len as usize == b.len() && digits[..b.len()] == *b {
            return *v;
        }
        *v = parse_decimal_u256(s);
        *len = b.len() as u8;
        digits[..b.len()].copy_from_slice(b);
        *v
    }
}

fn parse_decimal_u256(s: &str) -> Option<[u8; 32]> {
    let canonical = !s.is_empty()
        && s.len() <= MAX_DIGITS
        && s.bytes().all(|b| b.is_ascii_digit())
        && (s == "0" || !s.starts_with('0'));
    if !canonical {
        return None;
    }
    // Nineteen digits at a time into a u64, then one 256-bit multiply-add per chunk: the
    // persister packs a dozen token ids per fill, and digit-by-digit parsing (ruint's
    // `from_str_radix`) costs several times more.
    let digits = s.as_bytes();
    let first = match digits.len() % 19 {
        0 => 19,
        r => r,
    };
    let mut v = U256::ZERO;
    for chunk in std::iter::once(&digits[..first]).chain(digits[first..].chunks(19)) {
        let n = chunk.iter().fold(0u64, |n, d| n * 10 + (d - b'0') as u64);
        let scale = U256::from(10u64.pow(chunk.len() as u32));
        v = v.checked_mul(scale)?.checked_add(U256::from(n))?;
    }
    Some(v.to_be_bytes())
}

/// Whether `b` is a stored form: what [`Packed`] gives or a string's UTF-8.
pub fn valid(b: &[u8]) -> bool {
    match b.split_first() {
        Some((&HEX, _)) => true,
        Some((&DECIMAL, bytes)) => bytes.len() <= 32 && bytes.first() != Some(&0),
        _ => std::str::from_utf8(b).is_ok(),
    }
}

/// The string a stored form holds; None for bytes that are not one ([`valid`]).
pub fn unpack(b: &[u8]) -> Option<Cow<'_, str>> {
    if !valid(b) {
        return None;
    }
    Some(match b.split_first() {
        Some((&HEX, bytes)) => Cow::Owned(format!("0x{}", hex::encode(bytes))),
        Some((&DECIMAL, bytes)) => Cow::Owned(U256::from_be_slice(bytes).to_string()),
        _ => Cow::Borrowed(std::str::from_utf8(b).expect("valid")),
    })
}

/// `#[serde(with = "packed")]` for a string field (`Arc<str>`, `String`).
pub fn serialize<T: AsRef<str>, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    let v = v.as_ref();
    if s.is_human_readable() {
        return s.serialize_str(v);
    }
    match Packed::new(v) {
        Some(p) => s.serialize_bytes(p.as_bytes()),
        None => s.serialize_bytes(v.as_bytes()),
    }
}

/// What a string field can be read back as: built from its string, or from its stored
/// bytes (by default unpacked to the string first).
pub trait FromStored: for<'a> From<&'a str> {
    fn from_stored(b: &[u8]) -> Option<Self> {
        unpack(b).map(|s| Self::from(s.as_ref()))
    }
}

impl FromStored for String {}
impl FromStored for std::sync::Arc<str> {}

/// See [`serialize`].
pub fn deserialize<'de, T: FromStored, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
    if d.is_human_readable() {
        d.deserialize_str(Visit(std::marker::PhantomData))
    } else {
        d.deserialize_bytes(Visit(std::marker::PhantomData))
    }
}

struct Visit<T>(std::marker::PhantomData<T>);

impl<T: FromStored> de::Visitor<'_> for Visit<T> {
    type Value = T;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a string or its packed bytes")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        Ok(T::from(v))
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<T, E> {
        T::from_stored(v).ok_or_else(|| E::custom("malformed packed string"))
    }
}

/// A packed string borrowed from the encoded bytes, unpacked later (startup decodes a
/// million orders and shares their repeated strings by these bytes; see `Interner`).
#[derive(Clone, Copy)]
pub struct PackedRef<'a>(pub &'a [u8]);

impl<'a> PackedRef<'a> {
    pub fn unpack(self) -> Cow<'a, str> {
        unpack(self.0).expect("checked when decoded")
    }
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for PackedRef<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> de::Visitor<'de> for V {
            type Value = PackedRef<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("packed string bytes")
            }
            fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> Result<Self::Value, E> {
                if !valid(v) {
                    return Err(E::custom("malformed packed string"));
                }
                Ok(PackedRef(v))
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(PackedRef(v.as_bytes()))
            }
        }
        d.deserialize_bytes(V)
    }
}

/// A string held in its stored form (the [`Packed`] bytes, or its UTF-8 when it has none),
/// for a field the exchange keeps per open order but never reads as text on the request
/// path: the order's signature, 66 bytes instead of 132 characters. It is written to the
/// store as it is (the same bytes `#[serde(with = "packed")]` writes for the string) and
/// unpacked only when shown.
/// The default is the empty string (no allocation).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct PackedStr(Box<[u8]>);

impl PackedStr {
    pub fn new(s: &str) -> PackedStr {
        PackedStr(Packed::new(s).map(|p| p.as_bytes().into()).unwrap_or_else(|| s.as_bytes().into()))
    }

    /// The string it holds.
    pub fn unpack(&self) -> Cow<'_, str> {
        unpack(&self.0).expect("a stored form by construction")
    }

    /// The stored form.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

/// The stored bytes copied, not unpacked; text that would pack is packed, so equal strings
/// are equal bytes.
impl FromStored for PackedStr {
    fn from_stored(b: &[u8]) -> Option<PackedStr> {
        match b.first() {
            Some(&HEX | &DECIMAL) => valid(b).then(|| PackedStr(b.into())),
            _ => std::str::from_utf8(b).ok().map(PackedStr::new),
        }
    }
}

impl From<&str> for PackedStr {
    fn from(s: &str) -> PackedStr {
        PackedStr::new(s)
    }
}

impl From<String> for PackedStr {
    fn from(s: String) -> PackedStr {
        PackedStr::new(&s)
    }
}

/// The bytes were checked when decoded: copied (text of the earlier form packed), never
/// unpacked.
impl From<PackedRef<'_>> for PackedStr {
    fn from(r: PackedRef<'_>) -> PackedStr {
        PackedStr::from_stored(r.0).expect("checked when decoded")
    }
}

impl std::fmt::Debug for PackedStr {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.unpack(), f)
    }
}

impl serde::Serialize for PackedStr {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            s.serialize_str(&self.unpack())
        } else {
            s.serialize_bytes(&self.0)
        }
    }
}

impl<'de> serde::Deserialize<'de> for PackedStr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(s: &str) -> Vec<u8> {
        PackedStr::new(s).as_bytes().to_vec()
    }

    #[test]
    fn every_string_unpacks_to_itself() {
        let sig = format!("0x{}", "ab".repeat(65));
        let long_hex = format!("0x{}", "0f".repeat(MAX_HEX + 1));
        let max = U256::MAX.to_string();
        let over = "115792089237316195423570985008687907853269984665640564039457584007913129639936";
        for s in [
            "0x8ba1f109551bd432803012645ac136ddd64dba72",
            "0x0000000000000000000000000000000000000000",
            "0x5f65177b394277fd294cd75650044e32ba009a95022d88a0c1d565897d72f8f1",
            "71321045679252212594626385532706912750332728571942532289631379312455583992563",
            "0",
            "1",
            "256",
            &max,
            over,
            "007",
            "-1",
            "+1",
            "",
            "0x",
            "0x0",
            "0xABCD",
            "0XAB",
            "Yes",
            "USDC",
            "héllo",
            &sig,
            &long_hex,
        ] {
            let b = stored(s);
            assert_eq!(unpack(&b).as_deref(), Some(s), "{s}");
        }
        assert_eq!(stored("0x8ba1f109551bd432803012645ac136ddd64dba72").len(), 21);
        assert_eq!(stored(&sig).len(), 66);
        assert_eq!(stored("71321045679252212594626385532706912750332728571942532289631379312455583992563").len(), 33);
        assert_eq!(stored("256"), [DECIMAL, 1, 0]);
        assert_eq!(stored("0"), [DECIMAL]);
        // Kept as text: not canonical, too big, upper case, odd length, too long.
        for s in ["007", over, "0xABCD", "0x0", &long_hex] {
            assert_eq!(stored(s), s.as_bytes(), "{s}");
        }
    }

    proptest::proptest! {
        /// The chunked decimal parse agrees with ruint's on every digit string up to 78
        /// digits (the largest overflow 2^256, which ruint refuses too).
        #[test]
        fn decimal_parse_agrees_with_ruint(s in "[1-9][0-9]{0,77}|0") {
            let ours = parse_decimal_u256(&s);
            proptest::prop_assert_eq!(decimal_u256(&s), ours);
            let theirs = U256::from_str_radix(&s, 10).ok().map(|v| v.to_be_bytes::<32>());
            proptest::prop_assert_eq!(ours, theirs);
        }
    }

    /// The memo gives what a parse gives, for numbers that share a slot, for text that is
    /// not a number, and after a slot was reused.
    #[test]
    fn remembered_numbers_parse_as_fresh_ones() {
        let max = U256::MAX.to_string();
        let mut inputs: Vec<String> = (0..500u64)
            .map(|i| (U256::from(i) * U256::from(10u64).pow(U256::from(60)) + U256::from(i * 7919)).to_string())
            .collect();
        inputs.extend(["9".repeat(78), "0".repeat(30), format!("{max}0"), "12345678901234567890123x".into(), max]);
        for round in 0..3 {
            for s in &inputs {
                assert_eq!(decimal_u256(s), parse_decimal_u256(s), "{s} (round {round})");
            }
        }
        assert!(inputs.iter().any(|s| parse_decimal_u256(s).is_none()));
    }

    #[test]
    fn decimal_parse_edges() {
        let max = U256::MAX.to_string();
        assert_eq!(decimal_u256(&max), Some([0xFF; 32]));
        let over = "115792089237316195423570985008687907853269984665640564039457584007913129639936";
        assert_eq!(decimal_u256(over), None);
        assert_eq!(decimal_u256(&"9".repeat(78)), None);
        let two_64 = (U256::from(u64::MAX) + U256::from(1u8)).to_string();
        assert_eq!(U256::from_be_bytes(decimal_u256(&two_64).unwrap()), U256::from(u64::MAX) + U256::from(1u8));
        assert_eq!(U256::from_be_bytes(decimal_u256("10000000000000000000").unwrap()), U256::from(10u64.pow(19)));
    }

    #[test]
    fn malformed_bytes_are_refused() {
        assert_eq!(unpack(&[DECIMAL, 0, 1]), None);
        assert_eq!(unpack(&[DECIMAL; 34]), None);
        assert_eq!(unpack(&[0xC3]), None);
    }

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Rec {
        #[serde(with = "super")]
        a: std::sync::Arc<str>,
        #[serde(with = "super")]
        b: String,
    }

    #[derive(serde::Serialize)]
    struct Plain {
        a: String,
        b: String,
    }

    #[test]
    fn serde_packs_binary_formats_only() {
        let r = Rec { a: "0x8ba1f109551bd432803012645ac136ddd64dba72".into(), b: "Yes".into() };
        let bin = postcard::to_allocvec(&r).unwrap();
        assert_eq!(bin.len(), 1 + 21 + 1 + 3);
        assert_eq!(postcard::from_bytes::<Rec>(&bin).unwrap(), r);
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(json, r#"{"a":"0x8ba1f109551bd432803012645ac136ddd64dba72","b":"Yes"}"#);
        assert_eq!(serde_json::from_str::<Rec>(&json).unwrap(), r);
        // Values written as plain strings before the packed form read the same.
        let old = postcard::to_allocvec(&Plain { a: r.a.to_string(), b: r.b.clone() }).unwrap();
        assert_eq!(postcard::from_bytes::<Rec>(&old).unwrap(), r);
        // A tag with bytes no string packs to is an error, not a wrong string.
        assert!(postcard::from_bytes::<Rec>(&[2, DECIMAL, 0, 0]).is_err());
    }

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Held {
        a: PackedStr,
        b: PackedStr,
    }

    /// A string held packed is stored exactly as `#[serde(with = "packed")]` stores it, so
    /// either reads the other's bytes, and it shows as its string.
    #[test]
    fn packed_str_is_stored_like_a_packed_string() {
        let sig = format!("0x{}", "ab".repeat(65));
        for (a, b) in [(sig.as_str(), "Yes"), ("0xsig", ""), ("0xABCD", "256")] {
            let held = Held { a: a.into(), b: b.to_string().into() };
            assert_eq!(held.a.unpack(), a);
            assert_eq!(format!("{:?}", held.b), format!("{b:?}"));
            let as_string = Rec { a: a.into(), b: b.into() };
            let bin = postcard::to_allocvec(&held).unwrap();
            assert_eq!(bin, postcard::to_allocvec(&as_string).unwrap());
            assert_eq!(postcard::from_bytes::<Held>(&bin).unwrap(), held);
            assert_eq!(postcard::from_bytes::<Rec>(&bin).unwrap(), as_string);
            let old = postcard::to_allocvec(&Plain { a: a.into(), b: b.into() }).unwrap();
            assert_eq!(postcard::from_bytes::<Held>(&old).unwrap(), held);
            let json = serde_json::to_string(&held).unwrap();
            assert_eq!(json, serde_json::to_string(&Plain { a: a.into(), b: b.into() }).unwrap());
            assert_eq!(serde_json::from_str::<Held>(&json).unwrap(), held);
        }
        assert_eq!(PackedStr::new(&sig).as_bytes().len(), 66);
        assert!(postcard::from_bytes::<Held>(&[2, DECIMAL, 0, 0, 0]).is_err());
    }
}
