//! Query parameters of the open servers (catalogue, analytics, bridge), checked the same
//! way everywhere: a malformed value or one past its limit is a 400 naming the parameter,
//! never a silent default.

use super::ApiError;

/// A request's query, keeping repeated keys (`?slug=a&slug=b`).
#[derive(Debug, Default)]
pub struct Params(Vec<(String, String)>);

impl Params {
    pub fn parse(query: Option<&str>) -> Result<Params, ApiError> {
        match query {
            None | Some("") => Ok(Params::default()),
            Some(q) => serde_urlencoded::from_str(q).map(Params).map_err(|_| ApiError::bad("invalid query string")),
        }
    }

    /// The first value of `name`, if present and not empty.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(k, v)| k == name && !v.is_empty()).map(|(_, v)| v.as_str())
    }

    /// The first value of `name` as sent, empty included: what the typed readers below
    /// check, so that `limit=` is a 400 rather than a silent default.
    pub fn raw(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The first of several spellings present (`condition_ids` or `conditionIds`).
    pub fn any(&self, names: &[&str]) -> Option<&str> {
        names.iter().find_map(|n| self.get(n))
    }

    /// Every value of `name`, repeated or comma-separated, trimmed, empty ones dropped.
    pub fn list(&self, name: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .flat_map(|(_, v)| v.split(','))
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    }

    pub fn bool(&self, name: &str) -> Result<Option<bool>, ApiError> {
        match self.raw(name) {
            None => Ok(None),
            Some(v) if v.eq_ignore_ascii_case("true") => Ok(Some(true)),
            Some(v) if v.eq_ignore_ascii_case("false") => Ok(Some(false)),
            Some(_) => Err(ApiError::bad(format!("{name} must be true or false"))),
        }
    }

    /// A non-negative integer no greater than `max`, `default` when absent.
    pub fn int(&self, name: &str, default: u64, max: u64) -> Result<u64, ApiError> {
        match self.raw(name) {
            None => Ok(default),
            Some(v) => match v.parse::<u64>() {
                Ok(n) if n <= max => Ok(n),
                _ if max == u64::MAX => Err(ApiError::bad(format!("{name} must be a non-negative integer"))),
                _ => Err(ApiError::bad(format!("{name} must be an integer between 0 and {max}"))),
            },
        }
    }

    /// An optional signed integer (timestamps).
    pub fn i64(&self, name: &str) -> Result<Option<i64>, ApiError> {
        self.raw(name)
            .map(|v| v.parse::<i64>().map_err(|_| ApiError::bad(format!("{name} must be an integer"))))
            .transpose()
    }

    /// One of `allowed` (compared case-insensitively, returned as listed), or `default`.
    pub fn choice(
        &self,
        name: &str,
        allowed: &[&'static str],
        default: &'static str,
    ) -> Result<&'static str, ApiError> {
        match self.raw(name) {
            None => Ok(default),
            Some(v) => allowed
                .iter()
                .find(|a| a.eq_ignore_ascii_case(v))
                .copied()
                .ok_or_else(|| ApiError::bad(format!("{name} must be one of {}", allowed.join(", ")))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_and_comma_separated_values_and_limits() {
        let p = Params::parse(Some("slug=a&slug=b,c&limit=7&closed=TRUE&bad=x&order=Volume")).unwrap();
        assert_eq!(p.list("slug"), vec!["a", "b", "c"]);
        assert_eq!(p.int("limit", 25, 500), Ok(7));
        assert_eq!(p.int("offset", 0, u64::MAX), Ok(0));
        assert!(p.int("limit", 25, 5).is_err());
        assert_eq!(p.bool("closed"), Ok(Some(true)));
        assert!(p.bool("bad").is_err());
        assert_eq!(p.choice("order", &["volume", "liquidity"], "liquidity"), Ok("volume"));
        assert!(p.choice("bad", &["volume"], "volume").is_err());
        assert!(Params::parse(Some("limit=-1")).unwrap().int("limit", 1, 10).is_err());
        // Present but empty is malformed, never the default.
        let empty = Params::parse(Some("limit=&closed=&order=&start=")).unwrap();
        assert!(empty.int("limit", 25, 500).is_err());
        assert!(empty.bool("closed").is_err());
        assert!(empty.choice("order", &["volume"], "volume").is_err());
        assert!(empty.i64("start").is_err());
    }
}
