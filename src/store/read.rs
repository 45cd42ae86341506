//! Reading: point reads, prefix scans and walks, and the startup scan of the open orders.

use super::*;
use crate::domain::{Amount, LastTrade, NonceState};

/// Raw (key, value) pairs of a scan.
pub type KeyValues = Vec<(Vec<u8>, Vec<u8>)>;

/// What a startup scan thread sends: its next decoded open orders, or why it stopped.
type ScanChunk = Result<Vec<Arc<OrderRecord>>, StoreError>;

impl Store {
    /// Walks the pairs of a family whose key starts with `prefix`, from `from` (inclusive;
    /// forward) or down from the end of the prefix (`reverse`), until `each` says stop.
    pub fn walk(
        &self,
        cf_name: &'static str,
        prefix: &[u8],
        from: Option<&[u8]>,
        reverse: bool,
        mut each: impl FnMut(&[u8], &[u8]) -> std::ops::ControlFlow<()>,
    ) -> Result<(), StoreError> {
        self.settle(cf_name);
        let mut it = self.db.raw_iterator_cf(self.handle(cf_name));
        match (reverse, from) {
            (false, Some(f)) => it.seek(f.max(prefix)),
            (false, None) => it.seek(prefix),
            (true, Some(f)) => it.seek_for_prev(f),
            (true, None) => match prefix_end(prefix) {
                Some(end) => {
                    it.seek(&end);
                    if it.valid() {
                        it.prev();
                    } else {
                        it.seek_to_last();
                    }
                }
                None => it.seek_to_last(),
            },
        }
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            if !k.starts_with(prefix) || each(k, v).is_break() {
                break;
            }
            if reverse {
                it.prev();
            } else {
                it.next();
            }
        }
        Ok(it.status()?)
    }

    /// [`Store::walk`] with a callback that may fail: its first error ends the walk and is
    /// returned.
    pub fn try_walk<E: From<StoreError>>(
        &self,
        cf_name: &'static str,
        prefix: &[u8],
        from: Option<&[u8]>,
        reverse: bool,
        mut each: impl FnMut(&[u8], &[u8]) -> Result<std::ops::ControlFlow<()>, E>,
    ) -> Result<(), E> {
        let mut failure = None;
        self.walk(cf_name, prefix, from, reverse, |k, v| {
            each(k, v).unwrap_or_else(|e| {
                failure = Some(e);
                std::ops::ControlFlow::Break(())
            })
        })?;
        failure.map_or(Ok(()), Err)
    }

    /// A decoded value.
    pub fn decode_value<T: DeserializeOwned>(cf_name: &'static str, v: &[u8]) -> Result<T, StoreError> {
        decode(cf_name, v)
    }

    /// Counters under a key (empty when none).
    pub fn counters(&self, cf_name: &'static str, key: &[u8]) -> Result<Vec<i64>, StoreError> {
        Ok(self.get_raw(cf_name, key)?.map(|v| index::decode_counters(&v)).unwrap_or_default())
    }

    pub fn get_raw(&self, cf_name: &'static str, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        self.settle(cf_name);
        Ok(self.db.get_cf(self.handle(cf_name), key)?)
    }

    pub fn get<T: DeserializeOwned>(&self, cf_name: &'static str, key: &[u8]) -> Result<Option<T>, StoreError> {
        match self.get_raw(cf_name, key)? {
            Some(v) => Ok(Some(decode(cf_name, &v)?)),
            None => Ok(None),
        }
    }

    pub fn put<T: Serialize>(&self, cf_name: &'static str, key: &[u8], v: &T) -> Result<(), StoreError> {
        let mut b = Batch::default();
        b.put(cf_name, key.to_vec(), encode(v));
        self.write([&b], true)
    }

    /// All (key, value) pairs of a family whose key starts with `prefix`, from `start` on.
    pub fn scan_prefix(
        &self,
        cf_name: &'static str,
        prefix: &[u8],
        start: &[u8],
        limit: usize,
    ) -> Result<KeyValues, StoreError> {
        self.settle(cf_name);
        let mut from = prefix.to_vec();
        if start > prefix {
            from = start.to_vec();
        }
        let mut out = Vec::new();
        for item in self.db.iterator_cf(self.handle(cf_name), IteratorMode::From(&from, Direction::Forward)) {
            let (k, v) = item?;
            if !k.starts_with(prefix) || out.len() >= limit {
                break;
            }
            out.push((k.to_vec(), v.to_vec()));
        }
        Ok(out)
    }

    /// Every value of a family, decoded, in key order.
    pub fn all<T: DeserializeOwned>(&self, cf_name: &'static str) -> Result<Vec<(Vec<u8>, T)>, StoreError> {
        self.settle(cf_name);
        let mut out = Vec::new();
        for item in self.db.iterator_cf(self.handle(cf_name), IteratorMode::Start) {
            let (k, v) = item?;
            out.push((k.to_vec(), decode(cf_name, &v)?));
        }
        Ok(out)
    }

    /// Every raw pair of a family, in key order.
    pub fn all_raw(&self, cf_name: &'static str) -> Result<KeyValues, StoreError> {
        self.settle(cf_name);
        let mut out = Vec::new();
        for item in self.db.iterator_cf(self.handle(cf_name), IteratorMode::Start) {
            let (k, v) = item?;
            out.push((k.to_vec(), v.to_vec()));
        }
        Ok(out)
    }

    /// An order by id, open (via its priority) or closed. The open orders are those written
    /// through this store or found by [`Store::for_each_open_order`], which every start
    /// runs (`engine::recover`) before anything reads an order.
    pub fn get_order(&self, id: &Uuid) -> Result<Option<OrderRecord>, StoreError> {
        if let Some(seq) = self.open.get(id) {
            // The index may answer with another open order sharing the id's prefix.
            if let Some(o) = self.open_at(seq)?.filter(|o| o.id == *id) {
                return Ok(Some(o));
            }
        }
        self.get(cf::ORDERS, id.as_bytes())
    }

    /// The open order under priority `seq`, if it is still open.
    pub(super) fn open_at(&self, seq: u64) -> Result<Option<OrderRecord>, StoreError> {
        let seq = seq.to_be_bytes();
        // The state first: the record as it opened does not change until the order closes,
        // when both go in one write. Read the other way round, a close between the two
        // reads gave the record as it opened without its fills — a state older than one
        // the caller may have read before.
        let state = self.get_raw(cf::OPEN_STATE, &seq)?;
        let Some(v) = self.get_raw(cf::LIVE_ORDERS, &seq)? else { return Ok(None) };
        let mut o: OrderRecord = decode(cf::LIVE_ORDERS, &v)?;
        if let Some(v) = state {
            decode::<OpenState>(cf::OPEN_STATE, &v)?.lay_over(&mut o);
        }
        Ok(Some(o))
    }

    /// The open orders of `owner` (an API key), in priority order. An order that closes
    /// while they are read is left out.
    pub fn open_orders_of(&self, owner: &Uuid) -> Result<Vec<OrderRecord>, StoreError> {
        let mut out = Vec::new();
        for seq in self.open.of_owner(owner) {
            out.extend(self.open_at(seq)?.filter(|o| o.owner == *owner));
        }
        Ok(out)
    }

    /// The signature an order was accepted with (kept in `order_signatures`).
    pub fn order_signature(&self, id: &Uuid) -> Result<Option<String>, StoreError> {
        let Some(o) = self.get_order(id)? else { return Ok(None) };
        let Some(v) = self.get_raw(cf::ORDER_SIGNATURES, &o.seq.to_be_bytes())? else { return Ok(None) };
        let corrupt = || StoreError::Corrupt { cf: cf::ORDER_SIGNATURES, msg: "not a stored string".into() };
        Ok(Some(crate::domain::packed::unpack(&v).ok_or_else(corrupt)?.into_owned()))
    }

    /// The salt an order was signed with, whole: its record's, unless that is `u64::MAX`,
    /// which stands for a salt too wide for it, kept in `order_salts`.
    pub fn order_salt(&self, o: &OrderRecord) -> Result<alloy_primitives::U256, StoreError> {
        if o.salt != u64::MAX {
            return Ok(alloy_primitives::U256::from(o.salt));
        }
        match self.get_raw(cf::ORDER_SALTS, o.id.as_bytes())? {
            Some(v) if v.len() == 32 => Ok(alloy_primitives::U256::from_be_slice(&v)),
            Some(_) => Err(StoreError::Corrupt { cf: cf::ORDER_SALTS, msg: "not 32 bytes".into() }),
            None => Ok(alloy_primitives::U256::from(u64::MAX)),
        }
    }

    /// What version 2 order `id` signed beside its record's fields: (timestamp, metadata,
    /// builder code); None for an order of version 1.
    pub fn order_v2(
        &self,
        id: &Uuid,
    ) -> Result<Option<(alloy_primitives::U256, alloy_primitives::B256, alloy_primitives::B256)>, StoreError> {
        match self.get_raw(cf::ORDER_V2, id.as_bytes())? {
            Some(v) if v.len() == 96 => Ok(Some((
                alloy_primitives::U256::from_be_slice(&v[..32]),
                alloy_primitives::B256::from_slice(&v[32..64]),
                alloy_primitives::B256::from_slice(&v[64..]),
            ))),
            Some(_) => Err(StoreError::Corrupt { cf: cf::ORDER_V2, msg: "not 96 bytes".into() }),
            None => Ok(None),
        }
    }

    pub fn get_trade(&self, id: &Uuid) -> Result<Option<TradeRecord>, StoreError> {
        self.get(cf::TRADES, id.as_bytes())
    }

    pub fn get_api_key(&self, key: &Uuid) -> Result<Option<ApiKeyRecord>, StoreError> {
        match self.get_raw(cf::API_KEYS, key.as_bytes())? {
            Some(v) => Ok(Some(Store::decode_value(cf::API_KEYS, &self.unseal(cf::API_KEYS, key.as_bytes(), &v)?)?)),
            None => Ok(None),
        }
    }

    pub fn get_invite(&self, code: &str) -> Result<Option<InviteRecord>, StoreError> {
        self.get(cf::INVITES, code.as_bytes())
    }

    pub fn meta_u64(&self, key: &[u8]) -> Result<Option<u64>, StoreError> {
        Ok(self.get_raw(cf::META, key)?.and_then(|v| v.try_into().ok().map(u64::from_be_bytes)))
    }

    /// The next order and trade sequences to assign, as written with the last command.
    pub fn next_sequences(&self) -> Result<(u64, u64), StoreError> {
        let next = |key| self.meta_u64(key).map(|v| v.unwrap_or(1));
        Ok((next(meta::NEXT_ORDER_SEQ)?, next(meta::NEXT_TRADE_SEQ)?))
    }

    /// A market's last trade (YES price, the taker's side in YES terms), if it traded.
    pub fn last_trade(&self, market_idx: u32) -> Result<LastTrade, StoreError> {
        let last: Option<LastTrade> = self.get(cf::META, &meta::last_trade(market_idx))?;
        Ok(last.flatten())
    }

    /// Every maker's exchange nonce that `incrementNonce` moved.
    pub fn nonces(&self) -> Result<Vec<(String, NonceState)>, StoreError> {
        let all = self.all::<NonceState>(cf::NONCES)?;
        Ok(all.into_iter().map(|(k, n)| (String::from_utf8_lossy(&k).into_owned(), n)).collect())
    }

    pub fn markets(&self) -> Result<Vec<Market>, StoreError> {
        Ok(self.all::<Market>(cf::MARKETS)?.into_iter().map(|(_, m)| m).collect())
    }

    /// Hands every LIVE and DEFERRED order to `each`, in priority order (acceptance
    /// sequence): an ordered scan of `live_orders` (with `open_state`, keyed alike, walked
    /// in step), split at the middle sequence into two halves decoded on two threads while
    /// `each` runs on this one. `each` takes the first half's orders, then the second's
    /// (which wait decoded meanwhile), so the order is the scan's, and startup costs about
    /// the largest of the three, not their sum. The decoding threads also allocate each
    /// record's `Arc` (and first touch its memory), which would otherwise fall to `each`'s
    /// thread, the slowest of the three.
    ///
    /// Each order found is entered in the open-order index (`open_index`), which
    /// [`Store::get_order`] reads.
    pub fn for_each_open_order(&self, mut each: impl FnMut(Arc<OrderRecord>)) -> Result<(), StoreError> {
        let seq_at = |it: &rocksdb::DBRawIterator<'_>| {
            it.key().and_then(|k| <[u8; 8]>::try_from(k).ok()).map(u64::from_be_bytes)
        };
        let mut it = self.db.raw_iterator_cf(self.handle(cf::LIVE_ORDERS));
        it.seek_to_first();
        let first = seq_at(&it);
        it.seek_to_last();
        let last = seq_at(&it);
        drop(it);
        // Sequences are dense enough that their middle halves the work; any split is
        // correct, a lopsided one only slower.
        let mid = match (first, last) {
            (Some(a), Some(b)) if b > a => Some((a + (b - a) / 2 + 1).to_be_bytes()),
            _ => None,
        };
        let (tx_a, rx_a) = crossbeam_channel::bounded::<ScanChunk>(8);
        let (tx_b, rx_b) = crossbeam_channel::unbounded::<ScanChunk>();
        std::thread::scope(|sc| {
            let a = sc.spawn(move || self.scan_open_orders(None, mid, tx_a, 0));
            let b = mid.map(|mid| sc.spawn(move || self.scan_open_orders(Some(mid), None, tx_b, 8)));
            let mut result = Ok(());
            'halves: for rx in [rx_a, rx_b] {
                for chunk in rx {
                    match chunk {
                        Ok(chunk) => chunk.into_iter().for_each(&mut each),
                        Err(e) => {
                            result = Err(e);
                            break 'halves;
                        }
                    }
                }
            }
            // On an error the receivers are gone, so the scans stop at their next send.
            a.join().expect("the open-order scan does not panic");
            if let Some(b) = b {
                b.join().expect("the open-order scan does not panic");
            }
            result
        })
    }

    /// The open orders whose sequence is in `[from, to)` (unbounded where None), decoded in
    /// chunks sent to `tx` in scan order and entered in the open-order index after each
    /// send (from shard `first_shard` on). Bypasses the block cache: a one-time scan of every open order would only evict what readers use.
    pub(super) fn scan_open_orders(
        &self,
        from: Option<[u8; 8]>,
        to: Option<[u8; 8]>,
        tx: crossbeam_channel::Sender<ScanChunk>,
        first_shard: usize,
    ) {
        const CHUNK: usize = 4096;
        let opts = || {
            let mut o = rocksdb::ReadOptions::default();
            o.fill_cache(false);
            if let Some(to) = to {
                o.set_iterate_upper_bound(to.to_vec());
            }
            o
        };
        let seek = |it: &mut rocksdb::DBRawIterator<'_>| match from {
            Some(from) => it.seek(from),
            None => it.seek_to_first(),
        };
        let mut interner = Interner::default();
        let mut chunk = Vec::with_capacity(CHUNK);
        let mut found = open_index::Found::default();
        let mut it = self.db.raw_iterator_cf_opt(self.handle(cf::LIVE_ORDERS), opts());
        seek(&mut it);
        // `open_state` is keyed like `live_orders`: walked in step with it.
        let mut state = self.db.raw_iterator_cf_opt(self.handle(cf::OPEN_STATE), opts());
        seek(&mut state);
        while let (Some(seq), Some(v)) = (it.key(), it.value()) {
            while state.key().is_some_and(|k| k < seq) {
                state.next();
            }
            let changed = state.key().filter(|k| *k == seq).and(state.value());
            let r = decode_order(v, &mut interner).and_then(|mut o| {
                if let Some(c) = changed {
                    decode::<OpenState>(cf::OPEN_STATE, c)?.lay_over(&mut o);
                }
                Ok(o)
            });
            match r {
                Ok(o) => {
                    found.push(o.id, o.seq, o.owner);
                    chunk.push(Arc::new(o));
                }
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            }
            if chunk.len() == CHUNK {
                if tx.send(Ok(std::mem::replace(&mut chunk, Vec::with_capacity(CHUNK)))).is_err() {
                    return;
                }
                self.open.fill(&mut found, first_shard);
            }
            it.next();
        }
        let r = it.status().map_err(StoreError::from).map(|_| chunk);
        let _ = tx.send(r);
        self.open.fill(&mut found, first_shard);
    }

    /// RocksDB's estimate of the open orders (to size maps; may be off either way).
    pub fn estimate_open_orders(&self) -> usize {
        let cf = self.handle(cf::LIVE_ORDERS);
        self.db.property_int_value_cf(cf, "rocksdb.estimate-num-keys").ok().flatten().unwrap_or(0) as usize
    }

    /// Writes every memtable to disk, so the next start reads tables instead of replaying
    /// the WAL (done when the store closes cleanly).
    pub fn flush(&self) -> Result<(), StoreError> {
        for name in cf::ALL {
            self.db.flush_cf(self.handle(name))?;
        }
        Ok(())
    }

    /// Drops what the families held before their latest writes: memtables flushed, then
    /// every table file compacted (old versions of a key do not survive a compaction).
    pub(super) fn compact_away(&self, names: &[&'static str]) -> Result<(), StoreError> {
        for name in names {
            let h = self.handle(name);
            self.db.flush_cf(h)?;
            // Every level rewritten, the last one too (by default a manual compaction
            // leaves it as it is).
            let mut o = rocksdb::CompactOptions::default();
            o.set_bottommost_level_compaction(rocksdb::BottommostLevelCompaction::Force);
            self.db.compact_range_cf_opt(h, None::<&[u8]>, None::<&[u8]>, &o);
        }
        Ok(())
    }

    /// Every PENDING trade, oldest first (the settlement queue after a restart).
    pub fn pending_trades(&self) -> Result<Vec<TradeRecord>, StoreError> {
        let mut out = Vec::new();
        for (_, id) in self.all_raw(cf::PENDING_TRADES)? {
            let id = Uuid::from_slice(&id)
                .map_err(|e| StoreError::Corrupt { cf: cf::PENDING_TRADES, msg: e.to_string() })?;
            let t = self
                .get_trade(&id)?
                .ok_or_else(|| StoreError::Corrupt { cf: cf::PENDING_TRADES, msg: format!("no trade {id}") })?;
            out.push(t);
        }
        Ok(out)
    }

    /// Ledger balances as (address, asset, balance).
    pub fn balances(&self) -> Result<Vec<(String, String, Amount)>, StoreError> {
        let mut out = Vec::new();
        for (k, v) in self.all_raw(cf::LEDGER)? {
            let (addr, asset) =
                index::split_position(&k).ok_or(StoreError::Corrupt { cf: cf::LEDGER, msg: "key".into() })?;
            let bal = v
                .try_into()
                .map(|b| Amount(u64::from_be_bytes(b)))
                .map_err(|_| StoreError::Corrupt { cf: cf::LEDGER, msg: "value".into() })?;
            out.push((addr, asset, bal));
        }
        Ok(out)
    }
}

