//! Online backup (docs/operating.md): a RocksDB checkpoint taken at one point of the
//! persister's queue while trading goes on.
//!
//! The checkpoint rides an empty job whose completion is a barrier ([`After::Barrier`]):
//! it runs once every write queued before it is durable and visible, and before any write
//! queued after it. So the backup holds every order and trade acknowledged before the
//! request, and the books it reports — read from the views at that instant — are exactly
//! the books a server started from the backup rebuilds. Writes queue behind it while it
//! runs (RocksDB flushes its memtables and links the table files: typically well under a
//! second); the engine keeps matching meanwhile.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use crate::app::AppState;
use crate::commit::persister::Job;
use crate::commit::views::{BookSnapshot, MarketView};
use crate::commit::After;
use crate::store::{Batch, StoreError};

/// What a backup refuses or fails with.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("to must be an absolute path")]
    NotAbsolute,
    #[error("{0} already exists: a backup goes into a new directory")]
    Exists(String),
    #[error("{0} does not exist")]
    NoParent(String),
    #[error("backup failed: {0}")]
    Failed(#[from] StoreError),
}

/// A backup taken: the books at its point, and how long the persister was held.
pub struct Backup {
    pub dir: PathBuf,
    pub books: Vec<(Arc<MarketView>, Arc<BookSnapshot>)>,
    pub held_ms: u64,
}

/// Takes a backup into `dir` (absolute; it must not exist, its parent must).
pub async fn backup(s: &Arc<AppState>, dir: PathBuf) -> Result<Backup, BackupError> {
    if !dir.is_absolute() {
        return Err(BackupError::NotAbsolute);
    }
    if dir.exists() {
        return Err(BackupError::Exists(dir.display().to_string()));
    }
    match dir.parent() {
        Some(p) if p.is_dir() => {}
        p => return Err(BackupError::NoParent(p.unwrap_or(&dir).display().to_string())),
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    let state = s.clone();
    let after = After::Barrier(Box::new(move |ok| {
        let taken = if ok {
            let start = Instant::now();
            let books = state.registry.tables().list.iter().map(|v| (v.clone(), v.snapshot())).collect();
            state
                .store
                .checkpoint(&dir)
                .map(|_| Backup { dir, books, held_ms: start.elapsed().as_millis() as u64 })
                .map_err(BackupError::from)
        } else {
            Err(BackupError::Failed(StoreError::NotDurable))
        };
        let _ = tx.send(taken);
    }));
    s.persist.send(Job { batch: Batch::default(), after }).map_err(|_| BackupError::Failed(StoreError::NotDurable))?;
    rx.await.map_err(|_| BackupError::Failed(StoreError::NotDurable))?
}
