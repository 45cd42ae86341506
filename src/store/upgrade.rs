//! The store's format and the steps between formats. `meta`'s `format_version` says which
//! format a data directory holds; a store with none is new (or from before the key was
//! written, the same format) and gets [`CURRENT`]. A change to how anything is stored —
//! a value's fields, a key's layout, a family added with existing data to fill — adds a
//! step here that rewrites an older store, and raises [`CURRENT`] with it. A data
//! directory of a newer format is refused, never read.

use super::*;

/// One step: rewrites a store of format `n` (its index in [`STEPS`], plus one) into `n + 1`.
type Step = fn(&Store) -> Result<(), StoreError>;

/// The steps from format 1 on; none yet.
const STEPS: &[Step] = &[];

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

    fn record_is(path: &std::path::Path, version: u64) {
        let db = rocksdb::DB::open_cf_for_read_only(&rocksdb::Options::default(), path, [cf::META], false).unwrap();
        let v = db.get_cf(db.cf_handle(cf::META).unwrap(), meta::FORMAT_VERSION).unwrap().unwrap();
        assert_eq!(v, version.to_be_bytes());
    }
}
