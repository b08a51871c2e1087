//! `${VAR}` in the sweep file: strings expanded from the environment when the file is read.

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A string in which `${VAR}` and `${VAR:-default}` are replaced from the environment when the
/// file is read, so one sweep file works on machines with different paths.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Expanded(pub String);

impl fmt::Display for Expanded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Expanded {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        expand_env(&s, |k| std::env::var(k).ok())
            .map(Expanded)
            .map_err(de::Error::custom)
    }
}

/// Expand `${VAR}` / `${VAR:-default}`; `$$` is a literal `$`.
pub fn expand_env(s: &str, get: impl Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(body) = after.strip_prefix('{') {
            let Some(end) = body.find('}') else {
                return Err(format!("unclosed `${{` in `{s}`"));
            };
            let inner = &body[..end];
            let (name, default) = match inner.split_once(":-") {
                Some((n, d)) => (n, Some(d)),
                None => (inner, None),
            };
            match (get(name), default) {
                (Some(v), _) if !v.is_empty() => out.push_str(&v),
                (_, Some(d)) => out.push_str(d),
                _ => {
                    return Err(format!(
                        "environment variable `{name}` (used as `${{{inner}}}`) is not set: set it, or write `${{{name}:-default}}`"
                    ));
                }
            }
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_expansion() {
        let get = |k: &str| (k == "A").then(|| "x".to_string());
        assert_eq!(expand_env("${A}/b", get).as_deref(), Ok("x/b"));
        assert_eq!(expand_env("${B:-d}", get).as_deref(), Ok("d"));
        assert_eq!(expand_env("$$A $5", get).as_deref(), Ok("$A $5"));
        assert!(expand_env("${B}", get).is_err());
        assert!(expand_env("${A", get).is_err());
    }
}
