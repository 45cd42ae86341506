//! One binary market's order book in YES-price space.
// Hot path: no I/O, no locks, no logging above debug.
//!
//! Bids are orders that gain YES exposure (BUY YES at p, SELL NO at 1−p); asks lose it
//! (SELL YES at p, BUY NO at 1−p). Prices are ladder indices `price / tick`, so the ladder
//! has `1/tick + 1` levels (101 for a 0.01 tick). Each level is an intrusive doubly-linked
//! FIFO of slab slots: insert at the tail O(1), cancel O(1), match from the head O(1); the
//! best price moves past empty levels through a bitmap of the levels in use, 64 levels a
//! word (at most 157 words for a 0.0001 tick's 10,001 levels).
//!
//! Priority is price, then arrival: a level is FIFO and nothing reorders it. The book stores
//! only what matching needs (id, remaining size); the order records live in the engine.

use uuid::Uuid;

pub const NIL: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BookSide {
    Bid = 0,
    Ask = 1,
}

impl BookSide {
    pub fn opposite(self) -> BookSide {
        match self {
            BookSide::Bid => BookSide::Ask,
            BookSide::Ask => BookSide::Bid,
        }
    }
}

/// Whether a taker on `taker` side with YES-limit `limit` reaches a resting YES price.
pub fn crosses(taker: BookSide, limit: u32, resting: u32) -> bool {
    match taker {
        BookSide::Bid => resting <= limit,
        BookSide::Ask => resting >= limit,
    }
}

#[derive(Debug, Clone, Copy)]
struct Level {
    head: u32,
    tail: u32,
    total: u64,
}

const EMPTY: Level = Level { head: NIL, tail: NIL, total: 0 };

#[derive(Debug, Clone)]
pub struct Node {
    pub id: Uuid,
    pub remaining: u64,
    pub side: BookSide,
    pub level: u32,
    prev: u32,
    next: u32,
}

/// One bit per ladder level, set while the level holds an order. When the best level
/// empties, the next one is found a word (64 levels) at a time: on a sparse book at a fine
/// tick (two orders 0.90 apart at 0.0001 are 9,000 empty levels) a scan of the levels
/// themselves read 144 KB on the matching thread; the bitmap reads at most 1.3 KB.
/// Written by hand: the bitset crates at hand iterate from the start, not from a level.
#[derive(Debug, Clone)]
struct InUse(Vec<u64>);

impl InUse {
    fn new(levels: usize) -> InUse {
        InUse(vec![0; levels.div_ceil(64)])
    }

    #[inline]
    fn set(&mut self, level: u32) {
        self.0[(level / 64) as usize] |= 1 << (level % 64);
    }

    #[inline]
    fn clear(&mut self, level: u32) {
        self.0[(level / 64) as usize] &= !(1 << (level % 64));
    }

    fn get(&self, level: u32) -> bool {
        self.0[(level / 64) as usize] & (1 << (level % 64)) != 0
    }

    /// The lowest level in use at or above `level`.
    fn at_or_above(&self, level: u32) -> Option<u32> {
        let mut w = (level / 64) as usize;
        let mut bits = *self.0.get(w)? & (!0u64 << (level % 64));
        loop {
            if bits != 0 {
                return Some(w as u32 * 64 + bits.trailing_zeros());
            }
            w += 1;
            bits = *self.0.get(w)?;
        }
    }

    /// The highest level in use at or below `level` (a level of the ladder).
    fn at_or_below(&self, level: u32) -> Option<u32> {
        let mut w = (level / 64) as usize;
        let mut bits = self.0[w] & (!0u64 >> (63 - level % 64));
        loop {
            if bits != 0 {
                return Some(w as u32 * 64 + 63 - bits.leading_zeros());
            }
            w = w.checked_sub(1)?;
            bits = self.0[w];
        }
    }
}

/// From this capacity on, a full node array's successor is allocated and touched ahead.
const PREPARE_FROM: usize = 1 << 14;
/// Nodes per 4 KB page (rounded down): the step at which the successor is touched.
const NODES_PER_PAGE: usize = 4096 / std::mem::size_of::<Node>();
/// Pushes between two pages touched: the successor's first half (what the copy fills) is
/// touched within the first quarter of the pushes that fill the array's second half.
const PUSHES_PER_TOUCH: usize = NODES_PER_PAGE / 8;

/// A book's nodes, by slot, in one array. A `Vec` doubles when full and copies every node
/// into memory nobody has touched yet, and backing fresh pages costs more than the copy:
/// at a million orders in one book that push stalled the matching thread for ≈ 0.1 s. So
/// once the array is half full (and large), its successor is allocated beside it and its
/// pages are touched a few at a time by the pushes that fill the second half; the push
/// that finds the array full copies into memory already backed. A lookup stays one plain
/// index: storage in chunks that never move cost every book operation more instructions.
///
/// Free slots are listed through their own `next` link (`free`, `NIL` when none), so
/// freeing and reusing a slot touches only the node, which the caller holds anyway.
#[derive(Debug, Clone)]
struct Nodes {
    v: Vec<Node>,
    /// The array's successor while the array is over half full (empty, capacity 0 before).
    next: Vec<Node>,
    /// Nodes of `next`'s spare room whose pages have been touched.
    touched: usize,
    free: u32,
}

