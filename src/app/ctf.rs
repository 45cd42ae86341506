//! Conditional tokens in ledger mode (SPEC §1.6, docs/reference/ctf.md): split, merge, redeem and
//! the negative-risk conversion, for the `/ctf/*` routes and the relay.
//!
//! - split: `amount` collateral → `amount` of each outcome token;
//! - merge: `amount` of each outcome token → `amount` collateral;
//! - redeem (once the market is RESOLVED): every free token of the market is burned and
//!   each winning token pays one unit of collateral.
//!
//! Value is conserved exactly: each is one all-or-nothing engine command over the wallet's
//! accounts, written with its activity row and position counters in the same batch.

use alloy_primitives::keccak256;
use serde::Deserialize;

use crate::app::catalogue::ResolutionStatus;
use crate::app::{acts_for, AppState};
use crate::auth::normalize_address;
use crate::domain::analytics::{CtfActivity, CtfKind, Position, DAY};
use crate::domain::{now_micros, parse_u64, Amount, ApiKeyRecord, NumberText, COLLATERAL};
use crate::engine::{EngineError, LedgerChange};
use crate::store::{Batch, StoreError};

/// What a conditional-token service refuses (the routes give each its SPEC §7 reply).
#[derive(Debug, thiserror::Error)]
pub enum CtfError {
    #[error("market not found")]
    MarketNotFound,
    #[error("unknown operation")]
    UnknownOperation,
    #[error("amount must be a positive integer string (base units)")]
    NotAnAmount,
    #[error("amount too large")]
    AmountTooLarge,
    #[error("address must be a 0x address")]
    NotAWallet,
    #[error("the address has to be the owner of the API KEY")]
    NotOwner,
    #[error("redeem takes no amount: it redeems every free token of the market")]
    RedeemTakesNoAmount,
    #[error("market is not resolved")]
    NotResolved,
    #[error("nothing to redeem")]
    NothingToRedeem,
    #[error("indexSet must be a non-zero bitmask of the market's {0} questions")]
    BadIndexSet(usize),
    #[error("not enough balance / allowance")]
    NotEnoughBalance,
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// What an operation was about: a market, or a negative-risk market's questions.
pub enum Subject {
    Condition(String),
    NegRisk { market_id: String, index_set: u64 },
}

/// A done operation: its tokens and collateral moved, its transaction and the balances of
/// the accounts it touched (in the order of its ledger changes).
pub struct Receipt {
    pub kind: CtfKind,
    pub subject: Subject,
    pub wallet: String,
    pub size: u64,
    pub usdc_size: u64,
    pub tx_hash: String,
    pub time: u64,
    pub balances: Vec<(String, u64)>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CtfRequest {
    pub condition_id: String,
    /// Base units (micro-units) as an integer string; split and merge only.
    pub amount: Option<String>,
    /// The wallet: the key's address (default) or its proxy wallet.
    pub address: Option<String>,
}

/// A positive base-unit amount (an integer string), as every ledger operation takes it.
pub fn base_amount(v: Option<&str>) -> Result<u64, CtfError> {
    v.and_then(|a| parse_u64(a).ok()).filter(|&n| n > 0).ok_or(CtfError::NotAnAmount)
}

/// The wallet an operation moves: the key's address, or the proxy it names.
pub fn wallet_of(s: &AppState, key: &ApiKeyRecord, address: Option<&str>) -> Result<String, CtfError> {
    let wallet = match address {
        None => key.address.to_string(),
        Some(a) => normalize_address(a).ok_or(CtfError::NotAWallet)?,
    };
    if !acts_for(s, key, &wallet) {
        return Err(CtfError::NotOwner);
    }
    Ok(wallet)
}

/// What an operation will move, before it is applied: its ledger changes, activity rows and
/// position counters.
pub struct Plan {
    kind: CtfKind,
    subject: Subject,
    changes: Vec<(String, LedgerChange)>,
    rows: Vec<Row>,
    moves: Vec<(u32, String, Position)>,
    size: u64,
    usdc_size: u64,
}

/// Split, merge or redeem for a wallet the caller may move (HTTP handler or relay).
pub async fn operate_for(s: &AppState, kind: CtfKind, wallet: &str, b: CtfRequest) -> Result<Receipt, CtfError> {
    let plan = plan(s, kind, wallet, b).await?;
    receipt(s, wallet, plan).await
}

/// Applies one operation in a transaction of its own.
async fn receipt(s: &AppState, wallet: &str, plan: Plan) -> Result<Receipt, CtfError> {
    let tx = keccak256(uuid::Uuid::new_v4().as_bytes()).0;
    let (time, balances) = apply(s, wallet, std::slice::from_ref(&plan), tx, Batch::default()).await?;
    let tx_hash = format!("0x{}", alloy_primitives::hex::encode(tx));
    let Plan { kind, subject, size, usdc_size, .. } = plan;
    Ok(Receipt { kind, subject, wallet: wallet.to_string(), size, usdc_size, tx_hash, time, balances })
}

/// What a split, merge or redeem of `wallet` will move.
pub async fn plan(s: &AppState, kind: CtfKind, wallet: &str, b: CtfRequest) -> Result<Plan, CtfError> {
    let wallet = wallet.to_string();
    let view = s.registry.condition(&b.condition_id).ok_or(CtfError::MarketNotFound)?;
    let m = &view.market;
    let (yes, no) = (m.tokens[0].token_id.clone(), m.tokens[1].token_id.clone());
    let (changes, positions, size, usdc_size) = match kind {
        CtfKind::Split | CtfKind::Merge => complete_sets(kind, base_amount(b.amount.as_deref())?, &yes, &no),
        CtfKind::Redeem => {
            if b.amount.is_some() {
                return Err(CtfError::RedeemTakesNoAmount);
            }
            redemption(s, &m.condition_id, &wallet, &yes, &no, None).await?
        }
        CtfKind::Reward | CtfKind::Conversion => return Err(CtfError::UnknownOperation),
    };
    Ok(market_plan(kind, m, (changes, positions, size, usdc_size)))
}

/// The plan of an operation on one market that moves `movement`.
fn market_plan(kind: CtfKind, m: &crate::domain::Market, movement: Movement) -> Plan {
    let (changes, positions, size, usdc_size) = movement;
    let (yes, no) = (m.tokens[0].token_id.clone(), m.tokens[1].token_id.clone());
    let row = Row { kind, market: m.idx, condition_id: m.condition_id.clone(), size, usdc_size };
    let moves = vec![(m.idx, yes, positions[0]), (m.idx, no, positions[1])];
    let subject = Subject::Condition(m.condition_id.clone());
    Plan { kind, subject, changes, rows: vec![row], moves, size, usdc_size }
}

/// What an operation moves: the ledger changes, the position change per token (YES, NO),
/// the tokens and the collateral.
type Movement = (Vec<(String, LedgerChange)>, [Position; 2], u64, u64);

/// A split (collateral into `a` of each token) or a merge (back). A complete set costs one
/// unit: half of it to each side's average price.
fn complete_sets(kind: CtfKind, a: u64, yes: &str, no: &str) -> Movement {
    use LedgerChange::{Credit, Debit};
    let (usdc, yes, no) = (COLLATERAL.to_string(), yes.to_string(), no.to_string());
    let half = [a / 2, a - a / 2];
    if kind == CtfKind::Split {
        let p = half.map(|c| Position { size: a as i64, bought: a as i64, cost: c as i64, ..Default::default() });
        (vec![(usdc, Debit(Amount(a))), (yes, Credit(Amount(a))), (no, Credit(Amount(a)))], p, a, a)
    } else {
        let p = half.map(|c| Position { size: -(a as i64), sold: a as i64, proceeds: c as i64, ..Default::default() });
        (vec![(yes, Debit(Amount(a))), (no, Debit(Amount(a))), (usdc, Credit(Amount(a)))], p, a, a)
    }
}

/// A redemption of `amounts` (YES, NO) of a market, as the negative-risk adapter's
/// `redeemPositions` takes them; `None`: everything held, as ConditionalTokens'.
pub async fn plan_redeem(
    s: &AppState,
    wallet: &str,
    condition_id: &str,
    amounts: Option<[u64; 2]>,
) -> Result<Plan, CtfError> {
    let view = s.registry.condition(condition_id).ok_or(CtfError::MarketNotFound)?;
    let m = &view.market;
    let (yes, no) = (&m.tokens[0].token_id, &m.tokens[1].token_id);
    let movement = redemption(s, &m.condition_id, wallet, yes, no, amounts).await?;
    Ok(market_plan(CtfKind::Redeem, m, movement))
}

/// Redeeming `amounts` (YES, NO) of a resolved market, or everything the wallet holds free
/// of it: the winning side pays one unit a token, the losing side nothing.
async fn redemption(
    s: &AppState,
    condition_id: &str,
    wallet: &str,
    yes: &str,
    no: &str,
    amounts: Option<[u64; 2]>,
) -> Result<Movement, CtfError> {
    use LedgerChange::{Credit, Debit};
    let meta = s.catalogue.meta(condition_id);
    let winner = match meta.as_deref() {
        Some(x) if x.resolution == Some(ResolutionStatus::Resolved) => x.resolved_outcome,
        _ => None,
    };
    let Some(winner) = winner.filter(|w| *w < 2) else {
        return Err(CtfError::NotResolved);
    };
    let accounts = s.engine.accounts(wallet.to_string()).await?;
    let free = |t: &str| {
        accounts.iter().find(|(a, _)| a == t).map_or(0, |(_, x)| x.balance.saturating_sub(x.reserved).units())
    };
    let free = [free(yes), free(no)];
    let held = amounts.unwrap_or(free);
    if held[0] > free[0] || held[1] > free[1] {
        return Err(CtfError::NotEnoughBalance);
    }
    if held == [0, 0] {
        return Err(CtfError::NothingToRedeem);
    }
    let won = held[winner as usize];
    let p = [0, 1].map(|i| Position {
        size: -(held[i] as i64),
        sold: held[i] as i64,
        proceeds: if i == winner as usize { held[i] as i64 } else { 0 },
        ..Default::default()
    });
    let mut changes: Vec<_> = [(yes.to_string(), held[0]), (no.to_string(), held[1])]
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(t, n)| (t, Debit(Amount(n))))
        .collect();
    changes.push((COLLATERAL.to_string(), Credit(Amount(won))));
    Ok((changes, p, held[0] + held[1], won))
}

/// One activity row of an operation.
struct Row {
    kind: CtfKind,
    market: u32,
    condition_id: String,
    size: u64,
    usdc_size: u64,
}

/// Applies operations' ledger changes as one engine Transfer, written with `records`, their
/// activity rows (under transaction `tx`) and position counters (market, token, change):
/// all or nothing. Returns the time and the balances of the accounts the changes touched,
/// in their order. Every debit is checked against the balance before the transfer.
pub async fn apply(
    s: &AppState,
    wallet: &str,
    plans: &[Plan],
    tx: [u8; 32],
    mut records: Batch,
) -> Result<(u64, Vec<(String, u64)>), CtfError> {
    let micros = now_micros();
    let time = micros / 1_000_000;
    let changes: Vec<_> = plans.iter().flat_map(|p| p.changes.iter().cloned()).collect();
    for (i, row) in plans.iter().flat_map(|p| activity_rows(p, tx, time)).enumerate() {
        records.add_activity(wallet, micros + i as u64, &row);
    }
    for (market, token, p) in plans.iter().flat_map(|p| &p.moves) {
        if *p != Position::default() {
            records.move_position(*market, (time / DAY) as u32, wallet, token, p);
        }
    }
    let accounts = match s.engine.transfer(wallet.to_string(), changes.clone(), records).await {
        Ok(a) => a,
        Err(EngineError::Rejected(_)) => return Err(CtfError::NotEnoughBalance),
        Err(e) => return Err(e.into()),
    };
    let balances =
        changes.iter().zip(&accounts).map(|((asset, _), acc)| (asset.clone(), acc.balance.units())).collect();
    Ok((time, balances))
}

/// The activity rows of an operation planned, done in transaction `tx` at `time`.
pub fn activity_rows(plan: &Plan, tx: [u8; 32], time: u64) -> Vec<CtfActivity> {
    plan.rows
        .iter()
        .map(|r| CtfActivity {
            kind: r.kind,
            condition_id: r.condition_id.clone(),
            market_idx: r.market,
            size: Amount(r.size),
            usdc_size: Amount(r.usdc_size),
            tx_hash: tx,
            time,
        })
        .collect()
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConvertRequest {
    /// The negative-risk market (the markets' `neg_risk_market_id`).
    pub market_id: String,
    /// Bitmask of question indices whose NO tokens are converted (1 = question 0).
    pub index_set: NumberText,
    /// Base units of NO converted per question.
    pub amount: String,
    pub address: Option<String>,
}

/// The negative-risk adapter's convertPositions(marketId, indexSet, amount) in ledger mode,
/// for a wallet the caller may move (HTTP handler or relay). For each question in
/// `indexSet` it burns `amount` NO tokens; for each other question of the market it mints
/// `amount` YES tokens; and it pays (|indexSet| − 1) · `amount` collateral. Value is
/// conserved whichever question wins. A market's questions are its binary markets in
/// creation order (docs/reference/ctf.md).
pub async fn convert_for(s: &AppState, wallet: &str, b: ConvertRequest) -> Result<Receipt, CtfError> {
    let plan = plan_convert(s, &b)?;
    receipt(s, wallet, plan).await
}

/// The questions of the negative-risk market `market_id`: its binary markets in creation
/// order.
pub fn questions_of(s: &AppState, market_id: &str) -> Vec<std::sync::Arc<crate::commit::views::MarketView>> {
    s.registry
        .tables()
        .list
        .iter()
        .filter(|v| v.market.neg_risk && v.market.neg_risk_market_id.as_deref() == Some(market_id))
        .cloned()
        .collect()
}

/// A conversion's questions (the market's binary markets in creation order), index set
/// and amount, checked.
pub fn convert_terms(
    s: &AppState,
    b: &ConvertRequest,
) -> Result<(Vec<std::sync::Arc<crate::commit::views::MarketView>>, u64, u64), CtfError> {
    let questions = questions_of(s, &b.market_id);
    if questions.is_empty() {
        return Err(CtfError::MarketNotFound);
    }
    let n = questions.len();
    let set = parse_u64(&b.index_set.text())
        .ok()
        .filter(|&x| x > 0 && (n >= 64 || x >> n == 0))
        .ok_or(CtfError::BadIndexSet(n))?;
    let a = base_amount(Some(&b.amount))?;
    Ok((questions, set, a))
}

/// What a conversion ([`convert_for`]) will move.
pub fn plan_convert(s: &AppState, b: &ConvertRequest) -> Result<Plan, CtfError> {
    let (questions, set, a) = convert_terms(s, b)?;
    let picked = |i: usize| set >> i & 1 == 1;
    let k = (0..questions.len()).filter(|&i| picked(i)).count() as u64;
    let out = a.checked_mul(k - 1).ok_or(CtfError::AmountTooLarge)?;
    use LedgerChange::{Credit, Debit};
    let (mut changes, mut rows, mut moves) = (Vec::new(), Vec::new(), Vec::new());
    for (i, v) in questions.iter().enumerate() {
        let m = &v.market;
        if picked(i) {
            let no = m.tokens[1].token_id.clone();
            changes.push((no.clone(), Debit(Amount(a))));
            // The first converted market's row carries the collateral paid out.
            let usdc_size = if rows.is_empty() { out } else { 0 };
            rows.push(Row {
                kind: CtfKind::Conversion,
                market: m.idx,
                condition_id: m.condition_id.clone(),
                size: a,
                usdc_size,
            });
            let p = Position { size: -(a as i64), sold: a as i64, proceeds: usdc_size as i64, ..Default::default() };
            moves.push((m.idx, no, p));
        } else {
            let yes = m.tokens[0].token_id.clone();
            changes.push((yes.clone(), Credit(Amount(a))));
            moves.push((m.idx, yes, Position { size: a as i64, bought: a as i64, ..Default::default() }));
        }
    }
    if out > 0 {
        changes.push((COLLATERAL.to_string(), Credit(Amount(out))));
    }
    let subject = Subject::NegRisk { market_id: b.market_id.clone(), index_set: set };
    Ok(Plan { kind: CtfKind::Conversion, subject, changes, rows, moves, size: a, usdc_size: out })
}
