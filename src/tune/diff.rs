//! The decision diff of two sweeps (`sgtune compare A B`, `sgtune report A B`): each side
//! decided by the same rule ([`decide`]) from its own rows and objective, then what changed
//! that a person acts on: the leader at each load point and whether the change is beyond the
//! noise both sweeps measured; each configuration's standing (eligible, SLO violated, quality
//! failed, failed, not measured) and its flips; its highest load within the SLO; the memory
//! pre-flight's value; what differs in the environment; configurations on one side only. Pure:
//! `cmd/` reads the folders, `report::compare` renders.

use crate::plan::engine::Engine;
use crate::plan::spec::{Goal, Objective};
use crate::record::Phase;
use crate::record::provenance::{self, Manifest};
use crate::record::rows::{Col, Row};
use crate::tune::decision::{
    ConfigResult, Decision, Outcome, PointDecision, Standing, decide, num, preflight_summary,
};
use serde::Serialize;

/// One sweep as the diff reads it.
#[derive(Debug, Clone, Copy)]
pub struct SweepView<'a> {
    pub rows: &'a [Row],
    /// The folder's objective (None: a folder without one, or a bare results.csv).
    pub objective: Option<&'a Objective>,
    pub manifest: Option<&'a Manifest>,
    /// The memory pre-flight's knob, when the spec names one (else guessed from the rows).
    pub preflight_knob: Option<&'a str>,
}

/// Where a configuration stands at a load point, as a person gates on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stand {
    Eligible,
    SloViolated,
    QualityFailed,
    Failed,
    NotMeasured,
}

impl Stand {
    pub fn as_str(self) -> &'static str {
        match self {
            Stand::Eligible => "eligible",
            Stand::SloViolated => "SLO violated",
            Stand::QualityFailed => "quality failed",
            Stand::Failed => "failed",
            Stand::NotMeasured => "not measured",
        }
    }

    fn of(s: Standing) -> Self {
        match s {
            Standing::Winner | Standing::Leader | Standing::WithinNoise | Standing::Behind => {
                Stand::Eligible
            }
            Standing::SloNotMet => Stand::SloViolated,
            Standing::QualityFailed => Stand::QualityFailed,
            Standing::Failed => Stand::Failed,
            Standing::NoValue => Stand::NotMeasured,
        }
    }
}

/// Whether a change of leader is beyond the noise of the sweeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Noise {
    /// Each side's leader is separated from the other side's leader there (or the other one
    /// is not eligible there).
    Beyond,
    /// On at least one side the two are within noise of each other.
    Within,
    /// A side measured no noise (one repeat): held only against the noise threshold.
    NotMeasured,
}

impl Noise {
    pub fn as_str(self) -> &'static str {
        match self {
            Noise::Beyond => "beyond noise",
            Noise::Within => "within noise",
            Noise::NotMeasured => "noise not measured",
        }
    }
}

/// The decision at one load point on each side.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PointChange {
    /// results.csv's load point (`max_load_at_slo` for a max-load search).
    pub load_point: String,
    pub label: String,
    pub a_leader: Option<String>,
    pub b_leader: Option<String>,
    /// None: the side has no such load point.
    pub a_outcome: Option<Outcome>,
    pub b_outcome: Option<Outcome>,
    /// The leader changed (a side with no eligible configuration counts as a change).
    pub changed: bool,
    /// With a change: whether it is beyond noise.
    pub noise: Option<Noise>,
}

/// One configuration at one load point on each side.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigChange {
    pub load_point: String,
    pub run_name: String,
    pub a: Stand,
    pub b: Stand,
    /// Why it stands so (the decision's words; empty for an eligible one).
    pub a_why: String,
    pub b_why: String,
    /// Its standing differs, and it was measured on both sides (a configuration on one side
    /// only is listed as such, not as a flip).
    pub flipped: bool,
    /// With a max-load search: the highest load within the SLO on each side.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub a_max_load: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b_max_load: Option<String>,
}

