//! How long a plan will take, expected and at worst, before anything starts: a pure function
//! of the spec, the launches planned and what is known of one launch's start-up and one load
//! point's window (from earlier sweeps in the results folder, else the spec's stated
//! defaults, `estimate:`).
//!
//! Expected: the launches the plan lists, a max-load search's ramp and bisection with one
//! measurement per probe, the pre-flight's bisection. Worst: every probe repeated
//! `max_load.repeats` times, the pre-flight's `max_attempts`, `repeats: auto` up to
//! `max_repeats`, each stop taking `server.stop_timeout_s`.

use crate::plan::search::bisection_launches;
use crate::plan::spec::SweepSpec;
use crate::tune::work::Launch;
use serde::Serialize;

/// What one launch and one load point take, and where each figure comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct Known {
    /// Launch to ready, seconds.
    pub startup_s: f64,
    pub startup_from: String,
    /// One load point's measured window, warm-up included; None when it cannot be known
    /// (`requests:` and nothing measured or stated).
    pub point_s: Option<f64>,
    pub point_from: String,
    /// Stopping a server, seconds.
    pub stop_s: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Estimate {
    pub launches: u64,
    pub launches_worst: u64,
    pub points: u64,
    pub points_worst: u64,
    /// None when a load point's time is unknown.
    pub expected_s: Option<f64>,
    pub worst_s: Option<f64>,
    /// Per launch, expected: start-up, stop and the pause between runs (no load points).
    pub per_launch_s: f64,
    pub point_s: Option<f64>,
    /// Each figure and its source, in words.
    pub basis: String,
}

/// The window of one load point: `duration_s`, or what is known for `requests:`.
pub fn point_seconds(spec: &SweepSpec, measured: Option<f64>) -> (Option<f64>, String) {
    match (measured, spec.workload.duration_s, spec.estimate.point_s) {
        (Some(m), _, _) => (Some(m), "measured".to_string()),
        (None, Some(d), _) => (Some(d), "workload.duration_s".to_string()),
        (None, None, Some(p)) => (Some(p), "estimate.point_s".to_string()),
        (None, None, None) => (
            None,
            "unknown with requests: (set estimate.point_s)".to_string(),
        ),
    }
}

/// Probes a max-load search needs on one server: the ramp (doubling from `from` to `to`) and
/// the bisection down to `resolution`, one measurement each.
pub fn search_probes(from: f64, to: f64, resolution: f64) -> u64 {
    let ramp = (to / from.max(f64::MIN_POSITIVE)).log2().max(0.0).ceil() as u64 + 1;
    let bisect = ((to - from).max(resolution) / resolution / 2.0)
        .log2()
        .max(0.0)
        .ceil() as u64;
    ramp + bisect
}

pub fn estimate(spec: &SweepSpec, launches: &[Launch], k: &Known) -> Estimate {
    let sleep = spec.between_runs.as_ref().map_or(0.0, |b| b.sleep_s);
    let per_launch = k.startup_s + k.stop_s + sleep;
    let worst_stop = (spec.server.stop_timeout_s as f64).max(k.stop_s);
    let per_launch_worst = k.startup_s + worst_stop + sleep;
    let mut launches_n = launches.len() as u64;
    let mut points: u64 = launches.iter().map(|l| l.measurements.len() as u64).sum();
    let (mut launches_w, mut points_w) = (launches_n, points);
    let mut fixed = 0.0; // seconds outside load points (the pre-flight's bursts)
    let mut fixed_w = 0.0;
    if let (Some(ml), Some(_)) = (&spec.search.max_load, &spec.objective) {
        // One launch per configuration; its probes are points.
        let probes = search_probes(ml.range.from, ml.range.to, ml.range.resolution);
        points = launches_n * probes;
        points_w = points * ml.repeats.max(1);
    }
    if let Some(auto) = spec.auto_repeats {
        // The first round measures 2 repeats; at worst every point goes to the cap.
        let per_repeat = points / crate::plan::spec::AUTO_FIRST_REPEATS.max(1);
        let launches_per_repeat = launches_n / crate::plan::spec::AUTO_FIRST_REPEATS.max(1);
        points_w = per_repeat * auto.max;
        launches_w = launches_per_repeat * auto.max;
    }
    if let Some(p) = &spec.search.preflight {
        let expected = bisection_launches(&p.range).min(p.max_attempts);
        launches_n += expected;
        launches_w += p.max_attempts;
        fixed += expected as f64 * p.burst_s;
        fixed_w += p.max_attempts as f64 * p.burst_s;
    }
    let (expected_s, worst_s) = match k.point_s {
        Some(ps) => (
            Some(launches_n as f64 * per_launch + points as f64 * ps + fixed),
            Some(launches_w as f64 * per_launch_worst + points_w as f64 * ps + fixed_w),
        ),
        None => (None, None),
    };
    let point = k
        .point_s
        .map_or("unknown".to_string(), |p| format!("{p:.0} s"));
    let basis = format!(
        "start-up {:.0} s per launch ({}), each load point {point} ({}) + {} warm-up request(s), stop {:.0} s (worst {:.0} s), {sleep:.0} s between runs",
        k.startup_s,
        k.startup_from,
        k.point_from,
        spec.workload.warmup_requests,
        k.stop_s,
        worst_stop,
    );
    Estimate {
        launches: launches_n,
        launches_worst: launches_w,
        points,
        points_worst: points_w,
        expected_s,
        worst_s,
        per_launch_s: per_launch,
        point_s: k.point_s,
        basis,
    }
}

