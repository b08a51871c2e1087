//! The sweep file as the user wrote it (`*Spec`), parsed with serde_yaml.
//!
//! Every problem is reported with the file, line and column, the offending key or value and
//! what is allowed (a file that cannot be read, or is not text, is named alone). Value checks
//! run inside deserialization (custom `Deserialize` impls) so serde_yaml attaches the position
//! of the exact node that is wrong.
//!
//! This file holds the whole sweep (`SweepSpec`), its reading (`parse`, `load`) and the keys
//! that belong to no section; each section and the checks across sections have their own
//! module, and everything public is re-exported here, so the rest of the crate names it
//! `plan::spec::X` whichever module it lives in. Where a key is in the text is
//! `plan::locate`'s.

mod checks;
mod endpoint;
mod env;
mod flag_keys;
mod grid;
mod lengths;
mod load_points;
mod objective;
mod scalars;
mod schedule;
mod server;
mod sessions;
mod workload;

// Where a key is in the text is `plan::locate`'s; these names are the ones the crate outside
// `plan` has always used.
pub use crate::plan::locate::locate_key as locate_key_in;
pub use endpoint::Endpoint;
pub use env::{Expanded, expand_env};
pub use flag_keys::{flag_engines, unknown_flags};
pub use grid::{ConfigSpec, ParamGrid, ParamMap};
pub use lengths::{LengthDist, RangeSemantics};
pub use load_points::{LoadPoint, point_label, rate_text};
pub use objective::{Bound, DEFAULT_NOISE, Goal, Objective, SloBound};
pub use schedule::{
    BetweenRuns, EstimateSpec, GpuId, OnFinish, SlotsSpec, SlurmSpec, check_deadline_form,
    parse_budget,
};
pub use server::{EngineSide, ServerSpec};
pub use sessions::{NominalTurn, SessionSource, SessionsSpec, reusable_share};
pub use workload::{DeadlinePolicy, SharedPrefix, Slo, WorkloadSpec};

use crate::plan::keyed::{AT_NAME, KEY_TAG};
use crate::plan::locate::{locate_var, relocate_to_key, relocate_to_key_name};
use schedule::{opt_budget, opt_deadline};
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;

/// A bad sweep file: where and why.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecError {
    pub file: String,
    /// 1-based; 0 when the problem is the whole file (unreadable, not text), which is then
    /// named alone, without a made-up position.
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl SpecError {
    /// A problem with the file as a whole.
    fn whole_file(file: &str, message: String) -> SpecError {
        SpecError {
            file: file.to_string(),
            line: 0,
            column: 0,
            message,
        }
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(
                f,
                "{}:{}:{}: {}",
                self.file, self.line, self.column, self.message
            )
        }
    }
}

impl std::error::Error for SpecError {}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    /// Sweep name; used in the results folder name.
    pub name: SweepName,
    pub server: ServerSpec,
    /// Cartesian grid: key → list of values.
    #[serde(default)]
    pub sweep: ParamGrid,
    /// Explicit named configurations, run after the grid.
    #[serde(default)]
    pub configs: Vec<ConfigSpec>,
    pub workload: WorkloadSpec,
    /// Measure each configuration this many times (a fresh server each time unless
    /// `reuse_server`).
    /// `repeats: auto` reads as 0 here and becomes `auto_repeats` (and 2, the first round)
    /// once the whole spec is read.
    #[serde(default = "default_repeats", deserialize_with = "repeats_value")]
    pub repeats: u64,
    /// With `repeats: auto`: the relative 95% half-width of the objective to reach.
    #[serde(default)]
    pub precision: Option<f64>,
    /// With `repeats: auto`: the most repeats of one configuration at one load point.
    #[serde(default)]
    pub max_repeats: Option<u64>,
    /// `repeats: auto`, resolved: repeat until precise or at the cap.
    #[serde(skip_deserializing, default)]
    pub auto_repeats: Option<AutoRepeats>,
    /// Keep one server per configuration across its repeats.
    #[serde(default)]
    pub reuse_server: bool,
    /// Site-specific pause or cleanup after each server is stopped.
    #[serde(default)]
    pub between_runs: Option<BetweenRuns>,
    /// What the decision optimizes, and the SLO a winner must hold (None: no decision, only
    /// the table).
    #[serde(default)]
    pub objective: Option<Objective>,
    /// The max-load search per configuration and the memory pre-flight (default: neither).
    #[serde(default)]
    pub search: crate::plan::search::Search,
    /// The output-quality guard (docs/methodology.md, "Output quality"; default: off).
    #[serde(default)]
    pub quality: Option<crate::plan::quality::Quality>,
    /// How `--executor slurm` submits the sweep (flags override each key).
    #[serde(default)]
    pub slurm: Option<SlurmSpec>,
    /// Several runs at once on this machine (`--parallel`, `--gpus`, `--gpus-per-run` override
    /// each key).
    #[serde(default)]
    pub slots: Option<SlotsSpec>,
    /// A command run once when the sweep ends, however it ends (`--on-finish` overrides
    /// the command).
    #[serde(default)]
    pub on_finish: Option<OnFinish>,
    /// Stop by this time (HH:MM local, or RFC 3339) with the best decision so far; read when
    /// the sweep starts (`--deadline` overrides it; a resume does not reuse it).
    #[serde(default, deserialize_with = "opt_deadline")]
    pub deadline: Option<String>,
    /// As `deadline`, counted from the start: `8h`, `90m`, `30s`.
    #[serde(default, deserialize_with = "opt_budget")]
    pub budget: Option<String>,
    /// What the time estimate assumes where nothing was measured yet.
    #[serde(default)]
    pub estimate: EstimateSpec,
    /// The guided tune (`plan::tune`): knobs, start and budget; the next configuration is
    /// chosen from the evidence of the launches so far instead of running a grid.
    #[serde(default)]
    pub tune: Option<crate::plan::tune::TuneSpec>,
}

