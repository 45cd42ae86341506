//! The `builders` family, typed: service keys, claimed builder IDs, attributed orders.

use std::ops::ControlFlow;

use uuid::Uuid;

use super::keys::builders as key;
use super::{cf, encode, Batch, Store, StoreError};
use crate::domain::builders::{KeyKind, ServiceKey};

impl Store {
    pub fn service_key(&self, k: &Uuid) -> Result<Option<ServiceKey>, StoreError> {
        let id = key::key(k);
        match self.get_raw(cf::BUILDERS, &id)? {
            Some(v) => Ok(Some(Store::decode_value(cf::BUILDERS, &self.unseal(cf::BUILDERS, &id, &v)?)?)),
            None => Ok(None),
        }
    }

    /// The ids of an address's keys of a kind, in id order.
    pub fn service_keys_of(&self, address: &str, kind: KeyKind) -> Result<Vec<Uuid>, StoreError> {
        let mut ids = Vec::new();
        self.walk(cf::BUILDERS, &key::owner_prefix(address, kind), None, false, |k, _| {
            ids.extend(k.get(k.len().saturating_sub(16)..).and_then(|b| Uuid::from_slice(b).ok()));
            ControlFlow::Continue(())
        })?;
        Ok(ids)
    }

    /// The L2 key a read-only key reads for.
    pub fn reads_for(&self, k: &Uuid) -> Result<Option<Uuid>, StoreError> {
        Ok(self.get_raw(cf::BUILDERS, &key::reads_for(k))?.and_then(|v| Uuid::from_slice(&v).ok()))
    }

    /// The address that claimed a builder ID.
    pub fn builder_id_owner(&self, builder: &str) -> Result<Option<String>, StoreError> {
        self.get(cf::BUILDERS, &key::claim(builder))
    }

    /// The builder ID a builder code names (`domain::builders::builder_code`).
    pub fn builder_of_code(&self, code: &[u8; 32]) -> Result<Option<String>, StoreError> {
        self.get(cf::BUILDERS, &key::code(code))
    }

    /// The ids of the orders attributed to a builder.
    pub fn attributed_order_ids(&self, builder: &str) -> Result<Vec<Uuid>, StoreError> {
        let mut ids = Vec::new();
        let prefix = key::attributed_prefix(builder);
        self.walk(cf::BUILDERS, &prefix, None, false, |k, _| {
            ids.extend(k.get(prefix.len()..).and_then(|b| Uuid::from_slice(b).ok()));
            ControlFlow::Continue(())
        })?;
        Ok(ids)
    }
}

impl Batch {
    /// A builder ID claimed by `address`, and its builder code.
    pub fn claim_builder_id(&mut self, builder: &str, address: &str) {
        self.put(cf::BUILDERS, key::claim(builder), encode(&address));
        let code = crate::domain::builders::builder_code(builder);
        self.put(cf::BUILDERS, key::code(&code), encode(&builder));
    }

    /// A new service key, indexed under its owner.
    pub fn add_service_key(&mut self, k: &ServiceKey) {
        self.put_secret(cf::BUILDERS, key::key(&k.key), encode(k));
        self.put(cf::BUILDERS, key::owner(&k.address, k.kind, &k.key), Vec::new());
    }

    pub fn delete_service_key(&mut self, k: &ServiceKey) {
        self.delete(cf::BUILDERS, key::key(&k.key));
        self.delete(cf::BUILDERS, key::owner(&k.address, k.kind, &k.key));
        if k.kind == KeyKind::Readonly {
            self.delete(cf::BUILDERS, key::reads_for(&k.key));
        }
    }

    /// Which L2 key a new read-only key reads for (with [`Batch::add_service_key`]).
    pub fn link_readonly_key(&mut self, k: &Uuid, reads_for: &Uuid) {
        self.put(cf::BUILDERS, key::reads_for(k), reads_for.as_bytes().to_vec());
    }

    pub fn attribute_order(&mut self, builder: &str, order: &Uuid) {
        self.put(cf::BUILDERS, key::attributed(builder, order), Vec::new());
    }
}
