//! The store's unit tests: records through the codec and the store, the analytics
//! indexes a trade writes, and the coalescing of a group's writes.

use super::*;
use crate::domain::{Amount, Price};

pub(in crate::store) mod records {
    use super::*;
    use crate::domain::{AddressStatus, Mode, OrderStatus, OrderToken};

    #[test]
    fn codec_round_trips_records_and_refuses_unknown_tags() {
        for v in [Mode::Normal, Mode::CancelOnly, Mode::TradingDisabled] {
            assert_eq!(decode::<Mode>("meta", &encode(&v)).unwrap(), v);
        }
        let st = AddressStatus::ClosedOnly;
        assert_eq!(decode::<AddressStatus>("addresses", &encode(&st)).unwrap(), st);
        let some: crate::domain::LastTrade = Some((Price(5500), crate::domain::Side::Sell));
        assert_eq!(decode::<crate::domain::LastTrade>("meta", &encode(&some)).unwrap(), some);
        let mut live = encode(&OrderStatus::Live);
        assert_eq!(decode::<OrderStatus>("orders", &live).unwrap(), OrderStatus::Live);
        live[0] = 1;
        assert!(decode::<OrderStatus>("orders", &live).is_err());
        assert!(decode::<OrderStatus>("orders", &[]).is_err());
    }

    pub(in crate::store) fn sample_order() -> OrderRecord {
        use crate::domain::{OrderType, Side};
        OrderRecord {
            id: Uuid::from_u128(42),
            seq: 7,
            status: OrderStatus::Live,
            owner: Uuid::from_u128(9),
            maker: "0xmaker".into(),
            signer: "0xsigner".into(),
            taker: "0x0".into(),
            token: Arc::new(OrderToken {
                market_idx: 3,
                condition_id: "0xc0ffee".into(),
                token_id: "1001".into(),
                outcome_index: 1,
                outcome: "No".into(),
            }),
            side: Side::Sell,
            price: Price(4200),
            original_size: Amount(20_000_000),
            size_matched: Amount(5_000_000),
            maker_amount: Amount(20_000_000),
            taker_amount: Amount(8_400_000),
            fee_rate_bps: 10,
            expiration: 1_800_000_000,
            nonce: 2,
            salt: 123_456,
            signature_type: 1,
            signature: "0xsig".into(),
            order_type: OrderType::Gtd,
            post_only: true,
            reserved: Amount(15_000_000),
            associate_trades: [Uuid::from_u128(5), Uuid::from_u128(6)].into_iter().collect(),
            created_at: 1_700_000_000,
            version: 1,
        }
    }

    /// Every open order, as startup's scan hands them over.
    fn scan(s: &Store) -> Vec<OrderRecord> {
        let mut v = Vec::new();
        s.for_each_open_order(|o| v.push(Arc::unwrap_or_clone(o))).unwrap();
        v
    }

