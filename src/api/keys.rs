//! API credentials (SPEC §4.1, §5.1–5.2, §7.2): the waitlist, invitation codes, L1 key
//! creation and derivation, and L2 key management. The rules are `app::keys`.

use std::sync::Arc;

use alloy_primitives::{Address, U256};
use serde::Deserialize;
use uuid::Uuid;
use warp::http::StatusCode;
use warp::Filter;

use super::{
    authenticate, authenticate_read, handle, handle_now, reply, ApiError, ApiResult, Req, Routes, MAX_DRIFT_SECS,
};
use crate::app::keys::{self, KeyError, INVALID_ADDRESS_HEADER};
use crate::app::AppState;
use crate::auth;
use crate::domain::ApiKeyRecord;

pub fn routes(state: Arc<AppState>) -> Routes {
    let waitlist = handle(warp::path!("waitlist").and(warp::post()), &state, waitlist);
    let create = handle(warp::path!("auth" / "api-key").and(warp::post()), &state, create_key);
    let delete = handle(warp::path!("auth" / "api-key").and(warp::delete()), &state, delete_key);
    let derive = handle_now(warp::path!("auth" / "derive-api-key").and(warp::get()), &state, derive_key);
    let list = handle_now(warp::path!("auth" / "api-keys").and(warp::get()), &state, list_keys);
    let ban = handle_now(warp::path!("auth" / "ban-status" / "closed-only").and(warp::get()), &state, ban_status);
    waitlist.or(create).unify().or(delete).unify().or(derive).unify().or(list).unify().or(ban).unify().boxed()
}

impl From<KeyError> for ApiError {
    fn from(e: KeyError) -> ApiError {
        match e {
            KeyError::Store(e) => e.into(),
            KeyError::NoRandomness => ApiError::db(),
            KeyError::Exists => ApiError::new(StatusCode::CONFLICT, e.to_string()),
            KeyError::NotFound => ApiError::not_found(e.to_string()),
            KeyError::InvalidEmail | KeyError::InvalidInvitation | KeyError::TooMany => ApiError::bad(e.to_string()),
        }
    }
}

#[derive(Deserialize)]
struct WaitlistBody {
    email: String,
}

async fn waitlist(s: Arc<AppState>, r: Req) -> ApiResult {
    let b: WaitlistBody = serde_json::from_slice(&r.body).map_err(|_| ApiError::bad("Invalid payload"))?;
    let email = keys::join_waitlist(&s, &b.email).await?;
    reply(&serde_json::json!({ "email": email, "status": "PENDING" }))
}

/// Parsed and verified L1 headers.
struct L1 {
    address: String,
    nonce: u64,
}

fn l1(s: &AppState, r: &Req) -> Result<L1, ApiError> {
    let address = r.header("SERVICE_ADDRESS").ok_or_else(|| ApiError::bad(INVALID_ADDRESS_HEADER))?;
    let addr: Address = address.parse().map_err(|_| ApiError::bad(INVALID_ADDRESS_HEADER))?;
    let bad = || ApiError::unauthorized("Invalid L1 Request headers");
    let sig = r.header("SERVICE_SIGNATURE").ok_or_else(bad)?;
    let ts = r.header("SERVICE_TIMESTAMP").ok_or_else(bad)?;
    let t: i64 = ts.parse().map_err(|_| bad())?;
    let nonce: u64 = match r.header("SERVICE_NONCE") {
        Some(n) => n.parse().map_err(|_| bad())?,
        None => 0,
    };
    auth::eip712::parse_signature(sig).ok_or_else(bad)?;
    let fail = || ApiError::unauthorized("L1 verification failure");
    if (crate::domain::now_secs() as i64 - t).abs() > MAX_DRIFT_SECS {
        return Err(fail());
    }
    if !auth::recover_clob_auth(s.config.chain_id, addr, ts, U256::from(nonce), sig) {
        return Err(fail());
    }
    Ok(L1 { address: format!("{addr:#x}"), nonce })
}

fn creds(k: &ApiKeyRecord) -> serde_json::Value {
    serde_json::json!({ "apiKey": k.key.to_string(), "secret": k.secret, "passphrase": k.passphrase })
}

/// A key that exists is 409 (SPEC §7); on a version 2 venue 400, as Polymarket's CLOB
/// answers it: the unified SDK creates a key at every start and derives it on a 400 only.
async fn create_key(s: Arc<AppState>, r: Req) -> ApiResult {
    let l = l1(&s, &r)?;
    let rec = match keys::create(&s, &l.address, l.nonce, r.header("SERVICE_INVITATION_CODE")).await {
        Err(e @ KeyError::Exists) if s.config.order_version == 2 => return Err(ApiError::bad(e.to_string())),
        other => other?,
    };
    reply(&creds(&rec))
}

fn derive_key(s: Arc<AppState>, r: Req) -> ApiResult {
    let l = l1(&s, &r)?;
    reply(&creds(&keys::derive(&s, &l.address, l.nonce)?))
}

async fn delete_key(s: Arc<AppState>, r: Req) -> ApiResult {
    let k = authenticate(&s, &r)?;
    keys::delete(&s, &k).await?;
    reply(&serde_json::json!({}))
}

fn list_keys(s: Arc<AppState>, r: Req) -> ApiResult {
    let k = authenticate(&s, &r)?;
    let ids: Vec<String> = keys::ids_of(&s, &k.address)?.iter().map(Uuid::to_string).collect();
    reply(&serde_json::json!({ "apiKeys": ids }))
}

fn ban_status(s: Arc<AppState>, r: Req) -> ApiResult {
    let k = authenticate_read(&s, &r)?;
    reply(&serde_json::json!({ "closed_only": keys::closed_only(&s, &k.address) }))
}
