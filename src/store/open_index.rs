//! Where each open order's record is: order id → sequence, in memory.
//!
//! An open order's record lives in `live_orders` under its sequence (its priority), so the
//! open orders are one ordered scan at startup; a read by id needs the sequence. Kept in a
//! column family, that map would be a key scattered over the key space by the order's
//! hashed id, written when an order opens and deleted when it closes: the dearest write
//! of a fill. Every start reads all open orders anyway, so the map is built by that scan
//! and kept here, for a few dozen bytes of memory an open order.
//!
//! The open orders of each owner (API key) are kept here too, by sequence, for the list
//! of a key's open orders: they were a column family (`open_by_owner`) written when an
//! order opened and deleted when it closed, the last scattered write an open order had, and
//! the family whose memtable pinned the oldest log a start after kill -9 replayed.
//!
//! Writers are the store's own: [`Store::prepare`](super::Store::prepare) adds an order
//! when it opens, before its write; [`Store::commit`](super::Store::commit) removes the
//! orders that closed, after theirs. So a reader that finds no sequence finds the record
//! in `orders` (written by the same commit), and a reader that finds one looks in
//! `live_orders` first and falls back to `orders`. The matching thread never takes these
//! locks; the persister's two threads and the HTTP readers do, one id shard at a time,
//! and the owners' map once a group.

use std::collections::hash_map::Entry;
use std::collections::BTreeSet;

use parking_lot::RwLock;
use uuid::Uuid;

use crate::incremental_map::IncrementalMap;

/// Shards, so a reader and the persister rarely meet on one lock.
const SHARDS: usize = 16;

#[derive(Default)]
pub struct OpenIndex {
    shards: [RwLock<Shard>; SHARDS],
    /// Owner → the sequences of its open orders (in priority order, as a list shows them).
    owners: RwLock<foldhash::HashMap<Uuid, BTreeSet<u64>>>,
}

/// An open order is kept under its id's first 8 bytes (16 bytes an entry with its seq,
/// where the whole id would take 24).
/// Two open orders rarely share those bytes (ids are hashes), but may: the later one goes
/// to `clashes` under its whole id. So a sequence found by prefix may be another order's,
/// and a reader checks the record's id ([`OpenIndex::get`]).
///
/// `by_prefix` grows a few entries a write ([`IncrementalMap`]): a shard growing all at once
/// held its write lock, and the persister's group, for 5–14 ms between half a million
/// and two million open orders, and the shards, filled evenly, grow within a few hundred
/// orders of one another.
#[derive(Default)]
struct Shard {
    by_prefix: IncrementalMap<u64, u64>,
    clashes: foldhash::HashMap<Uuid, u64>,
}

impl Shard {
    fn insert(&mut self, id: Uuid, seq: u64) {
        let p = prefix(&id);
        // Taken: by the same order entered again (a sequence is one order's), or by another
        // order whose id shares the prefix.
        if !self.by_prefix.insert_if_vacant(p, seq) && self.by_prefix.get(&p) != Some(&seq) {
            self.clashes.insert(id, seq);
        }
    }

    fn remove(&mut self, id: &Uuid, seq: u64) {
        if self.clashes.get(id) == Some(&seq) {
            self.clashes.remove(id);
            return;
        }
        self.by_prefix.remove_where(&prefix(id), |&s| s == seq);
    }

    fn get(&self, id: &Uuid) -> Option<u64> {
        // A lookup in an empty map returns before hashing.
        self.clashes.get(id).or_else(|| self.by_prefix.get(&prefix(id))).copied()
    }
}

impl OpenIndex {
    fn shard(&self, id: &Uuid) -> &RwLock<Shard> {
        &self.shards[shard_of(id)]
    }

    /// Enters (and takes out of `found`) what a startup scan found, each shard under one
    /// lock taking, starting at shard `first` (two scan threads that fill at once start
    /// apart, so they rarely wait for each other).
    pub fn fill(&self, found: &mut Found, first: usize) {
        for i in 0..SHARDS {
            let k = (first + i) % SHARDS;
            let pairs = &mut found.ids[k];
            if !pairs.is_empty() {
                let mut shard = self.shards[k].write();
                // At startup nobody waits: grow at once, not a few entries an insert.
                shard.by_prefix.reserve(pairs.len());
                for (id, seq) in pairs.drain(..) {
                    shard.insert(id, seq);
                }
            }
        }
        self.enter_owners(found.owners.drain(..));
    }

    /// Enters opened orders (id, seq, owner).
    pub fn insert_all(&self, opened: &[(Uuid, u64, Uuid)]) {
        for &(id, seq, _) in opened {
            self.shard(&id).write().insert(id, seq);
        }
        self.enter_owners(opened.iter().map(|&(_, seq, owner)| (owner, seq)));
    }

    /// Takes out closed orders (id, seq, owner).
    pub fn remove_all(&self, closed: &[(Uuid, u64, Uuid)]) {
        for (id, seq, _) in closed {
            self.shard(id).write().remove(id, *seq);
        }
        self.leave_owners(closed.iter().map(|&(_, seq, owner)| (owner, seq)));
    }

    fn enter_owners(&self, pairs: impl ExactSizeIterator<Item = (Uuid, u64)>) {
        if pairs.len() == 0 {
            return;
        }
        let mut owners = self.owners.write();
        for (owner, seq) in pairs {
            owners.entry(owner).or_default().insert(seq);
        }
    }

