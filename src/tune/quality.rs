//! The output-quality guard's judgement: pure functions of the quality passes' samples
//! (`load::quality`, read from `runs/*/quality.jsonl`), so a fresh sweep, a resume, the Slurm
//! merge and `reproduce --decision` judge the same way whatever order the launches ran in.
//!
//! The rule (also written into every decision, see [`rule`]):
//! - Each prompt's greedy output is compared with the baseline's reference output (the
//!   baseline's first launch, first pass): identical, or diverging first at token i.
//! - A divergence is a **near tie** when each side's token is among the other side's top-k
//!   alternatives at that position and, on each side, the two tokens' log-probabilities differ
//!   by at most `near_tie_logprob_gap`: the two were nearly tied, and numerical noise (batching,
//!   kernels) picked one. Any other divergence (a token the other side did not consider, a
//!   clear preference, one side stopping) is **decisive**.
//! - **The unit of evidence is the prompt.** A configuration launched several times (repeats,
//!   pruning's rounds, a resumed launch) answers each prompt once per launch; those answers
//!   are one prompt's evidence, not several: each prompt counts by the share of its launches
//!   that diverged decisively (and, with answers, that answered right), and the counts the
//!   tests take are those shares summed over the prompts, rounded. A deterministic behaviour
//!   gets the same verdict from one launch or five; a random one keeps its rate.
//! - The **floor** is the baseline against itself: its second pass on the same server (same
//!   batch), and its other launches (repeats), prompt by prompt likewise. A configuration **fails** when its share of
//!   decisive divergences exceeds the floor's by more than `max_decisive_excess` and Fisher's
//!   exact test (one-sided) puts it above the floor at the stated confidence.
//! - A configuration with no usable comparison (no samples, every prompt errored, no baseline
//!   reference) is **unchecked**: it cannot be shown to keep the outputs, so it is not eligible.

use crate::load::quality::QualitySample;
use crate::plan::quality::{DEFAULT_ANSWER_REGEX, Quality};
use crate::tune::stats::{binomial_half_upper, fisher_greater};
use serde::Serialize;
use std::collections::BTreeMap;

/// How one prompt's output compares with the reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Divergence {
    Identical,
    NearTie,
    Decisive,
}

/// One prompt compared with its reference output.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PairCheck {
    pub divergence: Divergence,
    /// 0-based position of the first differing token (None: identical).
    pub at: Option<usize>,
    /// Share of the longer output before the first divergence (1 when identical).
    pub prefix_agreement: f64,
}

fn top_lp(top: &[(String, f64)], tok: &str) -> Option<f64> {
    top.iter().find(|(t, _)| t == tok).map(|(_, lp)| *lp)
}

/// Compare two greedy outputs of the same prompt.
pub fn compare(a: &QualitySample, b: &QualitySample, gap: f64) -> PairCheck {
    let (la, lb) = (a.tokens.len(), b.tokens.len());
    let longer = la.max(lb);
    let first = a
        .tokens
        .iter()
        .zip(&b.tokens)
        .position(|(x, y)| x != y)
        .or((la != lb).then_some(la.min(lb)));
    let Some(i) = first else {
        return PairCheck {
            divergence: Divergence::Identical,
            at: None,
            prefix_agreement: 1.0,
        };
    };
    let prefix_agreement = if longer == 0 {
        1.0
    } else {
        i as f64 / longer as f64
    };
    let near = match (a.tokens.get(i), b.tokens.get(i)) {
        (Some(ta), Some(tb)) => {
            let empty = Vec::new();
            let (top_a, top_b) = (
                a.top.get(i).unwrap_or(&empty),
                b.top.get(i).unwrap_or(&empty),
            );
            // Each side's own token's log-probability, and the other side's token in its top-k.
            let own_a = a.logprobs.get(i).copied().flatten().or(top_lp(top_a, ta));
            let own_b = b.logprobs.get(i).copied().flatten().or(top_lp(top_b, tb));
            match (own_a, top_lp(top_a, tb), own_b, top_lp(top_b, ta)) {
                (Some(aa), Some(ab), Some(bb), Some(ba)) => aa - ab <= gap && bb - ba <= gap,
                _ => false,
            }
        }
        // One side stopped where the other went on.
        _ => false,
    };
    PairCheck {
        divergence: if near {
            Divergence::NearTie
        } else {
            Divergence::Decisive
        },
        at: Some(i),
        prefix_agreement,
    }
}

/// Counts over a set of prompt comparisons.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Tally {
    pub compared: usize,
    pub identical: usize,
    pub near_tie: usize,
    pub decisive: usize,
    /// Sum of the prefix agreements (mean = sum / compared).
    pub prefix_sum: f64,
    /// 1-based positions of the decisive divergences: lowest and highest.
    pub decisive_at: Option<(usize, usize)>,
    /// Prompts left out because one side has no output.
    pub errors: usize,
}

impl Tally {
    pub fn share(&self, n: usize) -> Option<f64> {
        (self.compared > 0).then(|| n as f64 / self.compared as f64)
    }
    pub fn decisive_share(&self) -> Option<f64> {
        self.share(self.decisive)
    }
    pub fn diverged_share(&self) -> Option<f64> {
        self.share(self.decisive + self.near_tie)
    }
    pub fn prefix_agreement(&self) -> Option<f64> {
        (self.compared > 0).then(|| self.prefix_sum / self.compared as f64)
    }
}

/// Compare every prompt of one `pass` with the reference, by prompt id.
pub fn tally(reference: &[&QualitySample], pass: &[&QualitySample], gap: f64) -> Tally {
    tally_prompts(reference, &[pass.to_vec()], gap)
}

