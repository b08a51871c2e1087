//! The sweep file as the user wrote it (`*Spec`), parsed with serde_yaml.
//!
//! Every problem is reported with the file, line and column, the offending key or value and
//! what is allowed (a file that cannot be read, or is not text, is named alone). Value checks
//! run inside deserialization (custom `Deserialize` impls) so serde_yaml attaches the position
//! of the exact node that is wrong.

mod env;
mod grid;
mod lengths;
mod load_points;
mod objective;
mod scalars;
mod schedule;
mod server;
mod workload;

pub use env::{Expanded, expand_env};
pub use grid::{ConfigSpec, ParamGrid, ParamMap};
pub use lengths::{LengthDist, RangeSemantics};
pub use load_points::{LoadPoint, rate_text};
pub use objective::{Bound, DEFAULT_NOISE, Goal, Objective, SloBound};
pub use schedule::{
    BetweenRuns, EstimateSpec, GpuId, OnFinish, SlotsSpec, SlurmSpec, check_deadline_form,
    parse_budget,
};
use schedule::{opt_budget, opt_deadline};
pub use server::{EngineSide, ServerSpec};
pub use workload::{DeadlinePolicy, Endpoint, SharedPrefix, Slo, WorkloadSpec};

use crate::plan::engine::Engine;
use crate::plan::flags::ParamValue;
use crate::plan::keyed::KEY_TAG;
use crate::plan::locate::{locate_key, locate_text, locate_var, relocate_to_key};
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;

// Where a key is in the text is `plan::locate`'s; these names are the ones the crate outside
// `plan` has always used.
pub use crate::plan::locate::{ObjectiveKey, locate_key as locate_key_in, locate_objective};

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
    pub search: super::search::Search,
    /// The output-quality guard (docs/methodology.md, "Output quality"; default: off).
    #[serde(default)]
    pub quality: Option<super::quality::Quality>,
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
    pub tune: Option<super::tune::TuneSpec>,
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
            (line, column) = relocate_to_key(text, line, column, key);
            message = format!("{path}{msg}");
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
    check_cross_fields(&spec, text, origin)?;
    check_engine_keys(&spec, text, origin)?;
    resolve_repeats(&mut spec, text, origin)?;
    check_tune(&mut spec, text, origin)?;
    Ok(spec)
}

/// `tune:` against the rest of the spec (`plan::tune::check`), the error placed on the key it
/// concerns; resolves the tune's start.
fn check_tune(spec: &mut SweepSpec, text: &str, origin: &str) -> Result<(), SpecError> {
    use crate::plan::locate::{Seg, locate_path};
    let Some(mut t) = spec.tune.take() else {
        return Ok(());
    };
    if spec.search.preflight.is_some() {
        let (line, column) = locate_key(text, "preflight").unwrap_or((1, 1));
        return Err(SpecError {
            file: origin.to_string(),
            line,
            column,
            message: "search.preflight is not supported with tune: yet: give mem_fraction_static as a tune knob (a range), or run the pre-flight as a sweep first".into(),
        });
    }
    let checked = super::tune::check(
        &mut t,
        spec.server.engine,
        &spec.server.args.0,
        !spec.sweep.0.is_empty(),
        !spec.configs.is_empty(),
        spec.objective.is_some(),
        spec.objective.as_ref().is_some_and(|o| o.prune),
        spec.auto_repeats.is_some(),
    );
    spec.tune = Some(t);
    checked.map_err(|p| {
        let segs: Vec<Seg<'_>> = p.path.iter().map(|s| Seg::Key(s.as_str())).collect();
        // The deepest part of the path the text shows (a key inside a flow mapping, else its
        // section).
        let (line, column) = (1..=segs.len())
            .rev()
            .find_map(|n| locate_path(text, &segs[..n]))
            .or_else(|| p.path.last().and_then(|k| locate_key(text, k)))
            .unwrap_or((1, 1));
        SpecError {
            file: origin.to_string(),
            line,
            column,
            message: p.message,
        }
    })
}