fn default_repeats() -> u64 {
    1
}

/// `repeats: auto`: measure each configuration at each load point until the 95% confidence
/// half-width of the objective's column is at most `precision` × its mean, or `max` repeats.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AutoRepeats {
    pub precision: f64,
    pub max: u64,
}

/// The repeats a round of `repeats: auto` starts with: two give the first interval.
pub const AUTO_FIRST_REPEATS: u64 = 2;

/// `repeats:` a whole number >= 1, or `auto` (read as 0 until the spec is resolved).
fn repeats_value<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        N(i64),
        S(String),
    }
    match Raw::deserialize(d).map_err(|_| {
        de::Error::custom(
            "repeats: a whole number >= 1, or `auto` (with objective: and precision:)",
        )
    })? {
        Raw::N(n) if n >= 1 => Ok(n as u64),
        Raw::N(n) => Err(de::Error::custom(format!(
            "expected a whole number >= 1, got {n}"
        ))),
        Raw::S(s) if s == "auto" => Ok(0),
        Raw::S(s) => Err(de::Error::custom(format!(
            "repeats: a whole number >= 1, or `auto`; got `{s}`"
        ))),
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct SweepName(pub String);

impl<'de> Deserialize<'de> for SweepName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        check_name(&s).map_err(de::Error::custom)?;
        Ok(SweepName(s))
    }
}

fn check_name(s: &str) -> Result<(), String> {
    if s.is_empty()
        || s.len() > 80
        || !s
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        || s.starts_with('.')
    {
        return Err(format!(
            "name `{s}` must be 1-80 characters of letters, digits, `-`, `_`, `.` (it becomes a folder name)"
        ));
    }
    Ok(())
}

/// Parse a sweep from text; `origin` names the file in errors.
pub fn parse(text: &str, origin: &str) -> Result<SweepSpec, SpecError> {
    let spec: SweepSpec = serde_yaml::from_str(text).map_err(|e| {
        let (mut line, mut column) = e
            .location()
            .map(|l| (l.line(), l.column()))
            .unwrap_or((0, 0));
        let mut message = e.to_string();
        // serde_yaml appends " at line N column M"; the prefix already says where.
        if let Some(pos) = message.find(" at line ") {
            message.truncate(pos);
        }
        let parts: Vec<&str> = message.splitn(3, KEY_TAG).collect();
        if let [path, key, msg] = parts.as_slice() {
            (line, column, message) = match msg.strip_prefix(AT_NAME) {
                Some(msg) => {
                    let (l, c) = relocate_to_key_name(text, line, column, key);
                    (l, c, format!("{path}{msg}"))
                }
                None => {
                    let (l, c) = relocate_to_key(text, line, column, key);
                    (l, c, format!("{path}{msg}"))
                }
            };
        }
        if let Some(rest) = message.split("environment variable `").nth(1) {
            if let Some(name) = rest.split('`').next() {
                if let Some(pos) = locate_var(text, name) {
                    (line, column) = pos;
                }
            }
        }
        SpecError {
            file: origin.to_string(),
            line,
            column,
            message: explain(&message),
        }
    })?;
    let mut spec = spec;
    spec.server.command = spec
        .server
        .command_given
        .clone()
        .unwrap_or_else(|| server::default_command(spec.server.engine));
    checks::check_cross_fields(&spec, text, origin)?;
    checks::check_engine_keys(&spec, text, origin)?;
    checks::resolve_repeats(&mut spec, text, origin)?;
    checks::check_tune(&mut spec, text, origin)?;
    checks::check_objective_goodput(&spec, text, origin)?;
    Ok(spec)
}