impl ConfigChange {
    /// Its highest load within the SLO differs (found on one side only counts).
    pub fn max_load_changed(&self) -> bool {
        self.a_max_load != self.b_max_load
    }
    /// Eligible in A, excluded in B by its SLO, its outputs or a failure.
    pub fn became_ineligible(&self) -> bool {
        self.a == Stand::Eligible
            && matches!(
                self.b,
                Stand::SloViolated | Stand::QualityFailed | Stand::Failed
            )
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PreflightChange {
    pub knob: String,
    pub a: Option<f64>,
    pub b: Option<f64>,
}

/// One metric of A's leader at a load point that got worse beyond noise in B.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WinnerFall {
    pub load_point: String,
    pub run_name: String,
    pub metric: Col,
    /// Its mean in A and in B.
    pub a: f64,
    pub b: f64,
    /// The noise band it was judged against, in the metric's unit (± this).
    pub band: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DecisionDiff {
    /// The objective each side was decided by, in words.
    pub objective: String,
    /// Set when the sides' objectives differ, or when neither folder has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objective_note: Option<String>,
    pub points: Vec<PointChange>,
    pub configurations: Vec<ConfigChange>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preflight: Option<PreflightChange>,
    /// What differs in the environment: versions, GPUs, model config, and per configuration
    /// its engine and launch arguments.
    pub environment: Vec<String>,
    /// Configurations measured on one side only (a spec that added or removed them).
    pub only_a: Vec<String>,
    pub only_b: Vec<String>,
    /// A's leader got worse beyond noise in B at the load it led at (set by
    /// `report::compare`, whose per-metric judgement `--fail-on winner-regressed` uses).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub winner_fell: Vec<WinnerFall>,
    /// One paragraph for a ticket.
    pub paragraph: String,
    /// Nothing above differs.
    pub same: bool,
}

impl DecisionDiff {
    /// Note the leader's regressions beyond noise, and build the paragraph again with them:
    /// "Same decision ... in both, but its output_tok_s fell 25% (1200 → 900), beyond the
    /// noise (±6%)". Something the decision rests on moved, so the diff is no longer "same".
    pub fn note_winner_falls(&mut self, falls: Vec<WinnerFall>) {
        self.same = self.same && falls.is_empty();
        self.winner_fell = falls;
        self.paragraph = paragraph(self);
    }

    /// The leader changed at some load point.
    pub fn decision_changed(&self) -> bool {
        self.points.iter().any(|p| p.changed)
    }
    /// Configurations that were eligible in A and are not in B, `name @point`.
    pub fn became_ineligible(&self) -> Vec<String> {
        self.configurations
            .iter()
            .filter(|c| c.became_ineligible())
            .map(|c| format!("{} @{}", c.run_name, c.load_point))
            .collect()
    }
}

/// The objective a folder without one is decided by: the highest output tok/s, no SLO.
pub fn default_objective(noise: f64) -> Objective {
    Objective {
        goal: Goal::Maximize,
        metric: Col::OUTPUT_TOK_S,
        slo: Vec::new(),
        noise,
        prune: false,
    }
}

fn decided(v: &SweepView<'_>, o: &Objective) -> Decision {
    decide("", o, v.rows, &Default::default(), Default::default())
}

/// The configuration's result at a point, if it was judged there.
fn result<'d>(p: Option<&'d PointDecision>, run: &str) -> Option<&'d ConfigResult> {
    p.and_then(|p| p.configurations.iter().find(|c| c.run_name == run))
}

/// How `other` stands against `leader`'s side at a point: separated, within noise, or only
/// held against the threshold.
fn separation(p: &PointDecision, other: Option<&str>) -> Noise {
    let Some(c) = other.and_then(|o| result(Some(p), o)) else {
        // The other side's leader is not judged here at all: nothing to be within noise of.
        return Noise::Beyond;
    };
    match c.standing {
        Standing::WithinNoise | Standing::Leader | Standing::Winner => Noise::Within,
        Standing::Behind if p.noise.is_none() => Noise::NotMeasured,
        _ => Noise::Beyond,
    }
}

/// The memory pre-flight's knob: the named one, else the one `param_` column whose values
/// differ among the pre-flight attempts.
fn knob(rows: &[Row], named: Option<&str>) -> Option<String> {
    if let Some(k) = named {
        return Some(k.to_string());
    }
    let attempts: Vec<&Row> = rows
        .iter()
        .filter(|r| r.phase() == Phase::Preflight)
        .collect();
    let first = attempts.first()?;
    first
        .params()
        .find(|(k, v)| attempts.iter().any(|r| r.param(k) != *v))
        .map(|(k, _)| k.to_string())
}

/// Configuration names measured (not pre-flight), in first-appearance order.
fn names(rows: &[Row]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in rows.iter().filter(|r| r.phase() != Phase::Preflight) {
        let n = r.run_name();
        if !out.iter().any(|x| x == n) {
            out.push(n.to_string());
        }
    }
    out
}

/// Each configuration's engine (its rows' first non-empty `engine`).
fn engine(rows: &[Row], run: &str) -> Option<&'static str> {
    measured(rows, run).find_map(|r| r.engine().map(Engine::as_str))
}

