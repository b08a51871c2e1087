//! The guided tune of the story's prefix levers (the device pool and HiCache's host tier)
//! against real SGLang 0.5.23 on CPU (issue 50), `#[ignore]`d like tests/real_sglang.rs;
//! scripts/test.sh runs them: the tune to a TTFT bound alone on the machine (a clock's bound);
//! the three-way comparison and the host tier turned on from a verdict beside real_sglang's
//! tests (a binary of its own: scripts/lib/run-tests.sh runs the other binaries with real-server
//! tests beside real_sglang's, and these assert hit rates and verdicts, not a clock).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

mod common;
use common::real::*;
use common::*;
use std::sync::Mutex;

/// One server at a time from this binary: libtest runs a binary's tests in parallel threads, and
/// beside real_sglang's server a second one of ours made the machine four servers deep (a test
/// command saw a server generate 4 tok/s and this binary take 926 s).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Sessions on real SGLang with the prefix cache three ways (issues 43, 50):
/// experiments/cpu-sessions.yaml as a user runs it. Six clients replay 5-turn chat
/// conversations whose every turn re-sends the history with the server's own replies, on a
/// pool that holds about one live history. The radix cache alone keeps what the pool holds and
/// its verdict names the prefixes it dropped; with HiCache (the host tier, through the CPU
/// stand-ins) the evicted prefixes come back from host memory and the hit rate reaches what the
/// workload allows, counted in the server's tokens; with `disable_radix_cache` every prompt is
/// computed and the verdict says the cache was off, not that it evicted.
#[test]
#[ignore = "needs real SGLang on CPU: run scripts/test.sh"]
fn sessions_on_one_small_pool_radix_hicache_and_no_radix() {
    let _env = real_env();
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run_sweep(&repo().join("experiments/cpu-sessions.yaml"), dir.path());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let folder = only_results_folder(dir.path());
    let rows = read_rows(&folder.join("results.csv"));
    let row = |name: &str| {
        rows.iter()
            .find(|r| r["run_name"] == name)
            .unwrap_or_else(|| panic!("no row for {name}: {rows:?}"))
    };
    let num = |name: &str, col: &str| -> f64 {
        row(name)[col]
            .parse()
            .unwrap_or_else(|_| panic!("{name}: no {col} in {:?}", row(name)))
    };
    // The figures, for the test command's log.
    for name in ["radix", "hicache", "no-radix"] {
        let r = row(name);
        eprintln!(
            "{name}: cache_hit_rate {} (metrics {}, host {}) of prefix_reusable_share {}; load-back {} tokens; verdict {} {}; TTFT p50 first turn {} ms, last turn {} ms",
            r["cache_hit_rate"],
            r["metrics_cache_hit_rate"],
            r["metrics_host_hit_rate"],
            r["prefix_reusable_share"],
            r.get("metrics_load_back_tokens")
                .map_or("-", |v| v.as_str()),
            r["verdict"],
            r["verdict_also"],
            r["ttft_first_turn_ms_p50"],
            r["ttft_last_turn_ms_p50"],
        );
    }
    for name in ["radix", "hicache", "no-radix"] {
        assert_eq!(row(name)["status"], "ok", "{:?}", row(name));
        assert_eq!(row(name)["requests_failed"], "0", "{:?}", row(name));
        // No column left empty because its series carry labels (with HiCache the cached
        // tokens come in a device and a host series).
        for col in ["metrics_cache_hit_rate", "metrics_host_hit_rate"] {
            assert!(
                row(name)[col].parse::<f64>().is_ok(),
                "{name}: {col} empty: {:?}",
                row(name)
            );
        }
        let share = num(name, "prefix_reusable_share");
        assert!((0.7..0.95).contains(&share), "{name}: share {share}");
        // The ceiling is counted in the server's tokens: the server never beats it.
        let hit = num(name, "cache_hit_rate");
        assert!(
            hit <= share + 0.005,
            "{name}: the server hit {hit}, more than the workload allows ({share})"
        );
        let turns: Vec<&str> = row(name)["turn_latency"].split(' ').collect();
        assert_eq!(turns.len(), 5, "a bucket per turn: {turns:?}");
    }
    let (radix, hicache, off) = (
        num("radix", "cache_hit_rate"),
        num("hicache", "cache_hit_rate"),
        num("no-radix", "cache_hit_rate"),
    );
    // HiCache on the real CPU engine: its host tier serves part of the prompts, and the hit
    // rate comes within 5 points of the ceiling on a pool that holds one history.
    assert!(
        num("hicache", "metrics_host_hit_rate") > 0.0,
        "{:?}",
        row("hicache")
    );
    let ceiling = num("hicache", "prefix_reusable_share");
    assert!(
        hicache >= ceiling - 0.05,
        "HiCache keeps the histories: {hicache} against {ceiling} allowed"
    );
    assert!(
        num("radix", "metrics_host_hit_rate") == 0.0,
        "no host tier, no host hits: {:?}",
        row("radix")
    );
    assert!(
        radix + 0.15 < hicache && radix > off + 0.2,
        "the hit rate climbs: {off} (no radix) < {radix} (radix) < {hicache} (HiCache)"
    );
    assert!(off < 0.02, "no radix cache, no hits: {off}");
    // The verdicts know the flags: the small pool's names the prefixes it dropped; HiCache's
    // does not call them dropped when they came back; the cache turned off is no eviction,
    // and gets no hint to add a host tier.
    let r = row("radix");
    assert!(
        r["verdict"] == "prefix_cache_evicted"
            || r["verdict_also"].contains("prefix_cache_evicted"),
        "{r:?}"
    );
    let h = row("hicache");
    assert!(
        h["verdict"] != "prefix_cache_evicted"
            && !h["verdict_also"].contains("prefix_cache_evicted"),
        "{h:?}"
    );
    let n = row("no-radix");
    assert!(
        n["verdict"] != "prefix_cache_evicted"
            && !n["verdict_also"].contains("prefix_cache_evicted"),
        "{n:?}"
    );
    assert!(
        n["verdict_evidence"].contains("radix cache off (disable_radix_cache)"),
        "the evidence says the cache was off: {n:?}"
    );
    let said = text(&out.stdout);
    let no_radix_line = said
        .lines()
        .find(|l| l.starts_with("- no-radix: "))
        .unwrap_or_else(|| panic!("no verdict line for no-radix:\n{said}"));
    assert!(
        !no_radix_line.contains("hicache") && !no_radix_line.contains("host tier"),
        "no HiCache hint where the cache is off: {no_radix_line}"
    );
}

