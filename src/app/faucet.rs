//! Chain mode's faucet (docs/operating/settlement.md): the operator gives a tester the
//! development collateral, minted on chain to its wallet (an EOA or a Safe), and with
//! `--faucet-gas` the native gas its approvals cost. Only the development collateral,
//! which its deployer (predex's operator) may mint, can be given; an address gets one gift
//! per `--faucet-interval-secs`.

use std::collections::HashMap;

use alloy_network::TransactionBuilder;
use alloy_primitives::{Address, B256, U256};
use alloy_provider::Provider;
use alloy_rpc_types_eth::TransactionRequest;
use alloy_sol_types::SolCall;
use parking_lot::Mutex;

use super::onchain::on_chain;
use super::AppState;
use crate::chain::{Chain, ICollateral};
use crate::domain::now_secs;

/// Gas a wallet's approvals take, at most: the collateral to both exchanges and the
/// adapter, and ConditionalTokens to the same three.
const APPROVALS_GAS: u64 = 400_000;

#[derive(Debug, thiserror::Error)]
pub enum FaucetError {
    #[error("invalid address")]
    Address,
    #[error("amount must be a positive 6-decimal integer string of at most {0} USDC")]
    Amount(u64),
    #[error("the faucet is for chain mode: in ledger mode credit the ledger (/internal/ledger/credit)")]
    LedgerMode,
    #[error(
        "the faucet mints the development collateral only: this venue's collateral cannot be minted by its operator"
    )]
    NotMintable,
    #[error("this address had a gift from the faucet less than {0} s ago")]
    TooSoon(u64),
    #[error("chain: {0}")]
    Chain(String),
}

/// The faucet's memory: each address's last gift (UNIX seconds), forgotten after the
/// interval (the table stays bounded by the gifts of one interval).
#[derive(Default)]
pub struct Faucet {
    given: Mutex<HashMap<Address, u64>>,
}

impl Faucet {
    /// Takes the address's turn, or says it must wait.
    fn take_turn(&self, who: Address, now: u64, interval: u64) -> Result<(), FaucetError> {
        let mut given = self.given.lock();
        given.retain(|_, at| now.saturating_sub(*at) < interval);
        if given.contains_key(&who) {
            return Err(FaucetError::TooSoon(interval));
        }
        given.insert(who, now);
        Ok(())
    }

    /// Gives the turn back (the gift was not made).
    fn give_back(&self, who: Address) {
        self.given.lock().remove(&who);
    }
}

/// What one gift did.
pub struct Gift {
    pub address: Address,
    pub amount: u64,
    /// The mint's transaction.
    pub mint: B256,
    /// The native gas sent (wei) and its transaction, when it was.
    pub gas: Option<(U256, B256)>,
}

/// Mints `amount` (6-decimal units) of the development collateral to `address` and, with
/// `--faucet-gas`, tops up its native balance; answers once mined.
pub async fn give(s: &AppState, address: &str, amount: &str) -> Result<Gift, FaucetError> {
    let chain = &on_chain(s).map_err(|_| FaucetError::LedgerMode)?.link;
    let who: Address =
        crate::auth::normalize_address(address).and_then(|a| a.parse().ok()).ok_or(FaucetError::Address)?;
    let max = s.config.faucet_max;
    let amount = crate::domain::parse_u64(amount)
        .ok()
        .filter(|&a| a > 0 && a <= max.saturating_mul(1_000_000))
        .ok_or(FaucetError::Amount(max))?;
    s.faucet.take_turn(who, now_secs(), s.config.faucet_interval_secs)?;
    let gift = mint_and_fuel(s, chain, who, amount).await;
    if gift.is_err() {
        s.faucet.give_back(who);
    }
    gift
}

async fn mint_and_fuel(s: &AppState, chain: &Chain, who: Address, amount: u64) -> Result<Gift, FaucetError> {
    let p = &chain.provider;
    let chain_err = |e: anyhow::Error| FaucetError::Chain(format!("{e:#}"));
    let mint = TransactionRequest::default()
        .with_from(chain.operator.address)
        .with_to(chain.settings.collateral)
        .with_input(ICollateral::mintCall { to: who, amount: U256::from(amount) }.abi_encode());
    // The node's answer that the operator cannot mint: not the development collateral.
    match p.estimate_gas(mint.clone()).await {
        Ok(_) => {}
        Err(e) if e.as_error_resp().is_some() => return Err(FaucetError::NotMintable),
        Err(e) => return Err(FaucetError::Chain(e.to_string())),
    }
    let minted = chain.send("faucet mint", mint).await.map_err(chain_err)?;
    let mut gas = None;
    if s.config.faucet_gas {
        let fees = p.estimate_eip1559_fees().await.map_err(|e| FaucetError::Chain(e.to_string()))?;
        let need = U256::from(APPROVALS_GAS) * U256::from(fees.max_fee_per_gas) * U256::from(2);
        let has = p.get_balance(who).await.map_err(|e| FaucetError::Chain(e.to_string()))?;
        if has < need {
            let value = need - has;
            let fuel = TransactionRequest::default().with_from(chain.operator.address).with_to(who).with_value(value);
            gas = Some((value, chain.send("faucet gas", fuel).await.map_err(chain_err)?));
        }
    }
    // predex's view of the wallet's collateral, current before the answer.
    let address = format!("{who:#x}");
    if let Err(e) = super::onchain::refresh(s, &address, crate::domain::COLLATERAL).await {
        tracing::warn!(%address, error = %e, "balance not read from the chain after a faucet gift");
    }
    Ok(Gift { address: who, amount, mint: minted, gas })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One gift per address per interval; the table forgets what the interval passed.
    #[test]
    fn an_address_waits_its_interval_between_gifts() {
        let f = Faucet::default();
        let (a, b) = (Address::repeat_byte(1), Address::repeat_byte(2));
        f.take_turn(a, 100, 60).unwrap();
        assert!(matches!(f.take_turn(a, 159, 60), Err(FaucetError::TooSoon(60))));
        f.take_turn(b, 159, 60).unwrap();
        f.take_turn(a, 160, 60).unwrap();
        assert_eq!(f.given.lock().len(), 2);
        f.give_back(a);
        f.take_turn(a, 161, 60).unwrap();
        f.take_turn(Address::repeat_byte(3), 1_000, 60).unwrap();
        assert_eq!(f.given.lock().len(), 1, "gifts past their interval are forgotten");
    }
}
