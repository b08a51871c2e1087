//! `sgtune load`: the same load engine as `sgtune run`, against a server that is already
//! running (SGLang, vLLM, llama.cpp, anything OpenAI-compatible). Workload options are the keys
//! of the spec's `workload:` section, read by the same code: from a file (`--workload`, a whole
//! sweep file or just the section) and/or `-w key=value` pairs.

use crate::load::driver::{self, LoadEvent, LoadTarget, Phase};
use crate::load::requests_csv;
use crate::observe::client::{self, ClientSummary, Stats};
use crate::plan::spec::{Endpoint, LoadPoint, WorkloadSpec};
use crate::record::store;
use serde_yaml::{Mapping, Value};
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

fn say(msg: &str) {
    let _ = writeln!(std::io::stderr(), "{msg}");
}

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

fn stats_line(name: &str, s: &Stats) -> String {
    let f = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.2}"));
    format!(
        "  {name:<14} mean {}  p50 {}  p90 {}  p95 {}  p99 {}  max {}",
        f(s.mean),
        f(s.p50),
        f(s.p90),
        f(s.p95),
        f(s.p99),
        f(s.max)
    )
}

/// The summary as text (what `sgtune load` prints).
pub fn render(point: LoadPoint, c: &ClientSummary) -> String {
    let f = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.2}"));
    let errors = if c.errors.is_empty() {
        "none".to_string()
    } else {
        c.errors
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = vec![
        format!("load point: {point}"),
        format!(
            "  requests       {} completed, {} failed (errors: {errors}); {} retried",
            c.completed, c.failed, c.retries
        ),
        format!(
            "  window         {:.2} s (first measured send to last completion)",
            c.duration_s
        ),
        format!(
            "  throughput     {} req/s, {} output tok/s, {} total tok/s",
            f(c.request_throughput),
            f(c.output_tok_s),
            f(c.total_tok_s)
        ),
        stats_line("TTFT ms", &c.ttft_ms) + "   (SGLang: first non-empty content)",
        stats_line("TTFT(vLLM) ms", &c.ttft_first_choices_ms) + "   (first chunk with choices)",
        stats_line("TPOT ms", &c.tpot_ms),
        stats_line("ITL ms", &c.itl_ms),
        stats_line("E2E ms", &c.e2e_ms) + "   (SGLang: end of stream)",
        stats_line("E2E(vLLM) ms", &c.e2e_last_content_ms) + "   (last content chunk)",
    ];
    if let Some(g) = c.goodput_share {
        out.push(format!(
            "  goodput        {:.1}% of requests met the SLOs, {} req/s",
            g * 100.0,
            f(c.goodput_req_s)
        ));
    }
    if c.usage_missing > 0 {
        out.push(format!(
            "  warning        {} responses carried no usage: their output was counted as content chunks",
            c.usage_missing
        ));
    }
    if c.sched_lag_ms.count > 0 {
        out.push(
            stats_line("sched lag ms", &c.sched_lag_ms) + "   (open loop: actual - scheduled send)",
        );
    }
    if c.read_lag_ms.count > 0 {
        out.push(
            stats_line("read lag ms", &c.read_lag_ms)
                + "   (data waiting in the socket before the client read it)",
        );
    }
    if c.cut_off > 0 {
        out.push(format!(
            "  cut off        {} requests in flight at the deadline were abandoned (deadline: cut)",
            c.cut_off
        ));
    }
    out.push(format!("  client CPU     {} cores", f(c.client_cpu_cores)));
    if let Some(why) = &c.client_bound {
        out.push(format!(
            "  CLIENT-BOUND   {why}: these numbers may describe the client, not the server"
        ));
    }
    out.join("\n")
}

