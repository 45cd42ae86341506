use super::memo::MEMO_BITS;
use super::open::fold;
use super::*;

/// Startup's memo hands every restored order the accounts a lookup by its strings would,
/// whichever of its keys (maker, token, side) it shares with earlier orders, and when
/// equal values arrive at two addresses (as from the two scan threads' interners).
#[test]
fn restored_orders_get_their_own_accounts_through_the_memo() {
    let tok = |id: &str, outcome: &str| Token { token_id: id.into(), outcome: outcome.into() };
    let mut core = Core::new("0xfee".into());
    core.add_market(Market::binary("0xc", tok("1", "Yes"), tok("2", "No"), Price(100), Amount(1)));
    let (a, b, a_again): (Arc<str>, Arc<str>, Arc<str>) = ("0xa".into(), "0xb".into(), "0xa".into());
    let m = &core.markets[0].market;
    let (yes, no, yes_again) = (OrderToken::of(m, 0), OrderToken::of(m, 1), OrderToken::of(m, 0));
    let orders = [
        (&a, &yes, Side::Buy, 10),
        (&a, &yes, Side::Sell, 20),
        (&a, &no, Side::Buy, 40),
        (&b, &yes, Side::Buy, 80),
        (&a_again, &yes_again, Side::Buy, 160),
        (&a, &yes, Side::Buy, 320),
    ];
    let mut memo = RestoreMemo::default();
    for (n, (maker, token, side, reserved)) in orders.into_iter().enumerate() {
        let o = record(n, maker, token, side, reserved);
        core.restore(Arc::new(o), &mut memo);
    }
    // Restored orders rest, and the book notes no change for them: the readers' views
    // start from a snapshot of the rebuilt book.
    assert_eq!(core.markets[0].book.len(), 6);
    assert!(core.markets[0].book.take_changes().is_empty());
    let restored: Vec<_> = core.orders.values().map(|o| (o.rec.clone(), o.accounts(&core.markets))).collect();
    for (rec, accounts) in restored {
        assert_eq!(accounts, core.accounts_of(&rec), "order {}", rec.id);
    }
    let reserved = |addr: &str, asset: &str| core.ledger.account(addr, asset).reserved;
    assert_eq!(reserved("0xa", COLLATERAL), Amount(10 + 40 + 160 + 320));
    assert_eq!(reserved("0xa", "1"), Amount(20));
    assert_eq!(reserved("0xb", COLLATERAL), Amount(80));
    assert_eq!(memo.0.len(), 5, "the equal values at other addresses took their own entry");
}

/// The open-order map keys an id by its two halves folded: ids that fold alike are
/// entries under one key, each found, cancelled and left by its own id, and an id that
/// folds alike but was never placed is not found.
#[test]
fn ids_that_fold_alike_are_told_apart() {
    let tok = |id: &str, outcome: &str| Token { token_id: id.into(), outcome: outcome.into() };
    let mut core = Core::new("0xfee".into());
    core.add_market(Market::binary("0xc", tok("1", "Yes"), tok("2", "No"), Price(100), Amount(1)));
    let maker: Arc<str> = "0xa".into();
    let yes = OrderToken::of(&core.markets[0].market, 0);
    let ids = [Uuid::from_u64_pair(1, 2), Uuid::from_u64_pair(3, 0), Uuid::from_u64_pair(7, 4)];
    let stranger = Uuid::from_u64_pair(0, 3);
    assert!(ids.iter().chain([&stranger]).all(|id| fold(id) == 3));
    let mut memo = RestoreMemo::default();
    for (n, id) in ids.iter().enumerate() {
        let mut o = record(n, &maker, &yes, Side::Buy, 10);
        o.id = *id;
        core.restore(Arc::new(o), &mut memo);
    }
    assert_eq!(core.orders.len(), 3);
    assert!(ids.iter().all(|id| core.orders.get(id).is_some_and(|o| o.rec.id == *id)));
    assert!(core.orders.get(&stranger).is_none());
    let owner = Uuid::from_u128(7);
    let mut batch = Batch::default();
    let out = core.cancel(owner, &[stranger, ids[1]], &mut batch);
    assert_eq!(out.canceled.as_slice(), &[ids[1]]);
    assert_eq!(out.not_canceled.len(), 1);
    assert!(core.orders.get(&ids[1]).is_none());
    assert!([ids[0], ids[2]].iter().all(|id| core.orders.get(id).is_some_and(|o| o.rec.id == *id)));
    assert_eq!(core.markets[0].book.len(), 2);
}

