//! `sgtune load`: the same load engine as `sgtune run`, against a server that is already
//! running (SGLang, vLLM, llama.cpp, anything OpenAI-compatible). Workload options are the keys
//! of the spec's `workload:` section, read by the same code: from a file (`--workload`, a whole
//! sweep file or just the section) and/or `-w key=value` pairs.

use super::{CmdError, ExitCode, out};
use crate::load::request::http_client;
use crate::load::sample::LoadTarget;
use crate::plan::spec::{Endpoint, WorkloadSpec};
use crate::record::requests::RequestsCsv;
use crate::record::store;
use crate::report;
use crate::run::session::{self, StopReason, Watch};
use crate::run::signals;
use crate::server::control::Control;
use crate::util::say;
use serde_yaml::{Mapping, Value};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The workload from a file and `key=value` overrides, checked like a spec's `workload:`.
pub fn build_workload(file: Option<&Path>, sets: &[String]) -> Result<WorkloadSpec, String> {
    let mut map = Mapping::new();
    if let Some(f) = file {
        let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
        let v: Value = serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", f.display()))?;
        let section = match v.get("workload") {
            Some(w) => w.clone(),
            None => v,
        };
        match section {
            Value::Mapping(m) => map = m,
            Value::Null => {}
            _ => {
                return Err(format!(
                    "{}: expected a mapping of workload keys",
                    f.display()
                ));
            }
        }
    }
    for s in sets {
        let (k, v) = s
            .split_once('=')
            .ok_or_else(|| format!("-w {s}: expected key=value, e.g. -w concurrency=8"))?;
        let value: Value = serde_yaml::from_str(v)
            .map_err(|e| format!("-w {s}: the value is not valid YAML ({e})"))?;
        map.insert(Value::String(k.trim().to_string()), value);
    }
    serde_yaml::from_value(Value::Mapping(map)).map_err(|e| {
        // The spec's checks already name the section; say it once.
        let e = e.to_string();
        if e.starts_with("workload:") {
            e
        } else {
            format!("workload: {e}")
        }
    })
}

/// Says how far a load point has come, every 10 s (a terminal user wants a sign of life, a
/// log file does not want 5 lines a second).
struct Ticker {
    last: Instant,
}

impl Watch for Ticker {
    fn progress(&mut self, p: session::Progress) {
        if self.last.elapsed() >= Duration::from_secs(10) {
            self.last = Instant::now();
            say(&format!("  {} requests done", p.done + p.failed));
        }
    }
}