/// Run the workload against `url`; 0 ok, 1 no request succeeded, 2 bad input, 130 interrupted.
pub async fn run(url: &str, workload: WorkloadSpec, output: Option<&Path>) -> i32 {
    let base_url = url.trim_end_matches('/').to_string();
    // One client for every load point: a bad URL is refused before anything is sent.
    let client = match driver::http_client(&base_url) {
        Ok(cl) => cl,
        Err(e) => {
            say(&format!("error: --url {e}"));
            return 2;
        }
    };
    let dataset = match &workload.dataset {
        Some(d) => match crate::load::dataset::load(Path::new(d)) {
            Ok(p) => Some(std::sync::Arc::new(p)),
            Err(e) => {
                say(&format!("error: {e}"));
                return 2;
            }
        },
        None => None,
    };
    if workload.endpoint == Endpoint::Completions
        && workload.vocab_size.is_none()
        && dataset.is_none()
    {
        say(
            "error: completions prompts are token ids: set -w vocab_size=N (the model's vocabulary size), or use -w endpoint=chat",
        );
        return 2;
    }
    if let Some(dir) = output {
        if let Err(e) = std::fs::create_dir_all(dir) {
            say(&format!("error: --output {}: {e}", dir.display()));
            return 2;
        }
    }
    let model = match &workload.model {
        Some(m) => m.clone(),
        None => match driver::served_model(&base_url).await {
            Some(m) => m,
            None => {
                say(&format!(
                    "error: {base_url}/v1/models did not name a model: is the server up? (or set -w model=NAME)"
                ));
                return 2;
            }
        },
    };
    let target = LoadTarget {
        base_url,
        model,
        vocab_size: workload.vocab_size.unwrap_or(0),
        dataset,
    };
    let cancel = CancellationToken::new();
    {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        });
    }
    let mut summaries = Vec::new();
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
        let mut csv = output
            .and_then(|d| csv::Writer::from_path(d.join(format!("requests{suffix}.csv"))).ok());
        if let Some(wr) = csv.as_mut() {
            let _ = wr.write_record(requests_csv::HEADER);
        }
        let (mut cpu0, mut cpu1) = (None, None);
        let mut done = 0u64;
        let mut last = Instant::now();
        let mut acc = client::Accumulator::new(w.input_tokens, w.slo.as_ref());
        let mut on_event = |ev: LoadEvent<'_>| match ev {
            LoadEvent::MeasureStart => cpu0 = requests_csv::process_cpu_s(),
            LoadEvent::MeasureEnd => cpu1 = requests_csv::process_cpu_s(),
            LoadEvent::Sample(s) => {
                acc.add(s);
                if let Some(wr) = csv.as_mut() {
                    let _ = wr.write_record(requests_csv::row(s));
                }
                if s.phase == Phase::Measured {
                    done += 1;
                    if last.elapsed() >= Duration::from_secs(10) {
                        last = Instant::now();
                        say(&format!("  {done} requests done"));
                    }
                }
            }
        };
        let stop = CancellationToken::new();
        let abort = CancellationToken::new();
        let outcome = {
            let fut = driver::drive(&client, &w, &target, &stop, &abort, &mut on_event);
            tokio::pin!(fut);
            let mut since: Option<Instant> = None;
            loop {
                tokio::select! {
                    o = &mut fut => break o,
                    _ = tokio::time::sleep(Duration::from_millis(250)) => {
                        if cancel.is_cancelled() {
                            stop.cancel();
                            if since.get_or_insert_with(Instant::now).elapsed() >= Duration::from_secs(10) {
                                abort.cancel();
                            }
                        }
                    }
                }
            }
        };
        if let Some(mut wr) = csv {
            let _ = wr.flush();
        }
        let mut summary = acc.finish(outcome.duration_s);
        summary.client_cpu_cores = cpu0
            .zip(cpu1)
            .and_then(|(a, b)| (outcome.duration_s > 0.0).then(|| (b - a) / outcome.duration_s));
        summary.cut_off = outcome.cut_off;
        client::assess_client(&mut summary, crate::util::sys::available_cores());
        let _ = writeln!(std::io::stdout(), "{}\n", render(point, &summary));
        summaries.push(serde_json::json!({"concurrency": point.concurrency, "request_rate": point.request_rate, "interrupted": outcome.stopped, "client": summary}));
    }
    if let Some(dir) = output {
        let doc = serde_json::json!({"url": url, "model": target.model, "workload": workload, "load_points": summaries});
        if let Err(e) = store::write_json(&dir.join("summary.json"), &doc) {
            say(&format!("error: {e}"));
            return 2;
        }
    }
    if cancel.is_cancelled() {
        return 130;
    }
    let any_ok = summaries
        .iter()
        .any(|s| s["client"]["completed"].as_u64().unwrap_or(0) > 0);
    if any_ok { 0 } else { 1 }
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
