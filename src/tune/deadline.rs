//! A sweep against a deadline (`--deadline 07:00`, `--budget 8h`, `deadline:` / `budget:`),
//! as pure functions: reading the values (with "now" handed in), the order that gives a
//! decision as early as possible, whether a launch still fits, and what was not measured.
//! `run::deadline` holds the clock and applies them.

use crate::plan::expand::RunPlan;
use crate::plan::spec::{self, SweepSpec};
use crate::record::{Phase, RunStatus};
use crate::tune::estimate;
use crate::tune::work::{self, Launch};
use chrono::{DateTime, Local, NaiveTime, TimeZone, Utc};

/// `8h`, `90m`, `30s`, `1h30m`, `2h 15m`: seconds (> 0); the spec checks `budget:` with it.
pub use crate::plan::spec::parse_budget;

/// `07:00` or `07:00:30` (local time: today, or tomorrow when that is not after `now`), or an
/// RFC 3339 time (`2026-12-02T07:00:00+01:00`), which must be after `now`.
pub fn parse_deadline(text: &str, now: DateTime<Local>) -> Result<DateTime<Utc>, String> {
    let t = text.trim();
    if let Ok(at) = DateTime::parse_from_rfc3339(t) {
        let at = at.with_timezone(&Utc);
        if at <= now.with_timezone(&Utc) {
            return Err(format!(
                "deadline `{text}` is already past (now {})",
                now.to_rfc3339_opts(chrono::SecondsFormat::Secs, false)
            ));
        }
        return Ok(at);
    }
    spec::check_deadline_form(t)?;
    let time = NaiveTime::parse_from_str(t, "%H:%M")
        .or_else(|_| NaiveTime::parse_from_str(t, "%H:%M:%S"))
        .map_err(|e| format!("deadline `{text}`: {e}"))?;
    let mut day = now.date_naive();
    for _ in 0..3 {
        // A local time that does not exist today (a DST gap) is taken on the next day.
        if let Some(at) = Local.from_local_datetime(&day.and_time(time)).earliest() {
            if at > now {
                return Ok(at.with_timezone(&Utc));
            }
        }
        day = day
            .succ_opt()
            .ok_or_else(|| format!("deadline `{text}`: no such day"))?;
    }
    Err(format!("deadline `{text}`: no such local time soon"))
}

/// The order that gives a decision as early as possible: every configuration once (its first
/// repeat, at the load points it is decided at) before any extra repeat. Stable otherwise, so
/// the configurations keep the plan's order.
pub fn order_for_decision(launches: &[Launch]) -> Vec<Launch> {
    let mut out = launches.to_vec();
    out.sort_by_key(|l| l.measurements.iter().map(|m| m.repeat).min().unwrap_or(1));
    out
}

/// What a launch takes, from what is known: the estimate's defaults until launches are
/// measured, then their means.
#[derive(Debug, Clone, PartialEq)]
pub struct Pace {
    /// Launch to ready, seconds.
    pub startup_s: f64,
    /// One load point (window and warm-up), seconds; None when unknown.
    pub point_s: Option<f64>,
    measured_startup: Vec<f64>,
    measured_point: Vec<f64>,
}

impl Pace {
    pub fn new(k: &estimate::Known) -> Pace {
        Pace {
            startup_s: k.startup_s,
            point_s: k.point_s,
            measured_startup: Vec::new(),
            measured_point: Vec::new(),
        }
    }

    /// One launch measured: its time to ready and its load points' seconds (warm-up and
    /// window).
    pub fn observe(&mut self, startup_s: Option<f64>, points_s: &[f64]) {
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        if let Some(s) = startup_s.filter(|s| s.is_finite() && *s >= 0.0) {
            self.measured_startup.push(s);
            self.startup_s = mean(&self.measured_startup);
        }
        let ok: Vec<f64> = points_s
            .iter()
            .copied()
            .filter(|s| s.is_finite() && *s >= 0.0)
            .collect();
        if !ok.is_empty() {
            self.measured_point.extend(ok);
            self.point_s = Some(mean(&self.measured_point));
        }
    }

    /// Seconds from a launch's start to the end of its last load point.
    pub fn need_s(&self, points: u64) -> f64 {
        self.startup_s + points as f64 * self.point_s.unwrap_or(0.0)
    }
}