/// The launch arguments that differ between two commands of one configuration: the words of
/// each not in the other, in order.
fn argument_change(a: &str, b: &str) -> Option<String> {
    let wa: Vec<&str> = a.split_whitespace().collect();
    let wb: Vec<&str> = b.split_whitespace().collect();
    let gone: Vec<&str> = wa.iter().copied().filter(|w| !wb.contains(w)).collect();
    let new: Vec<&str> = wb.iter().copied().filter(|w| !wa.contains(w)).collect();
    if gone.is_empty() && new.is_empty() {
        return None;
    }
    let side = |v: &[&str]| {
        if v.is_empty() {
            "(nothing)".to_string()
        } else {
            format!("`{}`", v.join(" "))
        }
    };
    Some(format!("{} → {}", side(&gone), side(&new)))
}

/// Each configuration's planned launch command (port as a placeholder).
fn planned(m: &Manifest) -> Vec<(&str, &str)> {
    m.plan
        .runs
        .iter()
        .zip(&m.plan.commands)
        .map(|((n, _), c)| (n.as_str(), c.as_str()))
        .collect()
}

fn environment(a: &SweepView<'_>, b: &SweepView<'_>, both: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    if let (Some(ma), Some(mb)) = (a.manifest, b.manifest) {
        out.extend(provenance::context_differences(ma, mb));
        let (pa, pb) = (planned(ma), planned(mb));
        for n in both {
            let find =
                |p: &[(&str, &str)]| p.iter().find(|(x, _)| x == n).map(|(_, c)| c.to_string());
            if let (Some(ca), Some(cb)) = (find(&pa), find(&pb)) {
                if let Some(d) = argument_change(&ca, &cb) {
                    out.push(format!("{n}'s launch arguments: {d}"));
                }
            }
        }
    }
    for n in both {
        if let (Some(ea), Some(eb)) = (engine(a.rows, n), engine(b.rows, n)) {
            if ea != eb {
                out.push(format!("{n}'s engine: {ea} → {eb}"));
            }
        }
        // The server's own effective arguments (`effective_args_id`, a hash of what
        // /server_info reported less identity and run-time state): the same configuration
        // ran another server in effect.
        if let (Some(ia), Some(ib)) = (effective_id(a.rows, n), effective_id(b.rows, n)) {
            if ia != ib {
                out.push(format!(
                    "{n}'s effective arguments (as the server reported them): id {ia} → {ib} (runs/{n}*/effective_args.json)"
                ));
            }
        }
    }
    out
}

/// A configuration's measured rows (not pre-flight).
fn measured<'r>(rows: &'r [Row], run: &str) -> impl Iterator<Item = &'r Row> {
    rows.iter()
        .filter(move |r| r.run_name() == run && r.phase() != Phase::Preflight)
}

/// A configuration's first non-empty `effective_args_id` among its measured rows.
fn effective_id<'r>(rows: &'r [Row], run: &str) -> Option<&'r str> {
    measured(rows, run)
        .map(Row::effective_args_id)
        .find(|e| !e.is_empty())
}

fn outcome_word(o: Option<Outcome>) -> &'static str {
    match o {
        Some(Outcome::Winner) => "winner",
        Some(Outcome::TieWithinNoise) => "leader, tied within noise",
        Some(Outcome::Unconfirmed) => "leader, no noise measured",
        Some(Outcome::NoEligibleConfiguration) => "none eligible",
        None => "not measured",
    }
}

/// A side's leader in words: "b (winner)", "none eligible".
pub fn leader_text(leader: Option<&str>, o: Option<Outcome>) -> String {
    match leader {
        Some(l) => format!("{l} ({})", outcome_word(o)),
        None => outcome_word(o).to_string(),
    }
}

