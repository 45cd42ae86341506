//! Online backups: a RocksDB checkpoint of the open store, and a data directory made from
//! one (docs/operating/running.md).

use std::path::Path;

use super::{Store, StoreError};

/// What a restore made.
#[derive(Debug)]
pub struct Restored {
    pub files: usize,
    pub bytes: u64,
}

impl Store {
    /// A consistent copy of the database in `dir`, which must not exist: RocksDB's
    /// checkpoint — memtables flushed first, table files hard-linked when `dir` is on the
    /// same filesystem (copied otherwise), the manifest and live log copied. It holds what
    /// was written before the call; the caller chooses that point (`app::backup`).
    pub fn checkpoint(&self, dir: &Path) -> Result<(), StoreError> {
        rocksdb::checkpoint::Checkpoint::new(&self.db)?.create_checkpoint(dir)?;
        Ok(())
    }

    /// Makes data directory `to` (absent or empty) from the checkpoint in `from`: its files
    /// copied (never linked, so the backup stays as it was), synced, then opened once to
    /// check that it is a store.
    pub fn restore(from: &Path, to: &Path) -> Result<Restored, std::io::Error> {
        use std::io::{Error, ErrorKind};
        if !from.join("CURRENT").is_file() {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!("{} holds no backup (no CURRENT file)", from.display()),
            ));
        }
        if to.exists() && std::fs::read_dir(to)?.next().is_some() {
            return Err(Error::new(ErrorKind::AlreadyExists, format!("{} is not empty", to.display())));
        }
        std::fs::create_dir_all(to)?;
        let mut done = Restored { files: 0, bytes: 0 };
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            if !entry.file_type()?.is_file() {
                continue;
            }
            let target = to.join(entry.file_name());
            done.bytes += std::fs::copy(entry.path(), &target)?;
            std::fs::File::open(&target)?.sync_all()?;
            done.files += 1;
        }
        std::fs::File::open(to)?.sync_all()?;
        Store::open(to).map_err(|e| Error::other(format!("the restored directory does not open: {e}")))?;
        Ok(done)
    }
}
