//! Chain mode: a resolved market's payouts reported to the chain (docs/operating/settlement.md).
//!
//! Resolving a market in chain mode records its [`PayoutReport`] as due, in the resolution's
//! own writes. The settlement worker sends each due report as predex's operator, the
//! oracle of the conditions it prepares ([`Chain::payout_call`]): the transaction is
//! recorded with the report (synced) before it is broadcast, then followed as a
//! settlement is — MINED, and at `confirmations` CONFIRMED or FAILED — so it is sent once
//! across restarts and re-broadcast unchanged when the node loses it. A report the node's
//! estimate refuses is FAILED with the reason, unless the condition's payouts are on chain
//! already (CONFIRMED, nothing sent).

use alloy_network::TransactionBuilder;
use alloy_primitives::B256;
use alloy_provider::Provider;

use crate::app::AppState;
use crate::chain::{revert_reason, sign_record, Chain, LastTx};
use crate::domain::chain::{ChainTx, PayoutReport, ReportState};
use crate::store::{Batch, StoreError};

/// A newly resolved market's report, due (nothing when one is recorded already).
pub fn due(s: &AppState, condition_id: &str, winner: u8, batch: &mut Batch) -> Result<(), StoreError> {
    if s.chain.is_some() && s.store.payout_report(condition_id)?.is_none() {
        batch.put_payout_report(&PayoutReport {
            condition_id: condition_id.to_string(),
            winner,
            state: ReportState::Pending,
            hash: None,
            error: None,
        });
    }
    Ok(())
}

/// Signs, records and broadcasts every due report not sent yet; answers the recorded
/// transactions (the worker follows them with its other transactions in flight).
pub async fn send_due(s: &AppState) -> anyhow::Result<Vec<ChainTx>> {
    let due: Vec<PayoutReport> =
        s.store.payout_reports()?.into_iter().filter(|r| r.state == ReportState::Pending && r.hash.is_none()).collect();
    let mut sent = Vec::new();
    if due.is_empty() {
        return Ok(sent);
    }
    let chain = &s.chain.as_ref().expect("chain mode").link;
    for r in due {
        if let Some(record) = send(s, chain, r).await? {
            sent.push(record);
        }
    }
    Ok(sent)
}

async fn send(s: &AppState, chain: &Chain, mut r: PayoutReport) -> anyhow::Result<Option<ChainTx>> {
    let p = &chain.provider;
    let condition: B256 = r.condition_id.parse().map_err(|_| anyhow::anyhow!("condition id {}", r.condition_id))?;
    let refused = |mut r: PayoutReport, why: String| {
        tracing::warn!(condition = %r.condition_id, reason = %why, "payouts not reported: nothing sent");
        r.state = ReportState::Failed;
        r.error = Some(why);
        r
    };
    let call = match chain.payout_call(condition, r.winner).await? {
        Ok(call) => call.with_chain_id(s.config.chain_id),
        Err(why) => return settle_unsent(s, refused(r, why)).await,
    };
    let gas = match p.estimate_gas(call.clone()).await {
        Ok(g) => g,
        // Not the report's fault: it stays due until the operator is funded.
        Err(e) if crate::chain::short_of_gas(&e) => {
            crate::app::onchain::gas_short(s, true);
            return Ok(None);
        }
        // The node says it reverts: reported already (by an earlier run's transaction
        // whose outcome this one did not see, or outside predex), or not predex's to report.
        Err(e) if e.as_error_resp().is_some() => {
            let r = if chain.payouts_reported(condition).await? {
                PayoutReport { state: ReportState::Confirmed, ..r }
            } else {
                refused(r, revert_reason(&e))
            };
            return settle_unsent(s, r).await;
        }
        Err(e) => return Err(e.into()),
    };
    let fees = p.estimate_eip1559_fees().await?;
    let mut sender = chain.operator.sending.lock().await;
    // The node's count again: the operator may have sent from its key outside predex.
    sender.forget();
    let nonce = sender.nonce(chain).await?;
    let record = ChainTx {
        report: Some(r.condition_id.clone()),
        ..sign_record(call, &chain.operator.wallet, nonce, gas, fees).await?
    };
    r.hash = Some(record.hash);
    let mut b = Batch::default();
    b.put_payout_report(&r);
    b.put_chain_tx(&record);
    // Durable before it can be mined.
    if let Err(e) = s.commit(b).await {
        sender.forget();
        return Err(e.into());
    }
    sender.used(nonce);
    *chain.last_tx.lock() = Some(LastTx { hash: B256::from(record.hash), at: record.sent_at, status: "sent" });
    // Recorded: the worker's next passes send it again.
    if let Some(e) = crate::app::onchain::broadcast(s, &record).await {
        tracing::warn!(nonce, hash = %B256::from(record.hash), error = %e, "payout report not broadcast");
    }
    Ok(Some(record))
}

/// A report decided without a transaction.
async fn settle_unsent(s: &AppState, r: PayoutReport) -> anyhow::Result<Option<ChainTx>> {
    let mut b = Batch::default();
    b.put_payout_report(&r);
    s.commit(b).await?;
    Ok(None)
}

/// The report is now sent as (or was mined as) the transaction `hash`.
pub fn rehash(s: &AppState, condition_id: &str, hash: [u8; 32], batch: &mut Batch) -> Result<(), StoreError> {
    if let Some(mut r) = s.store.payout_report(condition_id)? {
        r.hash = Some(hash);
        batch.put_payout_report(&r);
    }
    Ok(())
}

/// The report's transaction is mined (not yet at its confirmations).
pub fn mined(s: &AppState, condition_id: &str, batch: &mut Batch) -> Result<(), StoreError> {
    if let Some(mut r) = s.store.payout_report(condition_id)?.filter(|r| r.state == ReportState::Pending) {
        r.state = ReportState::Mined;
        batch.put_payout_report(&r);
    }
    Ok(())
}

/// The report's transaction is at its confirmations: CONFIRMED, or FAILED with the
/// reason it reverted.
pub fn decided(
    s: &AppState,
    condition_id: &str,
    outcome: Result<(), String>,
    batch: &mut Batch,
) -> Result<(), StoreError> {
    if let Some(mut r) = s.store.payout_report(condition_id)? {
        match outcome {
            Ok(()) => r.state = ReportState::Confirmed,
            Err(why) => {
                tracing::warn!(condition = condition_id, reason = %why, "payout report reverted on chain");
                r.state = ReportState::Failed;
                r.error = Some(why);
            }
        }
        batch.put_payout_report(&r);
    }
    Ok(())
}