/// Compare every prompt of several passes (launches) with the reference, the prompt as the
/// unit: a prompt answered in k of the passes counts once, each kind by the share of those k
/// passes in which it was that kind (the totals rounded: a deterministic behaviour counts as
/// one pass would, whatever the number of passes). Its prefix agreement is the mean over its
/// passes; a prompt no pass could compare is one error.
pub fn tally_prompts(
    reference: &[&QualitySample],
    passes: &[Vec<&QualitySample>],
    gap: f64,
) -> Tally {
    let by_id: BTreeMap<u64, &QualitySample> =
        reference.iter().map(|s| (s.prompt_id, *s)).collect();
    // prompt → its comparisons over the passes (and whether any pass asked it).
    let mut per: BTreeMap<u64, Vec<PairCheck>> = BTreeMap::new();
    for pass in passes {
        for s in pass {
            let checks = per.entry(s.prompt_id).or_default();
            if let Some(r) = by_id.get(&s.prompt_id) {
                if r.error.is_none() && s.error.is_none() {
                    checks.push(compare(r, s, gap));
                }
            }
        }
    }
    let (mut near, mut decisive) = (0.0, 0.0);
    let mut t = Tally::default();
    for checks in per.values() {
        if checks.is_empty() {
            t.errors += 1;
            continue;
        }
        let k = checks.len() as f64;
        let share = |d: Divergence| checks.iter().filter(|c| c.divergence == d).count() as f64 / k;
        t.compared += 1;
        near += share(Divergence::NearTie);
        decisive += share(Divergence::Decisive);
        t.prefix_sum += checks.iter().map(|c| c.prefix_agreement).sum::<f64>() / k;
        for c in checks
            .iter()
            .filter(|c| c.divergence == Divergence::Decisive)
        {
            if let Some(at) = c.at {
                let p = at + 1;
                t.decisive_at = Some(match t.decisive_at {
                    None => (p, p),
                    Some((lo, hi)) => (lo.min(p), hi.max(p)),
                });
            }
        }
    }
    t.decisive = rounded(decisive).min(t.compared);
    t.near_tie = rounded(near).min(t.compared - t.decisive);
    t.identical = t.compared - t.decisive - t.near_tie;
    t
}

/// A sum of per-prompt shares as a count: rounded half up (the tolerance absorbs the shares'
/// rounding, 1/3 + 1/3 + 1/3 is one prompt).
fn rounded(x: f64) -> usize {
    (x + 0.5 + 1e-9).floor().max(0.0) as usize
}

/// The answer an output gives: the last match of `re` in its text (its first group when it
/// has one), trimmed.
pub fn answer_of(re: &regex::Regex, text: &str) -> Option<String> {
    let c = re.captures_iter(text).last()?;
    let m = c.get(1).or_else(|| c.get(0))?;
    Some(m.as_str().trim().to_string())
}

/// Task accuracy on the prompts with an expected answer, paired with the baseline's on the
/// same prompts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Accuracy {
    /// Prompts with an expected answer and an output on both sides (pairs, over launches).
    pub answered: usize,
    pub correct: usize,
    /// The baseline's reference, on the same pairs.
    pub baseline_correct: usize,
    /// Discordant pairs: the baseline right and this one wrong, and the other way round.
    pub worse: usize,
    pub better: usize,
    /// Exact McNemar, one-sided (this one worse): P(X ≥ worse | worse + better, 1/2).
    pub p_value: f64,
}

/// Accuracy of `passes` (one or more launches' answers) against the reference on the same
/// prompts (None: no expected answers). The prompt is the unit, as in [`tally_prompts`]: a
/// prompt answered in several passes is right by the share of them that answered right, and
/// the counts (right, worse, better) are those shares summed and rounded.
pub fn accuracy(
    re: &regex::Regex,
    reference: &[&QualitySample],
    passes: &[Vec<&QualitySample>],
) -> Option<Accuracy> {
    let by_id: BTreeMap<u64, &QualitySample> =
        reference.iter().map(|s| (s.prompt_id, *s)).collect();
    let right = |s: &QualitySample| -> Option<bool> {
        let want = s.answer.as_deref()?;
        if s.error.is_some() {
            return None;
        }
        Some(answer_of(re, &s.text).as_deref() == Some(want.trim()))
    };
    // prompt → (the reference right, this one's answers right or not over the passes).
    let mut per: BTreeMap<u64, (bool, Vec<bool>)> = BTreeMap::new();
    for s in passes.iter().flatten() {
        let Some(r) = by_id.get(&s.prompt_id) else {
            continue;
        };
        let (Some(rr), Some(sr)) = (right(r), right(s)) else {
            continue;
        };
        per.entry(s.prompt_id)
            .or_insert((rr, Vec::new()))
            .1
            .push(sr);
    }
    let mut a = Accuracy::default();
    let (mut correct, mut worse, mut better) = (0.0, 0.0, 0.0);
    for (rr, answers) in per.values() {
        let c = answers.iter().filter(|x| **x).count() as f64 / answers.len() as f64;
        a.answered += 1;
        a.baseline_correct += usize::from(*rr);
        correct += c;
        if *rr {
            worse += 1.0 - c;
        } else {
            better += c;
        }
    }
    a.correct = rounded(correct).min(a.answered);
    a.worse = rounded(worse);
    a.better = rounded(better);
    (a.answered > 0).then(|| {
        a.p_value = binomial_half_upper(a.worse, a.worse + a.better);
        a
    })
}

pub use crate::record::QualityStatus;
use crate::record::rows::QualityCells;

#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct QualityVerdict {
    pub run_name: String,
    pub status: QualityStatus,
    /// Against the baseline's reference (for the baseline: its own repeats, the floor).
    pub tally: Tally,
    /// Fisher's one-sided p-value against the floor (candidates with comparisons).
    pub p_value: Option<f64>,
    /// With expected answers: accuracy, paired with the baseline's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<Accuracy>,
    /// The sentence for decision.md, the table and report.html.
    pub evidence: String,
}

