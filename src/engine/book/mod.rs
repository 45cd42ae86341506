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

use crate::domain::{Amount, Price};

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
/// at a million orders in one book that push would stall the matching thread. So
/// once the array is half full (and large), its successor is allocated beside it and its
/// pages are touched a few at a time by the pushes that fill the second half; the push
/// that finds the array full copies into memory already backed. A lookup stays one plain
/// index: storage in chunks that never move would cost every book operation more
/// instructions.
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
                out.side_mut(side).push((Price(self.price_of(level)), Amount(now)));
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
                out.side_mut(side).push((Price(self.price_of(level)), Amount(now)));
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
    pub fn depth(&self, side: BookSide) -> Vec<(Price, Amount)> {
        let mut out = Vec::with_capacity(self.used[side as usize]);
        out.extend(self.depth_iter(side).map(|(p, size)| (Price(p), Amount(size))));
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

    /// [`Book::fillable`] counting only the resting orders `counts` accepts: a walk of the
    /// crossing orders in priority order, each looked at until `want` is reached. For a
    /// taker some of whose crossing orders will not fill it (its maker's own, which the
    /// sweep cancels instead).
    pub fn fillable_where(&self, side: BookSide, limit: u32, want: u64, mut counts: impl FnMut(&Node) -> bool) -> u64 {
        let in_use = &self.in_use[side as usize];
        let (start, next): (_, fn(&InUse, u32) -> Option<u32>) = match side {
            BookSide::Bid => (self.best_bid, |u, l| u.at_or_below(l.checked_sub(1)?)),
            BookSide::Ask => (self.best_ask, |u, l| u.at_or_above(l + 1)),
        };
        let mut got = 0u64;
        for l in std::iter::successors(start, move |&l| next(in_use, l)) {
            if !crosses(side.opposite(), limit, l * self.tick) {
                break;
            }
            let mut s = self.levels(side)[l as usize].head;
            while s != NIL {
                let n = self.nodes.get(s);
                if counts(n) {
                    got += n.remaining;
                    if got >= want {
                        return got;
                    }
                }
                s = n.next;
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
            if d.first().map(|x| x.0.units()) != best {
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
mod tests;