/// A duration for people: `1h 05m`, `4m 10s`, `42 s`.
pub fn human(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// The estimate in one line, for `validate` and the first lines of `run`.
pub fn line(e: &Estimate) -> String {
    match (e.expected_s, e.worst_s) {
        (Some(x), Some(w)) => format!(
            "estimate: expected {} ({} launch(es), {} load point(s)), worst case {} ({} launch(es), {} load point(s)); {}",
            human(x),
            e.launches,
            e.points,
            human(w),
            e.launches_worst,
            e.points_worst,
            e.basis
        ),
        _ => format!(
            "estimate: {} launch(es) ({} at worst), {} load point(s) ({} at worst); no time: {}",
            e.launches, e.launches_worst, e.points, e.points_worst, e.basis
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(extra: &str) -> SweepSpec {
        let text = format!(
            "name: e\nserver: {{model_path: /m, stop_timeout_s: 30}}\nsweep: {{max_running_requests: [8, 16, 32]}}\nworkload: {{concurrency: [4, 8], duration_s: 100, input_tokens: 8, output_tokens: 8, vocab_size: 10}}\n{extra}"
        );
        crate::plan::spec::parse(&text, "s.yaml").expect("parses")
    }

    fn known(s: &SweepSpec) -> Known {
        let (point_s, point_from) = point_seconds(s, None);
        Known {
            startup_s: s.estimate.startup_s,
            startup_from: "default".into(),
            point_s,
            point_from,
            stop_s: s.estimate.stop_s,
        }
    }

    fn launches(s: &SweepSpec) -> Vec<Launch> {
        let plan = crate::plan::expand::expand(s);
        crate::tune::work::plan_launches(s, &plan, &|_, _| false, &|_| Vec::new())
    }

    #[test]
    fn a_grid_is_launches_times_startup_plus_points_times_window() {
        let s =
            spec("repeats: 2\nestimate: {startup_s: 10, stop_s: 1}\nbetween_runs: {sleep_s: 4}\n");
        let e = estimate(&s, &launches(&s), &known(&s));
        assert_eq!((e.launches, e.points), (6, 12));
        // 6 × (10 + 1 + 4) + 12 × 100
        assert_eq!(e.expected_s, Some(6.0 * 15.0 + 1200.0));
        // The worst case stops at the stop timeout.
        assert_eq!(e.worst_s, Some(6.0 * 44.0 + 1200.0));
        assert!(line(&e).contains("expected 21m 30s"), "{}", line(&e));
    }

    #[test]
    fn requests_without_a_known_window_has_no_time() {
        let mut s = spec("");
        s.workload.duration_s = None;
        s.workload.requests = Some(100);
        let e = estimate(&s, &launches(&s), &known(&s));
        assert_eq!(e.expected_s, None);
        assert!(line(&e).contains("set estimate.point_s"), "{}", line(&e));
        s.estimate.point_s = Some(50.0);
        let e = estimate(&s, &launches(&s), &known(&s));
        assert_eq!(e.expected_s, Some(3.0 * 62.0 + 6.0 * 50.0));
    }

    #[test]
    fn the_search_bound_and_repeats_auto_cap_make_the_worst_case() {
        assert_eq!(search_probes(2.0, 64.0, 1.0), 6 + 5);
        let s = spec("repeats: auto\nmax_repeats: 5\nobjective: {maximize: output_tok_s}\n");
        let e = estimate(&s, &launches(&s), &known(&s));
        assert_eq!((e.launches, e.launches_worst), (6, 15));
        assert_eq!((e.points, e.points_worst), (12, 30));
    }

    /// The search's probes are measured up to `max_load.repeats` times each: the worst case
    /// multiplies by it (3 here), it never divides.
    #[test]
    fn the_max_load_search_worst_case_is_every_probe_repeated() {
        let s = crate::plan::spec::parse(
            "name: e\nserver: {model_path: /m}\nsweep: {max_running_requests: [8, 16, 32]}\nworkload: {concurrency: 4, duration_s: 100, input_tokens: 8, output_tokens: 8, vocab_size: 10}\nobjective: {maximize: output_tok_s, slo: {ttft_ms_p99: 100}}\nsearch: {max_load: {concurrency: {from: 2, to: 16, resolution: 2}, repeats: 3}}\n",
            "s.yaml",
        )
        .expect("parses");
        let e = estimate(&s, &launches(&s), &known(&s));
        // 2 → 16 is 4 ramp probes, then 2 bisection steps at resolution 2: 6 per launch.
        assert_eq!(e.points, e.launches * 6, "{e:?}");
        assert_eq!(e.points_worst, e.points * 3, "{e:?}");
    }
}
