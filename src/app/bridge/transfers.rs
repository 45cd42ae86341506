//! Deposits and withdrawals in ledger mode (docs/reference/bridge.md).
//!
//! - A wallet's bridge addresses (EVM, Solana, Bitcoin) are derived deterministically from
//!   the wallet and registered at its first `POST /deposit`.
//! - The operator reports an arrival on one of them; it is priced like a quote and credited
//!   to the wallet's collateral, in one write with its record. A transaction hash is
//!   credited once.
//! - A withdrawal debits the collateral into a PROCESSING transfer, in one write; the
//!   operator completes it with the destination transaction or fails it, which refunds.
//! - A bridge address's (or a wallet's) transfers are listed newest first.
//!
//! Every change of a transfer goes through [`super::Bridge`]'s lock, so two reports of one
//! transaction cannot both credit, and a withdrawal cannot be completed and failed.

use alloy_primitives::{keccak256, Address};
use serde::Deserialize;

use super::{base_units, table, Asset, BridgeError, Family, Refusal};
use crate::app::{acts_for, AppState};
use crate::auth::normalize_address;
use crate::domain::{now_millis, Amount, ApiKeyRecord, COLLATERAL};
use crate::engine::{EngineError, LedgerChange};
use crate::store::{Batch, StoreError};

pub use crate::domain::bridge::{BridgeAddress, Status, Transfer, TransferKind};

/// A PROCESSING transfer of `amount` base units of `route.0` into `route.1`, created now,
/// with nothing out yet.
fn new_transfer(
    id: u64,
    kind: TransferKind,
    owner: &str,
    bridge_address: String,
    route: (&Asset, &Asset),
    amount: u128,
) -> Transfer {
    let (from, to) = route;
    let now = now_millis();
    Transfer {
        id,
        kind,
        owner: owner.to_string(),
        bridge_address,
        from_chain_id: from.chain_id.clone(),
        from_token_address: from.token.address.clone(),
        from_amount: amount.to_string(),
        to_chain_id: to.chain_id.clone(),
        to_token_address: to.token.address.clone(),
        to_amount: "0".into(),
        recipient: None,
        ledger_amount: 0,
        status: Status::Processing,
        tx_hash: None,
        reason: None,
        created_ms: now,
        updated_ms: now,
    }
}

/// An address's family and its form in keys: EVM lowercase hex, Bitcoin bech32 lowercase,
/// Solana base58 as given. None when it is none of the three.
fn parse_address(a: &str) -> Option<(Family, String)> {
    let a = a.trim();
    if a.starts_with("0x") || a.starts_with("0X") {
        return normalize_address(a).map(|k| (Family::Evm, k));
    }
    let lower = a.to_ascii_lowercase();
    if lower.starts_with("bc1") {
        return bech32::segwit::decode(&lower).ok().map(|_| (Family::Btc, lower));
    }
    match bs58::decode(a).into_vec() {
        Ok(b) if b.len() == 32 => Some((Family::Svm, a.to_string())),
        _ => None,
    }
}

fn address_key(a: &str) -> Option<String> {
    parse_address(a).map(|(_, k)| k)
}

/// The bridge addresses of a wallet's deposits (`route` empty) or of its withdrawals to one
/// destination: hashes of the venue, the wallet and the route, one per address family.
fn derive(venue: &str, kind: TransferKind, owner: &str, route: &[&str]) -> [String; 3] {
    let hash = |family: &str| {
        let mut seed = format!("predex-bridge/{venue}/{kind:?}/{family}/{owner}");
        for r in route {
            seed.push('/');
            seed.push_str(&r.to_ascii_lowercase());
        }
        keccak256(seed.as_bytes())
    };
    let evm = Address::from_slice(&hash("evm")[12..]).to_checksum(None);
    let svm = bs58::encode(hash("svm").as_slice()).into_string();
    let btc = bech32::segwit::encode_v0(bech32::hrp::BC, &hash("btc")[..20]).expect("a 20-byte program encodes");
    [evm, svm, btc]
}

