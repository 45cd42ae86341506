//! Property tests of the matching core over random command sequences: after every command
//! the book is never crossed, level totals and reservations match the open orders, and
//! collateral and tokens are conserved (USDC + YES and YES − NO are invariant: a mint
//! turns q USDC into q YES + q NO, a merge the reverse; fees move within the ledger).

use proptest::prelude::*;
use uuid::Uuid;

use super::core::Core;
use crate::domain::*;
use crate::store::Batch;

const USERS: [&str; 3] = ["0xa", "0xb", "0xc"];

fn market() -> Market {
    Market::binary(
        "0xc",
        Token { token_id: "1".into(), outcome: "Yes".into() },
        Token { token_id: "2".into(), outcome: "No".into() },
        100,
        0,
    )
}

#[derive(Debug, Clone)]
enum Cmd {
    Place { user: usize, no: bool, buy: bool, ticks: u32, size: u64, ty: u8, fee: u32 },
    Cancel { pick: usize },
}

fn cmd() -> impl Strategy<Value = Cmd> {
    prop_oneof![
        4 => (0..3usize, any::<bool>(), any::<bool>(), 1..100u32, 1..40u64, 0..4u8, prop_oneof![Just(0u32), Just(100u32)])
            .prop_map(|(user, no, buy, ticks, size, ty, fee)| Cmd::Place { user, no, buy, ticks, size, ty, fee }),
        1 => (0..64usize).prop_map(|pick| Cmd::Cancel { pick }),
    ]
}

#[allow(clippy::too_many_arguments)]
fn order(n: u64, user: usize, no: bool, buy: bool, ticks: u32, size: u64, ty: u8, fee: u32) -> (OrderRecord, bool) {
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
            market_idx: 0,
            condition_id: "0xc".into(),
            token_id: if no { "2" } else { "1" }.into(),
            outcome_index: no as u8,
            outcome: "".into(),
            side,
            price,
            original_size: q,
            size_matched: 0,
            maker_amount,
            taker_amount,
            fee_rate_bps: fee,
            expiration: 0,
            nonce: 0,
            salt: n,
            signature_type: 0,
            signature: "".into(),
            order_type,
            post_only: ty == 1,
            reserved: 0,
            associate_trades: vec![],
            created_at: 0,
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
            c.credit(u, "USDC", 50 * AMOUNT_ONE, &mut b);
            c.credit(u, "1", 40 * AMOUNT_ONE, &mut b);
            c.credit(u, "2", 40 * AMOUNT_ONE, &mut b);
        }
        let (u0, y0, n0) = totals(&c);
        let mut placed: Vec<(Uuid, Uuid)> = Vec::new();
        for (n, cmd) in cmds.into_iter().enumerate() {
            let mut b = Batch::default();
            match cmd {
                Cmd::Place { user, no, buy, ticks, size, ty, fee } => {
                    let (o, defer) = order(n as u64, user, no, buy, ticks, size, ty, fee);
                    let (id, owner) = (o.id, o.owner);
                    if let Ok(p) = c.place(o, defer, 0, &mut b) {
                        prop_assert!(p.order.size_matched <= p.order.original_size);
                        let filled: u64 = p.trades.iter().map(|t| t.size).sum();
                        prop_assert_eq!(filled, p.order.size_matched);
                        for t in &p.trades {
                            prop_assert!(t.size > 0);
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
            }
            prop_assert_eq!(c.check(), Ok(()));
            let (u, y, no) = totals(&c);
            prop_assert_eq!(u + y, u0 + y0, "USDC + YES conserved");
            prop_assert_eq!(y as i128 - no as i128, y0 as i128 - n0 as i128, "YES − NO conserved");
        }
        // Cancelling everything releases every reservation.
        let mut b = Batch::default();
        for u in 0..3u128 {
            let owner = Uuid::from_u128(1000 + u);
            let ids = c.open_ids(owner, None, None);
            c.cancel(owner, &ids, &mut b);
        }
        for u in USERS {
            for a in ["USDC", "1", "2"] {
                prop_assert_eq!(c.ledger.account(u, a).reserved, 0);
            }
        }
    }
}
