//! A hash map that grows without stopping its thread: the matching thread's open orders,
//! and the store's open-order index on the persister's threads.
//!
//! A hash table grows by doubling, and the insert that crosses its load limit moves every
//! entry into the new table at once. On the matching thread that insert is a command every
//! queued command waits behind, at millions of resting orders a pause of a large part of
//! a second, much of it the kernel zeroing the new table's pages.
//!
//! Here the full table is kept, as `old`, beside a new one twice its size; every insert and
//! remove then moves a few of `old`'s entries into the new table, walking its buckets by
//! index (removing an entry from a hashbrown table does not move the others, so the
//! walk's position stays valid), until it is empty and freed. Lookups look in the new
//! table, then in `old` while it holds anything. A move finishes long before the new table
//! fills: it holds twice what `old` held, and each insert moves up to [`MOVES`] entries.
//! The `griddle` crate does the same over hashbrown's raw table, which hashbrown no longer
//! offers; hashbrown's bucket-index API (`get_bucket_entry`, `num_buckets`) is enough.

use std::hash::{BuildHasher, Hash};

use hashbrown::hash_table::{HashTable, OccupiedEntry};

/// Entries moved per insert or remove while a move is under way.
const MOVES: usize = 4;
/// Buckets of the old table looked at per insert or remove (most hold an entry).
const SCAN: usize = 32;

pub struct IncrementalMap<K, V> {
    cur: HashTable<(K, V)>,
    /// The table `cur` replaced, while entries remain in it.
    old: HashTable<(K, V)>,
    /// The next bucket of `old` to move.
    cursor: usize,
    hasher: foldhash::fast::RandomState,
}

impl<K: Hash + Eq, V> Default for IncrementalMap<K, V> {
    fn default() -> Self {
        IncrementalMap { cur: HashTable::new(), old: HashTable::new(), cursor: 0, hasher: Default::default() }
    }
}

/// An entry found by [`IncrementalMap::find_entry`], in whichever table holds it.
pub struct Entry<'a, K, V>(OccupiedEntry<'a, (K, V)>);

impl<K, V> Entry<'_, K, V> {
    pub fn get(&self) -> &V {
        &self.0.get().1
    }

    pub fn get_mut(&mut self) -> &mut V {
        &mut self.0.get_mut().1
    }

    pub fn remove(self) -> V {
        self.0.remove().0 .1
    }
}

