//! Objectives built in tests (tune's, report's and cmd's). A spec's objective is resolved to
//! its columns, and checked against their directions, as the spec is read
//! (`plan::spec::objective`); what tune/ receives is already typed.

#[cfg(test)]
use crate::plan::spec::{Bound, Goal, Objective};

/// An objective for tests: `slo` as (column, bound, limit), noise 5%. The names are
/// results.csv columns (a test that names another one is wrong, and panics).
#[cfg(test)]
pub(crate) fn test_objective(goal: Goal, metric: &str, slo: &[(&str, Bound, f64)]) -> Objective {
    use crate::plan::columns::Col;
    let col = |name: &str| Col::named(name).unwrap_or_else(|| panic!("`{name}` is no column"));
    Objective {
        prune: false,
        goal,
        metric: col(metric),
        slo: slo
            .iter()
            .map(|(c, b, l)| crate::plan::spec::SloBound {
                column: col(c),
                bound: *b,
                limit: *l,
            })
            .collect(),
        noise: 0.05,
    }
}
