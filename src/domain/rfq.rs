//! Request-for-quote records (SPEC §3.3): a request and the quotes on it.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Amount, Price, Side};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RequestState {
    Open,
    Filled,
    Expired,
    /// Withdrawn by its requester before its TTL.
    Cancelled,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum QuoteState {
    Pending,
    Accepted,
    Rejected,
    Expired,
    /// Withdrawn by its quoter before its TTL.
    Cancelled,
}

/// A request for quote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RfqRequest {
    pub id: Uuid,
    /// The requester's API key and wallet.
    pub owner: Uuid,
    pub address: String,
    pub token_id: String,
    pub condition_id: String,
    pub side: Side,
    /// Tokens, micro-units.
    pub size: Amount,
    pub created_at: u64,
    pub expires_at: u64,
    pub state: RequestState,
    pub accepted_quote: Option<Uuid>,
    /// The price the requester named (the official clients' form sends one; the spec's
    /// does not).
    pub price: Option<Price>,
}

/// A quote on a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RfqQuote {
    pub id: Uuid,
    pub rfq_id: Uuid,
    pub owner: Uuid,
    pub address: String,
    /// In the requested token.
    pub price: Price,
    pub created_at: u64,
    pub expires_at: u64,
    pub state: QuoteState,
}

impl RfqRequest {
    /// Open and not past its TTL.
    pub fn is_open(&self, now: u64) -> bool {
        self.state == RequestState::Open && self.expires_at > now
    }

    /// The state as the API shows it: past its TTL is EXPIRED at once, before the
    /// expiration worker writes it.
    pub fn status(&self, now: u64) -> &'static str {
        match self.state {
            RequestState::Open if self.expires_at <= now => "EXPIRED",
            RequestState::Open => "OPEN",
            RequestState::Filled => "FILLED",
            RequestState::Expired => "EXPIRED",
            RequestState::Cancelled => "CANCELLED",
        }
    }
}

impl RfqQuote {
    /// PENDING and not past its TTL.
    pub fn is_usable(&self, now: u64) -> bool {
        self.state == QuoteState::Pending && self.expires_at > now
    }

    /// The state as the API shows it (past its TTL: EXPIRED at once).
    pub fn status(&self, now: u64) -> &'static str {
        match self.state {
            QuoteState::Pending if self.expires_at <= now => "EXPIRED",
            QuoteState::Pending => "PENDING",
            QuoteState::Accepted => "ACCEPTED",
            QuoteState::Rejected => "REJECTED",
            QuoteState::Expired => "EXPIRED",
            QuoteState::Cancelled => "CANCELLED",
        }
    }
}