    /// Takes (owner, seq) pairs out; an owner left with none is forgotten.
    fn leave_owners(&self, pairs: impl ExactSizeIterator<Item = (Uuid, u64)>) {
        if pairs.len() == 0 {
            return;
        }
        let mut owners = self.owners.write();
        for (owner, seq) in pairs {
            if let Entry::Occupied(mut seqs) = owners.entry(owner) {
                seqs.get_mut().remove(&seq);
                if seqs.get().is_empty() {
                    seqs.remove();
                }
            }
        }
    }

    /// The sequences of `owner`'s open orders, ascending.
    pub fn of_owner(&self, owner: &Uuid) -> Vec<u64> {
        self.owners.read().get(owner).map(|s| s.iter().copied().collect()).unwrap_or_default()
    }

    /// The sequence of the open order `id`, or of another open order whose id starts with
    /// the same 8 bytes: the caller checks the record it finds there.
    pub fn get(&self, id: &Uuid) -> Option<u64> {
        self.shard(id).read().get(id)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.shards.iter().map(|s| s.read()).map(|s| s.by_prefix.len() + s.clashes.len()).sum()
    }
}

fn prefix(id: &Uuid) -> u64 {
    u64::from_le_bytes(id.as_bytes()[..8].try_into().expect("16-byte id"))
}

fn shard_of(id: &Uuid) -> usize {
    // Order ids are hashes: any byte spreads them.
    id.as_bytes()[15] as usize % SHARDS
}

/// Open orders a scan found, by shard, to be entered with [`OpenIndex::fill`].
#[derive(Default)]
pub struct Found {
    ids: [Vec<(Uuid, u64)>; SHARDS],
    owners: Vec<(Uuid, u64)>,
}

impl Found {
    pub fn push(&mut self, id: Uuid, seq: u64, owner: Uuid) {
        self.ids[shard_of(&id)].push((id, seq));
        self.owners.push((owner, seq));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(i: u128) -> Uuid {
        Uuid::from_u128(i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835))
    }

    #[test]
    fn ids_map_to_their_sequence_until_removed() {
        let index = OpenIndex::default();
        let mut found = Found::default();
        let owner = |i: u128| Uuid::from_u128(i % 3);
        for i in 0..500u128 {
            found.push(id(i), i as u64, owner(i));
        }
        index.fill(&mut found, 3);
        let later: Vec<_> = (500..1000u128).map(|i| (id(i), i as u64, owner(i))).collect();
        index.insert_all(&later);
        assert_eq!(index.len(), 1000);
        let even: Vec<_> = (0..1000u128).step_by(2).map(|i| (id(i), i as u64, owner(i))).collect();
        index.remove_all(&even);
        for i in 0..1000u128 {
            let want = (i % 2 == 1).then_some(i as u64);
            assert_eq!(index.get(&id(i)), want, "{i}");
        }
        assert_eq!(index.len(), 500);
        // Each owner's open orders, ascending; an owner with none left is forgotten.
        for o in 0..3u128 {
            let want: Vec<u64> = (0..1000u128).filter(|i| i % 2 == 1 && i % 3 == o).map(|i| i as u64).collect();
            assert_eq!(index.of_owner(&Uuid::from_u128(o)), want, "owner {o}");
        }
        let odd: Vec<_> = (0..1000u128).filter(|i| i % 2 == 1).map(|i| (id(i), i as u64, owner(i))).collect();
        index.remove_all(&odd);
        assert!(index.owners.read().is_empty());
        assert!(index.of_owner(&Uuid::from_u128(1)).is_empty());
    }

    /// Ids that share their first 8 bytes: each is found under its own sequence, whichever
    /// leaves first; an id never entered finds the holder of its prefix (for the reader to
    /// tell apart by the record).
    #[test]
    fn ids_that_share_a_prefix_keep_their_own_sequences() {
        // The same first 8 bytes, and the same last one (the same shard).
        let shared = |n: u64| Uuid::from_u64_pair(0x0123_4567_89ab_cdef, n << 8);
        for first_out in [1u64, 2, 3] {
            let index = OpenIndex::default();
            let owner = Uuid::from_u128(7);
            for n in 1..=3u64 {
                index.insert_all(&[(shared(n), 10 * n, owner)]);
            }
            // Entered again (a store that rewrites an open order), the prefix's holder as
            // well as a clash: no change.
            index.insert_all(&[(shared(1), 10, owner), (shared(2), 20, owner)]);
            assert_eq!(index.of_owner(&owner), [10, 20, 30]);
            assert_eq!(index.len(), 3);
            for n in 1..=3u64 {
                assert_eq!(index.get(&shared(n)), Some(10 * n));
            }
            index.remove_all(&[(shared(first_out), 10 * first_out, owner)]);
            for n in (1..=3u64).filter(|n| *n != first_out) {
                assert_eq!(index.get(&shared(n)), Some(10 * n), "{n} after {first_out} left");
            }
            let left = index.get(&shared(first_out));
            assert!(left.is_none() || left.is_some_and(|s| s != 10 * first_out), "{left:?}");
            // A wrong sequence removes nothing.
            let other = (1..=3u64).find(|n| *n != first_out).unwrap();
            index.remove_all(&[(shared(other), 999, owner)]);
            assert_eq!(index.get(&shared(other)), Some(10 * other));
            assert_eq!(index.len(), 2);
        }
    }
}
