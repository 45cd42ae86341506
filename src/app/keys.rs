//! API credentials (SPEC §5.1–5.2): the waitlist, single-use invitation codes, and the L2
//! keys an L1-verified address creates, derives, lists and deletes. The routes verify the
//! L1 or L2 headers; the rules of what a verified address may do are here.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use uuid::Uuid;

use crate::app::{replay::Replays, AppState};
use crate::domain::{now_secs, AddressStatus, ApiKeyRecord, InviteRecord};
use crate::store::{Batch, Store, StoreError};

/// The keys' state: every API key, read by L2 authentication on each request without
/// touching RocksDB (updated once a key's creation or deletion is durable), the lock that
/// makes one key of two concurrent creations, the signatures of fresh L2 requests, and the
/// keys enrolled in heartbeat monitoring.
pub struct Keys {
    records: RwLock<HashMap<Uuid, Arc<ApiKeyRecord>>>,
    /// Serialises key creation (API, builder and relayer keys), so an invitation code is
    /// consumed once.
    pub creation: tokio::sync::Mutex<()>,
    /// Signatures of the state-changing L2 requests served while they are fresh.
    pub replays: Replays,
    pub heartbeats: Arc<Heartbeats>,
}

impl Keys {
    pub fn load(store: &Store) -> Result<Keys, StoreError> {
        Ok(Keys {
            records: RwLock::new(store.all_api_keys()?.into_iter().map(|k| (k.key, Arc::new(k))).collect()),
            creation: Default::default(),
            replays: Default::default(),
            heartbeats: Default::default(),
        })
    }

    pub fn get(&self, key: &Uuid) -> Option<Arc<ApiKeyRecord>> {
        self.records.read().get(key).cloned()
    }

    /// Records a created (Some) or deleted (None) key once its write is durable.
    fn set(&self, key: Uuid, rec: Option<ApiKeyRecord>) {
        let mut m = self.records.write();
        match rec {
            Some(r) => m.insert(key, Arc::new(r)),
            None => m.remove(&key),
        };
    }
}

/// More than this without a heartbeat cancels an enrolled key's orders (SPEC §4.2).
pub const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(10);

/// API keys enrolled in heartbeat monitoring, with their last heartbeat.
#[derive(Debug, Default)]
pub struct Heartbeats(Mutex<HashMap<Uuid, Instant>>);

impl Heartbeats {
    /// Enrols the key on its first heartbeat; later ones reset its countdown.
    pub fn beat(&self, key: Uuid) {
        self.0.lock().insert(key, Instant::now());
    }

    /// Removes and returns the keys silent for longer than `timeout`.
    pub fn take_silent(&self, now: Instant, timeout: Duration) -> Vec<Uuid> {
        let mut m = self.0.lock();
        let silent: Vec<Uuid> =
            m.iter().filter(|(_, t)| now.saturating_duration_since(**t) > timeout).map(|(k, _)| *k).collect();
        for k in &silent {
            m.remove(k);
        }
        silent
    }

    pub fn is_enrolled(&self, key: &Uuid) -> bool {
        self.0.lock().contains_key(key)
    }
}

/// The catalogued message for a bad address header or a bad invitation code (SPEC §7.2).
pub const INVALID_ADDRESS_HEADER: &str = "invalid OPENFISH_ADDRESS style message: invalid address header";

