//! What `sgtune load` prints for one load point: the client's side, with both TTFT and E2E
//! conventions, goodput, the client's own lag and CPU, and a client-bound warning.

use crate::observe::client::{ClientSummary, Stats};
use crate::plan::spec::LoadPoint;

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
    if let (Some(t), Some(steady)) = (c.warmup_trimmed_s, c.output_tok_s_steady) {
        out.push(format!(
            "  steady state   {} output tok/s after MSER-5 trimmed {t:.0} s of warm-up",
            f(Some(steady))
        ));
    }
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
    match c.sessions_reply_ids {
        Some(true) => out.push(
            "  sessions       the server's replies go back as its token ids (return_token_ids)".into(),
        ),
        Some(false) => out.push(
            "  sessions       the server returned no reply token ids: the sessions went as text, each reply's text in the history".into(),
        ),
        None => {}
    }
    if let Some(r) = c.reusable_prompt_share {
        out.push(format!(
            "  reusable       {:.1}% of prompt tokens repeat what an earlier request sent (the prefix-cache hit rate the workload allows)",
            r * 100.0
        ));
    }
    if !c.turns.is_empty() {
        let by_turn: Vec<String> = c
            .turns
            .iter()
            .map(|t| format!("{}: {}", t.turn, f(t.ttft_ms.p50)))
            .collect();
        out.push(format!("  TTFT p50 ms by turn  {}", by_turn.join(", ")));
    }
    out.push(format!("  client CPU     {} cores", f(c.client_cpu_cores)));
    if let Some(why) = &c.client_bound {
        out.push(format!(
            "  CLIENT-BOUND   {why}: these numbers may describe the client, not the server"
        ));
    }
    out.join("\n")
}
