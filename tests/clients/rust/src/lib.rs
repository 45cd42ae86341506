//! What the two client checks share: the environment they are given and the count of what
//! they checked.

use std::str::FromStr;

use anyhow::{bail, Context};
use rust_decimal::Decimal;

/// A variable the integration test sets.
pub fn env(name: &str) -> anyhow::Result<String> {
    std::env::var(name).with_context(|| format!("{name} is not set"))
}

/// The checks passed so far; the first that fails ends the run.
pub struct Checks(pub usize);

impl Checks {
    pub fn check(&mut self, ok: bool, what: impl std::fmt::Display) -> anyhow::Result<()> {
        if !ok {
            bail!("FAILED after {} checks: {what}", self.0);
        }
        self.0 += 1;
        Ok(())
    }
}

pub fn dec(s: &str) -> Decimal {
    Decimal::from_str(s).expect("a decimal")
}
