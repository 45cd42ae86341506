//! Who may trade, typed: API keys and their index by address, invitations, the waitlist,
//! banned and closed-only addresses, the platform mode and the start-up flags in `meta`;
//! and what an API key reads of its own: its trade ids.

use uuid::Uuid;

use super::index::wallet_prefix;
use super::{cf, encode, keys, meta, Batch, Store, StoreError};
use crate::domain::{AddressStatus, ApiKeyRecord, InviteRecord, Mode};

impl Store {
    pub fn all_api_keys(&self) -> Result<Vec<ApiKeyRecord>, StoreError> {
        let rows = self.all_raw(cf::API_KEYS)?;
        rows.iter().map(|(k, v)| Store::decode_value(cf::API_KEYS, &self.unseal(cf::API_KEYS, k, v)?)).collect()
    }

    /// The key an address created with a nonce.
    pub fn key_id_at(&self, address: &str, nonce: u64) -> Result<Option<Uuid>, StoreError> {
        match self.get_raw(cf::KEYS_BY_ADDRESS, &keys::address_nonce(address, nonce))? {
            None => Ok(None),
            Some(v) => Uuid::from_slice(&v)
                .map(Some)
                .map_err(|e| StoreError::Corrupt { cf: cf::KEYS_BY_ADDRESS, msg: e.to_string() }),
        }
    }

    /// The ids of an address's keys, by nonce.
    pub fn key_ids_of(&self, address: &str) -> Result<Vec<Uuid>, StoreError> {
        let rows = self.scan_prefix(cf::KEYS_BY_ADDRESS, &wallet_prefix(address), &[], usize::MAX)?;
        Ok(rows.iter().filter_map(|(_, v)| Uuid::from_slice(v).ok()).collect())
    }

    /// Whether an address has any key.
    pub fn has_keys(&self, address: &str) -> Result<bool, StoreError> {
        Ok(!self.scan_prefix(cf::KEYS_BY_ADDRESS, &wallet_prefix(address), &[], 1)?.is_empty())
    }

    pub fn on_waitlist(&self, email: &str) -> Result<bool, StoreError> {
        Ok(self.get_raw(cf::WAITLIST, email.as_bytes())?.is_some())
    }

    /// Every banned or closed-only address.
    pub fn address_statuses(&self) -> Result<Vec<(String, AddressStatus)>, StoreError> {
        Ok(self.all(cf::ADDRESSES)?.into_iter().map(|(k, v)| (String::from_utf8_lossy(&k).into_owned(), v)).collect())
    }

    pub fn mode(&self) -> Result<Option<Mode>, StoreError> {
        self.get(cf::META, meta::MODE)
    }

    /// Whether the demo markets (`events`: the demo series and events) were loaded once.
    pub fn demo_loaded(&self, events: bool) -> Result<bool, StoreError> {
        let k = if events { meta::EVENTS_LOADED } else { meta::CATALOGUE_LOADED };
        Ok(self.get_raw(cf::META, k)?.is_some())
    }

    /// Marks the demo markets (`events`: series and events) loaded.
    pub fn set_demo_loaded(&self, events: bool) -> Result<(), StoreError> {
        let k = if events { meta::EVENTS_LOADED } else { meta::CATALOGUE_LOADED };
        self.put(cf::META, k, &true)
    }

    /// The ids of an API key's trades, oldest first.
    pub fn trade_ids_of(&self, owner: &Uuid) -> Result<Vec<Uuid>, StoreError> {
        let rows = self.scan_prefix(cf::TRADES_BY_OWNER, owner.as_bytes(), &[], usize::MAX)?;
        Ok(rows.iter().filter_map(|(_, v)| Uuid::from_slice(v).ok()).collect())
    }

    /// The ids of `owner`'s orders cancelled when the venue changed order version.
    pub fn pre_migration_orders_of(&self, owner: &Uuid) -> Result<Vec<Uuid>, StoreError> {
        let rows = self.scan_prefix(cf::PRE_MIGRATION, owner.as_bytes(), &[], usize::MAX)?;
        Ok(rows.iter().filter_map(|(k, _)| Uuid::from_slice(k.get(16..)?).ok()).collect())
    }
}

impl Store {
    /// Every market's fee description for version 2 takers, by condition id.
    pub fn market_fees(&self) -> Result<Vec<(String, crate::domain::FeeSchedule)>, StoreError> {
        let rows = self.all::<crate::domain::FeeSchedule>(cf::MARKET_FEES)?;
        Ok(rows.into_iter().map(|(k, s)| (String::from_utf8_lossy(&k).into_owned(), s)).collect())
    }
}

impl Batch {
    /// A market's fee description for version 2 takers (None: no fee).
    pub fn put_market_fees(&mut self, condition_id: &str, fees: Option<crate::domain::FeeSchedule>) {
        match fees {
            Some(s) => self.put(cf::MARKET_FEES, condition_id.as_bytes().to_vec(), encode(&s)),
            None => self.delete(cf::MARKET_FEES, condition_id.as_bytes().to_vec()),
        }
    }

    /// An order of `owner` open when the venue changed order version, about to be
    /// cancelled.
    pub fn put_pre_migration(&mut self, owner: &Uuid, id: &Uuid) {
        let mut k = owner.as_bytes().to_vec();
        k.extend_from_slice(id.as_bytes());
        self.put(cf::PRE_MIGRATION, k, Vec::new());
    }

    /// A new API key, indexed under its address and nonce.
    pub fn add_api_key(&mut self, k: &ApiKeyRecord) {
        self.put_secret(cf::API_KEYS, k.key.as_bytes().to_vec(), encode(k));
        self.put(cf::KEYS_BY_ADDRESS, keys::address_nonce(&k.address, k.nonce), k.key.as_bytes().to_vec());
    }

    pub fn delete_api_key(&mut self, k: &ApiKeyRecord) {
        self.delete(cf::API_KEYS, k.key.as_bytes().to_vec());
        self.delete(cf::KEYS_BY_ADDRESS, keys::address_nonce(&k.address, k.nonce));
    }

    pub fn put_invite(&mut self, inv: &InviteRecord) {
        self.put(cf::INVITES, inv.code.as_bytes().to_vec(), encode(inv));
    }

    /// An email on the waitlist since `at` (UNIX seconds).
    pub fn put_waitlist(&mut self, email: &str, at: u64) {
        self.put(cf::WAITLIST, email.as_bytes().to_vec(), encode(&at));
    }

    /// An address's status; None lifts it.
    pub fn put_address_status(&mut self, address: &str, status: AddressStatus) {
        if status == AddressStatus::None {
            self.delete(cf::ADDRESSES, address.as_bytes().to_vec());
        } else {
            self.put(cf::ADDRESSES, address.as_bytes().to_vec(), encode(&status));
        }
    }

    pub fn put_mode(&mut self, m: Mode) {
        self.put(cf::META, meta::MODE.to_vec(), encode(&m));
    }
}
