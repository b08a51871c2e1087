//! The decision in words: the rule's typed findings ([`super::rule`]) turned into the
//! sentences of decision.json and decision.md (each configuration's `why`, each point's
//! label and sentence, the summary, the rule itself). It decides nothing: every standing,
//! rank, margin and outcome it writes about comes from the rule.

use super::rule::{self, Alone, Judged, Named};
use super::{ConfigResult, Cost, Outcome, PointDecision, PreflightSummary, SloCheck, Standing};
use crate::plan::spec::{Bound, Goal, Objective};
use crate::record::ProbeResult;
use crate::record::QualityStatus;
use crate::record::rows::Row;
use crate::server::failure::FailureKind;
use crate::tune::effective::{self, EffectiveFacts};
use crate::tune::stats::{Margin, PooledNoise};

/// A number for people: about four significant digits.
pub fn num(x: f64) -> String {
    let a = x.abs();
    let digits = if a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        3
    };
    format!("{x:.digits$}")
}

pub(super) fn pct(r: f64) -> String {
    format!("{:.1}%", r * 100.0)
}

pub fn hours(h: f64) -> String {
    if h >= 10.0 {
        format!("{h:.1}")
    } else {
        format!("{h:.2}")
    }
}

/// The rule, in words, for this objective.
pub fn rule(o: &Objective) -> String {
    let best = match o.goal {
        Goal::Maximize => "highest",
        Goal::Minimize => "lowest",
    };
    let slo = if o.slo.is_empty() {
        " (no SLO is given)".to_string()
    } else {
        let bounds: Vec<String> = o.slo.iter().map(|b| format!("`{b}`")).collect();
        format!(
            " and the median of its repeats meets every SLO bound ({})",
            bounds.join(", ")
        )
    };
    format!(
        "At each load point, a configuration is eligible when none of its repeats failed{slo}. \
         With a max-load search, each configuration is judged at the highest load whose probe passed (its repeats' median meets every bound and no repeat falls on the other side); one with no passing probe is not eligible. \
         Among the eligible configurations, the one with the {best} mean `{m}` leads. \
         The noise is measured from the sweep itself: the coefficient of variation (standard deviation over mean) of `{m}` is pooled over every configuration at every load point with two or more finished repeats (pre-flight attempts and configurations whose outputs failed the quality guard excepted: their speed varies with what they wrote; configurations with the same server command count as one), each weighted by its repeats less one; its degrees of freedom are Satterthwaite's effective ones, rounded down: the sum of those weights when every group is as noisy, as few as one group's when one group's noise dominates the pool. \
         The leader's margin over every other eligible configuration gets a 95% interval: the difference of the means ± t(the pool's effective degrees of freedom) × a standard error, the larger of the pooled one (CV × √(m₁²/n₁ + m₂²/n₂)) and, when both have two or more repeats, their own (√(s₁²/n₁ + s₂²/n₂)). \
         The leader is claimed as the winner only when every one of these intervals lies entirely above zero (the intervals separate); \
         otherwise the result is a tie within noise between the leader and the configurations it is not separated from. \
         When the sweep measured no noise (every configuration ran once, none measured alike) there is no interval and no winner is claimed: the leader is named the leader, a configuration within {noise} of the other's mean (the objective's noise threshold) is within noise of it, and repeats (`repeats: 2` or more, or `repeats: auto`) or `sgtune reproduce DIR --decision` confirm the leader or not.",
        m = o.metric,
        noise = pct(o.noise),
    )
}

/// "2958 ± 80 (290.0%; 95% CI, pooled noise, 6 df)", "… (…; 95% CI, own spread, 6 df)", or
/// "120 (6.0%; no noise measured: no interval)".
pub fn margin_text(m: &Margin) -> String {
    let rel = m
        .relative
        .map(|r| format!("{}; ", pct(r)))
        .unwrap_or_default();
    let se = if m.basis == "own" {
        "own spread"
    } else {
        "pooled noise"
    };
    match (m.ci, m.df) {
        (Some(_), Some(df)) => format!(
            "{} ± {} ({rel}{} CI, {se}, {df} df)",
            num(m.delta),
            num(m.half_width()),
            level_text(m.level)
        ),
        _ => format!("{} ({rel}no noise measured: no interval)", num(m.delta)),
    }
}

