//! Chain mode's settlement worker (docs/operating/settlement.md): each PENDING match — a taker and
//! the makers it met, one trade each — becomes one `matchOrders` transaction carrying the
//! orders as they were signed (version 1's call, or version 2's with the market's condition
//! and the fees the trades record), sent by the operator with consecutive nonces.
//!
//! A transaction is recorded (synced, `chain_txs`) before it is broadcast, and its record
//! is deleted in the batch that settles its trades, so at any start the records are the
//! transactions whose outcome is not applied: each is looked up by hash and broadcast
//! again, unchanged, if the node does not know it; trades newer than every record are sent
//! anew. Nothing is settled twice (a nonce is used once, and a recorded transaction is
//! only ever re-sent as it was) and nothing is dropped.
//!
//! A successful receipt makes its trades MINED, with the transaction's hash; at
//! `confirmations` it settles them: CONFIRMED when it succeeded, FAILED with the
//! exchange's custom error when it reverted. A match the
//! node's gas estimate already reverts is FAILED with that error and nothing is sent.
//!
//! The relayer's transactions and resolved markets' payout reports
//! ([`super::resolution::payouts`]) are recorded the same way and followed here with the
//! settlements.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use alloy_eips::eip2718::Encodable2718;
use alloy_network::TransactionBuilder;
use alloy_primitives::{Bytes, B256, U256};
use alloy_provider::Provider;
use alloy_rpc_types_eth::TransactionRequest;
use alloy_sol_types::SolCall;
use uuid::Uuid;

use super::AppState;
use crate::auth::SignedOrderFields;
use crate::chain::{
    exchange_order, exchange_order_v2, revert_reason, short_of_gas, sign_record, Chain, IExchange, IExchangeV2, LastTx,
    Sender,
};
use crate::domain::chain::ChainTx;
use crate::domain::{exchange_fee, now_secs, Amount, OrderRecord, Side, TradeRecord};
use crate::engine::Verdict;
use crate::store::Batch;

/// A recorded transaction's account (`None`: the operator) and nonce.
type TxKey = (Option<[u8; 20]>, u64);

/// PENDING trades taken per pass.
const TAKE: usize = 256;
/// A transaction not mined after this long is broadcast again (same bytes, same nonce).
const RESEND_SECS: u64 = 30;

pub struct ChainSettler {
    state: Arc<AppState>,
    rt: tokio::runtime::Runtime,
    /// Recorded transactions whose outcome is not applied, by account and nonce.
    in_flight: BTreeMap<TxKey, ChainTx>,
    /// The last trade sequence sent (or failed before sending).
    sent_through: u64,
    /// Whether the records found at start have been looked up on the node.
    restored: bool,
    /// The transactions in flight whose trades are marked MINED.
    mined: HashSet<TxKey>,
    /// When each transaction in flight was last broadcast again, unchanged.
    resent: HashMap<TxKey, u64>,
    /// Makers' own cancellations on the exchanges.
    watch: super::chain_watch::ChainWatch,
}

