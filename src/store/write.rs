//! Writing: the batches of a group encoded into one WriteBatch, and committed.

use super::*;

impl Store {
    /// Applies one or more batches as a single atomic WriteBatch; `sync` waits for the WAL.
    pub fn write<'a>(
        &self,
        batches: impl IntoIterator<Item = &'a Batch> + Clone,
        sync: bool,
    ) -> Result<(), StoreError> {
        self.commit(self.prepare(batches), sync)
    }

    /// Encodes batches into one WriteBatch, to be written by [`Store::commit`]. Prepared
    /// batches must be committed in the order they were prepared (the persister prepares
    /// the next group while the previous one is being written): a later one may build on
    /// an earlier one's keys, and each advances the next-sequence values in `meta` only
    /// past what an earlier one already wrote.
    pub fn prepare<'a>(&self, batches: impl IntoIterator<Item = &'a Batch> + Clone) -> Prepared {
        let mut entries = Entries::default();
        let (mut order_seq, mut trade_seq) = (0u64, 0u64);
        // Numbered in the order given: prepared by one thread, in commit order.
        let events_through = match self.outbox.get() {
            Some(outbox) => outbox.number(batches.clone().into_iter().flat_map(|b| &b.ops), &mut entries),
            None => 0,
        };
        for b in batches {
            for op in &b.ops {
                match op {
                    Op::Order(o, _) => order_seq = order_seq.max(o.seq + 1),
                    Op::Trade(t) => trade_seq = trade_seq.max(t.seq + 1),
                    _ => {}
                }
                if let Op::Secret(c, k, v) = op {
                    entries.put(c, k.as_slice(), self.seal_value(c, k, v).as_slice());
                    continue;
                }
                Self::apply(&mut entries, op);
            }
        }
        // Before the write, so a reader finds the order's seq at the latest when its record
        // is readable (see `open_index`).
        self.open.insert_all(&entries.opened);
        // Sequences only grow; batches are prepared by one thread, in commit order.
        if self.next_order_seq.fetch_max(order_seq, Ordering::Relaxed) < order_seq {
            entries.put(cf::META, meta::NEXT_ORDER_SEQ, order_seq.to_be_bytes());
        }
        if self.next_trade_seq.fetch_max(trade_seq, Ordering::Relaxed) < trade_seq {
            entries.put(cf::META, meta::NEXT_TRADE_SEQ, trade_seq.to_be_bytes());
        }
        // Each trade whose wallet analytics change is logged under the next log sequence:
        // prepared in commit order, so the log is in commit order too.
        let analytics: Vec<aggregator::Event> = std::mem::take(&mut entries.analytics)
            .into_iter()
            .map(|(trade, sign)| {
                let seq = self.next_log.fetch_add(1, Ordering::Relaxed);
                aggregator::Event { seq, trade, sign }
            })
            .collect();
        for e in &analytics {
            entries.put(cf::ANALYTICS_LOG, e.seq.to_be_bytes(), e.log_value());
        }
        // In key order within each family, so each memtable insert starts from where the
        // previous one ended instead of searching the skip list from the top. The sort is
        // stable: writes to the same key keep their order (a put, then merges onto it).
        // Order across keys means nothing inside one batch: it becomes visible at once.
        let mut wb = WriteBatch::default();
        for (cf, mut family) in entries.families {
            family.sort_by(|a, b| a.key.cmp(&b.key));
            let family = coalesce(cf, family);
            let h = self.handle(cf);
            for e in &family {
                match e.kind {
                    WriteKind::Put => wb.put_cf(h, &e.key, &e.value),
                    WriteKind::Delete => wb.delete_cf(h, &e.key),
                    WriteKind::Merge => wb.merge_cf(h, &e.key, &e.value),
                }
            }
        }
        Prepared { batch: wb, closed: entries.closed, analytics, events_through }
    }

    /// Writes a prepared batch atomically; `sync` returns only once the WAL is on disk.
    pub fn commit(&self, prepared: Prepared, sync: bool) -> Result<(), StoreError> {
        self.write_batch(prepared.batch, sync)?;
        // After the write: a reader that still finds the seq falls back to `orders`.
        self.open.remove_all(&prepared.closed);
        self.analytics.hand_over(prepared.analytics);
        if let Some(outbox) = self.outbox.get() {
            outbox.synced(prepared.events_through);
        }
        Ok(())
    }

    /// Writes a RocksDB batch as it is (`sync`: once the WAL is on disk), and tells the log
    /// roll what it wrote.
    pub(super) fn write_batch(&self, wb: WriteBatch, sync: bool) -> Result<(), StoreError> {
        let mut wo = WriteOptions::default();
        wo.set_sync(sync);
        let bytes = wb.size_in_bytes();
        self.db.write_opt(wb, &wo)?;
        self.logs.wrote(&self.db, bytes, sync);
        Ok(())
    }

    /// Expands one op into the writes it stands for (encoding records here, off the engine).
    pub(super) fn apply(out: &mut Entries, op: &Op) {
        match op {
            Op::Put(c, k, v) => out.put(c, k.as_slice(), v.as_slice()),
            // Sealed by `prepare` when the store has a key.
            Op::Secret(c, k, v) => out.put(c, k.as_slice(), v.as_slice()),
            Op::Delete(c, k) => out.delete(c, k.as_slice()),
            Op::Merge(c, k, v) => out.merge(c, k.as_slice(), v.as_slice()),
            Op::Order(o, stored) => {
                // An open order's record lives under its priority; once closed it moves
                // to `orders` for good (an order never reopens).
                let open = matches!(o.status, OrderStatus::Live | OrderStatus::Deferred) && !o.remaining().is_zero();
                let seq = o.seq.to_be_bytes();
                // While it stays open, only what changes is rewritten (its signed fields
                // are most of its bytes, and the WAL's bytes bound durable throughput).
                match (open, stored) {
                    (true, Stored::New) => {
                        out.put(cf::LIVE_ORDERS, seq, encode(o.as_ref()));
                        out.opened.push((o.id, o.seq, o.owner));
                    }
                    (true, Stored::Open) => out.put(cf::OPEN_STATE, seq, encode(&OpenState::of(o))),
                    (false, _) => {
                        out.put(cf::ORDERS, o.id.as_bytes(), encode(o.as_ref()));
                        if *stored == Stored::Open {
                            out.delete(cf::LIVE_ORDERS, seq);
                            out.delete(cf::OPEN_STATE, seq);
                            out.closed.push((o.id, o.seq, o.owner));
                        }
                    }
                }
            }
            Op::Trade(t) => {
                out.put(cf::TRADES, t.id.as_bytes(), encode(t.as_ref()));
                // A trade is first written PENDING, with its index entries and its place in
                // the settlement queue; a later status rewrites the record and, once settled,
                // leaves the queue (the index entries do not change).
                if t.status == TradeStatus::Pending {
                    for o in t.owners() {
                        out.put(cf::TRADES_BY_OWNER, keys::owner_seq(&o, t.seq), t.id.as_bytes());
                    }
                    let tick = index::Tick {
                        id: t.id,
                        asset_id: t.token.token_id.to_string(),
                        price: t.price,
                        size: t.size,
                        side: t.side,
                    };
                    let key = index::market_time_seq(t.token.market_idx, t.match_time, t.seq);
                    out.put(cf::TRADES_BY_MARKET, key, encode(&tick));
                    out.put(cf::PENDING_TRADES, t.seq.to_be_bytes(), t.id.as_bytes());
                } else if t.status != TradeStatus::Mined {
                    // MINED (chain mode) is still to settle: it stays in the queue.
                    out.delete(cf::PENDING_TRADES, t.seq.to_be_bytes());
                }
                // Once settled, a notification for every API key that took part (built and
                // encoded here rather than on the matching thread: a fifth of a crossing
                // order's cost there).
                if let Some(kind) = t.notification_kind() {
                    for owner in t.owners() {
                        let n = NotificationRecord::of(t, owner, kind);
                        out.put(cf::NOTIFICATIONS, keys::notification(&owner, t.seq, kind as u8), encode(&n));
                    }
                }
                // A market's stats are a few hot keys, summed within the group; the wallets'
                // counters and trade entries are written behind (see `aggregator`).
                if let Some(sign) = index::counter_sign(t.status) {
                    let (c, k, v) = index::market_stats(t, sign);
                    out.merge(c, k, v);
                    out.analytics.push((t.clone(), sign));
                }
            }
            Op::Balance(addr, asset, bal) => {
                out.put(cf::LEDGER, index::position(addr, asset), bal.units().to_be_bytes());
            }
            Op::Signature(seq, signature) => out.put(cf::ORDER_SIGNATURES, seq.to_be_bytes(), signature.as_bytes()),
            Op::LastTrade(market_idx, last) => out.put(cf::META, meta::last_trade(*market_idx), encode(last)),
            Op::Market(m) => out.put(cf::MARKETS, m.condition_id.as_bytes(), encode(m.as_ref())),
        }
    }
}