/// Registers bridge addresses not registered yet (in `batch`); false when all were.
fn register(
    s: &AppState,
    addrs: &[String; 3],
    kind: TransferKind,
    owner: &str,
    batch: &mut Batch,
) -> Result<bool, StoreError> {
    let mut added = false;
    for a in addrs {
        let a = address_key(a).expect("derived addresses parse");
        if s.store.bridge_address(&a)?.is_none() {
            batch.put_bridge_address(&a, &BridgeAddress { kind, owner: owner.to_string() });
            added = true;
        }
    }
    Ok(added)
}

/// A wallet's deposit addresses (evm, svm, btc), registered at the first call; the same
/// every time for one wallet.
pub async fn deposit(s: &AppState, wallet: &str) -> Result<[String; 3], BridgeError> {
    table(s)?;
    let owner = normalize_address(wallet).ok_or(BridgeError::NotAWallet)?;
    let addrs = derive(&s.config.exchange_address, TransferKind::Deposit, &owner, &[]);
    let mut batch = Batch::default();
    if register(s, &addrs, TransferKind::Deposit, &owner, &mut batch)? {
        s.commit(batch).await?;
    }
    Ok(addrs)
}

/// A withdrawal asked for by a key of the wallet (or of the owner it is derived from).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WithdrawRequest {
    pub address: String,
    pub to_chain_id: String,
    pub to_token_address: String,
    pub recipient_addr: String,
    pub from_amount_base_unit: String,
}

/// Debits `fromAmountBaseUnit` of collateral into a PROCESSING withdrawal to the
/// destination; the withdrawal's bridge addresses and its record.
pub async fn withdraw(
    s: &AppState,
    key: &ApiKeyRecord,
    b: WithdrawRequest,
) -> Result<([String; 3], Transfer), BridgeError> {
    let t = table(s)?;
    let owner = normalize_address(&b.address).ok_or(BridgeError::NotAWallet)?;
    if !acts_for(s, key, &owner) {
        return Err(BridgeError::NotOwner);
    }
    let amount = base_units(&b.from_amount_base_unit)?;
    let debit = u64::try_from(amount).map_err(|_| Refusal::TooLarge)?;
    let to = t.destination(&b.to_chain_id, &b.to_token_address)?;
    let recipient = match parse_address(&b.recipient_addr) {
        Some((family, a)) if family == to.address_type => a,
        _ => return Err(BridgeError::BadRecipient(to.chain_name.clone())),
    };
    let from = t.collateral();
    let priced = t.price(from, to, amount)?;
    let route = [to.chain_id.as_str(), to.token.address.as_str(), recipient.as_str()];
    let addrs = derive(&s.config.exchange_address, TransferKind::Withdrawal, &owner, &route);
    let bridge_address = address_key(&addrs[0]).expect("derived addresses parse");

    let mut next = s.bridge.next_transfer.lock().await;
    let rec = Transfer {
        to_amount: priced.to_units.to_string(),
        recipient: Some(recipient),
        ledger_amount: debit,
        ..new_transfer(*next, TransferKind::Withdrawal, &owner, bridge_address, (from, to), amount)
    };
    let mut batch = Batch::default();
    register(s, &addrs, TransferKind::Withdrawal, &owner, &mut batch)?;
    batch.open_withdrawal(rec.id);
    batch.add_transfer(&rec);
    match s.engine.transfer(owner, vec![(COLLATERAL.to_string(), LedgerChange::Debit(Amount(debit)))], batch).await {
        Ok(_) => {}
        Err(EngineError::Rejected(_)) => return Err(BridgeError::NotEnoughBalance),
        Err(e) => return Err(e.into()),
    }
    *next += 1;
    Ok((addrs, rec))
}

