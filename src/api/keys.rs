//! API credentials (SPEC §4.1, §5.1–5.2, §7.2): the waitlist, invitation codes, L1 key
//! creation and derivation, and L2 key management.

use std::sync::Arc;

use alloy_primitives::{Address, U256};
use serde::Deserialize;
use uuid::Uuid;
use warp::http::StatusCode;
use warp::reply::Response;
use warp::Filter;

use super::{authenticate, reply, req, respond, with_state, ApiError, ApiResult, Req, Routes, MAX_DRIFT_SECS};
use crate::app::AppState;
use crate::auth;
use crate::domain::{now_secs, AddressStatus, ApiKeyRecord, InviteRecord};
use crate::store::Batch;

pub fn routes(state: Arc<AppState>) -> Routes {
    let s = move || with_state(state.clone());
    let waitlist = warp::path!("waitlist")
        .and(warp::post())
        .and(req())
        .and(s())
        .then(|r, s| async move { respond(waitlist(s, r).await) });
    let create = warp::path!("auth" / "api-key").and(warp::post()).and(req()).and(s()).then(|r, s| create_key(s, r));
    let delete = warp::path!("auth" / "api-key")
        .and(warp::delete())
        .and(req())
        .and(s())
        .then(|r, s| async move { respond(delete_key(s, r).await) });
    let derive = warp::path!("auth" / "derive-api-key")
        .and(warp::get())
        .and(req())
        .and(s())
        .then(|r, s| async move { respond(derive_key(s, r)) });
    let list = warp::path!("auth" / "api-keys")
        .and(warp::get())
        .and(req())
        .and(s())
        .then(|r, s| async move { respond(list_keys(s, r)) });
    let ban = warp::path!("auth" / "ban-status" / "closed-only")
        .and(warp::get())
        .and(req())
        .and(s())
        .then(|r, s| async move { respond(ban_status(s, r)) });
    waitlist.or(create).unify().or(delete).unify().or(derive).unify().or(list).unify().or(ban).unify().boxed()
}

/// The catalogued message for a bad address header or a bad invitation code (SPEC §7.2).
pub const INVALID_ADDRESS_HEADER: &str = "invalid OPENFISH_ADDRESS style message: invalid address header";

#[derive(Deserialize)]
struct WaitlistBody {
    email: String,
}

fn valid_email(e: &str) -> bool {
    let e = e.trim();
    matches!(e.split_once('@'), Some((a, b)) if !a.is_empty() && b.contains('.') && !b.starts_with('.') && !b.ends_with('.') && !e.contains(char::is_whitespace))
}

async fn waitlist(s: Arc<AppState>, r: Req) -> ApiResult {
    let b: WaitlistBody = serde_json::from_slice(&r.body).map_err(|_| ApiError::bad("Invalid payload"))?;
    let email = b.email.trim().to_lowercase();
    if !valid_email(&email) {
        return Err(ApiError::bad("invalid email"));
    }
    if !s.store.on_waitlist(&email)? {
        let mut b = Batch::default();
        b.put_waitlist(&email, now_secs());
        s.commit(b).await?;
    }
    reply(&serde_json::json!({ "email": email, "status": "PENDING" }))
}

/// Issues a single-use invitation code for an email (internal API).
pub async fn approve(s: &AppState, email: &str) -> Result<InviteRecord, ApiError> {
    let email = email.trim().to_lowercase();
    if !valid_email(&email) {
        return Err(ApiError::bad("invalid email"));
    }
    const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    let mut raw = [0u8; 8];
    getrandom::getrandom(&mut raw).map_err(|_| ApiError::db())?;
    let c: String = raw.iter().map(|b| ALPHABET[(*b as usize) % ALPHABET.len()] as char).collect();
    let code = format!("{}-{}", &c[..4], &c[4..]);
    let inv = InviteRecord {
        code: code.clone(),
        email: email.clone(),
        expires_at: now_secs() + s.config.invite_ttl_secs,
        used: false,
    };
    let mut b = Batch::default();
    b.put_invite(&inv);
    b.put_waitlist(&email, now_secs());
    s.commit(b).await?;
    Ok(inv)
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

async fn create_key(s: Arc<AppState>, r: Req) -> Response {
    let _guard = s.key_lock.lock().await;
    respond(create_key_locked(&s, &r).await)
}

async fn create_key_locked(s: &AppState, r: &Req) -> ApiResult {
    let l = l1(s, r)?;
    if s.store.key_id_at(&l.address, l.nonce)?.is_some() {
        return Err(ApiError::new(StatusCode::CONFLICT, "API key already exists for this address and nonce"));
    }
    let first = !s.store.has_keys(&l.address)?;
    let mut batch = Batch::default();
    if first {
        let code = r.header("SERVICE_INVITATION_CODE").ok_or_else(|| ApiError::bad(INVALID_ADDRESS_HEADER))?;
        let code = code.to_uppercase();
        let well_formed = code.len() == 9
            && code.as_bytes()[4] == b'-'
            && code.chars().enumerate().all(|(i, c)| i == 4 || c.is_ascii_alphanumeric());
        let mut inv = match s.store.get_invite(&code)? {
            Some(inv) if well_formed && !inv.used && inv.expires_at > now_secs() => inv,
            _ => return Err(ApiError::bad(INVALID_ADDRESS_HEADER)),
        };
        inv.used = true;
        batch.put_invite(&inv);
    }
    let (secret, passphrase) = crate::auth::new_secrets().map_err(|_| ApiError::db())?;
    let rec = ApiKeyRecord {
        key: Uuid::new_v4(),
        secret,
        passphrase,
        address: l.address.as_str().into(),
        nonce: l.nonce,
        created_at: now_secs(),
        proxy: Default::default(),
    };
    batch.add_api_key(&rec);
    s.commit(batch).await?;
    s.set_api_key(rec.key, Some(rec.clone()));
    reply(&creds(&rec))
}

fn derive_key(s: Arc<AppState>, r: Req) -> ApiResult {
    let l = l1(&s, &r)?;
    let not_found = || ApiError::not_found("no API key found for this address and nonce");
    let id = s.store.key_id_at(&l.address, l.nonce)?.ok_or_else(not_found)?;
    let rec = s.store.get_api_key(&id)?.ok_or_else(not_found)?;
    reply(&creds(&rec))
}

async fn delete_key(s: Arc<AppState>, r: Req) -> ApiResult {
    let k = authenticate(&s, &r)?;
    let mut b = Batch::default();
    b.delete_api_key(&k);
    s.commit(b).await?;
    s.set_api_key(k.key, None);
    reply(&serde_json::json!({}))
}

fn list_keys(s: Arc<AppState>, r: Req) -> ApiResult {
    let k = authenticate(&s, &r)?;
    let ids: Vec<String> = s.store.key_ids_of(&k.address)?.iter().map(Uuid::to_string).collect();
    reply(&serde_json::json!({ "apiKeys": ids }))
}

fn ban_status(s: Arc<AppState>, r: Req) -> ApiResult {
    let k = authenticate(&s, &r)?;
    let closed = s.address_status(&k.address) == AddressStatus::ClosedOnly;
    reply(&serde_json::json!({ "closed_only": closed }))
}