/// Make serde's wording friendlier where it is terse.
fn explain(msg: &str) -> String {
    if msg.contains("unknown field") {
        return format!("{msg} (check the spelling; the README lists every key)");
    }
    // The whole document is not a mapping: serde names our type, which means nothing to
    // the person who wrote the file.
    if let Some(found) = msg
        .strip_prefix("invalid type: ")
        .and_then(|m| m.strip_suffix(", expected struct SweepSpec"))
    {
        let found = if found == "sequence" {
            "a list".to_string()
        } else {
            format!("a single value ({found})")
        };
        return format!(
            "the spec must be a mapping with name, server, sweep, workload, but its top level \
             is {found}"
        );
    }
    msg.to_string()
}

/// Read and parse a sweep file.
pub fn load(path: &Path) -> Result<(SweepSpec, String), SpecError> {
    let origin = path.display().to_string();
    let bytes = std::fs::read(path)
        .map_err(|e| SpecError::whole_file(&origin, format!("cannot read the sweep file: {e}")))?;
    let text = spec_text(bytes).map_err(|m| SpecError::whole_file(&origin, m))?;
    let spec = parse(&text, &origin)?;
    Ok((spec, text))
}

/// The file's bytes as text, or why they are not a sweep file's text. A binary file (a NUL
/// byte, or bytes that are not UTF-8: an image, an archive, a UTF-16 file) is refused as a
/// whole: a line and column inside it would mean nothing.
fn spec_text(bytes: Vec<u8>) -> Result<String, String> {
    const HINT: &str = "a sweep file is YAML text in UTF-8 (was the wrong file given?)";
    if let Some(at) = bytes.iter().position(|&b| b == 0) {
        return Err(format!(
            "not a text file (a NUL byte at byte offset {at}): {HINT}"
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "not a text file (invalid UTF-8 at byte offset {}): {HINT}",
            e.utf8_error().valid_up_to()
        )
    })
}

/// What the tests of every module here start from: a spec that parses, and the error of one
/// that does not.
#[cfg(test)]
mod fixtures {
    use super::{SpecError, parse};

    pub(super) const GOOD: &str = r#"
name: kv-cache-tuning
server:
  command: [python, -m, sglang.launch_server]
  model_path: /models/my-model
  host: 127.0.0.1
  port: 30000
  args:
    tp_size: 8
    trust_remote_code: true
  env: {}
  ready_timeout_s: 1800
  stop_timeout_s: 30
sweep:
  mem_fraction_static: [0.85, 0.88]
  kv_cache_dtype: [auto, fp8_e4m3]
  hicache_size: [0, 48]
configs:
  - name: baseline
    mem_fraction_static: 0.85
workload:
  endpoint: completions
  concurrency: 150
  requests: 1000
  warmup_requests: 10
  input_tokens: 2000
  output_tokens: 2000
  seed: 1
"#;