    /// The startup scan reads the two halves of the sequence range on two threads; what
    /// it hands over is still every open order once, in priority order, with its changes
    /// laid over, on both sides of the split and at it.
    #[test]
    fn the_open_order_scan_splits_the_sequences_and_keeps_their_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        assert!(scan(&store).is_empty());
        // Sequences 1..=9,999 with gaps; the split falls at 5,001.
        let mut expected = Vec::new();
        let (mut opened, mut changed) = (Batch::default(), Batch::default());
        for seq in (1..10_000u64).filter(|s| s % 3 != 0 || (4_998..=5_003).contains(s) || *s == 9_999) {
            let mut o = sample_order();
            o.id = Uuid::from_u128(seq as u128);
            o.seq = seq;
            o.status = OrderStatus::Live;
            o.associate_trades.clear();
            opened.put_order(Arc::new(o.clone()), Stored::New);
            if seq % 7 == 0 || (5_000..=5_002).contains(&seq) {
                o.size_matched += Amount(seq);
                changed.put_order(Arc::new(o.clone()), Stored::Open);
            }
            expected.push(o);
        }
        store.write([&opened], true).unwrap();
        store.write([&changed], true).unwrap();
        // From the memtables, then from tables after a restart.
        assert_eq!(scan(&store), expected);
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(scan(&store), expected);
    }

    /// The engine writes an accepted order's signature apart, keyed by its sequence, and
    /// keeps it out of the open order; the store finds it there, open or closed.
    #[test]
    fn an_orders_signature_is_written_once_apart_and_found_open_or_closed() {
        use crate::domain::{Market, Token};
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut core = crate::engine::Core::new("0xfee".into());
        let tok = |id: &str| Token { token_id: id.into(), outcome: "Yes".into() };
        core.add_market(Market::binary("0xc0ffee", tok("71321045679"), tok("1002"), Price(100), Amount::ZERO));
        let mut b = Batch::default();
        core.credit("0xmaker", "71321045679", Amount(1_000_000_000), &mut b);
        let mut o = real_order();
        o.maker = "0xmaker".into();
        o.signer = o.maker.clone();
        o.token = OrderToken::of(&core.markets[0].market, 0);
        (o.status, o.size_matched, o.reserved, o.nonce) = (OrderStatus::Live, Amount::ZERO, Amount::ZERO, 0);
        o.associate_trades.clear();
        let signature = o.signature.unpack().into_owned();
        let placed = core.execute(Arc::new(o.clone()), false, 1_700_000_000, &mut b).unwrap();
        assert!(placed.order.signature.as_bytes().is_empty(), "the open order does not hold it");
        store.write([&b], true).unwrap();
        let stored = store.get_order(&o.id).unwrap().unwrap();
        assert!(stored.signature.as_bytes().is_empty());
        let by_seq = store.get_raw(cf::ORDER_SIGNATURES, &placed.order.seq.to_be_bytes()).unwrap();
        assert_eq!(by_seq.as_deref(), Some(o.signature.as_bytes()));
        assert_eq!(store.order_signature(&o.id).unwrap(), Some(signature.clone()));
        // Closed: the record moves to `orders`, the signature stays where it was.
        let mut b = Batch::default();
        core.cancel(o.owner, &[o.id], &mut b);
        store.write([&b], true).unwrap();
        assert_eq!(store.get_order(&o.id).unwrap().unwrap().status, OrderStatus::Canceled);
        assert_eq!(store.order_signature(&o.id).unwrap(), Some(signature.clone()));
        assert_eq!(store.order_signature(&Uuid::from_u128(102)).unwrap(), None);
    }

    #[test]
    fn open_orders_live_under_their_priority_and_move_when_closed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let put = |s: &Store, orders: &[&OrderRecord], stored: Stored| {
            let mut batch = Batch::default();
            for o in orders {
                batch.put_order(Arc::new((*o).clone()), stored);
            }
            s.write([&batch], true).unwrap();
        };
        // Two open orders, written out of priority order: the scan returns them by seq.
        let mut a = sample_order();
        a.status = OrderStatus::Live;
        a.seq = 9;
        let mut b = a.clone();
        b.id = Uuid::from_u128(43);
        b.seq = 8;
        b.owner = Uuid::from_u128(7);
        put(&store, &[&a, &b], Stored::New);
        assert_eq!(scan(&store), vec![b.clone(), a.clone()]);
        assert_eq!(store.get_order(&a.id).unwrap(), Some(a.clone()));
        assert!(store.get_raw(cf::ORDERS, a.id.as_bytes()).unwrap().is_none());
        // Cancelled: it leaves the priority index and is found by id.
        a.status = OrderStatus::Canceled;
        put(&store, &[&a], Stored::Open);
        assert_eq!(scan(&store), vec![b.clone()]);
        assert_eq!(store.get_order(&a.id).unwrap(), Some(a.clone()));
        assert_eq!(store.open.get(&a.id), None);
        assert!(store.open_orders_of(&a.owner).unwrap().is_empty());
        // A fill of an open order writes what changed beside its record, which stays as it
        // opened, and keeps its index entries. Reads lay the change over the record.
        let opened = b.clone();
        b.size_matched += Amount(1_000_000);
        b.reserved -= Amount(500_000);
        b.associate_trades.push(Uuid::from_u128(77));
        put(&store, &[&b], Stored::Open);
        assert_eq!(scan(&store), vec![b.clone()]);
        assert_eq!(store.get_order(&b.id).unwrap(), Some(b.clone()));
        assert_eq!(store.open_orders_of(&b.owner).unwrap(), vec![b.clone()]);
        let live = store.get_raw(cf::LIVE_ORDERS, &b.seq.to_be_bytes()).unwrap().unwrap();
        assert_eq!(decode::<OrderRecord>(cf::LIVE_ORDERS, &live).unwrap(), opened);
        let state = store.get_raw(cf::OPEN_STATE, &b.seq.to_be_bytes()).unwrap().unwrap();
        let mut laid = opened.clone();
        decode::<OpenState>(cf::OPEN_STATE, &state).unwrap().lay_over(&mut laid);
        assert_eq!(laid, b);
        assert!(state.len() < live.len() / 2, "{} bytes of state for a {}-byte record", state.len(), live.len());
        // The latest change wins, and survives a restart.
        b.size_matched += Amount(1_000_000);
        b.status = OrderStatus::Deferred;
        put(&store, &[&b], Stored::Open);
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(scan(&store), vec![b.clone()]);
        assert_eq!(store.get_order(&b.id).unwrap(), Some(b.clone()));
        // An order closed on arrival is stored by id only.
        let mut d = a.clone();
        d.id = Uuid::from_u128(45);
        d.seq = 11;
        d.status = OrderStatus::Matched;
        put(&store, &[&d], Stored::New);
        assert_eq!(scan(&store), vec![b.clone()]);
        assert_eq!(store.get_order(&d.id).unwrap(), Some(d.clone()));
        assert!(store.get_raw(cf::LIVE_ORDERS, &d.seq.to_be_bytes()).unwrap().is_none());
        let mut c = b.clone();
        c.id = Uuid::from_u128(44);
        c.seq = 10;
        put(&store, &[&c], Stored::New);
        c.size_matched += Amount(1_000_000);
        put(&store, &[&c], Stored::Open);
        assert_eq!(scan(&store), vec![b.clone(), c.clone()]);
        assert_eq!(store.get_order(&c.id).unwrap(), Some(c.clone()));
        // Closing after a fill removes the change with the record; the whole order, as it
        // closed, is found by id.
        c.size_matched = c.original_size;
        c.status = OrderStatus::Matched;
        put(&store, &[&c], Stored::Open);
        assert_eq!(scan(&store), vec![b]);
        assert_eq!(store.get_order(&c.id).unwrap(), Some(c.clone()));
        assert!(store.get_raw(cf::OPEN_STATE, &c.seq.to_be_bytes()).unwrap().is_none());
        assert!(store.get_raw(cf::LIVE_ORDERS, &c.seq.to_be_bytes()).unwrap().is_none());
    }

    /// The open-order index changes around the write that changes the store: an order that
    /// opens is found once its write is (not before: nothing to find), and one that closes
    /// is found open until its write, closed after.
    #[test]
    fn an_order_is_found_as_written_while_its_write_is_prepared_and_after() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut o = sample_order();
        o.status = OrderStatus::Live;
        let batch = |o: &OrderRecord, stored| {
            let mut b = Batch::default();
            b.put_order(Arc::new(o.clone()), stored);
            b
        };
        let opening = store.prepare([&batch(&o, Stored::New)]);
        assert_eq!(store.get_order(&o.id).unwrap(), None);
        store.commit(opening, true).unwrap();
        assert_eq!(store.get_order(&o.id).unwrap(), Some(o.clone()));
        let open = o.clone();
        o.status = OrderStatus::Canceled;
        let closing = store.prepare([&batch(&o, Stored::Open)]);
        assert_eq!(store.get_order(&o.id).unwrap(), Some(open));
        store.commit(closing, true).unwrap();
        assert_eq!(store.get_order(&o.id).unwrap(), Some(o.clone()));
        assert_eq!(store.open.get(&o.id), None);
        // Opened and closed in one group: nothing stays in the index.
        let mut p = sample_order();
        p.id = Uuid::from_u128(99);
        p.seq = o.seq + 1;
        p.status = OrderStatus::Live;
        let mut both = batch(&p, Stored::New);
        p.status = OrderStatus::Matched;
        both.put_order(Arc::new(p.clone()), Stored::Open);
        store.write([&both], true).unwrap();
        assert_eq!(store.get_order(&p.id).unwrap(), Some(p.clone()));
        assert_eq!(store.open.get(&p.id), None);
    }

    /// A reader never sees an order go back to an earlier state while writes fill and close
    /// it: the fills it has seen, and its closing, stay seen (an open order's two reads —
    /// its changing state and its record as opened — straddle a write that closes it).
    #[test]
    fn a_reader_never_sees_an_order_go_back() {
        use std::sync::atomic::{AtomicBool, AtomicU64};
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path()).unwrap());
        const ORDERS: u64 = 3_000;
        let current = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let reader = {
            let (store, current, done) = (store.clone(), current.clone(), done.clone());
            std::thread::spawn(move || {
                let (mut last_id, mut seen) = (0, (Amount::ZERO, false));
                let mut reads = 0u64;
                while !done.load(Ordering::Relaxed) {
                    let k = current.load(Ordering::Relaxed);
                    let Some(o) = store.get_order(&Uuid::from_u128(1_000 + k as u128)).unwrap() else { continue };
                    reads += 1;
                    if k != last_id {
                        (last_id, seen) = (k, (Amount::ZERO, false));
                    }
                    let now = (o.size_matched, o.status == OrderStatus::Canceled);
                    assert!(now >= seen, "order {k} read as {now:?} after {seen:?}");
                    seen = now;
                }
                reads
            })
        };
        let write = |o: &OrderRecord, stored| {
            let mut b = Batch::default();
            b.put_order(Arc::new(o.clone()), stored);
            store.write([&b], false).unwrap();
        };
        for k in 0..ORDERS {
            let mut o = sample_order();
            o.id = Uuid::from_u128(1_000 + k as u128);
            o.seq = 1 + k;
            o.status = OrderStatus::Live;
            o.size_matched = Amount::ZERO;
            write(&o, Stored::New);
            current.store(k, Ordering::Relaxed);
            for _ in 0..2 {
                o.size_matched += Amount(1_000_000);
                write(&o, Stored::Open);
            }
            o.status = OrderStatus::Canceled;
            write(&o, Stored::Open);
        }
        done.store(true, Ordering::Relaxed);
        assert!(reader.join().unwrap() > 0);
    }

    /// Ids that share their first 8 bytes (the open-order index's key): each order is
    /// found as itself, open or closed, and an id never written is not found.
    #[test]
    fn orders_whose_ids_share_a_prefix_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let order = |n: u64, status| {
            let mut o = sample_order();
            o.id = Uuid::from_u64_pair(0x0123_4567_89ab_cdef, n << 8);
            o.seq = n;
            o.status = status;
            o
        };
        let (a, b, c) = (order(1, OrderStatus::Live), order(2, OrderStatus::Live), order(3, OrderStatus::Matched));
        let mut batch = Batch::default();
        for o in [&a, &b, &c] {
            batch.put_order(Arc::new(o.clone()), Stored::New);
        }
        store.write([&batch], true).unwrap();
        for o in [&a, &b, &c] {
            assert_eq!(store.get_order(&o.id).unwrap().as_ref(), Some(o));
        }
        assert_eq!(store.get_order(&order(4, OrderStatus::Live).id).unwrap(), None);
        // The first to open closes: the other stays found, the closed one as it closed.
        let mut a = a;
        a.status = OrderStatus::Canceled;
        let mut batch = Batch::default();
        batch.put_order(Arc::new(a.clone()), Stored::Open);
        store.write([&batch], true).unwrap();
        assert_eq!(store.get_order(&a.id).unwrap(), Some(a));
        assert_eq!(store.get_order(&b.id).unwrap(), Some(b));
    }

    /// [`sample_order`] with strings shaped like real ones, which the store packs.
    fn real_order() -> OrderRecord {
        OrderRecord {
            maker: "0x8ba1f109551bd432803012645ac136ddd64dba72".into(),
            signer: "0x8ba1f109551bd432803012645ac136ddd64dba72".into(),
            taker: "0x0000000000000000000000000000000000000000".into(),
            token: Arc::new(OrderToken {
                condition_id: "0x5f65177b394277fd294cd75650044e32ba009a95022d88a0c1d565897d72f8f1".into(),
                token_id: "71321045679252212594626385532706912750332728571942532289631379312455583992563".into(),
                ..(*sample_order().token).clone()
            }),
            signature: format!("0x{}1b", "5e".repeat(64)).into(),
            ..sample_order()
        }
    }

    /// Flushed tables are compressed: orders that differ only in their ids and sequence
    /// (the market's ids, addresses and amounts repeated) take a fraction of their bytes.
    #[test]
    fn tables_are_compressed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut b = Batch::default();
        let mut raw = 0;
        for n in 0..20_000u64 {
            let o = OrderRecord {
                id: Uuid::from_u64_pair(n.wrapping_mul(0x9e37_79b9_7f4a_7c15), n),
                seq: n,
                ..real_order()
            };
            let v = encode(&o);
            raw += v.len();
            b.put(cf::ORDERS, o.id.as_bytes().to_vec(), v);
        }
        store.write([&b], true).unwrap();
        store.flush().unwrap();
        let tables = store.db.property_int_value_cf(store.handle(cf::ORDERS), "rocksdb.total-sst-files-size");
        let tables = tables.unwrap().unwrap() as usize;
        assert!(tables > 0 && tables < raw / 2, "{tables} bytes of tables for {raw} bytes of values");
    }

    #[test]
    fn interned_order_decoding_equals_the_ordinary_one() {
        for o in [sample_order(), real_order()] {
            let bytes = encode(&o);
            // The shared token encodes in line, and reads back to the same bytes.
            assert_eq!(bytes, encode(&decode::<OrderRecord>(cf::ORDERS, &bytes).unwrap()));
            let mut i = Interner::default();
            let a = decode_order(&bytes, &mut i).unwrap();
            assert_eq!(a, o);
            assert_eq!(a, decode::<OrderRecord>(cf::ORDERS, &bytes).unwrap());
            // A second decode shares the repeated strings.
            let b = decode_order(&bytes, &mut i).unwrap();
            assert!(Arc::ptr_eq(&a.maker, &b.maker) && Arc::ptr_eq(&a.token, &b.token));
        }
        // The real order's six ids take 195 bytes where their text took 401: the whole
        // value is 319 bytes, 525 as text.
        assert_eq!(encode(&real_order()).len(), 320);
    }
}

