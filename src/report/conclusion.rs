//! A sweep's conclusion (`tune::conclusion::Conclusion`), shown: what the table stars, the
//! sections under the decision (the same blocks for decision.md and report.html), decision.md,
//! a guided tune's path (its "Tune path" section and report.html's chart, from the path
//! replayed once), and report.html's typed page. Pure: `run::conclude` and `sgtune report`
//! write what these return.

use crate::plan::spec::{Goal, SweepSpec};
use crate::report::doc::{self, Block};
use crate::report::html::{Launch, Sweep, TunePath, TuneStep};
use crate::report::table::{self, DecisionMarks};
use crate::tune::conclusion::Conclusion;
use crate::tune::decision::Decision;
use crate::tune::guide::{Next, Outcome};
use crate::tune::path::{self, Path};
use std::path::Path as FsPath;

/// What the table stars: the decision's picks, else the leader so far by the objective.
pub fn marks(c: &Conclusion) -> Option<DecisionMarks> {
    table::marks(c.objective.as_ref(), c.decision.as_ref(), &c.rows)
}

/// The sections under the decision, in decision.md's order: the effective arguments, what a
/// deadline left unmeasured, a guided tune's path (none without a decision).
pub fn sections(c: &Conclusion, spec: Option<&SweepSpec>, root: &FsPath) -> Vec<Block> {
    if c.decision.is_none() {
        return Vec::new();
    }
    let mut out = crate::report::effective::decision_blocks(&c.rows);
    if let Some(left) = &c.not_measured {
        out.extend(crate::report::decision::deadline_blocks(left, root));
    }
    if let (Some(spec), Some(p)) = (spec, &c.path) {
        out.extend(path_blocks(spec, p));
    }
    out
}

/// decision.md: the decision, then the sections under it.
pub fn decision_md(d: &Decision, sections: &[Block]) -> String {
    crate::report::decision::render_md(d) + &doc::markdown_section(sections)
}

/// What report.html shows besides the conclusion: the folder, its swept keys, the launches'
/// measurements and timelines, and notes (files that did not read).
pub struct Frame {
    pub name: String,
    pub dir: String,
    pub param_keys: Vec<String>,
    pub launches: Vec<Launch>,
    pub notes: Vec<String>,
}

/// report.html's page of a conclusion, with the marks and sections the other files got.
pub fn page(
    c: &Conclusion,
    spec: Option<&SweepSpec>,
    marks: Option<DecisionMarks>,
    sections: Vec<Block>,
    f: Frame,
) -> Sweep {
    Sweep {
        name: f.name,
        dir: f.dir,
        rows: c.rows.clone(),
        param_keys: f.param_keys,
        decision: c.decision.clone(),
        decision_sections: sections,
        decision_marks: marks,
        launches: f.launches,
        tune: spec.zip(c.path.as_ref()).and_then(|(s, p)| chart(s, p)),
        notes: f.notes,
    }
}

/// The texts the end of a sweep writes, each from the one conclusion: results.md's table,
/// decision.md (None without a decision), report.html.
pub struct Shown {
    pub table: String,
    pub decision_md: Option<String>,
    pub html: String,
}

/// Everything the end of a sweep shows of its conclusion: the table (`param_keys`: the plan's
/// swept keys) and report.html star the same picks, and decision.md and report.html carry the
/// same sections under the decision.
pub fn render(
    c: &Conclusion,
    spec: &SweepSpec,
    param_keys: &[String],
    root: &FsPath,
    f: Frame,
) -> Shown {
    let marks = marks(c);
    let table = table::render(&c.rows, param_keys, marks.as_ref());
    let sections = sections(c, Some(spec), root);
    let decision_md = c.decision.as_ref().map(|d| decision_md(d, &sections));
    let html = crate::report::html::sweep_page(&page(c, Some(spec), marks, sections, f));
    Shown {
        table,
        decision_md,
        html,
    }
}

/// The "Tune path" section as document blocks, for decision.md and report.html alike (none
/// for a sweep without `tune:`): one line per step (the configuration, why it was chosen, what
/// it measured and its verdict) and why the tune stopped.
pub fn path_blocks(spec: &SweepSpec, p: &Path) -> Vec<Block> {
    let Some(t) = &spec.tune else {
        return Vec::new();
    };
    let steps = p
        .done
        .iter()
        .map(|step| {
            let measured = step
                .outcome
                .as_ref()
                .map(|o| path::measured_text(spec, o))
                .unwrap_or_default();
            format!("`{}`: {measured}. Chosen: {}", step.name, step.why)
        })
        .collect();
    vec![
        Block::Heading(2, "Tune path".into()),
        Block::Para(format!(
            "A guided tune of {} knob(s) over {} configuration(s), at most {} launched; {} launched. Each step names why the strategy chose it, from the evidence of the steps before.",
            t.knobs.len(),
            t.size(),
            t.launches,
            p.done.len()
        )),
        Block::Numbered(steps),
        Block::Para(end(&p.next)),
    ]
}

fn end(next: &Next) -> String {
    match next {
        Next::Stop { why } => format!("Stop: {why}."),
        Next::Launch(more) => format!(
            "Not finished: {} more step(s) proposed (`sgtune resume` continues the path).",
            more.len()
        ),
    }
}

/// The path for report.html's chart: each launched step's name, the objective's value as
/// measured (not oriented), eligibility and verdict, and how the tune ended. None without an
/// objective.
pub fn chart(spec: &SweepSpec, p: &Path) -> Option<TunePath> {
    let o = spec.objective.as_ref()?;
    spec.tune.as_ref()?;
    let maximize = o.goal == Goal::Maximize;
    let steps = p
        .done
        .iter()
        .map(|step| match &step.outcome {
            Some(Outcome::Measured {
                score,
                eligible,
                evidence,
                ..
            }) => TuneStep {
                confirm: step.confirm,
                name: step.name.clone(),
                value: Some(if maximize { *score } else { -*score }),
                eligible: *eligible,
                verdict: evidence
                    .verdict
                    .map_or("no verdict", |v| v.as_str())
                    .to_string(),
            },
            Some(Outcome::Failed { kind }) => TuneStep {
                confirm: step.confirm,
                name: step.name.clone(),
                value: None,
                eligible: false,
                verdict: kind.to_string(),
            },
            None => TuneStep {
                confirm: step.confirm,
                name: step.name.clone(),
                value: None,
                eligible: false,
                verdict: "not measured".to_string(),
            },
        })
        .collect();
    Some(TunePath {
        metric: o.metric.name(),
        maximize,
        steps,
        end: end(&p.next),
    })
}