/// "95%", "99.17%": a confidence level in words, to two decimals where it needs them.
pub fn level_text(level: f64) -> String {
    let p = level * 100.0;
    if (p - p.round()).abs() < 1e-9 {
        format!("{p:.0}%")
    } else {
        format!("{p:.2}%")
    }
}

/// "output_tok_s varies by 4.8% run to run (pooled over 3 configuration × load point groups,
/// 6 degrees of freedom)", or that none was measured.
pub fn noise_text(metric: &str, noise: Option<PooledNoise>, threshold: f64) -> String {
    match noise {
        Some(p) => format!(
            "{metric} varies by {} run to run (coefficient of variation pooled over {} configuration × load point group(s) with repeats, {} degrees of freedom{})",
            pct(p.cv),
            p.groups,
            p.df,
            if p.effective_df < p.df {
                format!(
                    "; {} effective, since the groups' spreads differ: the margins' intervals use {}",
                    p.effective_df, p.effective_df
                )
            } else {
                String::new()
            }
        ),
        None => format!(
            "not measured: no configuration × load point of the sweep has two or more repeats, so no margin has an interval ({} of the other's mean, the objective's noise threshold, only sorts within noise from behind)",
            pct(threshold)
        ),
    }
}

/// The pre-flight's summary: its failure above the value found as "kind: message".
pub(super) fn preflight(knob: &str, p: &rule::Preflight<'_>) -> PreflightSummary {
    PreflightSummary {
        knob: knob.to_string(),
        found: p.found,
        next_up: p.next_up.map(|(v, _)| v),
        next_up_failure: p.next_up.map(|(_, r)| {
            let kind = r.failure_kind().map_or("", FailureKind::as_str);
            format!("{kind}: {}", r.failure_message())
        }),
        attempts: p.attempts,
    }
}

/// The summary: every point's sentence, the cost, and what ran the same server.
pub(super) fn summary(
    o: &Objective,
    points: &[PointDecision],
    cost: &Cost,
    same_server: &[String],
) -> String {
    let mut summary = format!("Decision ({o}): ");
    let sentences: Vec<String> = points.iter().map(|p| p.sentence.clone()).collect();
    if sentences.is_empty() {
        summary.push_str("no rows to decide on.");
    } else {
        summary.push_str(&sentences.join(" "));
    }
    summary.push_str(&format!(
        " Cost: {} server launch(es), {} server-hours.",
        cost.launches,
        hours(cost.server_hours)
    ));
    if !same_server.is_empty() {
        summary.push_str(&format!(
            " Same server in effect: {}",
            same_server.join(" ")
        ));
    }
    summary
}

/// The load point of a row, in words.
fn label(r: &Row) -> String {
    r.point()
        .map_or_else(|| "concurrency ".to_string(), |p| p.to_string())
}

const MAX_LOAD_LABEL: &str = "each configuration's highest load within the SLO (max-load search)";

