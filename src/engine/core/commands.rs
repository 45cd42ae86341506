//! The engine's commands besides placing: cancels, expiry, nonces, closing a market,
//! block trades, releasing deferred orders and ledger transfers.

use super::*;
use crate::engine::LedgerChange;

impl Core {
    /// incrementNonce for `maker`: every open order it signed with the old nonce is
    /// cancelled, and trades of those orders still PENDING will fail settlement.
    pub fn increment_nonce(&mut self, maker: &str, batch: &mut Batch) -> (u64, Vec<(Uuid, u32)>) {
        self.raise_nonce(maker, self.nonce_of(maker) + 1, batch)
    }

    /// The exchange's nonce for `maker` is `nonce` (read on chain): when it is above the
    /// one orders are placed with, it becomes that one and every open order of the maker
    /// (all signed with the old) is cancelled — its version 1 orders: version 2's sign no
    /// nonce. Replies the nonce and the cancelled orders.
    pub fn raise_nonce(&mut self, maker: &str, nonce: u64, batch: &mut Batch) -> (u64, Vec<(Uuid, u32)>) {
        if nonce <= self.nonce_of(maker) {
            return (self.nonce_of(maker), Vec::new());
        }
        let state = NonceState { nonce, since_trade: self.next_trade_seq };
        self.nonces.insert(maker.to_string(), state);
        self.nonce_memo.invalidate();
        self.nonces_since = self.nonces_since.max(state.since_trade);
        batch.put_nonce(maker, &state);
        let ids = self.open_where(|o| *o.maker == *maker && o.version == 1);
        for (id, _) in &ids {
            self.close(id, batch);
        }
        self.flush_ledger(batch);
        (state.nonce, ids)
    }

    /// The maker paused itself on the version 2 exchanges (`pauseUser`): its open version 2
    /// orders can no longer be counted on to settle, and are cancelled.
    pub fn cancel_maker(&mut self, maker: &str, batch: &mut Batch) -> Vec<(Uuid, u32)> {
        let ids = self.open_where(|o| *o.maker == *maker && o.version == 2);
        for (id, _) in &ids {
            self.close(id, batch);
        }
        self.flush_ledger(batch);
        ids
    }

    /// Stops trading on a market (it resolved): closed, not accepting orders, and every
    /// open order in it cancelled, whoever owns it. Returns the cancelled (order, market).
    pub fn close_market(&mut self, idx: u32, batch: &mut Batch) -> Vec<(Uuid, u32)> {
        let m = &mut self.markets[idx as usize].market;
        if !m.closed || m.accepting_orders {
            m.closed = true;
            m.accepting_orders = false;
            batch.put_market(m);
        }
        let ids = self.open_where(|o| o.token.market_idx == idx);
        for (id, _) in &ids {
            self.close(id, batch);
        }
        self.flush_ledger(batch);
        ids
    }

    /// A negotiated (RFQ) trade: the requester takes `side` of `size` tokens at `price` from
    /// the quoter, off the book. Both parties' payments are held from their free balances
    /// and the trade joins the settlement queue as PENDING, exactly like a book match, so
    /// the settlement worker confirms or fails it the same way. No fee; the book's last
    /// trade price does not move (a block trade's price is not a book price).
    pub fn block_trade(&mut self, f: &BlockTrade, now: u64, batch: &mut Batch) -> Result<Arc<TradeRecord>, Reject> {
        let (midx, outcome) = self.market_of_token(&f.token_id).ok_or(Reject::UnknownMarket)?;
        let m = &self.markets[midx as usize].market;
        if m.closed || !m.accepting_orders {
            return Err(Reject::MarketClosed);
        }
        let token = self.markets[midx as usize].trade_tokens[outcome as usize].clone();
        let maker_side = f.side.opposite();
        let trade = TradeRecord {
            id: Uuid::from_u64_pair(self.id_prefix, self.next_trade_seq),
            seq: self.next_trade_seq,
            taker_order_id: f.request_id,
            token: token.clone(),
            side: f.side,
            size: f.size,
            price: f.price,
            fee_rate_bps: 0,
            status: TradeStatus::Pending,
            match_time: now,
            last_update: now,
            bucket_index: 0,
            owner: f.taker.0,
            maker_address: f.taker.1.clone(),
            maker_orders: vec![MakerFill {
                order_id: f.quote_id,
                owner: f.maker.0,
                maker_address: f.maker.1.clone(),
                matched_amount: f.size,
                price: f.price,
                token,
                side: maker_side,
                fee_rate_bps: 0,
                fee: Amount::ZERO,
            }],
            transaction_hash: String::new(),
            taker_fee: Amount::ZERO,
            error_msg: None,
            match_type: MatchType::Complementary,
            version: f.version,
        };
        let legs = trade.legs();
        let accounts = legs.each_ref().map(|l| self.leg_accounts(l));
        if accounts[0].pay == accounts[1].pay {
            return Err(Reject::NotOwner);
        }
        if legs.iter().zip(&accounts).any(|(l, a)| self.ledger.get(a.pay).available() < l.pays().1) {
            return Err(Reject::NotEnoughBalance);
        }
        for (l, a) in legs.iter().zip(&accounts) {
            self.ledger.reserve_at(a.pay, l.pays().1);
        }
        self.next_trade_seq += 1;
        let trade = Arc::new(trade);
        let pending = Pending::new(trade.clone(), accounts);
        expect_receipts(&mut self.ledger, &pending.flows);
        self.pending.push_back(pending);
        batch.put_trade(trade.clone());
        self.flush_ledger(batch);
        Ok(trade)
    }

