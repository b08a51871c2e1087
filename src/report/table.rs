//! The comparison table: one line per run, key columns side by side, failures with their
//! kind, the best run by client output tok/s marked. Markdown, padded so it also reads well in
//! a terminal; saved as results.md.

use crate::record::{RunRecord, RunStatus};

fn num(v: Option<f64>, digits: usize) -> String {
    v.filter(|x| x.is_finite())
        .map(|x| format!("{x:.digits$}"))
        .unwrap_or_else(|| "-".to_string())
}

/// Index of the best successful run by client output tok/s.
pub fn best_run(records: &[RunRecord]) -> Option<usize> {
    records
        .iter()
        .enumerate()
        .filter(|(_, r)| r.status == RunStatus::Ok)
        .filter_map(|(i, r)| {
            r.client
                .as_ref()
                .and_then(|c| c.output_tok_s)
                .map(|t| (i, t))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i)
}

fn render_rows(header: &[String], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(c.chars().count());
            }
        }
    }
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}", w = *w))
            .collect();
        format!("| {} |\n", padded.join(" | "))
    };
    let mut out = line(header);
    let sep: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    out.push_str(&format!("|-{}-|\n", sep.join("-|-")));
    for r in rows {
        out.push_str(&line(r));
    }
    out
}

/// The table plus a list of failures with their messages.
pub fn render(records: &[RunRecord], param_keys: &[String]) -> String {
    let mut header: Vec<String> = vec!["run".into(), "status".into()];
    header.extend(param_keys.iter().cloned());
    header.extend(
        [
            "out tok/s",
            "TTFT p50 ms",
            "TPOT p50 ms",
            "E2E p50 ms",
            "srv gen tok/s",
            "running mean/max",
            "queue mean/max",
            "usage max",
            "verdict",
        ]
        .map(String::from),
    );
    let best = best_run(records);
    let mut rows = Vec::new();
    for (i, r) in records.iter().enumerate() {
        let name = if Some(i) == best {
            format!("★ {} (best)", r.run_name)
        } else {
            r.run_name.clone()
        };
        let status = match (r.status, r.failure_kind) {
            (RunStatus::Ok, _) => "ok".to_string(),
            (s, Some(k)) => format!("{} ({})", s.as_str(), k.as_str()),
            (s, None) => s.as_str().to_string(),
        };
        let mut row = vec![name, status];
        row.extend(r.params.iter().map(|(_, v)| {
            v.as_ref()
                .map(|v| v.to_string())
                .unwrap_or_else(|| "-".into())
        }));
        let c = r.client.as_ref();
        let s = r.server.as_ref();
        let stats = s.filter(|s| s.has_stats());
        row.push(num(c.and_then(|c| c.output_tok_s), 1));
        row.push(num(c.and_then(|c| c.ttft_ms.p50), 1));
        row.push(num(c.and_then(|c| c.tpot_ms.p50), 2));
        row.push(num(c.and_then(|c| c.e2e_ms.p50), 1));
        match stats {
            Some(s) => {
                row.push(num(s.gen_throughput_mean, 1));
                row.push(format!(
                    "{}/{}",
                    num(s.running_req_mean, 1),
                    s.running_req_max.map_or("-".into(), |m| m.to_string())
                ));
                row.push(format!(
                    "{}/{}",
                    num(s.queue_req_mean, 1),
                    s.queue_req_max.map_or("-".into(), |m| m.to_string())
                ));
                row.push(num(s.token_usage_max, 2));
            }
            None if r.status == RunStatus::Ok => {
                row.extend(["no stats", "-", "-", "-"].map(String::from));
            }
            None => row.extend(["-", "-", "-", "-"].map(String::from)),
        }
        row.push(
            r.verdict
                .as_ref()
                .map_or("-".into(), |v| v.kind.as_str().to_string()),
        );
        rows.push(row);
    }
    let mut out = render_rows(&header, &rows);
    let failures: Vec<&RunRecord> = records
        .iter()
        .filter(|r| r.status != RunStatus::Ok)
        .collect();
    if !failures.is_empty() {
        out.push_str("\nFailures:\n");
        for r in failures {
            out.push_str(&format!(
                "- {} [{}]: {}\n",
                r.run_name,
                r.failure_kind.map_or("-", |k| k.as_str()),
                r.failure_message.as_deref().unwrap_or("")
            ));
        }
    }
    let verdicts: Vec<&RunRecord> = records
        .iter()
        .filter(|r| r.verdict.as_ref().is_some_and(|v| !v.hint.is_empty()))
        .collect();
    if !verdicts.is_empty() {
        out.push_str("\nVerdicts:\n");
        for r in verdicts {
            if let Some(v) = &r.verdict {
                out.push_str(&format!(
                    "- {}: {} — {}. Hint: {}\n",
                    r.run_name,
                    v.kind.as_str(),
                    v.evidence,
                    v.hint
                ));
            }
        }
    }
    out
}