impl Nodes {
    fn new() -> Nodes {
        Nodes { v: Vec::new(), next: Vec::new(), touched: 0, free: NIL }
    }

    #[inline]
    fn get(&self, slot: u32) -> &Node {
        &self.v[slot as usize]
    }

    #[inline]
    fn get_mut(&mut self, slot: u32) -> &mut Node {
        &mut self.v[slot as usize]
    }

    /// Slots ever allocated (queued or free).
    fn len(&self) -> usize {
        self.v.len()
    }

    /// A slot holding `node`: the last one freed, else a new one.
    #[inline]
    fn alloc(&mut self, node: Node) -> u32 {
        let slot = self.free;
        if slot != NIL {
            let n = self.get_mut(slot);
            let next_free = n.next;
            *n = node;
            self.free = next_free;
            return slot;
        }
        let len = self.v.len();
        if len >= PREPARE_FROM / 2 && len >= self.v.capacity() / 2 {
            self.grow_ahead();
        }
        self.v.push(node);
        len as u32
    }

    /// With the array at least half full: allocate its successor, touch one more of its
    /// pages every `PUSHES_PER_TOUCH` pushes, and when the array is full move it there.
    #[cold]
    fn grow_ahead(&mut self) {
        let (len, cap) = (self.v.len(), self.v.capacity());
        if cap < PREPARE_FROM {
            return;
        }
        if self.next.capacity() == 0 {
            self.next = Vec::with_capacity(2 * cap);
            self.touched = 0;
        }
        if len == cap {
            // The copy lands in pages touched already; the old array is freed.
            self.next.extend_from_slice(&self.v);
            self.v = std::mem::take(&mut self.next);
            return;
        }
        if (len - cap / 2).is_multiple_of(PUSHES_PER_TOUCH) && self.touched < cap {
            let spare = self.next.spare_capacity_mut();
            spare[self.touched].write(self.v[0].clone());
            self.touched += NODES_PER_PAGE;
        }
    }

    /// Room for `n` more nodes.
    fn reserve(&mut self, n: usize) {
        self.v.reserve(n);
    }

    fn iter_mut(&mut self) -> impl Iterator<Item = &mut Node> {
        self.v.iter_mut()
    }
}

#[derive(Debug, Clone)]
pub struct Book {
    /// Tick in 1e-4 price units.
    pub tick: u32,
    bids: Vec<Level>,
    asks: Vec<Level>,
    best_bid: Option<u32>,
    best_ask: Option<u32>,
    nodes: Nodes,
    count: usize,
    /// Non-empty levels per side (bid, ask): depth scans stop after this many.
    used: [usize; 2],
    /// The non-empty levels per side, as bits: the best price and depth scans skip the
    /// empty ones a word at a time (10,001 levels at a 0.0001 tick).
    in_use: [InUse; 2],
    /// Every level total changed since the last [`Book::take_changes`], with the total it
    /// had before: what the feeds and the readers' books need, without a depth scan.
    changed: Vec<(BookSide, u32, u64)>,
}

pub use crate::commit::views::Changed;

/// Levels whose total changed, per side.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    pub bids: Changed,
    pub asks: Changed,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.bids.is_empty() && self.asks.is_empty()
    }

    fn side_mut(&mut self, side: BookSide) -> &mut Changed {
        match side {
            BookSide::Bid => &mut self.bids,
            BookSide::Ask => &mut self.asks,
        }
    }
}

