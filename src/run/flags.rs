//! The spec's flag keys against each engine's list of flags, before anything is launched:
//! `validate` asks the installed engine (`server::flags::installed`, its `--help`) and says
//! which list it used; `run` and `resume` use the built-in list (no engine is started for it)
//! and print only the warnings. The rule and the words are `plan::spec::unknown_flags`'s.

use crate::plan::engine::Engine;
use crate::plan::flags::{FlagSource, KnownFlags};
use crate::plan::spec::{self, SweepSpec};
use std::path::Path;

/// Which list a check reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lists {
    /// The installed engine's `--help`, else the built-in list (`validate`).
    Installed,
    /// sgtune's built-in list (`run`, `resume`).
    BuiltIn,
}

/// Each engine the spec writes flags for with its list, and a line saying which list it is.
fn lists(s: &SweepSpec, which: Lists) -> Vec<(Engine, KnownFlags, String)> {
    spec::flag_engines(s)
        .into_iter()
        .map(|e| {
            let asked = match which {
                Lists::BuiltIn => Err(String::new()),
                Lists::Installed => crate::server::flags::installed(
                    &s.server.command_for(e),
                    &s.server.env_for(e),
                    crate::server::flags::HELP_TIMEOUT,
                ),
            };
            match asked {
                Ok(known) => {
                    let line = format!(
                        "flags: {} keys checked against {}: {} flags from `{}`",
                        e.label(),
                        known.source.describe(e.label()),
                        known.len(),
                        match &known.source {
                            FlagSource::Installed(command) => command.as_str(),
                            FlagSource::BuiltIn => "",
                        }
                    );
                    (e, known, line)
                }
                Err(why) => {
                    let known = e.built_in_flags();
                    let mut line = format!(
                        "flags: {} keys checked against {}: {} flags",
                        e.label(),
                        known.source.describe(e.label()),
                        known.len()
                    );
                    if !why.is_empty() {
                        line.push_str(&format!(
                            "; the installed {}'s could not be read: {why}",
                            e.label()
                        ));
                    }
                    (e, known, line)
                }
            }
        })
        .collect()
}

/// The lines `validate` prints: which list each engine's keys were checked against, then a
/// `warning:` for each key its list lacks.
pub fn validate_lines(s: &SweepSpec, text: &str, spec_path: &Path) -> Vec<String> {
    let lists = lists(s, Lists::Installed);
    let mut out: Vec<String> = lists.iter().map(|(_, _, line)| line.clone()).collect();
    out.extend(warnings(s, text, spec_path, lists));
    out
}

/// The warnings `run` and `resume` print before launching (the built-in list).
pub fn run_warnings(s: &SweepSpec, text: &str, spec_path: &Path) -> Vec<String> {
    warnings(s, text, spec_path, lists(s, Lists::BuiltIn))
}

fn warnings(
    s: &SweepSpec,
    text: &str,
    spec_path: &Path,
    lists: Vec<(Engine, KnownFlags, String)>,
) -> Vec<String> {
    let lists: Vec<(Engine, KnownFlags)> = lists.into_iter().map(|(e, k, _)| (e, k)).collect();
    spec::unknown_flags(s, text, &spec_path.display().to_string(), &lists)
        .into_iter()
        .map(|w| format!("warning: {w}"))
        .collect()
}