impl<K: Hash + Eq, V> IncrementalMap<K, V> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.cur.len() + self.old.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Room for `n` more entries at once (startup, before any command): finishes a move
    /// under way first.
    pub fn reserve(&mut self, n: usize) {
        self.finish();
        let hasher = &self.hasher;
        self.cur.reserve(n, |e| hasher.hash_one(&e.0));
    }

    pub fn get(&self, k: &K) -> Option<&V> {
        self.get_where(k, |_| true)
    }

    pub fn contains_key(&self, k: &K) -> bool {
        self.get(k).is_some()
    }

    /// The value under `k` of which `is` holds. Keys need not be unique among the entries
    /// the `_where` methods keep: one whose values tell entries of the same key apart (an
    /// id folded to a shorter key, the full id in the value) makes entries smaller.
    pub fn get_where(&self, k: &K, is: impl Fn(&V) -> bool) -> Option<&V> {
        let h = self.hasher.hash_one(k);
        let eq = |e: &(K, V)| e.0 == *k && is(&e.1);
        match self.cur.find(h, eq) {
            Some(e) => Some(&e.1),
            None if self.old.is_empty() => None,
            None => self.old.find(h, eq).map(|e| &e.1),
        }
    }

    /// The entry of `k`, to read, change or remove in one lookup.
    pub fn find_entry(&mut self, k: &K) -> Option<Entry<'_, K, V>> {
        self.find_entry_where(k, |_| true)
    }

    /// The entry under `k` whose value `is` holds of (see [`IncrementalMap::get_where`]).
    pub fn find_entry_where(&mut self, k: &K, is: impl Fn(&V) -> bool) -> Option<Entry<'_, K, V>> {
        let h = self.hasher.hash_one(k);
        let eq = |e: &(K, V)| e.0 == *k && is(&e.1);
        if let Ok(e) = self.cur.find_entry(h, eq) {
            return Some(Entry(e));
        }
        if self.old.is_empty() {
            return None;
        }
        self.old.find_entry(h, eq).ok().map(Entry)
    }

    /// Inserts `v` under `k`, returning the value it replaces.
    pub fn insert(&mut self, k: K, v: V) -> Option<V> {
        self.insert_where(k, v, |_| true)
    }

    /// Inserts `v` under `k` in place of the entry under `k` whose value `is` holds of, if
    /// there is one (returned); entries of `k` it does not hold of stay (see
    /// [`IncrementalMap::get_where`]).
    pub fn insert_where(&mut self, k: K, v: V, is: impl Fn(&V) -> bool) -> Option<V> {
        let h = self.hasher.hash_one(&k);
        // Before the lookups, so that the entry below never grows `cur` all at once, and
        // so that a key of the table just retired is found in `old`.
        self.grow_if_full();
        let eq = |e: &(K, V)| e.0 == k && is(&e.1);
        // An entry is in one table at most: one still in `old` moves over with its new value.
        let mut replaced = match self.old.is_empty() {
            true => None,
            false => self.old.find_entry(h, eq).ok().map(|e| e.remove().0 .1),
        };
        let hasher = &self.hasher;
        match self.cur.entry(h, eq, |e| hasher.hash_one(&e.0)) {
            hashbrown::hash_table::Entry::Occupied(mut e) => replaced = Some(std::mem::replace(&mut e.get_mut().1, v)),
            hashbrown::hash_table::Entry::Vacant(e) => {
                e.insert((k, v));
            }
        }
        self.step();
        replaced
    }

    /// Inserts `v` under `k` without looking for an entry it replaces: the caller knows
    /// there is none (`k` has no entry, or, with keys shared as in
    /// [`IncrementalMap::get_where`], none for `v`'s id). One search for room in `cur`: no key
    /// compared, `old` not looked at.
    pub fn insert_unique(&mut self, k: K, v: V) {
        let h = self.hasher.hash_one(&k);
        // As in `insert_where`.
        self.grow_if_full();
        let hasher = &self.hasher;
        self.cur.insert_unique(h, (k, v), |e| hasher.hash_one(&e.0));
        self.step();
    }

    /// Inserts `v` under `k` if `k` has no entry, in one lookup per table; `false` (and `v`
    /// dropped) if it has one.
    pub fn insert_if_vacant(&mut self, k: K, v: V) -> bool {
        let h = self.hasher.hash_one(&k);
        // As in `insert_where`.
        self.grow_if_full();
        if !self.old.is_empty() && self.old.find(h, |e| e.0 == k).is_some() {
            return false;
        }
        let hasher = &self.hasher;
        match self.cur.entry(h, |e| e.0 == k, |e| hasher.hash_one(&e.0)) {
            hashbrown::hash_table::Entry::Occupied(_) => return false,
            hashbrown::hash_table::Entry::Vacant(e) => {
                e.insert((k, v));
            }
        }
        self.step();
        true
    }

    pub fn remove(&mut self, k: &K) -> Option<V> {
        self.remove_where(k, |_| true)
    }

    /// Removes the entry under `k` whose value `is` holds of, in one lookup (with unique
    /// keys: `k`'s entry if `is` says so of its value; see [`IncrementalMap::get_where`]).
    pub fn remove_where(&mut self, k: &K, is: impl Fn(&V) -> bool) -> Option<V> {
        let v = self.find_entry_where(k, is).map(Entry::remove);
        self.step();
        v
    }

    /// Every value, in no order.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.cur.iter().chain(self.old.iter()).map(|e| &e.1)
    }

    /// Before an insert: grows once if `cur` has no room left (its successor is empty and
    /// twice its size).
    #[inline]
    fn grow_if_full(&mut self) {
        if self.cur.len() == self.cur.capacity() {
            self.grow();
        }
    }

    /// `cur` is full: it becomes `old`, beside an empty table twice its size. Full counts
    /// the tombstones removals leave (hashbrown's capacity is its entries plus the inserts
    /// it has room for), so a table that filled with them is moved into one sized for
    /// twice its entries, where hashbrown would rehash it in place, all at once.
    fn grow(&mut self) {
        // Never while a move is under way (see the module's doc), but a move must not be
        // lost if it were.
        self.finish();
        let room = (self.cur.capacity() * 2).max(16);
        self.old = std::mem::replace(&mut self.cur, HashTable::with_capacity(room));
        self.cursor = 0;
    }

    /// Moves up to [`MOVES`] entries of `old`, looking at up to [`SCAN`] of its buckets.
    fn step(&mut self) {
        if self.old.is_empty() {
            return;
        }
        let end = self.old.num_buckets().min(self.cursor + SCAN);
        let mut moved = 0;
        while self.cursor < end && moved < MOVES {
            if let Ok(e) = self.old.get_bucket_entry(self.cursor) {
                let (kv, _) = e.remove();
                let hasher = &self.hasher;
                self.cur.insert_unique(hasher.hash_one(&kv.0), kv, |e| hasher.hash_one(&e.0));
                moved += 1;
            }
            self.cursor += 1;
        }
        if self.old.is_empty() {
            // Free its memory now, not at the next growth.
            self.old = HashTable::new();
            self.cursor = 0;
        }
    }

    /// Moves whatever `old` still holds.
    fn finish(&mut self) {
        while !self.old.is_empty() {
            self.step();
        }
    }
}