/// `repeats: auto` with `precision` and `max_repeats`, or neither of those keys.
fn resolve_repeats(spec: &mut SweepSpec, text: &str, origin: &str) -> Result<(), SpecError> {
    let err = |key: &str, message: String| {
        let (line, column) = locate_key(text, key).unwrap_or((1, 1));
        SpecError {
            file: origin.to_string(),
            line,
            column,
            message,
        }
    };
    if spec.repeats != 0 {
        for (key, given) in [
            ("precision", spec.precision.is_some()),
            ("max_repeats", spec.max_repeats.is_some()),
        ] {
            if given {
                return Err(err(
                    key,
                    format!(
                        "`{key}` goes with `repeats: auto`; with a fixed number of repeats, leave it out"
                    ),
                ));
            }
        }
        return Ok(());
    }
    if spec.objective.is_none() {
        return Err(err(
            "repeats",
            "`repeats: auto` repeats until the objective's interval is narrow enough: give an `objective:` (e.g. {maximize: output_tok_s})".into(),
        ));
    }
    if spec.search.max_load.is_some() {
        return Err(err(
            "repeats",
            "with search.max_load, a probe is repeated where it is close to the SLO (search.max_load.repeats); `repeats: auto` does not apply".into(),
        ));
    }
    let precision = spec.precision.unwrap_or(0.05);
    if !(precision.is_finite() && precision > 0.0 && precision < 1.0) {
        return Err(err(
            "precision",
            format!(
                "precision must be a fraction in (0, 1), e.g. 0.03 for ±3% of the mean; got {precision}"
            ),
        ));
    }
    let max = spec.max_repeats.unwrap_or(10);
    if max < AUTO_FIRST_REPEATS {
        return Err(err(
            "max_repeats",
            format!(
                "max_repeats must be at least {AUTO_FIRST_REPEATS} (two repeats give the first interval); got {max}"
            ),
        ));
    }
    spec.auto_repeats = Some(AutoRepeats { precision, max });
    spec.repeats = AUTO_FIRST_REPEATS;
    Ok(())
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

/// Under `engine: vllm`: no SGLang-only key, and no key set both by its common name and by
/// vLLM's (`max_running_requests` and `max_num_seqs`) for one configuration. The error points
/// at the key where it is written: `server.args`, `server.<engine>.args`, `sweep` or its own
/// configuration.
fn check_engine_keys(spec: &SweepSpec, text: &str, origin: &str) -> Result<(), SpecError> {
    use crate::plan::locate::{Seg, locate_path};
    let err = |key: &str, path: &[Seg<'_>], message: String| {
        let (line, column) = locate_path(text, path)
            .or_else(|| locate_key(text, key))
            .unwrap_or((1, 1));
        SpecError {
            file: origin.to_string(),
            line,
            column,
            message,
        }
    };
    let server = &spec.server;
    // Each key with its path in the file.
    let base = |engine: Engine| -> Vec<(&str, Vec<Seg<'_>>)> {
        let section = if engine == server.engine {
            vec![Seg::Key("server"), Seg::Key("args")]
        } else {
            vec![
                Seg::Key("server"),
                Seg::Key(engine.as_str()),
                Seg::Key("args"),
            ]
        };
        server
            .args_for(engine)
            .iter()
            .map(|(k, _)| {
                let mut path = section.clone();
                path.push(Seg::Key(k.as_str()));
                (k.as_str(), path)
            })
            .collect()
    };
    let on_server = format!("server.engine is {}", server.engine.as_str());
    // The grid runs on server.engine; each configuration on its own engine.
    let mut grid = base(server.engine);
    grid.extend(
        spec.sweep
            .0
            .iter()
            .map(|(k, _)| (k.as_str(), vec![Seg::Key("sweep"), Seg::Key(k.as_str())])),
    );
    let mut sets = vec![(server.engine, on_server.clone(), grid)];
    for e in Engine::ALL {
        if e != server.engine && server.side(e).is_some() {
            let why = format!(
                "server.{0}.args are for configurations with engine: {0}",
                e.as_str()
            );
            sets.push((e, why, base(e)));
        }
    }
    for (i, c) in spec.configs.iter().enumerate() {
        let engine = c.engine.unwrap_or(server.engine);
        let why = match c.engine {
            Some(e) => format!("configuration `{}` runs on {}", c.name, e.as_str()),
            None => on_server.clone(),
        };
        let mut keys = base(engine);
        keys.extend(c.params.0.iter().map(|(k, _)| {
            (
                k.as_str(),
                vec![Seg::Key("configs"), Seg::Item(i), Seg::Key(k.as_str())],
            )
        }));
        sets.push((engine, why, keys));
    }
    for (engine, why_engine, keys) in &sets {
        let engine = *engine;
        for (k, path) in keys {
            if let Some(why) = engine.refuses(k) {
                return Err(err(k, path, format!("{why} ({why_engine})")));
            }
            if let Some(common) = engine.common_key(k) {
                if keys.iter().any(|(other, _)| *other == common) {
                    return Err(err(
                        k,
                        path,
                        format!(
                            "`{k}` and `{common}` set the same {} flag (--{}): keep one",
                            engine.label(),
                            k.replace('_', "-")
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Checks that span several keys; placed at the line of the key they concern.
fn check_cross_fields(spec: &SweepSpec, text: &str, origin: &str) -> Result<(), SpecError> {
    let err = |key: &str, message: String| {
        let (line, column) = locate_key(text, key).unwrap_or((1, 1));
        SpecError {
            file: origin.to_string(),
            line,
            column,
            message,
        }
    };
    if spec.server.command.is_empty() {
        return Err(err(
            "command",
            "server.command is empty: give the program, e.g. [python, -m, sglang.launch_server]"
                .into(),
        ));
    }
    let mut names: Vec<&str> = Vec::new();
    for (i, c) in spec.configs.iter().enumerate() {
        if names.contains(&c.name.as_str()) {
            use crate::plan::locate::{Seg, locate_path};
            let mut e = err(
                "configs",
                format!(
                    "two configurations are named `{}`: names must be unique",
                    c.name
                ),
            );
            let second = [Seg::Key("configs"), Seg::Item(i), Seg::Key("name")];
            if let Some((line, column)) = locate_path(text, &second) {
                (e.line, e.column) = (line, column);
            }
            return Err(e);
        }
        names.push(&c.name);
    }
    check_search(spec, text, &err)
}

/// What `search:` needs from the rest of the spec.
fn check_search(
    spec: &SweepSpec,
    text: &str,
    err: &dyn Fn(&str, String) -> SpecError,
) -> Result<(), SpecError> {
    use crate::plan::flags::PREFLIGHT_VALUE;
    if spec.search.max_load.is_some() {
        let has_slo = spec.objective.as_ref().is_some_and(|o| !o.slo.is_empty());
        if !has_slo {
            return Err(err(
                "max_load",
                "search.max_load looks for the highest load within the SLO: give an `objective:` with an `slo:`, e.g. {maximize: output_tok_s, slo: {ttft_ms_p99: 2000}}".into(),
            ));
        }
        if spec.workload.load_points.len() > 1 {
            return Err(err(
                "concurrency",
                "search.max_load chooses the load points itself: give workload.concurrency (and request_rate) a single value, not a list".into(),
            ));
        }
        if spec.repeats > 1 {
            return Err(err(
                "repeats",
                "with search.max_load, a probe is repeated where it is close to the SLO: set search.max_load.repeats instead of `repeats`".into(),
            ));
        }
    }
    use crate::plan::locate::{Seg, locate_path};
    let is_placeholder = |v: &ParamValue| matches!(v, ParamValue::Str(s) if s == PREFLIGHT_VALUE);
    // Each placeholder with where it is written: a sweep list's item (or its single value), a
    // configuration's key, a server flag.
    let mut placeholders: Vec<(&String, Vec<Vec<Seg<'_>>>)> = Vec::new();
    for (k, vs) in &spec.sweep.0 {
        for (j, _) in vs.iter().enumerate().filter(|(_, v)| is_placeholder(v)) {
            let key = [Seg::Key("sweep"), Seg::Key(k.as_str())];
            let mut item = key.to_vec();
            item.push(Seg::Item(j));
            placeholders.push((k, vec![item, key.to_vec()]));
        }
    }
    for (i, c) in spec.configs.iter().enumerate() {
        for (k, _) in c.params.0.iter().filter(|(_, v)| is_placeholder(v)) {
            let path = vec![Seg::Key("configs"), Seg::Item(i), Seg::Key(k.as_str())];
            placeholders.push((k, vec![path]));
        }
    }
    for (k, _) in spec.server.args.0.iter().filter(|(_, v)| is_placeholder(v)) {
        let path = vec![Seg::Key("server"), Seg::Key("args"), Seg::Key(k.as_str())];
        placeholders.push((k, vec![path]));
    }
    for (k, paths) in placeholders {
        // The placeholder's own place (often inside a flow mapping: `{name: x, k: preflight}`).
        let err = |_: &str, message: String| {
            let mut e = err(k, message);
            if let Some((line, column)) = paths
                .iter()
                .find_map(|p| locate_path(text, p))
                .or_else(|| locate_text(text, &format!("{k}: {PREFLIGHT_VALUE}")))
                .or_else(|| locate_text(text, PREFLIGHT_VALUE))
            {
                (e.line, e.column) = (line, column);
            }
            e
        };
        match &spec.search.preflight {
            Some(p) if &p.knob == k => {}
            Some(p) => {
                return Err(err(
                    k,
                    format!(
                        "`{k}: {PREFLIGHT_VALUE}` but search.preflight searches `{}`: only that knob can take the pre-flight's value",
                        p.knob
                    ),
                ));
            }
            None => {
                return Err(err(
                    k,
                    format!(
                        "`{k}: {PREFLIGHT_VALUE}` needs a search.preflight section for `{k}`, e.g. {k}: {{from: .., to: .., resolution: ..}}"
                    ),
                ));
            }
        }
    }
    Ok(())
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

    /// `tune:`'s errors that depend on the rest of the spec land on the key they concern.
    #[test]
    fn tune_errors_are_placed_on_their_key() {
        let base = "name: t\nserver:\n  command: [python3]\n  model_path: /m\n  args:\n    hicache_size: 8\nworkload: {concurrency: 2, requests: 4, input_tokens: 4, output_tokens: 4, vocab_size: 10}\n";
        let objective = "objective: {maximize: output_tok_s}\n";
        let knobs = "tune:\n  knobs:\n    hicache_size: [0, 16]\n  launches: 2\n";
        // server.args' value is the start, and it is not among the knob's values.
        let e = parse(&format!("{base}{objective}{knobs}"), "t.yaml").unwrap_err();
        assert_eq!((e.line, e.column), (6, 5), "{e}");
        assert!(
            e.message.contains("server.args sets hicache_size = 8"),
            "{e}"
        );
        let ok = base.replace("hicache_size: 8", "hicache_size: 16");
        let s = parse(&format!("{ok}{objective}{knobs}"), "t.yaml").unwrap();
        assert_eq!(s.tune.as_ref().map(|t| t.start.clone()), Some(vec![1]));
        // No objective: on `tune:`.
        let e = parse(&format!("{ok}{knobs}"), "t.yaml").unwrap_err();
        assert_eq!(e.line, 8, "{e}");
        assert!(e.message.contains("needs an `objective:`"), "{e}");
        // repeats: auto.
        let e = parse(&format!("{ok}{objective}repeats: auto\n{knobs}"), "t.yaml").unwrap_err();
        assert_eq!(e.line, 9, "{e}");
        assert!(e.message.contains("`repeats: auto`"), "{e}");
    }

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

    /// Where an engine-refused key is reported: (line, column, message) of its error.
    fn engine_key_error(body: &str) -> (usize, usize, String) {
        let text = format!(
            "name: t\nserver:\n  model_path: /m\n{body}workload: {{concurrency: 1, requests: 1, input_tokens: 1, output_tokens: 1}}\n"
        );
        let e = err_of(&text);
        (e.line, e.column, e.message)
    }

    #[test]
    fn an_engine_refused_key_is_located_in_its_own_configuration_in_every_style() {
        // Flow style, one configuration per line: the key inside the second mapping.
        let (l, c, m) = engine_key_error(
            "configs:\n  - {name: a, hicache_size: 8}\n  - {name: b, engine: vllm, hicache_size: 48}\n",
        );
        assert_eq!((l, c), (6, 29), "{m}");
        // A flow list on one line: the second `hicache_size`, not the first.
        let (l, c, m) = engine_key_error(
            "configs: [{name: a, hicache_size: 8}, {name: b, engine: vllm, hicache-size: 48}]\n",
        );
        assert_eq!((l, c), (4, 63), "{m}");
        // Block style: the key repeated in several configurations is the one at fault.
        let (l, c, m) = engine_key_error(
            "configs:\n  - name: a\n    hicache_size: 8\n\n  - name: b\n    engine: vllm\n    hicache_size: 48\n",
        );
        assert_eq!((l, c), (10, 5), "{m}");
        // A block sequence at the parent's indent.
        let (l, c, m) = engine_key_error(
            "configs:\n- name: a\n  hicache_size: 8\n- name: b\n  hicache_size: 9\n  engine: vllm\n",
        );
        assert_eq!((l, c), (8, 3), "{m}");
        // The vLLM side's flags, after an SGLang side whose args have the same key.
        let (l, c, m) = engine_key_error(
            "  args:\n    schedule_conservativeness: 0.5\n  vllm:\n    args:\n      schedule_conservativeness: 0.3\nconfigs:\n  - {name: b, engine: vllm}\n",
        );
        assert_eq!((l, c), (8, 7), "{m}");
        // The grid of a vLLM server, flow style.
        let (l, c, m) =
            engine_key_error("  engine: vllm\nsweep: {max_num_seqs: [4], hicache_ratio: [0, 2]}\n");
        assert_eq!((l, c), (5, 28), "{m}");
    }

    #[test]
    fn an_engine_refusal_names_the_configurations_engine_not_the_servers() {
        let (_, _, m) =
            engine_key_error("configs:\n  - {name: b, engine: vllm, hicache_size: 48}\n");
        assert!(!m.contains("server.engine is vllm"), "{m}");
        assert!(m.contains("configuration `b` runs on vllm"), "{m}");
        let (_, _, m) = engine_key_error("  engine: vllm\nsweep: {hicache_size: [0, 2]}\n");
        assert!(m.contains("server.engine is vllm"), "{m}");
    }

    #[test]
    fn a_repeated_configuration_name_is_located_at_the_second() {
        let (l, c, m) =
            engine_key_error("configs:\n  - {name: a, tp_size: 1}\n  - {name: a, tp_size: 2}\n");
        assert!(m.contains("two configurations are named `a`"), "{m}");
        assert_eq!((l, c), (6, 6), "{m}");
    }

    #[test]
    fn a_misplaced_preflight_value_is_located_where_it_is_written() {
        let head = "name: t\nserver:\n  model_path: /m\nsearch:\n  preflight:\n    mem_fraction_static: {from: 0.8, to: 0.9, resolution: 0.01}\n";
        let tail = "workload: {concurrency: 1, requests: 1, input_tokens: 1, output_tokens: 1}\n";
        // In a sweep list, after another `preflight`: the list's item.
        let e = err_of(&format!(
            "{head}configs:\n  - {{name: a, mem_fraction_static: preflight}}\nsweep:\n  max_running_requests: [8, preflight]\n{tail}"
        ));
        assert!(
            e.message.contains("`max_running_requests: preflight` but search.preflight searches `mem_fraction_static`"),
            "{e}"
        );
        assert_eq!((e.line, e.column), (10, 29), "{e}");
        // Written with dashes in a configuration's flow mapping: that configuration's key.
        let e = err_of(&format!(
            "{head}configs:\n  - {{name: a, mem_fraction_static: preflight}}\n  - {{name: b, max-running-requests: preflight}}\n{tail}"
        ));
        assert_eq!((e.line, e.column), (9, 15), "{e}");
    }
}
