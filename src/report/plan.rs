//! What `validate` and a dry run print before anything is launched: the plan, the objective's
//! rule, the search, the quality guard's cost, the hook, and each configuration's command.

use crate::plan::expand::RunPlan;
use crate::plan::spec::SweepSpec;

/// The plan's lines: the workload, the objective's rule, pruning, the search, the quality
/// guard, the hook, each configuration's command, and the plan's warnings.
pub fn lines(s: &SweepSpec, plan: &RunPlan) -> Vec<String> {
    let mut lines = Vec::new();
    let mut out = |l: &str| lines.push(l.to_string());
    let w = &s.workload;
    let amount = match (w.requests, w.duration_s) {
        (Some(n), _) => format!("{n} requests"),
        (None, Some(d)) => format!("{d} s"),
        _ => String::new(),
    };
    // A trace's records and turns carry their own lengths: the spec's are placeholders.
    let from_trace = w
        .sessions
        .as_ref()
        .and_then(|ss| ss.source.trace_path())
        .is_some();
    let lengths = match &w.sessions {
        Some(ss) if matches!(ss.source, crate::plan::spec::SessionSource::Mooncake { .. }) => {
            "input and output lengths from the trace".to_string()
        }
        _ if from_trace => format!("the trace's messages, {} output tokens", w.output_tokens),
        _ => format!(
            "{} input / {} output tokens",
            w.input_tokens, w.output_tokens
        ),
    };
    out(&format!(
        "plan {}: {} run(s); workload {} at concurrency {}, {amount} after {} warmup, {lengths}, seed {}",
        plan.sweep_name,
        plan.runs.len(),
        w.endpoint.path(),
        w.concurrency,
        w.warmup_requests,
        w.seed
    ));
    if let Some(ss) = &w.sessions {
        out(&sessions_line(w, ss));
    }
    if let Some(o) = &s.objective {
        let rule = if let Some(a) = s.auto_repeats {
            format!(
                "repeats: auto: 2 repeats, then one more at a time until the 95% interval of {} is within ±{}% of its mean (at most {} repeats); a winner only when its margins' 95% intervals, from the noise pooled over every configuration and load point, lie above zero",
                o.metric,
                a.precision * 100.0,
                a.max
            )
        } else if s.search.max_load.is_some() {
            format!(
                "a winner only when its margins' 95% intervals, from the noise pooled over the probes that were repeated, lie above zero; with no probe repeated, no noise is measured and the best is named the leader, not the winner (a margin under {}%, objective.noise, is within noise)",
                o.noise * 100.0
            )
        } else if s.repeats < 2 {
            format!(
                "one repeat, so no noise is measured: the best is named the leader, not the winner (a margin under {}%, objective.noise, is within noise); `repeats: 2` or more, or `sgtune reproduce DIR --decision`, confirms it",
                o.noise * 100.0
            )
        } else {
            format!(
                "a winner only when the 95% intervals of its margins ({} repeats) lie above zero, from the noise pooled over every configuration and load point",
                s.repeats
            )
        };
        let per = if s.search.max_load.is_some() {
            "decided at each configuration's highest load within the SLO"
        } else {
            "decided per load point"
        };
        out(&format!("objective: {o}; {per} (decision.md), {rule}"));
    }
    if let Some(p) = crate::tune::prune::first_point(s) {
        let on = if crate::tune::prune::can_measure_noise(s) {
            "those beaten there beyond the noise its repeats measure (each margin at the Bonferroni level over every pair of configurations) skip the other load points"
        } else {
            "with one repeat no noise is measured, so only those whose outputs fail the quality guard skip the other load points"
        };
        out(&format!(
            "prune: every configuration is measured at {p} first; {on} (rows `pruned`, with the evidence)"
        ));
    } else if s.objective.as_ref().is_some_and(|o| o.prune)
        && s.workload.load_points.len() > 1
        && s.search.max_load.is_none()
    {
        out(
            "prune: off in effect: with one repeat the first round would measure no noise to prune on (`repeats: 2` or more, or `repeats: auto`, would)",
        );
    }
    if let Some(ml) = &s.search.max_load {
        let unit = match ml.axis {
            crate::plan::search::Axis::Concurrency => "",
            crate::plan::search::Axis::RequestRate => " requests/s",
        };
        out(&format!(
            "search max_load: per configuration, on one server, the highest {} within the SLO: ramp from {}{unit} doubling to {}{unit}, then bisect to {}{unit}; a probe near a bound is repeated up to {} times",
            ml.axis.as_str(),
            ml.range.from,
            ml.range.to,
            ml.range.resolution,
            ml.repeats
        ));
    }
    if let Some(p) = &s.search.preflight {
        out(&format!(
            "search preflight: on {}, the highest {} in [{}, {}] (step {}) that launches and survives {} s of the worst-case burst (longest inputs, highest load, ignore_eos; at most {} retractions); at most {} launches (a bisection needs {})",
            plan.runs.first().map_or("-", |r| r.name.as_str()),
            p.knob,
            p.range.from,
            p.range.to,
            p.range.resolution,
            p.burst_s,
            p.max_retractions,
            p.max_attempts,
            crate::plan::search::bisection_launches(&p.range)
        ));
    }
    if let Some(q) = &s.quality {
        out(&quality_line(s, q, plan));
    }
    if let Some(h) = &s.on_finish {
        out(&format!(
            "on_finish: `{}` once at the end, however it ends (at most {} s; outcome.json and SGTUNE_* variables)",
            h.command, h.timeout_s
        ));
    }
    for (i, r) in plan.runs.iter().enumerate() {
        let cmd = crate::server::command::build(&s.server, r, s.server.port);
        out(&format!(
            "{:>3}. {}  [{}]  {}",
            i + 1,
            r.name,
            r.id,
            cmd.display()
        ));
    }
    for w in crate::plan::expand::warnings(plan) {
        out(&format!("warning: {w}"));
    }
    for (id, names) in crate::plan::expand::same_servers(plan) {
        out(&format!(
            "warning: {} launch the same server [{id}] (the same command and environment): each is measured, and the decision's noise counts them as one configuration measured alike; keep one to save the launches",
            names.join(", ")
        ));
    }
    lines
}