/// The decision diff of A and B. `noise`: the relative threshold for a folder without an
/// objective (`--noise`).
pub fn diff(a: &SweepView<'_>, b: &SweepView<'_>, noise: f64) -> DecisionDiff {
    let fallback = default_objective(noise);
    let oa = a.objective.or(b.objective).unwrap_or(&fallback);
    let ob = b.objective.or(a.objective).unwrap_or(&fallback);
    let objective_note = match (a.objective, b.objective) {
        (None, None) => Some(format!(
            "neither folder has an objective: both decided by the highest output_tok_s, no SLO, noise threshold {}%",
            num(noise * 100.0)
        )),
        (Some(x), Some(y)) if x != y => Some(format!("the objectives differ: A {x}; B {y}")),
        (Some(_), None) => Some("B has no objective: decided by A's".into()),
        (None, Some(_)) => Some("A has no objective: decided by B's".into()),
        _ => None,
    };
    let (da, db) = (decided(a, oa), decided(b, ob));

    // Load points: A's order, then B's others.
    let mut keys: Vec<(String, String)> = Vec::new();
    for p in da.points.iter().chain(&db.points) {
        if !keys.iter().any(|(k, _)| *k == p.load_point) {
            keys.push((p.load_point.clone(), p.label.clone()));
        }
    }
    let (names_a, names_b) = (names(a.rows), names(b.rows));
    let mut all_names = names_a.clone();
    all_names.extend(names_b.iter().filter(|n| !names_a.contains(n)).cloned());
    let mut points = Vec::new();
    let mut configurations = Vec::new();
    for (lp, label) in &keys {
        let pa = da.points.iter().find(|p| &p.load_point == lp);
        let pb = db.points.iter().find(|p| &p.load_point == lp);
        let (la, lb) = (
            pa.and_then(|p| p.leader.clone()),
            pb.and_then(|p| p.leader.clone()),
        );
        let changed = la != lb;
        let noise = changed.then(|| match (pa, pb) {
            (Some(pa), Some(pb)) if la.is_some() && lb.is_some() => {
                let calls = [separation(pa, lb.as_deref()), separation(pb, la.as_deref())];
                if calls.contains(&Noise::Within) {
                    Noise::Within
                } else if calls.contains(&Noise::NotMeasured) {
                    Noise::NotMeasured
                } else {
                    Noise::Beyond
                }
            }
            // A side with no eligible configuration, or no such point: an eligibility change.
            _ => Noise::Beyond,
        });
        points.push(PointChange {
            load_point: lp.clone(),
            label: label.clone(),
            a_leader: la,
            b_leader: lb,
            a_outcome: pa.map(|p| p.outcome),
            b_outcome: pb.map(|p| p.outcome),
            changed,
            noise,
        });
        for n in &all_names {
            let (ca, cb) = (result(pa, n), result(pb, n));
            if ca.is_none() && cb.is_none() {
                continue;
            }
            let stand =
                |c: Option<&ConfigResult>| c.map_or(Stand::NotMeasured, |c| Stand::of(c.standing));
            let why = |c: Option<&ConfigResult>| c.map(|c| c.why.clone()).unwrap_or_default();
            let both = names_a.contains(n) && names_b.contains(n);
            configurations.push(ConfigChange {
                load_point: lp.clone(),
                run_name: n.clone(),
                a: stand(ca),
                b: stand(cb),
                flipped: both && stand(ca) != stand(cb),
                a_why: why(ca),
                b_why: why(cb),
                a_max_load: ca.and_then(|c| c.max_load_at_slo.clone()),
                b_max_load: cb.and_then(|c| c.max_load_at_slo.clone()),
            });
        }
    }
    let preflight = match (
        knob(a.rows, a.preflight_knob),
        knob(b.rows, b.preflight_knob),
    ) {
        (None, None) => None,
        (ka, kb) => {
            let k = ka.or(kb).unwrap_or_default();
            let found = |rows: &[Row]| preflight_summary(rows, &k).and_then(|s| s.found);
            Some(PreflightChange {
                a: found(a.rows),
                b: found(b.rows),
                knob: k,
            })
        }
    };
    let both: Vec<String> = names_a
        .iter()
        .filter(|n| names_b.contains(n))
        .cloned()
        .collect();
    let environment = environment(a, b, &both);
    let only_a: Vec<String> = names_a
        .iter()
        .filter(|n| !names_b.contains(n))
        .cloned()
        .collect();
    let only_b: Vec<String> = names_b
        .iter()
        .filter(|n| !names_a.contains(n))
        .cloned()
        .collect();
    let mut d = DecisionDiff {
        objective: if oa == ob {
            oa.to_string()
        } else {
            format!("A: {oa}; B: {ob}")
        },
        objective_note,
        points,
        configurations,
        preflight,
        environment,
        only_a,
        only_b,
        winner_fell: Vec::new(),
        paragraph: String::new(),
        same: false,
    };
    d.same = !d.decision_changed()
        && d.points.iter().all(|p| p.a_outcome == p.b_outcome)
        && !d
            .configurations
            .iter()
            .any(|c| c.flipped || c.max_load_changed())
        && d.preflight.as_ref().is_none_or(|p| p.a == p.b)
        && d.environment.is_empty()
        && d.only_a.is_empty()
        && d.only_b.is_empty();
    d.paragraph = paragraph(&d);
    d
}

