//! Builders and service keys (SPEC §2.1, §4.1, §4.4, §5.5–5.6, §7.2, §7.5;
//! docs/reference/builders.md).
//!
//! A builder is an application that routes its users' orders: it names itself with the
//! `SERVICE_BUILDER_ID` header on `POST /builder/order` and `/builder/cancel`, and the
//! orders it places are attributed to it (an index written in the order's own batch).
//! With a builder API key (`POST /auth/builder-api-key`) it reads the orders and trades
//! it attributed — `GET /data/orders` and `GET /data/trades` with the builder headers of
//! §5.5 — and its volume (`GET /builder/volume`).
//!
//! Relayer API keys (`POST /relayer/api-key`) authorise the gasless relay (`relay`) for
//! one address. Read-only keys (`POST /auth/readonly-api-key`) read what the L2 key that
//! made them reads and never trade. The three are one mechanism: a service key bound to
//! the address that created it, in the `builders` family.

use std::collections::BTreeMap;
use std::sync::Arc;

use uuid::Uuid;

use crate::app::AppState;
use crate::auth::ct_eq;
use crate::domain::{now_secs, Amount, ApiKeyRecord, OrderRecord, TradeRecord, TradeStatus};
use crate::store::{Batch, Store, StoreError};

/// What a builder or relayer key service refuses (the routes give each its SPEC §7
/// reply; the two storage failures carry the endpoint's own message, SPEC §7.2).
#[derive(Debug, thiserror::Error)]
pub enum BuilderError {
    #[error("builderId belongs to another address")]
    BuilderIdTaken,
    #[error("builder API key not found")]
    NoBuilderKey,
    #[error("relayer API key not found")]
    NoRelayerKey,
    #[error("readonly API key not found")]
    NoReadonlyKey,
    #[error("could not create builder api key")]
    CreateFailed,
    #[error("could not get builder api keys")]
    ListFailed,
    #[error("too many {0} keys for this address: at most {max}; delete one first", max = crate::app::keys::MAX_KEYS)]
    TooMany(&'static str),
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub use crate::domain::builders::{KeyKind, ServiceKey};

impl KeyKind {
    fn not_found(self) -> BuilderError {
        match self {
            KeyKind::Builder => BuilderError::NoBuilderKey,
            KeyKind::Relayer => BuilderError::NoRelayerKey,
            KeyKind::Readonly => BuilderError::NoReadonlyKey,
        }
    }
}

/// The attribution of an order to a builder, written in the order's batch.
pub fn attribution(builder: &str, order: &OrderRecord) -> Batch {
    let mut b = Batch::default();
    b.attribute_order(builder, &order.id);
    b
}

pub fn load_key(store: &Store, k: &Uuid) -> Result<Option<ServiceKey>, StoreError> {
    store.service_key(k)
}

/// A builder ID: 1–64 letters, digits, `-`, `_` or `.` (it is part of index keys).
pub fn valid_builder_id(b: &str) -> bool {
    (1..=64).contains(&b.len()) && b.bytes().all(|c| c.is_ascii_alphanumeric() || b"-_.".contains(&c))
}

// ---- services --------------------------------------------------------------------------

/// A new key of `kind` for `address`, with its secret and passphrase; a builder key names
/// its builder ID (valid, see [`valid_builder_id`]), which becomes the address's.
pub async fn create_key(
    s: &AppState,
    address: &str,
    kind: KeyKind,
    builder_id: Option<String>,
) -> Result<ServiceKey, BuilderError> {
    create(s, address, kind, builder_id, None).await
}

/// A new read-only key of `parent`'s address, reading what `parent` reads.
pub async fn create_readonly_key(s: &AppState, parent: &ApiKeyRecord) -> Result<ServiceKey, BuilderError> {
    create(s, &parent.address, KeyKind::Readonly, None, Some(parent.key)).await
}

/// The L2 key a read-only key reads for, when `key` is a read-only key whose L2 key
/// still exists.
pub fn readonly_key(s: &AppState, key: &Uuid) -> Result<Option<(ServiceKey, Arc<ApiKeyRecord>)>, StoreError> {
    let Some(rec) = load_key(&s.store, key)?.filter(|k| k.kind == KeyKind::Readonly) else {
        return Ok(None);
    };
    let parent = s.store.reads_for(key)?.and_then(|p| s.keys.get(&p));
    Ok(parent.map(|p| (rec, p)))
}

async fn create(
    s: &AppState,
    address: &str,
    kind: KeyKind,
    builder_id: Option<String>,
    reads_for: Option<Uuid>,
) -> Result<ServiceKey, BuilderError> {
    let _one = s.keys.creation.lock().await;
    if s.store.service_keys_of(address, kind).map_err(|_| BuilderError::CreateFailed)?.len()
        >= crate::app::keys::MAX_KEYS
    {
        return Err(BuilderError::TooMany(kind.name()));
    }
    let mut batch = Batch::default();
    if let Some(id) = &builder_id {
        match s.store.builder_id_owner(id).map_err(|_| BuilderError::CreateFailed)? {
            Some(owner) if owner != address => return Err(BuilderError::BuilderIdTaken),
            Some(_) => {}
            None => batch.claim_builder_id(id, address),
        }
    }
    let (secret, passphrase) = crate::auth::new_secrets().map_err(|_| BuilderError::CreateFailed)?;
    let rec = ServiceKey {
        key: Uuid::new_v4(),
        kind,
        address: address.to_string(),
        builder_id,
        secret,
        passphrase,
        created_at: now_secs(),
    };
    batch.add_service_key(&rec);
    if let Some(p) = reads_for {
        batch.link_readonly_key(&rec.key, &p);
    }
    s.commit(batch).await.map_err(|_| BuilderError::CreateFailed)?;
    Ok(rec)
}

/// An address's keys of a kind, oldest first.
pub fn keys_of(s: &AppState, address: &str, kind: KeyKind) -> Result<Vec<ServiceKey>, BuilderError> {
    let list = || -> Result<Vec<ServiceKey>, StoreError> {
        let mut out = Vec::new();
        for id in s.store.service_keys_of(address, kind)? {
            out.extend(load_key(&s.store, &id)?);
        }
        out.sort_by_key(|k| (k.created_at, k.key));
        Ok(out)
    };
    list().map_err(|_| BuilderError::ListFailed)
}

/// Deletes `address`'s key `id` of `kind`.
pub async fn delete_key(s: &AppState, address: &str, kind: KeyKind, id: &Uuid) -> Result<(), BuilderError> {
    let _one = s.keys.creation.lock().await;
    let rec = load_key(&s.store, id)?.filter(|k| k.kind == kind && k.address == address);
    let rec = rec.ok_or_else(|| kind.not_found())?;
    let mut batch = Batch::default();
    batch.delete_service_key(&rec);
    s.commit(batch).await?;
    Ok(())
}

/// The builder key `key` if it is one, of builder `builder_id`, and — when a passphrase is
/// given — with that passphrase.
pub fn builder_key_of(
    s: &AppState,
    key: &Uuid,
    builder_id: &str,
    passphrase: Option<&str>,
) -> Result<Option<ServiceKey>, StoreError> {
    Ok(load_key(&s.store, key)?.filter(|x| {
        x.kind == KeyKind::Builder
            && x.builder_id.as_deref() == Some(builder_id)
            && passphrase.is_none_or(|p| ct_eq(p.as_bytes(), x.passphrase.as_bytes()))
    }))
}

/// The relayer key `key` if it is one, bound to `address`.
pub fn relayer_key_of(s: &AppState, key: &Uuid, address: &str) -> Result<Option<ServiceKey>, StoreError> {
    Ok(load_key(&s.store, key)?.filter(|k| k.kind == KeyKind::Relayer && k.address == address))
}

/// Every order attributed to a builder.
pub fn attributed_orders(s: &AppState, builder: &str) -> Result<Vec<OrderRecord>, StoreError> {
    let mut out = Vec::new();
    for id in s.store.attributed_order_ids(builder)? {
        out.extend(s.store.get_order(&id)?);
    }
    out.sort_by_key(|o| (o.created_at, o.id));
    Ok(out)
}

/// A trade of a builder's attributed orders, with the notional (collateral) of its
/// attributed fills and the API key it is shown as.
pub type Attributed = (TradeRecord, Amount, Uuid);

/// The trades of a builder's attributed orders, newest first (see [`Attributed`]).
pub fn attributed_trades(s: &AppState, builder: &str) -> Result<Vec<Attributed>, StoreError> {
    let orders = attributed_orders(s, builder)?;
    let mine: std::collections::HashSet<Uuid> = orders.iter().map(|o| o.id).collect();
    let mut trades = BTreeMap::new();
    for id in orders.iter().flat_map(|o| o.associate_trades.iter()) {
        if trades.contains_key(id) {
            continue;
        }
        let Some(t) = s.store.get_trade(id)? else { continue };
        let mut notional = Amount::ZERO;
        let mut viewer = None;
        if mine.contains(&t.taker_order_id) {
            notional += t.price.cost(t.size);
            viewer = Some(t.owner);
        }
        for m in t.maker_orders.iter().filter(|m| mine.contains(&m.order_id)) {
            notional += m.price.cost(m.matched_amount);
            viewer.get_or_insert(m.owner);
        }
        let viewer = viewer.unwrap_or(t.owner);
        trades.insert(*id, (t, notional, viewer));
    }
    let mut v: Vec<_> = trades.into_values().collect();
    v.sort_by_key(|(t, ..)| std::cmp::Reverse(t.seq));
    Ok(v)
}

/// A builder's attributed orders, trades and volume (the collateral notional of its
/// orders' fills in trades not FAILED), in one market or all.
pub struct Volume {
    pub orders: usize,
    pub trades: usize,
    pub volume: u64,
}

pub fn volume(s: &AppState, builder: &str, market: Option<&str>) -> Result<Volume, StoreError> {
    let orders = attributed_orders(s, builder)?
        .into_iter()
        .filter(|o| market.is_none_or(|m| *m == *o.token.condition_id))
        .count();
    let trades: Vec<_> = attributed_trades(s, builder)?
        .into_iter()
        .filter(|(t, ..)| t.status != TradeStatus::Failed && market.is_none_or(|m| *m == *t.token.condition_id))
        .collect();
    Ok(Volume { orders, trades: trades.len(), volume: trades.iter().map(|(_, n, _)| n.units()).sum() })
}
