//! Between the loads: the quality pass (before the first), the prefix-cache flush (between
//! any two), and the working set sized once the server's KV capacity is known.

use super::LaunchState;
use super::seam::{QualityAsk, Server};
use crate::observe::engine_log;
use crate::observe::sglang_log;
use crate::record::store;
use std::time::{Duration, Instant};

/// How long to wait for an idle server to accept a prefix-cache flush between load points.
const FLUSH_PATIENCE: Duration = Duration::from_secs(30);
/// How long after the flush's HTTP answer its log line may take to appear. None in the unit
/// tests: their scripted server logs the line before it answers, or never.
const FLUSH_LOG_WAIT: Duration = Duration::from_secs(if cfg!(test) { 0 } else { 3 });

/// Send the quality prompts (`quality:`), greedy with log-probabilities, and keep the outputs
/// in `quality.jsonl`: once, or twice on the baseline's launch (its repeat on the same server
/// is the noise floor). Problems are notes on the rows; the judgement comes at decision time.
pub(super) async fn quality_pass(
    st: &mut LaunchState<'_, '_>,
    server: &impl Server,
    model: &str,
    q: &crate::plan::quality::Quality,
) {
    use crate::load::quality;
    let prompts = match quality::prompts(q, st.ctx.vocab_size) {
        Ok(p) => p,
        Err(e) => {
            st.notes.push(format!("no quality pass: {e}"));
            return;
        }
    };
    let run_name = st.run().name.clone();
    let launch = st
        .dir
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| run_name.clone());
    let passes = if q.baseline.as_deref() == Some(run_name.as_str()) {
        2
    } else {
        1
    };
    if crate::record::quality::already_answered(st.dir, &run_name, passes, prompts.len()) {
        // Pruning's second round of this launch: its outputs were taken in the first.
        return;
    }
    let timeout = Duration::from_secs_f64(st.ctx.spec.workload.request_timeout_s);
    let mut all = Vec::new();
    let mut failed = Vec::new();
    for pass in 1..=passes {
        let t0 = Instant::now();
        let mut samples = server
            .quality_pass(QualityAsk {
                q,
                model,
                prompts: &prompts,
                run_name: &run_name,
                launch: &launch,
                pass,
                timeout,
            })
            .await;
        let secs = t0.elapsed().as_secs_f64();
        for s in &mut samples {
            s.pass_s = secs;
            if let Some(e) = &s.error {
                failed.push(e.clone());
            }
        }
        all.extend(samples);
    }
    if let Some(first) = failed.first() {
        let short: String = first.chars().take(160).collect();
        st.notes.push(format!(
            "quality pass: {} of {} prompts got no usable answer (first: {short})",
            failed.len(),
            prompts.len() * passes as usize
        ));
    }
    let res = crate::record::quality::write(st.dir, &all);
    st.keep(crate::record::quality::FILE, res);
}

/// `shared_prefix.working_set`: size the prefix groups against the KV capacity. The basis is
/// the first configuration's capacity (from /server_info, else the log's capacity line), kept
/// for the whole sweep so every configuration gets the same prompts.
pub(super) fn size_working_set(st: &mut LaunchState<'_, '_>, info: Option<&serde_json::Value>) {
    let Some(sp) = &st.ctx.spec.workload.shared_prefix else {
        return;
    };
    let Some(ws) = sp.working_set else {
        return;
    };
    let own = info
        .and_then(|i| i.get(crate::observe::effective::SERVER_INFO_POOL_TOKENS))
        .and_then(serde_json::Value::as_u64)
        .or_else(|| {
            let scope = sglang_log::Scope::default();
            engine_log::summarize_file(
                &st.dir.join(store::SERVER_LOG),
                scope,
                Some(st.run().engine),
            )
            .ok()
            .and_then(|s| s.summary().max_total_num_tokens)
        });
    let basis = match st.ctx.working_set_basis.lock() {
        Ok(mut b) => {
            if b.is_none() {
                *b = own;
            }
            *b
        }
        Err(_) => own,
    };
    match basis {
        Some(b) => {
            let groups = sp.groups_for(ws, b);
            st.prefix_groups = Some(groups);
            st.notes.push(format!(
                "working set {ws} x {b} tokens (the first configuration's KV capacity): {groups} prefixes of {} tokens{}",
                sp.prefix_tokens,
                own.filter(|&o| o != b)
                    .map(|o| format!("; this server's capacity is {o}, so {:.2}x its own", groups as f64 * sp.prefix_tokens as f64 / o as f64))
                    .unwrap_or_default()
            ));
        }
        None => {
            st.prefix_groups = Some(1);
            st.notes.push(
                "working set not sized: the server reported no KV capacity (max_total_num_tokens); one shared prefix used".into(),
            );
        }
    }
}

/// Clear the prefix cache between measurements, and check that it took effect: SGLang logs
/// "Cache flushed successfully!" when it did. Anything else is a note on the rows.
pub(super) async fn flush(st: &mut LaunchState<'_, '_>, server: &impl Server) {
    let log = server.log();
    let mark = log.line_count();
    let engine = st.run().engine;
    if let Some(n) = server
        .flush_cache(engine.flush_path(), FLUSH_PATIENCE)
        .await
    {
        st.notes.push(n);
        return;
    }
    // The scheduler logs it right after the HTTP answer; give the line a moment to arrive.
    let deadline = Instant::now() + FLUSH_LOG_WAIT;
    let flushed = engine.flushed_line();
    while !log.seen_since(mark, flushed) {
        if Instant::now() >= deadline {
            st.notes.push(format!(
                "the prefix-cache flush was answered, but server.log shows no \"{flushed}\" within {} s (log level above info?): this point may have started on a warm cache",
                FLUSH_LOG_WAIT.as_secs()
            ));
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