/// How A's leader fell at a point, after `lead` (", but its"): the first metric that got
/// worse beyond noise, its change and the noise, and how many others did; empty when none.
fn fell(d: &DecisionDiff, p: &PointChange, lead: &str) -> String {
    let falls: Vec<&WinnerFall> = d
        .winner_fell
        .iter()
        .filter(|f| f.load_point == p.load_point)
        .collect();
    let Some(f) = falls.first() else {
        return String::new();
    };
    let verb = match f.metric.better() {
        crate::record::Better::Lower => "rose",
        _ => "fell",
    };
    let by = if f.a != 0.0 {
        format!(" {}", percent(((f.b - f.a) / f.a).abs()))
    } else {
        String::new()
    };
    let noise = match f.band {
        Some(b) if f.a != 0.0 => format!(", beyond the noise (±{})", percent(b / f.a.abs())),
        _ => ", beyond the noise".to_string(),
    };
    let more = match falls.len() - 1 {
        0 => String::new(),
        n => format!(", and {n} more metric(s) got worse (the table below)"),
    };
    format!(
        "{lead} {} {verb}{by} ({} → {}){noise}{more}",
        f.metric,
        num(f.a),
        num(f.b)
    )
}

/// A share as a person reads a change: whole percents from 10%, one decimal below.
fn percent(r: f64) -> String {
    let p = r * 100.0;
    if p >= 10.0 {
        format!("{p:.0}%")
    } else {
        format!("{p:.1}%")
    }
}

