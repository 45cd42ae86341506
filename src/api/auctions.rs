//! Question auctions' routes (`app::resolution::auctions` has the rules): `POST /auctions/bid` (L2),
//! `GET /auctions/{condition_id}`, and the operator's `POST /internal/auctions`.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{json, Value};
use warp::http::StatusCode;
use warp::Filter;

use super::{authenticate, handle, respond, with_state, ApiError, ApiResult, Req, Routes};
use crate::app::resolution::auctions::{self, Auction, AuctionError, Bid};
use crate::app::AppState;
use crate::domain::fmt_date;
use crate::domain::COLLATERAL;

impl From<AuctionError> for ApiError {
    fn from(e: AuctionError) -> ApiError {
        match e {
            AuctionError::Store(e) => e.into(),
            AuctionError::Engine(e) => e.into(),
            AuctionError::NotFound | AuctionError::NoMarket => ApiError::not_found(e.to_string()),
            AuctionError::Exists => ApiError::new(StatusCode::CONFLICT, e.to_string()),
            AuctionError::Resolved
            | AuctionError::NoDuration
            | AuctionError::NotOpen
            | AuctionError::TooLarge
            | AuctionError::NotEnoughBalance => ApiError::bad(e.to_string()),
        }
    }
}

fn auction_json(a: &Auction, bids: &[Bid]) -> Value {
    json!({
        "conditionId": a.condition_id,
        "status": if a.closed { "CLOSED" } else { "OPEN" },
        "openedAt": fmt_date(a.opened_at),
        "closesAt": fmt_date(a.closes_at),
        "bids": bids.iter().map(|b| json!({"agent": b.agent, "amount": b.amount.to_string()})).collect::<Vec<_>>(),
        "highestBid": auctions::winning(bids).map(|b| b.amount.to_string()),
        "winner": a.winner,
        "winningAmount": a.winning_amount.to_string(),
        "asset": COLLATERAL,
    })
}

pub fn routes(state: Arc<AppState>) -> Routes {
    let s = || with_state(state.clone());
    let bid = handle(warp::path!("auctions" / "bid").and(warp::post()), &state, bid);
    let show = warp::path!("auctions" / String)
        .and(warp::get())
        .and(s())
        .map(|c: String, s: Arc<AppState>| respond(show(&s, &c)));
    bid.or(show).unify().boxed()
}

fn show(s: &AppState, condition_id: &str) -> ApiResult {
    let (a, bids) = auctions::show(s, condition_id)?;
    super::reply(&auction_json(&a, &bids))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BidBody {
    condition_id: String,
    /// Base units as an integer string.
    amount: String,
}

/// POST /auctions/bid {conditionId, amount}: escrows `amount` more into the agent's bid.
async fn bid(s: Arc<AppState>, r: Req) -> ApiResult {
    let key = authenticate(&s, &r)?;
    let b: BidBody = r.json()?;
    let amount = crate::app::ctf::base_amount(Some(&b.amount))?;
    let (a, bids) = auctions::bid(&s, key.address.to_string(), &b.condition_id, amount).await?;
    super::reply(&auction_json(&a, &bids))
}

/// POST /internal/auctions {condition_id, duration_secs}: opens a question auction.
pub async fn open(s: Arc<AppState>, r: Req) -> ApiResult {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct B {
        condition_id: String,
        duration_secs: u64,
    }
    let b: B = r.json()?;
    let a = auctions::open(&s, &b.condition_id, b.duration_secs).await?;
    super::reply(&auction_json(&a, &[]))
}
