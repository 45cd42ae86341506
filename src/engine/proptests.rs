//! Property tests of the matching core over random command sequences, settlement passes
//! and nonce increments (which make pending trades fail): after every command the book is
//! never crossed, level totals match the orders, reservations match open orders plus the
//! holds of unsettled trades, expected receipts match those trades, and collateral and
//! tokens are conserved (USDC + YES and YES − NO are invariant: a mint turns q USDC into
//! q YES + q NO, a merge the reverse; fees move within the ledger). The level changes the
//! book reports, applied in order, rebuild its depth exactly.

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use uuid::Uuid;

use super::book::BookSide;
use super::core::{Core, Reject};
use super::LedgerChange;
use crate::domain::NonceState;
use crate::domain::*;
use crate::store::Batch;

const USERS: [&str; 3] = ["0xa", "0xb", "0xc"];

fn market() -> Market {
    Market::binary(
        "0xc",
        Token { token_id: "1".into(), outcome: "Yes".into() },
        Token { token_id: "2".into(), outcome: "No".into() },
        Price(100),
        Amount::ZERO,
    )
}

#[derive(Debug, Clone)]
enum Cmd {
    Place { user: usize, no: bool, buy: bool, ticks: u32, size: u64, ty: u8, fee: u32 },
    Cancel { pick: usize },
    Settle { max: usize },
    IncrementNonce { user: usize },
}

fn cmd() -> impl Strategy<Value = Cmd> {
    prop_oneof![
        4 => (0..3usize, any::<bool>(), any::<bool>(), 1..100u32, 1..40u64, 0..4u8, prop_oneof![Just(0u32), Just(100u32)])
            .prop_map(|(user, no, buy, ticks, size, ty, fee)| Cmd::Place { user, no, buy, ticks, size, ty, fee }),
        1 => (0..64usize).prop_map(|pick| Cmd::Cancel { pick }),
        1 => (1..6usize).prop_map(|max| Cmd::Settle { max }),
        1 => Just(Cmd::IncrementNonce { user: 0 }),
    ]
}

#[allow(clippy::too_many_arguments)]
fn order(
    n: u64,
    user: usize,
    no: bool,
    buy: bool,
    ticks: u32,
    size: u64,
    ty: u8,
    fee: u32,
    nonce: u64,
) -> (OrderRecord, bool) {
    let price = ticks * 100;
    // Sizes in 0.25-token steps exercise rounding in fills.
    let q = size * 250_000;
    let cost = mul_div_floor(q, price as u64, PRICE_ONE as u64);
    let side = if buy { Side::Buy } else { Side::Sell };
    let (maker_amount, taker_amount) = if buy { (cost.max(1), q) } else { (q, cost.max(1)) };
    let order_type = match ty {
        0 | 1 => OrderType::Gtc,
        2 => OrderType::Fok,
        _ => OrderType::Fak,
    };
    let user_addr = USERS[user].to_string();
    (
        OrderRecord {
            id: Uuid::from_u128(n as u128 + 1),
            seq: 0,
            status: OrderStatus::Live,
            owner: Uuid::from_u128(1000 + user as u128),
            maker: user_addr.as_str().into(),
            signer: user_addr.as_str().into(),
            taker: "".into(),
            token: OrderToken::of(&market(), no as u8),
            side,
            price: Price(price),
            original_size: Amount(q),
            size_matched: Amount::ZERO,
            maker_amount: Amount(maker_amount),
            taker_amount: Amount(taker_amount),
            fee_rate_bps: fee,
            expiration: 0,
            nonce,
            salt: n,
            signature_type: 0,
            signature: "".into(),
            order_type,
            post_only: ty == 1,
            reserved: Amount::ZERO,
            associate_trades: Default::default(),
            created_at: 0,
            version: 1,
        },
        false,
    )
}

