//! RunRecord: the flat row of one run, and each results.csv column's value in it (`cell`, one
//! arm per column). The column list itself (names, directions, meanings) is
//! `plan::columns`'; `sgtune columns` prints it for the README (`columns_markdown`).

use crate::observe::client::{ClientSummary, Stats};
use crate::observe::diagnose::Verdict;
use crate::observe::sglang_log::ServerSummary;
use crate::plan::engine::Engine;
use crate::plan::expand::RunConfig;
use crate::plan::flags::ParamValue;
use crate::plan::spec::LoadPoint;
use crate::server::failure::FailureKind;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Ok,
    Failed,
    Interrupted,
    /// Not measured: clearly beaten at the lowest load point (`objective.prune`); the
    /// failure_message has the evidence.
    Pruned,
}

impl RunStatus {
    pub const ALL: [RunStatus; 4] = [
        RunStatus::Ok,
        RunStatus::Failed,
        RunStatus::Interrupted,
        RunStatus::Pruned,
    ];

    /// The status named by `as_str` (results.csv `status`).
    pub fn parse(s: &str) -> Option<RunStatus> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Ok => "ok",
            RunStatus::Failed => "failed",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Pruned => "pruned",
        }
    }
}

/// What a row measured: a fixed load point, a probe of the max-load search, or an attempt of
/// the memory pre-flight.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    #[default]
    Measure,
    Probe,
    Preflight,
}

impl Phase {
    pub const ALL: [Phase; 3] = [Phase::Measure, Phase::Probe, Phase::Preflight];

    /// The phase named by `as_str` (results.csv `phase`).
    pub fn parse(s: &str) -> Option<Phase> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Measure => "measure",
            Phase::Probe => "probe",
            Phase::Preflight => "preflight",
        }
    }
}

/// A configuration's standing on output quality.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QualityStatus {
    /// The reference every other is compared with.
    Baseline,
    Pass,
    Fail,
    /// No usable comparison: not shown to keep the outputs.
    Unchecked,
}

impl QualityStatus {
    pub const ALL: [QualityStatus; 4] = [
        QualityStatus::Baseline,
        QualityStatus::Pass,
        QualityStatus::Fail,
        QualityStatus::Unchecked,
    ];

    /// The status named by `as_str` (results.csv `quality_verdict`).
    pub fn parse(s: &str) -> Option<QualityStatus> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            QualityStatus::Baseline => "baseline",
            QualityStatus::Pass => "pass",
            QualityStatus::Fail => "fail",
            QualityStatus::Unchecked => "unchecked",
        }
    }
    /// Whether the decision may still consider the configuration.
    pub fn eligible(self) -> bool {
        matches!(self, QualityStatus::Baseline | QualityStatus::Pass)
    }
}

/// How a probe of the max-load search (all its repeats together) stands against the SLO, or
/// whether a pre-flight attempt survived its burst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeResult {
    /// The median of its repeats meets every bound, and no repeat falls on the other side.
    Pass,
    /// A bound is missed by the median and no repeat falls on the other side (or it failed).
    Fail,
    /// Too close to call: its repeats straddle a bound (or one repeat lies within the noise).
    Uncertain,
}

impl ProbeResult {
    pub const ALL: [ProbeResult; 3] =
        [ProbeResult::Pass, ProbeResult::Fail, ProbeResult::Uncertain];

    /// The standing named by `as_str` (results.csv `probe`).
    pub fn parse(s: &str) -> Option<ProbeResult> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ProbeResult::Pass => "pass",
            ProbeResult::Fail => "fail",
            ProbeResult::Uncertain => "uncertain",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub run_name: String,
    pub run_id: String,
    /// The engine the run's server is (its configuration's `engine:`, else `server.engine`).
    /// Absent from summary.json files written before vLLM: those ran SGLang.
    #[serde(default)]
    pub engine: Engine,
    pub status: RunStatus,
    pub failure_kind: Option<FailureKind>,
    pub failure_message: Option<String>,
    /// Values of the plan's swept keys, in `RunPlan::param_keys` order (None: not set).
    pub params: Vec<(String, Option<ParamValue>)>,
    /// The load point (offered concurrency) of this row.
    pub concurrency: u64,
    /// Open loop: the load point's arrival rate (requests/s); None in a closed loop.
    pub request_rate: Option<f64>,
    /// 1-based repeat index.
    pub repeat: u64,
    /// Absent from summary.json files written before the search: a fixed load point.
    #[serde(default)]
    pub phase: Phase,
    /// The probe's standing against the SLO (a `probe` row), or whether the attempt survived
    /// (a `preflight` row).
    pub probe: Option<ProbeResult>,
    pub client: Option<ClientSummary>,
    pub server: Option<ServerSummary>,
    pub verdict: Option<Verdict>,
    pub time_to_ready_s: Option<f64>,
    /// The server's side from `/metrics` (with `--enable-metrics`).
    pub metrics: Option<crate::observe::prom::MetricsSummary>,
    /// What the server ran with against what was asked (`/server_info`, the start-up log).
    pub effective: Option<crate::observe::effective::EffectiveArgs>,
    /// Things worth knowing that are not failures (a GPU not released, a slow stop, ...).
    #[serde(default)]
    pub notes: Vec<String>,
    pub started_at: String,
    pub finished_at: String,
}