/// The guided tune of the two prefix levers on real SGLang (issue 50):
/// experiments/cpu-tune-hicache.yaml, chat sessions on a pool that holds about one live
/// history, so the start's requests queue for room and its first tokens wait. CPU speed
/// varies by machine and by what else runs (the start's TTFT p99 was 1.1 s on a quiet machine
/// and 18-20 s beside other servers), so the test measures the start first and sets the bound
/// at a third of its TTFT p99 (a pool that holds the batch measured 5-10 times less); the
/// tune then resumes that folder with the bound, as a user who measured first and then wrote
/// the SLO does. From the start's evidence (KV-bound, prefixes dropped) the tune turns the
/// pool or the host tier up and reaches an eligible launch within its 6 launches; the decision's
/// path says what it did with each lever. Run alone (scripts/lib/run-tests.sh): the bound is a
/// clock's, measured at one launch and met at another.
#[test]
#[ignore = "needs real SGLang on CPU: run scripts/test.sh"]
fn the_guided_tune_turns_a_prefix_lever_up_from_the_evidence_to_an_eligible_launch() {
    let _env = real_env();
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let text_of =
        std::fs::read_to_string(repo().join("experiments/cpu-tune-hicache.yaml")).expect("spec");
    // The start alone.
    let one = text_of.replace("  launches: 6\n  confirm: 1", "  launches: 1\n  confirm: 0");
    assert_ne!(one, text_of, "the experiment's budget lines moved");
    let spec = dir.path().join("start.yaml");
    std::fs::write(&spec, one).expect("spec");
    let out = run_sweep(&spec, &dir.path().join("start"));
    assert!(
        matches!(out.status.code(), Some(0) | Some(1)),
        "{}",
        text(&out.stderr)
    );
    let folder = only_results_folder(&dir.path().join("start"));
    let start = read_rows(&folder.join("results.csv")).remove(0);
    assert_eq!(start["status"], "ok", "{start:?}");
    assert_eq!(start["run_name"], "mtt1100_hicache-ratio0", "{start:?}");
    let bound = (num(&start, "ttft_ms_p99") / 3.0).round();
    eprintln!(
        "start: ttft_ms_p99 {} (p50 {}), hit rate {} of {}; bound {bound} ms",
        start["ttft_ms_p99"],
        start["ttft_ms_p50"],
        start["cache_hit_rate"],
        start["prefix_reusable_share"]
    );
    // The start's evidence: the pool is the limit and it drops the histories.
    assert!(
        start["verdict"] == "kv_cache_bound" || start["verdict"] == "prefix_cache_evicted",
        "{start:?}"
    );
    assert!(
        start["verdict_evidence"].contains("where the workload allows"),
        "{start:?}"
    );
    // No confirmation: the question is whether a lever reaches the bound, and each launch
    // alone on the machine costs about a minute of the test command.
    let tuned = text_of
        .replace(
            "slo: {ttft_ms_p99: 500}",
            &format!("slo: {{ttft_ms_p99: {bound}}}"),
        )
        .replace("  launches: 6\n  confirm: 1", "  launches: 6\n  confirm: 0");
    assert!(
        tuned.contains(&format!("ttft_ms_p99: {bound}}}")) && tuned.contains("confirm: 0"),
        "the experiment's SLO or budget lines moved"
    );
    let spec = dir.path().join("tune.yaml");
    std::fs::write(&spec, tuned).expect("spec");
    let out = run(sgtune().arg("run").arg(&spec).arg("--resume").arg(&folder));
    let log = text(&out.stderr);
    assert!(matches!(out.status.code(), Some(0) | Some(1)), "{log}");
    let rows = read_rows(&folder.join("results.csv"));
    let steps: Vec<&str> = log
        .lines()
        .filter(|l| l.starts_with("tune: step "))
        .collect();
    eprintln!("{}", steps.join("\n"));
    for r in &rows {
        eprintln!(
            "{} (repeat {}): ttft_ms_p99 {}, cache_hit_rate {} of {}, host {}, verdict {} {}",
            r["run_name"],
            r["repeat"],
            r["ttft_ms_p99"],
            r["cache_hit_rate"],
            r["prefix_reusable_share"],
            r["metrics_host_hit_rate"],
            r["verdict"],
            r["verdict_also"]
        );
    }
    assert!(rows.len() <= 6, "{rows:?}");
    assert_eq!(rows[0]["run_name"], "mtt1100_hicache-ratio0", "{rows:?}");
    let meets = |r: &std::collections::HashMap<String, String>| {
        r["status"] == "ok" && r["ttft_ms_p99"].parse::<f64>().is_ok_and(|t| t <= bound)
    };
    assert!(!meets(&rows[0]), "the start is ineligible: {:?}", rows[0]);
    // Step 2 turns a prefix lever up: the pool or the host tier, from that evidence.
    assert!(
        steps.iter().any(|l| l.starts_with("tune: step 2:")
            && (l.contains("max_total_tokens 1100 → ") || l.contains("hicache_ratio 0 → 8"))),
        "{steps:#?}"
    );
    // An eligible launch within the budget, and the decision names it.
    let first = rows
        .iter()
        .find(|r| meets(r))
        .unwrap_or_else(|| panic!("nothing eligible: {rows:?}\n{log}"));
    // Why it is eligible: more of each history served from a cache, less prefill computed.
    assert!(
        num(first, "cache_hit_rate") > num(&rows[0], "cache_hit_rate") + 0.1,
        "{first:?} against {:?}",
        rows[0]
    );
    let d: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("decision.json")).unwrap())
            .unwrap();
    let leader = d["points"][0]["leader"].as_str().unwrap_or_default();
    assert!(
        rows.iter().any(|r| r["run_name"] == leader && meets(r)),
        "{d}"
    );
    let md = std::fs::read_to_string(folder.join("decision.md")).expect("decision.md");
    assert!(md.contains("## Tune path"), "{md}");
}