/// The transfers of a bridge address or of a wallet (its deposits and withdrawals), newest
/// first; none for an address never seen.
pub fn status(s: &AppState, address: &str) -> Result<Vec<Transfer>, BridgeError> {
    table(s)?;
    let a = address_key(address).ok_or(BridgeError::NotAnAddress)?;
    s.store.transfers_of(&a)?.into_iter().map(|id| load(s, id)).collect::<Result<_, StoreError>>().map_err(Into::into)
}

/// A transfer an index entry names (missing: the store is corrupt).
fn load(s: &AppState, id: u64) -> Result<Transfer, StoreError> {
    s.store.indexed_transfer(id)
}

/// The operator's report of an arrival on a deposit address.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ArrivalReport {
    pub deposit_address: String,
    pub from_chain_id: String,
    pub from_token_address: String,
    pub from_amount_base_unit: String,
    pub tx_hash: String,
}

/// What a report of an arrival did.
pub enum Arrival {
    /// Recorded now: COMPLETED and credited, or FAILED (below the source's minimum, or not
    /// covering the fees) with nothing credited.
    Recorded(Transfer),
    /// The transaction was reported before, with the same details: its record.
    Known(Transfer),
}

/// Prices an arrival on a deposit address into collateral and credits it; a transaction
/// already reported answers with its record when the report matches, and is refused when
/// it does not.
pub async fn confirm_deposit(s: &AppState, b: &ArrivalReport) -> Result<Arrival, BridgeError> {
    let t = table(s)?;
    let (family, bridge_address) = parse_address(&b.deposit_address).ok_or(BridgeError::UnknownDepositAddress)?;
    let Some(BridgeAddress { kind: TransferKind::Deposit, owner }) = s.store.bridge_address(&bridge_address)? else {
        return Err(BridgeError::UnknownDepositAddress);
    };
    let tx = b.tx_hash.trim();
    if tx.is_empty() {
        return Err(BridgeError::TxRequired);
    }
    let amount = base_units(&b.from_amount_base_unit)?;
    let from = t.source(&b.from_chain_id, &b.from_token_address)?;
    if from.address_type != family {
        return Err(BridgeError::WrongChain(from.chain_name.clone()));
    }
    let to = t.collateral();
    let tx_lower = tx.to_ascii_lowercase();

    let mut next = s.bridge.next_transfer.lock().await;
    if let Some(id) = s.store.deposit_of_tx(&from.chain_id, &tx_lower)? {
        let rec = load(s, id)?;
        let same = rec.bridge_address == bridge_address
            && rec.from_token_address == from.token.address
            && rec.from_amount == amount.to_string();
        if !same {
            return Err(BridgeError::TxConflict { tx: tx.to_string(), chain: from.chain_id.clone() });
        }
        return Ok(Arrival::Known(rec));
    }
    let mut rec = Transfer {
        status: Status::Completed,
        tx_hash: Some(tx.to_string()),
        ..new_transfer(*next, TransferKind::Deposit, &owner, bridge_address, (from, to), amount)
    };
    let credit = match t.price(from, to, amount) {
        Ok(p) => Some(u64::try_from(p.to_units).map_err(|_| Refusal::TooLarge)?),
        Err(Refusal::TooLarge) => return Err(Refusal::TooLarge.into()),
        Err(r) => {
            rec.status = Status::Failed;
            rec.reason = Some(r.to_string());
            None
        }
    };
    let mut batch = Batch::default();
    batch.put_deposit_tx(&from.chain_id, &tx_lower, rec.id);
    if let Some(c) = credit {
        rec.to_amount = c.to_string();
        rec.ledger_amount = c;
        batch.add_transfer(&rec);
        s.engine.transfer(owner, vec![(COLLATERAL.to_string(), LedgerChange::Credit(Amount(c)))], batch).await?;
    } else {
        batch.add_transfer(&rec);
        s.commit(batch).await?;
    }
    *next += 1;
    Ok(Arrival::Recorded(rec))
}

