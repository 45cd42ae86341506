//! The relayer's family (`cf::RELAY`), each key under a one-byte tag: `t` id → transaction;
//! `f` from ‖ millis ‖ id → () (an owner's transactions in time order); `s` submitter ‖ 0 ‖
//! millis ‖ id → () (a key's submissions); `n` wallet → its nonce (u64 BE); `d` wallet → ()
//! (a wallet deployed).

use std::ops::ControlFlow;

use uuid::Uuid;

use super::{cf, encode, Batch, Store, StoreError};
use crate::domain::relay::RelayTx;

fn tx_key(id: &Uuid) -> Vec<u8> {
    [b"t".as_slice(), id.as_bytes()].concat()
}

fn by_from_prefix(from: &str) -> Vec<u8> {
    [b"f", from.as_bytes(), b"\0"].concat()
}

fn by_submitter_prefix(owner: &str) -> Vec<u8> {
    [b"s", owner.as_bytes(), b"\0"].concat()
}

fn indexed(prefix: Vec<u8>, millis: u64, id: &Uuid) -> Vec<u8> {
    [prefix.as_slice(), &millis.to_be_bytes(), id.as_bytes()].concat()
}

fn nonce_key(wallet: &str) -> Vec<u8> {
    [b"n", wallet.as_bytes()].concat()
}

fn deployed_key(wallet: &str) -> Vec<u8> {
    [b"d", wallet.as_bytes()].concat()
}

impl Store {
    pub fn relay_tx(&self, id: &Uuid) -> Result<Option<RelayTx>, StoreError> {
        self.get(cf::RELAY, &tx_key(id))
    }

    /// The next nonce of a wallet (a Safe's, or an owner's at the relay hub).
    pub fn relay_nonce(&self, wallet: &str) -> Result<u64, StoreError> {
        Ok(self.get_raw(cf::RELAY, &nonce_key(wallet))?.and_then(|v| v.try_into().ok()).map_or(0, u64::from_be_bytes))
    }

    pub fn wallet_deployed(&self, wallet: &str) -> Result<bool, StoreError> {
        Ok(self.get_raw(cf::RELAY, &deployed_key(wallet))?.is_some())
    }

    /// Up to `limit` ids after `skip`, newest first: of the transactions an owner signed
    /// (`from`), or that a key submitted (`submitter`).
    pub fn relay_txs_of(
        &self,
        from: Option<&str>,
        submitter: Option<&str>,
        skip: usize,
        limit: usize,
    ) -> Result<Vec<Uuid>, StoreError> {
        let prefix = match (from, submitter) {
            (Some(f), _) => by_from_prefix(f),
            (None, Some(s)) => by_submitter_prefix(s),
            (None, None) => return Ok(Vec::new()),
        };
        let (mut ids, mut seen) = (Vec::new(), 0usize);
        self.walk(cf::RELAY, &prefix, None, true, |k, _| {
            seen += 1;
            if seen > skip {
                if let Some(id) = k.get(k.len().saturating_sub(16)..).and_then(|b| Uuid::from_slice(b).ok()) {
                    ids.push(id);
                }
            }
            if ids.len() >= limit {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })?;
        Ok(ids)
    }
}

impl Batch {
    /// A new transaction, indexed under its owner and its submitter.
    pub fn add_relay_tx(&mut self, tx: &RelayTx) {
        self.put(cf::RELAY, tx_key(&tx.id), encode(tx));
        self.put(cf::RELAY, indexed(by_from_prefix(&tx.from), tx.created_at, &tx.id), Vec::new());
        self.put(cf::RELAY, indexed(by_submitter_prefix(&tx.owner), tx.created_at, &tx.id), Vec::new());
    }

    pub fn put_relay_nonce(&mut self, wallet: &str, nonce: u64) {
        self.put(cf::RELAY, nonce_key(wallet), nonce.to_be_bytes().to_vec());
    }

    pub fn put_wallet_deployed(&mut self, wallet: &str) {
        self.put(cf::RELAY, deployed_key(wallet), Vec::new());
    }
}
