//! The bridge's families, typed: transfers by id, their index by address, registered
//! bridge addresses, credited source transactions and the open withdrawals.

use std::ops::ControlFlow;

use super::keys::bridge as key;
use super::{cf, encode, Batch, Store, StoreError};
use crate::domain::bridge::{BridgeAddress, Transfer};

impl Store {
    /// The highest transfer id written (0: none).
    pub fn last_transfer_id(&self) -> Result<u64, StoreError> {
        let mut last = 0;
        self.walk(cf::TRANSFERS, b"", None, true, |k, _| {
            last = k.try_into().map(u64::from_be_bytes).unwrap_or(0);
            ControlFlow::Break(())
        })?;
        Ok(last)
    }

    pub fn transfer(&self, id: u64) -> Result<Option<Transfer>, StoreError> {
        self.get(cf::TRANSFERS, &id.to_be_bytes())
    }

    /// A transfer an index names (missing: the store is corrupt).
    pub fn indexed_transfer(&self, id: u64) -> Result<Transfer, StoreError> {
        self.transfer(id)?.ok_or_else(|| StoreError::Corrupt {
            cf: cf::TRANSFERS,
            msg: format!("transfer {id} is indexed but missing"),
        })
    }

    /// The transfers of an address (a bridge address or a wallet), newest first.
    pub fn transfers_of(&self, address: &str) -> Result<Vec<u64>, StoreError> {
        let mut ids = Vec::new();
        self.walk(cf::TRANSFERS_BY_ADDRESS, &key::by_address_prefix(address), None, true, |k, _| {
            ids.push(key::id_at_end(k));
            ControlFlow::Continue(())
        })?;
        Ok(ids)
    }

    /// The PROCESSING withdrawals, oldest first.
    pub fn open_withdrawals(&self) -> Result<Vec<u64>, StoreError> {
        let mut ids = Vec::new();
        self.walk(cf::BRIDGE, key::OPEN, None, false, |k, _| {
            ids.push(key::id_at_end(k));
            ControlFlow::Continue(())
        })?;
        Ok(ids)
    }

    pub fn bridge_address(&self, address: &str) -> Result<Option<BridgeAddress>, StoreError> {
        self.get(cf::BRIDGE, &key::address(address))
    }

    /// The deposit that credited a source chain's transaction (`tx` lowercase).
    pub fn deposit_of_tx(&self, chain: &str, tx: &str) -> Result<Option<u64>, StoreError> {
        Ok(self.get_raw(cf::BRIDGE, &key::source_tx(chain, tx))?.map(|v| key::id_at_end(&v)))
    }
}

impl Batch {
    pub fn put_bridge_address(&mut self, address: &str, a: &BridgeAddress) {
        self.put(cf::BRIDGE, key::address(address), encode(a));
    }

    pub fn put_deposit_tx(&mut self, chain: &str, tx: &str, id: u64) {
        self.put(cf::BRIDGE, key::source_tx(chain, tx), id.to_be_bytes().to_vec());
    }

    pub fn open_withdrawal(&mut self, id: u64) {
        self.put(cf::BRIDGE, key::open(id), Vec::new());
    }

    pub fn close_withdrawal(&mut self, id: u64) {
        self.delete(cf::BRIDGE, key::open(id));
    }

    /// A new transfer, indexed under its wallet and its bridge address.
    pub fn add_transfer(&mut self, t: &Transfer) {
        self.put(cf::TRANSFERS_BY_ADDRESS, key::by_address(&t.owner, t.id), Vec::new());
        self.put(cf::TRANSFERS_BY_ADDRESS, key::by_address(&t.bridge_address, t.id), Vec::new());
        self.put_transfer(t);
    }

    pub fn put_transfer(&mut self, t: &Transfer) {
        self.put(cf::TRANSFERS, t.id.to_be_bytes().to_vec(), encode(t));
    }
}