    /// Cancels every open order whose GTD expiration has passed; returns (order, market).
    pub fn expire(&mut self, now: u64, batch: &mut Batch) -> Vec<(Uuid, u32)> {
        let mut out = Vec::new();
        while let Some(&Reverse((exp, id))) = self.expiries.peek() {
            if exp > now {
                break;
            }
            self.expiries.pop();
            if let Some(m) = self.orders.get(&id).filter(|o| o.expiration == exp).map(|o| o.token.market_idx) {
                self.close(&id, batch);
                out.push((id, m));
            }
        }
        self.flush_ledger(batch);
        out
    }

    /// Cancels one open order, whoever owns it (the caller has decided it may).
    pub(super) fn close(&mut self, id: &Uuid, batch: &mut Batch) {
        if let Some(open) = self.orders.remove(id) {
            self.close_open(open, batch);
        }
    }

    /// Cancels an open order already taken out of the open-order map.
    pub(super) fn close_open(&mut self, Open { rec: mut arc, slot, market, pay, .. }: Open, batch: &mut Batch) {
        // The book first: its node's load need not wait for the record's (make_mut's
        // atomic orders every load after it).
        if slot != NIL {
            self.markets[market as usize].book.remove(slot);
        }
        let o = Arc::make_mut(&mut arc);
        o.status = OrderStatus::Canceled;
        release_rest(&mut self.ledger, pay, o);
        batch.put_order(arc, Stored::Open);
    }

    /// Cancels open orders of `owner` (LIVE or DEFERRED).
    pub fn cancel(&mut self, owner: Uuid, ids: &[Uuid], batch: &mut Batch) -> Canceled {
        let mut out = Canceled::default();
        for id in ids {
            // One probe of the map finds, checks and removes the order.
            match self.orders.find_entry(id) {
                Some(e) if e.get().owner == owner => {
                    let open = e.remove();
                    self.close_open(open, batch);
                    out.canceled.push(*id);
                }
                _ => out.not_canceled.push((id.to_string(), "order not found or already canceled".into())),
            }
        }
        self.flush_ledger(batch);
        out
    }

    /// Cancels the open orders among `ids`, whoever placed them: their makers cancelled
    /// them on the exchange itself. Returns the ones that were open, with their markets.
    pub fn cancel_signed(&mut self, ids: &[Uuid], batch: &mut Batch) -> Vec<(Uuid, u32)> {
        let mut out = Vec::new();
        for id in ids {
            if let Some(open) = self.orders.remove(id) {
                out.push((*id, open.market));
                self.close_open(open, batch);
            }
        }
        self.flush_ledger(batch);
        out
    }

    /// Cancels open orders of `maker` at its own request to the exchange (`cancelOrder`):
    /// all of them, or none (NotOwner) when one is not an open order of that maker — as
    /// the exchange reverts the whole call.
    pub fn cancel_own(&mut self, maker: &str, ids: &[Uuid], batch: &mut Batch) -> Result<Vec<(Uuid, u32)>, Reject> {
        if !ids.iter().all(|id| self.orders.get(id).is_some_and(|o| *o.rec.maker == *maker)) {
            return Err(Reject::NotOwner);
        }
        Ok(self.cancel_signed(ids, batch))
    }