/// What `validate` says about the guard: the rule and what it adds to the sweep, in generated
/// tokens (the quality pass is greedy decoding like the load, so tokens are its cost's unit).
/// The sessions' shape: how many, their turns, the tokens per turn and the reusable share
/// the workload allows (the prefix-cache hit rate a cache that kept everything would reach).
fn sessions_line(
    w: &crate::plan::spec::WorkloadSpec,
    ss: &crate::plan::spec::SessionsSpec,
) -> String {
    use crate::plan::spec::SessionSource;
    let think = if ss.think_time_s > 0.0 {
        format!(", {} s think time between turns", ss.think_time_s)
    } else {
        String::new()
    };
    let (turns, user_tokens, system_tokens, sessions) = match &ss.source {
        SessionSource::Synthetic {
            turns,
            user_tokens,
            system_tokens,
            sessions,
            ..
        } => (turns, user_tokens, system_tokens, sessions),
        SessionSource::Dataset => {
            return format!(
                "sessions: the dataset's conversations, every user turn in order with the server's own replies in the history{think}; the reusable share is counted per run (prefix_reusable_share)"
            );
        }
        SessionSource::Agentic { path } => {
            return format!(
                "sessions: the agentic trace {path} (bench_serving's agentic-trace shape), each turn's new messages in order with the server's own replies in the history{think}; the reusable share is counted per run (prefix_reusable_share)"
            );
        }
        SessionSource::Mooncake {
            path,
            block_tokens,
            slowdown,
        } => {
            return format!(
                "sessions: the mooncake trace {path} replayed at its timestamps x {slowdown} (open loop, at most {} in flight), token-id prompts in blocks of {block_tokens} tokens, equal hash ids equal blocks",
                w.concurrency
            );
        }
    };
    let count = match (sessions, w.requests) {
        (Some(n), _) => format!("{n} distinct sessions (then they cycle)"),
        (None, Some(r)) => format!("{} sessions", r.div_ceil((*turns).max(1))),
        (None, None) => "new sessions until the duration ends".to_string(),
    };
    let nominal = ss
        .nominal_turns(w.output_tokens, w.output_tokens, false)
        .unwrap_or_default();
    let prompts: Vec<String> = nominal.iter().map(|t| t.prompt.to_string()).collect();
    let share = crate::plan::spec::reusable_share(&nominal)
        .map(|x| format!("{:.0}%", x * 100.0))
        .unwrap_or_default();
    let system = if *system_tokens > 0 {
        format!(", a {system_tokens}-token system prompt every session shares")
    } else {
        String::new()
    };
    let reply = match w.endpoint {
        crate::plan::spec::Endpoint::Chat => "the server's reply goes back into the history",
        crate::plan::spec::Endpoint::Completions => {
            "the server's reply goes back into the history as its token ids (return_token_ids; as text where the server returns none)"
        }
    };
    format!(
        "sessions: {count} of {turns} turns, {user_tokens} user + {} reply tokens per turn{system}{think}; prompt tokens by turn {}; {reply}; reusable share {share} (the prefix-cache hit rate the workload allows)",
        w.output_tokens,
        prompts.join(", ")
    )
}