impl Book {
    pub fn new(tick: u32) -> Book {
        let n = (crate::domain::PRICE_ONE / tick + 1) as usize;
        Book {
            tick,
            bids: vec![EMPTY; n],
            asks: vec![EMPTY; n],
            best_bid: None,
            best_ask: None,
            nodes: Nodes::new(),
            count: 0,
            used: [0, 0],
            in_use: [InUse::new(n), InUse::new(n)],
            changed: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Moves the book to a finer tick that divides the current one (0.01 → 0.001): every
    /// level keeps its price, its orders and their FIFO order; only ladder indices change.
    /// O(ladder + orders), for a rare event.
    pub fn retick(&mut self, tick: u32) {
        assert!(tick > 0 && self.tick.is_multiple_of(tick), "a finer tick divides the old one");
        let f = self.tick / tick;
        let n = (crate::domain::PRICE_ONE / tick + 1) as usize;
        for side in [BookSide::Bid, BookSide::Ask] {
            let old = std::mem::replace(self.levels_mut(side), vec![EMPTY; n]);
            let mut in_use = InUse::new(n);
            let new = self.levels_mut(side);
            for (l, lv) in old.into_iter().enumerate() {
                let l = l * f as usize;
                if lv.head != NIL {
                    in_use.set(l as u32);
                }
                new[l] = lv;
            }
            self.in_use[side as usize] = in_use;
        }
        for node in self.nodes.iter_mut().filter(|n| n.remaining > 0) {
            node.level *= f;
        }
        for c in &mut self.changed {
            c.1 *= f;
        }
        self.best_bid = self.best_bid.map(|l| l * f);
        self.best_ask = self.best_ask.map(|l| l * f);
        self.tick = tick;
    }

    /// Ladder index of a price that sits on the tick.
    pub fn level_of(&self, price: u32) -> u32 {
        debug_assert_eq!(price % self.tick, 0);
        price / self.tick
    }

    pub fn price_of(&self, level: u32) -> u32 {
        level * self.tick
    }

    fn levels(&self, side: BookSide) -> &Vec<Level> {
        match side {
            BookSide::Bid => &self.bids,
            BookSide::Ask => &self.asks,
        }
    }

    fn levels_mut(&mut self, side: BookSide) -> &mut Vec<Level> {
        match side {
            BookSide::Bid => &mut self.bids,
            BookSide::Ask => &mut self.asks,
        }
    }

    /// Best price (YES space) on a side.
    pub fn best(&self, side: BookSide) -> Option<u32> {
        match side {
            BookSide::Bid => self.best_bid,
            BookSide::Ask => self.best_ask,
        }
        .map(|l| self.price_of(l))
    }

    pub fn node(&self, slot: u32) -> &Node {
        self.nodes.get(slot)
    }

    /// The order a taker on `taker` side with YES-limit `limit` meets next: the head of the
    /// opposite side's best level, if that level crosses. Returns its slot and the level's
    /// YES price. (A taker that trades sweeps with [`Book::sweep`].)
    #[inline]
    pub fn head_crossing(&self, taker: BookSide, limit: u32) -> Option<(u32, u32)> {
        let (l, px) = self.best_crossing(taker, limit)?;
        Some((self.levels(taker.opposite())[l as usize].head, px))
    }

    /// A taker of `want` passing over the levels on the other side that cross its YES-limit
    /// `limit`: best level first and each level's queue from its head, `meet` is shown each
    /// order, the size the taker would trade with it (what the taker still wants, at most
    /// what remains of the order) and its level's YES price, and says what the taker does
    /// ([`Meet`]). The sweep ends when the taker has what it wants, when `meet` says stop,
    /// or when no order is left within the limit. Returns what the taker still wants.
    ///
    /// Within a level the queue is consumed in place: what a fill changes beyond the
    /// order's own node — the level's head and total, the book's count, the new head's back
    /// link — is written once, as the sweep leaves the level. A step touches the node it
    /// fills and nothing else (re-reading the best level and writing its bookkeeping at
    /// every fill was half of the book's step).
    #[inline]
    pub fn sweep(
        &mut self,
        taker: BookSide,
        limit: u32,
        mut want: u64,
        mut meet: impl FnMut(&Node, u64, u32) -> Meet,
    ) -> u64 {
        let side = taker.opposite();
        while want > 0 {
            let Some((l, px)) = self.best_crossing(taker, limit) else { break };
            self.note_change(side, l);
            let mut head = self.levels(side)[l as usize].head;
            let (mut took, mut gone) = (0u64, 0usize);
            while head != NIL {
                let free = self.nodes.free;
                let n = self.nodes.get_mut(head);
                let q = want.min(n.remaining);
                match meet(n, q, px) {
                    Meet::Fill => {
                        n.remaining -= q;
                        took += q;
                        want -= q;
                    }
                    Meet::Remove => {
                        took += n.remaining;
                        n.remaining = 0;
                    }
                    Meet::Stop => break,
                }
                // Partly filled, it stays at the head (and the taker has what it wants).
                if n.remaining == 0 {
                    let next = n.next;
                    n.next = free;
                    self.nodes.free = head;
                    head = next;
                    gone += 1;
                }
                if want == 0 {
                    break;
                }
            }
            self.count -= gone;
            let lv = match side {
                BookSide::Bid => &mut self.bids[l as usize],
                BookSide::Ask => &mut self.asks[l as usize],
            };
            lv.total -= took;
            lv.head = head;
            if head != NIL {
                self.nodes.get_mut(head).prev = NIL;
                // Stopped inside the level: the sweep is over.
                break;
            }
            lv.tail = NIL;
            self.used[side as usize] -= 1;
            self.in_use[side as usize].clear(l);
            self.refresh_best(side, l);
        }
        want
    }

    /// The best level on the side a taker on `taker` side meets, and its YES price, if it
    /// crosses the taker's YES-limit `limit`.
    #[inline]
    fn best_crossing(&self, taker: BookSide, limit: u32) -> Option<(u32, u32)> {
        let l = match taker {
            BookSide::Bid => self.best_ask?,
            BookSide::Ask => self.best_bid?,
        };
        let px = self.price_of(l);
        crosses(taker, limit, px).then_some((l, px))
    }

    /// Appends an order at the tail of its level; returns its slot.
    pub fn insert(&mut self, side: BookSide, price: u32, id: Uuid, size: u64) -> u32 {
        let level = self.level_of(price);
        let tail = self.levels(side)[level as usize].tail;
        self.note_change(side, level);
        let slot = self.nodes.alloc(Node { id, remaining: size, side, level, prev: tail, next: NIL });
        if tail != NIL {
            self.nodes.get_mut(tail).next = slot;
        }
        let lv = &mut self.levels_mut(side)[level as usize];
        let was_empty = lv.head == NIL;
        if was_empty {
            lv.head = slot;
        }
        lv.tail = slot;
        lv.total += size;
        self.count += 1;
        if was_empty {
            self.used[side as usize] += 1;
            self.in_use[side as usize].set(level);
        }
        match side {
            BookSide::Bid if self.best_bid.is_none_or(|b| level > b) => self.best_bid = Some(level),
            BookSide::Ask if self.best_ask.is_none_or(|a| level < a) => self.best_ask = Some(level),
            _ => {}
        }
        slot
    }

    /// Removes an order whatever its remaining size. The node is read and freed in one
    /// visit; then its neighbours are linked past it.
    pub fn remove(&mut self, slot: u32) {
        let free = self.nodes.free;
        let n = self.nodes.get_mut(slot);
        let (side, level, rem, prev, next) = (n.side, n.level, n.remaining, n.prev, n.next);
        n.remaining = 0;
        n.next = free;
        self.nodes.free = slot;
        self.note_change(side, level);
        if prev != NIL {
            self.nodes.get_mut(prev).next = next;
        }
        if next != NIL {
            self.nodes.get_mut(next).prev = prev;
        }
        let lv = &mut self.levels_mut(side)[level as usize];
        lv.total -= rem;
        if lv.head == slot {
            lv.head = next;
        }
        if lv.tail == slot {
            lv.tail = prev;
        }
        let emptied = lv.head == NIL;
        self.count -= 1;
        if emptied {
            self.used[side as usize] -= 1;
            self.in_use[side as usize].clear(level);
            self.refresh_best(side, level);
        }
    }

    /// Notes a level about to change, with its total before. A level noted last already
    /// holds its earlier total, so a sweep through one level's queue notes it once, not once
    /// per order filled (and `take_changes` has that much less to sort).
    #[inline]
    fn note_change(&mut self, side: BookSide, level: u32) {
        if let Some(&(s, l, _)) = self.changed.last() {
            if s == side && l == level {
                return;
            }
        }
        let total = self.levels(side)[level as usize].total;
        self.changed.push((side, level, total));
    }

    /// Room for `n` more resting orders without growing.
    pub fn reserve(&mut self, n: usize) {
        self.nodes.reserve(n);
    }

    /// Forgets the changes recorded since the last [`Book::take_changes`]: for a book being
    /// rebuilt at startup, whose readers start from the whole book (one entry per restored
    /// order would otherwise pile up, 16 MB for 1 M orders, and be sorted once).
    pub fn forget_changes(&mut self) {
        self.changed.clear();
    }

    /// The levels whose total differs from what it was at the previous call (a level
    /// touched and restored in between is not a change).
    pub fn take_changes(&mut self) -> Changes {
        let mut out = Changes::default();
        // One level noted — a resting order, a cancel, a sweep within one level, most
        // commands: nothing to sort or skip.
        if let [(side, level, before)] = self.changed[..] {
            self.changed.clear();
            let now = self.levels(side)[level as usize].total;
            if now != before {
                out.side_mut(side).push((self.price_of(level), now));
            }
            return out;
        }
        if self.changed.len() > 1 {
            // Stable: the first entry of each level holds its total before the changes.
            self.changed.sort_by_key(|&(side, level, _)| (side as u8, level));
        }
        let mut last = None;
        for &(side, level, before) in &self.changed {
            if last == Some((side, level)) {
                continue;
            }
            last = Some((side, level));
            let now = self.levels(side)[level as usize].total;
            if now != before {
                out.side_mut(side).push((self.price_of(level), now));
            }
        }
        self.changed.clear();
        out
    }

    /// After `level` emptied, move the best price past empty levels.
    #[inline]
    fn refresh_best(&mut self, side: BookSide, level: u32) {
        if self.used[side as usize] == 0 {
            // The side emptied: no need to scan the whole ladder to learn it.
            match side {
                BookSide::Bid => self.best_bid = None,
                BookSide::Ask => self.best_ask = None,
            }
            return;
        }
        let in_use = &self.in_use[side as usize];
        match side {
            BookSide::Bid if self.best_bid == Some(level) => {
                self.best_bid = level.checked_sub(1).and_then(|l| in_use.at_or_below(l));
            }
            BookSide::Ask if self.best_ask == Some(level) => {
                self.best_ask = in_use.at_or_above(level + 1);
            }
            _ => {}
        }
    }

    /// Aggregated levels, best first: (YES price, total size). Visits only the levels in
    /// use, so the cost follows them, not the ladder length.
    pub fn depth(&self, side: BookSide) -> Vec<(u32, u64)> {
        let mut out = Vec::with_capacity(self.used[side as usize]);
        out.extend(self.depth_iter(side));
        out
    }

    /// Total size resting on `side` at prices a taker with YES-limit `limit` can reach,
    /// stopping once `want` is reached.
    pub fn fillable(&self, side: BookSide, limit: u32, want: u64) -> u64 {
        let mut got = 0u64;
        for (p, size) in self.depth_iter(side) {
            if !crosses(side.opposite(), limit, p) {
                break;
            }
            got += size;
            if got >= want {
                break;
            }
        }
        got
    }

    /// The non-empty levels of a side, best first: (YES price, total size).
    fn depth_iter(&self, side: BookSide) -> impl Iterator<Item = (u32, u64)> + '_ {
        let (lv, in_use) = (self.levels(side), &self.in_use[side as usize]);
        let (start, next): (_, fn(&InUse, u32) -> Option<u32>) = match side {
            BookSide::Bid => (self.best_bid, |u, l| u.at_or_below(l.checked_sub(1)?)),
            BookSide::Ask => (self.best_ask, |u, l| u.at_or_above(l + 1)),
        };
        std::iter::successors(start, move |&l| next(in_use, l)).map(move |l| (l * self.tick, lv[l as usize].total))
    }

    /// Orders of a level in FIFO order (for tests and invariant checks).
    pub fn level_orders(&self, side: BookSide, price: u32) -> Vec<(Uuid, u64)> {
        let mut out = Vec::new();
        let mut s = self.levels(side)[self.level_of(price) as usize].head;
        while s != NIL {
            let n = self.nodes.get(s);
            out.push((n.id, n.remaining));
            s = n.next;
        }
        out
    }

    /// Checks the structural invariants: never crossed, level totals equal the sum of
    /// their orders, best prices point at the extreme non-empty levels, and every slot is
    /// either queued once or free once.
    pub fn check(&self) -> Result<(), String> {
        // Every slot is in one queue once or free once.
        let mut seen = vec![false; self.nodes.len()];
        let mut mark = |s: u32, what: &str| -> Result<(), String> {
            match seen.get_mut(s as usize) {
                Some(x) if !*x => {
                    *x = true;
                    Ok(())
                }
                _ => Err(format!("slot {s} ({what}) out of range or held twice")),
            }
        };
        let mut resting = 0;
        for side in [BookSide::Bid, BookSide::Ask] {
            for (l, lv) in self.levels(side).iter().enumerate() {
                let mut sum = 0;
                let mut s = lv.head;
                let mut prev = NIL;
                while s != NIL {
                    mark(s, "queued")?;
                    resting += 1;
                    let n = self.nodes.get(s);
                    if n.prev != prev || n.level as usize != l || n.side != side || n.remaining == 0 {
                        return Err(format!("bad link at level {l}"));
                    }
                    sum += n.remaining;
                    prev = s;
                    s = n.next;
                }
                if lv.tail != prev || sum != lv.total {
                    return Err(format!("level {l} total {} != {sum}", lv.total));
                }
                if self.in_use[side as usize].get(l as u32) != (lv.head != NIL) {
                    return Err(format!("{side:?} level {l}: in-use bit wrong"));
                }
            }
            let d = self.depth(side);
            let nonempty = self.levels(side).iter().filter(|l| l.head != NIL).count();
            if nonempty != self.used[side as usize] || d.len() != nonempty {
                return Err(format!("{side:?}: {nonempty} non-empty levels, counted {}", self.used[side as usize]));
            }
            let best = self.best(side);
            if d.first().map(|x| x.0) != best {
                return Err(format!("best {best:?} vs depth {:?}", d.first()));
            }
        }
        let mut s = self.nodes.free;
        while s != NIL {
            mark(s, "free")?;
            s = self.nodes.get(s).next;
        }
        if let Some(s) = seen.iter().position(|x| !x) {
            return Err(format!("slot {s} neither queued nor free"));
        }
        if resting != self.count {
            return Err(format!("{resting} resting, counted {}", self.count));
        }
        if let (Some(b), Some(a)) = (self.best_bid, self.best_ask) {
            if b >= a {
                return Err(format!("crossed: bid {b} ask {a}"));
            }
        }
        Ok(())
    }
}

/// What a taker does with the resting order it meets ([`Book::sweep`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Meet {
    /// Trade the size offered with it.
    Fill,
    /// Take it off the book whatever remains of it, without trading (an expired order).
    Remove,
    /// Stop here: the taker cannot go on.
    Stop,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A taker of `qty` with YES-limit `limit`: the (id, size, YES price) of each fill.
    fn take(b: &mut Book, taker: BookSide, limit: u32, qty: u64) -> Vec<(Uuid, u64, u32)> {
        let mut fills = Vec::new();
        let left = b.sweep(taker, limit, qty, |n, q, px| {
            fills.push((n.id, q, px));
            Meet::Fill
        });
        assert_eq!(left, qty - fills.iter().map(|f| f.1).sum::<u64>());
        fills
    }

