//! Conditional tokens in ledger mode (SPEC §1.6, docs/ctf.md): `POST /ctf/split`,
//! `/ctf/merge` and `/ctf/redeem`, L2-signed.
//!
//! - split: `amount` collateral → `amount` of each outcome token;
//! - merge: `amount` of each outcome token → `amount` collateral;
//! - redeem (once the market is RESOLVED): every free token of the market is burned and
//!   each winning token pays one unit of collateral.
//!
//! Value is conserved exactly: each is one all-or-nothing engine command over the wallet's
//! accounts, written with its activity row and position counters in the same batch.

use std::sync::Arc;

use alloy_primitives::keccak256;
use serde::Deserialize;
use serde_json::json as j;
use warp::Filter;

use super::{authenticate, json, req, respond, with_state, ApiError, ApiResult, Req, Routes};
use crate::app::{acts_for, AppState};
use crate::auth::normalize_address;
use crate::catalogue::ResolutionStatus;
use crate::domain::ApiKeyRecord;
use crate::domain::NumberText;
use crate::domain::{now_micros, parse_u64, COLLATERAL};
use crate::engine::{EngineError, LedgerChange};
use crate::store::index::{self, CtfActivity, CtfKind, Position, DAY};
use crate::store::{cf, encode, Batch};

pub fn routes(state: Arc<AppState>) -> Routes {
    let convert = warp::path!("ctf" / "convert")
        .and(warp::post())
        .and(req())
        .and(with_state(state.clone()))
        .then(|r, s| async move { respond(convert(s, r).await) });
    let route = move |name: &'static str, kind: CtfKind| {
        warp::path("ctf")
            .and(warp::path(name))
            .and(warp::path::end())
            .and(warp::post())
            .and(req())
            .and(with_state(state.clone()))
            .then(move |r, s| async move { respond(operate(s, kind, r).await) })
    };
    route("split", CtfKind::Split)
        .or(route("merge", CtfKind::Merge))
        .unify()
        .or(route("redeem", CtfKind::Redeem))
        .unify()
        .or(convert)
        .unify()
        .boxed()
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct CtfRequest {
    condition_id: String,
    /// Base units (micro-units) as an integer string; split and merge only.
    amount: Option<String>,
    /// The wallet: the key's address (default) or its proxy wallet.
    pub(crate) address: Option<String>,
}

/// A positive base-unit amount (an integer string), as every ledger operation takes it.
pub(crate) fn amount(v: Option<&str>) -> Result<u64, ApiError> {
    v.and_then(|a| parse_u64(a).ok())
        .filter(|&n| n > 0)
        .ok_or_else(|| ApiError::bad("amount must be a positive integer string (base units)"))
}

/// The wallet an operation moves: the key's address, or the proxy it names.
pub(crate) async fn wallet_of(s: &AppState, key: &ApiKeyRecord, address: Option<&str>) -> Result<String, ApiError> {
    let wallet = match address {
        None => key.address.to_string(),
        Some(a) => normalize_address(a).ok_or_else(|| ApiError::bad("address must be a 0x address"))?,
    };
    if !acts_for(s, key, &wallet).await? {
        return Err(ApiError::bad("the address has to be the owner of the API KEY"));
    }
    Ok(wallet)
}

async fn operate(s: Arc<AppState>, kind: CtfKind, r: Req) -> ApiResult {
    let key = authenticate(&s, &r)?;
    let b: CtfRequest = r.json()?;
    let wallet = wallet_of(&s, &key, b.address.as_deref()).await?;
    json(&operate_for(&s, kind, &wallet, b).await?)
}

