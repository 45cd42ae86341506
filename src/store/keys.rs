//! Key encodings: fixed-width big-endian parts so range scans are ordered.

use uuid::Uuid;

/// owner (16 bytes) + seq (8 bytes BE).
pub fn owner_seq(owner: &Uuid, seq: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(24);
    k.extend_from_slice(owner.as_bytes());
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

/// address + nonce (BE): the key of an API key by its wallet.
pub fn address_nonce(address: &str, nonce: u64) -> Vec<u8> {
    let mut k = super::index::wallet_prefix(address);
    k.extend_from_slice(&nonce.to_be_bytes());
    k
}

/// owner (16) + trade seq (8 BE) + kind (1): a notification, in trade order per key.
pub fn notification(owner: &Uuid, trade_seq: u64, kind: u8) -> Vec<u8> {
    let mut k = owner_seq(owner, trade_seq);
    k.push(kind);
    k
}

/// The `rfq` family: requests, quotes and their indexes, each under a two-byte tag.
pub(super) mod rfq {
    use uuid::Uuid;

    fn key(tag: &[u8], parts: &[&[u8]]) -> Vec<u8> {
        let mut k = tag.to_vec();
        for p in parts {
            k.extend_from_slice(p);
        }
        k
    }
    /// request id → the request.
    pub fn request(id: &Uuid) -> Vec<u8> {
        key(b"r/", &[id.as_bytes()])
    }
    /// request id + quote id → the quote.
    pub fn quote(rfq: &Uuid, quote: &Uuid) -> Vec<u8> {
        key(b"q/", &[rfq.as_bytes(), quote.as_bytes()])
    }
    pub fn quotes_of(rfq: &Uuid) -> Vec<u8> {
        key(b"q/", &[rfq.as_bytes()])
    }
    /// quote id → its request id.
    pub fn quote_index(quote: &Uuid) -> Vec<u8> {
        key(b"i/", &[quote.as_bytes()])
    }
    /// requester key + created + request id (empty value).
    pub fn owner(owner: &Uuid, at: u64, id: &Uuid) -> Vec<u8> {
        key(b"o/", &[owner.as_bytes(), &at.to_be_bytes(), id.as_bytes()])
    }
    pub fn owner_prefix(owner: &Uuid) -> Vec<u8> {
        key(b"o/", &[owner.as_bytes()])
    }
    /// quoter key + created + quote id → request id.
    pub fn quoter(owner: &Uuid, at: u64, quote: &Uuid) -> Vec<u8> {
        key(b"p/", &[owner.as_bytes(), &at.to_be_bytes(), quote.as_bytes()])
    }
    pub fn quoter_prefix(owner: &Uuid) -> Vec<u8> {
        key(b"p/", &[owner.as_bytes()])
    }
    /// Open requests, by id.
    pub const OPEN: &[u8] = b"a/";
    pub fn open(id: &Uuid) -> Vec<u8> {
        key(OPEN, &[id.as_bytes()])
    }
    /// Expiry index: time, then kind 0 = request (rfq id), 1 = quote (rfq id + quote id).
    pub const EXPIRY: &[u8] = b"x/";
    pub fn expiry(at: u64, rfq: &Uuid, quote: Option<&Uuid>) -> Vec<u8> {
        match quote {
            None => key(EXPIRY, &[&at.to_be_bytes(), &[0], rfq.as_bytes()]),
            Some(q) => key(EXPIRY, &[&at.to_be_bytes(), &[1], rfq.as_bytes(), q.as_bytes()]),
        }
    }
    /// What an expiry key names: (time, request, quote).
    pub fn parse_expiry(k: &[u8]) -> Option<(u64, Uuid, Option<Uuid>)> {
        let at = u64::from_be_bytes(k.get(2..10)?.try_into().ok()?);
        let rfq = uuid_at(k, 11)?;
        Some((at, rfq, if k.get(10) == Some(&1) { Some(uuid_at(k, 27)?) } else { None }))
    }
    pub fn uuid_at(k: &[u8], at: usize) -> Option<Uuid> {
        k.get(at..at + 16).and_then(|b| Uuid::from_slice(b).ok())
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn expiry_keys_sort_by_time_then_kind() {
            let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
            assert!(expiry(5, &a, Some(&b)) < expiry(6, &a, None));
            assert!(expiry(5, &a, None) < expiry(5, &a, Some(&b)));
            assert_eq!(uuid_at(&expiry(5, &a, Some(&b)), 27), Some(b));
            assert_eq!(uuid_at(&expiry(5, &a, None), 11), Some(a));
            assert_eq!(parse_expiry(&expiry(5, &a, Some(&b))), Some((5, a, Some(b))));
            assert_eq!(parse_expiry(&expiry(7, &a, None)), Some((7, a, None)));
        }
    }
}

/// The `bridge` family (registered addresses, credited source transactions, the open
/// withdrawals) and `transfers_by_address`; `transfers` is keyed by id (8 bytes BE).
pub(super) mod bridge {
    /// bridge address → what it stands for.
    pub fn address(a: &str) -> Vec<u8> {
        [b"a/", a.as_bytes()].concat()
    }
    /// source chain and transaction of a credited deposit → transfer id.
    pub fn source_tx(chain: &str, tx: &str) -> Vec<u8> {
        [b"t/", chain.as_bytes(), b"/", tx.as_bytes()].concat()
    }
    /// PROCESSING withdrawals, by id.
    pub const OPEN: &[u8] = b"o/";
    pub fn open(id: u64) -> Vec<u8> {
        [OPEN, &id.to_be_bytes()].concat()
    }
    /// An address's transfers, oldest first (`transfers_by_address`).
    pub fn by_address(a: &str, id: u64) -> Vec<u8> {
        [a.as_bytes(), b"/", &id.to_be_bytes()].concat()
    }
    pub fn by_address_prefix(a: &str) -> Vec<u8> {
        [a.as_bytes(), b"/"].concat()
    }
    /// The id at the end of a key (or a value) of these layouts.
    pub fn id_at_end(k: &[u8]) -> u64 {
        k.len().checked_sub(8).and_then(|at| k[at..].try_into().ok()).map(u64::from_be_bytes).unwrap_or(0)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn keys_end_with_the_id() {
            assert_eq!(id_at_end(&by_address("0xab", 7)), 7);
            assert_eq!(id_at_end(&open(300)), 300);
            assert_eq!(id_at_end(b"short"), 0);
        }
    }
}

/// The catalogue's families: `series` and `events` by id (8 bytes BE), `market_meta` by
/// condition id, `comments` by parent.
pub(super) mod catalogue {
    use crate::domain::catalogue::ParentKind;

    /// Key of a comment: parent kind (1) + parent id (8) + comment id (8), so a parent's
    /// comments are one prefix, newest last.
    pub fn comment(kind: ParentKind, parent: u64, id: u64) -> Vec<u8> {
        let mut k = comments_of(kind, parent);
        k.extend_from_slice(&id.to_be_bytes());
        k
    }

    pub fn comments_of(kind: ParentKind, parent: u64) -> Vec<u8> {
        let mut k = vec![kind.code()];
        k.extend_from_slice(&parent.to_be_bytes());
        k
    }
}

/// The `builders` family: service keys, their index by owner, claimed builder IDs and
/// the orders attributed to each builder.
pub(super) mod builders {
    use uuid::Uuid;

    use crate::domain::builders::KeyKind;

    fn tag(kind: KeyKind) -> &'static str {
        match kind {
            KeyKind::Builder => "b",
            KeyKind::Relayer => "r",
            KeyKind::Readonly => "o",
        }
    }
    /// read-only key id → the L2 key it reads for.
    pub fn reads_for(k: &Uuid) -> Vec<u8> {
        [b"p/".as_slice(), k.as_bytes()].concat()
    }
    /// key id → the key (its record holds the secret: sealed with a secrets key).
    pub fn key(k: &Uuid) -> Vec<u8> {
        [KEY_PREFIX, k.as_bytes()].concat()
    }
    pub const KEY_PREFIX: &[u8] = b"k/";
    /// owner + kind + key id (empty value).
    pub fn owner(address: &str, kind: KeyKind, k: &Uuid) -> Vec<u8> {
        [owner_prefix(address, kind).as_slice(), k.as_bytes()].concat()
    }
    pub fn owner_prefix(address: &str, kind: KeyKind) -> Vec<u8> {
        format!("a/{address}/{}/", tag(kind)).into_bytes()
    }
    /// builder ID → the address that claimed it.
    pub fn claim(builder: &str) -> Vec<u8> {
        format!("n/{builder}").into_bytes()
    }
    pub const CLAIM_PREFIX: &[u8] = b"n/";
    /// builder code (32 bytes, `domain::builders::builder_code`) → the builder ID.
    pub fn code(code: &[u8; 32]) -> Vec<u8> {
        [b"c/".as_slice(), code.as_slice()].concat()
    }
    /// builder ID + order id (empty value).
    pub fn attributed(builder: &str, order: &Uuid) -> Vec<u8> {
        [attributed_prefix(builder).as_slice(), order.as_bytes()].concat()
    }
    pub fn attributed_prefix(builder: &str) -> Vec<u8> {
        format!("o/{builder}/").into_bytes()
    }
}

