//! Chain mode's watch on what makers do on the exchanges themselves (docs/operating/settlement.md):
//! an order cancelled with `cancelOrder` (its `OrderCancelled` log) and every order signed
//! with a nonce the maker has moved past with `incrementNonce` can no longer settle, so
//! predex cancels them, within a pass or two of the settlement worker, and refuses them
//! if they are sent again (a known order id; a stale nonce). On the version 2 exchanges a
//! maker stops its orders with `pauseUser` (its `UserPaused` log): predex cancels them all
//! and refuses the maker's orders until its `UserUnpaused`.
//!
//! Balances follow the chain: the collateral's and ConditionalTokens' logs of the same
//! blocks say whose collateral or positions changed — a transfer in or out, an allowance,
//! a split or merge it sent itself, an operator's approval — and `onchain::follow` reads
//! those accounts again.
//!
//! Logs are read block range by block range from the last block applied, which is kept in
//! the store, so a cancellation made while predex was down is applied at its next start.
//! `incrementNonce` leaves no log: the nonces of the makers with open orders are read
//! every few seconds, and a maker's the first time it places an order
//! (`onchain::ensure`).

use std::sync::Arc;

use alloy_provider::Provider;

use super::AppState;
use crate::domain::now_secs;
use crate::store::Batch;

/// Blocks of logs read per pass at most (RPC providers bound a log query's range).
const BLOCKS_PER_PASS: u64 = 2_000;
/// Seconds between two reads of the open makers' nonces.
const NONCE_SECS: u64 = 2;

pub struct ChainWatch {
    state: Arc<AppState>,
    /// The last block whose logs are applied (start sets it for a new data directory).
    through: Option<u64>,
    nonces_read_at: u64,
}

impl ChainWatch {
    pub fn new(state: Arc<AppState>) -> anyhow::Result<ChainWatch> {
        let through = state.store.chain_watched_through()?;
        Ok(ChainWatch { state, through, nonces_read_at: 0 })
    }

    /// One pass: the logs of the blocks since the last, and the nonces when they are due.
    /// Returns how many open orders it cancelled, and what the collateral's and
    /// ConditionalTokens' logs say changed for whom (`onchain::follow` reads it again).
    pub async fn pass(&mut self) -> anyhow::Result<(usize, Vec<crate::chain::WalletChange>)> {
        let s = &self.state;
        let chain = &s.chain.as_ref().expect("chain mode").link;
        let latest = chain.provider.get_block_number().await?;
        let (mut cancelled, mut changed) = (0, Vec::new());
        // Without a recorded start (start records one), the head: no order of this data directory is older.
        let from = self.through.map_or(latest, |b| b + 1);
        if from <= latest {
            let to = latest.min(from + BLOCKS_PER_PASS - 1);
            // Version 2's exchanges log pauses; version 1's, cancelled orders.
            let ids: Vec<_> = if chain.settings.order_version == 2 {
                for (maker, paused) in chain.maker_pauses(from, to).await? {
                    cancelled += apply_pause(s, &format!("{maker:#x}"), paused).await?;
                }
                Vec::new()
            } else {
                chain.cancelled_orders(from, to).await?.iter().map(crate::auth::order_id).collect()
            };
            changed = chain.wallet_changes(from, to).await?;
            let mut batch = Batch::default();
            for op in chain.ctf_operations(from, to).await? {
                ctf_activity(s, chain, &op, &mut batch).await?;
            }
            if !ids.is_empty() {
                let gone = s.engine.cancel_signed(ids).await?;
                for id in &gone {
                    tracing::info!(order = %id, "order cancelled on the exchange by its maker");
                }
                cancelled += gone.len();
            }
            batch.put_chain_watched_through(to);
            s.commit(batch).await?;
            self.through = Some(to);
        }
        let now = now_secs();
        if chain.settings.order_version == 1 && now.saturating_sub(self.nonces_read_at) >= NONCE_SECS {
            // The makers with open orders, and the ones seen at admission lately (a maker
            // with no open order may move its nonce, and its next orders must follow).
            let mut makers: std::collections::BTreeMap<String, u64> =
                s.chain.as_ref().expect("chain mode").recent_makers(now).into_iter().collect();
            for (maker, nonce) in s.engine.open_makers().await? {
                let known = makers.entry(maker).or_default();
                *known = (*known).max(nonce);
            }
            for (maker, known) in makers {
                cancelled += raise_nonce(s, &maker, known).await?;
            }
            self.nonces_read_at = now;
        }
        Ok((cancelled, changed))
    }
}