    #[test]
    fn fifo_and_cancel() {
        let mut b = Book::new(100);
        let (x, y, z) = (Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3));
        let sx = b.insert(BookSide::Bid, 5000, x, 10);
        let sy = b.insert(BookSide::Bid, 5000, y, 20);
        let sz = b.insert(BookSide::Bid, 4900, z, 30);
        assert_eq!(b.best(BookSide::Bid), Some(5000));
        assert_eq!(b.level_orders(BookSide::Bid, 5000), vec![(x, 10), (y, 20)]);
        b.remove(sx);
        assert_eq!(b.level_orders(BookSide::Bid, 5000), vec![(y, 20)]);
        assert_eq!(b.depth(BookSide::Bid), vec![(5000, 20), (4900, 30)]);
        // An ask taker with a limit at or under 0.50 meets y, the level's head now.
        assert_eq!(b.head_crossing(BookSide::Ask, 5000), Some((sy, 5000)));
        assert_eq!(b.head_crossing(BookSide::Ask, 5001), None);
        // At 0.50 it takes y and reaches no further.
        assert_eq!(take(&mut b, BookSide::Ask, 5000, 30), vec![(y, 20, 5000)]);
        assert_eq!(b.best(BookSide::Bid), Some(4900));
        assert_eq!(b.head_crossing(BookSide::Ask, 5000), None);
        assert_eq!(b.head_crossing(BookSide::Ask, 4900), Some((sz, 4900)));
        assert_eq!(take(&mut b, BookSide::Ask, 4900, 10), vec![(z, 10, 4900)]);
        assert_eq!(b.depth(BookSide::Bid), vec![(4900, 20)]);
        b.check().unwrap();
        assert_eq!(b.len(), 1);
    }

    #[test]
    fn retick_keeps_prices_queues_and_pending_changes() {
        let mut b = Book::new(100);
        let (x, y, z) = (Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3));
        let sx = b.insert(BookSide::Bid, 9700, x, 10);
        b.insert(BookSide::Bid, 9700, y, 20);
        b.insert(BookSide::Ask, 9800, z, 5);
        b.retick(10);
        b.check().unwrap();
        assert_eq!(b.tick, 10);
        assert_eq!(b.best(BookSide::Bid), Some(9700));
        assert_eq!(b.best(BookSide::Ask), Some(9800));
        assert_eq!(b.level_orders(BookSide::Bid, 9700), vec![(x, 10), (y, 20)]);
        // Changes noted before the retick still read at their prices.
        assert_eq!(b.take_changes(), Changes { bids: [(9700, 30)][..].into(), asks: [(9800, 5)][..].into() });
        // The finer prices are usable, and old slots still cancel.
        b.insert(BookSide::Bid, 9750, Uuid::from_u128(4), 7);
        assert_eq!(b.best(BookSide::Bid), Some(9750));
        b.remove(sx);
        assert_eq!(b.depth(BookSide::Bid), vec![(9750, 7), (9700, 20)]);
        b.check().unwrap();
    }

    /// The in-use bitmap finds the nearest level in use from any level, across words,
    /// at either end of the ladder, and nothing past the last.
    #[test]
    fn the_in_use_bitmap_finds_the_nearest_level_either_way() {
        for n in [101usize, 128, 1001, 10_001] {
            let mut u = InUse::new(n);
            let last = n as u32 - 1;
            assert_eq!((u.at_or_above(0), u.at_or_below(last)), (None, None));
            let mut set: Vec<u32> = [0, 63, 64, 127, last / 2, last].into_iter().filter(|&l| l <= last).collect();
            set.sort();
            set.dedup();
            for &l in &set {
                u.set(l);
            }
            for l in 0..=last {
                let above = set.iter().copied().filter(|&s| s >= l).min();
                let below = set.iter().copied().filter(|&s| s <= l).max();
                assert_eq!((u.at_or_above(l), u.at_or_below(l)), (above, below), "{n} levels, from {l}");
                assert_eq!(u.get(l), set.contains(&l));
            }
            assert_eq!(u.at_or_above(last + 1), None);
            // With both ends cleared, nothing lies beyond the nearest levels left.
            u.clear(last);
            u.clear(0);
            let inner = &set[1..set.len() - 1];
            let (lo, hi) = (*inner.iter().min().unwrap(), *inner.iter().max().unwrap());
            assert_eq!((u.at_or_above(hi + 1), u.at_or_below(lo - 1)), (None, None), "{n} levels");
            assert_eq!((u.at_or_above(0), u.at_or_below(last)), (Some(lo), Some(hi)));
        }
    }

    /// At a 0.0001 tick, with a side's two orders 0.98 apart, the best price moves from
    /// one to the other when the first leaves, on both sides, by cancel or by fill; and
    /// the depth lists them both.
    #[test]
    fn the_best_price_crosses_a_sparse_fine_ladder() {
        let mut b = Book::new(1);
        let bid_hi = b.insert(BookSide::Bid, 9900, Uuid::from_u128(1), 5);
        b.insert(BookSide::Bid, 100, Uuid::from_u128(2), 6);
        b.insert(BookSide::Ask, 9999, Uuid::from_u128(3), 7);
        b.insert(BookSide::Ask, 9950, Uuid::from_u128(4), 8);
        assert_eq!(b.depth(BookSide::Bid), vec![(9900, 5), (100, 6)]);
        assert_eq!(b.depth(BookSide::Ask), vec![(9950, 8), (9999, 7)]);
        b.remove(bid_hi);
        assert_eq!(b.best(BookSide::Bid), Some(100));
        assert_eq!(b.head_crossing(BookSide::Bid, crate::domain::PRICE_ONE).map(|h| h.1), Some(9950));
        let one = crate::domain::PRICE_ONE;
        assert_eq!(take(&mut b, BookSide::Bid, one, 8), vec![(Uuid::from_u128(4), 8, 9950)]);
        assert_eq!(b.best(BookSide::Ask), Some(9999));
        b.insert(BookSide::Ask, 9950, Uuid::from_u128(5), 1);
        // One taker goes on to the far ask, 49 levels on, and empties the side.
        assert_eq!(
            take(&mut b, BookSide::Bid, one, 10),
            vec![(Uuid::from_u128(5), 1, 9950), (Uuid::from_u128(3), 7, 9999)]
        );
        assert_eq!((b.best(BookSide::Ask), b.depth(BookSide::Ask)), (None, vec![]));
        b.check().unwrap();
    }

    /// A large node array's successor is allocated once the array is half full, every
    /// page the copy will fill is touched before the array is full, and the move keeps
    /// every slot's node; freed slots are reused before the array grows.
    #[test]
    fn node_array_grows_into_a_successor_touched_ahead() {
        let mut b = Book::new(100);
        let mut live: Vec<(u32, u128)> = Vec::new();
        let (mut id, mut moves) = (0u128, 0);
        while moves < 2 {
            let (len, cap) = (b.nodes.v.len(), b.nodes.v.capacity());
            if cap >= PREPARE_FROM && len < cap / 2 {
                assert_eq!(b.nodes.next.capacity(), 0, "no successor before half full");
            }
            if cap >= PREPARE_FROM && len == cap && b.nodes.free == NIL {
                assert_eq!(b.nodes.next.capacity(), 2 * cap);
                assert!(b.nodes.touched >= cap, "{} of {cap} touched when full", b.nodes.touched);
                moves += 1;
            }
            let side = if id % 2 == 0 { BookSide::Bid } else { BookSide::Ask };
            let price = if side == BookSide::Bid { 100 * (1 + id as u32 % 40) } else { 100 * (60 + id as u32 % 40) };
            live.push((b.insert(side, price, Uuid::from_u128(id), 1 + id as u64 % 7), id));
            id += 1;
            // Every tenth insert, cancel an older order: its slot is the next one used.
            if id % 10 == 0 {
                let (s, _) = live.swap_remove((id as usize * 7) % live.len());
                let before = b.nodes.len();
                b.remove(s);
                let reused = b.insert(BookSide::Ask, 5000, Uuid::from_u128(id), 1);
                assert_eq!(reused, s, "a freed slot is reused first");
                assert_eq!(b.nodes.len(), before);
                live.push((reused, id));
                id += 1;
            }
        }
        assert_eq!(b.nodes.next.capacity(), 0, "the successor became the array");
        b.check().unwrap();
        for &(s, id) in &live {
            assert_eq!(b.node(s).id, Uuid::from_u128(id));
        }
        assert_eq!(b.len(), live.len());
    }

    #[test]
    fn changes_name_each_level_once_with_its_new_total() {
        let mut b = Book::new(100);
        let x = b.insert(BookSide::Bid, 5000, Uuid::from_u128(1), 10);
        b.insert(BookSide::Bid, 5000, Uuid::from_u128(2), 5);
        b.insert(BookSide::Ask, 5200, Uuid::from_u128(3), 7);
        b.insert(BookSide::Ask, 5100, Uuid::from_u128(4), 7);
        let c = b.take_changes();
        assert_eq!(c.bids[..], [(5000, 15)]);
        assert_eq!(c.asks[..], [(5100, 7), (5200, 7)]);
        assert!(b.take_changes().is_empty());
        // A level emptied reads 0; one touched and restored is no change.
        let y = b.insert(BookSide::Bid, 4900, Uuid::from_u128(5), 3);
        b.remove(y);
        assert_eq!(b.head_crossing(BookSide::Ask, 5000).map(|h| h.0), Some(x));
        assert_eq!(
            take(&mut b, BookSide::Ask, 5000, 10),
            vec![(Uuid::from_u128(1), 10, 5000)],
            "x, at the head of 0.50, leaves"
        );
        take(&mut b, BookSide::Bid, 5100, 7);
        let c = b.take_changes();
        assert_eq!(c.bids[..], [(5000, 5)]);
        assert_eq!(c.asks[..], [(5100, 0)]);
    }

    /// A sweep through a level's queue notes the level once, and the change it reports is
    /// still against the level's total before the sweep.
    #[test]
    fn a_sweep_through_one_level_notes_it_once() {
        let mut b = Book::new(100);
        for i in 0..5 {
            b.insert(BookSide::Ask, 5100, Uuid::from_u128(i), 4);
        }
        b.insert(BookSide::Ask, 5200, Uuid::from_u128(9), 4);
        b.take_changes();
        let fills = take(&mut b, BookSide::Bid, 5200, 21);
        assert_eq!(
            fills.iter().map(|f| (f.1, f.2)).collect::<Vec<_>>(),
            [[(4, 5100)].repeat(5), vec![(1, 5200)]].concat()
        );
        assert_eq!(b.changed, vec![(BookSide::Ask, 51, 20), (BookSide::Ask, 52, 4)]);
        let c = b.take_changes();
        assert_eq!(c.asks[..], [(5100, 0), (5200, 3)]);
        b.check().unwrap();
    }

    /// A rebuilt book forgets the changes its rebuilding noted; later changes read against
    /// the rebuilt totals.
    #[test]
    fn forgotten_changes_leave_the_rebuilt_totals_as_the_baseline() {
        let mut b = Book::new(100);
        b.reserve(3);
        let x = b.insert(BookSide::Bid, 5000, Uuid::from_u128(1), 10);
        b.insert(BookSide::Bid, 5000, Uuid::from_u128(2), 5);
        b.insert(BookSide::Ask, 5100, Uuid::from_u128(3), 7);
        b.forget_changes();
        assert!(b.take_changes().is_empty());
        assert_eq!(b.depth(BookSide::Bid), vec![(5000, 15)]);
        assert_eq!(b.head_crossing(BookSide::Ask, 5000).map(|h| h.0), Some(x));
        take(&mut b, BookSide::Ask, 5000, 4);
        assert_eq!(b.take_changes(), Changes { bids: [(5000, 11)][..].into(), asks: Changed::new() });
        b.check().unwrap();
    }
}