impl ChainSettler {
    pub fn new(state: Arc<AppState>) -> anyhow::Result<ChainSettler> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let in_flight: BTreeMap<TxKey, ChainTx> = state.store.chain_txs()?.into_iter().map(|t| (t.key(), t)).collect();
        let sent_through = in_flight.values().map(|t| t.last_seq).max().unwrap_or(0);
        let watch = super::chain_watch::ChainWatch::new(state.clone())?;
        Ok(ChainSettler {
            state,
            rt,
            in_flight,
            sent_through,
            restored: false,
            mined: HashSet::new(),
            resent: HashMap::new(),
            watch,
        })
    }

    async fn pass(&mut self) -> anyhow::Result<(usize, usize, usize, usize)> {
        let (confirmed, failed) = self.outcomes().await?;
        let (sent, refused) = self.send_new().await?;
        let reports = super::resolution::payouts::send_due(&self.state).await?;
        let sent = sent + reports.len();
        for r in reports {
            self.in_flight.insert(r.key(), r);
        }
        let (cancelled, changed) = self.watch.pass().await?;
        super::onchain::follow(&self.state, changed).await;
        Ok((sent, confirmed, failed + refused, cancelled))
    }

    /// Applies the receipts of the transactions in flight, each account's in nonce order,
    /// as far as they are at `confirmations`; broadcasts again what the node lost or left
    /// unmined. An account whose next transaction is not decided yet holds back its later
    /// ones, not the other account's.
    async fn outcomes(&mut self) -> anyhow::Result<(usize, usize)> {
        let on = self.state.chain.as_ref().expect("chain mode");
        let chain = &on.link;
        for r in on.relayed.lock().drain(..) {
            self.in_flight.insert(r.key(), r);
        }
        let p = &chain.provider;
        let latest = p.get_block_number().await?;
        let depth = chain.settings.confirmations - 1;
        let (mut decided, mut records, mut done, mut mined) = (Vec::new(), Batch::default(), Vec::new(), Vec::new());
        // What a relayed transaction or a payout report records once mined.
        let (mut mined_records, mut relayed) = (Batch::default(), Vec::new());
        let restoring = !self.restored;
        // Accounts whose next transaction is not decided: their later ones wait.
        let mut waiting = HashSet::new();
        for (key, tx) in self.in_flight.iter_mut() {
            if waiting.contains(&tx.account) {
                continue;
            }
            let (hash, receipt) = receipt_of(p, tx).await?;
            match receipt {
                Some(r) => {
                    let block = r.block_number.unwrap_or(u64::MAX);
                    if r.status() && self.mined.insert(*key) {
                        if hash.0 != tx.hash {
                            // A transaction it replaced was mined, not the last one: its
                            // hash is the one shown (written before the records below
                            // read theirs).
                            let mut b = Batch::default();
                            rehash(&self.state, tx, hash.0, &mut b)?;
                            self.state.commit(b).await?;
                        }
                        match (tx.relay, &tx.report) {
                            (Some(id), _) => super::relayer::chain::mined(&self.state, &id, &mut mined_records)?,
                            (None, Some(c)) => super::resolution::payouts::mined(&self.state, c, &mut mined_records)?,
                            (None, None) => mined.push((tx.trades.clone(), format!("{hash}"))),
                        }
                    }
                    if block.saturating_add(depth) > latest {
                        waiting.insert(tx.account);
                        continue;
                    }
                    let outcome =
                        if r.status() { Ok(format!("{hash}")) } else { Err(replay_revert(chain, tx, block).await) };
                    let status = if r.status() { "confirmed" } else { "failed" };
                    *chain.last_tx.lock() = Some(LastTx { hash, at: now_secs(), status });
                    match (tx.relay, &tx.report) {
                        (Some(id), _) => relayed.extend(super::relayer::chain::decided(
                            &self.state,
                            &id,
                            outcome.map(|_| ()),
                            &mut records,
                        )?),
                        (None, Some(c)) => {
                            super::resolution::payouts::decided(&self.state, c, outcome.map(|_| ()), &mut records)?
                        }
                        (None, None) => {
                            let verdict = match outcome {
                                Ok(h) => Verdict::Confirmed(h),
                                Err(why) => {
                                    tracing::warn!(trades = ?tx.trades, %hash, reason = %why, "settlement reverted on chain");
                                    Verdict::Failed { why, hash: Some(format!("{hash}")) }
                                }
                            };
                            decided.extend(tx.trades.iter().map(|id| (*id, verdict.clone())));
                        }
                    }
                    records.delete_chain_tx(tx);
                    done.push(*key);
                }
                None => {
                    let now = now_secs();
                    // Mined, and now in no block: reorganised away before its confirmations.
                    // Sent again as recorded, at once (the node may have dropped it).
                    let vanished = self.mined.remove(key);
                    if vanished {
                        tracing::warn!(nonce = tx.nonce, %hash, "transaction reorganised out of the chain: sent again");
                    }
                    let last = if vanished { 0 } else { self.resent.get(key).copied().unwrap_or(0).max(tx.sent_at) };
                    // (Not while the operator cannot pay: its fees are not why it waits.)
                    let out_of_gas = self.state.exported.chain_out_of_gas.get() == 1;
                    let stuck = !restoring
                        && !out_of_gas
                        && now.saturating_sub(tx.sent_at) >= self.state.config.replace_after_secs;
                    if stuck {
                        // Left in the pool (its fees below what the node now takes):
                        // the same nonce, signed again at higher fees.
                        if let Err(e) = replace(&self.state, chain, tx).await {
                            tracing::warn!(nonce = tx.nonce, %hash, error = %e, "stuck transaction not replaced");
                        }
                    } else if restoring || now.saturating_sub(last) >= RESEND_SECS || out_of_gas {
                        // (Every pass while the operator could not pay: sent as soon as it can.)
                        if restoring && p.get_transaction_by_hash(hash).await?.is_some() {
                            continue;
                        }
                        // Unchanged bytes: the same nonce, the same hash.
                        if let Some(e) = super::onchain::broadcast(&self.state, tx).await {
                            tracing::warn!(nonce = tx.nonce, %hash, error = %e, "transaction not re-broadcast");
                        }
                        self.resent.insert(*key, now);
                    }
                    if !restoring {
                        waiting.insert(tx.account);
                    }
                }
            }
        }
        self.restored = true;
        // MINED first, then, once deep enough (at once with one confirmation), settled.
        for (ids, hash) in mined {
            self.state.engine.mark_mined(ids, hash).await?;
        }
        if !mined_records.is_empty() {
            self.state.commit(mined_records).await?;
        }
        if done.is_empty() {
            return Ok((0, 0));
        }
        let ids: Vec<Uuid> = decided.iter().map(|(id, _)| *id).collect();
        let (c, f) = if decided.is_empty() {
            self.state.commit(records).await?;
            (0, 0)
        } else {
            self.state.engine.settle_decided(decided, records).await?
        };
        for n in done {
            self.in_flight.remove(&n);
            self.mined.remove(&n);
            self.resent.remove(&n);
        }
        self.refresh_parties(&ids).await;
        for tx in &relayed {
            super::relayer::chain::refresh(&self.state, tx).await;
        }
        Ok((c, f))
    }

    /// The balances of everyone the settled trades paid or credited, read again from the
    /// chain.
    async fn refresh_parties(&self, ids: &[Uuid]) {
        let mut accounts = HashSet::new();
        for id in ids {
            let Ok(Some(t)) = self.state.store.get_trade(id) else { continue };
            for l in t.legs() {
                accounts.insert((l.address.to_string(), l.pays().0.to_string()));
                accounts.insert((l.address.to_string(), l.receives().0.to_string()));
            }
        }
        for (address, asset) in accounts {
            if let Err(e) = super::onchain::refresh(&self.state, &address, &asset).await {
                tracing::warn!(%address, %asset, error = %e, "balance not read from the chain");
            }
        }
    }

    /// Sends the PENDING matches newer than everything sent, one transaction per call
    /// ([`matches`]). A pass estimates every call's gas at once, signs the ones that
    /// would not revert with consecutive nonces, records them all in one synced batch, and
    /// only then broadcasts them: one round trip and one sync per pass, not per call.
    async fn send_new(&mut self) -> anyhow::Result<(usize, usize)> {
        let trades = self.state.engine.pending_after(self.sent_through, TAKE).await?;
        if trades.is_empty() {
            return Ok((0, 0));
        }
        let state = self.state.clone();
        let chain = &state.chain.as_ref().expect("chain mode").link;
        let calls = settlement_calls(&state, chain, &trades);
        let mut sender = chain.operator.sending.lock().await;
        // Once per pass: the node's count of the operator's transactions.
        sender.forget();
        let pass = sign_pass(chain, &mut sender, calls, self.sent_through).await?;
        // Durable before any can be mined.
        if !pass.records.is_empty() {
            if let Err(e) = state.commit(pass.batch).await {
                sender.forget();
                return Err(e.into());
            }
        }
        broadcast(&state, chain, &pass.records).await;
        if pass.short_of_gas {
            super::onchain::gas_short(&state, true);
        }
        drop(sender);
        let sent = pass.records.len();
        for r in pass.records {
            self.in_flight.insert(r.key(), r);
        }
        self.sent_through = pass.through;
        let mut refused = 0;
        if !pass.failed.is_empty() {
            let ids: Vec<Uuid> = pass.failed.iter().map(|(id, _)| *id).collect();
            refused = self.state.engine.settle_decided(pass.failed, Batch::default()).await?.1;
            self.refresh_parties(&ids).await;
        }
        Ok((sent, refused))
    }
}

