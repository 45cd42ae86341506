//! Deposits and withdrawals in ledger mode (docs/bridge.md).
//!
//! - `POST /deposit` gives a wallet its bridge addresses (EVM, Solana, Bitcoin), derived
//!   deterministically from the wallet, and registers them.
//! - The operator reports an arrival on one of them (`POST /internal/bridge/deposits`); it
//!   is priced like a quote and credited to the wallet's collateral, in one write with its
//!   record. A transaction hash is credited once.
//! - `POST /withdraw` (L2-signed by the wallet's key) debits the collateral into a
//!   PROCESSING withdrawal, in one write; the operator completes it with the destination
//!   transaction (`POST /internal/bridge/withdrawals/{id}`) or fails it, which refunds.
//! - `GET /status/{address}` lists the transfers of a bridge address or of a wallet.
//!
//! Every change of a transfer goes through [`Desk`]'s lock, so two reports of one
//! transaction cannot both credit, and a withdrawal cannot be completed and failed.

use std::sync::Arc;

use alloy_primitives::{keccak256, Address};
use serde::{Deserialize, Serialize};
use serde_json::{json as j, Value};
use warp::http::StatusCode;
use warp::Reply;

use super::{base_units, table, Asset, Family, Refusal};
use crate::api::{authenticate, json, ApiError, ApiResult, Req};
use crate::app::{acts_for, AppState};
use crate::auth::normalize_address;
use crate::domain::{now_millis, COLLATERAL};
use crate::engine::{EngineError, LedgerChange};
use crate::store::{cf, encode, Batch, Store, StoreError};

const DEPOSIT_NOTE: &str = "Send a supported asset (see /supported-assets) to the address of its chain; \
     it is credited to your wallet as collateral once the operator confirms its arrival.";
const WITHDRAW_NOTE: &str = "Withdrawals are debited from your collateral at once and sent by the operator; \
     follow them with /status on the bridge address or on your wallet.";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Kind {
    Deposit,
    Withdrawal,
}

/// Polymarket's bridge statuses that ledger mode uses: a withdrawal is PROCESSING until the
/// operator completes or fails it; a confirmed deposit is COMPLETED at once (or FAILED when
/// it cannot be credited: below the minimum, or not covering the fees).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Status {
    Processing,
    Completed,
    Failed,
}

impl Status {
    fn name(self) -> &'static str {
        match self {
            Status::Processing => "PROCESSING",
            Status::Completed => "COMPLETED",
            Status::Failed => "FAILED",
        }
    }
}

/// What a registered bridge address stands for: a wallet's deposits, or a wallet's
/// withdrawals to one destination.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct BridgeAddress {
    kind: Kind,
    owner: String,
}

/// One deposit or withdrawal.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Transfer {
    pub id: u64,
    pub kind: Kind,
    /// The exchange wallet credited or debited.
    pub owner: String,
    pub bridge_address: String,
    pub from_chain_id: String,
    pub from_token_address: String,
    pub from_amount: String,
    pub to_chain_id: String,
    pub to_token_address: String,
    pub to_amount: String,
    pub recipient: Option<String>,
    /// Collateral micro-units credited (deposit) or debited (withdrawal).
    pub ledger_amount: u64,
    pub status: Status,
    /// The source transaction of a deposit; the destination transaction of a withdrawal.
    pub tx_hash: Option<String>,
    pub reason: Option<String>,
    pub created_ms: u64,
    pub updated_ms: u64,
}