/// Split, merge or redeem for a wallet the caller may move (HTTP handler or relay).
pub(crate) async fn operate_for(
    s: &AppState,
    kind: CtfKind,
    wallet: &str,
    b: CtfRequest,
) -> Result<serde_json::Value, ApiError> {
    let wallet = wallet.to_string();
    let view = s.registry.condition(&b.condition_id).ok_or_else(|| ApiError::not_found("market not found"))?;
    let m = &view.market;
    let (yes, no) = (m.tokens[0].token_id.clone(), m.tokens[1].token_id.clone());
    let usdc = COLLATERAL.to_string();
    use LedgerChange::{Credit, Debit};
    // (ledger changes, position change per token, tokens, collateral)
    let (changes, positions, size, usdc_size) = match kind {
        CtfKind::Split | CtfKind::Merge => {
            let a = amount(b.amount.as_deref())?;
            // A complete set costs one unit: half of it to each side's average price.
            let half = [a / 2, a - a / 2];
            if kind == CtfKind::Split {
                let p =
                    half.map(|c| Position { size: a as i64, bought: a as i64, cost: c as i64, ..Default::default() });
                (vec![(usdc, Debit(a)), (yes.clone(), Credit(a)), (no.clone(), Credit(a))], p, a, a)
            } else {
                let p = half.map(|c| Position {
                    size: -(a as i64),
                    sold: a as i64,
                    proceeds: c as i64,
                    ..Default::default()
                });
                (vec![(yes.clone(), Debit(a)), (no.clone(), Debit(a)), (usdc, Credit(a))], p, a, a)
            }
        }
        CtfKind::Redeem => {
            if b.amount.is_some() {
                return Err(ApiError::bad("redeem takes no amount: it redeems every free token of the market"));
            }
            let meta = s.catalogue.meta(&m.condition_id);
            let winner = match meta.as_deref() {
                Some(x) if x.resolution == Some(ResolutionStatus::Resolved) => x.resolved_outcome,
                _ => None,
            };
            let Some(winner) = winner.filter(|w| *w < 2) else {
                return Err(ApiError::bad("market is not resolved"));
            };
            let accounts = s.engine.accounts(wallet.clone()).await?;
            let free = |t: &str| {
                accounts.iter().find(|(a, _)| a == t).map_or(0, |(_, x)| x.balance.saturating_sub(x.reserved))
            };
            let held = [free(&yes), free(&no)];
            if held == [0, 0] {
                return Err(ApiError::bad("nothing to redeem"));
            }
            let won = held[winner as usize];
            let p = [0, 1].map(|i| Position {
                size: -(held[i] as i64),
                sold: held[i] as i64,
                proceeds: if i == winner as usize { held[i] as i64 } else { 0 },
                ..Default::default()
            });
            let mut changes: Vec<_> = [(yes.clone(), held[0]), (no.clone(), held[1])]
                .into_iter()
                .filter(|(_, n)| *n > 0)
                .map(|(t, n)| (t, Debit(n)))
                .collect();
            changes.push((usdc, Credit(won)));
            (changes, p, held[0] + held[1], won)
        }
        CtfKind::Reward | CtfKind::Conversion => return Err(ApiError::not_found("unknown operation")),
    };

    let row = Row { kind, market: m.idx, condition_id: m.condition_id.clone(), size, usdc_size };
    let moves = [(m.idx, yes.clone(), positions[0]), (m.idx, no.clone(), positions[1])];
    let (tx, time, balances) = execute(s, &wallet, changes, &[row], &moves).await?;
    Ok(j!({
        "success": true,
        "type": kind.name(),
        "conditionId": m.condition_id,
        "address": wallet,
        "size": size.to_string(),
        "usdcSize": usdc_size.to_string(),
        "transactionHash": tx,
        "timestamp": time,
        "balances": balances,
    }))
}

/// One activity row of an operation.
struct Row {
    kind: CtfKind,
    market: u32,
    condition_id: String,
    size: u64,
    usdc_size: u64,
}