/// The activity rows of a split, merge, conversion or redemption a wallet did on chain in
/// the venue's markets, written with the watch's progress (so once): the time is the block's,
/// the size the sets split or merged — for a redemption the collateral paid, which for a
/// resolved binary market is the winning tokens burned (the log does not say how many
/// losing ones went with them).
async fn ctf_activity(
    s: &AppState,
    chain: &crate::chain::Chain,
    op: &crate::chain::CtfOperation,
    batch: &mut Batch,
) -> anyhow::Result<()> {
    use crate::domain::analytics::{CtfActivity, CtfKind};
    use crate::domain::Amount;
    let time = || async {
        anyhow::Ok(match op.time {
            Some(t) => t,
            None => match chain.provider.get_block_by_number(op.block.into()).await? {
                Some(b) => b.header.timestamp,
                None => now_secs(),
            },
        })
    };
    let rows = if op.kind == CtfKind::Conversion {
        // As the ledger writes a conversion: a row per question given (the first with
        // the collateral paid, before the market's fee).
        let request = crate::app::ctf::ConvertRequest {
            market_id: format!("{}", op.condition),
            index_set: crate::domain::NumberText::Text(op.index_set.to_string()),
            amount: op.amount.to_string(),
            address: None,
        };
        let Ok(plan) = crate::app::ctf::plan_convert(s, &request) else { return Ok(()) };
        crate::app::ctf::activity_rows(&plan, op.tx.0, time().await?)
    } else {
        let Some(view) = s.registry.condition(&format!("{}", op.condition)) else { return Ok(()) };
        let amount = Amount(u64::try_from(op.amount).unwrap_or(u64::MAX));
        vec![CtfActivity {
            kind: op.kind,
            condition_id: view.market.condition_id.clone(),
            market_idx: view.market.idx,
            size: amount,
            usdc_size: amount,
            tx_hash: op.tx.0,
            time: time().await?,
        }]
    };
    for (i, row) in rows.iter().enumerate() {
        // Ordered by the block's time, then (blocks of one second: a development chain's)
        // by the block and the log's place in it.
        let micros = row.time * 1_000_000 + (op.block % 1000) * 1000 + (op.log_index % 100) * 10 + i as u64 % 10;
        batch.add_activity(&format!("{:#x}", op.wallet), micros, row);
    }
    Ok(())
}

/// Reads `maker`'s nonce on the exchanges; when it is above `known` (what its orders are
/// placed with), predex's becomes it and the maker's open orders are cancelled. Returns
/// how many.
pub async fn raise_nonce(s: &AppState, maker: &str, known: u64) -> anyhow::Result<usize> {
    let on = s.chain.as_ref().expect("chain mode");
    let onchain = on.link.maker_nonce(maker.parse()?).await?;
    on.maker_read(maker, onchain, now_secs());
    if onchain <= known {
        return Ok(0);
    }
    let (_, gone) = s.engine.raise_nonce(maker.to_string(), onchain).await?;
    tracing::info!(%maker, nonce = onchain, cancelled = gone.len(), "maker's nonce raised on the exchange");
    Ok(gone.len())
}

/// A maker paused itself on the version 2 exchanges (`paused`) or unpaused itself:
/// predex's view follows, and a pause cancels the maker's open orders. Returns how many.
async fn apply_pause(s: &AppState, maker: &str, paused: bool) -> anyhow::Result<usize> {
    s.chain.as_ref().expect("chain mode").set_paused(maker, paused);
    if !paused {
        tracing::info!(%maker, "maker unpaused on the exchange");
        return Ok(0);
    }
    let gone = s.engine.cancel_maker(maker.to_string()).await?;
    tracing::info!(%maker, cancelled = gone.len(), "maker paused on the exchange: its orders are cancelled");
    Ok(gone.len())
}