/// The `bonds` family: bonds by agent and by market, proposals, cluster assignments,
/// question auctions and their bids, each under a one-letter tag.
pub(super) mod resolution {
    /// agent + market → the bond.
    pub fn bond(agent: &str, condition_id: &str) -> Vec<u8> {
        format!("b/{agent}/{condition_id}").into_bytes()
    }
    pub fn bonds_of_agent(agent: &str) -> Vec<u8> {
        format!("b/{agent}/").into_bytes()
    }
    /// market + agent (empty value).
    pub fn market_bond(condition_id: &str, agent: &str) -> Vec<u8> {
        format!("m/{condition_id}/{agent}").into_bytes()
    }
    pub fn bonds_of_market(condition_id: &str) -> Vec<u8> {
        format!("m/{condition_id}/").into_bytes()
    }
    /// market → its payouts as reported to the chain (chain mode).
    pub const PAYOUT_REPORTS: &[u8] = b"p/";
    pub fn payout_report(condition_id: &str) -> Vec<u8> {
        format!("p/{condition_id}").into_bytes()
    }
    /// market → its proposal.
    pub const PROPOSALS: &[u8] = b"r/";
    pub fn proposal(condition_id: &str) -> Vec<u8> {
        format!("r/{condition_id}").into_bytes()
    }
    /// market → its cluster (u64), when the operator assigned one.
    pub fn cluster(condition_id: &str) -> Vec<u8> {
        format!("k/{condition_id}").into_bytes()
    }
    /// market → its question auction.
    pub const AUCTIONS: &[u8] = b"u/";
    pub fn auction(condition_id: &str) -> Vec<u8> {
        format!("u/{condition_id}").into_bytes()
    }
    /// market + agent → the agent's summed bids.
    pub fn bid(condition_id: &str, agent: &str) -> Vec<u8> {
        format!("v/{condition_id}/{agent}").into_bytes()
    }
    pub fn bids(condition_id: &str) -> Vec<u8> {
        format!("v/{condition_id}/").into_bytes()
    }
}

