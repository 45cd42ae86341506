//! Plain domain types: prices, amounts, sides, order and trade records, markets.
//!
//! Money is integers only: amounts are [`Amount`]s in 1e-6 units (`Amount::ONE` = 1.0),
//! prices are [`Price`]s in 1e-4 units (`Price::ONE` = 1.0). Nothing here does I/O.

pub mod analytics;
pub mod bridge;
pub mod builders;
pub mod catalogue;
pub mod chain;
pub mod fees;
pub mod num;
pub mod packed;
pub mod records;
pub mod relay;
pub mod resolution;
pub mod rewards;
pub mod rfq;
pub mod time;

pub use fees::*;
pub use num::*;
pub use records::*;
pub use time::*;