/// Applies an operation's ledger changes as one engine Transfer, written with its activity
/// rows and position counters (market, token, change). Returns its transaction hash, time
/// and the balances it touched.
async fn execute(
    s: &AppState,
    wallet: &str,
    changes: Vec<(String, LedgerChange)>,
    rows: &[Row],
    moves: &[(u32, String, Position)],
) -> Result<(String, u64, serde_json::Map<String, serde_json::Value>), ApiError> {
    let micros = now_micros();
    let time = micros / 1_000_000;
    let tx: [u8; 32] = keccak256(uuid::Uuid::new_v4().as_bytes()).0;
    let mut records = Batch::default();
    for (i, r) in rows.iter().enumerate() {
        let row = CtfActivity {
            kind: r.kind,
            condition_id: r.condition_id.clone(),
            market_idx: r.market,
            size: r.size,
            usdc_size: r.usdc_size,
            tx_hash: tx,
            time,
        };
        // Rows of one operation share its hash; the key's time keeps them apart.
        records.put(cf::ACTIVITY, index::activity(wallet, micros + i as u64, &tx), encode(&row));
    }
    let mut ops = Vec::new();
    for (market, token, p) in moves {
        if *p != Position::default() {
            index::position_ops(*market, (time / DAY) as u32, wallet, token, p, &mut ops);
        }
    }
    for (c, k, v) in ops {
        records.merge(c, k, v);
    }
    let accounts = match s.engine.transfer(wallet.to_string(), changes.clone(), records).await {
        Ok(a) => a,
        Err(EngineError::Rejected(_)) => return Err(ApiError::bad("not enough balance / allowance")),
        Err(e) => return Err(e.into()),
    };
    let balances =
        changes.iter().zip(&accounts).map(|((asset, _), acc)| (asset.clone(), j!(acc.balance.to_string()))).collect();
    Ok((format!("0x{}", alloy_primitives::hex::encode(tx)), time, balances))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ConvertRequest {
    /// The negative-risk market (the markets' `neg_risk_market_id`).
    market_id: String,
    /// Bitmask of question indices whose NO tokens are converted (1 = question 0).
    index_set: NumberText,
    /// Base units of NO converted per question.
    amount: String,
    pub(crate) address: Option<String>,
}

/// POST /ctf/convert: the negative-risk adapter's convertPositions(marketId, indexSet,
/// amount) in ledger mode. For each question in `indexSet` it burns `amount` NO tokens;
/// for each other question of the market it mints `amount` YES tokens; and it pays
/// (|indexSet| − 1) · `amount` collateral. Value is conserved whichever question wins.
/// A market's questions are its binary markets in creation order (docs/ctf.md).
pub async fn convert(s: Arc<AppState>, r: Req) -> ApiResult {
    let key = authenticate(&s, &r)?;
    let b: ConvertRequest = r.json()?;
    let wallet = wallet_of(&s, &key, b.address.as_deref()).await?;
    json(&convert_for(&s, &wallet, b).await?)
}

/// convertPositions for a wallet the caller may move (HTTP handler or relay).
pub(crate) async fn convert_for(s: &AppState, wallet: &str, b: ConvertRequest) -> Result<serde_json::Value, ApiError> {
    let questions: Vec<_> = s
        .registry
        .tables()
        .list
        .iter()
        .filter(|v| v.market.neg_risk && v.market.neg_risk_market_id.as_deref() == Some(b.market_id.as_str()))
        .cloned()
        .collect();
    if questions.is_empty() {
        return Err(ApiError::not_found("market not found"));
    }
    let n = questions.len();
    let set = parse_u64(&b.index_set.text())
        .ok()
        .filter(|&x| x > 0 && (n >= 64 || x >> n == 0))
        .ok_or_else(|| ApiError::bad(format!("indexSet must be a non-zero bitmask of the market's {n} questions")))?;
    let a = amount(Some(&b.amount))?;
    let picked = |i: usize| set >> i & 1 == 1;
    let k = (0..n).filter(|&i| picked(i)).count() as u64;
    let out = a.checked_mul(k - 1).ok_or_else(|| ApiError::bad("amount too large"))?;
    use LedgerChange::{Credit, Debit};
    let (mut changes, mut rows, mut moves) = (Vec::new(), Vec::new(), Vec::new());
    for (i, v) in questions.iter().enumerate() {
        let m = &v.market;
        if picked(i) {
            let no = m.tokens[1].token_id.clone();
            changes.push((no.clone(), Debit(a)));
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
            changes.push((yes.clone(), Credit(a)));
            moves.push((m.idx, yes, Position { size: a as i64, bought: a as i64, ..Default::default() }));
        }
    }
    if out > 0 {
        changes.push((COLLATERAL.to_string(), Credit(out)));
    }
    let (tx, time, balances) = execute(s, wallet, changes, &rows, &moves).await?;
    Ok(j!({
        "success": true,
        "type": CtfKind::Conversion.name(),
        "marketId": b.market_id,
        "indexSet": set.to_string(),
        "address": wallet,
        "size": a.to_string(),
        "usdcSize": out.to_string(),
        "transactionHash": tx,
        "timestamp": time,
        "balances": balances,
    }))
}
