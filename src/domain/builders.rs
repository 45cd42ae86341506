//! Service keys (SPEC §5.5–5.6): builder, relayer and read-only API keys, bound to the
//! address that created them.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum KeyKind {
    Builder,
    Relayer,
    /// A read-only L2 key: reads what the L2 key that made it reads, never trades.
    Readonly,
}

impl KeyKind {
    /// The kind's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            KeyKind::Builder => "builder",
            KeyKind::Relayer => "relayer",
            KeyKind::Readonly => "read-only",
        }
    }
}

/// A builder or relayer API key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceKey {
    pub key: Uuid,
    pub kind: KeyKind,
    /// The address whose L2 key created it.
    pub address: String,
    pub builder_id: Option<String>,
    pub secret: String,
    pub passphrase: String,
    pub created_at: u64,
}

/// A builder's code: what a version 2 order names in its `builder` field to be attributed
/// to the builder — keccak256 of its builder ID, so a builder computes its own.
pub fn builder_code(builder_id: &str) -> [u8; 32] {
    alloy_primitives::keccak256(builder_id.as_bytes()).0
}