/// How long before the deadline a launch still running is cancelled: the grace its requests
/// in flight get, the server's stop (`stop_timeout_s`, after which its group is killed) and a
/// margin for recording the row.
pub fn lead_s(stop_timeout_s: u64, grace_s: f64) -> f64 {
    stop_timeout_s as f64 + grace_s + 2.0
}

/// The fits rule: a launch is started only when it can measure everything it is for before
/// the cut-off (the deadline less [`lead_s`]), `left_s` seconds from now.
pub fn fits(left_s: f64, lead_s: f64, need_s: f64) -> bool {
    need_s <= left_s - lead_s
}

/// Whether the plan fits before a deadline `left_s` seconds away, in one line for `validate`
/// and the first lines of `run`: judged on the estimate against the cut-off (the deadline
/// less `lead_s`, when a launch still running is stopped). A plan that does not fit is not an
/// error: the sweep runs what fits, in the order that decides earliest, and says what it
/// left; the line tells the user how much that is before the night starts.
pub fn fit_line(e: &estimate::Estimate, left_s: f64, lead_s: f64) -> String {
    let usable = (left_s - lead_s).max(0.0);
    let h = estimate::human;
    let head = format!(
        "deadline: {} from now, {} usable (less {:.0} s to stop the last server)",
        h(left_s),
        h(usable),
        lead_s
    );
    match (e.expected_s, e.worst_s) {
        (Some(_), Some(w)) if w <= usable => {
            format!("{head}: fits, even the worst case ({})", h(w))
        }
        (Some(x), Some(w)) if x <= usable => format!(
            "{head}: fits as expected ({}), not at worst ({}); if it runs long, no launch starts that cannot finish before the cut-off and the decision is made from what was measured",
            h(x),
            h(w)
        ),
        (Some(x), _) => {
            // Launches of the plan's mean length that end before the cut-off.
            let per = x / e.launches.max(1) as f64;
            let n = if per > 0.0 {
                ((usable / per).floor() as u64).min(e.launches)
            } else {
                e.launches
            };
            format!(
                "{head}: does NOT fit: expected {}; about {n} of {} launch(es) fit, the rest is left for `sgtune resume` and decision.md lists it",
                h(x),
                e.launches
            )
        }
        // The load points' time is unknown, but the start-ups and stops alone may not fit.
        (None, _) if e.per_launch_s * e.launches as f64 > usable => {
            let n = ((usable / e.per_launch_s).floor() as u64).min(e.launches);
            format!(
                "{head}: does NOT fit: the start-ups and stops alone take {}; at most {n} of {} launch(es) fit (their load points' time is unknown: set estimate.point_s), the rest is left for `sgtune resume` and decision.md lists it",
                h(e.per_launch_s * e.launches as f64),
                e.launches
            )
        }
        (None, _) => {
            format!("{head}: cannot tell, the plan's time is unknown (set estimate.point_s)")
        }
    }
}

/// The load points a launch measures: its measurements, or a max-load search's probe bound.
pub fn points_of(spec: &SweepSpec, l: &Launch) -> u64 {
    match (&l.search, &spec.search.max_load) {
        (Some(_), Some(ml)) => {
            estimate::search_probes(ml.range.from, ml.range.to, ml.range.resolution)
        }
        _ => l.measurements.len() as u64,
    }
}

