//! The relayer in chain mode (docs/reference/relay.md): a wallet transaction its owner
//! signed, checked as in ledger mode, is sent by the relayer account (the operator's
//! unless `--relayer-key-file` names another) — the Safe factory's
//! `createProxy`, the Safe's `execTransaction`, the relay hub's `relayCall` — so the wallet
//! pays no gas. It goes the way of a settlement (`chain_settlement`): its gas estimated
//! (a revert is the transaction FAILED with the reason, nothing sent, the nonce unused),
//! signed with the account's next nonce, recorded with the relayer's record in one synced
//! batch, then broadcast; the settlement worker follows it to MINED and CONFIRMED (or
//! FAILED) and reads the wallet's balances from the chain again.

use alloy_network::TransactionBuilder;
use alloy_primitives::{Address, Bytes, U256};
use alloy_provider::Provider;
use alloy_rpc_types_eth::TransactionRequest;

use super::RelayError;
use crate::app::AppState;
use crate::chain::{revert_reason, ISafe};
use crate::domain::chain::ChainTx;
use crate::domain::relay::{RelayKind, RelayState, RelayTx};
use crate::domain::{now_millis, COLLATERAL};
use crate::store::Batch;

fn unavailable(e: impl std::fmt::Display) -> RelayError {
    RelayError::Unavailable(format!("chain: {e}"))
}

/// Whether `wallet` holds code on chain (a Safe or proxy wallet is deployed).
pub async fn deployed(s: &AppState, wallet: Address) -> Result<bool, RelayError> {
    let chain = &s.chain.as_ref().expect("chain mode").link;
    Ok(!chain.provider.get_code_at(wallet).await.map_err(unavailable)?.is_empty())
}

/// The wallet's nonce on chain: a Safe's own (0 before it is deployed), or its owner's at
/// the relay hub for a proxy wallet.
pub async fn chain_nonce(s: &AppState, kind: RelayKind, owner: Address, wallet: Address) -> Result<u64, RelayError> {
    let chain = &s.chain.as_ref().expect("chain mode").link;
    let n = match kind {
        RelayKind::Proxy => crate::chain::IRelayHub::new(s.relay_contracts.relay_hub, &chain.provider)
            .getNonce(owner)
            .call()
            .await
            .map_err(unavailable)?,
        _ if !deployed(s, wallet).await? => U256::ZERO,
        _ => ISafe::new(wallet, &chain.provider).nonce().call().await.map_err(unavailable)?,
    };
    u64::try_from(n).map_err(|_| unavailable("wallet nonce out of range"))
}

/// Sends `input` to `to` for the relayer's transaction `tx` (its wallet's nonce `nonce`,
/// none for a deployment): the record as written — STATE_NEW with the transaction's hash
/// when recorded, STATE_EXECUTED once the node took it, or STATE_FAILED with the reason
/// when the call would revert.
pub async fn send(
    s: &AppState,
    mut tx: RelayTx,
    to: Address,
    input: Vec<u8>,
    nonce: Option<u64>,
) -> Result<RelayTx, RelayError> {
    let on = s.chain.as_ref().expect("chain mode");
    let chain = &on.link;
    let p = &chain.provider;
    let relayer = chain.relayer();
    let request = TransactionRequest::default()
        .with_from(relayer.address)
        .with_to(to)
        .with_input(Bytes::from(input))
        .with_chain_id(s.config.chain_id);
    let gas = match p.estimate_gas(request.clone()).await {
        Ok(g) => g,
        Err(e) if e.as_error_resp().is_some() => {
            tx.state = RelayState::Failed;
            tx.error = Some(revert_reason(&e));
            let mut b = Batch::default();
            b.add_relay_tx(&tx);
            s.commit(b).await?;
            return Ok(tx);
        }
        Err(e) => return Err(unavailable(e)),
    };
    let fees = p.estimate_eip1559_fees().await.map_err(unavailable)?;
    let mut sender = relayer.sending.lock().await;
    // The node's count again: the account may have sent from its key outside predex.
    sender.forget();
    let account_nonce = sender.nonce(chain).await.map_err(unavailable)?;
    let signed = crate::chain::sign_record(request, &relayer.wallet, account_nonce, gas, fees)
        .await
        .map_err(|e| unavailable(format!("{e:#}")))?;
    let record = ChainTx { relay: Some(tx.id), account: chain.relayer.as_ref().map(|r| r.address.0 .0), ..signed };
    tx.hash = record.hash;
    tx.state = RelayState::New;
    let mut b = Batch::default();
    b.add_relay_tx(&tx);
    if let Some(n) = nonce {
        b.put_relay_nonce(&tx.wallet, n + 1);
    }
    b.put_chain_tx(&record);
    // Durable before it can be mined.
    if let Err(e) = s.commit(b).await {
        sender.forget();
        return Err(e.into());
    }
    sender.used(account_nonce);
    let broadcast = p.send_raw_transaction(&record.raw).await;
    drop(sender);
    let executed = match broadcast {
        // At the node: STATE_EXECUTED.
        Ok(_) => {
            let mut b = Batch::default();
            let moved = advance(s, &tx.id, RelayState::Executed, &mut b);
            match moved {
                Ok(true) => s.commit(b).await.map(|_| true),
                other => other,
            }
        }
        // Recorded: the settlement worker sends it again.
        Err(e) => {
            tracing::warn!(nonce = account_nonce, error = %e, "relayed transaction not broadcast");
            Ok(false)
        }
    };
    // The worker follows it from here: after the write above, so a state never goes back.
    on.relayed.lock().push(record);
    if executed? {
        tx.state = RelayState::Executed;
    }
    Ok(tx)
}