/// The host tier turned on from the evidence, on real SGLang (issue 50): the same sessions
/// with a think time between turns (experiments/cpu-tune-hicache.yaml with a 3 s `think_time_s`),
/// so the small pool holds the running requests but drops the idle histories, and the device
/// pool fixed at its 1,100 tokens (a server whose device memory is spoken for: the host tier is
/// the lever left). The start's evidence names the evicted prefixes, and the tune's next launch
/// is the host tier (`hicache_ratio 0 → 8`): its host hits bring the hit rate up and the prefill
/// computed down. Two launches, no SLO: the path is the verdict's, not a clock's. The pool is
/// fixed because a busy machine makes the same start queue for room as well (a test command
/// measured 1.1 queued beside other servers, 0.4 quietly), and a queue on a full pool asks for
/// more KV first, which a pool knob in the space would then take.
#[test]
#[ignore = "needs real SGLang on CPU: run scripts/test.sh"]
fn the_guided_tune_turns_hicache_on_from_prefixes_the_pool_evicts() {
    let _env = real_env();
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let text_of =
        std::fs::read_to_string(repo().join("experiments/cpu-tune-hicache.yaml")).expect("spec");
    let spec = text_of
        .replace(
            "system_tokens: 120}",
            "system_tokens: 120, think_time_s: 3}",
        )
        // Four clients, so that the running requests seldom meet in the pool (a queue there
        // would make the start KV-bound first, and its move more KV): two quiet runs with six
        // measured a queue of 0.4, under the 0.5 of a persistent one, and this test runs
        // beside other servers.
        .replace("  concurrency: 6\n", "  concurrency: 4\n")
        .replace(
            "  slo: {ttft_ms_p99: 500}     # the test sets it from the start it measured\n",
            "",
        )
        .replace(
            "  launches: 6\n  confirm: 1\n",
            "  launches: 2\n  confirm: 0\n",
        )
        // The device pool fixed: a server argument, not a knob.
        .replace(
            "    max_total_tokens: [1100, 2200, 4400]   # always bound the KV pool on CPU\n",
            "",
        )
        .replace(
            "  start: {max_total_tokens: 1100, hicache_ratio: 0}",
            "  start: {hicache_ratio: 0}",
        )
        .replace(
            "    hicache_io_backend: direct\n",
            "    max_total_tokens: 1100\n    hicache_io_backend: direct\n",
        );
    for (what, line) in [
        ("the sessions", "think_time_s: 3}"),
        ("the budget", "launches: 2\n"),
        ("the load", "concurrency: 4\n"),
        ("the start", "start: {hicache_ratio: 0}"),
        ("the pool", "    max_total_tokens: 1100\n"),
    ] {
        assert!(spec.contains(line), "the experiment's {what} line moved");
    }
    assert!(!spec.contains("slo:"), "the experiment's SLO line moved");
    assert!(
        !spec.contains("max_total_tokens: ["),
        "the experiment's pool knob line moved"
    );
    let path = dir.path().join("think.yaml");
    std::fs::write(&path, spec).expect("spec");
    let out = run_sweep(&path, &dir.path().join("out"));
    let log = text(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0) | Some(1)),
        "{}\n{log}",
        text(&out.stdout)
    );
    let folder = only_results_folder(&dir.path().join("out"));
    let rows = read_rows(&folder.join("results.csv"));
    let steps: Vec<&str> = log
        .lines()
        .filter(|l| l.starts_with("tune: step "))
        .collect();
    eprintln!("{}", steps.join("\n"));
    for r in &rows {
        eprintln!(
            "{}: cache_hit_rate {} of {}, host {}, load-back {}, ttft_ms_p99 {}, verdict {} {}",
            r["run_name"],
            r["cache_hit_rate"],
            r["prefix_reusable_share"],
            r["metrics_host_hit_rate"],
            r["metrics_load_back_tokens"],
            r["ttft_ms_p99"],
            r["verdict"],
            r["verdict_also"]
        );
    }
    assert_eq!(rows.len(), 2, "{rows:?}\n{log}");
    let (start, next) = (&rows[0], &rows[1]);
    assert_eq!(start["run_name"], "hicache-ratio0", "{rows:?}");
    // The evicted prefixes are named; first, or after a queue whose own knobs are not in this
    // space (a busy machine once measured a queue on the running cap: `queue_with_spare_kv`).
    assert!(
        start["verdict"] == "prefix_cache_evicted"
            || start["verdict_also"].contains("prefix_cache_evicted"),
        "{start:?}"
    );
    assert!(
        steps
            .get(1)
            .is_some_and(|l| l.contains("prefix_cache_evicted")
                && l.contains("a host tier for evicted prefixes: hicache_ratio 0 → 8")),
        "{steps:#?}"
    );
    assert_eq!(next["run_name"], "hicache-ratio8", "{rows:?}");
    // Why: host hits up, prefill computed down.
    assert!(num(next, "metrics_host_hit_rate") > 0.1, "{next:?}");
    assert!(num(next, "metrics_load_back_tokens") > 0.0, "{next:?}");
    // The same sessions (seeded) on both: the prompt tokens computed are the share the caches
    // did not serve, so a hit rate 0.2 higher is that much less prefill.
    assert!(
        num(next, "cache_hit_rate") > num(start, "cache_hit_rate") + 0.2,
        "{next:?} against {start:?}"
    );
    assert!(
        start["verdict_evidence"].contains("prefill computed"),
        "{start:?}"
    );
}