fn totals(c: &Core) -> (u128, u128, u128) {
    (c.ledger.total("USDC"), c.ledger.total("1"), c.ledger.total("2"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn book_and_ledger_invariants(cmds in proptest::collection::vec(cmd(), 1..120)) {
        let mut c = Core::new("0xfee".into());
        c.add_market(market());
        let mut b = Batch::default();
        for u in USERS {
            c.credit(u, "USDC", Amount(50 * AMOUNT_ONE), &mut b);
            c.credit(u, "1", Amount(40 * AMOUNT_ONE), &mut b);
            c.credit(u, "2", Amount(40 * AMOUNT_ONE), &mut b);
        }
        let (u0, y0, n0) = totals(&c);
        let mut placed: Vec<(Uuid, Uuid)> = Vec::new();
        // The readers' book, kept only from the engine's level changes.
        let mut shadow: [BTreeMap<u32, Amount>; 2] = Default::default();
        for (n, cmd) in cmds.into_iter().enumerate() {
            let mut b = Batch::default();
            match cmd {
                Cmd::Place { user, no, buy, ticks, size, ty, fee } => {
                    let nonce = c.nonce_of(USERS[user]);
                    let (o, defer) = order(n as u64, user, no, buy, ticks, size, ty, fee, nonce);
                    let (id, owner) = (o.id, o.owner);
                    if let Ok(p) = c.execute(Arc::new(o), defer, 0, &mut b) {
                        prop_assert!(p.order.size_matched <= p.order.original_size);
                        let filled: Amount = p.trades.iter().map(|t| t.size).sum();
                        prop_assert_eq!(filled, p.order.size_matched);
                        for t in &p.trades {
                            prop_assert!(t.size > Amount::ZERO);
                        }
                        if p.order.order_type == OrderType::Fok {
                            prop_assert_eq!(p.order.size_matched, p.order.original_size);
                        }
                        placed.push((id, owner));
                    }
                }
                Cmd::Cancel { pick } => {
                    if !placed.is_empty() {
                        let (id, owner) = placed[pick % placed.len()];
                        c.cancel(owner, &[id], &mut b);
                    }
                }
                Cmd::Settle { max } => {
                    let before = c.pending_len();
                    let s = c.settle(1, max, &mut b);
                    prop_assert_eq!(s.confirmed + s.failed.len(), before.min(max));
                }
                Cmd::IncrementNonce { user } => {
                    c.increment_nonce(USERS[user], &mut b);
                    prop_assert!(c.open_ids(Uuid::from_u128(1000 + user as u128), None, None).is_empty());
                }
            }
            prop_assert_eq!(c.check(), Ok(()));
            let changes = c.markets[0].book.take_changes();
            for (levels, list) in shadow.iter_mut().zip([&changes.bids, &changes.asks]) {
                for &(p, size) in list {
                    let before = if size.is_zero() { levels.remove(&p.units()) } else { levels.insert(p.units(), size) };
                    prop_assert!(before != Some(size), "a change that changes nothing at {:?}", p);
                }
            }
            let bids: Vec<(Price, Amount)> = shadow[0].iter().rev().map(|(p, s)| (Price(*p), *s)).collect();
            let asks: Vec<(Price, Amount)> = shadow[1].iter().map(|(p, s)| (Price(*p), *s)).collect();
            prop_assert_eq!(bids, c.markets[0].book.depth(BookSide::Bid));
            prop_assert_eq!(asks, c.markets[0].book.depth(BookSide::Ask));
            let (u, y, no) = totals(&c);
            prop_assert_eq!(u + y, u0 + y0, "USDC + YES conserved");
            prop_assert_eq!(y as i128 - no as i128, y0 as i128 - n0 as i128, "YES − NO conserved");
        }
        // Settling everything and cancelling everything releases every reservation and
        // every expected receipt.
        let mut b = Batch::default();
        c.settle(2, usize::MAX, &mut b);
        prop_assert_eq!(c.pending_len(), 0);
        for u in 0..3u128 {
            let owner = Uuid::from_u128(1000 + u);
            let ids = c.open_ids(owner, None, None);
            c.cancel(owner, &ids, &mut b);
        }
        for u in USERS {
            for a in ["USDC", "1", "2"] {
                prop_assert_eq!(c.ledger.account(u, a).reserved, Amount::ZERO);
                prop_assert_eq!(c.ledger.account(u, a).incoming, Amount::ZERO);
            }
        }
        prop_assert_eq!(c.check(), Ok(()));
        let (u, y, no) = totals(&c);
        prop_assert_eq!(u + y, u0 + y0, "USDC + YES conserved after settlement");
        prop_assert_eq!(y as i128 - no as i128, y0 as i128 - n0 as i128);
    }
}

/// A core with one market, 0xa holding 100 USDC and 0xb 40 YES.
fn funded() -> (Core, Batch) {
    let mut c = Core::new("0xfee".into());
    c.add_market(market());
    let mut b = Batch::default();
    c.credit("0xa", "USDC", Amount(100 * AMOUNT_ONE), &mut b);
    c.credit("0xb", "1", Amount(40 * AMOUNT_ONE), &mut b);
    (c, b)
}

/// 0xa (100 USDC) buys 10 YES at 0.60 from 0xb's resting sell: one PENDING trade.
fn one_fill() -> (Core, Batch, super::core::Placed) {
    let (mut c, mut b) = funded();
    c.execute(Arc::new(ten_at_60(1, 1, false)), false, 0, &mut b).unwrap();
    let p = c.execute(Arc::new(ten_at_60(2, 0, true)), false, 0, &mut b).unwrap();
    (c, b, p)
}

/// Order `n` of user `user`: 10 YES at 0.60.
fn ten_at_60(n: u64, user: usize, buy: bool) -> OrderRecord {
    order(n, user, false, buy, 60, 40, 0, 0, 0).0
}

/// Transfers (bridge, split/merge/redeem) are all or nothing and take only what is settled
/// and not held: receipts of unsettled trades and what open orders or payments hold stay.
#[test]
fn transfers_take_only_settled_free_balances() {
    use LedgerChange::{Credit, Debit};
    let (mut c, mut b, _) = one_fill(); // 0xa pays 6 at settlement
    let before = (c.ledger.account("0xa", "USDC"), c.ledger.account("0xa", "1"));
    let ch = |v: &[(&str, LedgerChange)]| v.iter().map(|(a, x)| (a.to_string(), *x)).collect::<Vec<_>>();
    let refused = [
        ch(&[("1", Debit(Amount(AMOUNT_ONE)))]),         // incoming, not settled
        ch(&[("USDC", Debit(Amount(95 * AMOUNT_ONE)))]), // 6 held for the payment
        ch(&[("USDC", Debit(Amount(50 * AMOUNT_ONE))), ("USDC", Debit(Amount(45 * AMOUNT_ONE)))]), // debits add up
        ch(&[("2", Credit(Amount(AMOUNT_ONE))), ("USDC", Debit(Amount(95 * AMOUNT_ONE)))]), // nothing applied
    ];
    for r in refused {
        assert_eq!(c.transfer("0xa", &r, &mut b), Err(Reject::NotEnoughBalance), "{r:?}");
        assert_eq!((c.ledger.account("0xa", "USDC"), c.ledger.account("0xa", "1")), before);
        assert_eq!(c.ledger.account("0xa", "2").balance, Amount::ZERO);
    }
    let split = ch(&[
        ("USDC", Debit(Amount(94 * AMOUNT_ONE))),
        ("1", Credit(Amount(94 * AMOUNT_ONE))),
        ("2", Credit(Amount(94 * AMOUNT_ONE))),
    ]);
    assert_eq!(c.transfer("0xa", &split, &mut b), Ok(()));
    assert_eq!(c.ledger.account("0xa", "USDC").balance, Amount(6 * AMOUNT_ONE));
    assert_eq!(c.ledger.account("0xa", "2").balance, Amount(94 * AMOUNT_ONE));
    assert_eq!(c.check(), Ok(()));
}

/// A fill is usable at once and settles later; a nonce increment before settlement makes
/// the trade fail, voids its receipts and cancels the orders that relied on them.
#[test]
fn settlement_confirms_and_fails() {
    let (mut c, mut b, p) = one_fill();
    assert_eq!(p.trades.len(), 1);
    let a_yes = c.ledger.account("0xa", "1");
    assert_eq!(
        (a_yes.balance, a_yes.incoming, a_yes.available()),
        (Amount::ZERO, Amount(10 * AMOUNT_ONE), Amount(10 * AMOUNT_ONE))
    );
    assert_eq!(c.ledger.account("0xa", "USDC").reserved, Amount(6 * AMOUNT_ONE), "payment held");
    assert_eq!(c.check(), Ok(()));

    let s = c.settle(1, 10, &mut b);
    assert_eq!((s.confirmed, s.failed.len()), (1, 0));
    let written = b.ops.iter().rev().find_map(|op| match op {
        crate::store::Op::Trade(t) => Some(t.status),
        _ => None,
    });
    assert_eq!(written, Some(TradeStatus::Confirmed), "the confirmed record goes to the batch");
    assert_eq!(c.ledger.account("0xa", "1").balance, Amount(10 * AMOUNT_ONE));
    assert_eq!(c.ledger.account("0xa", "USDC").balance, Amount(94 * AMOUNT_ONE));
    assert_eq!(c.ledger.account("0xb", "USDC").balance, Amount(6 * AMOUNT_ONE));
    assert_eq!(c.ledger.account("0xb", "1").balance, Amount(30 * AMOUNT_ONE));
    assert_eq!(c.pending_len(), 0);

    // Second fill: 0xa resells the YES it is about to receive, then 0xb invalidates its
    // nonce before settlement.
    c.execute(Arc::new(ten_at_60(3, 1, false)), false, 0, &mut b).unwrap();
    c.execute(Arc::new(ten_at_60(4, 0, true)), false, 0, &mut b).unwrap();
    let resell = order(5, 0, false, false, 90, 80, 0, 0, 0).0; // 20 YES at 0.90: rests
    let resell_id = resell.id;
    c.execute(Arc::new(resell), false, 0, &mut b).unwrap();
    assert_eq!(c.ledger.account("0xa", "1").reserved, Amount(20 * AMOUNT_ONE));
    let (nonce, canceled) = c.increment_nonce("0xb", &mut b);
    assert_eq!((nonce, canceled.len()), (1, 0), "both fills were whole: no open order of 0xb");
    let s = c.settle(2, 10, &mut b);
    assert_eq!((s.confirmed, s.failed.len()), (0, 1));
    assert!(s.failed[0].error_msg.as_deref().unwrap().contains("nonce"));
    assert_eq!(s.canceled.iter().map(|x| x.0).collect::<Vec<_>>(), vec![resell_id]);
    // Nothing moved: balances are those after the first settlement, nothing is held.
    assert_eq!(c.ledger.account("0xa", "USDC"), {
        let mut l = crate::ledger::Ledger::default();
        l.load("x", "USDC", Amount(94 * AMOUNT_ONE));
        l.account("x", "USDC")
    });
    assert_eq!(c.ledger.account("0xa", "1").balance, Amount(10 * AMOUNT_ONE));
    assert_eq!(c.ledger.account("0xa", "1").reserved, Amount::ZERO);
    assert_eq!(c.ledger.account("0xb", "1").balance, Amount(30 * AMOUNT_ONE));
    assert_eq!(c.ledger.account("0xb", "1").reserved, Amount::ZERO);
    assert_eq!(c.check(), Ok(()));
}

/// Settlement skips the per-address nonce lookups for trades matched after the latest
/// nonce change; a nonce loaded at startup counts as a change, so a trade matched before
/// it still fails after a restart, and one matched after it confirms.
#[test]
fn a_nonce_restored_at_startup_still_fails_the_trades_matched_before_it() {
    let (_, _, p) = one_fill();
    let trade = (*p.trades[0]).clone();
    for (since, fails) in [(trade.seq + 1, true), (trade.seq, false)] {
        // A restart: balances as stored, then nonces, then the PENDING trade.
        let (mut r, mut b) = funded();
        r.restore_nonce("0xb".into(), NonceState { nonce: 1, since_trade: since });
        r.restore_pending(trade.clone());
        assert_eq!(r.check(), Ok(()));
        let s = r.settle(2, 10, &mut b);
        assert_eq!((s.confirmed, s.failed.len()), if fails { (0, 1) } else { (1, 0) }, "since {since}");
        if fails {
            assert!(s.failed[0].error_msg.as_deref().unwrap().contains("nonce"));
        }
        assert_eq!(r.check(), Ok(()));
    }
}

/// Empty topics of the two feeds, for an engine under test.
fn topics() -> (Arc<crate::commit::bus::Bus>, Arc<crate::commit::bus::UserBus>) {
    (
        Arc::new(crate::commit::bus::Bus::new(8, Default::default())),
        Arc::new(crate::commit::bus::UserBus::new(8, Default::default())),
    )
}

/// The engine thread over [`funded`], with a persister that acknowledges every job at
/// once; the receiver gets what it hands the publisher.
fn spawned(
    (bus, user_bus): (Arc<crate::commit::bus::Bus>, Arc<crate::commit::bus::UserBus>),
) -> (super::EngineHandle, std::thread::JoinHandle<()>, crossbeam_channel::Receiver<crate::commit::bus::Published>) {
    let (c, _) = funded();
    let (persist, jobs) = crossbeam_channel::unbounded::<crate::commit::persister::Job>();
    std::thread::spawn(move || jobs.into_iter().for_each(|j| j.after.run(true)));
    let (tx, published) = crossbeam_channel::unbounded();
    let feeds = crate::commit::bus::Feeds::new(tx, bus, user_bus);
    let registry = Arc::new(crate::commit::views::Registry::default());
    let (h, engine) = super::spawn(c, registry, persist, feeds, Arc::new(crate::metrics::Metrics::new()));
    (h, engine, published)
}

/// The handle claims every id it sends: an order that filled and closed at once is refused
/// when sent again (the engine no longer holds it open, and its write may not be durable
/// yet), while an order the engine refused may be sent again.
#[test]
fn the_handle_refuses_an_order_sent_twice_and_gives_back_refused_ones() {
    use super::EngineError;
    let (h, _, _) = spawned(topics());
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    rt.block_on(async {
        let fak = |n: u64, ticks: u32| order(n, 0, false, true, ticks, 8, 3, 0, 0).0;
        h.submit(ten_at_60(1, 1, false), false).await.unwrap();
        let filled = h.submit(fak(2, 60), false).await.unwrap();
        assert_eq!((filled.order.status, filled.trades.len()), (OrderStatus::Matched, 1));
        assert_eq!(h.submit(fak(2, 60), false).await.unwrap_err(), EngineError::Rejected(Reject::Duplicated));
        // The resting order, too.
        assert_eq!(
            h.submit(ten_at_60(1, 1, false), false).await.unwrap_err(),
            EngineError::Rejected(Reject::Duplicated)
        );
        // Nothing to take at 0.50 yet: refused, and accepted once something rests there.
        assert_eq!(h.submit(fak(3, 50), false).await.unwrap_err(), EngineError::Rejected(Reject::FakNoMatch));
        h.submit(order(4, 1, false, false, 50, 40, 0, 0, 0).0, false).await.unwrap();
        assert_eq!(h.submit(fak(3, 50), false).await.unwrap().trades.len(), 1);
    });
}

/// The publisher is handed a command's changes only when a connection follows them: a
/// user-channel event once any API key is subscribed, a book change once either of the
/// market's tokens is — and nothing when nobody listens.
#[test]
fn the_publisher_is_handed_only_what_someone_follows() {
    use crate::commit::bus::Published;
    let (bus, user_bus) = topics();
    let (h, _engine, published) = spawned((bus.clone(), user_bus.clone()));
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let place = |n: u64| rt.block_on(h.submit(order(n, 1, false, false, 60 + n as u32, 4, 0, 0, 0).0, false)).unwrap();
    // Each resting sell changes the book and writes its order.
    place(1);
    assert!(published.try_recv().is_err(), "nobody listens");
    let (outbox, _queue) = user_bus.outbox();
    user_bus.add(Uuid::from_u128(1_001), &outbox);
    place(2);
    assert!(matches!(published.try_recv(), Ok(Published::User { .. })));
    assert!(published.try_recv().is_err(), "no book subscriber");
    let (outbox, _queue) = bus.outbox();
    bus.add((0, 1), &outbox);
    place(3);
    let kinds: Vec<bool> = published.try_iter().map(|p| matches!(p, Published::Book { .. })).collect();
    assert_eq!(kinds, [false, true], "the user event, then the book change");
}

/// An order names its market by its token: the market's shared token is recognised by
/// pointer, a copy by its token id, and a token whose id no market has is refused even when
/// its market number and outcome point at a market.
#[test]
fn orders_find_their_market_by_shared_token_or_by_token_id() {
    let mut c = Core::new("0xfee".into());
    c.add_market(market());
    let mut b = Batch::default();
    c.credit("0xa", "USDC", Amount(100 * AMOUNT_ONE), &mut b);
    let shared = c.markets[0].order_tokens[0].clone();
    let mut by_pointer = ten_at_60(1, 0, true);
    by_pointer.token = shared.clone();
    let p = c.execute(Arc::new(by_pointer), false, 0, &mut b).unwrap();
    assert!(Arc::ptr_eq(&p.order.token, &shared));
    // A copy (as `ten_at_60` builds) is placed on the same market and given the shared token.
    let copy = ten_at_60(2, 0, true);
    assert!(!Arc::ptr_eq(&copy.token, &shared));
    let p = c.execute(Arc::new(copy), false, 0, &mut b).unwrap();
    assert!(Arc::ptr_eq(&p.order.token, &shared));
    let mut unknown = ten_at_60(3, 0, true);
    let mut t = (*unknown.token).clone();
    t.token_id = "3".into();
    unknown.token = Arc::new(t);
    let before = c.orders.len();
    assert_eq!(c.execute(Arc::new(unknown), false, 0, &mut b).unwrap_err(), Reject::UnknownMarket);
    assert_eq!(c.orders.len(), before);
    assert_eq!(c.markets[0].book.len(), 2);
}