/// A match that cannot settle (its call not built, or the node's estimate says it
/// reverts): FAILED with `why`, nothing sent, logged once.
fn refuse(pass: &mut Pass, ids: Vec<Uuid>, seq: u64, why: String) {
    tracing::warn!(trades = ?ids, reason = %why, "settlement refused: nothing sent");
    pass.failed.extend(ids.into_iter().map(|id| (id, Verdict::Failed { why: why.clone(), hash: None })));
    pass.through = seq;
}

/// What a pass signed and recorded, and what it found cannot settle.
struct Pass {
    /// The signed transactions, in nonce order, all in `batch`.
    records: Vec<ChainTx>,
    batch: Batch,
    /// Trades whose call would revert or cannot be built: FAILED, nothing sent.
    failed: Vec<(Uuid, Verdict)>,
    /// The last trade sequence recorded or failed, in order: what the next pass starts after.
    through: u64,
    /// The node said the operator cannot pay for a call's gas: it and the rest wait.
    short_of_gas: bool,
}

/// Estimates every call's gas at once and signs, in order, those that would not revert with
/// consecutive nonces. A node that cannot be reached ends the pass early: the rest wait for
/// the next one.
async fn sign_pass(chain: &Chain, sender: &mut Sender, calls: Vec<Call>, after: u64) -> anyhow::Result<Pass> {
    let p = &chain.provider;
    let fees = p.estimate_eip1559_fees().await?;
    let mut estimates = futures_util::future::join_all(
        calls
            .iter()
            .filter_map(|(tx, _, _)| tx.as_ref().ok())
            .map(|tx| std::future::IntoFuture::into_future(p.estimate_gas(tx.clone()))),
    )
    .await
    .into_iter();
    let mut pass =
        Pass { records: Vec::new(), batch: Batch::default(), failed: Vec::new(), through: after, short_of_gas: false };
    for (tx, ids, seq) in calls {
        let (tx, gas) = match tx {
            Err(why) => {
                refuse(&mut pass, ids, seq, why);
                continue;
            }
            Ok(tx) => (tx, estimates.next().expect("an estimate per call")),
        };
        let gas = match gas {
            Ok(g) => g,
            // Not the call's fault: it and the rest wait until the operator is funded.
            Err(e) if short_of_gas(&e) => {
                pass.short_of_gas = true;
                break;
            }
            // The node's answer that the call reverts: FAILED, nothing sent.
            Err(e) if e.as_error_resp().is_some() => {
                refuse(&mut pass, ids, seq, revert_reason(&e));
                continue;
            }
            // The node unreachable, a connection dropped: what was signed so far is
            // recorded and sent; this call and the rest wait for the next pass.
            Err(e) => {
                tracing::warn!(error = %e, "settlement gas not estimated");
                break;
            }
        };
        let nonce = sender.nonce(chain).await?;
        let record =
            ChainTx { trades: ids, last_seq: seq, ..sign_record(tx, &chain.operator.wallet, nonce, gas, fees).await? };
        pass.batch.put_chain_tx(&record);
        sender.used(nonce);
        pass.records.push(record);
        pass.through = seq;
    }
    Ok(pass)
}