/// Run the workload against `url`: Ok when some request succeeded at every load point run,
/// RunsFailed when none did, Interrupted on Ctrl-C (a second one exits at once).
pub async fn run(
    url: &str,
    workload: WorkloadSpec,
    output: Option<&Path>,
) -> Result<ExitCode, CmdError> {
    let base_url = url.trim_end_matches('/').to_string();
    // One client for every load point: a bad URL is refused before anything is sent.
    let client = http_client(&base_url).map_err(|e| CmdError::input(format!("--url {e}")))?;
    let dataset = match crate::load::dataset::load_for(&workload) {
        Some(d) => Some(Arc::new(d.map_err(CmdError::input)?)),
        None => None,
    };
    // A mooncake trace's prompts are token ids built here, as synthetic ones are.
    let built_ids = dataset.is_none()
        || workload
            .sessions
            .as_ref()
            .is_some_and(|s| matches!(s.source, crate::plan::spec::SessionSource::Mooncake { .. }));
    if workload.endpoint == Endpoint::Completions && workload.vocab_size.is_none() && built_ids {
        return Err(CmdError::input(
            "completions prompts are token ids: set -w vocab_size=N (the model's vocabulary size), or use -w endpoint=chat",
        ));
    }
    if let Some(dir) = output {
        std::fs::create_dir_all(dir)
            .map_err(|e| CmdError::input(format!("--output {}: {e}", dir.display())))?;
    }
    let model = match &workload.model {
        Some(m) => m.clone(),
        None => {
            let control = Control::new(&base_url).map_err(|e| CmdError::input(e.to_string()))?;
            control.served_model().await.ok_or_else(|| {
                CmdError::input(format!(
                    "{base_url}/v1/models did not name a model: is the server up? (or set -w model=NAME)"
                ))
            })?
        }
    };
    let target = LoadTarget {
        base_url,
        model,
        vocab_size: workload.vocab_size.unwrap_or(0),
        dataset,
    };
    let cancel = CancellationToken::new();
    // No server of ours to kill on a second Ctrl-C: the handler just exits.
    signals::install(
        cancel.clone(),
        Arc::new(signals::Groups::default()),
        "sgtune: interrupted; finishing the requests in flight (up to 10 s; Ctrl-C again to quit now)",
    );
    let mut summaries = Vec::new();
    let mut any_failed_point = false;
    let points = workload.load_points.clone();
    for &point in &points {
        if cancel.is_cancelled() {
            break;
        }
        let mut w = workload.clone();
        w.concurrency = point.concurrency;
        w.request_rate = point.request_rate;
        let suffix = if points.len() > 1 {
            format!(".{}", point.label())
        } else {
            String::new()
        };
        let csv = match output {
            Some(d) => Some(RequestsCsv::create(&d.join(store::requests_csv(&suffix)))?),
            None => None,
        };
        let mut ticker = Ticker {
            last: Instant::now(),
        };
        let s = session::run(&client, &w, &target, &cancel, csv, &mut ticker).await;
        if let Some(e) = &s.requests_csv_error {
            say(&format!("warning: requests{suffix}.csv is incomplete: {e}"));
        }
        out(&format!("{}\n", report::load::render(point, &s.client)));
        any_failed_point |= s.client.completed == 0;
        summaries.push(serde_json::json!({
            "concurrency": point.concurrency,
            "request_rate": point.request_rate,
            "interrupted": s.stop == StopReason::Interrupted,
            "stopped_early": s.load.stopped,
            "requests_csv_error": s.requests_csv_error.map(|e| e.to_string()),
            "client": s.client,
        }));
    }
    if let Some(dir) = output {
        let doc = serde_json::json!({"url": url, "model": target.model, "workload": workload, "load_points": summaries});
        store::write_json(&dir.join("summary.json"), &doc)?;
    }
    Ok(if cancel.is_cancelled() {
        ExitCode::Interrupted
    } else if summaries.is_empty() || any_failed_point {
        ExitCode::RunsFailed
    } else {
        ExitCode::Ok
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_from_pairs_and_files_uses_the_spec_rules() {
        let w = build_workload(
            None,
            &[
                "concurrency=[2, 4]".into(),
                "requests=10".into(),
                "input_tokens=8".into(),
                "output_tokens=4".into(),
                "endpoint=chat".into(),
            ],
        )
        .expect("valid");
        let concurrencies: Vec<u64> = w.load_points.iter().map(|p| p.concurrency).collect();
        assert_eq!(concurrencies, vec![2, 4]);
        assert_eq!(w.endpoint, Endpoint::Chat);
        let e = build_workload(
            None,
            &[
                "requests=10".into(),
                "input_tokens=8".into(),
                "output_tokens=4".into(),
                "concurency=3".into(),
            ],
        )
        .expect_err("typo");
        assert!(e.contains("unknown field `concurency`"), "{e}");
        let e = build_workload(None, &["input_tokens=8".into(), "output_tokens=4".into()])
            .expect_err("no amount");
        assert!(e.contains("requests") && e.contains("duration_s"), "{e}");
        let dir = tempfile::tempdir().expect("tempdir");
        let f = dir.path().join("w.yaml");
        std::fs::write(
            &f,
            "name: x\nworkload:\n  requests: 3\n  input_tokens: 2\n  output_tokens: 2\n",
        )
        .expect("write");
        let w = build_workload(Some(&f), &["requests=5".into()]).expect("valid");
        assert_eq!(w.requests, Some(5), "-w overrides the file");
        assert!(build_workload(None, &["oops".into()]).is_err());
    }
}