/// The whole sweep's quality judgement.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct QualityReport {
    pub baseline: String,
    /// The baseline's launch and pass every output is compared with.
    pub reference: Option<String>,
    /// The baseline against itself: its second pass and its other launches.
    pub floor: Tally,
    pub rule: String,
    pub verdicts: Vec<QualityVerdict>,
}

impl QualityReport {
    pub fn verdict(&self, run_name: &str) -> Option<&QualityVerdict> {
        self.verdicts.iter().find(|v| v.run_name == run_name)
    }
}

/// The rule in words, with this spec's numbers.
pub fn rule(q: &Quality, baseline: &str) -> String {
    format!(
        "Output quality against `{baseline}`: {} greedy prompts of {} tokens per launch, {} in flight, top-{} log-probabilities. A divergence from the baseline's output is a near tie when each side's token is in the other's top-{} within {} nats, else decisive. A configuration fails when its decisive share exceeds the baseline's own floor (its repeat on the same server and across launches) by more than {:.1} points and Fisher's exact test puts it above the floor at {:.0}% confidence; one that cannot be compared is unchecked. Either is not eligible.",
        q.count,
        q.output_tokens,
        q.batch,
        q.top_logprobs,
        q.top_logprobs,
        q.near_tie_logprob_gap,
        q.max_decisive_excess * 100.0,
        q.confidence * 100.0
    )
}

fn pct(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{:.0}%", v * 100.0))
}

fn positions(t: &Tally) -> String {
    match t.decisive_at {
        Some((lo, hi)) if lo == hi => format!(", at token {lo}"),
        Some((lo, hi)) => format!(", at tokens {lo}-{hi}"),
        None => String::new(),
    }
}

fn floor_text(f: &Tally) -> String {
    if f.compared == 0 {
        return "the baseline's repeat: not measured".into();
    }
    format!(
        "the baseline's repeat: {} decisive ({}/{}), {} near ties",
        pct(f.decisive_share()),
        f.decisive,
        f.compared,
        pct(f.share(f.near_tie))
    )
}

/// A pass: (configuration, launch folder, pass number).
type PassKey<'a> = (&'a str, &'a str, u32);

/// Judge every configuration named in `configs` from the samples of the whole sweep.
pub fn judge(
    q: &Quality,
    baseline: &str,
    samples: &[QualitySample],
    configs: &[String],
) -> QualityReport {
    // (run, launch, pass) → samples, in launch-name order.
    let mut passes: BTreeMap<PassKey, Vec<&QualitySample>> = BTreeMap::new();
    for s in samples {
        passes
            .entry((s.run_name.as_str(), s.launch.as_str(), s.pass))
            .or_default()
            .push(s);
    }
    let base: Vec<(&PassKey, &Vec<&QualitySample>)> = passes
        .iter()
        .filter(|((r, _, _), v)| *r == baseline && v.iter().any(|s| s.error.is_none()))
        .collect();
    let reference = base.first().map(|(k, v)| (**k, (*v).clone()));
    let gap = q.near_tie_logprob_gap;
    // The baseline's other passes (its second on the same server, its other launches), the
    // prompt as the unit.
    let floor = match &reference {
        Some(_) if base.len() > 1 => {
            let others: Vec<Vec<&QualitySample>> =
                base.iter().skip(1).map(|(_, v)| (*v).clone()).collect();
            reference
                .as_ref()
                .map(|(_, rv)| tally_prompts(rv, &others, gap))
                .unwrap_or_default()
        }
        _ => Tally::default(),
    };
    let alpha = 1.0 - q.confidence;
    // The answer pattern, only when some prompt has an expected answer.
    let re = samples
        .iter()
        .any(|s| s.answer.is_some())
        .then(|| regex::Regex::new(q.answer_regex.as_deref().unwrap_or(DEFAULT_ANSWER_REGEX)).ok())
        .flatten();
    let verdicts = configs
        .iter()
        .map(|name| {
            if name == baseline {
                let evidence = match &reference {
                    None => "the baseline: no quality outputs (nothing can be compared)".into(),
                    Some(_) => format!("the baseline; {}", floor_text(&floor)),
                };
                let acc = match (&re, &reference) {
                    (Some(re), Some((_, rv))) => accuracy(re, rv, std::slice::from_ref(rv)),
                    _ => None,
                };
                let evidence = match &acc {
                    Some(a) => format!(
                        "{evidence}; accuracy {} ({}/{})",
                        pct(Some(a.correct as f64 / a.answered as f64)),
                        a.correct,
                        a.answered
                    ),
                    None => evidence,
                };
                return QualityVerdict {
                    run_name: name.clone(),
                    status: QualityStatus::Baseline,
                    tally: floor.clone(),
                    p_value: None,
                    accuracy: acc,
                    evidence,
                };
            }
            // A candidate's first pass per launch (it makes only one): each launch one pass,
            // the prompt the unit over them.
            let mine: Vec<Vec<&QualitySample>> = passes
                .iter()
                .filter(|((r, _, pass), _)| r == name && *pass == 1)
                .map(|(_, v)| v.clone())
                .collect();
            let t = match &reference {
                Some((_, rv)) => tally_prompts(rv, &mine, gap),
                None => Tally::default(),
            };
            let acc = match (&re, &reference) {
                (Some(re), Some((_, rv))) => accuracy(re, rv, &mine),
                _ => None,
            };
            let unchecked = |why: String| QualityVerdict {
                run_name: name.clone(),
                status: QualityStatus::Unchecked,
                tally: t.clone(),
                p_value: None,
                accuracy: None,
                evidence: format!("quality unchecked: {why}"),
            };
            if reference.is_none() {
                return unchecked(format!("the baseline `{baseline}` has no quality outputs"));
            }
            if t.compared == 0 {
                return unchecked(if t.errors > 0 {
                    format!("none of its {} quality prompts got an answer", t.errors)
                } else {
                    "no quality outputs (did its server start?)".into()
                });
            }
            let (k1, n1) = (t.decisive, t.compared);
            let (k0, n0) = (floor.decisive, floor.compared);
            let excess = t.decisive_share().unwrap_or(0.0) - floor.decisive_share().unwrap_or(0.0);
            let p = fisher_greater(k1, n1, k0, n0);
            // Without a floor there is nothing to test against: any decisive divergence beyond
            // the excess allowed fails (the floor is taken as zero, the strictest reading).
            let significant = if n0 == 0 { k1 > 0 } else { p < alpha };
            let derails = excess > q.max_decisive_excess && significant;
            // With answers: fewer right on the same questions, beyond chance (exact McNemar).
            let less_accurate = acc
                .as_ref()
                .is_some_and(|a| a.worse > a.better && a.p_value < alpha);
            let fails = derails || less_accurate;
            let accuracy_text = acc
                .as_ref()
                .map(|a| {
                    format!(
                        "; accuracy {} ({}/{}) against the baseline's {} on the same prompts ({} worse, {} better; McNemar exact one-sided p {})",
                        pct(Some(a.correct as f64 / a.answered as f64)),
                        a.correct,
                        a.answered,
                        pct(Some(a.baseline_correct as f64 / a.answered as f64)),
                        a.worse,
                        a.better,
                        p_text(a.p_value)
                    )
                })
                .unwrap_or_default();
            let evidence = format!(
                "{} {} of prompts decisively ({}/{}){}; diverges in {}, prefix agreement {}; {}{}{accuracy_text}",
                if derails { "derails" } else { "diverges" },
                pct(t.decisive_share()),
                k1,
                n1,
                positions(&t),
                pct(t.diverged_share()),
                pct(t.prefix_agreement()),
                floor_text(&floor),
                if n0 > 0 {
                    format!("; Fisher one-sided p {}", p_text(p))
                } else {
                    String::new()
                }
            );
            QualityVerdict {
                run_name: name.clone(),
                status: if fails {
                    QualityStatus::Fail
                } else {
                    QualityStatus::Pass
                },
                tally: t,
                p_value: (n0 > 0).then_some(p),
                accuracy: acc,
                evidence,
            }
        })
        .collect();
    QualityReport {
        baseline: baseline.to_string(),
        reference: reference.map(|((_, l, p), _)| format!("{l} pass {p}")),
        floor,
        rule: rule(q, baseline),
        verdicts,
    }
}