/// A match's `matchOrders` transaction, or why it cannot settle; with its trades and its
/// last trade sequence.
type Call = (Result<TransactionRequest, String>, Vec<Uuid>, u64);

/// Each match's [`Call`].
fn settlement_calls(state: &AppState, chain: &Chain, trades: &[Arc<TradeRecord>]) -> Vec<Call> {
    matches(trades, chain.settings.order_version)
        .into_iter()
        .map(|group| {
            let call = match chain.settings.order_version {
                2 => match_call_v2(state, group),
                _ => match_call(state, group).map(|(call, neg_risk)| (call.abi_encode(), neg_risk)),
            };
            let tx = call.map(|(input, neg_risk)| {
                let exchange = if neg_risk { chain.settings.neg_risk_exchange } else { chain.settings.exchange };
                TransactionRequest::default()
                    .with_from(chain.operator.address)
                    .with_to(exchange)
                    .with_input(Bytes::from(input))
                    .with_chain_id(state.config.chain_id)
            });
            (tx, group.iter().map(|t| t.id).collect(), group.last().expect("a match has a trade").seq)
        })
        .collect()
}

/// Broadcasts recorded transactions; one the node does not take is sent again by later
/// passes.
async fn broadcast(state: &AppState, chain: &Chain, records: &[ChainTx]) {
    for r in records {
        *chain.last_tx.lock() = Some(LastTx { hash: B256::from(r.hash), at: r.sent_at, status: "sent" });
        // Recorded: the next passes send it again.
        if let Some(e) = super::onchain::broadcast(state, r).await {
            tracing::warn!(nonce = r.nonce, hash = %B256::from(r.hash), error = %e, "settlement transaction not broadcast");
        }
    }
}

