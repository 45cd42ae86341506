//! The `chain_txs` family, typed: chain mode's settlement transactions in flight.

use std::ops::ControlFlow;

use super::{cf, encode, meta, Batch, Store, StoreError};
use crate::domain::chain::ChainTx;

impl Store {
    /// Every recorded settlement transaction, by nonce.
    pub fn chain_txs(&self) -> Result<Vec<ChainTx>, StoreError> {
        let mut out = Vec::new();
        self.try_walk::<StoreError>(cf::CHAIN_TXS, &[], None, false, |_, v| {
            out.push(Store::decode_value::<ChainTx>(cf::CHAIN_TXS, v)?);
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }

    /// The last block whose exchange logs chain mode applied; none before the first.
    pub fn chain_watched_through(&self) -> Result<Option<u64>, StoreError> {
        self.meta_u64(meta::CHAIN_WATCHED_THROUGH)
    }
}

impl Batch {
    pub fn put_chain_tx(&mut self, tx: &ChainTx) {
        self.put(cf::CHAIN_TXS, tx.nonce.to_be_bytes().to_vec(), encode(tx));
    }

    pub fn put_chain_watched_through(&mut self, block: u64) {
        self.put(cf::META, meta::CHAIN_WATCHED_THROUGH.to_vec(), block.to_be_bytes().to_vec());
    }

    pub fn delete_chain_tx(&mut self, nonce: u64) {
        self.delete(cf::CHAIN_TXS, nonce.to_be_bytes().to_vec());
    }
}
