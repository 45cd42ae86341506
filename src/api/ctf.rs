//! Conditional tokens (SPEC §1.6, docs/reference/ctf.md): `POST /ctf/split`, `/ctf/merge`,
//! `/ctf/redeem` and `/ctf/convert`, L2-signed. In ledger mode the operations are
//! `app::ctf`; in chain mode each answers what the wallet sends (`app::chain_ctf`).

use std::sync::Arc;

use serde_json::{json, Map, Value};
use warp::http::StatusCode;
use warp::Filter;

use super::{authenticate, handle, reply, req, respond, with_state, ApiError, ApiResult, Req, Routes};
use crate::app::chain_ctf::{self, PrepareError};
use crate::app::ctf::{convert_for, operate_for, wallet_of, ConvertRequest, CtfError, CtfRequest, Receipt, Subject};
use crate::app::AppState;
use crate::domain::analytics::CtfKind;

impl From<CtfError> for ApiError {
    fn from(e: CtfError) -> ApiError {
        use CtfError as E;
        match e {
            E::Store(e) => e.into(),
            E::Engine(e) => e.into(),
            E::MarketNotFound | E::UnknownOperation => ApiError::new(StatusCode::NOT_FOUND, e.to_string()),
            E::NotAnAmount
            | E::AmountTooLarge
            | E::NotAWallet
            | E::NotOwner
            | E::RedeemTakesNoAmount
            | E::NotResolved
            | E::NothingToRedeem
            | E::BadIndexSet(_)
            | E::NotEnoughBalance => ApiError::bad(e.to_string()),
        }
    }
}

pub fn routes(state: Arc<AppState>) -> Routes {
    let convert = handle(warp::path!("ctf" / "convert").and(warp::post()), &state, convert);
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

async fn operate(s: Arc<AppState>, kind: CtfKind, r: Req) -> ApiResult {
    let key = authenticate(&s, &r)?;
    let b: CtfRequest = r.json()?;
    let wallet = wallet_of(&s, &key, b.address.as_deref())?;
    if s.chain.is_some() {
        return prepared(&s, kind, key.address.as_ref(), &wallet, &b).await;
    }
    reply(&receipt_json(&operate_for(&s, kind, &wallet, b).await?))
}

/// Chain mode: what the wallet sends to run the operation (docs/reference/ctf.md).
async fn prepared(s: &AppState, kind: CtfKind, owner: &str, wallet: &str, b: &CtfRequest) -> ApiResult {
    let at = wallet.parse().map_err(|_| ApiError::bad("address must be a 0x address"))?;
    let (to, data) = chain_ctf::operation_call(s, kind, b, at).await?;
    let mut v = prepared_call(s, owner, wallet, to, data).await?;
    v["type"] = json!(kind.name());
    v["conditionId"] = json!(b.condition_id);
    reply(&v)
}

/// Chain mode: what `wallet` (`owner`'s address or a wallet of it) sends to call `data` at
/// `to`, its address with it.
async fn prepared_call(
    s: &AppState,
    owner: &str,
    wallet: &str,
    to: alloy_primitives::Address,
    data: Vec<u8>,
) -> Result<Value, ApiError> {
    let address = |a: &str| a.parse().map_err(|_| ApiError::bad("address must be a 0x address"));
    let mut v = chain_ctf::prepared(s, address(owner)?, address(wallet)?, to, data).await?;
    v["address"] = json!(wallet);
    Ok(v)
}

impl From<PrepareError> for ApiError {
    fn from(e: PrepareError) -> ApiError {
        match e {
            PrepareError::Ctf(e) => e.into(),
            PrepareError::Relay(e) => e.into(),
        }
    }
}

/// POST /ctf/convert: the negative-risk adapter's convertPositions(marketId, indexSet,
/// amount). For each question in `indexSet` it burns `amount` NO tokens; for each other
/// question of the market it mints `amount` YES tokens; and it pays (|indexSet| − 1) ·
/// `amount` collateral. Value is conserved whichever question wins. A market's questions
/// are its binary markets in creation order (docs/reference/ctf.md). In chain mode the
/// answer is what the wallet sends to the adapter.
async fn convert(s: Arc<AppState>, r: Req) -> ApiResult {
    let key = authenticate(&s, &r)?;
    let b: ConvertRequest = r.json()?;
    let wallet = wallet_of(&s, &key, b.address.as_deref())?;
    if s.chain.is_some() {
        let (to, data) = chain_ctf::convert_call(&s, &b)?;
        let mut v = prepared_call(&s, key.address.as_ref(), &wallet, to, data).await?;
        v["type"] = json!(CtfKind::Conversion.name());
        v["marketId"] = json!(b.market_id);
        v["indexSet"] = json!(b.index_set.text());
        return reply(&v);
    }
    reply(&receipt_json(&convert_for(&s, &wallet, b).await?))
}

/// An operation's reply (also the relay's `result`).
pub fn receipt_json(r: &Receipt) -> Value {
    let mut v = json!({ "success": true, "type": r.kind.name() });
    match &r.subject {
        Subject::Condition(c) => v["conditionId"] = json!(c),
        Subject::NegRisk { market_id, index_set } => {
            v["marketId"] = json!(market_id);
            v["indexSet"] = json!(index_set.to_string());
        }
    }
    let balances: Map<String, Value> = r.balances.iter().map(|(a, b)| (a.clone(), json!(b.to_string()))).collect();
    v["address"] = json!(r.wallet);
    v["size"] = json!(r.size.to_string());
    v["usdcSize"] = json!(r.usdc_size.to_string());
    v["transactionHash"] = json!(r.tx_hash);
    v["timestamp"] = json!(r.time);
    v["balances"] = Value::Object(balances);
    v
}