/// A point's decision, whole: its label, each configuration with its `why` (the rule's
/// reason, then what the effective arguments `facts` say of it), its sentence (with a note
/// where it claims a margin between two configurations that ran the same server); with the
/// point's same-server notes for the summary. `rows`: the sweep's, for what the same-server
/// configurations differ in.
pub(super) fn point(
    o: &Objective,
    p: &rule::Point<'_, '_>,
    rows: &[Row],
    facts: &EffectiveFacts,
) -> (PointDecision, Vec<String>) {
    let at = p.first.map(label).unwrap_or_default();
    let (label, at) = match p.named {
        Named::Load => (at.clone(), at),
        Named::Given(l) => (l.to_string(), at),
        Named::MaxLoad => (MAX_LOAD_LABEL.to_string(), MAX_LOAD_LABEL.to_string()),
    };
    let here: Vec<String> = p.configs.iter().map(|c| c.run_name.to_string()).collect();
    let configurations: Vec<ConfigResult> = p
        .configs
        .iter()
        .map(|c| {
            let (verdict, evidence) = verdict(c.verdict);
            let mut parts = vec![why(o, p, c)];
            parts.extend(effective::why_clauses(facts, c.run_name, &here));
            parts.retain(|s| !s.is_empty());
            c.result(verdict, evidence, parts.join("; "))
        })
        .collect();
    let mut sentence = sentence(o, &at, p);
    let leader = p.leader.map(str::to_string);
    let rivals: Vec<String> = p
        .runner_up
        .iter()
        .chain(&p.tied_with)
        .map(|n| n.to_string())
        .collect();
    let rivals: Vec<&String> = rivals.iter().collect();
    let mut notes = Vec::new();
    for (claim, note) in effective::same_server_notes(facts, rows, &here, leader.as_ref(), &rivals)
    {
        if claim {
            sentence = format!("{sentence} But {note}");
        }
        notes.push(note);
    }
    let decision = PointDecision {
        load_point: p.load_point.to_string(),
        label,
        outcome: p.outcome,
        winner: (p.outcome == Outcome::Winner)
            .then(|| leader.clone())
            .flatten(),
        leader,
        runner_up: p.runner_up.map(str::to_string),
        margin: p.config(p.runner_up).and_then(|c| c.margin.clone()),
        tied_with: p.tied_with.iter().map(|n| n.to_string()).collect(),
        noise: p.noise,
        command: p.command.map(str::to_string),
        configurations,
        sentence,
    };
    (decision, notes)
}

/// The verdict and its evidence; "(k of n repeats)" when the repeats disagree.
fn verdict(v: Option<rule::Verdict<'_>>) -> (String, String) {
    match v {
        None => (String::new(), String::new()),
        Some(v) if v.count < v.repeats => (
            format!("{} ({} of {} repeats)", v.verdict, v.count, v.repeats),
            v.evidence.to_string(),
        ),
        Some(v) => (v.verdict.to_string(), v.evidence.to_string()),
    }
}

/// Why a configuration won, or why it lost.
fn why(o: &Objective, p: &rule::Point<'_, '_>, c: &Judged<'_>) -> String {
    if c.rank.is_some() {
        return why_eligible(o, p, c);
    }
    let alone = why_alone(o, c);
    match c.no_load {
        None => alone,
        Some(_) if matches!(c.standing, Standing::Failed | Standing::QualityFailed) => {
            format!("no load within the SLO: {alone}")
        }
        Some(n) => format!(
            "no load within the SLO: the lowest probe ({}) was {}{}",
            n.lowest.map(label).unwrap_or_default(),
            n.probe.map_or("not judged", ProbeResult::as_str),
            if alone.is_empty() {
                String::new()
            } else {
                format!(" ({alone})")
            }
        ),
    }
}

/// An eligible configuration's why: where it stands against the leader.
fn why_eligible(o: &Objective, p: &rule::Point<'_, '_>, c: &Judged<'_>) -> String {
    let who = if p.outcome == Outcome::Winner {
        "the winner"
    } else {
        "the leader"
    };
    match (c.standing, &c.margin) {
        (Standing::Winner, _) if p.eligible == 1 => "the only eligible configuration".to_string(),
        (Standing::Winner, _) => {
            "best mean, separated from every other eligible configuration".to_string()
        }
        (Standing::Leader, _) if p.tied_with.is_empty() => format!(
            "best mean, ahead of every other eligible configuration by more than {}, but the sweep measured no noise: not claimed as the winner",
            pct(o.noise)
        ),
        (Standing::Leader, _) => format!(
            "best mean, but within noise of {}: no winner claimed",
            p.tied_with.join(", ")
        ),
        (Standing::WithinNoise, Some(m)) => format!(
            "within noise of the leader: behind by {}, which does not separate from zero",
            margin_text(m)
        ),
        (_, Some(m)) => format!("behind {who} by {}", margin_text(m)),
        _ => String::new(),
    }
}