impl<K: Hash + Eq, V> std::ops::Index<&K> for IncrementalMap<K, V> {
    type Output = V;

    fn index(&self, k: &K) -> &V {
        self.get(k).expect("no entry for the key")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// Steps of a move that is under way: the old table's entries go over a few at a time.
    #[test]
    fn a_full_table_is_moved_a_few_entries_at_a_time() {
        let mut m = IncrementalMap::new();
        let mut i = 0u64;
        while m.cur.len() < m.cur.capacity() || m.cur.capacity() < 1_000 {
            m.insert(i, i);
            i += 1;
        }
        let full = m.len();
        m.insert(i, i);
        // The insert that found the table full moved at most MOVES entries of it.
        assert!(m.old.len() >= full - MOVES, "old {} of {full}", m.old.len());
        assert!(m.cur.len() <= 1 + MOVES);
        assert_eq!(m.len(), full + 1);
        // Every entry is found while the move is under way, and each insert moves more.
        for k in 0..=i {
            assert_eq!(m.get(&k), Some(&k));
        }
        let before = m.old.len();
        m.insert(i + 1, i + 1);
        assert!(m.old.len() < before);
        // The move ends well before the new table fills, and frees the old table.
        let mut n = i + 2;
        while !m.old.is_empty() {
            m.insert(n, n);
            n += 1;
        }
        assert!(n - i < full as u64 / 2, "{} inserts to finish a move of {full}", n - i);
        assert_eq!(m.old.capacity(), 0);
        assert_eq!(m.len() as u64, n);
        // Room reserved while a move is under way (startup only): the move ends first.
        while m.old.is_empty() {
            m.insert(n, n);
            n += 1;
        }
        m.reserve(10);
        assert!(m.old.is_empty() && m.cur.capacity() - m.cur.len() >= 10);
        assert_eq!(m.len() as u64, n);
        assert!((0..n).all(|k| m.get(&k) == Some(&k)));
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u16, u32),
        Remove(u16),
        Take(u16),
        Change(u16, u32),
        InsertVacant(u16, u32),
        /// Removes the entry if its value is even.
        RemoveEven(u16),
        /// Inserts through `insert_unique` if the key has no entry.
        InsertNew(u16, u32),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0..2_000u16, any::<u32>()).prop_map(|(k, v)| Op::Insert(k, v)),
            2 => (0..2_000u16).prop_map(Op::Remove),
            1 => (0..2_000u16).prop_map(Op::Take),
            1 => (0..2_000u16, any::<u32>()).prop_map(|(k, v)| Op::Change(k, v)),
            3 => (0..2_000u16, any::<u32>()).prop_map(|(k, v)| Op::InsertVacant(k, v)),
            1 => (0..2_000u16).prop_map(Op::RemoveEven),
            3 => (0..2_000u16, any::<u32>()).prop_map(|(k, v)| Op::InsertNew(k, v)),
        ]
    }

    proptest! {
        /// Against std's map: the same answers after every operation, through growths and
        /// moves under way (a third of the inserts of a growing map find one).
        #[test]
        fn behaves_as_a_hash_map(ops in proptest::collection::vec(op(), 1..3_000)) {
            let (mut m, mut model) = (IncrementalMap::new(), HashMap::new());
            for op in ops {
                match op.clone() {
                    Op::Insert(k, v) => prop_assert_eq!(m.insert(k, v), model.insert(k, v)),
                    Op::Remove(k) => prop_assert_eq!(m.remove(&k), model.remove(&k)),
                    Op::Take(k) => prop_assert_eq!(m.find_entry(&k).map(Entry::remove), model.remove(&k)),
                    Op::Change(k, v) => {
                        if let Some(mut e) = m.find_entry(&k) {
                            *e.get_mut() = v;
                            prop_assert_eq!(*e.get(), v);
                        }
                        if let Some(x) = model.get_mut(&k) {
                            *x = v;
                        }
                    }
                    Op::InsertVacant(k, v) => {
                        let vacant = !model.contains_key(&k);
                        if vacant {
                            model.insert(k, v);
                        }
                        prop_assert_eq!(m.insert_if_vacant(k, v), vacant);
                    }
                    Op::RemoveEven(k) => {
                        let even = model.get(&k).is_some_and(|v| v % 2 == 0);
                        let want = if even { model.remove(&k) } else { None };
                        prop_assert_eq!(m.remove_where(&k, |v| v % 2 == 0), want);
                    }
                    Op::InsertNew(k, v) => {
                        if let std::collections::hash_map::Entry::Vacant(e) = model.entry(k) {
                            m.insert_unique(k, v);
                            e.insert(v);
                        }
                    }
                }
                prop_assert_eq!(m.len(), model.len());
                prop_assert_eq!(m.is_empty(), model.is_empty());
                // Read while a move may be under way: the key just used and its neighbours.
                let k = match op {
                    Op::Insert(k, _) | Op::Remove(k) | Op::Take(k) | Op::Change(k, _) => k,
                    Op::InsertVacant(k, _) | Op::RemoveEven(k) | Op::InsertNew(k, _) => k,
                };
                for k in [k, k.wrapping_add(1), k.wrapping_sub(1)] {
                    prop_assert_eq!(m.get(&k), model.get(&k));
                    prop_assert_eq!(m.contains_key(&k), model.contains_key(&k));
                }
            }
            for k in 0..2_000u16 {
                prop_assert_eq!(m.get(&k), model.get(&k));
                prop_assert_eq!(m.contains_key(&k), model.contains_key(&k));
            }
            let mut values: Vec<u32> = m.values().copied().collect();
            let mut expected: Vec<u32> = model.values().copied().collect();
            values.sort_unstable();
            expected.sort_unstable();
            prop_assert_eq!(values, expected);
        }

        /// Many entries under one key, told apart by their values (an id folded to a short
        /// key, as the engine's open orders are): against std's map by full id, through
        /// growths and moves under way.
        #[test]
        fn entries_under_one_key_are_told_apart_by_their_values(
            ops in proptest::collection::vec((0..4u8, 0..2_000u16, any::<u32>()), 1..3_000)
        ) {
            // 2,000 ids under 64 keys.
            let key = |id: u16| id % 64;
            let (mut m, mut model) = (IncrementalMap::new(), HashMap::new());
            for (what, id, v) in ops {
                let is = |e: &(u16, u32)| e.0 == id;
                match what {
                    0 => prop_assert_eq!(m.insert_where(key(id), (id, v), is).map(|e| e.1), model.insert(id, v)),
                    1 => prop_assert_eq!(m.remove_where(&key(id), is).map(|e| e.1), model.remove(&id)),
                    // A new id beside the others under its key.
                    2 if !model.contains_key(&id) => {
                        m.insert_unique(key(id), (id, v));
                        model.insert(id, v);
                    }
                    _ => prop_assert_eq!(
                        m.find_entry_where(&key(id), is).map(|e| e.remove().1),
                        model.remove(&id)
                    ),
                }
                prop_assert_eq!(m.len(), model.len());
                for id in [id, id.wrapping_add(64), id.wrapping_sub(64)] {
                    prop_assert_eq!(m.get_where(&key(id), |e| e.0 == id).map(|e| e.1), model.get(&id).copied());
                }
            }
            for id in 0..2_000u16 {
                prop_assert_eq!(m.get_where(&key(id), |e| e.0 == id).map(|e| e.1), model.get(&id).copied());
            }
        }
    }
}
