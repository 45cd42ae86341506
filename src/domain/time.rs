//! Clock readings and the one date format predex writes (RFC 3339, UTC, whole seconds).

/// Current UNIX time in seconds.
pub fn now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// Current UNIX time in microseconds.
pub fn now_micros() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

/// Current UNIX time in milliseconds.
pub fn now_millis() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// A UNIX time as RFC 3339 (`2026-12-31T00:00:00Z`).
pub fn fmt_date(secs: u64) -> String {
    humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs)).to_string()
}

/// A date that is neither RFC 3339 nor YYYY-MM-DD.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid date: {0}")]
pub struct BadDate(pub String);

/// RFC 3339, or YYYY-MM-DD (midnight UTC), as UNIX seconds.
pub fn parse_date(s: &str) -> Result<u64, BadDate> {
    let full = if s.len() == 10 { format!("{s}T00:00:00Z") } else { s.to_string() };
    humantime::parse_rfc3339_weak(&full)
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs())
        .ok_or_else(|| BadDate(s.to_string()))
}