/// Why a configuration judged on its own rows has no standing ("" when it is eligible).
fn why_alone(o: &Objective, c: &Judged<'_>) -> String {
    match c.alone {
        Alone::Eligible => String::new(),
        Alone::Failed { message } => {
            let message = message
                .map(|m| {
                    let short: String = m.chars().take(160).collect();
                    format!(": {short}{}", if short.len() < m.len() { "…" } else { "" })
                })
                .unwrap_or_default();
            format!(
                "failed in {} of {} repeats ({}){message}",
                c.failed,
                c.repeats,
                c.failure_kinds.join(", ")
            )
        }
        Alone::Quality { row } => format!(
            "output quality {}: {}",
            row.quality().map_or("", QualityStatus::as_str),
            row.quality_evidence()
        ),
        Alone::Pruned { message } => message.to_string(),
        Alone::NoFinishedRepeat => "no finished repeat".to_string(),
        Alone::NoMetricValue => format!("no value of {} in its repeats", o.metric),
        Alone::SloNotMet => slo_why(&c.slo),
    }
}

/// "SLO violated: ttft_ms_p99 median 2450 > 2000".
fn slo_why(checks: &[SloCheck]) -> String {
    let broken: Vec<String> = checks
        .iter()
        .filter(|c| !c.holds)
        .map(|c| match c.median {
            Some(m) => {
                let op = match c.bound {
                    Bound::AtMost => ">",
                    Bound::AtLeast => "<",
                };
                format!("{} median {} {op} {}", c.column, num(m), c.limit)
            }
            None => format!(
                "{} has no value, so the bound cannot be shown to hold",
                c.column
            ),
        })
        .collect();
    format!("SLO violated: {}", broken.join("; "))
}