impl Transfer {
    /// A PROCESSING transfer of `amount` base units of `route.0` into `route.1`, created now,
    /// with nothing out yet.
    fn new(
        id: u64,
        kind: Kind,
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

    /// Polymarket's status transaction (fromChainId … createdTimeMs), plus what a ledger
    /// venue knows: id, type, wallet, bridge address, amount out, recipient, reason.
    fn view(&self) -> Value {
        let mut v = j!({
            "id": self.id.to_string(),
            "type": self.kind,
            "address": self.owner,
            "bridgeAddress": self.bridge_address,
            "fromChainId": self.from_chain_id,
            "fromTokenAddress": self.from_token_address,
            "fromAmountBaseUnit": self.from_amount,
            "toChainId": self.to_chain_id,
            "toTokenAddress": self.to_token_address,
            "toAmountBaseUnit": self.to_amount,
            "status": self.status,
            "createdTimeMs": self.created_ms,
            "updatedTimeMs": self.updated_ms,
        });
        for (k, x) in [("recipientAddr", &self.recipient), ("txHash", &self.tx_hash), ("reason", &self.reason)] {
            if let Some(x) = x {
                v[k] = Value::String(x.clone());
            }
        }
        v
    }
}

/// Key prefixes in the `bridge` family.
mod key {
    /// bridge address → what it stands for.
    pub fn address(a: &str) -> Vec<u8> {
        [b"a/", a.as_bytes()].concat()
    }
    /// source chain and transaction of a credited deposit → transfer id.
    pub fn source_tx(chain: &str, tx: &str) -> Vec<u8> {
        [b"t/", chain.as_bytes(), b"/", tx.as_bytes()].concat()
    }
    /// PROCESSING withdrawals, by id.
    pub const OPEN: &[u8] = b"o/";
    pub fn open(id: u64) -> Vec<u8> {
        [OPEN, &id.to_be_bytes()].concat()
    }
    /// An address's transfers, oldest first.
    pub fn by_address(a: &str, id: u64) -> Vec<u8> {
        [a.as_bytes(), b"/", &id.to_be_bytes()].concat()
    }
}

/// Serialises transfer changes and numbers them.
pub struct Desk {
    next_id: tokio::sync::Mutex<u64>,
}

impl Desk {
    pub fn load(store: &Store) -> Result<Desk, StoreError> {
        let mut last = 0;
        store.walk(cf::TRANSFERS, b"", None, true, |k, _| {
            last = k.try_into().map(u64::from_be_bytes).unwrap_or(0);
            std::ops::ControlFlow::Break(())
        })?;
        Ok(Desk { next_id: tokio::sync::Mutex::new(last + 1) })
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
fn derive(venue: &str, kind: Kind, owner: &str, route: &[&str]) -> [String; 3] {
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

fn addresses_view(a: &[String; 3], note: &str) -> Value {
    j!({ "address": { "evm": a[0], "svm": a[1], "btc": a[2] }, "note": note })
}

/// Registers bridge addresses not registered yet (in `batch`); false when all were.
fn register(s: &AppState, addrs: &[String; 3], kind: Kind, owner: &str, batch: &mut Batch) -> Result<bool, ApiError> {
    let mut added = false;
    for a in addrs {
        let k = key::address(&address_key(a).expect("derived addresses parse"));
        if s.store.get_raw(cf::BRIDGE, &k)?.is_none() {
            batch.put(cf::BRIDGE, k, encode(&BridgeAddress { kind, owner: owner.to_string() }));
            added = true;
        }
    }
    Ok(added)
}

fn created(v: &Value) -> ApiResult {
    Ok(warp::reply::with_status(warp::reply::json(v), StatusCode::CREATED).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DepositRequest {
    address: String,
}

/// POST /deposit {address} → 201 {address: {evm, svm, btc}, note}; the same addresses
/// every time for one wallet.
pub async fn deposit(s: Arc<AppState>, r: Req) -> ApiResult {
    table(&s)?;
    let b: DepositRequest = r.json()?;
    let owner = normalize_address(&b.address).ok_or_else(|| ApiError::bad("address must be a 0x address"))?;
    let addrs = derive(&s.config.exchange_address, Kind::Deposit, &owner, &[]);
    let mut batch = Batch::default();
    if register(&s, &addrs, Kind::Deposit, &owner, &mut batch)? {
        s.commit(batch).await?;
    }
    created(&addresses_view(&addrs, DEPOSIT_NOTE))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct WithdrawRequest {
    address: String,
    to_chain_id: String,
    to_token_address: String,
    recipient_addr: String,
    from_amount_base_unit: String,
}

/// POST /withdraw, L2-signed by a key of the wallet (or of its proxy's signer): debits
/// `fromAmountBaseUnit` of collateral into a PROCESSING withdrawal to the destination.
/// 201 {address: {evm, svm, btc} (the withdrawal's bridge addresses), note, transaction}.
pub async fn withdraw(s: Arc<AppState>, r: Req) -> ApiResult {
    let t = table(&s)?;
    let key = authenticate(&s, &r)?;
    let b: WithdrawRequest = r.json()?;
    let owner = normalize_address(&b.address).ok_or_else(|| ApiError::bad("address must be a 0x address"))?;
    if !acts_for(&s, &key, &owner).await? {
        return Err(ApiError::bad("the withdrawal address has to be the owner of the API KEY"));
    }
    let amount = base_units(&b.from_amount_base_unit)?;
    let debit = u64::try_from(amount).map_err(|_| Refusal::TooLarge)?;
    let to = t
        .find(&b.to_chain_id, &b.to_token_address)
        .ok_or_else(|| ApiError::bad("unsupported destination chain and token (see /supported-assets)"))?;
    let recipient = match parse_address(&b.recipient_addr) {
        Some((family, a)) if family == to.address_type => a,
        _ => return Err(ApiError::bad(format!("recipientAddr must be an address on {}", to.chain_name))),
    };
    let from = t.collateral();
    let priced = t.price(from, to, amount)?;
    let route = [to.chain_id.as_str(), to.token.address.as_str(), recipient.as_str()];
    let addrs = derive(&s.config.exchange_address, Kind::Withdrawal, &owner, &route);
    let bridge_address = address_key(&addrs[0]).expect("derived addresses parse");

    let mut next = s.transfers.next_id.lock().await;
    let rec = Transfer {
        to_amount: priced.to_units.to_string(),
        recipient: Some(recipient),
        ledger_amount: debit,
        ..Transfer::new(*next, Kind::Withdrawal, &owner, bridge_address, (from, to), amount)
    };
    let mut batch = Batch::default();
    register(&s, &addrs, Kind::Withdrawal, &owner, &mut batch)?;
    batch.put(cf::BRIDGE, key::open(rec.id), Vec::new());
    put_new(&mut batch, &rec);
    match s.engine.transfer(owner, vec![(COLLATERAL.to_string(), LedgerChange::Debit(debit))], batch).await {
        Ok(_) => {}
        Err(EngineError::Rejected(_)) => return Err(ApiError::bad("not enough balance / allowance")),
        Err(e) => return Err(e.into()),
    }
    *next += 1;
    let mut v = addresses_view(&addrs, WITHDRAW_NOTE);
    v["transaction"] = rec.view();
    created(&v)
}

/// A new transfer and its entries under the wallet and the bridge address.
fn put_new(batch: &mut Batch, rec: &Transfer) {
    batch.put(cf::TRANSFERS_BY_ADDRESS, key::by_address(&rec.owner, rec.id), Vec::new());
    batch.put(cf::TRANSFERS_BY_ADDRESS, key::by_address(&rec.bridge_address, rec.id), Vec::new());
    batch.put(cf::TRANSFERS, rec.id.to_be_bytes().to_vec(), encode(rec));
}

/// GET /status/{address}: `{"transactions": [...]}`, newest first, for a bridge address or
/// a wallet (its deposits and withdrawals); empty for an address never seen.
pub fn status(s: &AppState, address: &str) -> ApiResult {
    table(s)?;
    let a = address_key(address).ok_or_else(|| ApiError::bad("address must be an EVM, Solana or Bitcoin address"))?;
    let prefix = [a.as_bytes(), b"/"].concat();
    let mut out = Vec::new();
    s.store.try_walk::<ApiError>(cf::TRANSFERS_BY_ADDRESS, &prefix, None, true, |k, _| {
        out.push(load(s, id_at_end(k))?.view());
        Ok(std::ops::ControlFlow::Continue(()))
    })?;
    json(&j!({ "transactions": out }))
}

fn id_at_end(k: &[u8]) -> u64 {
    k.len().checked_sub(8).and_then(|at| k[at..].try_into().ok()).map(u64::from_be_bytes).unwrap_or(0)
}

fn load(s: &AppState, id: u64) -> Result<Transfer, ApiError> {
    s.store.get(cf::TRANSFERS, &id.to_be_bytes())?.ok_or_else(ApiError::db)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ArrivalReport {
    deposit_address: String,
    from_chain_id: String,
    from_token_address: String,
    from_amount_base_unit: String,
    tx_hash: String,
}

/// POST /internal/bridge/deposits: the operator reports an arrival on a deposit address.
/// Priced into collateral and credited (201, COMPLETED), or recorded FAILED when below the
/// source's minimum or not covering the fees (201, nothing credited). A transaction already
/// reported answers 200 with its record when the report matches, 409 when it does not.
pub async fn confirm_deposit(s: Arc<AppState>, r: Req) -> ApiResult {
    let t = table(&s)?;
    let b: ArrivalReport = r.json()?;
    let unknown = || ApiError::not_found("unknown deposit address");
    let (family, bridge_address) = parse_address(&b.deposit_address).ok_or_else(unknown)?;
    let Some(BridgeAddress { kind: Kind::Deposit, owner }) = registered(&s, &bridge_address)? else {
        return Err(unknown());
    };
    let tx = b.tx_hash.trim();
    if tx.is_empty() {
        return Err(ApiError::bad("txHash is required"));
    }
    let amount = base_units(&b.from_amount_base_unit)?;
    let from = t
        .find(&b.from_chain_id, &b.from_token_address)
        .ok_or_else(|| ApiError::bad("unsupported source chain and token (see /supported-assets)"))?;
    if from.address_type != family {
        return Err(ApiError::bad(format!("the deposit address is not an address on {}", from.chain_name)));
    }
    let to = t.collateral();
    let tx_key = key::source_tx(&from.chain_id, &tx.to_ascii_lowercase());

    let mut next = s.transfers.next_id.lock().await;
    if let Some(id) = s.store.get_raw(cf::BRIDGE, &tx_key)? {
        let rec = load(&s, id_at_end(&id))?;
        let same = rec.bridge_address == bridge_address
            && rec.from_token_address == from.token.address
            && rec.from_amount == amount.to_string();
        if !same {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                format!("transaction {tx} on chain {} is already recorded with other details", from.chain_id),
            ));
        }
        return json(&rec.view());
    }
    let mut rec = Transfer {
        status: Status::Completed,
        tx_hash: Some(tx.to_string()),
        ..Transfer::new(*next, Kind::Deposit, &owner, bridge_address, (from, to), amount)
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
    batch.put(cf::BRIDGE, tx_key, rec.id.to_be_bytes().to_vec());
    if let Some(c) = credit {
        rec.to_amount = c.to_string();
        rec.ledger_amount = c;
        put_new(&mut batch, &rec);
        s.engine.transfer(owner, vec![(COLLATERAL.to_string(), LedgerChange::Credit(c))], batch).await?;
    } else {
        put_new(&mut batch, &rec);
        s.commit(batch).await?;
    }
    *next += 1;
    created(&rec.view())
}

fn registered(s: &AppState, a: &str) -> Result<Option<BridgeAddress>, StoreError> {
    s.store.get(cf::BRIDGE, &key::address(a))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Outcome {
    status: Status,
    tx_hash: Option<String>,
    reason: Option<String>,
}

/// POST /internal/bridge/withdrawals/{id} {status: COMPLETED, txHash} or {status: FAILED,
/// reason?}: settles a PROCESSING withdrawal; FAILED credits the collateral back.
pub async fn settle_withdrawal(s: Arc<AppState>, id: String, r: Req) -> ApiResult {
    let b: Outcome = r.json()?;
    let _lock = s.transfers.next_id.lock().await;
    let missing = || ApiError::not_found(format!("withdrawal {id} not found"));
    let n: u64 = id.parse().map_err(|_| missing())?;
    let mut rec: Transfer = s.store.get(cf::TRANSFERS, &n.to_be_bytes())?.ok_or_else(missing)?;
    if rec.kind != Kind::Withdrawal {
        return Err(missing());
    }
    if rec.status != Status::Processing {
        return Err(ApiError::new(StatusCode::CONFLICT, format!("withdrawal {id} is already {}", rec.status.name())));
    }
    rec.updated_ms = now_millis();
    let mut batch = Batch::default();
    batch.delete(cf::BRIDGE, key::open(rec.id));
    match b.status {
        Status::Processing => return Err(ApiError::bad("status must be COMPLETED or FAILED")),
        Status::Completed => {
            let tx = b.tx_hash.as_deref().map(str::trim).filter(|t| !t.is_empty());
            rec.tx_hash = Some(tx.ok_or_else(|| ApiError::bad("txHash is required to complete a withdrawal"))?.into());
            rec.status = Status::Completed;
            batch.put(cf::TRANSFERS, rec.id.to_be_bytes().to_vec(), encode(&rec));
            s.commit(batch).await?;
        }
        Status::Failed => {
            rec.status = Status::Failed;
            rec.reason = Some(b.reason.unwrap_or_else(|| "failed by the operator; the amount was refunded".into()));
            batch.put(cf::TRANSFERS, rec.id.to_be_bytes().to_vec(), encode(&rec));
            let refund = LedgerChange::Credit(rec.ledger_amount);
            s.engine.transfer(rec.owner.clone(), vec![(COLLATERAL.to_string(), refund)], batch).await?;
        }
    }
    json(&rec.view())
}

/// GET /internal/bridge/withdrawals: the PROCESSING withdrawals, oldest first (the
/// operator's queue).
pub fn open_withdrawals(s: &AppState) -> ApiResult {
    let mut out = Vec::new();
    s.store.try_walk::<ApiError>(cf::BRIDGE, key::OPEN, None, false, |k, _| {
        out.push(load(s, id_at_end(k))?.view());
        Ok(std::ops::ControlFlow::Continue(()))
    })?;
    json(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_addresses_are_valid_stable_and_distinct() {
        let owner = "0x00000000000000000000000000000000000000aa";
        let a = derive("0xv", Kind::Deposit, owner, &[]);
        assert_eq!(a, derive("0xv", Kind::Deposit, owner, &[]));
        assert_ne!(a, derive("0xw", Kind::Deposit, owner, &[]), "venues differ");
        assert_ne!(a, derive("0xv", Kind::Withdrawal, owner, &[]), "kinds differ");
        let w1 = derive("0xv", Kind::Withdrawal, owner, &["1", "0xt", "0xr"]);
        assert_ne!(w1, derive("0xv", Kind::Withdrawal, owner, &["8453", "0xt", "0xr"]), "routes differ");
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

    #[test]
    fn keys_end_with_the_id() {
        assert_eq!(id_at_end(&key::by_address("0xab", 7)), 7);
        assert_eq!(id_at_end(&key::open(300)), 300);
        assert_eq!(id_at_end(b"short"), 0);
    }
}
