//! The store's format and the steps between formats. `meta`'s `format_version` says which
//! format a data directory holds; a store with none is new (or from before the key was
//! written, the same format) and gets [`CURRENT`]. A change to how anything is stored —
//! a value's fields, a key's layout, a family added with existing data to fill — adds a
//! step here that rewrites an older store, and raises [`CURRENT`] with it. A data
//! directory of a newer format is refused, never read.

use super::*;
use crate::domain::chain::ChainTx;

/// One step: rewrites a store of format `n` (its index in [`STEPS`], plus one) into `n + 1`.
type Step = fn(&Store) -> Result<(), StoreError>;

/// The steps from format 1 on.
const STEPS: &[Step] = &[
    versions_recorded,
    builder_codes_indexed,
    chain_txs_name_their_relay,
    chain_txs_name_their_account,
    chain_txs_name_their_report_and_replacements,
];

/// The format this build writes and reads.
pub(super) const CURRENT: u64 = STEPS.len() as u64 + 1;

/// Brings the store to [`CURRENT`], step by step, each step's version recorded with it so
/// an interrupted run resumes where it stopped; refuses a newer format.
pub(super) fn to_current(store: &Store) -> Result<(), StoreError> {
    let mut found = match store.meta_u64(meta::FORMAT_VERSION)? {
        Some(v) => v,
        None => return record(store, CURRENT),
    };
    if found == 0 {
        return Err(StoreError::Corrupt { cf: cf::META, msg: "format version 0".into() });
    }
    if found > CURRENT {
        return Err(StoreError::NewerFormat { found, reads: CURRENT });
    }
    while found < CURRENT {
        STEPS[found as usize - 1](store)?;
        found += 1;
        record(store, found)?;
        tracing::info!(format = found, "store upgraded");
    }
    Ok(())
}

/// Format 1 → 2: order and trade records end with their order version (1 for every
/// record of format 1). Postcard writes a struct's fields one after another with nothing
/// around them, and the version is the last field: a record of format 1 with the byte `1`
/// appended is the record of format 2. A value that already reads as format 2 is left as
/// it is, so a step interrupted and run again appends nothing twice (a format-1 record
/// never reads as format 2: its bytes end where the version would begin). The event
/// stream's outbox holds order and trade records too; its market events are unchanged.
fn versions_recorded(store: &Store) -> Result<(), StoreError> {
    rewrite(store, cf::ORDERS, 1, |v| decode::<OrderRecord>(cf::ORDERS, v).is_ok())?;
    rewrite(store, cf::LIVE_ORDERS, 1, |v| decode::<OrderRecord>(cf::LIVE_ORDERS, v).is_ok())?;
    rewrite(store, cf::TRADES, 1, |v| decode::<TradeRecord>(cf::TRADES, v).is_ok())?;
    rewrite(store, cf::STREAM_OUTBOX, 1, |v| decode::<StreamEvent>(cf::STREAM_OUTBOX, v).is_ok())
}

/// Format 2 → 3: every claimed builder ID is found by its builder code (what a version 2
/// order names), as a claim made since writes it. Writing the index again is harmless.
fn builder_codes_indexed(store: &Store) -> Result<(), StoreError> {
    let mut b = Batch::default();
    let prefix = super::keys::builders::CLAIM_PREFIX;
    store.walk(cf::BUILDERS, prefix, None, false, |k, _| {
        if let Some(id) = k.get(prefix.len()..).and_then(|id| std::str::from_utf8(id).ok()) {
            let code = crate::domain::builders::builder_code(id);
            b.put(cf::BUILDERS, super::keys::builders::code(&code), encode(&id));
        }
        std::ops::ControlFlow::Continue(())
    })?;
    store.write([&b], true)
}

/// Format 3 → 4: chain mode's recorded transactions end with the relayer's transaction
/// they send, if any — none for every record of format 3, a settlement: postcard's `None`
/// is the byte `0` appended, as in [`versions_recorded`].
fn chain_txs_name_their_relay(store: &Store) -> Result<(), StoreError> {
    rewrite(store, cf::CHAIN_TXS, 0, |v| chain_tx_nones_missing(v) < 4)
}

/// Format 4 → 5: chain mode's recorded transactions end with the account that signed them
/// when it is not the operator's — none for every record of format 4 (a relayer key of its
/// own came with format 5): `None` appended, as in [`chain_txs_name_their_relay`].
fn chain_txs_name_their_account(store: &Store) -> Result<(), StoreError> {
    rewrite(store, cf::CHAIN_TXS, 0, |v| chain_tx_nones_missing(v) < 3)
}