/// The first key after every key that starts with `prefix` (None: no such key).
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

impl Store {
    /// A market's trade ticks with time in [from, to] (UNIX seconds, inclusive), oldest
    /// first: (time, tick).
    pub fn market_ticks(&self, market_idx: u32, from: u64, to: u64) -> Result<Vec<(u64, index::Tick)>, StoreError> {
        let mut out = Vec::new();
        self.walk_market_ticks(market_idx, Some((from, 0)), false, |(t, _), tick| {
            if t > to {
                return std::ops::ControlFlow::Break(());
            }
            out.push((t, tick));
            std::ops::ControlFlow::Continue(())
        })?;
        Ok(out)
    }

    /// Walks a market's trade ticks under their (time, trade seq), from `from` (inclusive;
    /// None: the first, or with `reverse` the last) onward or backward, while `each`
    /// continues.
    pub fn walk_market_ticks(
        &self,
        market_idx: u32,
        from: Option<(u64, u64)>,
        reverse: bool,
        mut each: impl FnMut((u64, u64), index::Tick) -> std::ops::ControlFlow<()>,
    ) -> Result<(), StoreError> {
        let prefix = market_idx.to_be_bytes();
        let start = from.map(|(t, seq)| index::market_time_seq(market_idx, t, seq));
        let number = |b: Option<&[u8]>| b.map_or(u64::MAX, |b| u64::from_be_bytes(b.try_into().expect("8 bytes")));
        self.try_walk(cf::TRADES_BY_MARKET, &prefix, start.as_deref(), reverse, |k, v| {
            let key = (number(k.get(4..12)), number(k.get(12..20)));
            Ok::<_, StoreError>(each(key, Store::decode_value::<index::Tick>(cf::TRADES_BY_MARKET, v)?))
        })
    }

    /// The time of a market's first trade.
    pub fn first_market_trade_time(&self, market_idx: u32) -> Result<Option<u64>, StoreError> {
        let mut first = None;
        self.walk(cf::TRADES_BY_MARKET, &market_idx.to_be_bytes(), None, false, |k, _| {
            first = k.get(4..12).map(|t| u64::from_be_bytes(t.try_into().expect("8 bytes")));
            std::ops::ControlFlow::Break(())
        })?;
        Ok(first)
    }
}
