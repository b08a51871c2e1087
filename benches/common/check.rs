//! A figure of docs/benchmarks.md that a bench checks: what it measured against the bound the
//! page states. Both benches print each and exit 1 when one no longer holds.

/// A figure of docs/benchmarks.md and whether this run still shows it.
pub struct Check {
    pub what: String,
    pub measured: f64,
    /// `at least` (true) or `at most` (false) `limit`.
    pub at_least: bool,
    pub limit: f64,
}

impl Check {
    pub fn holds(&self) -> bool {
        if self.at_least {
            self.measured >= self.limit
        } else {
            self.measured <= self.limit
        }
    }
}

pub fn at_least(checks: &mut Vec<Check>, what: String, measured: f64, limit: f64) {
    checks.push(Check {
        what,
        measured,
        at_least: true,
        limit,
    });
}

pub fn at_most(checks: &mut Vec<Check>, what: String, measured: f64, limit: f64) {
    checks.push(Check {
        what,
        measured,
        at_least: false,
        limit,
    });
}
