//! Polymarket's relayer (docs/reference/relay.md): a wallet's owner signs a transaction of
//! its Safe (or the Safe's deployment, or its proxy wallet's calls through the relay hub);
//! predex checks the signature, the nonce and that the wallet is the owner's own, and
//! decodes the calls (only the venue's contracts, only the functions the venue has).
//!
//! In ledger mode it applies them in one engine command written with the transaction's
//! record and the wallet's next nonce: CONFIRMED when the reply is sent. A call the ledger
//! refuses (not enough balance, an unknown market) leaves a FAILED record and the nonce
//! unused, as a reverted transaction does. In chain mode the operator sends the wallet's
//! transaction (`chain`).

use alloy_primitives::{Address, B256, U256};
use alloy_sol_types::SolCall;
use serde::Deserialize;
use tokio::sync::Mutex;
use uuid::Uuid;

use crate::app::ctf::{self, ConvertRequest, CtfError, CtfRequest, Plan};
use crate::app::AppState;
use crate::auth::relay::{create_proxy_hash, recover_safe_signer, relay_hash, safe_tx_hash};
use crate::chain::{
    ICollateral, IConditionalTokens, IExchange, IMultiSend, INegRiskAdapter, IProxyFactory, IRelayHub, ISafe,
    ISafeFactory,
};
use crate::domain::analytics::CtfKind;
use crate::domain::relay::{RelayContracts, RelayKind, RelayState, RelayTx};
use crate::domain::{now_millis, NumberText, OrderStatus};
use crate::store::{Batch, StoreError};

/// The longest `metadata` a transaction keeps.
const MAX_METADATA: usize = 500;

/// The relayer's state: one transaction checked and applied at a time, so two holding the
/// same nonce never both run.
#[derive(Default)]
pub struct Relayer {
    lock: Mutex<()>,
}

