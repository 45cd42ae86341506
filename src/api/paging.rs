//! The order book server's paged lists (SPEC §2.6): an envelope of `data`, `next_cursor`,
//! `limit` and `count`, where a cursor is the base64 of an offset ("MA==" the first page,
//! "LTE=" the end).

use base64::Engine;
use serde_json::{json, Value};

use super::{reply, ApiError, ApiResult};

/// Page size of the envelopes.
pub const PAGE: usize = 100;

/// The cursor of the last page.
pub const END_CURSOR: &str = "LTE=";

/// A cursor (a query's or a body's `next_cursor`) as an offset; absent or empty is the
/// start, the end's is past every item.
pub fn offset<S: AsRef<str>>(cursor: Option<S>) -> Result<usize, ApiError> {
    match cursor.as_ref().map(AsRef::as_ref) {
        None | Some("") => Ok(0),
        Some(c) => {
            let raw =
                base64::engine::general_purpose::STANDARD.decode(c).map_err(|_| ApiError::bad("Invalid payload"))?;
            let text = String::from_utf8(raw).map_err(|_| ApiError::bad("Invalid payload"))?;
            if text == "-1" {
                return Ok(usize::MAX);
            }
            text.parse().map_err(|_| ApiError::bad("Invalid payload"))
        }
    }
}

/// One page of `items` from `offset`, in the SPEC §2.6 envelope.
pub fn page(items: Vec<Value>, offset: usize) -> ApiResult {
    reply(&envelope(items, offset, PAGE))
}

/// The SPEC §2.6 envelope of `limit` items from `offset`.
pub fn envelope(items: Vec<Value>, offset: usize, limit: usize) -> Value {
    let start = offset.min(items.len());
    let end = (start + limit).min(items.len());
    let data: Vec<Value> = items[start..end].to_vec();
    let next = if end >= items.len() {
        END_CURSOR.to_string()
    } else {
        base64::engine::general_purpose::STANDARD.encode(end.to_string())
    };
    json!({ "data": data, "next_cursor": next, "limit": limit, "count": data.len() })
}