/// What the credential services refuse (the routes give each its SPEC §7 reply).
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("invalid email")]
    InvalidEmail,
    /// A first key without a valid invitation code: SPEC §7.2 answers it as a bad address
    /// header.
    #[error("{}", INVALID_ADDRESS_HEADER)]
    InvalidInvitation,
    #[error("API key already exists for this address and nonce")]
    Exists,
    #[error("no API key found for this address and nonce")]
    NotFound,
    #[error("too many API keys for this address: at most {MAX_KEYS}; delete one first")]
    TooMany,
    /// The system's random source failed.
    #[error("no randomness for a secret")]
    NoRandomness,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Keys one address may hold of each kind (L2 API keys, and builder, relayer and read-only
/// keys): what a key holder can make the server store stays bounded.
pub const MAX_KEYS: usize = 20;

/// The longest email the waitlist keeps (RFC 5321's path limit less its brackets).
pub const MAX_EMAIL: usize = 254;

/// An email as the waitlist keeps it, if it is one (at most [`MAX_EMAIL`] bytes).
fn email_of(e: &str) -> Result<String, KeyError> {
    let e = e.trim().to_lowercase();
    let valid = e.len() <= MAX_EMAIL
        && matches!(e.split_once('@'), Some((a, b)) if !a.is_empty() && b.contains('.') && !b.starts_with('.') && !b.ends_with('.') && !e.contains(char::is_whitespace));
    if valid {
        Ok(e)
    } else {
        Err(KeyError::InvalidEmail)
    }
}

/// Puts an email on the waitlist (once); returns it as kept.
pub async fn join_waitlist(s: &AppState, email: &str) -> Result<String, KeyError> {
    let email = email_of(email)?;
    if !s.store.on_waitlist(&email)? {
        let mut b = Batch::default();
        b.put_waitlist(&email, now_secs());
        s.commit(b).await?;
    }
    Ok(email)
}

/// Issues a single-use invitation code for an email (the operator's approval).
pub async fn approve(s: &AppState, email: &str) -> Result<InviteRecord, KeyError> {
    let email = email_of(email)?;
    const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    let mut raw = [0u8; 8];
    getrandom::getrandom(&mut raw).map_err(|_| KeyError::NoRandomness)?;
    let c: String = raw.iter().map(|b| ALPHABET[(*b as usize) % ALPHABET.len()] as char).collect();
    let code = format!("{}-{}", &c[..4], &c[4..]);
    let inv = InviteRecord {
        code: code.clone(),
        email: email.clone(),
        expires_at: now_secs() + s.config.invite_ttl_secs,
        used: false,
    };
    let mut b = Batch::default();
    b.put_invite(&inv);
    b.put_waitlist(&email, now_secs());
    s.commit(b).await?;
    Ok(inv)
}

/// Creates the L2 key of an L1-verified `address` at `nonce`. While the service is
/// invite-only (the default), an address's first key takes an unused, unexpired invitation
/// code, which it uses up; with `invite-only = false` no code is asked for.
pub async fn create(
    s: &AppState,
    address: &str,
    nonce: u64,
    invitation: Option<&str>,
) -> Result<ApiKeyRecord, KeyError> {
    // One creation at a time: two requests for one (address, nonce) make one key.
    let _one = s.keys.creation.lock().await;
    if s.store.key_id_at(address, nonce)?.is_some() {
        return Err(KeyError::Exists);
    }
    if s.store.key_ids_of(address)?.len() >= MAX_KEYS {
        return Err(KeyError::TooMany);
    }
    let mut batch = Batch::default();
    if s.config.invite_only && !s.store.has_keys(address)? {
        let code = invitation.ok_or(KeyError::InvalidInvitation)?.to_uppercase();
        let well_formed = code.len() == 9
            && code.as_bytes()[4] == b'-'
            && code.chars().enumerate().all(|(i, c)| i == 4 || c.is_ascii_alphanumeric());
        let mut inv = match s.store.get_invite(&code)? {
            Some(inv) if well_formed && !inv.used && inv.expires_at > now_secs() => inv,
            _ => return Err(KeyError::InvalidInvitation),
        };
        inv.used = true;
        batch.put_invite(&inv);
    }
    let (secret, passphrase) = crate::auth::new_secrets().map_err(|_| KeyError::NoRandomness)?;
    let rec = ApiKeyRecord {
        key: Uuid::new_v4(),
        secret,
        passphrase,
        address: address.into(),
        nonce,
        created_at: now_secs(),
        wallets: Default::default(),
    };
    batch.add_api_key(&rec);
    s.commit(batch).await?;
    s.keys.set(rec.key, Some(rec.clone()));
    Ok(rec)
}

/// The key an address created at `nonce`.
pub fn derive(s: &AppState, address: &str, nonce: u64) -> Result<ApiKeyRecord, KeyError> {
    let id = s.store.key_id_at(address, nonce)?.ok_or(KeyError::NotFound)?;
    s.store.get_api_key(&id)?.ok_or(KeyError::NotFound)
}

/// Deletes a key: its requests fail authentication from the reply on.
pub async fn delete(s: &AppState, key: &ApiKeyRecord) -> Result<(), KeyError> {
    let mut b = Batch::default();
    b.delete_api_key(key);
    s.commit(b).await?;
    s.keys.set(key.key, None);
    Ok(())
}

/// The ids of every key of an address.
pub fn ids_of(s: &AppState, address: &str) -> Result<Vec<Uuid>, KeyError> {
    Ok(s.store.key_ids_of(address)?)
}

/// Whether an address may only close positions.
pub fn closed_only(s: &AppState, address: &str) -> bool {
    s.access.address_status(address) == AddressStatus::ClosedOnly
}