pub(in crate::store) mod indexes {
    use std::ops::ControlFlow;

    use super::*;
    use crate::domain::{MakerFill, MatchType, Side, TradeToken};

    pub(in crate::store) fn trade(seq: u64, status: TradeStatus) -> TradeRecord {
        let token = Arc::new(TradeToken {
            market_idx: 2,
            condition_id: "0xc".into(),
            token_id: "11".into(),
            outcome: "Yes".into(),
        });
        TradeRecord {
            id: Uuid::from_u128(seq as u128),
            seq,
            taker_order_id: Uuid::from_u128(1000 + seq as u128),
            token: token.clone(),
            side: Side::Buy,
            size: Amount(10_000_000),
            price: Price(4000),
            fee_rate_bps: 0,
            status,
            match_time: 1_700_000_000 + seq,
            last_update: 0,
            bucket_index: 0,
            owner: Uuid::from_u128(1),
            maker_address: "0xtaker".into(),
            maker_orders: vec![MakerFill {
                order_id: Uuid::from_u128(2000 + seq as u128),
                owner: Uuid::from_u128(2),
                maker_address: "0xmaker".into(),
                matched_amount: Amount(10_000_000),
                price: Price(4000),
                token,
                side: Side::Sell,
                fee_rate_bps: 0,
                fee: Amount::ZERO,
            }],
            transaction_hash: String::new(),
            taker_fee: Amount::ZERO,
            error_msg: None,
            match_type: MatchType::Complementary,
            version: 1,
        }
    }