/// What the relayer refuses (400 with the message unless said otherwise).
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    #[error("{0}")]
    Invalid(String),
    #[error("call not allowed")]
    CallNotAllowed,
    #[error("invalid signature")]
    BadSignature,
    #[error("invalid nonce: the wallet's nonce is {0}")]
    BadNonce(u64),
    #[error("safe not deployed")]
    NotDeployed,
    #[error("safe already deployed")]
    Deployed,
    #[error("the signer has to be the owner of the API KEY")]
    NotOwner,
    /// The ledger could not apply it now (503).
    #[error("{0}")]
    Unavailable(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A transaction request as the official relayer client sends it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TransactionRequest {
    #[serde(rename = "type")]
    pub kind: String,
    pub from: String,
    pub to: String,
    pub proxy_wallet: Option<String>,
    #[serde(default)]
    pub data: String,
    pub nonce: Option<NumberText>,
    pub signature: String,
    #[serde(default)]
    pub signature_params: SignatureParams,
    #[serde(default)]
    pub metadata: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignatureParams {
    pub gas_price: Option<NumberText>,
    pub gas_limit: Option<NumberText>,
    pub relayer_fee: Option<NumberText>,
    pub relay_hub: Option<String>,
    pub relay: Option<String>,
    pub operation: Option<NumberText>,
    pub safe_txn_gas: Option<NumberText>,
    pub base_gas: Option<NumberText>,
    pub gas_token: Option<String>,
    pub refund_receiver: Option<String>,
    pub payment_token: Option<String>,
    pub payment: Option<NumberText>,
    pub payment_receiver: Option<String>,
}

pub mod chain;

/// A call the ledger carries out.
#[derive(Debug)]
enum Call {
    /// An allowance or an operator's approval toward the venue: the ledger needs none, so
    /// it is recorded with the transaction and changes nothing else.
    Approval,
    Split {
        condition_id: String,
        amount: u64,
    },
    Merge {
        condition_id: String,
        amount: u64,
    },
    /// ConditionalTokens' redemption of everything held, or the adapter's of the amounts
    /// (YES, NO) given.
    Redeem {
        condition_id: String,
        amounts: Option<[u64; 2]>,
    },
    Convert {
        market_id: String,
        index_set: u64,
        amount: u64,
    },
    /// A version 1 exchange's incrementNonce: the wallet's orders are cancelled. Alone in
    /// its transaction (it is its own engine command).
    IncrementNonce,
    /// A version 1 exchange's cancelOrder or cancelOrders: the wallet's own open orders,
    /// signed under that exchange's domain.
    Cancel {
        neg_risk: bool,
        orders: Vec<IExchange::Order>,
    },
}

fn address(s: &str, what: &str) -> Result<Address, RelayError> {
    s.trim().parse().map_err(|_| RelayError::Invalid(format!("invalid {what}")))
}

fn hex_bytes(s: &str, what: &str) -> Result<Vec<u8>, RelayError> {
    alloy_primitives::hex::decode(s.trim()).map_err(|_| RelayError::Invalid(format!("invalid {what}")))
}

fn zero(v: &Option<NumberText>) -> bool {
    v.as_ref().is_none_or(|n| n.text() == "0")
}

fn zero_address(v: &Option<String>) -> bool {
    v.as_deref().is_none_or(|a| a.parse::<Address>().is_ok_and(|a| a == Address::ZERO))
}

fn amount(v: U256) -> Result<u64, RelayError> {
    u64::try_from(v)
        .ok()
        .filter(|&a| a > 0)
        .ok_or_else(|| RelayError::Invalid("amount must be positive and fit the ledger".into()))
}

fn condition(b: B256) -> String {
    format!("{b:#x}")
}

/// The one call `data` makes at `to` (operation: a call), when the venue allows it.
fn decode_call(c: &RelayContracts, to: Address, data: &[u8]) -> Result<Call, RelayError> {
    let binary = |partition: &[U256]| partition == [U256::from(1), U256::from(2)];
    if to == c.collateral {
        let call = ICollateral::approveCall::abi_decode(data).map_err(|_| RelayError::CallNotAllowed)?;
        return if c.spender(call.spender) { Ok(Call::Approval) } else { Err(RelayError::CallNotAllowed) };
    }
    if to == c.ctf {
        if let Ok(call) = IConditionalTokens::setApprovalForAllCall::abi_decode(data) {
            return if c.spender(call.operator) { Ok(Call::Approval) } else { Err(RelayError::CallNotAllowed) };
        }
        if let Ok(call) = IConditionalTokens::splitPositionCall::abi_decode(data) {
            if call.collateralToken == c.collateral && call.parentCollectionId.is_zero() && binary(&call.partition) {
                return Ok(Call::Split { condition_id: condition(call.conditionId), amount: amount(call.amount)? });
            }
        }
        if let Ok(call) = IConditionalTokens::mergePositionsCall::abi_decode(data) {
            if call.collateralToken == c.collateral && call.parentCollectionId.is_zero() && binary(&call.partition) {
                return Ok(Call::Merge { condition_id: condition(call.conditionId), amount: amount(call.amount)? });
            }
        }
        if let Ok(call) = IConditionalTokens::redeemPositionsCall::abi_decode(data) {
            if call.collateralToken == c.collateral && call.parentCollectionId.is_zero() && binary(&call.indexSets) {
                return Ok(Call::Redeem { condition_id: condition(call.conditionId), amounts: None });
            }
        }
        return Err(RelayError::CallNotAllowed);
    }
    if c.exchanges[..2].contains(&to) {
        let neg_risk = to == c.exchanges[1];
        if IExchange::incrementNonceCall::abi_decode(data).is_ok() {
            return Ok(Call::IncrementNonce);
        }
        if let Ok(call) = IExchange::cancelOrderCall::abi_decode(data) {
            return Ok(Call::Cancel { neg_risk, orders: vec![call.order] });
        }
        if let Ok(call) = IExchange::cancelOrdersCall::abi_decode(data) {
            if !call.orders.is_empty() {
                return Ok(Call::Cancel { neg_risk, orders: call.orders });
            }
        }
        return Err(RelayError::CallNotAllowed);
    }
    if to == c.adapter {
        if let Ok(call) = INegRiskAdapter::splitPositionCall::abi_decode(data) {
            return Ok(Call::Split { condition_id: condition(call.conditionId), amount: amount(call.amount)? });
        }
        if let Ok(call) = INegRiskAdapter::mergePositionsCall::abi_decode(data) {
            return Ok(Call::Merge { condition_id: condition(call.conditionId), amount: amount(call.amount)? });
        }
        if let Ok(call) = INegRiskAdapter::redeemPositionsCall::abi_decode(data) {
            let [yes, no] = call.amounts[..] else { return Err(RelayError::CallNotAllowed) };
            let whole =
                |a: U256| u64::try_from(a).map_err(|_| RelayError::Invalid("amounts must fit the ledger".into()));
            let amounts = Some([whole(yes)?, whole(no)?]);
            return Ok(Call::Redeem { condition_id: condition(call.conditionId), amounts });
        }
        if let Ok(call) = INegRiskAdapter::convertPositionsCall::abi_decode(data) {
            let index_set = u64::try_from(call.indexSet).map_err(|_| RelayError::CallNotAllowed)?;
            return Ok(Call::Convert { market_id: condition(call.marketId), index_set, amount: amount(call.amount)? });
        }
    }
    Err(RelayError::CallNotAllowed)
}

/// The calls of a Safe transaction: one call, or MultiSend's packed calls by delegatecall
/// (each `uint8 operation ‖ address to ‖ uint256 value ‖ uint256 length ‖ data`, every one
/// a plain call without value).
fn decode_safe_calls(c: &RelayContracts, to: Address, data: &[u8], operation: u8) -> Result<Vec<Call>, RelayError> {
    match operation {
        0 => Ok(vec![decode_call(c, to, data)?]),
        1 if to == c.multisend => {
            let packed =
                IMultiSend::multiSendCall::abi_decode(data).map_err(|_| RelayError::CallNotAllowed)?.transactions;
            let mut rest = packed.as_ref();
            let mut calls = Vec::new();
            while !rest.is_empty() {
                let head = rest.get(..85).ok_or(RelayError::CallNotAllowed)?;
                let (op, to, value) = (head[0], Address::from_slice(&head[1..21]), U256::from_be_slice(&head[21..53]));
                let len =
                    usize::try_from(U256::from_be_slice(&head[53..85])).map_err(|_| RelayError::CallNotAllowed)?;
                let body = rest
                    .get(85..85usize.checked_add(len).ok_or(RelayError::CallNotAllowed)?)
                    .ok_or(RelayError::CallNotAllowed)?;
                if op != 0 || !value.is_zero() {
                    return Err(RelayError::CallNotAllowed);
                }
                calls.push(decode_call(c, to, body)?);
                rest = &rest[85 + len..];
            }
            if calls.is_empty() {
                return Err(RelayError::CallNotAllowed);
            }
            Ok(calls)
        }
        _ => Err(RelayError::CallNotAllowed),
    }
}

/// The calls of a proxy wallet's `proxy(calls)` at the proxy factory: plain calls (type
/// code 1) without value.
fn decode_proxy_calls(c: &RelayContracts, data: &[u8]) -> Result<Vec<Call>, RelayError> {
    let calls = IProxyFactory::proxyCall::abi_decode(data).map_err(|_| RelayError::CallNotAllowed)?.calls;
    if calls.is_empty() {
        return Err(RelayError::CallNotAllowed);
    }
    calls
        .iter()
        .map(|p| {
            if p.typeCode != 1 || !p.value.is_zero() {
                return Err(RelayError::CallNotAllowed);
            }
            decode_call(c, p.to, &p.data)
        })
        .collect()
}

/// Who submits: any owner's transaction for a builder key (the owner's signature is what
/// authorises it), the key's own address's for a relayer or L2 key.
pub struct Submitter {
    pub id: String,
    pub address: Option<String>,
}

/// Checks and applies a transaction request; the record as written.
pub async fn submit(s: &AppState, by: Submitter, req: TransactionRequest) -> Result<RelayTx, RelayError> {
    let kind = RelayKind::parse(&req.kind)
        .ok_or_else(|| RelayError::Invalid(format!("unsupported transaction type: {}", req.kind)))?;
    let from = address(&req.from, "from")?;
    let from_text = format!("{from:#x}");
    if by.address.as_deref().is_some_and(|a| a != from_text) {
        return Err(RelayError::NotOwner);
    }
    let safe = s.wallets.safe(from);
    let wallet = match req.proxy_wallet.as_deref() {
        Some(w) => address(w, "proxyWallet")?,
        None => safe,
    };
    let to = address(&req.to, "to")?;
    if req.metadata.as_ref().is_some_and(|m| m.len() > MAX_METADATA) {
        return Err(RelayError::Invalid(format!("metadata longer than {MAX_METADATA} bytes")));
    }
    let data = hex_bytes(if req.data.is_empty() { "0x" } else { &req.data }, "data")?;
    let c = &s.relay_contracts;
    let _one_at_a_time = s.relayer.lock.lock().await;
    let now = now_millis();
    let mut tx = RelayTx {
        id: Uuid::new_v4(),
        hash: [0; 32],
        kind,
        from: from_text.clone(),
        to: format!("{to:#x}"),
        wallet: format!("{wallet:#x}"),
        data: format!("0x{}", alloy_primitives::hex::encode(&data)),
        nonce: String::new(),
        signature: req.signature.clone(),
        state: RelayState::Confirmed,
        owner: by.id,
        metadata: req.metadata.unwrap_or_default(),
        created_at: now,
        updated_at: now,
        error: None,
    };
    tx.hash = alloy_primitives::keccak256(tx.id.as_bytes()).0;
    match kind {
        RelayKind::SafeCreate => {
            let p = &req.signature_params;
            if to != c.safe_factory || wallet != safe {
                return Err(RelayError::Invalid("not the owner's safe at the venue's safe factory".into()));
            }
            if !(zero_address(&p.payment_token) && zero(&p.payment) && zero_address(&p.payment_receiver)) {
                return Err(RelayError::Invalid("the relayer takes no payment".into()));
            }
            let hash = create_proxy_hash(s.config.chain_id, c.safe_factory);
            let sig = crate::auth::eip712::parse_signature(&req.signature)
                .filter(|sig| sig.recover_address_from_prehash(&hash).ok() == Some(from))
                .ok_or(RelayError::BadSignature)?;
            if s.chain.is_some() {
                if chain::deployed(s, wallet).await? {
                    return Err(RelayError::Deployed);
                }
                let call = ISafeFactory::createProxyCall {
                    paymentToken: Address::ZERO,
                    payment: U256::ZERO,
                    paymentReceiver: Address::ZERO,
                    createSig: ISafeFactory::Sig { v: 27 + u8::from(sig.v()), r: sig.r().into(), s: sig.s().into() },
                };
                return chain::send(s, tx, c.safe_factory, call.abi_encode(), None).await;
            }
            if s.store.wallet_deployed(&tx.wallet)? {
                return Err(RelayError::Deployed);
            }
            let mut b = Batch::default();
            b.put_wallet_deployed(&tx.wallet);
            b.add_relay_tx(&tx);
            s.commit(b).await?;
            Ok(tx)
        }
        RelayKind::Safe => {
            let p = &req.signature_params;
            if wallet != safe {
                return Err(RelayError::Invalid("not the owner's safe".into()));
            }
            let gasless = zero(&p.gas_price)
                && zero(&p.safe_txn_gas)
                && zero(&p.base_gas)
                && zero_address(&p.gas_token)
                && zero_address(&p.refund_receiver);
            if !gasless {
                return Err(RelayError::Invalid("the relayer pays the gas: gas fields must be zero".into()));
            }
            let operation = match p.operation.as_ref().map(|o| o.text()) {
                None => 0u8,
                Some(o) => o.parse().map_err(|_| RelayError::Invalid("invalid operation".into()))?,
            };
            let calls = decode_safe_calls(c, to, &data, operation)?;
            let on_chain = s.chain.is_some();
            let deployed =
                if on_chain { chain::deployed(s, safe).await? } else { s.store.wallet_deployed(&tx.wallet)? };
            if !deployed {
                return Err(RelayError::NotDeployed);
            }
            let floor = if on_chain { chain::chain_nonce(s, kind, from, safe).await? } else { 0 };
            let nonce = signed_nonce(s, &mut tx, &req.nonce, floor)?;
            let hash = safe_tx_hash(s.config.chain_id, safe, to, &data, operation, U256::from(nonce));
            if recover_safe_signer(&hash, &req.signature) != Some(from) {
                return Err(RelayError::BadSignature);
            }
            if on_chain {
                let signatures = hex_bytes(&req.signature, "signature")?;
                let call = ISafe::execTransactionCall {
                    to,
                    value: U256::ZERO,
                    data: data.into(),
                    operation,
                    safeTxGas: U256::ZERO,
                    baseGas: U256::ZERO,
                    gasPrice: U256::ZERO,
                    gasToken: Address::ZERO,
                    refundReceiver: Address::ZERO,
                    signatures: signatures.into(),
                };
                return chain::send(s, tx, safe, call.abi_encode(), Some(nonce)).await;
            }
            execute(s, tx, &calls, nonce, &[]).await
        }
        RelayKind::Proxy => {
            let p = &req.signature_params;
            let proxy = s.wallets.proxy(from);
            if to != c.proxy_factory || wallet != proxy {
                return Err(RelayError::Invalid("not the owner's proxy wallet at the venue's proxy factory".into()));
            }
            if !(zero(&p.gas_price) && zero(&p.relayer_fee)) {
                return Err(RelayError::Invalid("the relayer pays the gas: gas price and fee must be zero".into()));
            }
            let hub = address(p.relay_hub.as_deref().unwrap_or_default(), "relayHub")?;
            let relay = address(p.relay.as_deref().unwrap_or_default(), "relay")?;
            if hub != c.relay_hub || relay != c.relay {
                return Err(RelayError::Invalid("not the venue's relay hub and relay".into()));
            }
            let gas_limit = p
                .gas_limit
                .as_ref()
                .and_then(|g| U256::from_str_radix(&g.text(), 10).ok())
                .ok_or_else(|| RelayError::Invalid("invalid gasLimit".into()))?;
            let calls = decode_proxy_calls(c, &data)?;
            let floor = match s.chain {
                Some(_) => chain::chain_nonce(s, kind, from, proxy).await?,
                None => 0,
            };
            let nonce = signed_nonce(s, &mut tx, &req.nonce, floor)?;
            let hash = relay_hash(from, to, &data, U256::ZERO, U256::ZERO, gas_limit, U256::from(nonce), hub, relay);
            if crate::auth::eip712::parse_signature(&req.signature)
                .and_then(|sig| sig.recover_address_from_msg(hash.as_slice()).ok())
                != Some(from)
            {
                return Err(RelayError::BadSignature);
            }
            if s.chain.is_some() {
                let call = IRelayHub::relayCallCall {
                    from,
                    recipient: to,
                    encodedFunction: data.into(),
                    transactionFee: U256::ZERO,
                    gasPrice: U256::ZERO,
                    gasLimit: gas_limit,
                    nonce: U256::from(nonce),
                    signature: hex_bytes(&req.signature, "signature")?.into(),
                    approvalData: Default::default(),
                };
                return chain::send(s, tx, hub, call.abi_encode(), Some(nonce)).await;
            }
            // The factory creates the proxy wallet at its first call.
            let wallet = tx.wallet.clone();
            execute(s, tx, &calls, nonce, &[wallet]).await
        }
    }
}

/// Runs a wallet transaction's calls: their ledger changes, written with the record, the
/// wallet's next nonce and the wallets it deploys in one engine command. A refusal of the
/// ledger is the transaction failing, as a reverted transaction does: recorded FAILED,
/// the nonce unused.
async fn execute(
    s: &AppState,
    tx: RelayTx,
    calls: &[Call],
    nonce: u64,
    deploys: &[String],
) -> Result<RelayTx, RelayError> {
    if calls.iter().any(|c| matches!(c, Call::IncrementNonce)) {
        if calls.len() > 1 {
            return Err(RelayError::Invalid("incrementNonce must be the transaction's only call".into()));
        }
        crate::app::orders::check_cancels(s).map_err(|e| RelayError::Unavailable(e.to_string()))?;
        s.engine
            .increment_nonce(tx.wallet.clone(), done_records(&tx, nonce, deploys))
            .await
            .map_err(|e| RelayError::Unavailable(e.to_string()))?;
        return Ok(tx);
    }
    if calls.iter().any(|c| matches!(c, Call::Cancel { .. })) {
        if calls.iter().any(|c| !matches!(c, Call::Cancel { .. } | Call::Approval)) {
            return Err(RelayError::Invalid("cancelOrder cannot run with calls that move positions".into()));
        }
        return cancel(s, tx, calls, nonce, deploys).await;
    }
    let outcome = match plans(s, &tx.wallet, calls).await {
        Ok(plans) => ctf::apply(s, &tx.wallet, &plans, tx.hash, done_records(&tx, nonce, deploys)).await.map(|_| ()),
        Err(e) => Err(e),
    };
    match outcome {
        Ok(()) => Ok(tx),
        Err(e @ (CtfError::Store(_) | CtfError::Engine(_))) => Err(RelayError::Unavailable(e.to_string())),
        Err(e) => failed(s, tx, e.to_string()).await,
    }
}

/// A transaction the ledger refused, as a reverted one: recorded FAILED with `why`, the
/// nonce unused.
async fn failed(s: &AppState, mut tx: RelayTx, why: String) -> Result<RelayTx, RelayError> {
    tx.state = RelayState::Failed;
    tx.error = Some(why);
    let mut b = Batch::default();
    b.add_relay_tx(&tx);
    s.commit(b).await?;
    Ok(tx)
}

/// The exchange's cancelOrder(s) from the wallet: every order named must be an open order
/// of the wallet (its maker, as the exchange requires of the caller), named once; then
/// they are cancelled with the transaction's record in one engine command. Otherwise the
/// transaction fails as the exchange's call reverts, nothing cancelled. An order predex
/// never took cannot be cancelled here (the chain would mark its hash cancelled; the
/// ledger keeps no hashes of orders it never saw).
async fn cancel(
    s: &AppState,
    tx: RelayTx,
    calls: &[Call],
    nonce: u64,
    deploys: &[String],
) -> Result<RelayTx, RelayError> {
    crate::app::orders::check_cancels(s).map_err(|e| RelayError::Unavailable(e.to_string()))?;
    let mut ids = Vec::new();
    for call in calls {
        let Call::Cancel { neg_risk, orders } = call else { continue };
        let domain = s.domains.of(1, *neg_risk);
        for o in orders {
            let hash = crate::auth::eip712::order_hash(&crate::chain::signed_fields(o), domain);
            if format!("{:#x}", o.maker) != tx.wallet {
                return failed(s, tx, "not the order's maker".into()).await;
            }
            let id = crate::auth::eip712::order_id(&hash);
            let open =
                s.store.get_order(&id)?.is_some_and(|o| matches!(o.status, OrderStatus::Live | OrderStatus::Deferred));
            if !open || ids.contains(&id) {
                return failed(s, tx, "order filled or cancelled".into()).await;
            }
            ids.push(id);
        }
    }
    let records = done_records(&tx, nonce, deploys);
    match s.engine.cancel_own(tx.wallet.clone(), ids, records).await {
        Ok(_) => Ok(tx),
        Err(crate::engine::EngineError::Rejected(_)) => failed(s, tx, "order filled or cancelled".into()).await,
        Err(e) => Err(RelayError::Unavailable(e.to_string())),
    }
}

/// The wallet's nonce — the next the relayer has not used, at least `floor` (the chain's) —
/// when it is the one the owner signed (recorded in `tx`).
fn signed_nonce(s: &AppState, tx: &mut RelayTx, signed: &Option<NumberText>, floor: u64) -> Result<u64, RelayError> {
    let nonce = s.store.relay_nonce(&tx.wallet)?.max(floor);
    if signed.as_ref().map(|n| n.text()).as_deref() != Some(nonce.to_string().as_str()) {
        return Err(RelayError::BadNonce(nonce));
    }
    tx.nonce = nonce.to_string();
    Ok(nonce)
}

/// What a transaction that ran writes with its effects: its record, the wallet's next
/// nonce and the wallets it deployed.
fn done_records(tx: &RelayTx, nonce: u64, deploys: &[String]) -> Batch {
    let mut records = Batch::default();
    records.put_relay_nonce(&tx.wallet, nonce + 1);
    for w in deploys {
        records.put_wallet_deployed(w);
    }
    records.add_relay_tx(tx);
    records
}

/// The ledger's plan of each call that moves something (approvals move nothing).
async fn plans(s: &AppState, wallet: &str, calls: &[Call]) -> Result<Vec<Plan>, CtfError> {
    let mut out = Vec::new();
    for call in calls {
        let request = |condition_id: &str, amount: Option<u64>| CtfRequest {
            condition_id: condition_id.to_string(),
            amount: amount.map(|a| a.to_string()),
            address: None,
        };
        out.push(match call {
            Call::Approval | Call::IncrementNonce | Call::Cancel { .. } => continue,
            Call::Split { condition_id, amount } => {
                ctf::plan(s, CtfKind::Split, wallet, request(condition_id, Some(*amount))).await?
            }
            Call::Merge { condition_id, amount } => {
                ctf::plan(s, CtfKind::Merge, wallet, request(condition_id, Some(*amount))).await?
            }
            Call::Redeem { condition_id, amounts } => ctf::plan_redeem(s, wallet, condition_id, *amounts).await?,
            Call::Convert { market_id, index_set, amount } => ctf::plan_convert(
                s,
                &ConvertRequest {
                    market_id: market_id.clone(),
                    index_set: NumberText::Text(index_set.to_string()),
                    amount: amount.to_string(),
                    address: None,
                },
            )?,
        });
    }
    Ok(out)
}

/// The markets (condition ids) a recorded transaction's calls name.
pub fn conditions(s: &AppState, tx: &RelayTx) -> Vec<String> {
    let c = &s.relay_contracts;
    let (Ok(to), Ok(data)) = (tx.to.parse::<Address>(), alloy_primitives::hex::decode(&tx.data)) else {
        return Vec::new();
    };
    let calls = match tx.kind {
        RelayKind::SafeCreate => return Vec::new(),
        RelayKind::Safe => decode_safe_calls(c, to, &data, u8::from(to == c.multisend)),
        RelayKind::Proxy => decode_proxy_calls(c, &data),
    };
    let mut out = Vec::new();
    for call in calls.unwrap_or_default() {
        match call {
            Call::Split { condition_id, .. } | Call::Merge { condition_id, .. } | Call::Redeem { condition_id, .. } => {
                out.push(condition_id)
            }
            // Every question of the market.
            Call::Convert { market_id, .. } => {
                out.extend(ctf::questions_of(s, &market_id).iter().map(|v| v.market.condition_id.clone()))
            }
            _ => {}
        }
    }
    out
}