/// What the plan still lacks, given the rows a folder holds: one line per launch not done, in
/// the order a resume would run them ("b.r2: c2 repeat 2"). A row counts when it is finished
/// (ok, failed or pruned), as `resume` keeps it; an interrupted one does not.
pub fn not_measured(
    spec: &SweepSpec,
    plan: &RunPlan,
    rows: &[crate::record::rows::Row],
) -> Vec<String> {
    let launches = work::left_to_run(spec, plan, rows, false);
    // A pre-flight cut short comes first: the sweep's launches wait for the value it finds.
    let preflight = spec.search.preflight.as_ref().and_then(|p| {
        let attempts: Vec<crate::tune::preflight::Attempt> = rows
            .iter()
            .filter(|r| r.phase() == Phase::Preflight && r.status() != Some(RunStatus::Interrupted))
            .filter_map(|r| crate::tune::preflight::Attempt::of_row(r, &p.knob))
            .collect();
        match crate::tune::preflight::next_attempt(p, &attempts) {
            crate::tune::preflight::Step::Try(v) => Some(format!(
                "the pre-flight: not finished after {} attempt(s) (next: {} {v}); the sweep's launches use the value it finds",
                attempts.len(),
                p.knob
            )),
            crate::tune::preflight::Step::Done { .. } => None,
        }
    });
    preflight
        .into_iter()
        .chain(order_for_decision(&launches).iter().map(|l| {
            let what: Vec<String> = l
                .measurements
                .iter()
                .map(|m| format!("{} repeat {}", m.point.label(), m.repeat))
                .collect();
            let search = if l.search.is_some() {
                " (max-load search not finished)"
            } else {
                ""
            };
            format!("{}: {}{search}", l.dir_name, what.join(", "))
        }))
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::plan::expand::RunConfig;
    use crate::plan::spec::LoadPoint;
    use crate::record::Phase;
    use crate::tune::work::Measurement;

    fn launch(name: &str, dir: &str, repeat: u64) -> Launch {
        Launch {
            run: RunConfig {
                name: name.to_string(),
                id: name.to_string(),
                source: crate::plan::expand::RunSource::Config,
                params: Vec::new(),
                resolved: Vec::new(),
                engine: Default::default(),
            },
            dir_name: dir.to_string(),
            measurements: vec![Measurement {
                repeat,
                point: LoadPoint {
                    concurrency: 2,
                    request_rate: None,
                },
            }],
            search: None,
            phase: Phase::Measure,
        }
    }

    #[test]
    fn every_configuration_once_before_any_extra_repeat() {
        let plan = vec![
            launch("a", "a.r1", 1),
            launch("a", "a.r2", 2),
            launch("b", "b.r1", 1),
            launch("b", "b.r2", 2),
            launch("c", "c.r1", 1),
            launch("c", "c.r2", 2),
        ];
        let order: Vec<String> = order_for_decision(&plan)
            .into_iter()
            .map(|l| l.dir_name)
            .collect();
        assert_eq!(order, ["a.r1", "b.r1", "c.r1", "a.r2", "b.r2", "c.r2"]);
        // A resume's leftovers keep that order; one repeat per launch is left as it is.
        let left = vec![launch("c", "c.r2", 2), launch("b", "b.r1", 1)];
        let order: Vec<String> = order_for_decision(&left)
            .into_iter()
            .map(|l| l.dir_name)
            .collect();
        assert_eq!(order, ["b.r1", "c.r2"]);
        let one = vec![launch("b", "b", 1), launch("a", "a", 1)];
        let order: Vec<String> = order_for_decision(&one)
            .into_iter()
            .map(|l| l.dir_name)
            .collect();
        assert_eq!(order, ["b", "a"]);
    }

    #[test]
    fn a_launch_fits_only_when_its_points_end_before_the_cutoff() {
        let lead = lead_s(30, 10.0);
        assert_eq!(lead, 42.0);
        // 100 s of work, 142 s left: exactly fits; one second less does not.
        assert!(fits(142.0, lead, 100.0));
        assert!(!fits(141.0, lead, 100.0));
        // Past the deadline nothing fits, not even nothing.
        assert!(!fits(-1.0, lead, 0.0));
    }

    fn est(expected: Option<f64>, worst: Option<f64>, launches: u64) -> estimate::Estimate {
        estimate::Estimate {
            launches,
            launches_worst: launches,
            points: launches,
            points_worst: launches,
            expected_s: expected,
            worst_s: worst,
            per_launch_s: 0.0,
            point_s: None,
            basis: String::new(),
        }
    }

    #[test]
    fn the_fit_line_tells_fits_fits_as_expected_and_how_much_does_not() {
        // 1000 s away, 40 s of lead: 960 s usable.
        let fits = fit_line(&est(Some(500.0), Some(960.0), 10), 1000.0, 40.0);
        assert!(fits.contains("16m 00s usable"), "{fits}");
        assert!(
            fits.ends_with("fits, even the worst case (16m 00s)"),
            "{fits}"
        );
        let expected = fit_line(&est(Some(960.0), Some(961.0), 10), 1000.0, 40.0);
        assert!(
            expected.contains("fits as expected (16m 00s), not at worst (16m 01s)"),
            "{expected}"
        );
        // 2000 s expected for 10 launches: 200 s each, 4 end within 960 s (not 5).
        let not = fit_line(&est(Some(2000.0), Some(3000.0), 10), 1000.0, 40.0);
        assert!(
            not.contains("does NOT fit: expected 33m 20s; about 4 of 10 launch(es) fit"),
            "{not}"
        );
        // Past the cut-off already: nothing fits, and the usable time is not negative.
        let none = fit_line(&est(Some(100.0), Some(100.0), 3), 10.0, 40.0);
        assert!(
            none.contains(" 0 s usable") && none.contains("about 0 of 3"),
            "{none}"
        );
        let unknown = fit_line(&est(None, None, 3), 1000.0, 40.0);
        assert!(unknown.contains("cannot tell"), "{unknown}");
    }

    #[test]
    fn start_ups_alone_past_the_cutoff_do_not_fit_though_the_load_points_are_unknown() {
        // 10 launches of 120 s start-up and stop each: 20 min before any load point, against
        // 960 s usable; at most 8 of them fit.
        let mut e = est(None, None, 10);
        e.per_launch_s = 120.0;
        let line = fit_line(&e, 1000.0, 40.0);
        assert!(
            line.contains("does NOT fit: the start-ups and stops alone take 20m 00s; at most 8 of 10 launch(es) fit"),
            "{line}"
        );
        // Start-ups that fit leave it open.
        e.per_launch_s = 96.0;
        let open = fit_line(&e, 1000.0, 40.0);
        assert!(open.contains("cannot tell"), "{open}");
    }

    #[test]
    fn the_pace_starts_from_the_estimate_and_follows_what_is_measured() {
        let k = estimate::Known {
            startup_s: 60.0,
            startup_from: String::new(),
            point_s: Some(30.0),
            point_from: String::new(),
            stop_s: 2.0,
        };
        let mut p = Pace::new(&k);
        assert_eq!(p.need_s(2), 120.0);
        p.observe(Some(10.0), &[20.0, 22.0]);
        assert_eq!(p.need_s(2), 10.0 + 2.0 * 21.0);
        p.observe(Some(20.0), &[]);
        assert_eq!(p.startup_s, 15.0);
        // A point of unknown length counts for nothing until one is measured.
        let mut q = Pace::new(&estimate::Known { point_s: None, ..k });
        assert_eq!(q.need_s(3), 60.0);
        q.observe(None, &[f64::NAN, 5.0]);
        assert_eq!(q.need_s(3), 75.0);
        // A negative or infinite reading (a clock that stepped back, a failed sum) is no pace.
        q.observe(Some(-5.0), &[f64::INFINITY, -1.0]);
        q.observe(Some(f64::INFINITY), &[]);
        assert_eq!(q.need_s(3), 75.0);
    }

    #[test]
    fn not_measured_lists_what_resume_would_run_in_the_decisions_order() {
        use crate::tune::testing::{row, spec};
        let s = spec(
            "sweep: {max_running_requests: [8, 16, 32]}\nrepeats: 2\nworkload: {concurrency: 2, duration_s: 1, input_tokens: 1, output_tokens: 1, vocab_size: 10}\n",
        );
        let plan = crate::plan::expand::expand(&s);
        let at = |name: &str, repeat: &str, status: &str| {
            row(&[
                ("run_name", name),
                ("concurrency", "2"),
                ("repeat", repeat),
                ("status", status),
                ("phase", "measure"),
            ])
        };
        let rows = [
            at("mrr8", "1", "ok"),
            at("mrr16", "1", "failed"),     // finished: not redone
            at("mrr32", "2", "pruned"),     // finished
            at("mrr8", "2", "interrupted"), // redone
        ];
        let left = not_measured(&s, &plan, &rows);
        assert_eq!(
            left,
            [
                "mrr32.r1: c2 repeat 1",
                "mrr8.r2: c2 repeat 2",
                "mrr16.r2: c2 repeat 2"
            ],
            "{left:?}"
        );
        assert_eq!(not_measured(&s, &plan, &[]).len(), 6);
    }

    #[test]
    fn a_preflight_cut_short_comes_first_with_its_next_attempt() {
        use crate::tune::testing::{row, spec};
        let s = spec(
            "sweep: {mem_fraction_static: [preflight]}\nworkload: {concurrency: 2, duration_s: 1, input_tokens: 1, output_tokens: 1, vocab_size: 10}\nobjective: {maximize: output_tok_s}\nsearch: {preflight: {mem_fraction_static: {from: 0.8, to: 0.9, resolution: 0.05}}}\n",
        );
        let plan = crate::plan::expand::expand(&s);
        let attempt = |v: &str, probe: &str, status: &str| {
            row(&[
                ("run_name", "x"),
                ("phase", "preflight"),
                ("param_mem_fraction_static", v),
                ("probe", probe),
                ("status", status),
            ])
        };
        // 0.9 failed, 0.8 survived; the attempt at 0.85 was interrupted: it is next again.
        let rows = [
            attempt("0.9", "fail", "failed"),
            attempt("0.8", "pass", "ok"),
            attempt("0.85", "", "interrupted"),
            // A measured row of the sweep's own phase is not an attempt.
            row(&[
                ("run_name", "x"),
                ("phase", "measure"),
                ("param_mem_fraction_static", "0.85"),
                ("probe", "pass"),
                ("status", "ok"),
            ]),
        ];
        let left = not_measured(&s, &plan, &rows);
        assert_eq!(
            left[0],
            "the pre-flight: not finished after 2 attempt(s) (next: mem_fraction_static 0.85); the sweep's launches use the value it finds",
            "{left:?}"
        );
        // Finished (0.85 survived, 0.9 failed): nothing said of it.
        let done = [
            rows[0].clone(),
            rows[1].clone(),
            attempt("0.85", "pass", "ok"),
        ];
        assert!(!not_measured(&s, &plan, &done)[0].starts_with("the pre-flight"));
    }

    #[test]
    fn a_launch_needs_its_own_points_without_a_search() {
        let spec = crate::plan::spec::parse(
            "name: e\nserver: {model_path: /m}\nworkload: {concurrency: 2, duration_s: 1, input_tokens: 1, output_tokens: 1, vocab_size: 10}\n",
            "s.yaml",
        )
        .expect("parses");
        let mut l = launch("a", "a", 1);
        let m = l.measurements[0];
        l.measurements = vec![m, m, m];
        assert_eq!(points_of(&spec, &l), 3);
        // A max-load search launch needs its probe bound, whatever it holds now: ramp 2-4-8-16
        // and bisect to 2 (2 probes), 6.
        let spec = crate::tune::testing::spec(
            "workload: {concurrency: 2, duration_s: 1, input_tokens: 1, output_tokens: 1, vocab_size: 10}\nobjective: {maximize: output_tok_s, slo: {ttft_ms_p99: 100}}\nsearch: {max_load: {concurrency: {from: 2, to: 16, resolution: 2}}}\n",
        );
        l.search = Some(Vec::new());
        assert_eq!(
            points_of(&spec, &l),
            estimate::search_probes(2.0, 16.0, 2.0)
        );
        assert_eq!(points_of(&spec, &l), 6);
    }

    #[test]
    fn budgets_read_hours_minutes_seconds() {
        assert_eq!(parse_budget("8h"), Ok(28_800.0));
        assert_eq!(parse_budget("90m"), Ok(5_400.0));
        assert_eq!(parse_budget("30s"), Ok(30.0));
        assert_eq!(parse_budget("1h30m"), Ok(5_400.0));
        assert_eq!(parse_budget("2h 15m"), Ok(8_100.0));
        for bad in ["", "8", "h", "8x", "-1h", "8h3", "1..5h"] {
            let e = parse_budget(bad).expect_err(bad);
            assert!(e.contains("not a duration"), "{bad}: {e}");
        }
        assert!(parse_budget("0m").unwrap_err().contains("more than 0"));
    }

    #[test]
    fn deadlines_are_today_or_tomorrow_or_rfc3339() {
        let now = Local
            .with_ymd_and_hms(2026, 12, 1, 23, 0, 0)
            .single()
            .unwrap();
        let at = parse_deadline("07:00", now).unwrap().with_timezone(&Local);
        assert_eq!(
            at.naive_local().to_string(),
            "2026-12-02 07:00:00",
            "already past today: tomorrow"
        );
        let at = parse_deadline("23:30", now).unwrap().with_timezone(&Local);
        assert_eq!(at.naive_local().to_string(), "2026-12-01 23:30:00");
        let at = parse_deadline("23:30:15", now)
            .unwrap()
            .with_timezone(&Local);
        assert_eq!(at.naive_local().to_string(), "2026-12-01 23:30:15");
        let later = (now + chrono::Duration::hours(2)).to_rfc3339();
        assert_eq!(
            parse_deadline(&later, now).unwrap(),
            now.with_timezone(&Utc) + chrono::Duration::hours(2)
        );
        let past = (now - chrono::Duration::hours(2)).to_rfc3339();
        assert!(
            parse_deadline(&past, now)
                .unwrap_err()
                .contains("already past")
        );
        for bad in ["7", "25:00", "tomorrow", "07:00pm"] {
            let e = parse_deadline(bad, now).expect_err(bad);
            assert!(e.contains("is not a time"), "{bad}: {e}");
        }
    }
}
