//! When and where the sweep runs, and what runs around it: the time estimate's defaults
//! (`estimate:`), `deadline:` and `budget:`, `slurm:`, `slots:`, and the hooks `on_finish:` and
//! `between_runs:`.

use super::scalars::{opt_positive_f64, opt_positive_u64, positive_f64, positive_u64};
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

/// `estimate:`: the stated defaults of the time estimate, used until earlier sweeps in the
/// results folder or this sweep's first launch say better.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EstimateSpec {
    /// Seconds from launch to ready (default 60).
    #[serde(default = "default_startup_s", deserialize_with = "positive_f64")]
    pub startup_s: f64,
    /// Seconds one load point takes with `requests:` (with `duration_s:` it is that); no
    /// default: without it or an earlier sweep, such a plan has no estimate.
    #[serde(default, deserialize_with = "opt_positive_f64")]
    pub point_s: Option<f64>,
    /// Seconds to stop a server (default 2; at most `server.stop_timeout_s` in the worst case).
    #[serde(default = "default_stop_s", deserialize_with = "positive_f64")]
    pub stop_s: f64,
}

impl Default for EstimateSpec {
    fn default() -> Self {
        EstimateSpec {
            startup_s: default_startup_s(),
            point_s: None,
            stop_s: default_stop_s(),
        }
    }
}

fn default_startup_s() -> f64 {
    60.0
}

fn default_stop_s() -> f64 {
    2.0
}

/// `on_finish:`: a shell command (`sh -c`) run once at the end of the sweep with the outcome
/// in its environment and in `outcome.json`; its failure is a warning.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OnFinish {
    pub command: String,
    /// Seconds the command may run before its process group is killed (default 60).
    #[serde(
        default = "default_on_finish_timeout",
        deserialize_with = "positive_u64"
    )]
    pub timeout_s: u64,
}

fn default_on_finish_timeout() -> u64 {
    60
}

/// `slots:`: run configurations at the same time on disjoint GPU sets (or, without `gpus`,
/// `parallel` CPU servers at once).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SlotsSpec {
    #[serde(default, deserialize_with = "opt_positive_u64")]
    pub parallel: Option<u64>,
    /// GPU ids to share out, e.g. `[0, 1, 2, 3]`.
    #[serde(default)]
    pub gpus: Vec<GpuId>,
    /// GPUs per run (default: tp_size × dp_size of its configuration).
    #[serde(default, deserialize_with = "opt_positive_u64")]
    pub gpus_per_run: Option<u64>,
}

/// A GPU id as CUDA_VISIBLE_DEVICES takes it: an index or a UUID.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(transparent)]
pub struct GpuId(pub String);

impl<'de> Deserialize<'de> for GpuId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Index(u64),
            Name(String),
        }
        match Raw::deserialize(d).map_err(|_| {
            de::Error::custom("a GPU id: an index such as 0, or a UUID such as GPU-5d1c...")
        })? {
            Raw::Index(i) => Ok(GpuId(i.to_string())),
            Raw::Name(s) if !s.trim().is_empty() && !s.contains(',') => {
                Ok(GpuId(s.trim().to_string()))
            }
            Raw::Name(s) => Err(de::Error::custom(format!(
                "GPU id {s:?}: give one id per list item, e.g. gpus: [0, 1]"
            ))),
        }
    }
}

/// `slurm:`: the sbatch options of the job array (one task per server launch) and of the
/// merge job, and what a task runs on its node before sgtune.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SlurmSpec {
    #[serde(default)]
    pub partition: Option<String>,
    #[serde(default)]
    pub account: Option<String>,
    /// `--time` of each task, e.g. `2:00:00` (a timed-out task becomes a row that says so).
    #[serde(default)]
    pub time: Option<String>,
    #[serde(default)]
    pub qos: Option<String>,
    /// At most this many tasks of the array at once (`--array=0-N%max_running`).
    #[serde(default, deserialize_with = "opt_positive_u64")]
    pub max_running: Option<u64>,
    /// `--gres=gpu:N` per task; default tp_size × dp_size of the configuration; 0: no gres.
    #[serde(default)]
    pub gpus_per_run: Option<u64>,
    /// More sbatch options, each as on the command line, e.g. `--constraint=h100`.
    #[serde(default)]
    pub extra: Vec<String>,
    /// Shell lines run on the node before sgtune, e.g. `module load cuda`, `source venv/bin/activate`.
    #[serde(default)]
    pub setup: Vec<String>,
    /// The sgtune binary on the nodes (default: this one's path, which must be on a shared
    /// filesystem).
    #[serde(default)]
    pub sgtune: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BetweenRuns {
    /// Seconds to wait after a server is stopped, before the next starts.
    #[serde(default)]
    pub sleep_s: f64,
    /// A shell command (`sh -c`) run after each server is stopped; its failure is noted, not
    /// fatal.
    #[serde(default)]
    pub command: Option<String>,
}