    /// A group's writes reach RocksDB sorted by family and key; writes to one key keep
    /// the order they were made in, within a batch and across the batches of a group.
    #[test]
    fn writes_to_one_key_keep_their_order_in_a_group() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let one = |ops: Vec<(bool, i64)>| {
            // (true, v): put v; (false, v): add v by merge.
            let mut b = Batch::default();
            for (put, v) in ops {
                let v = index::encode_counters(&[v]);
                if put {
                    b.put(cf::MARKET_STATS, b"k".to_vec(), v);
                } else {
                    b.merge(cf::MARKET_STATS, b"k".to_vec(), v);
                }
                // Other keys in between, before and after it in key order.
                b.put(cf::MARKET_STATS, b"a".to_vec(), index::encode_counters(&[0]));
                b.put(cf::MARKET_STATS, b"z".to_vec(), index::encode_counters(&[0]));
            }
            b
        };
        let sum = |store: &Store| store.counters(cf::MARKET_STATS, b"k").unwrap();
        // Put, then merge: 5 + 2. Merge, then put: the put wins.
        store.write([&one(vec![(true, 5), (false, 2)])], true).unwrap();
        assert_eq!(sum(&store), vec![7]);
        store.write([&one(vec![(false, 2), (true, 5)])], true).unwrap();
        assert_eq!(sum(&store), vec![5]);
        // The same across batches of one group, and a delete then a put.
        store.write([&one(vec![(true, 1)]), &one(vec![(false, 3)]), &one(vec![(true, 9)])], true).unwrap();
        assert_eq!(sum(&store), vec![9]);
        let mut del = Batch::default();
        del.delete(cf::MARKET_STATS, b"k".to_vec());
        store.write([&one(vec![(true, 4)]), &del], true).unwrap();
        assert_eq!(store.get_raw(cf::MARKET_STATS, b"k").unwrap(), None);
        store.write([&del, &one(vec![(true, 4)])], true).unwrap();
        assert_eq!(sum(&store), vec![4]);
    }

    /// A trade holds each side's token shared; it encodes with their fields in line, as
    /// its own fields were stored, and decodes to an equal record (a maker of the same
    /// token sharing the taker's).
    #[test]
    fn trades_encode_their_tokens_in_line() {
        let same = trade(1, TradeStatus::Pending);
        let mut mint = trade(2, TradeStatus::Confirmed);
        mint.match_type = MatchType::Mint;
        mint.maker_orders[0].token =
            Arc::new(TradeToken { token_id: "12".into(), outcome: "No".into(), ..(*mint.token).clone() });
        for t in [same, mint] {
            let bytes = encode(&t);
            assert_eq!(bytes, encode(&decode::<TradeRecord>(cf::TRADES, &bytes).unwrap()));
            let back = decode::<TradeRecord>(cf::TRADES, &bytes).unwrap();
            assert_eq!(back, t);
            let shared = Arc::ptr_eq(&back.token, &back.maker_orders[0].token);
            assert_eq!(shared, t.match_type == MatchType::Complementary);
        }
    }

    fn write(store: &Store, t: TradeRecord) {
        let mut b = Batch::default();
        b.put_trade(Arc::new(t));
        store.write([&b], true).unwrap();
    }

    #[test]
    fn trades_index_themselves_and_failed_ones_take_their_counters_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        for seq in 1..=3 {
            write(&store, trade(seq, TradeStatus::Pending));
        }
        let taker = store.get_raw(cf::POSITIONS, &index::position("0xtaker", "11")).unwrap().unwrap();
        assert_eq!(
            index::Position::decode(&taker),
            index::Position { size: 30_000_000, bought: 30_000_000, cost: 12_000_000, sold: 0, proceeds: 0 }
        );
        let maker = index::Position::decode(
            &store.get_raw(cf::MARKET_HOLDERS, &index::market_holder(2, "0xmaker", "11")).unwrap().unwrap(),
        );
        assert_eq!((maker.size, maker.sold, maker.proceeds), (-30_000_000, 30_000_000, 12_000_000));
        assert_eq!(store.counters(cf::MARKET_STATS, &2u32.to_be_bytes()).unwrap(), vec![12_000_000, 3]);
        // Nobody is notified of a PENDING trade.
        let (taker_key, maker_key) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let now = 1_800_000_000;
        assert!(store.notifications(&taker_key, now).unwrap().is_empty());
        // Confirmation changes no counter; failure takes the trade's share back.
        let mut confirmed = trade(1, TradeStatus::Confirmed);
        confirmed.last_update = now - 100;
        write(&store, confirmed);
        let mut failed = trade(2, TradeStatus::Failed);
        (failed.last_update, failed.error_msg) = (now, Some("no longer holds".into()));
        write(&store, failed);
        // Each settled trade notifies both keys, each of its own side, dated at settlement;
        // they are listed newest first.
        let taker_n = store.notifications(&taker_key, now).unwrap();
        let maker_n = store.notifications(&maker_key, now).unwrap();
        let seen = |n: &[NotificationRecord]| {
            n.iter().map(|n| (n.trade_seq, n.kind, n.side, n.trader_side, n.time)).collect::<Vec<_>>()
        };
        use crate::domain::{NotificationKind::*, TraderSide::*};
        assert_eq!(
            seen(&taker_n),
            [(2, TradeFailed, Side::Buy, Taker, now), (1, TradeConfirmed, Side::Buy, Taker, now - 100)]
        );
        assert_eq!(
            seen(&maker_n),
            [(2, TradeFailed, Side::Sell, Maker, now), (1, TradeConfirmed, Side::Sell, Maker, now - 100)]
        );
        assert_eq!((taker_n[0].error_msg.as_deref(), &*maker_n[0].market), (Some("no longer holds"), "0xc"));
        assert_eq!(store.counters(cf::MARKET_STATS, &2u32.to_be_bytes()).unwrap(), vec![8_000_000, 2]);
        let taker =
            index::Position::decode(&store.get_raw(cf::POSITIONS, &index::position("0xtaker", "11")).unwrap().unwrap());
        assert_eq!((taker.size, taker.cost), (20_000_000, 8_000_000));
        // The market index stays in time order, forward and backward.
        let mut seqs = Vec::new();
        store
            .walk(cf::TRADES_BY_MARKET, &2u32.to_be_bytes(), None, true, |_, v| {
                let t: index::Tick = Store::decode_value(cf::TRADES_BY_MARKET, v).unwrap();
                seqs.push(t.id.as_u128() as u64);
                ControlFlow::Continue(())
            })
            .unwrap();
        assert_eq!(seqs, vec![3, 2, 1]);
        let mut n = 0;
        store
            .walk(cf::TRADES_BY_WALLET, &index::holder_prefix("0xmaker"), None, false, |_, _| {
                n += 1;
                ControlFlow::Continue(())
            })
            .unwrap();
        assert_eq!(n, 3);
        // Every party's index keeps its trades whatever their status; only the PENDING
        // one waits for settlement.
        for owner in trade(1, TradeStatus::Pending).owners() {
            let ids = store.scan_prefix(cf::TRADES_BY_OWNER, owner.as_bytes(), &[], usize::MAX).unwrap();
            assert_eq!(ids.len(), 3);
        }
        let pending = store.scan_prefix(cf::PENDING_TRADES, &[], &[], usize::MAX).unwrap();
        assert_eq!(pending.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>(), vec![3u64.to_be_bytes().to_vec()]);
        // Counters survive a restart (merge operands replayed or compacted).
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.counters(cf::MARKET_STATS, &2u32.to_be_bytes()).unwrap(), vec![8_000_000, 2]);
    }

    /// What a key's notifications take is bounded: a read lists its newest thousand, none
    /// older than two days; a compaction drops the expired ones from the disk; a delete
    /// drops them all, listed or not, and no other key's.
    #[test]
    fn notifications_are_listed_newest_first_kept_two_days_and_deleted_whole() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (taker, maker) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let now = crate::domain::now_secs();
        let stale = now - NotificationRecord::KEPT_SECS - 10;
        let extra = 5;
        let mut b = Batch::default();
        for seq in 1..=(NotificationRecord::LISTED + extra) as u64 {
            let mut t = trade(seq, TradeStatus::Confirmed);
            // The first ones settled too long ago.
            t.last_update = if seq <= 3 { stale } else { now };
            b.put_trade(Arc::new(t));
        }
        store.write([&b], true).unwrap();
        let stored = |store: &Store, owner: &Uuid| {
            store.scan_prefix(cf::NOTIFICATIONS, owner.as_bytes(), &[], usize::MAX).unwrap().len()
        };
        assert_eq!(stored(&store, &taker), NotificationRecord::LISTED + extra);
        let listed = store.notifications(&taker, now).unwrap();
        assert_eq!(listed.len(), NotificationRecord::LISTED);
        assert_eq!(listed[0].trade_seq, (NotificationRecord::LISTED + extra) as u64);
        assert!(listed.windows(2).all(|w| w[0].trade_seq > w[1].trade_seq));
        // Two days on, the newest are past their time too.
        assert!(store.notifications(&taker, now + NotificationRecord::KEPT_SECS + 10).unwrap().is_empty());
        // A compaction drops the expired ones, and only those.
        store.compact_away(&[cf::NOTIFICATIONS]).unwrap();
        assert_eq!(stored(&store, &taker), NotificationRecord::LISTED + extra - 3);
        assert_eq!(stored(&store, &maker), NotificationRecord::LISTED + extra - 3);
        // A delete takes every one of the key's, the unlisted too, and survives a restart.
        store.delete_notifications(&taker).unwrap();
        assert_eq!(stored(&store, &taker), 0);
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(stored(&store, &taker), 0);
        assert_eq!(store.notifications(&maker, now).unwrap().len(), NotificationRecord::LISTED);
    }

    /// A trade's wallet analytics are written behind it from the log: a read finds them as
    /// soon as the trade's write returns, the log empties once they are written, and a
    /// store that stopped before writing them (a crash) writes them at its next start —
    /// adds and take-backs alike, once.
    #[test]
    fn wallet_analytics_left_in_the_log_are_written_at_the_next_start() {
        let dir = tempfile::tempdir().unwrap();
        let position = |store: &Store, address| {
            index::Position::decode(
                &store.get_raw(cf::POSITIONS, &index::position(address, "11")).unwrap().unwrap_or_default(),
            )
        };
        let wallet_trades = |store: &Store| {
            let mut seqs = Vec::new();
            store
                .walk(cf::TRADES_BY_WALLET, &index::holder_prefix("0xmaker"), None, false, |k, _| {
                    seqs.push(u64::from_be_bytes(k[k.len() - 9..k.len() - 1].try_into().unwrap()));
                    ControlFlow::Continue(())
                })
                .unwrap();
            seqs
        };
        let log_len = |store: &Store| store.all_raw(cf::ANALYTICS_LOG).unwrap().len();
        let store = Store::open(dir.path()).unwrap();
        write(&store, trade(1, TradeStatus::Pending));
        assert_eq!(position(&store, "0xtaker").size, 10_000_000);
        assert_eq!(wallet_trades(&store), [1]);
        assert_eq!(log_len(&store), 0);
        // The analytics writer stops, as in a crash: what is written next stays in the log.
        store.analytics.stop();
        for seq in 2..=4 {
            write(&store, trade(seq, TradeStatus::Pending));
        }
        write(&store, trade(3, TradeStatus::Failed));
        assert_eq!(log_len(&store), 4);
        assert_eq!(position(&store, "0xtaker").size, 10_000_000);
        assert_eq!(wallet_trades(&store), [1]);
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(log_len(&store), 0);
        let (taker, maker) = (position(&store, "0xtaker"), position(&store, "0xmaker"));
        assert_eq!((taker.size, taker.cost), (30_000_000, 12_000_000));
        assert_eq!((maker.size, maker.proceeds), (-30_000_000, 12_000_000));
        let holder = store.get_raw(cf::MARKET_HOLDERS, &index::market_holder(2, "0xmaker", "11")).unwrap();
        assert_eq!(index::Position::decode(&holder.unwrap()), maker);
        assert_eq!(wallet_trades(&store), [1, 2, 3, 4]);
        // The market's stats were written with the trades, not behind them.
        assert_eq!(store.counters(cf::MARKET_STATS, &2u32.to_be_bytes()).unwrap(), vec![12_000_000, 3]);
        // Applied once: another start finds nothing left to apply, and the log goes on.
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(position(&store, "0xtaker").size, 30_000_000);
        write(&store, trade(5, TradeStatus::Pending));
        assert_eq!(position(&store, "0xtaker").size, 40_000_000);
        assert_eq!(wallet_trades(&store), [1, 2, 3, 4, 5]);
        assert_eq!(log_len(&store), 0);
    }

    /// An acknowledged trade is in its wallets' analytics for any reader: each completion
    /// (run once the trade is durable) passes the trade to another thread, which finds it
    /// in the maker's history and the taker's position at once, though the analytics are
    /// written behind the trades.
    #[test]
    fn a_reader_told_of_a_durable_trade_finds_it_in_the_wallet_analytics() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path()).unwrap());
        use crate::commit::{persister, After};
        let (tx, handle) = persister::spawn(store.clone(), Arc::new(persister::PersistMetrics::default()));
        let (acked, seen) = crossbeam_channel::unbounded::<u64>();
        let reader = {
            let store = store.clone();
            std::thread::spawn(move || {
                let mut checked = 0;
                for seq in seen {
                    let mut last = None;
                    store
                        .walk(cf::TRADES_BY_WALLET, &index::holder_prefix("0xmaker"), None, true, |k, _| {
                            last = Some(u64::from_be_bytes(k[k.len() - 9..k.len() - 1].try_into().unwrap()));
                            ControlFlow::Break(())
                        })
                        .unwrap();
                    assert!(last >= Some(seq), "trade {seq} acknowledged, the maker's history ends at {last:?}");
                    let taker = store.get_raw(cf::POSITIONS, &index::position("0xtaker", "11")).unwrap();
                    assert!(index::Position::decode(&taker.unwrap()).size >= seq as i64 * 10_000_000);
                    checked += 1;
                }
                checked
            })
        };
        const N: u64 = 300;
        for seq in 1..=N {
            let mut batch = Batch::default();
            batch.put_trade(Arc::new(trade(seq, TradeStatus::Pending)));
            let acked = acked.clone();
            let after = After::reply(move |ok| {
                assert!(ok);
                acked.send(seq).unwrap();
            });
            tx.send(persister::Job { batch, after }).unwrap();
        }
        drop((tx, acked));
        handle.join().unwrap();
        assert_eq!(reader.join().unwrap(), N);
    }
}
mod coalescing {
    use super::*;
    use proptest::prelude::*;