/// A LIVE GTC order of `maker` at 0.40.
fn record(n: usize, maker: &Arc<str>, token: &Arc<OrderToken>, side: Side, reserved: u64) -> OrderRecord {
    OrderRecord {
        id: Uuid::from_u128(n as u128 + 1),
        seq: n as u64 + 1,
        status: OrderStatus::Live,
        owner: Uuid::from_u128(7),
        maker: maker.clone(),
        signer: maker.clone(),
        taker: "".into(),
        token: token.clone(),
        side,
        price: Price(4_000),
        original_size: Amount(1_000_000),
        size_matched: Amount::ZERO,
        maker_amount: Amount(400_000),
        taker_amount: Amount(1_000_000),
        fee_rate_bps: 0,
        expiration: 0,
        nonce: 0,
        salt: 0,
        signature_type: 0,
        signature: "".into(),
        order_type: OrderType::Gtc,
        post_only: false,
        reserved: Amount(reserved),
        associate_trades: Default::default(),
        created_at: 0,
        version: 1,
    }
}

/// A placement's accounts come from the makers' memo when the maker's string is one
/// seen before, and from the ledger's index otherwise: either way they are the accounts
/// a lookup by text finds, also after colliding makers replaced a slot and for equal
/// strings at other addresses; and each slot holds what the index says.
#[test]
fn makers_accounts_by_pointer_are_the_ledgers() {
    let tok = |id: usize, outcome: &str| Token { token_id: id.to_string(), outcome: outcome.into() };
    let mut core = Core::new("0xfee".into());
    // Four outcome tokens per slot: one maker's tokens share slots.
    for i in 0..2 << MEMO_BITS {
        let mut m =
            Market::binary(&format!("0x{i:x}"), tok(2 * i + 1, "Yes"), tok(2 * i + 2, "No"), Price(100), Amount(1));
        m.idx = i as u32;
        core.add_market(m);
    }
    let tokens: Vec<_> = core.markets.iter().flat_map(|m| m.order_tokens.clone()).collect();
    let makers: Vec<Arc<str>> = (0..4).map(|i| format!("0x{i:040x}").into()).collect();
    // Each token by every maker in turn: some makers' entries for a token share a slot.
    for round in 0..3 {
        for (t, token) in tokens.iter().enumerate() {
            for (n, shared) in makers.iter().enumerate() {
                let copy: Arc<str> = (**shared).into();
                let maker = if round == 1 && n % 2 == 0 { &copy } else { shared };
                let side = if (n + t) % 3 == 0 { Side::Buy } else { Side::Sell };
                let accounts = core.accounts_of(&record(n, maker, token, side, 0));
                let [coll, own] = core.ledger.accounts(shared, [COLLATERAL, &token.token_id]);
                let want = if side == Side::Buy { (coll, own) } else { (own, coll) };
                assert_eq!((accounts.pay, accounts.recv), want, "round {round}, maker {n}, token {t}");
            }
        }
    }
    // What the slots hold is what the ledger's index says for their maker and token.
    let names: Vec<_> = tokens.iter().map(|t| (core.ledger.asset(&t.token_id), t.token_id.clone())).collect();
    let mut held = 0;
    for slot in core.memo.0.iter().flatten() {
        let name = &names.iter().find(|n| n.0 == slot.token).expect("an outcome token").1;
        assert_eq!(slot.accounts, core.ledger.accounts(&slot.maker, [COLLATERAL, name]));
        held += 1;
    }
    assert!(held > 1 << (MEMO_BITS - 1), "{held} slots in use");
}