/// The ticket paragraph: the decision first, then what moved under it.
fn paragraph(d: &DecisionDiff) -> String {
    let mut s: Vec<String> = Vec::new();
    for p in &d.points {
        let (a, b) = (
            leader_text(p.a_leader.as_deref(), p.a_outcome),
            leader_text(p.b_leader.as_deref(), p.b_outcome),
        );
        s.push(match (p.changed, p.noise) {
            (true, Some(n)) => format!(
                "The decision changed at {}: {a} in A, {b} in B ({}).",
                p.label,
                n.as_str()
            ),
            _ if p.a_outcome != p.b_outcome => format!(
                "Same leader at {}, but {a} in A and {b} in B{}.",
                p.label,
                fell(d, p, "; its")
            ),
            _ => format!(
                "Same decision at {}: {a} in both{}.",
                p.label,
                fell(d, p, ", but its")
            ),
        });
        if p.changed {
            let f = fell(d, p, "");
            if !f.is_empty() {
                let who = p.a_leader.as_deref().unwrap_or_default();
                s.push(format!("A's leader {who}'s{f}."));
            }
        }
    }
    let flips: Vec<String> = d
        .configurations
        .iter()
        .filter(|c| c.flipped)
        .map(|c| format!("{} {} → {}", c.run_name, c.a.as_str(), c.b.as_str()))
        .collect();
    if !flips.is_empty() {
        s.push(format!("Standing changed: {}.", flips.join("; ")));
    }
    let loads: Vec<String> = d
        .configurations
        .iter()
        .filter(|c| c.max_load_changed())
        .map(|c| {
            let w = |x: &Option<String>| x.clone().unwrap_or_else(|| "none".into());
            format!("{} {} → {}", c.run_name, w(&c.a_max_load), w(&c.b_max_load))
        })
        .collect();
    if !loads.is_empty() {
        s.push(format!(
            "Highest load within the SLO: {}.",
            loads.join("; ")
        ));
    }
    if let Some(p) = &d.preflight {
        if p.a != p.b {
            let w = |x: Option<f64>| x.map_or("none".to_string(), num);
            s.push(format!("Pre-flight {}: {} → {}.", p.knob, w(p.a), w(p.b)));
        }
    }
    if !d.environment.is_empty() {
        s.push(format!("Environment: {}.", d.environment.join("; ")));
    }
    if !d.only_a.is_empty() {
        s.push(format!("Only in A: {}.", d.only_a.join(", ")));
    }
    if !d.only_b.is_empty() {
        s.push(format!("Only in B: {}.", d.only_b.join(", ")));
    }
    if s.is_empty() {
        s.push("Nothing to decide on either side.".into());
    }
    if d.same {
        s.push("Nothing the decision rests on changed.".into());
    }
    s.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::spec::Bound;
    use crate::tune::testing::row;

    /// An ok row of `name` at concurrency 8 (repeat `rep`) with `tok` output tok/s.
    fn r(name: &str, rep: &str, tok: &str) -> Row {
        row(&[
            ("run_name", name),
            ("run_id", name),
            ("concurrency", "8"),
            ("repeat", rep),
            ("status", "ok"),
            ("output_tok_s", tok),
            ("ttft_ms_p99", "100"),
        ])
    }

    fn reps(name: &str, toks: &[&str]) -> Vec<Row> {
        toks.iter()
            .enumerate()
            .map(|(i, t)| r(name, &(i + 1).to_string(), t))
            .collect()
    }

    fn with(mut r: Row, k: &str, v: &str) -> Row {
        r.set_cell(k, v);
        r
    }

    fn view<'a>(rows: &'a [Row], o: Option<&'a Objective>) -> SweepView<'a> {
        SweepView {
            rows,
            objective: o,
            manifest: None,
            preflight_knob: None,
        }
    }

    fn diff_of(a: &[Row], b: &[Row]) -> DecisionDiff {
        let o = crate::plan::spec::Objective::for_test(Goal::Maximize, "output_tok_s", &[]);
        diff(&view(a, Some(&o)), &view(b, Some(&o)), 0.05)
    }

    fn concat(parts: &[Vec<Row>]) -> Vec<Row> {
        parts.concat()
    }

    #[test]
    fn a_folder_against_itself_is_all_same() {
        let a = concat(&[
            reps("a", &["100", "102", "98"]),
            reps("b", &["200", "204", "196"]),
        ]);
        let d = diff_of(&a, &a);
        assert!(d.same, "{d:?}");
        assert!(!d.decision_changed());
        assert!(d.became_ineligible().is_empty());
        assert_eq!(d.points.len(), 1);
        assert_eq!(d.points[0].b_leader.as_deref(), Some("b"));
        assert_eq!(d.points[0].noise, None);
        assert!(d.configurations.iter().all(|c| !c.flipped));
        assert_eq!(
            d.paragraph,
            "Same decision at concurrency 8: b (winner) in both. Nothing the decision rests on changed."
        );
        assert_eq!(d.objective_note, None);
    }

    #[test]
    fn a_winner_change_beyond_noise_and_within_noise() {
        let a = concat(&[
            reps("a", &["100", "102", "98"]),
            reps("b", &["200", "204", "196"]),
        ]);
        // B: a clearly ahead.
        let b = concat(&[
            reps("a", &["300", "306", "294"]),
            reps("b", &["200", "204", "196"]),
        ]);
        let d = diff_of(&a, &b);
        let p = &d.points[0];
        assert!(p.changed && d.decision_changed() && !d.same);
        assert_eq!(
            (p.a_leader.as_deref(), p.b_leader.as_deref()),
            (Some("b"), Some("a"))
        );
        assert_eq!(p.noise, Some(Noise::Beyond));
        assert!(
            d.paragraph.starts_with(
                "The decision changed at concurrency 8: b (winner) in A, a (winner) in B (beyond noise)."
            ),
            "{}",
            d.paragraph
        );
        // B: a ahead of b by less than the noise: a tie, the change is within noise.
        let b = concat(&[
            reps("a", &["205", "225", "185"]),
            reps("b", &["200", "220", "180"]),
        ]);
        let d = diff_of(&a, &b);
        let p = &d.points[0];
        assert!(p.changed);
        assert_eq!(p.b_outcome, Some(Outcome::TieWithinNoise));
        assert_eq!(p.noise, Some(Noise::Within));
        // One repeat each side: the change is held only against the threshold.
        let d = diff_of(
            &concat(&[reps("a", &["100"]), reps("b", &["200"])]),
            &concat(&[reps("a", &["300"]), reps("b", &["200"])]),
        );
        assert_eq!(d.points[0].noise, Some(Noise::NotMeasured));
        // A side with nothing eligible is a change beyond noise (an eligibility change).
        let failed = |n: &str| {
            with(
                with(r(n, "1", ""), "status", "failed"),
                "failure_kind",
                "oom",
            )
        };
        let d = diff_of(&a, &[failed("a"), failed("b")]);
        assert_eq!(d.points[0].b_leader, None);
        assert_eq!(d.points[0].noise, Some(Noise::Beyond));
        assert_eq!(d.became_ineligible(), ["a @8", "b @8"]);
        assert!(
            d.paragraph.contains("b (winner) in A, none eligible in B"),
            "{}",
            d.paragraph
        );
    }

    /// The case: fp8 failed the quality guard in A and passed in B.
    #[test]
    fn standing_flips_quality_slo_and_failure() {
        let q =
            |r: Row, v: &str| with(with(r, "quality_verdict", v), "quality_evidence", "derails");
        let a = vec![
            q(r("base", "1", "100"), "baseline"),
            q(r("fp8", "1", "150"), "fail"),
            with(r("slo", "1", "90"), "ttft_ms_p99", "9000"),
            r("ok", "1", "80"),
        ];
        let b = vec![
            q(r("base", "1", "100"), "baseline"),
            q(r("fp8", "1", "150"), "pass"),
            r("slo", "1", "90"),
            with(
                with(r("ok", "1", ""), "status", "failed"),
                "failure_kind",
                "oom",
            ),
        ];
        let o = crate::plan::spec::Objective::for_test(
            Goal::Maximize,
            "output_tok_s",
            &[("ttft_ms_p99", Bound::AtMost, 5000.0)],
        );
        let d = diff(&view(&a, Some(&o)), &view(&b, Some(&o)), 0.05);
        let st = |n: &str| {
            let c = d
                .configurations
                .iter()
                .find(|c| c.run_name == n)
                .unwrap_or_else(|| panic!("{n}"));
            (c.a, c.b)
        };
        assert_eq!(st("base"), (Stand::Eligible, Stand::Eligible));
        assert_eq!(st("fp8"), (Stand::QualityFailed, Stand::Eligible));
        assert_eq!(st("slo"), (Stand::SloViolated, Stand::Eligible));
        assert_eq!(st("ok"), (Stand::Eligible, Stand::Failed));
        assert_eq!(d.became_ineligible(), ["ok @8"]);
        assert!(
            d.paragraph.contains(
                "Standing changed: fp8 quality failed → eligible; slo SLO violated → eligible; ok eligible → failed."
            ),
            "{}",
            d.paragraph
        );
        // The leader went from base to fp8: fp8 was not eligible in A, but in B it leads base
        // by one repeat each, no noise measured.
        assert_eq!(d.points[0].a_leader.as_deref(), Some("base"));
        assert_eq!(d.points[0].b_leader.as_deref(), Some("fp8"));
        assert_eq!(d.points[0].noise, Some(Noise::NotMeasured));
        let fp8 = d
            .configurations
            .iter()
            .find(|c| c.run_name == "fp8")
            .map(|c| c.a_why.clone());
        assert_eq!(fp8.as_deref(), Some("output quality fail: derails"));
    }

    #[test]
    fn max_load_change_and_load_points_on_one_side() {
        let probe = |name: &str, conc: &str, pass: &str| {
            row(&[
                ("run_name", name),
                ("run_id", name),
                ("concurrency", conc),
                ("repeat", "1"),
                ("status", "ok"),
                ("phase", "probe"),
                ("probe", pass),
                ("output_tok_s", conc),
            ])
        };
        let a = vec![probe("x", "8", "pass"), probe("x", "16", "fail")];
        let b = vec![
            probe("x", "8", "pass"),
            probe("x", "16", "pass"),
            probe("x", "32", "fail"),
        ];
        let d = diff_of(&a, &b);
        let c = &d.configurations[0];
        assert_eq!(
            (c.a_max_load.as_deref(), c.b_max_load.as_deref()),
            (Some("8"), Some("16"))
        );
        assert!(c.max_load_changed() && !c.flipped);
        assert!(
            d.paragraph
                .contains("Highest load within the SLO: x 8 → 16."),
            "{}",
            d.paragraph
        );
        assert!(!d.same);
        // The same max load is no change; none found on one side is.
        let d = diff_of(&a, &a);
        assert!(!d.configurations[0].max_load_changed(), "{d:?}");
        let none = vec![probe("x", "8", "fail")];
        let d = diff_of(&a, &none);
        let c = &d.configurations[0];
        assert_eq!(
            (c.a_max_load.as_deref(), c.b_max_load.as_deref()),
            (Some("8"), None)
        );
        assert!(c.max_load_changed());
        assert!(
            d.paragraph
                .contains("Highest load within the SLO: x 8 → none."),
            "{}",
            d.paragraph
        );
        // A load point measured by B only: not measured in A.
        let mut b = reps("x", &["1"]);
        b.push(with(r("x", "1", "2"), "concurrency", "16"));
        let d = diff_of(&reps("x", &["1"]), &b);
        assert_eq!(d.points.len(), 2);
        assert_eq!(d.points[1].a_outcome, None);
        assert!(d.points[1].changed);
        assert_eq!(d.configurations[1].a, Stand::NotMeasured);
        assert!(
            d.paragraph.contains("not measured in A, x (winner) in B"),
            "{}",
            d.paragraph
        );
    }

    #[test]
    fn preflight_value_change() {
        let attempt = |v: &str, pass: &str| {
            row(&[
                ("run_name", "preflight"),
                ("phase", "preflight"),
                ("status", if pass == "pass" { "ok" } else { "failed" }),
                ("probe", pass),
                ("param_mfs", v),
                ("param_other", "1"),
            ])
        };
        let a = vec![
            attempt("0.8", "pass"),
            attempt("0.9", "fail"),
            r("x", "1", "1"),
        ];
        let b = vec![
            attempt("0.8", "pass"),
            attempt("0.85", "pass"),
            r("x", "1", "1"),
        ];
        let d = diff_of(&a, &b);
        assert_eq!(
            d.preflight,
            Some(PreflightChange {
                knob: "mfs".into(),
                a: Some(0.8),
                b: Some(0.85)
            })
        );
        assert!(
            d.paragraph.contains("Pre-flight mfs: 0.800 → 0.850."),
            "{}",
            d.paragraph
        );
        assert!(!d.same);
        // The named knob wins over the guess; the same value is no change.
        let o = crate::plan::spec::Objective::for_test(Goal::Maximize, "output_tok_s", &[]);
        let v = SweepView {
            preflight_knob: Some("other"),
            ..view(&a, Some(&o))
        };
        let d = diff(&v, &v, 0.05);
        assert_eq!(d.preflight.map(|p| p.knob), Some("other".into()));
        assert!(d.same);
    }

    #[test]
    fn versions_engine_and_arguments_in_the_environment() {
        let mut ma = Manifest::default();
        ma.software.sglang = Some("0.5.23".into());
        ma.plan.runs = vec![("x".into(), "1".into())];
        ma.plan.commands = vec!["python -m sglang.launch_server --port <p> --mem 0.8".into()];
        let mut mb = ma.clone();
        mb.software.sglang = Some("0.5.24".into());
        mb.plan.commands = vec!["python -m sglang.launch_server --port <p> --mem 0.9".into()];
        let a = vec![with(
            with(r("x", "1", "1"), "engine", "sglang"),
            "effective_args_id",
            "aaa",
        )];
        let b = vec![with(
            with(r("x", "1", "1"), "engine", "vllm"),
            "effective_args_id",
            "bbb",
        )];
        let o = crate::plan::spec::Objective::for_test(Goal::Maximize, "output_tok_s", &[]);
        let va = SweepView {
            manifest: Some(&ma),
            ..view(&a, Some(&o))
        };
        let vb = SweepView {
            manifest: Some(&mb),
            ..view(&b, Some(&o))
        };
        let d = diff(&va, &vb, 0.05);
        assert_eq!(
            d.environment,
            [
                "SGLang: 0.5.23 → 0.5.24",
                "x's launch arguments: `0.8` → `0.9`",
                "x's engine: sglang → vllm",
                "x's effective arguments (as the server reported them): id aaa → bbb (runs/x*/effective_args.json)"
            ]
        );
        assert!(!d.same);
        assert!(
            d.paragraph.contains("Environment: SGLang"),
            "{}",
            d.paragraph
        );
    }

    #[test]
    fn configurations_on_one_side_only_and_objectives() {
        let a = concat(&[reps("x", &["1"]), reps("gone", &["1"])]);
        let b = concat(&[reps("x", &["1"]), reps("new", &["1"])]);
        let d = diff(&view(&a, None), &view(&b, None), 0.05);
        assert_eq!(d.only_a, ["gone"]);
        assert_eq!(d.only_b, ["new"]);
        assert!(
            d.paragraph.ends_with("Only in A: gone. Only in B: new."),
            "{}",
            d.paragraph
        );
        assert!(
            d.objective_note
                .as_deref()
                .is_some_and(|n| n.starts_with("neither folder has an objective"))
        );
        let o = crate::plan::spec::Objective::for_test(Goal::Maximize, "output_tok_s", &[]);
        let d = diff(&view(&a, Some(&o)), &view(&a, None), 0.05);
        assert_eq!(
            d.objective_note.as_deref(),
            Some("B has no objective: decided by A's")
        );
        let o2 = crate::plan::spec::Objective::for_test(Goal::Minimize, "ttft_ms_p99", &[]);
        let d = diff(&view(&a, Some(&o)), &view(&a, Some(&o2)), 0.05);
        assert!(
            d.objective_note
                .as_deref()
                .is_some_and(|n| n.starts_with("the objectives differ"))
        );
        assert!(d.objective.starts_with("A: "), "{}", d.objective);
    }
}