/// The `rewards` family (programs, accrued earnings, paid rewards) and `rebates`.
pub(super) mod rewards {
    use crate::store::index::wallet_prefix;

    /// market → its reward program.
    pub const CONFIGS: &[u8] = b"c/";
    pub fn config(condition_id: &str) -> Vec<u8> {
        [CONFIGS, condition_id.as_bytes()].concat()
    }
    /// `e/` + day + address + `/` + condition id: a maker's accrued rewards in a market on
    /// a day, as counters [micro-units earned, samples it scored in].
    pub const EARNINGS: &[u8] = b"e/";
    pub fn earning(day: u32, address: &str, condition_id: &str) -> Vec<u8> {
        let mut k = earnings(day, Some(address));
        k.extend_from_slice(condition_id.as_bytes());
        k
    }
    pub fn earnings(day: u32, address: Option<&str>) -> Vec<u8> {
        let mut k = EARNINGS.to_vec();
        k.extend_from_slice(&day.to_be_bytes());
        if let Some(a) = address {
            k.extend_from_slice(&wallet_prefix(a));
        }
        k
    }
    /// The day of an earnings key.
    pub fn earning_day(k: &[u8]) -> Option<u32> {
        Some(u32::from_be_bytes(k.get(2..6)?.try_into().ok()?))
    }
    /// (address, condition id) of an earnings key, after its prefix `e/` + day.
    pub fn split_earning(k: &[u8]) -> Option<(&str, &str)> {
        std::str::from_utf8(k.get(6..)?).ok()?.split_once('/')
    }
    /// address + day → the rewards paid.
    pub fn paid(address: &str, day: u32) -> Vec<u8> {
        let mut k = b"p/".to_vec();
        k.extend_from_slice(&wallet_prefix(address));
        k.extend_from_slice(&day.to_be_bytes());
        k
    }
    /// address + day → the rebate paid (`rebates`).
    pub fn rebate(address: &str, day: u32) -> Vec<u8> {
        let mut k = wallet_prefix(address);
        k.extend_from_slice(&day.to_be_bytes());
        k
    }
}