/// Moves the relayer's transaction `id` forward to `to` (NEW → EXECUTED → MINED), never
/// back; whether it moved.
fn advance(s: &AppState, id: &uuid::Uuid, to: RelayState, b: &mut Batch) -> Result<bool, crate::store::StoreError> {
    let rank = |st: RelayState| match st {
        RelayState::New => 0,
        RelayState::Executed => 1,
        RelayState::Mined => 2,
        RelayState::Confirmed | RelayState::Failed => 3,
    };
    let Some(mut tx) = s.store.relay_tx(id)? else { return Ok(false) };
    if rank(tx.state) >= rank(to) {
        return Ok(false);
    }
    tx.state = to;
    tx.updated_at = now_millis();
    b.add_relay_tx(&tx);
    Ok(true)
}

/// The relayer's transaction `id` MINED (its transaction has a successful receipt).
pub fn mined(s: &AppState, id: &uuid::Uuid, b: &mut Batch) -> Result<(), crate::store::StoreError> {
    advance(s, id, RelayState::Mined, b).map(|_| ())
}

/// The relayer's transaction `id` is now sent as (or was mined as) the transaction `hash`.
pub fn rehash(s: &AppState, id: &uuid::Uuid, hash: [u8; 32], b: &mut Batch) -> Result<(), crate::store::StoreError> {
    if let Some(mut tx) = s.store.relay_tx(id)? {
        tx.hash = hash;
        tx.updated_at = now_millis();
        b.add_relay_tx(&tx);
    }
    Ok(())
}

/// The relayer's transaction `id` decided at `confirmations`: CONFIRMED, or FAILED with the
/// revert's reason and the wallet's nonce it held free again. The record as written.
pub fn decided(
    s: &AppState,
    id: &uuid::Uuid,
    outcome: Result<(), String>,
    b: &mut Batch,
) -> Result<Option<RelayTx>, crate::store::StoreError> {
    let Some(mut tx) = s.store.relay_tx(id)? else { return Ok(None) };
    tx.updated_at = now_millis();
    match outcome {
        Ok(()) => tx.state = RelayState::Confirmed,
        Err(why) => {
            tx.state = RelayState::Failed;
            tx.error = Some(why);
            if let Ok(n) = tx.nonce.parse::<u64>() {
                if s.store.relay_nonce(&tx.wallet)? > n {
                    b.put_relay_nonce(&tx.wallet, n);
                }
            }
        }
    }
    b.add_relay_tx(&tx);
    Ok(Some(tx))
}

/// After a relayed transaction is decided: the wallet's balances read from the chain again
/// — its collateral, the tokens of the markets its calls named and every asset read for it
/// since start.
pub async fn refresh(s: &AppState, tx: &RelayTx) {
    let mut assets = vec![COLLATERAL.to_string()];
    for condition in super::conditions(s, tx) {
        if let Some(view) = s.registry.condition(&condition) {
            assets.extend(view.market.tokens.iter().map(|t| t.token_id.clone()));
        }
    }
    if let Some(on) = &s.chain {
        assets.extend(on.synced_assets(&tx.wallet));
    }
    assets.sort();
    assets.dedup();
    for asset in assets {
        if let Err(e) = crate::app::onchain::refresh(s, &tx.wallet, &asset).await {
            tracing::warn!(wallet = %tx.wallet, %asset, error = %e, "balance not read from the chain");
        }
    }
}