/// A dataset's conversations as `sessions: {from_dataset: true}` replays them: how many, their
/// turns and the user messages' length in words (the tokens depend on the tokenizer and the
/// replies on the server, so the share is counted per run). None: not conversations.
pub fn dataset_sessions_line(d: &[crate::load::dataset::DatasetPrompt]) -> Option<String> {
    use crate::load::dataset::DatasetPrompt;
    if let Some(line) = agentic_line(d).or_else(|| mooncake_line(d)) {
        return Some(line);
    }
    let turns: Vec<&Vec<String>> = d
        .iter()
        .filter_map(|p| match p {
            DatasetPrompt::Conversation { turns, .. } => Some(turns),
            _ => None,
        })
        .collect();
    let (min, max) = (
        turns.iter().map(|t| t.len()).min()?,
        turns.iter().map(|t| t.len()).max()?,
    );
    let all: usize = turns.iter().map(|t| t.len()).sum();
    let words: usize = turns
        .iter()
        .flat_map(|t| t.iter())
        .map(|m| m.split_whitespace().count())
        .sum();
    let with_system = d
        .iter()
        .filter(|p| {
            matches!(
                p,
                DatasetPrompt::Conversation {
                    system: Some(_),
                    ..
                }
            )
        })
        .count();
    Some(format!(
        "sessions in the dataset: {} conversations ({with_system} with a system prompt), {min} to {max} turns (mean {:.1}), {:.0} words per user message on average",
        turns.len(),
        all as f64 / turns.len() as f64,
        words as f64 / all.max(1) as f64
    ))
}

/// An agentic trace's shape: conversations, turns, the messages by role and their words
/// (tokens need the model's tokenizer, and the replies are the server's: the share is counted
/// per run).
fn agentic_line(d: &[crate::load::dataset::DatasetPrompt]) -> Option<String> {
    use crate::load::dataset::DatasetPrompt;
    use std::collections::BTreeMap;
    let convs: Vec<&Vec<Vec<serde_json::Value>>> = d
        .iter()
        .filter_map(|p| match p {
            DatasetPrompt::Agentic(c) => Some(c),
            _ => None,
        })
        .collect();
    let min = convs.iter().map(|c| c.len()).min()?;
    let max = convs.iter().map(|c| c.len()).max()?;
    let turns: usize = convs.iter().map(|c| c.len()).sum();
    let mut roles = BTreeMap::<String, usize>::new();
    let mut words = 0usize;
    for m in convs.iter().flat_map(|c| c.iter()).flatten() {
        let role = m["role"].as_str().unwrap_or("?").to_string();
        *roles.entry(role).or_default() += 1;
        words += match &m["content"] {
            serde_json::Value::String(t) => t.split_whitespace().count(),
            serde_json::Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .map(|t| t.split_whitespace().count())
                .sum(),
            _ => 0,
        };
    }
    let roles: Vec<String> = roles.iter().map(|(r, n)| format!("{n} {r}")).collect();
    Some(format!(
        "sessions in the trace: {} conversations, {min} to {max} turns (mean {:.1}); new messages {}; {:.0} words of new messages per turn on average; the replies are the server's, so the reusable share is counted per run",
        convs.len(),
        turns as f64 / convs.len() as f64,
        roles.join(", "),
        words as f64 / turns.max(1) as f64
    ))
}