/// One market ("1" Yes, "2" No) and five wallets funded with collateral and "1".
fn market_and_wallets() -> (Core, Vec<Arc<str>>) {
    let tok = |id: &str, outcome: &str| Token { token_id: id.into(), outcome: outcome.into() };
    let mut core = Core::new("0xfee".into());
    core.add_market(Market::binary("0xc", tok("1", "Yes"), tok("2", "No"), Price(100), Amount(1)));
    let wallets: Vec<Arc<str>> = (1..=5).map(|i| format!("0x{i:040x}").into()).collect();
    let mut setup = Batch::default();
    for w in &wallets {
        core.credit(w, COLLATERAL, Amount(1 << 40), &mut setup);
        core.credit(w, "1", Amount(1 << 40), &mut setup);
    }
    (core, wallets)
}

/// Order `n` of wallet `w` for `size` of the market's first token at 0.40.
fn order_of(core: &Core, wallets: &[Arc<str>], n: usize, w: usize, side: Side, size: u64) -> Arc<OrderRecord> {
    let mut o = record(n, &wallets[w], &core.markets[0].order_tokens[0], side, 0);
    let (size, cost) = (Amount(size), Amount(size * 4 / 10));
    (o.original_size, o.maker_amount, o.taker_amount) =
        if side == Side::Buy { (size, cost, size) } else { (size, size, cost) };
    o.signature = "0x01".into();
    Arc::new(o)
}

/// A resting order's writes fit the list a command's batch starts with, and a crossing
/// order's, for one to three fills, the room it reserves: neither list grows.
#[test]
fn placements_write_into_the_room_their_batch_has() {
    let (mut core, wallets) = market_and_wallets();
    let order = |core: &Core, n, w, side, size| order_of(core, &wallets, n, w, side, size);
    // Three makers offer one token at 0.40 twice each.
    for n in 0..6 {
        let mut batch = Batch::for_command();
        let placed = core.execute(order(&core, n, n % 3, Side::Sell, 1_000_000), false, 1, &mut batch).unwrap();
        assert!(placed.trades.is_empty());
        assert!(batch.ops.len() <= 4, "a resting order wrote {}", batch.ops.len());
        assert_eq!(batch.ops.capacity(), Batch::for_command().ops.capacity());
    }
    // Takers of one fill, two and three (the largest sweep the room is for).
    for (n, w, size, fills) in [(10, 3, 1_000_000, 1), (11, 4, 2_000_000, 2), (12, 3, 3_000_000, 3)] {
        let mut batch = Batch::for_command();
        let placed = core.execute(order(&core, n, w, Side::Buy, size), false, 1, &mut batch).unwrap();
        assert_eq!(placed.trades.len(), fills);
        // The taker lists every trade it took part in, in match order.
        let ids: Vec<Uuid> = placed.trades.iter().map(|t| t.id).collect();
        assert_eq!(placed.order.associate_trades[..], ids[..]);
        let (len, cap) = (batch.ops.len(), batch.ops.capacity());
        assert!(len <= CROSSING_WRITES && cap == CROSSING_WRITES, "{fills} fills: {len} writes, room {cap}");
    }
    assert_eq!(core.markets[0].book.len(), 0, "every offer was taken");
}

/// A taker meets an expired order in the middle of a level: it leaves the book
/// canceled, its reservation released, and the taker trades on with the orders behind
/// it; a taker that stops inside the level leaves the rest of the queue in place.
#[test]
fn a_sweep_passes_an_expired_order_in_the_middle_of_a_level() {
    let (mut core, wallets) = market_and_wallets();
    let mut batch = Batch::default();
    let mut ids = Vec::new();
    // Four offers at 0.40; the second expires at 5.
    for (n, w, expiration) in [(0, 0, 0), (1, 1, 5), (2, 2, 0), (3, 0, 0)] {
        let mut o = order_of(&core, &wallets, n, w, Side::Sell, 1_000_000);
        Arc::make_mut(&mut o).expiration = expiration;
        ids.push(o.id);
        core.execute(o, false, 1, &mut batch).unwrap();
    }
    let reserved = |core: &Core, w: usize| core.ledger.account(&wallets[w], "1").reserved;
    assert_eq!(reserved(&core, 1), Amount(1_000_000));
    let placed = core.execute(order_of(&core, &wallets, 10, 3, Side::Buy, 2_500_000), false, 10, &mut batch).unwrap();
    let fills: Vec<(Uuid, Amount)> =
        placed.trades.iter().map(|t| (t.maker_orders[0].order_id, t.maker_orders[0].matched_amount)).collect();
    assert_eq!(fills, [(ids[0], Amount(1_000_000)), (ids[2], Amount(1_000_000)), (ids[3], Amount(500_000))]);
    assert!(core.orders.get(&ids[1]).is_none(), "the expired order left the open orders");
    assert_eq!(reserved(&core, 1), Amount::ZERO, "its reservation went back");
    let book = &core.markets[0].book;
    assert_eq!(book.len(), 1);
    assert_eq!(book.level_orders(BookSide::Ask, 4_000), vec![(ids[3], 500_000)]);
    assert_eq!(book.depth(BookSide::Ask), vec![(Price(4_000), Amount(500_000))]);
    core.check().unwrap();
}