impl RunRecord {
    /// The row of run `run_name` (`run_id`, on `engine`, with its values of the plan's swept
    /// keys) at one load point and repeat of a fixed measurement, before anything is known of
    /// it: ok, nothing measured, no notes, no times. Callers set what they learn (a failure,
    /// the summaries, the times) with `RunRecord { .., ..RunRecord::new(..) }`.
    pub fn new(
        run_name: impl Into<String>,
        run_id: impl Into<String>,
        engine: Engine,
        params: Vec<(String, Option<ParamValue>)>,
        point: LoadPoint,
        repeat: u64,
    ) -> RunRecord {
        RunRecord {
            run_name: run_name.into(),
            run_id: run_id.into(),
            engine,
            status: RunStatus::Ok,
            failure_kind: None,
            failure_message: None,
            params,
            concurrency: point.concurrency,
            request_rate: point.request_rate,
            repeat,
            phase: Phase::Measure,
            probe: None,
            client: None,
            server: None,
            verdict: None,
            time_to_ready_s: None,
            metrics: None,
            effective: None,
            notes: Vec::new(),
            started_at: String::new(),
            finished_at: String::new(),
        }
    }

    /// [`RunRecord::new`] for a configuration of the plan: its name, id and engine, and its
    /// values of `param_keys` (the plan's swept keys, in column order).
    pub fn of_run(
        run: &RunConfig,
        param_keys: &[String],
        point: LoadPoint,
        repeat: u64,
    ) -> RunRecord {
        let params = param_keys
            .iter()
            .map(|k| (k.clone(), run.param(k).cloned()))
            .collect();
        RunRecord::new(&run.name, &run.id, run.engine, params, point, repeat)
    }

    /// What identifies a row within a sweep: run name, load point, repeat.
    pub fn key(&self) -> RowKey {
        (
            self.run_name.clone(),
            self.concurrency,
            crate::plan::spec::rate_text(self.request_rate),
            self.repeat,
        )
    }
}

/// Run name, concurrency, request rate (as `spec::rate_text` writes it), repeat: one row per
/// key in a finished sweep.
pub type RowKey = (String, u64, String, u64);

pub use crate::plan::columns::{Better, Column};

fn f(v: Option<f64>) -> String {
    match v {
        Some(x) if x.is_finite() => {
            let s = format!("{x:.4}");
            let s = s.trim_end_matches('0').trim_end_matches('.');
            s.to_string()
        }
        _ => String::new(),
    }
}
fn u(v: Option<u64>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}
fn client<T>(r: &RunRecord, pick: impl Fn(&ClientSummary) -> T) -> Option<T> {
    r.client.as_ref().map(pick)
}
fn server<T>(r: &RunRecord, pick: impl Fn(&ServerSummary) -> Option<T>) -> Option<T> {
    r.server.as_ref().and_then(pick)
}
fn stat(
    r: &RunRecord,
    which: fn(&ClientSummary) -> &Stats,
    part: fn(&Stats) -> Option<f64>,
) -> String {
    f(r.client.as_ref().and_then(|c| part(which(c))))
}

