//! Where each open order's record is: order id → sequence, in memory.
//!
//! An open order's record lives in `live_orders` under its sequence (its priority), so the
//! open orders are one ordered scan at startup; a read by id needs the sequence. That map
//! was a column family (`order_seq`) written when an order opened and deleted when it
//! closed: a key scattered over the key space by the order's hashed id, the dearest write
//! of a fill (≈ 2.4 µs of the writer's time a write, two per order that rests and closes,
//! against 250–450 ns for a key written in order; docs/performance.md, "Which families the
//! writer's time goes to"). Every start reads all open orders anyway, so the map is built
//! by that scan and kept here instead: ≈ 75 MB more resident after a start with a million
//! open orders (the reload bench: 497 MB against 420).
//!
//! Writers are the store's own: [`Store::prepare`](super::Store::prepare) adds an order
//! when it opens, before its write; [`Store::commit`](super::Store::commit) removes the
//! orders that closed, after theirs. So a reader that finds no sequence finds the record
//! in `orders` (written by the same commit), and a reader that finds one looks in
//! `live_orders` first and falls back to `orders`. The matching thread never takes these
//! locks; the persister's two threads and the HTTP readers do, one shard at a time.

use parking_lot::RwLock;
use uuid::Uuid;

/// Shards, so a reader and the persister rarely meet on one lock.
const SHARDS: usize = 16;

#[derive(Default)]
pub struct OpenIndex {
    shards: [RwLock<foldhash::HashMap<Uuid, u64>>; SHARDS],
}

impl OpenIndex {
    fn shard(&self, id: &Uuid) -> &RwLock<foldhash::HashMap<Uuid, u64>> {
        &self.shards[shard_of(id)]
    }

    /// Enters (and takes out of `found`) what a startup scan found, each shard under one
    /// lock taking, starting at shard `first` (two scan threads that fill at once start
    /// apart, so they rarely wait for each other).
    pub fn fill(&self, found: &mut Found, first: usize) {
        for i in 0..SHARDS {
            let k = (first + i) % SHARDS;
            let pairs = &mut found.0[k];
            if !pairs.is_empty() {
                self.shards[k].write().extend(pairs.drain(..));
            }
        }
    }

    pub fn insert(&self, id: Uuid, seq: u64) {
        self.shard(&id).write().insert(id, seq);
    }

    pub fn remove(&self, id: &Uuid) {
        self.shard(id).write().remove(id);
    }

    pub fn get(&self, id: &Uuid) -> Option<u64> {
        self.shard(id).read().get(id).copied()
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.shards.iter().map(|s| s.read().len()).sum()
    }
}

fn shard_of(id: &Uuid) -> usize {
    // Order ids are hashes: any byte spreads them.
    id.as_bytes()[0] as usize % SHARDS
}

/// Open orders a scan found, by shard, to be entered with [`OpenIndex::fill`].
#[derive(Default)]
pub struct Found([Vec<(Uuid, u64)>; SHARDS]);

impl Found {
    pub fn push(&mut self, id: Uuid, seq: u64) {
        self.0[shard_of(&id)].push((id, seq));
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
        for i in 0..500u128 {
            found.push(id(i), i as u64);
        }
        index.fill(&mut found, 3);
        for i in 500..1000u128 {
            index.insert(id(i), i as u64);
        }
        assert_eq!(index.len(), 1000);
        for i in (0..1000u128).step_by(2) {
            index.remove(&id(i));
        }
        for i in 0..1000u128 {
            let want = (i % 2 == 1).then_some(i as u64);
            assert_eq!(index.get(&id(i)), want, "{i}");
        }
        assert_eq!(index.len(), 500);
    }
}