/// The settlement worker of chain mode.
impl ChainSettler {
    /// One pass: outcomes of the transactions in flight, then the new matches sent. A line
    /// for the log when something happened.
    pub fn run_pass(&mut self) -> Option<String> {
        let rt = std::mem::replace(&mut self.rt, tokio::runtime::Builder::new_current_thread().build().ok()?);
        let r = rt.block_on(self.pass());
        self.rt = rt;
        match r {
            Ok((0, 0, 0, 0)) => None,
            Ok((sent, confirmed, failed, cancelled)) => {
                self.state.exported.settled(confirmed, failed);
                Some(format!(
                    "chain settlement: {sent} transactions sent, {confirmed} trades confirmed, {failed} failed, \
                     {cancelled} orders cancelled on the exchange"
                ))
            }
            Err(e) => Some(format!("chain settlement: {e:#}")),
        }
    }
}

/// The PENDING trades split into `matchOrders` calls: consecutive trades of one taker
/// order, one call each. A version 1 exchange takes a taker's fee once per call, at the
/// price the call averaged, and predex records it per trade, at each trade's price: the
/// two agree when the order pays no fee and, rounding apart, below a price of 0.5;
/// elsewhere a call is cut where it would charge the taker another fee than its trades
/// record. A version 2 exchange is told the fees: a call holds all the taker's trades.
fn matches(trades: &[Arc<TradeRecord>], version: u8) -> Vec<&[Arc<TradeRecord>]> {
    let mut calls = Vec::new();
    for taker in trades.chunk_by(|a, b| a.taker_order_id == b.taker_order_id) {
        if version == 2 {
            calls.push(taker);
            continue;
        }
        let mut start = 0;
        for end in start + 2..=taker.len() {
            if !taker_fee_agrees(&taker[start..end]) {
                calls.push(&taker[start..end - 1]);
                start = end - 1;
            }
        }
        calls.push(&taker[start..]);
    }
    calls
}

/// Whether the contract's fee on the taker of one call over these trades equals the sum
/// of the taker fees they record.
fn taker_fee_agrees(call: &[Arc<TradeRecord>]) -> bool {
    let (mut making, mut taking, mut recorded) = (Amount::ZERO, Amount::ZERO, Amount::ZERO);
    for t in call {
        let [taker, _] = t.legs();
        making += taker.pays().1;
        let (_, net, fee) = taker.receives();
        taking += net + fee;
        recorded += fee;
    }
    let first = &call[0];
    let tokens = match first.side {
        Side::Buy => taking,
        Side::Sell => making,
    };
    exchange_fee(first.side, first.fee_rate_bps, tokens, making, taking) == recorded
}

/// The `matchOrders` call that settles a match, and whether it goes to the negative-risk
/// exchange. Each fill amount is in its order's maker-amount units: what that order pays.
fn match_call(s: &AppState, group: &[Arc<TradeRecord>]) -> Result<(IExchange::matchOrdersCall, bool), String> {
    let first = &group[0];
    let taker = signed_order(s, &first.taker_order_id)?;
    let neg_risk = s.registry.token(&first.token.token_id).is_some_and(|(m, _)| m.market.neg_risk);
    let mut taker_fill = U256::ZERO;
    let (mut makers, mut fills) = (Vec::new(), Vec::new());
    for t in group {
        let [tl, ml] = t.legs();
        taker_fill += U256::from(tl.pays().1.units());
        makers.push(signed_order(s, &t.maker_orders[0].order_id)?);
        fills.push(U256::from(ml.pays().1.units()));
    }
    Ok((
        IExchange::matchOrdersCall {
            takerOrder: taker,
            makerOrders: makers,
            takerFillAmount: taker_fill,
            makerFillAmounts: fills,
        },
        neg_risk,
    ))
}

