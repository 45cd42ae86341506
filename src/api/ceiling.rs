//! The machine's ceilings for `POST /order`, served for the load generator: the same warp
//! request filter and JSON body parsing as the real endpoint and nothing else (`Parse`), or
//! that plus what every order costs before the engine sees it — L2 HMAC verification and
//! EIP-712 signer recovery (`Crypto`). No engine, no store: predex's throughput divided by
//! these is how close it runs to what the hardware allows.

use std::collections::HashMap;
use std::sync::Arc;

use warp::Filter;

use super::wire::{wire_fields, Submission};
use super::{reply, req, ApiError, ApiResult, Req};
use crate::auth::{self, eip712::Domain};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ceiling {
    Parse,
    Crypto,
}

/// What the crypto ceiling knows of an API key (held in memory, as a cache would).
#[derive(Debug, Clone)]
pub struct KeySecret {
    pub secret: String,
    pub address: String,
}

struct State {
    kind: Ceiling,
    keys: HashMap<String, KeySecret>,
    domain: Domain,
}

pub fn routes(
    kind: Ceiling,
    keys: HashMap<String, KeySecret>,
    domain: Domain,
) -> impl Filter<Extract = (warp::reply::Response,), Error = std::convert::Infallible> + Clone {
    let st = Arc::new(State { kind, keys, domain });
    warp::path!("order")
        .and(warp::post())
        .and(req())
        .map(move |r: Req| super::respond(st.handle(&r)))
        .recover(super::recover)
        .unify()
}

impl State {
    fn handle(&self, r: &Req) -> ApiResult {
        let sub: Submission = serde_json::from_slice(&r.body).map_err(|_| ApiError::bad("Invalid order payload"))?;
        if self.kind == Ceiling::Crypto {
            let fail = || ApiError::unauthorized("L2 authentication failure");
            let key = r.header("SERVICE_API_KEY").ok_or_else(fail)?;
            let k = self.keys.get(key).ok_or_else(fail)?;
            let (ts, sig) =
                (r.header("SERVICE_TIMESTAMP").ok_or_else(fail)?, r.header("SERVICE_SIGNATURE").ok_or_else(fail)?);
            if !auth::verify_hmac(&k.secret, ts, r.method.as_str(), &[r.path.as_str()], &[&r.body], sig) {
                return Err(fail());
            }
            let auth::OrderFields::V1(fields) = wire_fields(&sub.order)?.fields else {
                return Err(ApiError::bad("Invalid order payload"));
            };
            let (_, signer) = auth::recover_order_signer(&fields, &self.domain, &sub.order.signature);
            if signer.map(|a| format!("{a:#x}")).as_deref() != Some(k.address.as_str()) {
                return Err(ApiError::bad("invalid signature"));
            }
        }
        reply(&serde_json::json!({ "success": true }))
    }
}