/// A run's cell of a fixed column, as results.csv holds it: one arm per column of the list
/// (`plan::columns`), so a column added there without its value here does not compile. The
/// quality guard's columns are judged when the sweep concludes (`tune::quality`), from every
/// launch's runs/<launch>/quality.jsonl against the baseline's, so a record leaves them
/// empty.
pub fn cell(c: Column, r: &RunRecord) -> String {
    match c {
        Column::RunName => r.run_name.clone(),
        Column::RunId => r.run_id.clone(),
        Column::Engine => r.engine.as_str().to_string(),
        Column::Status => r.status.as_str().to_string(),
        Column::FailureKind => r
            .failure_kind
            .map(|k| k.as_str().to_string())
            .unwrap_or_default(),
        Column::FailureMessage => r.failure_message.clone().unwrap_or_default(),
        Column::Concurrency => r.concurrency.to_string(),
        Column::RequestRate => crate::plan::spec::rate_text(r.request_rate),
        Column::Repeat => r.repeat.to_string(),
        Column::Phase => r.phase.as_str().to_string(),
        Column::Probe => r.probe.map(|p| p.as_str().to_string()).unwrap_or_default(),
        Column::RequestsCompleted => u(client(r, |c| c.completed)),
        Column::RequestsFailed => u(client(r, |c| c.failed)),
        Column::DurationS => f(client(r, |c| c.duration_s)),
        Column::RequestThroughput => f(r.client.as_ref().and_then(|c| c.request_throughput)),
        Column::OutputTokS => f(r.client.as_ref().and_then(|c| c.output_tok_s)),
        Column::OutputTokSSteady => f(client(r, |c| c.output_tok_s_steady).flatten()),
        Column::WarmupTrimmedS => f(client(r, |c| c.warmup_trimmed_s).flatten()),
        Column::TotalTokS => f(r.client.as_ref().and_then(|c| c.total_tok_s)),
        Column::TtftMsMean => stat(r, |c| &c.ttft_ms, |s| s.mean),
        Column::TtftMsP50 => stat(r, |c| &c.ttft_ms, |s| s.p50),
        Column::TtftMsP90 => stat(r, |c| &c.ttft_ms, |s| s.p90),
        Column::TtftMsP95 => stat(r, |c| &c.ttft_ms, |s| s.p95),
        Column::TtftMsP99 => stat(r, |c| &c.ttft_ms, |s| s.p99),
        Column::ItlMsMean => stat(r, |c| &c.itl_ms, |s| s.mean),
        Column::ItlMsP50 => stat(r, |c| &c.itl_ms, |s| s.p50),
        Column::ItlMsP90 => stat(r, |c| &c.itl_ms, |s| s.p90),
        Column::ItlMsP95 => stat(r, |c| &c.itl_ms, |s| s.p95),
        Column::ItlMsP99 => stat(r, |c| &c.itl_ms, |s| s.p99),
        Column::TpotMsMean => stat(r, |c| &c.tpot_ms, |s| s.mean),
        Column::TpotMsP50 => stat(r, |c| &c.tpot_ms, |s| s.p50),
        Column::TpotMsP90 => stat(r, |c| &c.tpot_ms, |s| s.p90),
        Column::TpotMsP95 => stat(r, |c| &c.tpot_ms, |s| s.p95),
        Column::TpotMsP99 => stat(r, |c| &c.tpot_ms, |s| s.p99),
        Column::E2eMsMean => stat(r, |c| &c.e2e_ms, |s| s.mean),
        Column::E2eMsP50 => stat(r, |c| &c.e2e_ms, |s| s.p50),
        Column::E2eMsP90 => stat(r, |c| &c.e2e_ms, |s| s.p90),
        Column::E2eMsP95 => stat(r, |c| &c.e2e_ms, |s| s.p95),
        Column::E2eMsP99 => stat(r, |c| &c.e2e_ms, |s| s.p99),
        Column::TtftVllmMsMean => stat(r, |c| &c.ttft_first_choices_ms, |s| s.mean),
        Column::TtftVllmMsP50 => stat(r, |c| &c.ttft_first_choices_ms, |s| s.p50),
        Column::E2eVllmMsMean => stat(r, |c| &c.e2e_last_content_ms, |s| s.mean),
        Column::E2eVllmMsP50 => stat(r, |c| &c.e2e_last_content_ms, |s| s.p50),
        Column::TtftFirstTurnMsP50 => stat(r, |c| &c.ttft_first_turn_ms, |s| s.p50),
        Column::TtftLastTurnMsP50 => stat(r, |c| &c.ttft_last_turn_ms, |s| s.p50),
        Column::TurnLatency => r
            .client
            .as_ref()
            .map(|c| super::turn_latency::cell(&c.turns))
            .unwrap_or_default(),
        Column::GoodputShare => f(r.client.as_ref().and_then(|c| c.goodput_share)),
        Column::GoodputReqS => f(r.client.as_ref().and_then(|c| c.goodput_req_s)),
        Column::SchedLagMsP99 => stat(r, |c| &c.sched_lag_ms, |s| s.p99),
        Column::ReadLagMsP99 => stat(r, |c| &c.read_lag_ms, |s| s.p99),
        Column::CutOff => u(client(r, |c| c.cut_off)),
        Column::ClientCpuCores => f(r.client.as_ref().and_then(|c| c.client_cpu_cores)),
        Column::ClientBound => r
            .client
            .as_ref()
            .and_then(|c| c.client_bound.clone())
            .unwrap_or_default(),
        Column::ServerGenTputMean => f(server(r, |s| s.gen_throughput_mean)),
        Column::ServerGenTputMedian => f(server(r, |s| s.gen_throughput_median)),
        Column::RunningReqMean => f(server(r, |s| s.running_req_mean)),
        Column::RunningReqMax => u(server(r, |s| s.running_req_max)),
        Column::QueueReqMean => f(server(r, |s| s.queue_req_mean)),
        Column::QueueReqMax => u(server(r, |s| s.queue_req_max)),
        Column::TokenUsageMean => f(server(r, |s| s.token_usage_mean)),
        Column::TokenUsageMax => f(server(r, |s| s.token_usage_max)),
        Column::ServerStatsLines => r
            .server
            .as_ref()
            .map(|s| s.stats_lines.to_string())
            .unwrap_or_default(),
        Column::DecodeSteps => r
            .server
            .as_ref()
            .map(|s| super::decode_steps::cell(&s.decode_steps))
            .unwrap_or_default(),
        Column::MetricsGenTput => f(r.metrics.as_ref().and_then(|m| m.gen_tput_from_counter)),
        Column::MetricsRunningMean => f(r.metrics.as_ref().and_then(|m| m.running_mean)),
        Column::MetricsQueueMean => f(r.metrics.as_ref().and_then(|m| m.queue_mean)),
        Column::MaxTotalNumTokens => u(server(r, |s| s.max_total_num_tokens)),
        Column::MaxRunningRequests => u(server(r, |s| s.max_running_requests)),
        Column::KvCacheDtype => server(r, |s| s.kv_cache_dtype.clone()).unwrap_or_default(),
        Column::KvCacheGb => f(server(r, |s| s.kv_cache_gb)),
        Column::HicacheHostTokens => u(server(r, |s| s.hicache_host_tokens)),
        Column::CacheHitRate => f(server(r, |s| s.cached_token_share)),
        Column::PrefixReusableShare => f(r.client.as_ref().and_then(|c| c.reusable_prompt_share)),
        Column::MetricsCacheHitRate => f(r.metrics.as_ref().and_then(|m| m.cache_hit_rate)),
        Column::MetricsDeviceHitRate => f(r.metrics.as_ref().and_then(|m| m.device_hit_rate)),
        Column::MetricsHostHitRate => f(r.metrics.as_ref().and_then(|m| m.host_hit_rate)),
        Column::MetricsLoadBackTokens => u(r.metrics.as_ref().and_then(|m| m.load_back_tokens)),
        Column::MetricsBackupTokens => u(r.metrics.as_ref().and_then(|m| m.backup_tokens)),
        Column::MetricsEvictedTokens => u(r.metrics.as_ref().and_then(|m| m.evicted_tokens)),
        Column::MetricsHostUsageMax => f(r.metrics.as_ref().and_then(|m| m.host_usage_max)),
        Column::Retractions => u(r
            .server
            .as_ref()
            .filter(|s| !s.retractions_not_logged)
            .map(|s| s.retractions)),
        Column::TimeToReadyS => f(r.time_to_ready_s),
        Column::Verdict => r
            .verdict
            .as_ref()
            .map(|v| v.kind.as_str().to_string())
            .unwrap_or_default(),
        Column::VerdictEvidence => r
            .verdict
            .as_ref()
            .map(|v| v.evidence.clone())
            .unwrap_or_default(),
        Column::VerdictAlso => r
            .verdict
            .as_ref()
            .map(|v| {
                v.also
                    .iter()
                    .map(|k| k.as_str())
                    .collect::<Vec<_>>()
                    .join("+")
            })
            .unwrap_or_default(),
        Column::NotInEffect => r
            .effective
            .as_ref()
            .map(|e| {
                e.not_in_effect
                    .iter()
                    .map(|f| f.text())
                    .collect::<Vec<_>>()
                    .join("; ")
            })
            .unwrap_or_default(),
        Column::EffectiveArgsId => r
            .effective
            .as_ref()
            .and_then(|e| e.id.clone())
            .unwrap_or_default(),
        Column::Notes => r.notes.join("; "),
        Column::StartedAt => r.started_at.clone(),
        Column::FinishedAt => r.finished_at.clone(),
        Column::QualityVerdict => String::new(),
        Column::QualityDecisiveShare => String::new(),
        Column::QualityDivergedShare => String::new(),
        Column::QualityPrefixAgreement => String::new(),
        Column::QualityFloorDecisiveShare => String::new(),
        Column::QualityPValue => String::new(),
        Column::QualityAccuracy => String::new(),
        Column::QualityEvidence => String::new(),
    }
}