/// A maker's nonce comes from the memo while it holds and never after it moved: with
/// one string shared by the maker's orders (as the API shares a key's address), an
/// order signed with the old nonce is refused right after `increment_nonce` and one
/// with the new nonce accepted; a nonce loaded at startup counts the same way.
#[test]
fn a_raised_nonce_refuses_the_next_order_of_a_shared_maker_string() {
    let (mut core, wallets) = market_and_wallets();
    let mut batch = Batch::default();
    // Another maker raised its nonce: the map is not empty, placements use the memo.
    core.increment_nonce(&wallets[4], &mut batch);
    let signed = |core: &Core, n, nonce| {
        let mut o = order_of(core, &wallets, n, 0, Side::Sell, 1_000_000);
        Arc::make_mut(&mut o).nonce = nonce;
        o
    };
    let mut place = |core: &mut Core, n, nonce| core.execute(signed(core, n, nonce), false, 1, &mut batch).map(|_| ());
    place(&mut core, 1, 0).unwrap();
    assert_eq!(place(&mut core, 2, 1), Err(Reject::InvalidNonce));
    core.increment_nonce(&wallets[0], &mut Batch::default());
    assert_eq!(place(&mut core, 3, 0), Err(Reject::InvalidNonce));
    place(&mut core, 4, 1).unwrap();
    core.restore_nonce(wallets[0].to_string(), NonceState { nonce: 5, since_trade: 0 });
    assert_eq!(place(&mut core, 5, 1), Err(Reject::InvalidNonce));
    place(&mut core, 6, 5).unwrap();
}

/// A fill's two sides hold their market's shared tokens; a trade read back from the
/// store holds tokens of its own, equal to them, and shares the market's again once
/// restored at startup.
#[test]
fn trades_share_their_markets_tokens_and_get_them_back_at_startup() {
    let (mut core, wallets) = market_and_wallets();
    let mut batch = Batch::default();
    core.execute(order_of(&core, &wallets, 0, 0, Side::Sell, 1_000_000), false, 1, &mut batch).unwrap();
    let placed = core.execute(order_of(&core, &wallets, 1, 1, Side::Buy, 1_000_000), false, 1, &mut batch).unwrap();
    let trade = &placed.trades[0];
    let shared = &core.markets[0].trade_tokens[0];
    assert!(Arc::ptr_eq(&trade.token, shared) && Arc::ptr_eq(&trade.maker_orders[0].token, shared));
    assert_eq!(*trade.token.token_id, *core.markets[0].order_tokens[0].token_id);

    let stored: TradeRecord = crate::store::as_stored(&**trade);
    assert_eq!(stored, **trade);
    assert!(!Arc::ptr_eq(&stored.token, shared));
    let (mut restarted, _) = market_and_wallets();
    restarted.restore_pending(stored);
    let restored = &restarted.pending[0].trade;
    let shared = &restarted.markets[0].trade_tokens[0];
    assert!(Arc::ptr_eq(&restored.token, shared) && Arc::ptr_eq(&restored.maker_orders[0].token, shared));
    assert_eq!(**restored, **trade);
}