/// Format 5 → 6: chain mode's recorded transactions end with the resolved market whose
/// payouts they report, if any, and the transactions they replaced — none and none for
/// every record of format 5 (both came with format 6): `None` and the empty list (postcard's
/// length `0`) appended, as in [`chain_txs_name_their_relay`].
fn chain_txs_name_their_report_and_replacements(store: &Store) -> Result<(), StoreError> {
    rewrite(store, cf::CHAIN_TXS, 0, |v| chain_tx_nones_missing(v) < 2)?;
    rewrite(store, cf::CHAIN_TXS, 0, |v| chain_tx_nones_missing(v) < 1)
}

/// How many trailing zero bytes (postcard's `None`, or an empty list's length) a recorded
/// transaction lacks to read as this build's [`ChainTx`]: 0 for the current format, 2 for
/// format 5, 3 for format 4, 4 for format 3. A value of an older format never reads as a
/// newer one: its bytes end where the next field would begin.
fn chain_tx_nones_missing(v: &[u8]) -> usize {
    let mut padded = v.to_vec();
    for missing in 0..5 {
        if decode::<ChainTx>(cf::CHAIN_TXS, &padded).is_ok() {
            return missing;
        }
        padded.push(0);
    }
    5
}

/// Appends `byte` to each value of `name` that is not `current` yet, a bounded batch at a
/// time.
fn rewrite(store: &Store, name: &'static str, byte: u8, current: impl Fn(&[u8]) -> bool) -> Result<(), StoreError> {
    const CHUNK: usize = 10_000;
    let mut it = store.db.raw_iterator_cf(store.handle(name));
    it.seek_to_first();
    let mut wb = WriteBatch::default();
    let mut n = 0;
    while let (Some(k), Some(v)) = (it.key(), it.value()) {
        if !current(v) {
            let mut fixed = Vec::with_capacity(v.len() + 1);
            fixed.extend_from_slice(v);
            fixed.push(byte);
            wb.put_cf(store.handle(name), k, fixed);
            n += 1;
            if n % CHUNK == 0 {
                store.write_batch(std::mem::take(&mut wb), false)?;
            }
        }
        it.next();
    }
    it.status()?;
    store.write_batch(wb, false)?;
    if n > 0 {
        tracing::info!(family = name, records = n, "records rewritten to the store's new format");
    }
    Ok(())
}