/// The version 2 `matchOrders` call that settles a match (its calldata), and whether it
/// goes to the negative-risk exchange: the market's condition, each order's fill in its
/// maker-amount units and each order's fee in collateral, as the trades record them.
fn match_call_v2(s: &AppState, group: &[Arc<TradeRecord>]) -> Result<(Vec<u8>, bool), String> {
    let first = &group[0];
    let (view, _) = s
        .registry
        .token(&first.token.token_id)
        .ok_or_else(|| format!("trade {}: its token is in no market", first.id))?;
    let condition: B256 = view
        .market
        .condition_id
        .parse()
        .map_err(|_| format!("trade {}: the market's condition is not 32 bytes", first.id))?;
    let making = |l: &crate::domain::Leg| {
        U256::from(
            match l.side {
                Side::Buy => l.amount,
                Side::Sell => l.size,
            }
            .units(),
        )
    };
    let (mut taker_fill, mut taker_fee) = (U256::ZERO, U256::ZERO);
    let (mut makers, mut fills, mut fees) = (Vec::new(), Vec::new(), Vec::new());
    for t in group {
        let [tl, ml] = t.legs();
        taker_fill += making(&tl);
        taker_fee += U256::from(tl.fee.units());
        makers.push(signed_order_v2(s, &t.maker_orders[0].order_id)?);
        fills.push(making(&ml));
        fees.push(U256::from(ml.fee.units()));
    }
    let call = IExchangeV2::matchOrdersCall {
        conditionId: condition,
        takerOrder: signed_order_v2(s, &first.taker_order_id)?,
        makerOrders: makers,
        takerFillAmount: taker_fill,
        makerFillAmounts: fills,
        takerFeeAmount: taker_fee,
        makerFeeAmounts: fees,
    };
    Ok((call.abi_encode(), view.market.neg_risk))
}

/// A version 2 order as its maker signed it.
fn signed_order_v2(s: &AppState, id: &Uuid) -> Result<IExchangeV2::Order, String> {
    let (v1, salt, signature) = stored_order(s, id)?;
    let (timestamp, metadata, builder) =
        s.store.order_v2(id).map_err(|e| e.to_string())?.ok_or_else(|| format!("order {id} is no version 2 order"))?;
    let f = crate::auth::OrderFieldsV2 {
        salt,
        maker: v1.maker,
        signer: v1.signer,
        token_id: v1.token_id,
        maker_amount: v1.maker_amount,
        taker_amount: v1.taker_amount,
        side: v1.side,
        signature_type: v1.signature_type,
        timestamp,
        metadata,
        builder,
    };
    Ok(exchange_order_v2(&f, signature))
}

/// An order as its maker signed it.
fn signed_order(s: &AppState, id: &Uuid) -> Result<IExchange::Order, String> {
    let (fields, _, signature) = stored_order(s, id)?;
    Ok(exchange_order(&fields, signature))
}

/// What the store keeps of a signed order: its fields (version 1's form), its whole salt
/// and its signature.
fn stored_order(s: &AppState, id: &Uuid) -> Result<(SignedOrderFields, U256, Bytes), String> {
    let missing = || format!("order {id} not found for settlement");
    let o = s.store.get_order(id).map_err(|e| e.to_string())?.ok_or_else(missing)?;
    let signature = s.store.order_signature(id).map_err(|e| e.to_string())?.ok_or_else(missing)?;
    let signature =
        alloy_primitives::hex::decode(signature.trim()).map_err(|_| format!("order {id}: bad signature"))?;
    let salt = s.store.order_salt(&o).map_err(|e| e.to_string())?;
    let fields = fields(&o, salt).ok_or_else(|| format!("order {id}: bad fields"))?;
    Ok((fields, salt, Bytes::from(signature)))
}

fn fields(o: &OrderRecord, salt: U256) -> Option<SignedOrderFields> {
    Some(SignedOrderFields {
        salt,
        maker: o.maker.parse().ok()?,
        signer: o.signer.parse().ok()?,
        taker: o.taker.parse().ok()?,
        token_id: U256::from_str_radix(&o.token.token_id, 10).ok()?,
        maker_amount: U256::from(o.maker_amount.units()),
        taker_amount: U256::from(o.taker_amount.units()),
        expiration: U256::from(o.expiration),
        nonce: U256::from(o.nonce),
        fee_rate_bps: U256::from(o.fee_rate_bps),
        side: match o.side {
            Side::Buy => 0,
            Side::Sell => 1,
        },
        signature_type: o.signature_type,
    })
}