#[test]
fn fee_formula() {
    let a = Amount;
    // 100 tokens at 0.5 with 100 bps: SELL pays 0.01·0.5·100 = 0.5 USDC.
    assert_eq!(exchange_fee(Side::Sell, 100, a(100_000_000), a(100_000_000), a(50_000_000)), a(500_000));
    // BUY pays in tokens: 0.01·0.5·100/0.5 = 1 token.
    assert_eq!(exchange_fee(Side::Buy, 100, a(100_000_000), a(50_000_000), a(100_000_000)), a(1_000_000));
    assert_eq!(exchange_fee(Side::Buy, 0, a(100_000_000), a(50_000_000), a(100_000_000)), Amount::ZERO);
    // min(p, 1-p): at 0.9 the fee uses 0.1.
    assert_eq!(exchange_fee(Side::Sell, 100, a(100_000_000), a(100_000_000), a(90_000_000)), a(100_000));
    // BUY at 0.8: 0.01·0.2·50/0.8 = 0.125 tokens.
    assert_eq!(exchange_fee(Side::Buy, 100, a(50_000_000), a(40_000_000), a(50_000_000)), a(125_000));
    // The price as the contract takes it, in 1e-18 and floored: 2 USDC for 3 tokens.
    assert_eq!(exchange_fee(Side::Buy, 1000, a(3_000_000), a(2_000_000), a(3_000_000)), a(150_000));
    // No price, or one above 1: no fee.
    assert_eq!(exchange_fee(Side::Buy, 100, a(1), a(0), a(1)), Amount::ZERO);
    assert_eq!(exchange_fee(Side::Sell, 100, a(1), a(1), a(2)), Amount::ZERO);
}

/// Self-trade prevention: a taker meeting a resting order of its own maker cancels that
/// order and fills against the orders behind it; a FOK counts only what others offer, and a
/// FAK meeting only its own orders matches nothing. The book and the ledger stay whole.
#[test]
fn a_taker_cancels_its_own_makers_resting_orders_instead_of_filling_them() {
    let (mut core, wallets) = market_and_wallets();
    let order = |core: &Core, n, w, side, size| order_of(core, &wallets, n, w, side, size);
    let mut batch = Batch::default();
    // Wallet 0 offers first, wallet 1 behind it, at one price.
    let own = core.execute(order(&core, 0, 0, Side::Sell, 1_000_000), false, 1, &mut batch).unwrap().order.id;
    core.execute(order(&core, 1, 1, Side::Sell, 1_000_000), false, 1, &mut batch).unwrap();
    let tokens_held = |core: &Core| core.ledger.account(&wallets[0], "1").reserved;
    assert_eq!(tokens_held(&core), Amount(1_000_000));
    // A FOK by wallet 0 for both: only wallet 1's counts.
    let mut fok = order(&core, 2, 0, Side::Buy, 2_000_000);
    Arc::make_mut(&mut fok).order_type = OrderType::Fok;
    assert_eq!(core.execute(fok, false, 1, &mut batch).err(), Some(Reject::FokNotFilled));
    assert_eq!(core.markets[0].book.len(), 2, "a refused FOK changes nothing");
    // A GTC buy by wallet 0: its own offer is cancelled, wallet 1's fills it.
    let placed = core.execute(order(&core, 3, 0, Side::Buy, 1_000_000), false, 1, &mut batch).unwrap();
    assert_eq!(placed.trades.len(), 1);
    assert_eq!(&*placed.trades[0].maker_orders[0].maker_address, &*wallets[1]);
    assert!(core.orders.get(&own).is_none(), "its own resting order left the book");
    assert_eq!(core.markets[0].book.len(), 0);
    assert_eq!(tokens_held(&core), Amount::ZERO, "the cancelled offer's tokens are free again");
    // A FAK by wallet 2 meeting only wallet 2's own offer: no match, and the offer stays.
    core.execute(order(&core, 4, 2, Side::Sell, 1_000_000), false, 1, &mut batch).unwrap();
    let mut fak = order(&core, 5, 2, Side::Buy, 1_000_000);
    Arc::make_mut(&mut fak).order_type = OrderType::Fak;
    assert_eq!(core.execute(fak, false, 1, &mut batch).err(), Some(Reject::FakNoMatch));
    assert_eq!(core.markets[0].book.len(), 1);
    assert_eq!(core.check(), Ok(()));
}