/// `8h`, `90m`, `30s`, `1h30m`, `2h 15m`: seconds (> 0). A `budget:` (and `--budget`).
pub fn parse_budget(text: &str) -> Result<f64, String> {
    let bad = || {
        format!(
            "budget `{text}` is not a duration: give hours, minutes and/or seconds, like 8h, 90m, 30s or 1h30m"
        )
    };
    let mut total = 0.0;
    let mut number = String::new();
    let mut units = 0;
    for c in text.trim().chars() {
        match c {
            '0'..='9' | '.' => number.push(c),
            'h' | 'm' | 's' => {
                let n: f64 = number.parse().map_err(|_| bad())?;
                total += n * match c {
                    'h' => 3600.0,
                    'm' => 60.0,
                    _ => 1.0,
                };
                number.clear();
                units += 1;
            }
            ' ' if number.is_empty() => {}
            _ => return Err(bad()),
        }
    }
    if !number.is_empty() || units == 0 || !total.is_finite() {
        return Err(bad());
    }
    if total <= 0.0 {
        return Err(format!("budget `{text}` must be more than 0"));
    }
    Ok(total)
}

/// The form of a `deadline:` (and `--deadline`): `HH:MM`, `HH:MM:SS` or RFC 3339. Whether it
/// is past is known only when the sweep starts (`tune::deadline::parse_deadline`).
pub fn check_deadline_form(text: &str) -> Result<(), String> {
    let t = text.trim();
    let ok = chrono::DateTime::parse_from_rfc3339(t).is_ok()
        || chrono::NaiveTime::parse_from_str(t, "%H:%M").is_ok()
        || chrono::NaiveTime::parse_from_str(t, "%H:%M:%S").is_ok();
    if ok {
        Ok(())
    } else {
        Err(format!(
            "deadline `{text}` is not a time: give HH:MM (local time, today or tomorrow), or an RFC 3339 time like 2026-12-02T07:00:00+01:00"
        ))
    }
}

pub(super) fn opt_budget<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let s = String::deserialize(d)?;
    parse_budget(&s).map_err(de::Error::custom)?;
    Ok(Some(s))
}

pub(super) fn opt_deadline<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let s = String::deserialize(d)?;
    check_deadline_form(&s).map_err(de::Error::custom)?;
    Ok(Some(s))
}

#[cfg(test)]
mod tests {
    use crate::plan::spec::fixtures::{GOOD, err_of};
    use crate::plan::spec::parse;

    #[test]
    fn a_bad_budget_or_deadline_names_its_line() {
        let s = parse(
            &GOOD.replace("name: kv-cache-tuning", "name: k\nbudget: 1h30m"),
            "s.yaml",
        )
        .expect("parses");
        assert_eq!(s.budget.as_deref(), Some("1h30m"));
        let e = err_of(&GOOD.replace("name: kv-cache-tuning", "name: k\nbudget: soon"));
        assert!(e.message.contains("not a duration"), "{e}");
        assert_eq!(e.line, 2, "{e}");
        let e = err_of(&GOOD.replace("name: kv-cache-tuning", "name: k\ndeadline: '7am'"));
        assert!(e.message.contains("is not a time"), "{e}");
        assert_eq!(e.line, 2, "{e}");
    }

    #[test]
    fn on_finish_takes_a_command_and_a_positive_timeout() {
        let text = GOOD.replace(
            "name: kv-cache-tuning",
            "name: k\non_finish: {command: 'echo $SGTUNE_OUTCOME'}",
        );
        let s = parse(&text, "s.yaml").expect("parses");
        let o = s.on_finish.expect("on_finish");
        assert_eq!(
            (o.command.as_str(), o.timeout_s),
            ("echo $SGTUNE_OUTCOME", 60)
        );
        let e = err_of(&GOOD.replace(
            "name: kv-cache-tuning",
            "name: k\non_finish: {command: 'x', timeout_s: 0}",
        ));
        assert!(e.message.contains(">= 1"), "{e}");
        assert_eq!(e.line, 3, "{e}");
        let e = err_of(&GOOD.replace("name: kv-cache-tuning", "name: k\non_finish: {cmd: x}"));
        assert!(e.message.contains("cmd"), "{e}");
    }
}