/// A mooncake trace's shape: records, tokens, the time it spans, and the reusable share,
/// known exactly before launch (sgtune builds the blocks from the hash ids).
fn mooncake_line(d: &[crate::load::dataset::DatasetPrompt]) -> Option<String> {
    use crate::load::dataset::DatasetPrompt;
    let records: Vec<crate::load::trace::MooncakeRecord> = d
        .iter()
        .filter_map(|p| match p {
            DatasetPrompt::Record(r) => Some(r.clone()),
            _ => None,
        })
        .collect();
    if records.is_empty() {
        return None;
    }
    let s = crate::load::trace::mooncake_shape(&records);
    let n = s.records as f64;
    Some(format!(
        "records in the trace: {} over {:.1} s (unscaled), {:.0} input + {:.0} output tokens per record on average; reusable share {:.1}% of the prompt tokens ({} of {}: the blocks a record shares with an earlier record's prefix, the prefix-cache hit rate the whole trace allows)",
        s.records,
        s.span_s,
        s.input_tokens as f64 / n,
        s.output_tokens as f64 / n,
        100.0 * s.reusable_tokens as f64 / (s.input_tokens.max(1)) as f64,
        s.reusable_tokens,
        s.input_tokens
    ))
}

pub fn quality_line(s: &SweepSpec, q: &crate::plan::quality::Quality, plan: &RunPlan) -> String {
    let per = q.tokens_per_pass();
    let launches = if s.reuse_server {
        plan.runs.len() as u64
    } else {
        plan.runs.len() as u64 * s.repeats.max(1)
    };
    // Every launch makes one pass, the baseline's two (one per launch of it).
    let baseline_launches = if s.reuse_server { 1 } else { s.repeats.max(1) };
    let total = per * (launches + baseline_launches);
    let w = &s.workload;
    // Every configuration measures each load point `repeats` times, whatever the launches.
    let load = w.requests.map(|n| {
        n * w.output_tokens
            * w.load_points.len().max(1) as u64
            * plan.runs.len() as u64
            * s.repeats.max(1)
    });
    let share = match load {
        Some(l) if l > 0 => {
            let share = total as f64 / l as f64 * 100.0;
            format!(
                "; the workload generates {l} tokens over those launches, so the check adds {share:.1}% in generated tokens (its prompts are {} tokens each, the workload's {}){}",
                q.input_tokens,
                w.input_tokens,
                if share > 5.0 {
                    " — over 5%: lower quality.count or quality.output_tokens, or measure more per launch"
                } else {
                    ""
                }
            )
        }
        _ => String::new(),
    };
    format!(
        "quality: against `{}`, {} greedy prompts × {} tokens ({} tokens, {} in flight) per launch, twice on the baseline's: about {total} generated tokens over {} launch(es){share}; a configuration whose outputs derail decisively beyond the baseline's own floor ({}% confidence) is not eligible",
        q.baseline.as_deref().unwrap_or("-"),
        q.count,
        q.output_tokens,
        per,
        q.batch,
        launches,
        q.confidence * 100.0
    )
}

#[cfg(test)]
mod tests {
    use crate::load::dataset::DatasetPrompt;

    #[test]
    fn a_datasets_conversations_are_counted() {
        let c = |system: bool, turns: &[&str]| DatasetPrompt::Conversation {
            system: system.then(|| "s".to_string()),
            turns: turns.iter().map(|t| t.to_string()).collect(),
        };
        let line = super::dataset_sessions_line(&[c(true, &["a b", "c"]), c(false, &["d e f"])]);
        assert_eq!(
            line.as_deref(),
            Some(
                "sessions in the dataset: 2 conversations (1 with a system prompt), 1 to 2 turns (mean 1.5), 2 words per user message on average"
            )
        );
        assert_eq!(
            super::dataset_sessions_line(&[DatasetPrompt::Text("x".into())]),
            None
        );
    }
}