fn p_text(p: f64) -> String {
    if p < 0.0001 {
        "< 0.0001".into()
    } else {
        format!("= {p:.4}")
    }
}

/// The results.csv cells of a configuration's rows.
pub fn cells(v: &QualityVerdict, floor: &Tally) -> QualityCells {
    QualityCells {
        verdict: Some(v.status),
        decisive_share: v.tally.decisive_share(),
        diverged_share: v.tally.diverged_share(),
        prefix_agreement: v.tally.prefix_agreement(),
        floor_decisive_share: floor.decisive_share(),
        p_value: v.p_value,
        accuracy: v
            .accuracy
            .as_ref()
            .map(|a| a.correct as f64 / a.answered as f64),
        evidence: v.evidence.clone(),
    }
}

/// Judge a sweep's configurations (`names`) from its own quality passes and, for the
/// baseline, a reference sweep's (a re-check compares with the sweep it re-checks: only the
/// baseline's passes are taken from there, kept apart from the re-check's own launches).
pub fn judge_sweep(
    q: &Quality,
    names: &[String],
    mut samples: Vec<QualitySample>,
    reference: Vec<QualitySample>,
) -> QualityReport {
    let baseline = match crate::plan::quality::baseline_name(q, names) {
        Ok(b) => b.to_string(),
        // A re-check's plan holds only the two configurations it relaunches.
        Err(_) => q.baseline.clone().unwrap_or_default(),
    };
    samples.extend(
        reference
            .into_iter()
            .filter(|s| s.run_name == baseline)
            .map(|mut s| {
                s.launch = format!("0-reference/{}", s.launch);
                s
            }),
    );
    let mut all: Vec<String> = names.to_vec();
    if !all.contains(&baseline) {
        all.insert(0, baseline.clone());
    }
    judge(q, &baseline, &samples, &all)
}