/// The header for a plan with these swept keys.
pub fn header(param_keys: &[String]) -> Vec<String> {
    let mut h: Vec<String> = Column::LEADING
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    h.extend(param_keys.iter().map(|k| format!("param_{k}")));
    h.extend(Column::TRAILING.iter().map(|c| c.name().to_string()));
    h
}

/// The row of one record, aligned with `header`.
pub fn row(r: &RunRecord) -> Vec<String> {
    let mut out: Vec<String> = Column::LEADING.iter().map(|c| cell(*c, r)).collect();
    out.extend(
        r.params
            .iter()
            .map(|(_, v)| v.as_ref().map(|v| v.to_string()).unwrap_or_default()),
    );
    out.extend(Column::TRAILING.iter().map(|c| cell(*c, r)));
    out
}

/// A column's meaning as `sgtune columns` states it: its doc, then for each engine that cannot
/// fill it, why its rows leave it empty (`Engine::unreported_columns`, the one list of them).
pub fn column_doc(c: Column) -> String {
    let mut doc = c.doc().to_string();
    for e in crate::plan::engine::Engine::ALL {
        if let Some((_, why)) = e.unreported_columns().iter().find(|(n, _)| *n == c) {
            doc.push_str(&format!(". Empty for {}{why}", e.label()));
        }
    }
    doc
}