/// How the operator settles a withdrawal: COMPLETED with the destination transaction, or
/// FAILED (with a reason).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Outcome {
    pub status: Status,
    pub tx_hash: Option<String>,
    pub reason: Option<String>,
}

/// Settles a PROCESSING withdrawal; FAILED credits the collateral back.
pub async fn settle_withdrawal(s: &AppState, id: &str, b: Outcome) -> Result<Transfer, BridgeError> {
    let _lock = s.bridge.next_transfer.lock().await;
    let missing = || BridgeError::WithdrawalNotFound(id.to_string());
    let n: u64 = id.parse().map_err(|_| missing())?;
    let mut rec = s.store.transfer(n)?.ok_or_else(missing)?;
    if rec.kind != TransferKind::Withdrawal {
        return Err(missing());
    }
    if rec.status != Status::Processing {
        return Err(BridgeError::AlreadySettled { id: id.to_string(), status: rec.status.name() });
    }
    rec.updated_ms = now_millis();
    let mut batch = Batch::default();
    batch.close_withdrawal(rec.id);
    match b.status {
        Status::Processing => return Err(BridgeError::NotFinal),
        Status::Completed => {
            let tx = b.tx_hash.as_deref().map(str::trim).filter(|t| !t.is_empty());
            rec.tx_hash = Some(tx.ok_or(BridgeError::CompleteNeedsTx)?.into());
            rec.status = Status::Completed;
            batch.put_transfer(&rec);
            s.commit(batch).await?;
        }
        Status::Failed => {
            rec.status = Status::Failed;
            rec.reason = Some(b.reason.unwrap_or_else(|| "failed by the operator; the amount was refunded".into()));
            batch.put_transfer(&rec);
            let refund = LedgerChange::Credit(Amount(rec.ledger_amount));
            s.engine.transfer(rec.owner.clone(), vec![(COLLATERAL.to_string(), refund)], batch).await?;
        }
    }
    Ok(rec)
}

/// The PROCESSING withdrawals, oldest first (the operator's queue).
pub fn open_withdrawals(s: &AppState) -> Result<Vec<Transfer>, StoreError> {
    s.store.open_withdrawals()?.into_iter().map(|id| load(s, id)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_addresses_are_valid_stable_and_distinct() {
        let owner = "0x00000000000000000000000000000000000000aa";
        let a = derive("0xv", TransferKind::Deposit, owner, &[]);
        assert_eq!(a, derive("0xv", TransferKind::Deposit, owner, &[]));
        assert_ne!(a, derive("0xw", TransferKind::Deposit, owner, &[]), "venues differ");
        assert_ne!(a, derive("0xv", TransferKind::Withdrawal, owner, &[]), "kinds differ");
        let w1 = derive("0xv", TransferKind::Withdrawal, owner, &["1", "0xt", "0xr"]);
        assert_ne!(w1, derive("0xv", TransferKind::Withdrawal, owner, &["8453", "0xt", "0xr"]), "routes differ");
        assert!(a[0].starts_with("0x") && a[0] != a[0].to_ascii_lowercase(), "checksummed: {}", a[0]);
        assert!(a[2].starts_with("bc1q"), "{}", a[2]);
        for x in &a {
            assert!(address_key(x).is_some(), "{x} parses back");
        }
        assert_eq!(parse_address(&a[0]), Some((Family::Evm, a[0].to_ascii_lowercase())));
        assert_eq!(parse_address(&a[1]).map(|p| p.0), Some(Family::Svm));
        assert_eq!(address_key(&a[2].to_ascii_uppercase()), Some(a[2].clone()));
        assert_eq!(address_key(&a[1]), Some(a[1].clone()));
        for bad in ["", "nobody", "0x12", "bc1qqqqq", "1111"] {
            assert_eq!(address_key(bad), None, "{bad}");
        }
    }
}