/// Put each configuration's verdict into its rows (not the pre-flight's attempts).
pub fn annotate(rows: &mut [crate::record::rows::Row], report: &QualityReport) {
    for r in rows.iter_mut() {
        if r.phase() == crate::record::Phase::Preflight {
            continue;
        }
        if let Some(v) = report.verdict(r.run_name()) {
            r.set_quality(&cells(v, &report.floor));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A token, its log-probability, and its position's top-k.
    type Tok<'a> = (&'a str, f64, &'a [(&'a str, f64)]);

    fn sample(run: &str, launch: &str, pass: u32, id: u64, toks: &[Tok]) -> QualitySample {
        QualitySample {
            run_name: run.into(),
            launch: launch.into(),
            pass,
            prompt_id: id,
            tokens: toks.iter().map(|t| t.0.to_string()).collect(),
            logprobs: toks.iter().map(|t| Some(t.1)).collect(),
            top: toks
                .iter()
                .map(|t| t.2.iter().map(|(a, b)| (a.to_string(), *b)).collect())
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn identical_near_tie_and_decisive() {
        let a = sample(
            "b",
            "b",
            1,
            0,
            &[
                ("x", -0.1, &[("x", -0.1), ("y", -2.0)]),
                ("p", -0.60, &[("p", -0.60), ("q", -0.70)]),
            ],
        );
        assert_eq!(compare(&a, &a, 0.5).divergence, Divergence::Identical);
        // b picks q at 1, where a rated it 0.1 below p and b rates p 0.05 below q: a near tie.
        let b = sample(
            "c",
            "c",
            1,
            0,
            &[
                ("x", -0.1, &[("x", -0.1)]),
                ("q", -0.65, &[("q", -0.65), ("p", -0.70)]),
            ],
        );
        let c = compare(&a, &b, 0.5);
        assert_eq!(
            (c.divergence, c.at, c.prefix_agreement),
            (Divergence::NearTie, Some(1), 0.5)
        );
        // A token the baseline did not consider at all: decisive from the first token.
        let d = sample("c", "c", 1, 0, &[("z", -0.2, &[("z", -0.2), ("x", -3.0)])]);
        let c = compare(&a, &d, 0.5);
        assert_eq!((c.divergence, c.at), (Divergence::Decisive, Some(0)));
        // A clear preference on one side (gap 1.9 > 0.5) is decisive even when both are in top-k.
        let e = sample("c", "c", 1, 0, &[("y", -0.1, &[("y", -0.1), ("x", -0.15)])]);
        assert_eq!(compare(&a, &e, 0.5).divergence, Divergence::Decisive);
        // The same from the other side: a nearly tied (x 0.05 above y), g sure of y (1.9 above x).
        let a2 = sample("b", "b", 1, 0, &[("x", -0.1, &[("x", -0.1), ("y", -0.15)])]);
        let g = sample("c", "c", 1, 0, &[("y", -0.1, &[("y", -0.1), ("x", -2.0)])]);
        assert_eq!(compare(&a2, &g, 0.5).divergence, Divergence::Decisive);
        assert_eq!(compare(&g, &a2, 0.5).divergence, Divergence::Decisive);
        // One side stopping early is decisive.
        let f = sample("c", "c", 1, 0, &[("x", -0.1, &[("x", -0.1)])]);
        assert_eq!(compare(&a, &f, 0.5).divergence, Divergence::Decisive);
    }

    fn pass_of(run: &str, launch: &str, pass: u32, n: u64, derail: &[u64]) -> Vec<QualitySample> {
        (0..n)
            .map(|i| {
                let t: &[Tok] = if derail.contains(&i) {
                    &[("a", -0.1, &[("a", -0.1)]), ("zz", -0.1, &[("zz", -0.1)])]
                } else {
                    &[("a", -0.1, &[("a", -0.1)]), ("b", -0.1, &[("b", -0.1)])]
                };
                sample(run, launch, pass, i, t)
            })
            .collect()
    }

    #[test]
    fn a_derailing_configuration_fails_and_the_baseline_repeat_sets_the_floor() {
        let q: Quality = serde_yaml::from_str("{}").expect("q");
        let mut s = pass_of("base", "base", 1, 100, &[]);
        s.extend(pass_of("base", "base", 2, 100, &[]));
        s.extend(pass_of("fp8", "fp8", 1, 100, &(0..20).collect::<Vec<_>>()));
        s.extend(pass_of("same", "same", 1, 100, &[]));
        let names: Vec<String> = ["base", "fp8", "same", "gone"].map(String::from).to_vec();
        let r = judge(&q, "base", &s, &names);
        assert_eq!(
            r.verdict("base").map(|v| v.status),
            Some(QualityStatus::Baseline)
        );
        let fp8 = r.verdict("fp8").expect("fp8");
        assert_eq!(fp8.status, QualityStatus::Fail);
        assert!(
            fp8.evidence
                .starts_with("derails 20% of prompts decisively (20/100), at token 2"),
            "{}",
            fp8.evidence
        );
        assert!(
            fp8.evidence
                .contains("the baseline's repeat: 0% decisive (0/100)"),
            "{}",
            fp8.evidence
        );
        assert_eq!(
            r.verdict("same").map(|v| v.status),
            Some(QualityStatus::Pass)
        );
        assert_eq!(
            r.verdict("gone").map(|v| v.status),
            Some(QualityStatus::Unchecked)
        );
        let c = cells(fp8, &r.floor);
        assert_eq!(c.decisive_share, Some(0.2));
    }

    #[test]
    fn a_floor_as_high_as_the_candidate_protects_it() {
        let q: Quality = serde_yaml::from_str("{}").expect("q");
        let mut s = pass_of("base", "base", 1, 100, &[]);
        // The baseline's own repeat derails 5 prompts: the same 5 in the candidate are noise.
        s.extend(pass_of("base", "base", 2, 100, &[1, 2, 3, 4, 5]));
        s.extend(pass_of("c", "c", 1, 100, &[6, 7, 8, 9, 10]));
        let names: Vec<String> = ["base", "c"].map(String::from).to_vec();
        assert_eq!(
            judge(&q, "base", &s, &names).verdict("c").map(|v| v.status),
            Some(QualityStatus::Pass)
        );
    }

    #[test]
    fn the_decision_refuses_a_configuration_whose_rows_fail_the_guard() {
        use crate::record::rows::Row;
        use crate::tune::decision::{Standing, decide};
        let objective: crate::plan::spec::Objective =
            serde_yaml::from_str("{maximize: output_tok_s}").expect("objective");
        let row = |name: &str, tok_s: &str, q: &str| {
            let mut m = std::collections::BTreeMap::new();
            for (k, v) in [
                ("run_name", name),
                ("status", "ok"),
                ("concurrency", "8"),
                ("repeat", "1"),
                ("phase", "measure"),
                ("output_tok_s", tok_s),
                ("quality_verdict", q),
                ("quality_evidence", "derails 36% of prompts decisively"),
            ] {
                m.insert(k.to_string(), v.to_string());
            }
            Row::from_cells(m)
        };
        let rows = vec![
            row("baseline", "100", "baseline"),
            row("fp8", "138", "fail"),
            row("unjudged", "200", "unchecked"),
        ];
        let d = decide(
            "s",
            &objective,
            &rows,
            &Default::default(),
            Default::default(),
        );
        let p = &d.points[0];
        assert_eq!(p.winner.as_deref(), Some("baseline"), "{p:?}");
        let fp8 = p
            .configurations
            .iter()
            .find(|c| c.run_name == "fp8")
            .expect("fp8");
        assert_eq!(fp8.standing, Standing::QualityFailed);
        assert!(fp8.why.contains("derails 36%"), "{}", fp8.why);
        assert!(
            p.sentence.contains("2 failed the output-quality check"),
            "{}",
            p.sentence
        );
    }

    #[test]
    fn accuracy_is_paired_and_tested_on_the_discordant_prompts() {
        let q: Quality = serde_yaml::from_str("{}").expect("q");
        let mk = |run: &str, pass: u32, id: u64, text: &str| QualitySample {
            run_name: run.into(),
            launch: run.into(),
            pass,
            prompt_id: id,
            answer: Some(format!("{}", id % 7)),
            tokens: vec![text.to_string()],
            logprobs: vec![Some(-0.1)],
            top: vec![vec![(text.to_string(), -0.1)]],
            text: format!("so the answer is {text}"),
            ..Default::default()
        };
        let mut s = Vec::new();
        for id in 0..40u64 {
            let right = format!("{}", id % 7);
            s.push(mk("base", 1, id, &right));
            s.push(mk("base", 2, id, &right));
            // `worse` gets the last 12 wrong (a near-tie-free, decisive change as well).
            let wrong = if id >= 28 {
                "99".to_string()
            } else {
                right.clone()
            };
            s.push(mk("worse", 1, id, &wrong));
        }
        let names: Vec<String> = ["base", "worse"].map(String::from).to_vec();
        let r = judge(&q, "base", &s, &names);
        let w = r.verdict("worse").expect("worse");
        let a = w.accuracy.as_ref().expect("accuracy");
        assert_eq!(
            (a.answered, a.correct, a.baseline_correct, a.worse, a.better),
            (40, 28, 40, 12, 0)
        );
        assert!((a.p_value - 0.5f64.powi(12)).abs() < 1e-12);
        assert_eq!(w.status, QualityStatus::Fail);
        assert!(
            w.evidence
                .contains("accuracy 70% (28/40) against the baseline's 100%"),
            "{}",
            w.evidence
        );
        let re = regex::Regex::new(DEFAULT_ANSWER_REGEX).expect("re");
        assert_eq!(
            answer_of(&re, "3 apples and 4.5 pears").as_deref(),
            Some("4.5")
        );
    }

    /// The counts the evidence and the columns are made of: each kind counted once, the
    /// decisive positions 1-based and widened, errors apart from comparisons, merges adding up.
    #[test]
    fn tallies_count_each_kind_per_prompt() {
        let t = Tally::default();
        assert_eq!(
            (t.decisive_share(), t.diverged_share(), t.prefix_agreement()),
            (None, None, None)
        );
        // Reference: a b c d e f g (7 tokens) for prompts 0-3 and 5 (prompt 4 has none).
        let r: Tok = ("a", -0.1, &[("a", -0.1), ("x", -0.2)]);
        let refs: Vec<QualitySample> = [0u64, 1, 2, 3, 5]
            .iter()
            .map(|&i| sample("base", "base", 1, i, &[r, r, r, r, r, r, r, r]))
            .collect();
        let refs: Vec<&QualitySample> = refs.iter().collect();
        let near: Tok = ("x", -0.2, &[("x", -0.2), ("a", -0.1)]);
        let far: Tok = ("zz", -0.1, &[("zz", -0.1)]);
        let mut p = vec![
            sample("c", "c", 1, 0, &[r, r, r, r, r, r, r, r]),
            sample("c", "c", 1, 1, &[r, r, r, r, near, r, r, r]),
            sample("c", "c", 1, 2, &[r, r, r, r, r, r, far, r]),
            sample("c", "c", 1, 3, &[r, r, r, far, r, r, r, r]),
            sample("c", "c", 1, 4, &[r]),
        ];
        let mut errored = sample("c", "c", 1, 5, &[r]);
        errored.error = Some("timeout".into());
        p.push(errored);
        let one: Vec<&QualitySample> = p.iter().collect();
        let t = tally(&refs, &one, 0.5);
        // Prompt 4 has no reference output and prompt 5 errored: two errors, four compared.
        assert_eq!(
            (t.compared, t.identical, t.near_tie, t.decisive, t.errors),
            (4, 1, 1, 2, 2)
        );
        assert_eq!(t.decisive_at, Some((4, 7)));
        assert_eq!(t.prefix_sum, 1.0 + 0.5 + 0.75 + 0.375);
        assert_eq!(t.decisive_share(), Some(0.5));
        assert_eq!(t.diverged_share(), Some(0.75));
        assert_eq!(positions(&t), ", at tokens 4-7");
        // The same pass three times is the same evidence: one prompt, one count.
        let three = tally_prompts(&refs, &[one.clone(), one.clone(), one.clone()], 0.5);
        assert_eq!(three, t);
        // A prompt decisive in one of three passes counts a third; three such prompts, one.
        let clean: Vec<QualitySample> = [0u64, 1, 2, 3, 5]
            .iter()
            .map(|&i| sample("c", "c2", 1, i, &[r, r, r, r, r, r, r, r]))
            .collect();
        let clean: Vec<&QualitySample> = clean.iter().collect();
        let once: Vec<QualitySample> = [0u64, 1, 2]
            .iter()
            .map(|&i| sample("c", "c3", 1, i, &[far]))
            .collect();
        let once: Vec<&QualitySample> = once.iter().collect();
        let mixed = tally_prompts(&refs, &[clean.clone(), clean.clone(), once], 0.5);
        assert_eq!((mixed.compared, mixed.decisive, mixed.identical), (5, 1, 4));
        assert_eq!(mixed.decisive_at, Some((1, 1)));
        // Half a prompt rounds up: one of two passes decisive on one prompt.
        let half = tally_prompts(&refs, &[clean.clone(), vec![one[2]]], 0.5);
        assert_eq!((half.compared, half.decisive), (5, 1));
        assert!((half.prefix_sum - (4.0 + (1.0 + 0.75) / 2.0)).abs() < 1e-12);
        assert_eq!(positions(&Tally::default()), "");
        let u = Tally {
            compared: 1,
            decisive: 1,
            decisive_at: Some((1, 1)),
            ..Default::default()
        };
        assert_eq!(positions(&u), ", at token 1");
    }

    /// Issue 24: 20 prompts, a configuration that deterministically gets 2 of them wrong (and
    /// derails there) while the baseline gets them right. One launch: McNemar p = 0.25, Fisher
    /// p = 0.24, pass. Three launches used to count each prompt three times (p = 0.0156 and
    /// 0.0024, fail). The verdict of a deterministic behaviour is now the same at any number
    /// of launches.
    #[test]
    fn repeats_do_not_manufacture_evidence() {
        let q: Quality = serde_yaml::from_str("{}").expect("q");
        let with_answers = |mut v: Vec<QualitySample>, wrong: &[u64]| {
            for x in &mut v {
                x.answer = Some("7".into());
                x.text = if wrong.contains(&x.prompt_id) {
                    "the answer is 9".into()
                } else {
                    "the answer is 7".into()
                };
            }
            v
        };
        let verdict = |launches: usize| {
            let mut s = with_answers(pass_of("base", "base", 1, 20, &[]), &[]);
            s.extend(with_answers(pass_of("base", "base", 2, 20, &[]), &[]));
            for k in 0..launches {
                let l = format!("cand.r{}", k + 1);
                s.extend(with_answers(pass_of("cand", &l, 1, 20, &[3, 11]), &[3, 11]));
            }
            let names: Vec<String> = ["base", "cand"].map(String::from).to_vec();
            let r = judge(&q, "base", &s, &names);
            let v = r.verdict("cand").expect("cand").clone();
            let a = v.accuracy.clone().expect("accuracy");
            (
                v.status,
                (v.tally.compared, v.tally.decisive),
                (a.answered, a.correct, a.worse, a.better),
                v.p_value.map(|p| (p * 1e4).round() as i64),
                (a.p_value * 1e4).round() as i64,
            )
        };
        let one = verdict(1);
        assert_eq!(one.0, QualityStatus::Pass, "{one:?}");
        assert_eq!((one.1, one.2), ((20, 2), (20, 18, 2, 0)));
        // McNemar: P(X ≥ 2 | 2, ½) = 0.25; Fisher of 2/20 against 0/20: 0.2436.
        assert_eq!((one.3, one.4), (Some(2436), 2500));
        for n in [2, 3, 5] {
            assert_eq!(verdict(n), one, "{n} launches");
        }
    }
    /// `tally` pairs prompts by id, counts a prompt with an error on either side (or missing
    /// from the reference) as an error, not a comparison.
    #[test]
    fn tally_pairs_by_prompt_id_and_sets_errors_apart() {
        let r = pass_of("base", "base", 1, 4, &[]);
        let mut c = pass_of("c", "c", 1, 4, &[2]);
        c.reverse();
        c[0].prompt_id = 9; // not in the reference
        c[1].error = Some("timeout".into());
        let (rr, cc): (Vec<&QualitySample>, Vec<&QualitySample>) =
            (r.iter().collect(), c.iter().collect());
        let t = tally(&rr, &cc, 0.5);
        // Left: ids 1 (identical) and 0 (identical); 2 had the error, 3 became 9.
        assert_eq!(
            (t.compared, t.identical, t.decisive, t.errors),
            (2, 2, 0, 2)
        );
        let mut bad_ref = r.clone();
        bad_ref[1].error = Some("x".into());
        let br: Vec<&QualitySample> = bad_ref.iter().collect();
        let t = tally(&br, &cc, 0.5);
        assert_eq!((t.compared, t.errors), (1, 3));
    }

    /// The rule's edges: the excess is the candidate's share minus the floor's, both the
    /// excess and the test must hold to fail, no floor means any decisive divergence fails, the
    /// p-value is reported only against a floor, and a candidate with no answers is unchecked.
    #[test]
    fn the_rule_needs_both_the_excess_and_the_confidence() {
        let verdict = |q: &str, floor: &[u64], cand: &[u64], n: u64| {
            let q: Quality = serde_yaml::from_str(q).expect("q");
            let mut s = pass_of("base", "base", 1, n, &[]);
            if floor != [u64::MAX] {
                s.extend(pass_of("base", "base", 2, n, floor));
            }
            s.extend(pass_of("c", "c", 1, n, cand));
            let names: Vec<String> = ["base", "c"].map(String::from).to_vec();
            judge(&q, "base", &s, &names)
                .verdict("c")
                .expect("c")
                .clone()
        };
        let ids = |r: std::ops::Range<u64>| r.collect::<Vec<_>>();
        // 7 against a floor of 5 in 100: above the floor, but not with 95% confidence.
        let v = verdict("{}", &ids(0..5), &ids(10..17), 100);
        assert_eq!(v.status, QualityStatus::Pass, "{}", v.evidence);
        assert!(v.p_value.is_some_and(|p| p > 0.05), "{:?}", v.p_value);
        // 30 against 10 in 200: significant, excess 10 points; allowed 12 points: a pass,
        // allowed 8: a fail.
        let v = verdict(
            "{max_decisive_excess: 0.12}",
            &ids(0..10),
            &ids(10..40),
            200,
        );
        assert_eq!(v.status, QualityStatus::Pass, "{}", v.evidence);
        assert!(v.p_value.is_some_and(|p| p < 0.05), "{:?}", v.p_value);
        let v = verdict(
            "{max_decisive_excess: 0.08}",
            &ids(0..10),
            &ids(10..40),
            200,
        );
        assert_eq!(v.status, QualityStatus::Fail, "{}", v.evidence);
        // Exactly the allowed excess (5 in 100 over a floor of 0, p 0.03) is not above it.
        let v = verdict("{max_decisive_excess: 0.05}", &[], &ids(0..5), 100);
        assert_eq!(v.status, QualityStatus::Pass, "{}", v.evidence);
        let v = verdict("{max_decisive_excess: 0.04}", &[], &ids(0..5), 100);
        assert_eq!(v.status, QualityStatus::Fail, "{}", v.evidence);
        // No floor (one baseline pass): one decisive divergence fails, none passes; no p-value.
        let v = verdict("{}", &[u64::MAX], &[3], 50);
        assert_eq!(
            (v.status, v.p_value),
            (QualityStatus::Fail, None),
            "{}",
            v.evidence
        );
        assert!(!v.evidence.contains("Fisher"), "{}", v.evidence);
        let v = verdict("{}", &[u64::MAX], &[], 50);
        assert_eq!(
            (v.status, v.p_value),
            (QualityStatus::Pass, None),
            "{}",
            v.evidence
        );
        // A candidate whose every prompt errored is unchecked, and says so.
        let q: Quality = serde_yaml::from_str("{}").expect("q");
        let mut s = pass_of("base", "base", 1, 10, &[]);
        let mut c = pass_of("c", "c", 1, 10, &[]);
        for x in &mut c {
            x.error = Some("timeout".into());
        }
        s.extend(c);
        let names: Vec<String> = ["base", "c", "none"].map(String::from).to_vec();
        let r = judge(&q, "base", &s, &names);
        let c = r.verdict("c").expect("c");
        assert_eq!(c.status, QualityStatus::Unchecked);
        assert_eq!(
            c.evidence,
            "quality unchecked: none of its 10 quality prompts got an answer"
        );
        assert_eq!(
            r.verdict("none").map(|v| v.evidence.as_str()),
            Some("quality unchecked: no quality outputs (did its server start?)")
        );
    }

    /// Accuracy fails a configuration only when it is wrong more often than right where the two
    /// disagree, beyond chance: ties and small differences pass.
    #[test]
    fn accuracy_fails_only_when_worse_beyond_chance() {
        let q: Quality = serde_yaml::from_str("{}").expect("q");
        let mk = |run: &str, pass: u32, id: u64, right: bool| QualitySample {
            run_name: run.into(),
            launch: run.into(),
            pass,
            prompt_id: id,
            answer: Some("7".into()),
            tokens: vec!["t".into()],
            logprobs: vec![Some(-0.1)],
            top: vec![vec![("t".to_string(), -0.1)]],
            text: if right { "so 7" } else { "so 8" }.into(),
            ..Default::default()
        };
        // The baseline is wrong on ids 0-5; `c` on `wrong`.
        let status = |wrong: &[u64]| {
            let mut s = Vec::new();
            for id in 0..40u64 {
                s.push(mk("base", 1, id, id >= 6));
                s.push(mk("base", 2, id, id >= 6));
                s.push(mk("c", 1, id, !wrong.contains(&id)));
            }
            let names: Vec<String> = ["base", "c"].map(String::from).to_vec();
            let r = judge(&q, "base", &s, &names);
            let v = r.verdict("c").expect("c").clone();
            (v.status, v.accuracy.map(|a| (a.worse, a.better)))
        };
        // Right on 0-5, wrong on 6-11: 6 worse, 6 better: a tie.
        assert_eq!(
            status(&(6..12).collect::<Vec<_>>()),
            (QualityStatus::Pass, Some((6, 6)))
        );
        // Wrong where the baseline is wrong too, and on 2 more: 2 worse, 0 better, p 0.25.
        assert_eq!(
            status(&[0, 1, 2, 3, 4, 5, 6, 7]),
            (QualityStatus::Pass, Some((2, 0)))
        );
        // 8 worse, 0 better: p 0.004.
        assert_eq!(
            status(&(0..14).collect::<Vec<_>>()),
            (QualityStatus::Fail, Some((8, 0)))
        );
        // 8 worse, 2 better: P(X >= 8 | 10 discordant) = 56/1024 = 0.055, not below 0.05.
        // (Right on 0 and 1, where the baseline is wrong; wrong with it on 2-5.)
        let wrong: Vec<u64> = (2..14).collect();
        assert_eq!(status(&wrong), (QualityStatus::Pass, Some((8, 2))));
        // No prompt answered on both sides: no accuracy at all, not 0 of 0.
        let re = regex::Regex::new(DEFAULT_ANSWER_REGEX).expect("re");
        let base: Vec<QualitySample> = (0..3).map(|id| mk("base", 1, id, true)).collect();
        let refs: Vec<&QualitySample> = base.iter().collect();
        assert!(accuracy(&re, &refs, &[]).is_none());
        let p = accuracy(&re, &refs, std::slice::from_ref(&refs)).map(|a| (a.answered, a.p_value));
        assert_eq!(p, Some((3, 1.0)));
    }

    proptest! {
        #[test]
        fn comparison_is_symmetric_and_identity_is_identical(
            toks in proptest::collection::vec((0u8..4, -3.0f64..0.0), 0..12),
            other in proptest::collection::vec((0u8..4, -3.0f64..0.0), 0..12),
        ) {
            let mk = |t: &[(u8, f64)]| QualitySample {
                tokens: t.iter().map(|(x, _)| x.to_string()).collect(),
                logprobs: t.iter().map(|(_, l)| Some(*l)).collect(),
                top: t.iter().map(|(x, l)| vec![(x.to_string(), *l), (((x + 1) % 4).to_string(), l - 0.2)]).collect(),
                ..Default::default()
            };
            let (a, b) = (mk(&toks), mk(&other));
            prop_assert_eq!(compare(&a, &a, 0.5).divergence, Divergence::Identical);
            let (ab, ba) = (compare(&a, &b, 0.5), compare(&b, &a, 0.5));
            prop_assert_eq!(ab.divergence, ba.divergence);
            prop_assert_eq!(ab.at, ba.at);
            prop_assert!((0.0..=1.0).contains(&ab.prefix_agreement));
        }
    }
}