fn record(store: &Store, version: u64) -> Result<(), StoreError> {
    let mut b = Batch::default();
    b.put(cf::META, meta::FORMAT_VERSION.to_vec(), version.to_be_bytes().to_vec());
    store.write([&b], true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_store_records_the_current_format_and_a_newer_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.meta_u64(meta::FORMAT_VERSION).unwrap(), Some(CURRENT));
        record(&store, CURRENT + 1).unwrap();
        drop(store);
        let e = Store::open(dir.path()).err().expect("a newer format is refused");
        assert!(matches!(e, StoreError::NewerFormat { found, reads: CURRENT } if found == CURRENT + 1));
        let line = e.to_string();
        assert!(!line.contains('\n') && line.contains(&format!("store format {}", CURRENT + 1)), "{line}");
        // Refused before anything was written: the format is still the newer one.
        record_is(dir.path(), CURRENT + 1);
    }

    /// A store of format 1 — order and trade records, in every family that holds them,
    /// without their version — reads as format 2 after the upgrade, each record of
    /// version 1; running the step again changes nothing; a market event is left as it is.
    #[test]
    fn format_1_records_gain_their_version() {
        use crate::domain::{Amount, Market, OrderStatus, Price, Token, TradeStatus};
        use crate::store::tests::{indexes::trade, records::sample_order};
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (open, t) = (sample_order(), trade(3, TradeStatus::Pending));
        let closed = OrderRecord { id: Uuid::from_u128(43), status: OrderStatus::Canceled, ..sample_order() };
        assert_eq!((open.version, t.version), (1, 1));
        let event = StreamEvent { at_ms: 7, what: Recorded::Trade(std::borrow::Cow::Borrowed(&t)) };
        let token = |t: &str, o: &str| Token { token_id: t.into(), outcome: o.into() };
        let m = Market::binary("0xa", token("1", "Yes"), token("2", "No"), Price(100), Amount(5));
        let market = StreamEvent { at_ms: 8, what: Recorded::Market(std::borrow::Cow::Borrowed(&m)) };
        let format_1 = |v: Vec<u8>| v[..v.len() - 1].to_vec();
        let mut wb = WriteBatch::default();
        wb.put_cf(store.handle(cf::ORDERS), closed.id.as_bytes(), format_1(encode(&closed)));
        wb.put_cf(store.handle(cf::LIVE_ORDERS), 2u64.to_be_bytes(), format_1(encode(&open)));
        wb.put_cf(store.handle(cf::TRADES), t.id.as_bytes(), format_1(encode(&t)));
        wb.put_cf(store.handle(cf::STREAM_OUTBOX), 1u64.to_be_bytes(), format_1(encode(&event)));
        wb.put_cf(store.handle(cf::STREAM_OUTBOX), 2u64.to_be_bytes(), encode(&market));
        store.write_batch(wb, true).unwrap();
        assert!(decode::<OrderRecord>(cf::ORDERS, &store.get_raw(cf::ORDERS, closed.id.as_bytes()).unwrap().unwrap())
            .is_err());
        for _ in 0..2 {
            versions_recorded(&store).unwrap();
            assert_eq!(store.get_order(&closed.id).unwrap().unwrap(), closed);
            let live = store.get_raw(cf::LIVE_ORDERS, &2u64.to_be_bytes()).unwrap().unwrap();
            assert_eq!(decode::<OrderRecord>(cf::LIVE_ORDERS, &live).unwrap(), open);
            assert_eq!(store.get_trade(&t.id).unwrap().unwrap(), t);
            let e = store.get_raw(cf::STREAM_OUTBOX, &1u64.to_be_bytes()).unwrap().unwrap();
            assert_eq!(decode::<StreamEvent>(cf::STREAM_OUTBOX, &e).unwrap(), event);
            let m = store.get_raw(cf::STREAM_OUTBOX, &2u64.to_be_bytes()).unwrap().unwrap();
            assert_eq!(m, encode(&market));
        }
    }

    /// A builder ID claimed in format 2 is found by its code after the upgrade, twice run.
    #[test]
    fn format_2_builder_ids_are_found_by_their_code() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut b = Batch::default();
        b.put(cf::BUILDERS, super::super::keys::builders::claim("acme"), encode(&"0xabc"));
        store.write([&b], true).unwrap();
        let code = crate::domain::builders::builder_code("acme");
        assert_eq!(store.builder_of_code(&code).unwrap(), None);
        for _ in 0..2 {
            builder_codes_indexed(&store).unwrap();
            assert_eq!(store.builder_of_code(&code).unwrap().as_deref(), Some("acme"));
        }
        assert_eq!(store.builder_of_code(&crate::domain::builders::builder_code("other")).unwrap(), None);
    }

    /// A settlement transaction recorded in format 3 reads, after the upgrades (each run
    /// twice), as the same transaction sending no relayer transaction, signed by the
    /// operator, reporting no payouts and replacing none; one of format 4 and one of
    /// format 5 likewise.
    #[test]
    fn format_3_to_5_chain_txs_name_no_relay_no_account_no_report_and_no_replacement() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let tx = |nonce| ChainTx {
            nonce,
            hash: [9; 32],
            raw: vec![1, 2, 3],
            trades: vec![Uuid::from_u128(5)],
            last_seq: 11,
            sent_at: 12,
            relay: None,
            account: None,
            report: None,
            replaced: Vec::new(),
        };
        let older = |nonce: u64, fields: usize| {
            let v = encode(&tx(nonce));
            v[..v.len() - fields].to_vec()
        };
        let mut wb = WriteBatch::default();
        wb.put_cf(store.handle(cf::CHAIN_TXS), 7u64.to_be_bytes(), older(7, 4));
        wb.put_cf(store.handle(cf::CHAIN_TXS), 8u64.to_be_bytes(), older(8, 3));
        wb.put_cf(store.handle(cf::CHAIN_TXS), 9u64.to_be_bytes(), older(9, 2));
        store.write_batch(wb, true).unwrap();
        assert!(store.chain_txs().is_err());
        for _ in 0..2 {
            chain_txs_name_their_relay(&store).unwrap();
        }
        assert!(store.chain_txs().is_err(), "format 4 lacks the account");
        for _ in 0..2 {
            chain_txs_name_their_account(&store).unwrap();
        }
        assert!(store.chain_txs().is_err(), "format 5 lacks the report and the replacements");
        for _ in 0..2 {
            chain_txs_name_their_report_and_replacements(&store).unwrap();
            assert_eq!(store.chain_txs().unwrap(), vec![tx(7), tx(8), tx(9)]);
        }
    }

    fn record_is(path: &std::path::Path, version: u64) {
        let db = rocksdb::DB::open_cf_for_read_only(&rocksdb::Options::default(), path, [cf::META], false).unwrap();
        let v = db.get_cf(db.cf_handle(cf::META).unwrap(), meta::FORMAT_VERSION).unwrap().unwrap();
        assert_eq!(v, version.to_be_bytes());
    }
}
