//! Conditional-token operations in chain mode (docs/reference/ctf.md): `/ctf/split`,
//! `/merge`, `/redeem` and `/convert` move nothing themselves — the chain does. Each answers
//! what the wallet sends: for the key's own address the prepared transaction (to, data,
//! value, chain id) it signs and sends; for its Safe or proxy wallet the relayer request
//! (`POST /submit`) with everything but the signature, and the hash the owner signs.

use alloy_primitives::{Address, B256, U256};
use alloy_sol_types::SolCall;
use serde_json::{json, Value};

use super::ctf::{base_amount, convert_terms, ConvertRequest, CtfError, CtfRequest};
use super::relayer::RelayError;
use super::AppState;
use crate::auth::relay::{relay_hash, safe_tx_hash};
use crate::chain::{IConditionalTokens, INegRiskAdapter, IProxyFactory};
use crate::domain::analytics::CtfKind;
use crate::domain::relay::RelayKind;

/// The gas limit a proxy wallet's prepared call is signed with (the relay hub runs the call
/// with at most this much).
pub const PROXY_GAS_LIMIT: u64 = 1_000_000;

#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    #[error(transparent)]
    Ctf(#[from] CtfError),
    #[error(transparent)]
    Relay(#[from] RelayError),
}

fn condition(id: &str) -> Result<B256, CtfError> {
    id.parse().map_err(|_| CtfError::MarketNotFound)
}

/// The contract and call of a split, merge or redeem of a market by `wallet`.
pub async fn operation_call(
    s: &AppState,
    kind: CtfKind,
    b: &CtfRequest,
    wallet: Address,
) -> Result<(Address, Vec<u8>), PrepareError> {
    let view = s.registry.condition(&b.condition_id).ok_or(CtfError::MarketNotFound)?;
    let m = &view.market;
    let c = &s.relay_contracts;
    let id = condition(&m.condition_id)?;
    let binary = vec![U256::from(1), U256::from(2)];
    let call = match kind {
        CtfKind::Split | CtfKind::Merge => {
            let amount = U256::from(base_amount(b.amount.as_deref())?);
            match (kind, m.neg_risk) {
                (CtfKind::Split, true) => {
                    (c.adapter, INegRiskAdapter::splitPositionCall { conditionId: id, amount }.abi_encode())
                }
                (_, true) => (c.adapter, INegRiskAdapter::mergePositionsCall { conditionId: id, amount }.abi_encode()),
                (CtfKind::Split, false) => (
                    c.ctf,
                    IConditionalTokens::splitPositionCall {
                        collateralToken: c.collateral,
                        parentCollectionId: B256::ZERO,
                        conditionId: id,
                        partition: binary,
                        amount,
                    }
                    .abi_encode(),
                ),
                (_, false) => (
                    c.ctf,
                    IConditionalTokens::mergePositionsCall {
                        collateralToken: c.collateral,
                        parentCollectionId: B256::ZERO,
                        conditionId: id,
                        partition: binary,
                        amount,
                    }
                    .abi_encode(),
                ),
            }
        }
        CtfKind::Redeem => {
            if b.amount.is_some() {
                return Err(CtfError::RedeemTakesNoAmount.into());
            }
            if m.neg_risk {
                // The adapter redeems the amounts it is given: what the wallet holds now.
                let chain = &s.chain.as_ref().expect("chain mode").link;
                let mut amounts = Vec::new();
                for t in &m.tokens {
                    let token = U256::from_str_radix(&t.token_id, 10).map_err(|_| CtfError::MarketNotFound)?;
                    let held = chain.token_balance(wallet, token).await;
                    amounts.push(held.map_err(|e| RelayError::Unavailable(format!("chain: {e:#}")))?);
                }
                if amounts.iter().all(U256::is_zero) {
                    return Err(CtfError::NothingToRedeem.into());
                }
                return Ok((c.adapter, INegRiskAdapter::redeemPositionsCall { conditionId: id, amounts }.abi_encode()));
            }
            let call = IConditionalTokens::redeemPositionsCall {
                collateralToken: c.collateral,
                parentCollectionId: B256::ZERO,
                conditionId: id,
                indexSets: binary,
            };
            (c.ctf, call.abi_encode())
        }
        CtfKind::Reward | CtfKind::Conversion => return Err(CtfError::UnknownOperation.into()),
    };
    Ok(call)
}

/// The adapter's `convertPositions` of a conversion, checked as in ledger mode. The index
/// set names the adapter's questions, bit i its question i (the last byte of the question
/// id); for a market whose questions predex made one after another, its markets in
/// creation order, as the ledger counts them.
pub fn convert_call(s: &AppState, b: &ConvertRequest) -> Result<(Address, Vec<u8>), PrepareError> {
    let (_, set, amount) = convert_terms(s, b)?;
    let market_id: B256 = b.market_id.parse().map_err(|_| CtfError::MarketNotFound)?;
    let call = INegRiskAdapter::convertPositionsCall {
        marketId: market_id,
        indexSet: U256::from(set),
        amount: U256::from(amount),
    };
    Ok((s.relay_contracts.adapter, call.abi_encode()))
}

fn hex(b: &[u8]) -> String {
    format!("0x{}", alloy_primitives::hex::encode(b))
}

/// What `wallet` (the key's `owner` address or a wallet derived from it) sends to run
/// `data` at `to`.
pub async fn prepared(
    s: &AppState,
    owner: Address,
    wallet: Address,
    to: Address,
    data: Vec<u8>,
) -> Result<Value, PrepareError> {
    let chain_id = s.config.chain_id;
    let c = &s.relay_contracts;
    let nonce = |kind: RelayKind| async move {
        let stored = s.store.relay_nonce(&format!("{wallet:#x}")).map_err(RelayError::from)?;
        Ok::<u64, RelayError>(stored.max(super::relayer::chain::chain_nonce(s, kind, owner, wallet).await?))
    };
    if wallet == owner {
        return Ok(json!({
            "transaction": {"to": format!("{to:#x}"), "data": hex(&data), "value": "0", "chainId": chain_id},
        }));
    }
    if wallet == s.wallets.safe(owner) {
        let n = nonce(RelayKind::Safe).await?;
        let hash = safe_tx_hash(chain_id, wallet, to, &data, 0, U256::from(n));
        return Ok(json!({
            "hash": format!("{hash:#x}"),
            "submit": {
                "type": "SAFE", "from": format!("{owner:#x}"), "to": format!("{to:#x}"),
                "proxyWallet": format!("{wallet:#x}"), "data": hex(&data), "nonce": n.to_string(),
                "signatureParams": {"gasPrice": "0", "operation": "0", "safeTxnGas": "0", "baseGas": "0",
                                    "gasToken": format!("{:#x}", Address::ZERO),
                                    "refundReceiver": format!("{:#x}", Address::ZERO)},
            },
        }));
    }
    if wallet != s.wallets.proxy(owner) {
        return Err(CtfError::NotOwner.into());
    }
    // The proxy wallet: one call through the proxy factory, relayed by the hub.
    let n = nonce(RelayKind::Proxy).await?;
    let call = IProxyFactory::ProxyCall { typeCode: 1, to, value: U256::ZERO, data: data.into() };
    let data = IProxyFactory::proxyCall { calls: vec![call] }.abi_encode();
    let gas = U256::from(PROXY_GAS_LIMIT);
    let hash =
        relay_hash(owner, c.proxy_factory, &data, U256::ZERO, U256::ZERO, gas, U256::from(n), c.relay_hub, c.relay);
    Ok(json!({
        "hash": format!("{hash:#x}"),
        "submit": {
            "type": "PROXY", "from": format!("{owner:#x}"), "to": format!("{:#x}", c.proxy_factory),
            "proxyWallet": format!("{wallet:#x}"), "data": hex(&data), "nonce": n.to_string(),
            "signatureParams": {"gasPrice": "0", "gasLimit": gas.to_string(), "relayerFee": "0",
                                "relayHub": format!("{:#x}", c.relay_hub), "relay": format!("{:#x}", c.relay)},
        },
    }))
}