/// Markdown table of every column and its meaning (the README's column reference).
pub fn columns_markdown() -> String {
    let arrow = |b: Better| match b {
        Better::Higher => "↑",
        Better::Lower => "↓",
        Better::Neither => "",
    };
    let line = |c: Column| {
        format!(
            "| `{}` | {} | {} |\n",
            c.name(),
            arrow(c.better()),
            column_doc(c)
        )
    };
    let mut s = String::from("| column | better | meaning |\n|---|---|---|\n");
    for c in Column::LEADING {
        s.push_str(&line(*c));
    }
    s.push_str(
        "| `param_<key>` |  | One per swept key (grid or explicit configs): the run's value |\n",
    );
    for c in Column::TRAILING {
        s.push_str(&line(*c));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_row_align_and_names_are_unique() {
        let keys = vec!["mem_fraction_static".to_string()];
        let h = header(&keys);
        let mut sorted = h.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), h.len(), "duplicate column names");
        let params = vec![("mem_fraction_static".into(), Some(ParamValue::Float(0.88)))];
        let point = LoadPoint {
            concurrency: 8,
            request_rate: None,
        };
        let r = RunRecord {
            status: RunStatus::Failed,
            failure_kind: Some(FailureKind::Oom),
            failure_message: Some("Not enough memory".into()),
            started_at: "t".into(),
            finished_at: "t".into(),
            ..RunRecord::new("a", "0123", Engine::Sglang, params, point, 1)
        };
        let row = row(&r);
        assert_eq!(row.len(), h.len());
        assert_eq!(row[2], "sglang");
        assert_eq!(row[3], "failed");
        assert_eq!(row[4], "oom");
        assert_eq!(row[6], "0.88");
        assert!(h.contains(&"ttft_ms_p99".to_string()));
        assert_eq!(f(Some(1.50)), "1.5");
        assert_eq!(f(Some(2.0)), "2");
        assert_eq!(f(None), "");
    }

    /// Latency stats whose every part is its own number: `mean`..`p99` as given, `max` and
    /// `count` set too (no column shows them, so a getter reading them shows a stray value).
    fn stats(mean: f64, p50: f64, p90: f64, p95: f64, p99: f64, max: f64) -> Stats {
        Stats {
            count: max as usize + 1000,
            mean: Some(mean),
            p50: Some(p50),
            p90: Some(p90),
            p95: Some(p95),
            p99: Some(p99),
            max: Some(max),
        }
    }

    /// A configuration's row: its identity, and its value of each swept key in column order
    /// (a key it does not set: None); ok, at a fixed load point, with nothing measured yet.
    #[test]
    fn a_configurations_row_starts_from_its_identity() {
        let run = RunConfig {
            name: "fp8".into(),
            id: "abc".into(),
            source: crate::plan::expand::RunSource::Config,
            params: vec![("kv_cache_dtype".into(), ParamValue::Str("fp8_e4m3".into()))],
            resolved: vec![
                ("tp_size".into(), ParamValue::Int(2)),
                ("kv_cache_dtype".into(), ParamValue::Str("fp8_e4m3".into())),
            ],
            engine: Engine::Vllm,
        };
        let keys = ["kv_cache_dtype", "hicache_size", "tp_size"].map(String::from);
        let point = LoadPoint {
            concurrency: 4,
            request_rate: Some(2.5),
        };
        let r = RunRecord::of_run(&run, &keys, point, 3);
        assert_eq!(
            (r.run_name.as_str(), r.run_id.as_str(), r.engine),
            ("fp8", "abc", Engine::Vllm)
        );
        assert_eq!(
            r.params,
            vec![
                (
                    "kv_cache_dtype".to_string(),
                    Some(ParamValue::Str("fp8_e4m3".into()))
                ),
                ("hicache_size".to_string(), None),
                ("tp_size".to_string(), Some(ParamValue::Int(2))),
            ]
        );
        assert_eq!((r.concurrency, r.request_rate, r.repeat), (4, Some(2.5), 3));
        assert_eq!(
            (r.status, r.phase, r.probe),
            (RunStatus::Ok, Phase::Measure, None)
        );
        assert!(r.client.is_none() && r.server.is_none() && r.notes.is_empty());
    }

    /// A record with every field a column reads set to its own recognisable value, and the
    /// fields no column reads set to other values (9xxx), so no two getters can agree.
    fn full_record() -> RunRecord {
        use crate::observe::diagnose::VerdictKind;
        use crate::observe::prom::MetricsSummary;
        RunRecord {
            run_name: "name-of-run".into(),
            run_id: "id-of-run".into(),
            engine: crate::plan::engine::Engine::Vllm,
            status: RunStatus::Failed,
            failure_kind: Some(FailureKind::LoadFailed),
            failure_message: Some("message of failure".into()),
            params: vec![
                ("mem_fraction_static".into(), Some(ParamValue::Float(0.875))),
                ("chunked_prefill_size".into(), Some(ParamValue::Int(4096))),
                ("schedule_policy".into(), None),
            ],
            concurrency: 11,
            request_rate: Some(12.5),
            repeat: 3,
            phase: Phase::Probe,
            probe: Some(ProbeResult::Uncertain),
            client: Some(ClientSummary {
                completed: 13,
                failed: 14,
                duration_s: 15.25,
                request_throughput: Some(16.5),
                output_tok_s: Some(17.75),
                output_tok_s_steady: Some(17.5),
                warmup_trimmed_s: Some(25.0),
                total_tok_s: Some(18.125),
                input_tokens: 9001,
                output_tokens: 9002,
                ttft_ms: stats(101.0, 102.0, 103.0, 104.0, 105.0, 109.0),
                itl_ms: stats(201.0, 202.0, 203.0, 204.0, 205.0, 209.0),
                tpot_ms: stats(301.0, 302.0, 303.0, 304.0, 305.0, 309.0),
                e2e_ms: stats(401.0, 402.0, 403.0, 404.0, 405.0, 409.0),
                ttft_first_choices_ms: stats(501.0, 502.0, 503.0, 504.0, 505.0, 509.0),
                e2e_last_content_ms: stats(601.0, 602.0, 603.0, 604.0, 605.0, 609.0),
                goodput_share: Some(0.0625),
                goodput_req_s: Some(19.5),
                client_cpu_cores: Some(1.375),
                sched_lag_ms: stats(701.0, 702.0, 703.0, 704.0, 705.0, 709.0),
                read_lag_ms: stats(801.0, 802.0, 803.0, 804.0, 805.0, 809.0),
                cut_off: 21,
                client_bound: Some("reason the client bound".into()),
                usage_missing: 9003,
                retries: 9004,
                errors: [("timeout".to_string(), 9005)].into_iter().collect(),
                first_error: Some("first error 9006".into()),
                reusable_prompt_share: Some(0.8125),
                sessions_reply_ids: Some(true),
                turns: vec![
                    crate::observe::client::TurnStats {
                        turn: 1,
                        ttft_ms: Stats {
                            count: 40,
                            p50: Some(120.54),
                            ..Default::default()
                        },
                        tpot_ms: Stats {
                            p50: Some(11.204),
                            ..Default::default()
                        },
                    },
                    crate::observe::client::TurnStats {
                        turn: 24,
                        ttft_ms: Stats {
                            count: 3,
                            p50: Some(95.0),
                            ..Default::default()
                        },
                        tpot_ms: Stats::default(),
                    },
                ],
                ttft_first_turn_ms: stats(1101.0, 1102.0, 1103.0, 1104.0, 1105.0, 1109.0),
                ttft_last_turn_ms: stats(1201.0, 1202.0, 1203.0, 1204.0, 1205.0, 1209.0),
            }),
            server: Some(ServerSummary {
                stats_lines: 41,
                prefill_lines: 9011,
                excluded_decode_lines: 9012,
                gen_throughput_mean: Some(901.5),
                gen_throughput_median: Some(902.5),
                running_req_mean: Some(31.5),
                running_req_max: Some(32),
                queue_req_mean: Some(33.5),
                queue_req_max: Some(34),
                token_usage_mean: Some(0.61),
                token_usage_max: Some(0.97),
                max_total_num_tokens: Some(123456),
                max_running_requests: Some(48),
                context_len: Some(9013),
                kv_cache_dtype: Some("fp8_e5m2".into()),
                kv_cache_gb: Some(7.5),
                hicache_host_gb: Some(9014.5),
                hicache_host_tokens: Some(9030),
                retractions: 5,
                retracted_requests: 9015,
                gen_throughput_p10: Some(9016.5),
                gen_throughput_p90: Some(9017.5),
                offered_estimate: Some(9018),
                token_usage_p90: Some(0.9019),
                cached_token_share: Some(0.3125),
                decode_steps: vec![
                    crate::observe::steps::DecodeSteps {
                        running: 4.0,
                        step_ms: 11.2,
                        lines: 12,
                        graph: Some(true),
                    },
                    crate::observe::steps::DecodeSteps {
                        running: 8.5,
                        step_ms: 12.054,
                        lines: 30,
                        graph: None,
                    },
                ],
                ..Default::default()
            }),
            verdict: Some(Verdict {
                kind: VerdictKind::QueueWithSpareKv,
                evidence: "evidence of verdict".into(),
                hint: "hint of verdict".into(),
                also: vec![VerdictKind::CudaGraphLimited, VerdictKind::KvCacheBound],
            }),
            time_to_ready_s: Some(42.25),
            metrics: Some(MetricsSummary {
                scrapes: 9021,
                gen_tput_from_counter: Some(951.25),
                gen_tput_source: Some("source 9022".into()),
                prompt_tput_from_counter: Some(9023.5),
                running_mean: Some(35.5),
                queue_mean: Some(36.5),
                token_usage_max: Some(0.9924),
                retractions: Some(9025.0),
                cache_hit_rate: Some(0.4375),
                host_hit_rate: Some(0.1875),
                device_hit_rate: Some(0.0625 + 0.1875),
                load_back_tokens: Some(9026),
                backup_tokens: Some(9027),
                evicted_tokens: Some(9028),
                host_usage_max: Some(0.9375),
                host_total_tokens: Some(9029),
            }),
            effective: Some(crate::observe::effective::EffectiveArgs {
                id: Some("id-of-effective".into()),
                not_in_effect: vec![crate::observe::effective::Finding {
                    key: "key".into(),
                    asked: "asked".into(),
                    in_effect: "effect".into(),
                    evidence: "evidence".into(),
                }],
            }),
            notes: vec!["first note".into(), "second note".into()],
            started_at: "2026-01-02T03:04:05Z".into(),
            finished_at: "2026-01-02T03:09:55Z".into(),
        }
    }

    /// Every column's cell of `full_record`, written out from the field its doc names: a getter
    /// reading another field (two swapped, a copy-paste slip) shows another field's value.
    #[test]
    fn every_column_reads_its_own_field() {
        let expected: &[(&str, &str)] = &[
            ("run_name", "name-of-run"),
            ("run_id", "id-of-run"),
            ("engine", "vllm"),
            ("status", "failed"),
            ("failure_kind", "load_failed"),
            ("failure_message", "message of failure"),
            ("param_mem_fraction_static", "0.875"),
            ("param_chunked_prefill_size", "4096"),
            ("param_schedule_policy", ""),
            ("concurrency", "11"),
            ("request_rate", "12.5"),
            ("repeat", "3"),
            ("phase", "probe"),
            ("probe", "uncertain"),
            ("requests_completed", "13"),
            ("requests_failed", "14"),
            ("duration_s", "15.25"),
            ("request_throughput", "16.5"),
            ("output_tok_s", "17.75"),
            ("output_tok_s_steady", "17.5"),
            ("warmup_trimmed_s", "25"),
            ("total_tok_s", "18.125"),
            ("ttft_ms_mean", "101"),
            ("ttft_ms_p50", "102"),
            ("ttft_ms_p90", "103"),
            ("ttft_ms_p95", "104"),
            ("ttft_ms_p99", "105"),
            ("itl_ms_mean", "201"),
            ("itl_ms_p50", "202"),
            ("itl_ms_p90", "203"),
            ("itl_ms_p95", "204"),
            ("itl_ms_p99", "205"),
            ("tpot_ms_mean", "301"),
            ("tpot_ms_p50", "302"),
            ("tpot_ms_p90", "303"),
            ("tpot_ms_p95", "304"),
            ("tpot_ms_p99", "305"),
            ("e2e_ms_mean", "401"),
            ("e2e_ms_p50", "402"),
            ("e2e_ms_p90", "403"),
            ("e2e_ms_p95", "404"),
            ("e2e_ms_p99", "405"),
            ("ttft_vllm_ms_mean", "501"),
            ("ttft_vllm_ms_p50", "502"),
            ("e2e_vllm_ms_mean", "601"),
            ("e2e_vllm_ms_p50", "602"),
            ("ttft_first_turn_ms_p50", "1102"),
            ("ttft_last_turn_ms_p50", "1202"),
            ("turn_latency", "1:120.5:11.20:40 24+:95.0::3"),
            ("goodput_share", "0.0625"),
            ("goodput_req_s", "19.5"),
            ("sched_lag_ms_p99", "705"),
            ("read_lag_ms_p99", "805"),
            ("cut_off", "21"),
            ("client_cpu_cores", "1.375"),
            ("client_bound", "reason the client bound"),
            ("server_gen_tput_mean", "901.5"),
            ("server_gen_tput_median", "902.5"),
            ("running_req_mean", "31.5"),
            ("running_req_max", "32"),
            ("queue_req_mean", "33.5"),
            ("queue_req_max", "34"),
            ("token_usage_mean", "0.61"),
            ("token_usage_max", "0.97"),
            ("server_stats_lines", "41"),
            ("decode_steps", "4:11.20:12:g 8.5:12.05:30"),
            ("metrics_gen_tput", "951.25"),
            ("metrics_running_mean", "35.5"),
            ("metrics_queue_mean", "36.5"),
            ("max_total_num_tokens", "123456"),
            ("max_running_requests", "48"),
            ("kv_cache_dtype", "fp8_e5m2"),
            ("kv_cache_gb", "7.5"),
            ("hicache_host_tokens", "9030"),
            ("cache_hit_rate", "0.3125"),
            ("prefix_reusable_share", "0.8125"),
            ("metrics_cache_hit_rate", "0.4375"),
            ("metrics_device_hit_rate", "0.25"),
            ("metrics_host_hit_rate", "0.1875"),
            ("metrics_load_back_tokens", "9026"),
            ("metrics_backup_tokens", "9027"),
            ("metrics_evicted_tokens", "9028"),
            ("metrics_host_usage_max", "0.9375"),
            ("retractions", "5"),
            ("time_to_ready_s", "42.25"),
            ("verdict", "queue_with_spare_kv"),
            ("verdict_evidence", "evidence of verdict"),
            ("verdict_also", "cuda_graph_limited+kv_cache_bound"),
            (
                "not_in_effect",
                "`key` asked asked, in effect effect (evidence)",
            ),
            ("effective_args_id", "id-of-effective"),
            ("notes", "first note; second note"),
            ("started_at", "2026-01-02T03:04:05Z"),
            ("finished_at", "2026-01-02T03:09:55Z"),
            // Filled when the sweep concludes (tune::quality), never from a record.
            ("quality_verdict", ""),
            ("quality_decisive_share", ""),
            ("quality_diverged_share", ""),
            ("quality_prefix_agreement", ""),
            ("quality_floor_decisive_share", ""),
            ("quality_p_value", ""),
            ("quality_accuracy", ""),
            ("quality_evidence", ""),
        ];

        // The values themselves are distinct (bar the one unset param), so a swap cannot go
        // unseen.
        let mut texts: Vec<&str> = expected
            .iter()
            .map(|(_, t)| *t)
            .filter(|t| !t.is_empty())
            .collect();
        texts.sort_unstable();
        let n = texts.len();
        texts.dedup();
        assert_eq!(texts.len(), n, "two expected cells share a text");

        let r = full_record();
        let keys: Vec<String> = r.params.iter().map(|(k, _)| k.clone()).collect();
        let h = header(&keys);
        let cells = row(&r);
        assert_eq!(h.len(), cells.len(), "header and row differ in length");

        // Every header column has an expectation and no expectation names a missing column.
        let mut want_names: Vec<&str> = expected.iter().map(|(n, _)| *n).collect();
        want_names.sort_unstable();
        let mut have_names: Vec<&str> = h.iter().map(String::as_str).collect();
        have_names.sort_unstable();
        assert_eq!(
            want_names, have_names,
            "the columns checked here differ from the header: add an expectation for a new column"
        );

        let got: std::collections::HashMap<&str, &str> = h
            .iter()
            .map(String::as_str)
            .zip(cells.iter().map(String::as_str))
            .collect();
        let wrong: Vec<String> = expected
            .iter()
            .filter(|(name, want)| got[name] != *want)
            .map(|(name, want)| format!("column `{name}`: expected {want:?}, got {:?}", got[name]))
            .collect();
        assert!(
            wrong.is_empty(),
            "cells read the wrong field:\n{}",
            wrong.join("\n")
        );
    }

    #[test]
    fn verdict_column_names_exactly_the_verdicts() {
        let md = columns_markdown();
        let row = md
            .lines()
            .find(|l| l.starts_with("| `verdict` |"))
            .unwrap_or_default();
        // The backticked names in the column's meaning.
        let named: Vec<&str> = row.split('`').skip(3).step_by(2).collect::<Vec<_>>();
        let want: Vec<&str> = crate::observe::diagnose::VerdictKind::ALL
            .iter()
            .map(|k| k.as_str())
            .collect();
        assert_eq!(named, want, "{row}");
    }
}