    /// (family: 0 = ledger, 1 = a counter family; key 0..3; 0 = put, 1 = delete, 2 = merge;
    /// value). Merges only where RocksDB has a merge operator.
    fn write_op() -> impl Strategy<Value = (bool, u8, u8, i64)> {
        (any::<bool>(), 0u8..3, 0u8..3, -5i64..6)
    }

    fn batch(ops: &[(bool, u8, u8, i64)]) -> Batch {
        let mut b = Batch::default();
        for &(counter, key, kind, v) in ops {
            let (cf, key) = if counter { (cf::MARKET_STATS, vec![key]) } else { (cf::LEDGER, vec![key]) };
            let value = index::encode_counters(&[v, 1]);
            match kind {
                0 => b.put(cf, key, value),
                1 => b.delete(cf, key),
                _ if counter => b.merge(cf, key, value),
                _ => b.put(cf, key, value),
            }
        }
        b
    }

    fn state(store: &Store) -> Vec<Option<Vec<i64>>> {
        [cf::MARKET_STATS, cf::LEDGER]
            .iter()
            .flat_map(|cf| (0u8..3).map(move |k| (*cf, k)))
            .map(|(cf, k)| store.get_raw(cf, &[k]).unwrap().map(|v| index::decode_counters(&v)))
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// A group written as one coalesced batch reads exactly as the same writes made one
        /// at a time, each its own batch (where nothing is coalesced).
        #[test]
        fn a_coalesced_group_reads_as_its_writes_one_by_one(
            before in proptest::collection::vec(write_op(), 0..6),
            ops in proptest::collection::vec(write_op(), 1..24),
        ) {
            let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
            let (group, single) = (Store::open(a.path()).unwrap(), Store::open(b.path()).unwrap());
            for s in [&group, &single] {
                s.write([&batch(&before)], false).unwrap();
            }
            // As a group of batches (coalesced across them), and one write at a time.
            let batches: Vec<Batch> = ops.chunks(3).map(batch).collect();
            group.write(&batches, false).unwrap();
            for op in &ops {
                single.write([&batch(std::slice::from_ref(op))], false).unwrap();
            }
            prop_assert_eq!(state(&group), state(&single));
        }
    }

    #[test]
    fn a_group_writes_each_hot_key_once() {
        let mut e = Entries::default();
        for v in 1..=5 {
            e.put(cf::LEDGER, b"maker/USDC".to_vec(), vec![v]);
            e.merge(cf::MARKET_STATS, b"m".to_vec(), index::encode_counters(&[v as i64, 1]));
        }
        e.delete(cf::LEDGER, b"gone".to_vec());
        for (cf, family) in e.families {
            let out = coalesce(cf, family);
            match cf {
                cf::LEDGER => {
                    assert_eq!(out.len(), 2);
                    assert_eq!(out[0].value, vec![5]);
                }
                _ => {
                    assert_eq!(out.len(), 1);
                    assert_eq!(index::decode_counters(&out[0].value), vec![15, 5]);
                }
            }
        }
    }
}
