//! What `validate` and a dry run print before anything is launched: the plan, the objective's
//! rule, the search, the quality guard's cost, the hook, and each configuration's command.

use crate::plan::spec::SweepSpec;

/// What `validate` says about the guard: the rule and what it adds to the sweep, in generated
/// tokens (the quality pass is greedy decoding like the load, so tokens are its cost's unit).
pub fn quality_line(
    s: &SweepSpec,
    q: &crate::plan::quality::Quality,
    plan: &crate::plan::expand::RunPlan,
) -> String {
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