    /// The makers of open orders, each once, with the nonce their orders are signed with.
    pub fn open_makers(&self) -> Vec<(String, u64)> {
        let mut makers: Vec<Arc<str>> = self.orders.values().map(|o| o.rec.maker.clone()).collect();
        makers.sort_unstable();
        makers.dedup();
        makers.into_iter().map(|m| (m.to_string(), self.nonce_of(&m))).collect()
    }

    /// IDs of the open orders of `owner`, optionally only in one market or token.
    pub fn open_ids(&self, owner: Uuid, market: Option<&str>, asset: Option<&str>) -> Vec<Uuid> {
        self.open_where(|o| {
            o.owner == owner
                && market.is_none_or(|m| *o.token.condition_id == *m)
                && asset.is_none_or(|a| *o.token.token_id == *a)
        })
        .into_iter()
        .map(|x| x.0)
        .collect()
    }

    /// The open orders of another version than `version`: (owner, id). Unordered: they
    /// are all cancelled at once.
    pub fn open_of_other_version(&self, version: u8) -> Vec<(Uuid, Uuid)> {
        self.orders.values().filter(|o| o.version != version).map(|o| (o.owner, o.id)).collect()
    }

    /// Open orders matching `f`, in acceptance order: (id, market).
    pub(super) fn open_where(&self, f: impl Fn(&OrderRecord) -> bool) -> Vec<(Uuid, u32)> {
        let mut v: Vec<(u64, Uuid, u32)> =
            self.orders.values().filter(|o| f(o)).map(|o| (o.seq, o.id, o.token.market_idx)).collect();
        v.sort_unstable();
        v.into_iter().map(|x| (x.1, x.2)).collect()
    }

    /// Moves DEFERRED orders into matching, in acceptance order.
    pub fn release_deferred(&mut self, ids: Option<&[Uuid]>, now: u64, batch: &mut Batch) -> Vec<Placed> {
        let mut deferred: Vec<(u64, Uuid)> = self
            .orders
            .values()
            .filter(|o| o.status == OrderStatus::Deferred)
            .filter(|o| ids.is_none_or(|ids| ids.contains(&o.id)))
            .map(|o| (o.seq, o.id))
            .collect();
        deferred.sort();
        let mut out = Vec::new();
        for (_, id) in deferred {
            let open = self.orders.remove(&id).expect("present");
            let accounts = open.accounts(&self.markets);
            let Open { rec: mut order, .. } = open;
            let o = Arc::make_mut(&mut order);
            o.status = OrderStatus::Live;
            let matched = self.match_taker(o, accounts, now, batch);
            let slot = self.rest_or_close(o, accounts, true);
            out.push(self.finish_taker(order, accounts, slot, matched, true, batch));
        }
        out
    }

    /// Credits the ledger (the testnet faucet).
    pub fn credit(&mut self, address: &str, asset: &str, amount: Amount, batch: &mut Batch) {
        self.ledger.credit(address, asset, amount);
        self.flush_ledger(batch);
    }

    /// Credits and debits accounts of `address`, all or none. A debit takes only what the
    /// account holds settled and not reserved (receipts of unsettled trades and what open
    /// orders hold stay put); debits of one asset add up.
    pub fn transfer(
        &mut self,
        address: &str,
        changes: &[(String, LedgerChange)],
        batch: &mut Batch,
    ) -> Result<(), Reject> {
        // In order, as a transaction's calls run: a debit may spend what an earlier change
        // of the same asset credited, never more than is free at that point.
        for (i, (asset, change)) in changes.iter().enumerate() {
            let LedgerChange::Debit(_) = change else { continue };
            let (mut credited, mut debited) = (Amount::ZERO, Amount::ZERO);
            for (_, c) in changes[..=i].iter().filter(|(a, _)| a == asset) {
                match *c {
                    LedgerChange::Credit(n) => credited = credited.saturating_add(n),
                    LedgerChange::Debit(n) => debited = debited.saturating_add(n),
                    LedgerChange::Set(_) => {}
                }
            }
            let acc = self.ledger.account(address, asset);
            if acc.balance.saturating_sub(acc.reserved).saturating_add(credited) < debited {
                return Err(Reject::NotEnoughBalance);
            }
        }
        for (asset, change) in changes {
            let a = self.ledger.acct(address, asset);
            match *change {
                LedgerChange::Credit(n) => self.ledger.credit_at(a, n),
                LedgerChange::Debit(n) => self.ledger.debit_at(a, n),
                LedgerChange::Set(n) => self.ledger.set_at(a, n),
            }
        }
        self.flush_ledger(batch);
        Ok(())
    }
}