/// The book against a model of FIFO levels: any sequence of inserts, cancels (from
/// anywhere in a queue) and fills at the head keeps the book's invariants, meets orders in
/// price-then-arrival order and reports the model's depth.
#[cfg(test)]
mod props {
    use std::collections::{BTreeMap, VecDeque};

    use proptest::prelude::*;

    use super::*;

    #[derive(Debug, Clone)]
    enum Op {
        Insert {
            ask: bool,
            level: u32,
            size: u64,
        },
        Cancel {
            pick: usize,
        },
        /// `expired`: the first order met leaves whole without trading, as an expired
        /// order a taker meets does.
        Take {
            bid: bool,
            qty: u64,
            expired: bool,
        },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            5 => (any::<bool>(), 0u32..2, 1u64..5).prop_map(|(ask, level, size)| Op::Insert { ask, level, size }),
            4 => any::<usize>().prop_map(|pick| Op::Cancel { pick }),
            1 => (any::<bool>(), 1u64..12, proptest::bool::weighted(0.2)).prop_map(|(bid, qty, expired)| Op::Take { bid, qty, expired }),
        ]
    }

    proptest! {
        #[test]
        fn the_book_matches_a_model_of_fifo_levels(ops in proptest::collection::vec(op(), 1..400)) {
            // A 0.001 tick (1,001 levels): the two levels of a side lie words of the
            // in-use bitmap apart.
            let mut b = Book::new(10);
            // [side] price → queue of (id, remaining); and each resting id's slot.
            let mut model: [BTreeMap<u32, VecDeque<(u128, u64)>>; 2] = Default::default();
            let mut slots: BTreeMap<u128, (u32, BookSide, u32)> = BTreeMap::new();
            let mut next = 0u128;
            for op in ops {
                match op {
                    Op::Insert { ask, level, size } => {
                        // Bids at 0.400 and 0.271 (levels 400 and 271), asks at 0.500 and
                        // 0.629 (500 and 629): never crossing.
                        let (side, price) = if ask { (BookSide::Ask, 5000 + 1290 * level) } else { (BookSide::Bid, 4000 - 1290 * level) };
                        next += 1;
                        let s = b.insert(side, price, Uuid::from_u128(next), size);
                        model[side as usize].entry(price).or_default().push_back((next, size));
                        slots.insert(next, (s, side, price));
                    }
                    Op::Cancel { pick } => {
                        if slots.is_empty() {
                            continue;
                        }
                        let (&id, &(s, side, price)) = slots.iter().nth(pick % slots.len()).unwrap();
                        prop_assert_eq!(b.node(s).id.as_u128(), id);
                        b.remove(s);
                        slots.remove(&id);
                        let q = model[side as usize].get_mut(&price).unwrap();
                        q.retain(|o| o.0 != id);
                        if q.is_empty() {
                            model[side as usize].remove(&price);
                        }
                    }
                    Op::Take { bid, qty, mut expired } => {
                        let (taker, opp) = if bid { (BookSide::Bid, BookSide::Ask) } else { (BookSide::Ask, BookSide::Bid) };
                        let limit = if bid { crate::domain::PRICE_ONE } else { 0 };
                        let (mut left, mut wrong) = (qty, None);
                        let want = b.sweep(taker, limit, qty, |n, f, px| {
                            if wrong.is_some() {
                                return Meet::Stop;
                            }
                            let levels = &mut model[opp as usize];
                            let price = if bid { *levels.keys().next().unwrap() } else { *levels.keys().next_back().unwrap() };
                            let q = levels.get_mut(&price).unwrap();
                            let head = q.front_mut().unwrap();
                            if (px, n.id.as_u128(), n.remaining, f) != (price, head.0, head.1, left.min(head.1)) {
                                wrong = Some(format!("met {:?} at {px}, offered {f}; the model's head {head:?} at {price}, {left} wanted", (n.id, n.remaining)));
                                return Meet::Stop;
                            }
                            let meet = if std::mem::take(&mut expired) {
                                head.1 = 0;
                                Meet::Remove
                            } else {
                                head.1 -= f;
                                left -= f;
                                Meet::Fill
                            };
                            if head.1 == 0 {
                                slots.remove(&head.0);
                                q.pop_front();
                                if q.is_empty() {
                                    levels.remove(&price);
                                }
                            }
                            meet
                        });
                        if let Some(w) = wrong {
                            return Err(TestCaseError::fail(w));
                        }
                        prop_assert_eq!(want, left);
                    }
                }
                b.check().map_err(TestCaseError::fail)?;
                prop_assert_eq!(b.len(), slots.len());
                for (side, levels) in model.iter().enumerate() {
                    let side = if side == 0 { BookSide::Bid } else { BookSide::Ask };
                    let mut want: Vec<(u32, u64)> = levels.iter().map(|(&p, q)| (p, q.iter().map(|o| o.1).sum())).collect();
                    if side == BookSide::Bid {
                        want.reverse();
                    }
                    prop_assert_eq!(b.depth(side), want);
                    for (&p, q) in levels {
                        let got: Vec<(u128, u64)> = b.level_orders(side, p).iter().map(|o| (o.0.as_u128(), o.1)).collect();
                        prop_assert_eq!(got, q.iter().copied().collect::<Vec<_>>());
                    }
                }
            }
        }
    }
}