    pub(super) fn err_of(text: &str) -> SpecError {
        match parse(text, "s.yaml") {
            Ok(_) => panic!("expected an error"),
            Err(e) => e,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::flags::ParamValue;
    use crate::plan::spec::fixtures::{GOOD, err_of};

    #[test]
    fn parses_the_issue_example() {
        let s = parse(GOOD, "s.yaml").expect("parses");
        assert_eq!(s.name.0, "kv-cache-tuning");
        assert_eq!(s.server.port, Some(30000));
        assert_eq!(s.server.args.0.len(), 2);
        assert_eq!(s.sweep.0.len(), 3);
        assert_eq!(
            s.sweep.0[2].1,
            vec![ParamValue::Int(0), ParamValue::Int(48)]
        );
        assert_eq!(s.configs[0].name, "baseline");
        assert_eq!(s.workload.concurrency, 150);
        assert_eq!(
            s.workload.load_points,
            vec![LoadPoint {
                concurrency: 150,
                request_rate: None
            }]
        );
        assert_eq!((s.repeats, s.reuse_server), (1, false));
        assert_eq!(s.workload.requests, Some(1000));
        assert_eq!(s.workload.endpoint, Endpoint::Completions);
    }

    #[test]
    fn unknown_key_names_line_column_and_key() {
        let text = GOOD.replace("  seed: 1", "  sed: 1");
        let e = err_of(&text);
        assert_eq!(e.line, 28, "{e}");
        assert!(e.message.contains("unknown field `sed`"), "{e}");
        assert!(e.message.contains("seed"), "lists allowed keys: {e}");
    }

    #[test]
    fn wrong_type_is_located() {
        let text = GOOD.replace("concurrency: 150", "concurrency: lots");
        let e = err_of(&text);
        assert_eq!((e.line, e.column), (23, 16), "{e}");
        assert!(e.message.contains("invalid type"), "{e}");
    }

    #[test]
    fn load_points_repeats_and_between_runs() {
        let text = GOOD
            .replace("concurrency: 150", "concurrency: [16, 64, 150]")
            .replace("name: kv-cache-tuning", "name: k\nrepeats: 3\nreuse_server: true\nbetween_runs: {sleep_s: 5, command: 'true'}");
        let s = parse(&text, "s.yaml").expect("parses");
        let concurrencies: Vec<u64> = s
            .workload
            .load_points
            .iter()
            .map(|p| p.concurrency)
            .collect();
        assert_eq!(concurrencies, vec![16, 64, 150]);
        assert!(
            s.workload
                .load_points
                .iter()
                .all(|p| p.request_rate.is_none())
        );
        assert_eq!(s.repeats, 3);
        assert!(s.reuse_server);
        assert_eq!(s.between_runs.as_ref().map(|b| b.sleep_s), Some(5.0));
        let e = err_of(&GOOD.replace("concurrency: 150", "concurrency: [16, 16]"));
        assert!(e.message.contains("listed twice"), "{e}");
        let e = err_of(&GOOD.replace("name: kv-cache-tuning", "name: k\nrepeats: 0"));
        assert!(e.message.contains(">= 1"), "{e}");
    }

    #[test]
    fn missing_env_var_is_an_error_with_position() {
        let text = GOOD.replace("/models/my-model", "${SGTUNE_TEST_SURELY_UNSET_VAR}");
        let e = err_of(&text);
        assert_eq!((e.line, e.column), (5, 15), "{e}");
        assert!(e.message.contains("SGTUNE_TEST_SURELY_UNSET_VAR"), "{e}");
    }

    #[test]
    fn a_top_level_that_is_not_a_mapping_says_what_a_spec_is() {
        let e = err_of("# a sweep\n- name: a\n- name: b\n");
        assert!(
            e.message
                .contains("a mapping with name, server, sweep, workload"),
            "{e}"
        );
        assert!(e.message.contains("a list"), "{e}");
        assert!(!e.message.contains("SweepSpec"), "{e}");
        assert_eq!((e.line, e.column), (2, 1), "{e}");
        assert!(e.to_string().starts_with("s.yaml:2:1: "), "{e}");
        let e = err_of("hello\n");
        assert!(
            e.message.contains("a single value (string \"hello\")"),
            "{e}"
        );
    }

    #[test]
    fn binary_files_are_refused_whole_and_named_without_a_position() {
        assert_eq!(spec_text(b"name: x\n".to_vec()).as_deref(), Ok("name: x\n"));
        let nul = spec_text(b"name: x\n\0\x01".to_vec()).expect_err("NUL");
        assert!(
            nul.contains("not a text file (a NUL byte at byte offset 8)"),
            "{nul}"
        );
        let bad = spec_text(b"name: \xff\xfe".to_vec()).expect_err("not UTF-8");
        assert!(bad.contains("invalid UTF-8 at byte offset 6"), "{bad}");
        let e = SpecError::whole_file("s.yaml", bad.clone());
        assert_eq!(e.to_string(), format!("s.yaml: {bad}"));
    }
}