/// The point's sentence for the summary, at `at` (its load in words).
fn sentence(o: &Objective, at: &str, p: &rule::Point<'_, '_>) -> String {
    let count = |s: Standing| p.configs.iter().filter(|c| c.standing == s).count();
    let (slo, failed) = (count(Standing::SloNotMet), count(Standing::Failed));
    let mut rest: Vec<String> = Vec::new();
    if slo > 0 {
        rest.push(format!("{slo} violated the SLO"));
    }
    if failed > 0 {
        rest.push(format!("{failed} failed"));
    }
    let quality = count(Standing::QualityFailed);
    if quality > 0 {
        rest.push(format!("{quality} failed the output-quality check"));
    }
    let no_value = count(Standing::NoValue);
    if no_value > 0 {
        rest.push(format!("{no_value} had no value"));
    }
    let rest = if rest.is_empty() {
        String::new()
    } else {
        format!("; of the other configurations, {}", rest.join(", "))
    };
    let mean_of = |c: &Judged| c.estimate.as_ref().map_or("-".to_string(), |e| num(e.mean));
    let leader = p.config(p.leader);
    let runner_up = p.config(p.runner_up);
    match (p.outcome, leader) {
        (Outcome::Winner, Some(l)) => match runner_up {
            Some(r) => format!(
                "At {at}, {} wins: mean {} {} against the runner-up {}'s {}, better by {}{rest}.",
                l.run_name,
                o.metric,
                mean_of(l),
                r.run_name,
                mean_of(r),
                r.margin.as_ref().map_or("-".to_string(), margin_text),
            ),
            None => format!(
                "At {at}, {} wins as the only eligible configuration (mean {} {}){rest}.",
                l.run_name,
                o.metric,
                mean_of(l)
            ),
        },
        (Outcome::Unconfirmed, Some(l)) => format!(
            "At {at}, {} leads: mean {} {} against the runner-up {}'s {}, better by {}{rest}; it is not claimed as the winner, as the sweep measured no noise (every configuration ran once). To confirm it, repeat (`repeats: 2` or more, or `repeats: auto`) or re-check with `sgtune reproduce DIR --decision`.",
            l.run_name,
            o.metric,
            mean_of(l),
            runner_up.map_or("-", |r| r.run_name),
            runner_up.map_or("-".to_string(), mean_of),
            runner_up
                .and_then(|r| r.margin.as_ref())
                .map_or("-".to_string(), margin_text),
        ),
        (Outcome::TieWithinNoise, Some(l)) => format!(
            "At {at}, tie within noise: {} leads (mean {} {}) but is not separated from {}{}; more repeats would narrow the intervals{rest}.",
            l.run_name,
            o.metric,
            mean_of(l),
            p.tied_with.join(", "),
            runner_up
                .and_then(|r| r.margin.as_ref())
                .map(|m| format!(", its margin over the runner-up being {}", margin_text(m)))
                .unwrap_or_default()
        ),
        _ => format!(
            "At {at}, no configuration is eligible{}.",
            if rest.is_empty() {
                String::new()
            } else {
                rest.replacen("; of the other configurations,", ":", 1)
            }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::decision::tests::{objective, row};
    use crate::tune::stats::Interval;

    #[test]
    fn numbers_for_people() {
        assert_eq!(num(100.0), "100");
        assert_eq!(num(-250.4), "-250");
        assert_eq!(num(99.94), "99.9");
        assert_eq!(num(10.0), "10.0");
        assert_eq!(num(9.994), "9.99");
        assert_eq!(num(1.0), "1.00");
        assert_eq!(num(0.5), "0.500");
        assert_eq!(hours(10.0), "10.0");
        assert_eq!(hours(12.345), "12.3");
        assert_eq!(hours(9.994), "9.99");
        assert_eq!(pct(0.1234), "12.3%");
    }

    #[test]
    fn verdicts_of_most_repeats() {
        let v = |vs: &[&str]| {
            let rows: Vec<Row> = vs
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    row(
                        "a",
                        i as u64 + 1,
                        &[("verdict", v), ("verdict_evidence", &format!("e{i}"))],
                    )
                })
                .collect();
            let refs: Vec<&Row> = rows.iter().collect();
            verdict(rule::verdict_of(&refs))
        };
        let (kv, client, compute) = ("kv_cache_bound", "client_bound", "compute_bound");
        assert_eq!(v(&[kv, kv]), (kv.into(), "e0".into()));
        assert_eq!(
            v(&[client, compute, "", compute]),
            ("compute_bound (2 of 4 repeats)".into(), "e1".into())
        );
        // A tie goes to the first seen; a cell sgtune does not write is no verdict.
        assert_eq!(
            v(&[client, compute]),
            ("client_bound (1 of 2 repeats)".into(), "e0".into())
        );
        assert_eq!(v(&["x", "x"]), (String::new(), String::new()));
        assert_eq!(v(&["", ""]), (String::new(), String::new()));
    }

    #[test]
    fn margins_and_noise_in_words() {
        let m = Margin {
            delta: 12.0,
            relative: Some(0.1),
            ci: Some(Interval {
                low: 10.0,
                high: 14.0,
            }),
            level: 0.95,
            df: Some(3.0),
            basis: "own".into(),
            separated: true,
        };
        assert_eq!(
            margin_text(&m),
            "12.0 ± 2.00 (10.0%; 95% CI, own spread, 3 df)"
        );
        let m = Margin {
            relative: None,
            basis: "pooled".into(),
            ..m
        };
        assert_eq!(margin_text(&m), "12.0 ± 2.00 (95% CI, pooled noise, 3 df)");
        assert_eq!(
            noise_text("x", None, 0.05),
            "not measured: no configuration × load point of the sweep has two or more repeats, so no margin has an interval (5.0% of the other's mean, the objective's noise threshold, only sorts within noise from behind)"
        );
        let p = PooledNoise {
            cv: 0.048,
            df: 6,
            effective_df: 6,
            groups: 3,
        };
        assert_eq!(
            noise_text("x", Some(p), 0.05),
            "x varies by 4.8% run to run (coefficient of variation pooled over 3 configuration × load point group(s) with repeats, 6 degrees of freedom)"
        );
        let p = PooledNoise {
            effective_df: 2,
            ..p
        };
        assert_eq!(
            noise_text("x", Some(p), 0.05),
            "x varies by 4.8% run to run (coefficient of variation pooled over 3 configuration × load point group(s) with repeats, 6 degrees of freedom; 2 effective, since the groups' spreads differ: the margins' intervals use 2)"
        );
        let r = rule(&objective(Goal::Minimize, "ttft_ms_p99", &[]));
        assert!(
            r.contains("the one with the lowest mean `ttft_ms_p99` leads"),
            "{r}"
        );
        assert!(r.contains("(no SLO is given)"), "{r}");
    }
}