/// The receipt of a recorded transaction, looked up by its hash and then by the hashes it
/// replaced (newest first); with the hash found (the last one when none is mined).
async fn receipt_of(
    p: &alloy_provider::DynProvider,
    tx: &ChainTx,
) -> anyhow::Result<(B256, Option<alloy_rpc_types_eth::TransactionReceipt>)> {
    for h in std::iter::once(tx.hash).chain(tx.replaced.iter().rev().copied()) {
        if let Some(r) = p.get_transaction_receipt(B256::from(h)).await? {
            return Ok((B256::from(h), Some(r)));
        }
    }
    Ok((B256::from(tx.hash), None))
}

/// Signs a transaction the node leaves in its pool again — the same nonce, call and gas
/// limit, each fee the node's estimate or 25% above the last, whichever is higher — and
/// records it in place of the old one (whose hash it keeps: either may be mined) before
/// broadcasting it. What the relayer's record or a payout report shows follows the new hash.
async fn replace(state: &AppState, chain: &Chain, tx: &mut ChainTx) -> anyhow::Result<()> {
    use alloy_eips::eip2718::Decodable2718;
    let envelope = alloy_consensus::TxEnvelope::decode_2718(&mut &tx.raw[..])?;
    let from = tx.account.map_or(chain.operator.address, alloy_primitives::Address::from);
    let mut request = TransactionRequest::from_transaction_with_sender(envelope, from);
    let fees = chain.provider.estimate_eip1559_fees().await?;
    let bump = |old: Option<u128>, now: u128| now.max(old.unwrap_or(0).saturating_mul(5) / 4 + 1);
    let priority = bump(request.max_priority_fee_per_gas, fees.max_priority_fee_per_gas);
    let max = bump(request.max_fee_per_gas, fees.max_fee_per_gas).max(priority);
    request.set_max_priority_fee_per_gas(priority);
    request.set_max_fee_per_gas(max);
    let wallet = if tx.account.is_some() { &chain.relayer().wallet } else { &chain.operator.wallet };
    let envelope = request.build(wallet).await.map_err(|e| anyhow::anyhow!("sign: {e}"))?;
    let mut next = tx.clone();
    next.replaced.push(tx.hash);
    next.hash = envelope.tx_hash().0;
    next.raw = envelope.encoded_2718();
    next.sent_at = now_secs();
    let mut b = Batch::default();
    b.put_chain_tx(&next);
    rehash(state, &next, next.hash, &mut b)?;
    // Durable before it can be mined.
    state.commit(b).await?;
    tracing::warn!(nonce = tx.nonce, old = %B256::from(tx.hash), new = %B256::from(next.hash), max_fee = max,
        "transaction left in the pool replaced at higher fees");
    *tx = next;
    *chain.last_tx.lock() = Some(LastTx { hash: B256::from(tx.hash), at: tx.sent_at, status: "sent" });
    if let Some(e) = super::onchain::broadcast(state, tx).await {
        tracing::warn!(nonce = tx.nonce, hash = %B256::from(tx.hash), error = %e, "replacement not broadcast");
    }
    Ok(())
}

/// What a relayed transaction's record or a payout report shows as its hash, now `hash`
/// (a trade's hash comes with its outcome).
fn rehash(state: &AppState, tx: &ChainTx, hash: [u8; 32], b: &mut Batch) -> Result<(), crate::store::StoreError> {
    match (tx.relay, &tx.report) {
        (Some(id), _) => super::relayer::chain::rehash(state, &id, hash, b),
        (None, Some(c)) => super::resolution::payouts::rehash(state, c, hash, b),
        (None, None) => Ok(()),
    }
}

/// Why a mined transaction reverted: its call replayed, from its account, on the state it
/// met.
async fn replay_revert(chain: &crate::chain::Chain, record: &ChainTx, block: u64) -> String {
    use alloy_eips::eip2718::Decodable2718;
    let Ok(envelope) = alloy_consensus::TxEnvelope::decode_2718(&mut &record.raw[..]) else {
        return "transaction reverted".into();
    };
    let from = record.account.map_or(chain.operator.address, alloy_primitives::Address::from);
    let tx = TransactionRequest::from_transaction_with_sender(envelope, from);
    match chain.provider.call(tx).block(block.into()).await {
        Err(e) => revert_reason(&e),
        Ok(_) => "transaction reverted".into(),
    }
}
