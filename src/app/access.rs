//! Who may do what: the platform's mode (SPEC §1.5), banned and closed-only addresses, the
//! order-book server's per-IP request limit (SPEC §8) and the operator's bearer token.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use super::{ratelimit::RateLimiter, AppState};
use crate::config::Config;
use crate::domain::{AddressStatus, Mode};
use crate::store::{Batch, Store, StoreError};

pub struct Access {
    /// Read lock-free by every trading request.
    mode: AtomicU8,
    addresses: RwLock<HashMap<String, AddressStatus>>,
    pub limiter: RateLimiter,
    /// The internal server's bearer token (`keyfile::internal_token`); never logged.
    pub internal_token: Arc<str>,
}

impl Access {
    pub fn load(store: &Store, config: &Config, internal_token: Arc<str>) -> Result<Access, StoreError> {
        Ok(Access {
            mode: AtomicU8::new(mode_code(store.mode()?.unwrap_or(Mode::Normal))),
            addresses: RwLock::new(store.address_statuses()?.into_iter().collect()),
            limiter: RateLimiter::new(
                config.rate_limit_max,
                config.rate_limit_window_secs,
                config.trusted_proxies.clone(),
            ),
            internal_token,
        })
    }

    pub fn mode(&self) -> Mode {
        match self.mode.load(Ordering::Acquire) {
            1 => Mode::CancelOnly,
            2 => Mode::TradingDisabled,
            _ => Mode::Normal,
        }
    }

    pub fn address_status(&self, addr: &str) -> AddressStatus {
        self.addresses.read().get(addr).copied().unwrap_or(AddressStatus::None)
    }
}

/// Sets the platform's mode once its write is durable.
pub async fn set_mode(s: &AppState, m: Mode) -> Result<(), StoreError> {
    let mut b = Batch::default();
    b.put_mode(m);
    s.commit(b).await?;
    s.access.mode.store(mode_code(m), Ordering::Release);
    Ok(())
}

/// Sets an address's status (`None` lifts it) once its write is durable.
pub async fn set_address_status(s: &AppState, address: &str, status: AddressStatus) -> Result<(), StoreError> {
    let mut b = Batch::default();
    b.put_address_status(address, status);
    s.commit(b).await?;
    let mut m = s.access.addresses.write();
    match status {
        AddressStatus::None => m.remove(address),
        _ => m.insert(address.to_string(), status),
    };
    Ok(())
}

fn mode_code(m: Mode) -> u8 {
    match m {
        Mode::Normal => 0,
        Mode::CancelOnly => 1,
        Mode::TradingDisabled => 2,
    }
}
