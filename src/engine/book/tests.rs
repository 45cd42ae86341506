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
    assert_eq!(b.depth(BookSide::Bid), vec![(Price(5000), Amount(20)), (Price(4900), Amount(30))]);
    // An ask taker with a limit at or under 0.50 meets y, the level's head now.
    assert_eq!(b.head_crossing(BookSide::Ask, 5000), Some((sy, 5000)));
    assert_eq!(b.head_crossing(BookSide::Ask, 5001), None);
    // At 0.50 it takes y and reaches no further.
    assert_eq!(take(&mut b, BookSide::Ask, 5000, 30), vec![(y, 20, 5000)]);
    assert_eq!(b.best(BookSide::Bid), Some(4900));
    assert_eq!(b.head_crossing(BookSide::Ask, 5000), None);
    assert_eq!(b.head_crossing(BookSide::Ask, 4900), Some((sz, 4900)));
    assert_eq!(take(&mut b, BookSide::Ask, 4900, 10), vec![(z, 10, 4900)]);
    assert_eq!(b.depth(BookSide::Bid), vec![(Price(4900), Amount(20))]);
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
    assert_eq!(
        b.take_changes(),
        Changes { bids: [(Price(9700), Amount(30))][..].into(), asks: [(Price(9800), Amount(5))][..].into() }
    );
    // The finer prices are usable, and old slots still cancel.
    b.insert(BookSide::Bid, 9750, Uuid::from_u128(4), 7);
    assert_eq!(b.best(BookSide::Bid), Some(9750));
    b.remove(sx);
    assert_eq!(b.depth(BookSide::Bid), vec![(Price(9750), Amount(7)), (Price(9700), Amount(20))]);
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
    assert_eq!(b.depth(BookSide::Bid), vec![(Price(9900), Amount(5)), (Price(100), Amount(6))]);
    assert_eq!(b.depth(BookSide::Ask), vec![(Price(9950), Amount(8)), (Price(9999), Amount(7))]);
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
    assert_eq!(c.bids[..], [(Price(5000), Amount(15))]);
    assert_eq!(c.asks[..], [(Price(5100), Amount(7)), (Price(5200), Amount(7))]);
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
    assert_eq!(c.bids[..], [(Price(5000), Amount(5))]);
    assert_eq!(c.asks[..], [(Price(5100), Amount(0))]);
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
    assert_eq!(fills.iter().map(|f| (f.1, f.2)).collect::<Vec<_>>(), [[(4, 5100)].repeat(5), vec![(1, 5200)]].concat());
    assert_eq!(b.changed, vec![(BookSide::Ask, 51, 20), (BookSide::Ask, 52, 4)]);
    let c = b.take_changes();
    assert_eq!(c.asks[..], [(Price(5100), Amount(0)), (Price(5200), Amount(3))]);
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
    assert_eq!(b.depth(BookSide::Bid), vec![(Price(5000), Amount(15))]);
    assert_eq!(b.head_crossing(BookSide::Ask, 5000).map(|h| h.0), Some(x));
    take(&mut b, BookSide::Ask, 5000, 4);
    assert_eq!(b.take_changes(), Changes { bids: [(Price(5000), Amount(11))][..].into(), asks: Changed::new() });
    b.check().unwrap();
}

/// The book against a model of FIFO levels: any sequence of inserts, cancels (from
/// anywhere in a queue) and fills at the head keeps the book's invariants, meets orders in
/// price-then-arrival order and reports the model's depth.
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
                    let mut want: Vec<(Price, Amount)> =
                        levels.iter().map(|(&p, q)| (Price(p), Amount(q.iter().map(|o| o.1).sum()))).collect();
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
