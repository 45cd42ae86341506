//! The `chain_txs` family, typed: chain mode's settlement transactions in flight.

use std::ops::ControlFlow;

use super::{cf, encode, meta, Batch, Store, StoreError};
use crate::domain::chain::ChainTx;

impl Store {
    /// Every recorded transaction: the operator's by nonce, then the relayer's.
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
        self.put(cf::CHAIN_TXS, chain_tx_key(tx), encode(tx));
    }

    pub fn put_chain_watched_through(&mut self, block: u64) {
        self.put(cf::META, meta::CHAIN_WATCHED_THROUGH.to_vec(), block.to_be_bytes().to_vec());
    }

    pub fn delete_chain_tx(&mut self, tx: &ChainTx) {
        self.delete(cf::CHAIN_TXS, chain_tx_key(tx));
    }
}

/// A recorded transaction's key: the operator's nonce; a relayer account's nonce followed
/// by its address (two accounts may use the same nonce).
fn chain_tx_key(tx: &ChainTx) -> Vec<u8> {
    let mut k = tx.nonce.to_be_bytes().to_vec();
    if let Some(account) = tx.account {
        k.extend_from_slice(&account);
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The operator and a relayer account may hold the same nonce at once: both records
    /// are kept, and each is deleted alone.
    #[test]
    fn two_accounts_keep_records_of_the_same_nonce() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let tx = |account| ChainTx {
            nonce: 3,
            hash: [1; 32],
            raw: vec![],
            trades: vec![],
            last_seq: 0,
            sent_at: 0,
            relay: None,
            account,
            report: None,
            replaced: Vec::new(),
        };
        let (operator, relayer) = (tx(None), tx(Some([7; 20])));
        let mut b = Batch::default();
        b.put_chain_tx(&operator);
        b.put_chain_tx(&relayer);
        store.write([&b], true).unwrap();
        assert_eq!(store.chain_txs().unwrap(), vec![operator.clone(), relayer.clone()]);
        let mut b = Batch::default();
        b.delete_chain_tx(&operator);
        store.write([&b], true).unwrap();
        assert_eq!(store.chain_txs().unwrap(), vec![relayer]);
    }
}
