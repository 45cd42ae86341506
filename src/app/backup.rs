//! Online backup (docs/operating/backups.md): a RocksDB checkpoint taken at one point of the
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
    #[error("to must be a new directory under the backup directory {0}")]
    Outside(String),
    #[error("backup failed: {0}")]
    Failed(#[from] StoreError),
    #[error("backup failed: {0}")]
    Io(std::io::Error),
}

/// A backup taken: the books at its point, and how long the persister was held.
pub struct Backup {
    pub dir: PathBuf,
    pub books: Vec<(Arc<MarketView>, Arc<BookSnapshot>)>,
    pub held_ms: u64,
}

/// Takes a backup into `dir` (absolute; it must not exist, its parent must, and it must
/// lie under the configured backup directory, `Config::backup_root`: a backup holds every
/// stored secret, so no request chooses where one lands outside it).
pub async fn backup(s: &Arc<AppState>, dir: PathBuf) -> Result<Backup, BackupError> {
    if !dir.is_absolute() {
        return Err(BackupError::NotAbsolute);
    }
    let root = s.config.backup_root();
    let outside = || BackupError::Outside(root.display().to_string());
    // Plain names only: no `..` to climb out of the root once it is checked.
    if !dir.components().skip(1).all(|c| matches!(c, std::path::Component::Normal(_))) {
        return Err(outside());
    }
    if dir.exists() {
        return Err(BackupError::Exists(dir.display().to_string()));
    }
    if !root.exists() {
        use std::os::unix::fs::DirBuilderExt;
        let made = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&root);
        made.map_err(BackupError::Io)?;
    }
    let parent = match dir.parent() {
        Some(p) if p.is_dir() => p,
        p => return Err(BackupError::NoParent(p.unwrap_or(&dir).display().to_string())),
    };
    // Compared as the filesystem resolves both, so a link inside the root cannot lead out.
    match (std::fs::canonicalize(parent), std::fs::canonicalize(&root)) {
        (Ok(p), Ok(r)) if p.starts_with(&r) => {}
        _ => return Err(outside()),
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
