//! The signatures of the state-changing L2 requests served while their timestamps are fresh:
//! a captured request sent again is refused (409 `duplicate request`) rather than done twice.
//!
//! An L2 signature covers the timestamp, method, path and body, and a timestamp is accepted
//! for [`MAX_DRIFT_SECS`] either side of the server's clock; so a signature is remembered
//! until its timestamp is too old to be accepted, then forgotten. Each is kept as 16 bytes
//! of a SHA-256 of the key and the signature, in 16 mutex-guarded shards swept as they are
//! used. The cache is bounded ([`MAX_ENTRIES`]): when it is full of fresh signatures a new
//! request is refused as busy (503) rather than let a replay through.

use std::collections::HashMap;

use parking_lot::Mutex;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::auth::MAX_DRIFT_SECS;

const SHARDS: usize = 16;

/// Signatures remembered at most, over all shards.
pub const MAX_ENTRIES: usize = 1 << 20;

#[derive(Default)]
struct Shard {
    /// Signature digest → the second after which its timestamp is no longer accepted.
    seen: HashMap<u128, i64>,
    last_sweep: i64,
}

/// What [`Replays::first_use`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Use {
    First,
    /// The signature was served already while its timestamp is fresh.
    Replay,
    /// The cache is full of fresh signatures.
    Full,
}

pub struct Replays {
    shards: Vec<Mutex<Shard>>,
}

impl Default for Replays {
    fn default() -> Self {
        Replays { shards: (0..SHARDS).map(|_| Mutex::default()).collect() }
    }
}

impl Replays {
    /// Records `signature` of `key`, timestamped `ts`, as served at `now` (seconds):
    /// whether this is its first use.
    pub fn first_use(&self, key: &Uuid, signature: &str, ts: i64, now: i64) -> Use {
        let mut h = Sha256::new();
        h.update(key.as_bytes());
        h.update(signature.as_bytes());
        let digest = u128::from_be_bytes(h.finalize()[..16].try_into().expect("16 of 32 bytes"));
        let mut shard = self.shards[(digest % SHARDS as u128) as usize].lock();
        if now != shard.last_sweep {
            shard.last_sweep = now;
            shard.seen.retain(|_, until| *until >= now);
        }
        if shard.seen.get(&digest).is_some_and(|until| *until >= now) {
            return Use::Replay;
        }
        if shard.seen.len() >= MAX_ENTRIES / SHARDS {
            return Use::Full;
        }
        shard.seen.insert(digest, ts + MAX_DRIFT_SECS);
        Use::First
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_is_refused_while_its_timestamp_is_fresh_then_forgotten() {
        let r = Replays::default();
        let (k, other) = (Uuid::from_u128(1), Uuid::from_u128(2));
        assert_eq!(r.first_use(&k, "sig", 1000, 1000), Use::First);
        assert_eq!(r.first_use(&k, "sig", 1000, 1010), Use::Replay);
        assert_eq!(r.first_use(&k, "sig", 1000, 1000 + MAX_DRIFT_SECS), Use::Replay, "the last second it is accepted");
        assert_eq!(r.first_use(&other, "sig", 1000, 1010), Use::First, "another key's signature");
        assert_eq!(r.first_use(&k, "sig2", 1000, 1010), Use::First);
        // Past the drift the timestamp itself is refused (by authentication), and the entry
        // is forgotten: the same bytes are new again.
        let now = 1000 + MAX_DRIFT_SECS + 1;
        assert_eq!(r.first_use(&k, "sig", now, now), Use::First);
        // A shard is swept when it is used: the one used now holds nothing stale.
        for shard in &r.shards {
            let shard = shard.lock();
            assert!(shard.last_sweep != now || shard.seen.values().all(|until| *until >= now));
        }
        assert!(r.shards.iter().any(|s| s.lock().last_sweep == now));
    }

    #[test]
    fn a_full_cache_refuses_rather_than_forgets() {
        let r = Replays::default();
        let k = Uuid::from_u128(1);
        let mut full = 0;
        for i in 0..MAX_ENTRIES + SHARDS * 64 {
            if r.first_use(&k, &i.to_string(), 50, 50) == Use::Full {
                full += 1;
            }
        }
        assert!(full >= SHARDS * 64, "{full}");
        // Once the signatures' timestamps are stale they are swept and room comes back.
        assert_eq!(r.first_use(&k, "late", 50 + MAX_DRIFT_SECS + 1, 50 + MAX_DRIFT_SECS + 1), Use::First);
    }
}
