//! The second source for the server's side: the engine's Prometheus `/metrics` (SGLang with
//! `--enable-metrics`; vLLM always), scraped about once a second during the measured window
//! into `metrics.csv`. Counters give throughput as deltas over the window, gauges give running
//! and queued requests; the summary says where each number came from, and the runner notes
//! where it disagrees with the log. Which series mean what is one table per engine
//! ([`SGLANG`], [`VLLM`]); the engine is found from the scrape itself, as `sgtune log` finds
//! it from the log.

use crate::server::control::Control;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// One sample: `name{labels} value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: String,
    pub value: f64,
}

/// Parse the Prometheus text format, keeping the engines' own series (`sglang:` or, re-exported
/// by some gateways, `sglang_`; `vllm:`). Comments and malformed lines are skipped.
pub fn parse(text: &str) -> Vec<Sample> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            if l.is_empty()
                || l.starts_with('#')
                || !(l.starts_with("sglang") || l.starts_with("vllm:"))
            {
                return None;
            }
            let (series, rest) = match l.find('{') {
                Some(open) => {
                    let close = open + l[open..].find('}')?;
                    (&l[..close + 1], l[close + 1..].trim())
                }
                None => l.split_once(' ').map(|(a, b)| (a, b.trim()))?,
            };
            let (name, labels) = match series.find('{') {
                Some(i) => (&series[..i], series[i + 1..series.len() - 1].to_string()),
                None => (series, String::new()),
            };
            let value: f64 = rest.split_whitespace().next()?.parse().ok()?;
            Some(Sample {
                name: name.replace("sglang_", "sglang:").to_string(),
                labels,
                value,
            })
        })
        .collect()
}

/// A scrape: seconds since the window started, and its samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Scrape {
    pub t_s: f64,
    pub samples: Vec<Sample>,
}

fn total(s: &[Sample], name: &str) -> Option<f64> {
    total_where(s, name, "")
}

/// Sum of `name`'s series whose labels hold every pair of `filter` (e.g. `mode="decode"`).
fn total_where(s: &[Sample], name: &str, filter: &str) -> Option<f64> {
    let v: Vec<f64> = s
        .iter()
        .filter(|x| x.name == name && has_labels(&x.labels, filter))
        .map(|x| x.value)
        .collect();
    // Summed over label sets: one series per DP rank.
    (!v.is_empty()).then(|| v.iter().sum())
}

/// The `key="value"` pairs of a label set as the text format writes it, values unescaped
/// (`\"`, `\\`, `\n`). A pair cut off mid-value is dropped.
fn label_pairs(labels: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = labels;
    loop {
        rest = rest.trim_start_matches([',', ' ']);
        let Some((key, after)) = rest.split_once('=') else {
            return out;
        };
        let Some(body) = after.trim_start().strip_prefix('"') else {
            return out;
        };
        let mut value = String::new();
        let mut chars = body.char_indices();
        let mut end = None;
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, e)) => value.push(e),
                    None => return out,
                },
                '"' => {
                    end = Some(i + 1);
                    break;
                }
                c => value.push(c),
            }
        }
        let Some(end) = end else {
            return out;
        };
        out.push((key.trim().to_string(), value));
        rest = body.get(end..).unwrap_or("");
    }
}

/// Whether a series' labels hold every pair of `filter` (a label set in the same text form;
/// empty: any series). Pairs, not substrings: `tp_rank="0"` is not `attn_tp_rank="0"`.
fn has_labels(labels: &str, filter: &str) -> bool {
    if filter.is_empty() {
        return true;
    }
    let have = label_pairs(labels);
    label_pairs(filter).iter().all(|p| have.contains(p))
}

/// Which series of a counter a delta sums.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ranks {
    /// Every series (each DP rank, or each label value, counts its own tokens).
    All,
    /// One TP (and PP) rank per DP rank: SGLang's radix-cache counters (evicted, loaded back,
    /// backed up) are reported by every rank's cache for the same logical tokens, under its
    /// own `tp_rank`/`pp_rank` labels ("read one rank rather than summing ranks").
    First,
}

/// Rank 0 of TP and PP, or no such label.
fn first_rank(labels: &str) -> bool {
    label_pairs(labels)
        .iter()
        .all(|(k, v)| !(k == "tp_rank" || k == "pp_rank") || v == "0")
}

/// Δ of counter `name` between two scrapes, summed over its series (label sets) that hold
/// `filter`'s pairs. Per series: a labelled counter appears in /metrics only at its first
/// increment (with HiCache `sglang:cached_tokens_total{cache_source="host"}` appears at the
/// first host hit), so a series in the last scrape but not the first started in the window
/// from 0; a series that went down restarted, and counts from 0 too (Prometheus' `increase`).
/// None when the last scrape has no such series, or when the first has no engine samples at
/// all (then nothing shows what was counted before the window).
fn counter_delta(
    first: &[Sample],
    last: &[Sample],
    name: &str,
    filter: &str,
    ranks: Ranks,
) -> Option<f64> {
    if first.is_empty() {
        return None;
    }
    let kept = |x: &&Sample| {
        x.name == name
            && has_labels(&x.labels, filter)
            && (ranks == Ranks::All || first_rank(&x.labels))
    };
    let mut seen = false;
    let mut sum = 0.0;
    for end in last.iter().filter(kept) {
        seen = true;
        // The same server writes a series' labels in the same order every time.
        let start = first
            .iter()
            .find(|x| x.name == name && x.labels == end.labels)
            .map_or(0.0, |x| x.value);
        sum += if end.value >= start {
            end.value - start
        } else {
            end.value
        };
    }
    seen.then_some(sum)
}

/// The series an engine exports for each quantity the summary reads.
pub struct Series {
    /// Generated-token counters, best first: (name, label filter). The first one exported
    /// gives `gen_tput_from_counter`.
    pub generation: &'static [(&'static str, &'static str)],
    pub prompt: &'static str,
    pub running: &'static str,
    pub queue: &'static str,
    /// KV pool usage gauges (0-1), by the names of the engine's versions.
    pub usage: &'static [&'static str],
    /// Retraction (vLLM: preemption) counters, by the names of the engine's versions.
    pub retractions: &'static [&'static str],
    /// The prefix-cache hit rate: Δ hits / Δ base, both counters in tokens.
    pub cache_hits: &'static str,
    pub cache_base: &'static str,
}

/// SGLang's series. `sglang:realtime_tokens_total{mode="decode"}` (2026+) is updated at every
/// decode log interval; `sglang:generation_tokens_total` when a request finishes, so only
/// whole requests inside the window count. The prompt tokens include the cached ones.
pub static SGLANG: Series = Series {
    generation: &[
        ("sglang:realtime_tokens_total", "mode=\"decode\""),
        ("sglang:generation_tokens_total", ""),
    ],
    prompt: "sglang:prompt_tokens_total",
    running: "sglang:num_running_reqs",
    queue: "sglang:num_queue_reqs",
    usage: &["sglang:token_usage"],
    retractions: &[
        "sglang:num_retracted_requests_total",
        "sglang:total_retracted_reqs",
    ],
    cache_hits: "sglang:cached_tokens_total",
    cache_base: "sglang:prompt_tokens_total",
};

/// vLLM's series (vllm/v1/metrics/loggers.py). Its generation counter is updated at every
/// engine step; `kv_cache_usage_perc` is a fraction despite its name (V0 called it
/// `gpu_cache_usage_perc`); the prefix cache counts queried and hit tokens.
pub static VLLM: Series = Series {
    generation: &[("vllm:generation_tokens_total", "")],
    prompt: "vllm:prompt_tokens_total",
    running: "vllm:num_requests_running",
    queue: "vllm:num_requests_waiting",
    usage: &["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"],
    retractions: &["vllm:num_preemptions_total"],
    cache_hits: "vllm:prefix_cache_hits_total",
    cache_base: "vllm:prefix_cache_queries_total",
};

/// The engine whose series the scrapes hold: vLLM's when any is `vllm:`, else SGLang's.
pub fn series_of(scrapes: &[Scrape]) -> &'static Series {
    let vllm = scrapes
        .iter()
        .any(|s| s.samples.iter().any(|x| x.name.starts_with("vllm:")));
    if vllm { &VLLM } else { &SGLANG }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MetricsSummary {
    pub scrapes: usize,
    /// Generated tokens/s from a counter's delta over the scrapes; see `gen_tput_source`.
    pub gen_tput_from_counter: Option<f64>,
    /// Which counter (`Series::generation`'s first exported).
    pub gen_tput_source: Option<String>,
    /// Δ prompt tokens / Δt.
    pub prompt_tput_from_counter: Option<f64>,
    /// Mean of the running-requests gauge over the scrapes inside the window.
    pub running_mean: Option<f64>,
    /// Mean of the queued (vLLM: waiting) requests gauge.
    pub queue_mean: Option<f64>,
    /// Max of the KV usage gauge.
    pub token_usage_max: Option<f64>,
    /// Δ of the retraction (vLLM: preemption) counter, when exported.
    pub retractions: Option<f64>,
    /// Prefix-cache hit rate in the window: Δ hits / Δ base (`Series::cache_hits`).
    pub cache_hit_rate: Option<f64>,
    /// The share of the prefilled prompt tokens that HiCache's host tier served: Δ
    /// `host_hit` / Δ all modes of [`PREFILL_BY_TIER`] (SGLang 0.5.23 splits hits by tier only
    /// there; the log's `#cached-token` counts device and host hits together). None where
    /// the series is not exported (older SGLang, vLLM) or nothing was prefilled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_hit_rate: Option<f64>,
    /// The same for the device pool: Δ `device_hit` / Δ all modes of [`PREFILL_BY_TIER`].
    /// With [`Self::host_hit_rate`] it splits the overall hit rate by tier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_hit_rate: Option<f64>,
    /// Tokens HiCache loaded back from the host pool into the device pool in the window
    /// ([`LOAD_BACK`], the KV pool's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_back_tokens: Option<u64>,
    /// Tokens HiCache backed up from the device pool to the host pool ([`BACKUP`], the KV
    /// pool's): under the default write-through policy, every prefix inserted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup_tokens: Option<u64>,
    /// Device KV token slots the radix cache freed by eviction ([`EVICTED`]), whether a host
    /// copy kept them or not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evicted_tokens: Option<u64>,
    /// Max over the scrapes of the host pool's used ÷ total tokens ([`HOST_USED`],
    /// [`HOST_TOTAL`], summed over DP ranks): 1 is a full host tier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_usage_max: Option<f64>,
    /// The host pool's size in tokens, the last scrape's [`HOST_TOTAL`] (summed over DP ranks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_total_tokens: Option<u64>,
}

/// SGLang's prefill tokens by where they came from: `mode` is `input` (computed),
/// `device_hit`, `host_hit` (HiCache's host tier) or `storage_hit` (its L3). Every mode is
/// exported from start-up (pre-seeded at 0), so no series appears mid-window.
pub const PREFILL_BY_TIER: &str = "sglang:prefill_effective_tokens_total";
/// SGLang's HiCache counters (`RadixCacheMetricsCollector`, one series per rank and, for the
/// two with a `pool` label, per host pool: `kv`, `swa`, `mamba`).
pub const LOAD_BACK: &str = "sglang:load_back_tokens_total";
pub const BACKUP: &str = "sglang:hicache_backup_tokens_total";
/// The radix cache's evictions (with or without HiCache).
pub const EVICTED: &str = "sglang:evicted_tokens_total";
/// The KV pool's series of [`LOAD_BACK`] and [`BACKUP`].
const KV_POOL: &str = "pool=\"kv\"";
/// HiCache's host pool gauges (only exported with the hierarchical cache on).
pub const HOST_USED: &str = "sglang:hicache_host_used_tokens";
pub const HOST_TOTAL: &str = "sglang:hicache_host_total_tokens";

pub fn summarize(scrapes: &[Scrape]) -> MetricsSummary {
    let mut m = MetricsSummary {
        scrapes: scrapes.len(),
        ..Default::default()
    };
    let (Some(first), Some(last)) = (scrapes.first(), scrapes.last()) else {
        return m;
    };
    let names = series_of(scrapes);
    let dt = last.t_s - first.t_s;
    let delta_of = |name: &str, label: &str, ranks: Ranks| {
        counter_delta(&first.samples, &last.samples, name, label, ranks)
    };
    let delta_where = |name: &str, label: &str| delta_of(name, label, Ranks::All);
    let delta = |name: &str| delta_where(name, "");
    let rate = |d: Option<f64>| d.filter(|_| dt > 0.0).map(|d| d / dt);
    let tokens = |d: Option<f64>| d.map(|d| d.max(0.0).round() as u64);
    if let Some((name, label)) = names
        .generation
        .iter()
        .find(|(n, l)| delta_where(n, l).is_some())
    {
        m.gen_tput_from_counter = rate(delta_where(name, label));
        m.gen_tput_source = Some(if label.is_empty() {
            name.to_string()
        } else {
            format!("{name}{{{label}}}")
        });
    }
    m.prompt_tput_from_counter = rate(delta(names.prompt));
    let share = |part: Option<f64>, all: Option<f64>| {
        let (part, all) = (part?, all?);
        (all > 0.0).then(|| (part / all).clamp(0.0, 1.0))
    };
    let tier = |mode: &str| delta_where(PREFILL_BY_TIER, &format!("mode=\"{mode}\""));
    let by_tier = delta(PREFILL_BY_TIER);
    m.host_hit_rate = share(tier("host_hit"), by_tier);
    m.device_hit_rate = share(tier("device_hit"), by_tier);
    // Hits over prompt tokens, every label set summed (SGLang splits the hits by
    // `cache_source`: device, host, storage, or `total` where a request has no split). A
    // counter with labels is not exported before its first increment, so a window without a
    // single hit has none: the tiers' counter, exported from start-up, then says how many.
    m.cache_hit_rate = match delta(names.cache_hits) {
        Some(hits) => share(Some(hits), delta(names.cache_base)),
        None if std::ptr::eq(names, &SGLANG) => {
            let hits = by_tier.zip(tier("input")).map(|(all, input)| all - input);
            share(hits, by_tier)
        }
        None => None,
    };
    // These counters appear at their first increment too; where the server shows it counts
    // them (the host pool's gauges: HiCache on; the tiers' counter: a SGLang that has them
    // all), a counter not exported yet has counted nothing.
    let hicache_on = total(&last.samples, HOST_TOTAL).is_some();
    let counts_tiers = by_tier.is_some();
    let counted = |d: Option<f64>, exported: bool| tokens(d.or(exported.then_some(0.0)));
    m.load_back_tokens = counted(delta_of(LOAD_BACK, KV_POOL, Ranks::First), hicache_on);
    m.backup_tokens = counted(delta_of(BACKUP, KV_POOL, Ranks::First), hicache_on);
    m.evicted_tokens = counted(delta_of(EVICTED, "", Ranks::First), counts_tiers);
    m.host_usage_max = scrapes
        .iter()
        .filter_map(|s| share(total(&s.samples, HOST_USED), total(&s.samples, HOST_TOTAL)))
        .reduce(f64::max);
    m.host_total_tokens = tokens(total(&last.samples, HOST_TOTAL));
    // Gauges: the scrapes inside the window (the last one is taken just after it ends).
    let inside = if scrapes.len() > 1 {
        &scrapes[..scrapes.len() - 1]
    } else {
        scrapes
    };
    let mean = |name: &str| -> Option<f64> {
        let v: Vec<f64> = inside
            .iter()
            .filter_map(|s| total(&s.samples, name))
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    m.running_mean = mean(names.running);
    m.queue_mean = mean(names.queue);
    m.token_usage_max = scrapes
        .iter()
        .flat_map(|s| s.samples.iter())
        .filter(|x| names.usage.contains(&x.name.as_str()))
        .map(|x| x.value)
        .reduce(f64::max);
    m.retractions = names.retractions.iter().find_map(|n| delta(n));
    m
}

/// Scrape the server's `/metrics` every `every` while `measuring` is set, until `done`. Stops early,
/// returning nothing, if the first attempt shows no metrics endpoint (server without
/// `--enable-metrics`).
pub async fn scrape_loop(
    control: Control,
    measuring: std::sync::Arc<std::sync::atomic::AtomicBool>,
    done: tokio_util::sync::CancellationToken,
    every: Duration,
) -> Vec<Scrape> {
    use std::sync::atomic::Ordering;
    let mut out = Vec::new();
    let mut t0: Option<Instant> = None;
    let mut tried = false;
    loop {
        if done.is_cancelled() || (t0.is_some() && !measuring.load(Ordering::SeqCst)) {
            break;
        }
        if measuring.load(Ordering::SeqCst) {
            let start = *t0.get_or_insert_with(Instant::now);
            match control.metrics_text().await {
                Some(text) => out.push(Scrape {
                    t_s: start.elapsed().as_secs_f64(),
                    samples: parse(&text),
                }),
                None if !tried => return Vec::new(),
                None => {}
            }
            tried = true;
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = done.cancelled() => {}
        }
    }
    // One last scrape at the window's end, so counter deltas cover all of it (requests that
    // finish at the very end count only there).
    if let (Some(start), true) = (t0, !out.is_empty()) {
        if let Some(text) = control.metrics_text().await {
            out.push(Scrape {
                t_s: start.elapsed().as_secs_f64(),
                samples: parse(&text),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{engine_type="unified",model_name="tiny",tp_rank="0"} 6.0
sglang:num_queue_reqs{engine_type="unified",model_name="tiny",tp_rank="0"} 26.0
sglang:token_usage{model_name="tiny"} 0.88
sglang:generation_tokens_total{model_name="tiny",dp_rank="0"} 1000.0
sglang:generation_tokens_total{model_name="tiny",dp_rank="1"} 500.0
python_gc_objects_collected_total{generation="0"} 123.0
sglang_prompt_tokens_total 64 1700000000
garbage line
"#;

    #[test]
    fn the_host_tiers_share_is_its_delta_over_every_modes() {
        // SGLang 0.5.23's prefill tokens by tier, two scrapes: 600 computed, 100 from the
        // device, 300 from the host in the window; host share 300 / 1000.
        let tiers = |input: f64, device: f64, host: f64| {
            format!(
                "sglang:prefill_effective_tokens_total{{model_name=\"m\",mode=\"input\"}} {input}\nsglang:prefill_effective_tokens_total{{model_name=\"m\",mode=\"device_hit\"}} {device}\nsglang:prefill_effective_tokens_total{{model_name=\"m\",mode=\"host_hit\"}} {host}\nsglang:prefill_effective_tokens_total{{model_name=\"m\",mode=\"storage_hit\"}} 0\n"
            )
        };
        let at = |t_s: f64, text: String| Scrape {
            t_s,
            samples: parse(&text),
        };
        let m = summarize(&[
            at(0.0, tiers(50.0, 10.0, 0.0)),
            at(5.0, tiers(650.0, 110.0, 300.0)),
        ]);
        assert_eq!(m.host_hit_rate, Some(0.3));
        // Nothing prefilled in the window, or no such series: no figure.
        let idle = summarize(&[at(0.0, tiers(1.0, 0.0, 0.0)), at(5.0, tiers(1.0, 0.0, 0.0))]);
        assert_eq!(idle.host_hit_rate, None);
        let none = summarize(&[at(0.0, "sglang:num_running_reqs 1\n".into())]);
        assert_eq!(none.host_hit_rate, None);
    }

    /// One scrape of SGLang 0.5.23 with HiCache on, as its /metrics writes the tier series
    /// (tokenizer counters by `cache_source`, the scheduler's by `mode`, the radix cache's by
    /// rank and pool). `host` None: no host hit yet, so that series is not exported at all.
    fn hicache_scrape(
        t_s: f64,
        prompt: f64,
        device: f64,
        host: Option<f64>,
        load_back: f64,
        host_used: f64,
    ) -> Scrape {
        let mut text = format!(
            "# HELP sglang:prompt_tokens_total Number of prefill tokens processed.\n\
             # TYPE sglang:prompt_tokens_total counter\n\
             sglang:prompt_tokens_total{{is_streaming=\"true\",model_name=\"tiny\"}} {prompt}\n\
             sglang:prompt_tokens_created{{is_streaming=\"true\",model_name=\"tiny\"}} 1.7e9\n\
             sglang:cached_tokens_total{{cache_source=\"device\",model_name=\"tiny\"}} {device}\n\
             sglang:prefill_effective_tokens_total{{engine_type=\"unified\",mode=\"input\",model_name=\"tiny\",pp_rank=\"0\",tp_rank=\"0\"}} {input}\n\
             sglang:prefill_effective_tokens_total{{engine_type=\"unified\",mode=\"device_hit\",model_name=\"tiny\",pp_rank=\"0\",tp_rank=\"0\"}} {device}\n\
             sglang:prefill_effective_tokens_total{{engine_type=\"unified\",mode=\"host_hit\",model_name=\"tiny\",pp_rank=\"0\",tp_rank=\"0\"}} {host_hit}\n\
             sglang:prefill_effective_tokens_total{{engine_type=\"unified\",mode=\"storage_hit\",model_name=\"tiny\",pp_rank=\"0\",tp_rank=\"0\"}} 0.0\n\
             sglang:load_back_tokens_total{{cache_type=\"HiRadixCache\",dp_rank=\"0\",pool=\"kv\",pp_rank=\"0\",tp_rank=\"0\"}} {load_back}\n\
             sglang:hicache_backup_tokens_total{{cache_type=\"HiRadixCache\",dp_rank=\"0\",pool=\"kv\",pp_rank=\"0\",tp_rank=\"0\"}} {backup}\n\
             sglang:evicted_tokens_total{{cache_type=\"HiRadixCache\",dp_rank=\"0\",pp_rank=\"0\",tp_rank=\"0\"}} {evicted}\n\
             sglang:hicache_host_used_tokens{{engine_type=\"unified\",model_name=\"tiny\",pp_rank=\"0\",tp_rank=\"0\"}} {host_used}\n\
             sglang:hicache_host_total_tokens{{engine_type=\"unified\",model_name=\"tiny\",pp_rank=\"0\",tp_rank=\"0\"}} 8800.0\n",
            input = prompt - device - host.unwrap_or(0.0),
            host_hit = host.unwrap_or(0.0),
            backup = prompt,
            evicted = prompt / 2.0,
        );
        if let Some(h) = host {
            text += &format!(
                "sglang:cached_tokens_total{{cache_source=\"host\",model_name=\"tiny\"}} {h}\n"
            );
        }
        Scrape {
            t_s,
            samples: parse(&text),
        }
    }

    /// Issue 50: with HiCache the hits come in two series, and the host one appears at the
    /// first host hit, often inside the window. Each series' delta counts from 0 when it is
    /// absent from the first scrape, and the overall rate sums them.
    #[test]
    fn the_overall_hit_rate_sums_every_labelled_series_one_appearing_mid_window() {
        // Both series in both scrapes: (300 + 200) hits of 1,000 prompt tokens in the window.
        let m = summarize(&[
            hicache_scrape(0.0, 1000.0, 100.0, Some(50.0), 0.0, 0.0),
            hicache_scrape(5.0, 2000.0, 400.0, Some(250.0), 200.0, 4400.0),
        ]);
        assert_eq!(m.cache_hit_rate, Some(0.5));
        // The tiers' shares from the scheduler's counter: 300 and 200 of 1,000.
        assert_eq!(m.device_hit_rate, Some(0.3));
        assert_eq!(m.host_hit_rate, Some(0.2));
        // The host series first appears in the last scrape: its 250 hits are all the window's.
        let m = summarize(&[
            hicache_scrape(0.0, 1000.0, 100.0, None, 0.0, 0.0),
            hicache_scrape(2.0, 2000.0, 400.0, Some(250.0), 250.0, 4400.0),
        ]);
        assert_eq!(m.cache_hit_rate, Some(0.55));
        assert_eq!(m.host_hit_rate, Some(0.25));
        // No hit at all before the window: the whole name is absent from the first scrape.
        let first = Scrape {
            t_s: 0.0,
            samples: parse(
                "sglang:prompt_tokens_total{is_streaming=\"true\",model_name=\"tiny\"} 40\n",
            ),
        };
        let m = summarize(&[
            first,
            hicache_scrape(3.0, 1040.0, 300.0, Some(100.0), 0.0, 0.0),
        ]);
        assert_eq!(m.cache_hit_rate, Some(0.4));
        // Before the fix the absent series made the whole figure empty.
    }

    /// A window without a single hit exports no `cached_tokens_total` series at all (the radix
    /// cache off, say): the tiers' counter, pre-seeded at start-up, says 0 rather than nothing.
    #[test]
    fn no_hit_in_the_window_is_a_hit_rate_of_zero_where_the_tiers_counter_says_so() {
        let scrape = |t_s: f64, input: f64| Scrape {
            t_s,
            samples: parse(&format!(
                "sglang:prompt_tokens_total{{is_streaming=\"true\",model_name=\"tiny\"}} {input}\n\
                 sglang:prefill_effective_tokens_total{{mode=\"input\",model_name=\"tiny\"}} {input}\n\
                 sglang:prefill_effective_tokens_total{{mode=\"device_hit\",model_name=\"tiny\"}} 0\n\
                 sglang:prefill_effective_tokens_total{{mode=\"host_hit\",model_name=\"tiny\"}} 0\n"
            )),
        };
        let m = summarize(&[scrape(0.0, 100.0), scrape(4.0, 900.0)]);
        assert_eq!(m.cache_hit_rate, Some(0.0));
        assert_eq!(m.device_hit_rate, Some(0.0));
        // Without that counter (an older SGLang) nothing says how many: no figure.
        let old = |t_s: f64, p: f64| Scrape {
            t_s,
            samples: parse(&format!("sglang:prompt_tokens_total {p}\n")),
        };
        assert_eq!(
            summarize(&[old(0.0, 100.0), old(4.0, 900.0)]).cache_hit_rate,
            None
        );
    }

    #[test]
    fn the_host_tiers_counters_and_pool() {
        let m = summarize(&[
            hicache_scrape(0.0, 1000.0, 100.0, Some(50.0), 30.0, 2200.0),
            hicache_scrape(1.0, 1500.0, 200.0, Some(80.0), 60.0, 8800.0),
            hicache_scrape(2.0, 2000.0, 400.0, Some(250.0), 230.0, 6600.0),
        ]);
        assert_eq!(m.load_back_tokens, Some(200));
        assert_eq!(m.backup_tokens, Some(1000));
        assert_eq!(m.evicted_tokens, Some(500));
        // The fullest scrape: 8,800 of 8,800.
        assert_eq!(m.host_usage_max, Some(1.0));
        assert_eq!(m.host_total_tokens, Some(8800));
        // Without HiCache none of them is exported: no figures, not zeros.
        let plain = |t_s: f64| Scrape {
            t_s,
            samples: parse("sglang:num_running_reqs 1\n"),
        };
        let m = summarize(&[plain(0.0), plain(1.0)]);
        assert_eq!(
            (m.load_back_tokens, m.backup_tokens, m.evicted_tokens),
            (None, None, None)
        );
        assert_eq!(m.host_usage_max, None);
        // HiCache on (its pool's gauges) before any load-back or eviction: the counters are
        // not exported yet, and have counted nothing.
        let quiet = |t_s: f64| Scrape {
            t_s,
            samples: parse(
                "sglang:hicache_host_used_tokens{tp_rank=\"0\"} 0\n\
                 sglang:hicache_host_total_tokens{tp_rank=\"0\"} 8800\n\
                 sglang:prefill_effective_tokens_total{mode=\"input\"} 10\n",
            ),
        };
        let m = summarize(&[quiet(0.0), quiet(1.0)]);
        assert_eq!(
            (m.load_back_tokens, m.backup_tokens, m.evicted_tokens),
            (Some(0), Some(0), Some(0))
        );
        assert_eq!(m.host_usage_max, Some(0.0));
    }

    /// SGLang's radix-cache counters are reported by every TP rank for the same logical
    /// tokens; DP ranks have caches of their own. One TP rank per DP rank is summed.
    #[test]
    fn the_radix_cache_counters_count_one_tp_rank_per_dp_rank() {
        let scrape = |t_s: f64, n: f64| {
            let mut text = String::new();
            for dp in 0..2 {
                for tp in 0..2 {
                    text += &format!(
                        "sglang:load_back_tokens_total{{cache_type=\"HiRadixCache\",dp_rank=\"{dp}\",pool=\"kv\",pp_rank=\"0\",tp_rank=\"{tp}\"}} {}\n\
                         sglang:load_back_tokens_total{{cache_type=\"HiRadixCache\",dp_rank=\"{dp}\",pool=\"mamba\",pp_rank=\"0\",tp_rank=\"{tp}\"}} 999\n\
                         sglang:evicted_tokens_total{{cache_type=\"HiRadixCache\",dp_rank=\"{dp}\",pp_rank=\"0\",tp_rank=\"{tp}\"}} {}\n",
                        n * (dp + 1) as f64,
                        2.0 * n * (dp + 1) as f64,
                    );
                }
            }
            Scrape {
                t_s,
                samples: parse(&text),
            }
        };
        let m = summarize(&[scrape(0.0, 10.0), scrape(1.0, 110.0)]);
        // DP 0 loaded back 100, DP 1 200; the TP 1 copies and the mamba pool left out.
        assert_eq!(m.load_back_tokens, Some(300));
        assert_eq!(m.evicted_tokens, Some(600));
    }

    #[test]
    fn counter_deltas_per_series() {
        let s = |text: &str| parse(text);
        let first = s("sglang:x_total{a=\"1\"} 10\nsglang:x_total{a=\"2\"} 50\n");
        // a=2 restarted (went down): counts from 0, as Prometheus' increase does; a=3 is new.
        let last =
            s("sglang:x_total{a=\"1\"} 15\nsglang:x_total{a=\"2\"} 7\nsglang:x_total{a=\"3\"} 4\n");
        assert_eq!(
            counter_delta(&first, &last, "sglang:x_total", "", Ranks::All),
            Some(16.0)
        );
        assert_eq!(
            counter_delta(&first, &last, "sglang:x_total", "a=\"3\"", Ranks::All),
            Some(4.0)
        );
        // No such series at the end, or no baseline at all: no figure.
        assert_eq!(
            counter_delta(&first, &last, "sglang:y_total", "", Ranks::All),
            None
        );
        assert_eq!(
            counter_delta(&[], &last, "sglang:x_total", "", Ranks::All),
            None
        );
    }

    #[test]
    fn labels_are_matched_as_pairs() {
        assert_eq!(
            label_pairs(r#"a="1",b="x\"y,z",c="back\\slash""#),
            vec![
                ("a".to_string(), "1".to_string()),
                ("b".to_string(), "x\"y,z".to_string()),
                ("c".to_string(), "back\\slash".to_string()),
            ]
        );
        // A trailing comma is allowed; a value cut off is dropped.
        assert_eq!(label_pairs(r#"a="1","#).len(), 1);
        assert_eq!(label_pairs(r#"a="1",b="cut"#).len(), 1);
        assert!(has_labels(
            r#"attn_tp_rank="1",tp_rank="0""#,
            r#"tp_rank="0""#
        ));
        assert!(!has_labels(
            r#"attn_tp_rank="0",tp_rank="1""#,
            r#"tp_rank="0""#
        ));
        assert!(has_labels("", ""));
        assert!(first_rank(r#"dp_rank="3",tp_rank="0""#));
        assert!(!first_rank(r#"dp_rank="0",pp_rank="1",tp_rank="0""#));
        assert!(first_rank(r#"model_name="tiny""#));
    }

    #[test]
    fn parses_sglang_series_only() {
        let s = parse(TEXT);
        assert_eq!(s.len(), 6, "{s:?}");
        assert_eq!(s[0].name, "sglang:num_running_reqs");
        assert_eq!(s[0].value, 6.0);
        assert!(s[0].labels.contains("model_name=\"tiny\""));
        assert_eq!(
            s[5].name, "sglang:prompt_tokens_total",
            "gateway re-export normalised"
        );
        assert_eq!(s[5].value, 64.0);
    }

    #[test]
    fn counter_deltas_and_gauge_means() {
        let later = TEXT
            .replace("} 1000.0", "} 3000.0")
            .replace("} 500.0", "} 1500.0")
            .replace("} 6.0", "} 4.0");
        let scrapes = vec![
            Scrape {
                t_s: 0.0,
                samples: parse(TEXT),
            },
            Scrape {
                t_s: 2.0,
                samples: parse(&later),
            },
        ];
        let m = summarize(&scrapes);
        // (3000 + 1500) - (1000 + 500) over 2 s, summed over DP ranks.
        assert_eq!(m.gen_tput_from_counter, Some(1500.0));
        assert_eq!(
            m.gen_tput_source.as_deref(),
            Some("sglang:generation_tokens_total")
        );
        // The 2026 decode counter wins when exported.
        let rt = |v: f64| {
            format!(
                "sglang:realtime_tokens_total{{mode=\"decode\",tp_rank=\"0\"}} {v}\nsglang:realtime_tokens_total{{mode=\"prefill_compute\"}} 999\n"
            )
        };
        let m = summarize(&[
            Scrape {
                t_s: 0.0,
                samples: parse(&(TEXT.to_string() + &rt(100.0))),
            },
            Scrape {
                t_s: 4.0,
                samples: parse(&(later.clone() + &rt(4100.0))),
            },
        ]);
        assert_eq!(m.gen_tput_from_counter, Some(1000.0));
        assert!(
            m.gen_tput_source
                .as_deref()
                .is_some_and(|s| s.contains("realtime"))
        );
        assert_eq!(
            m.running_mean,
            Some(6.0),
            "the closing scrape is not in the gauge means"
        );
        assert_eq!(m.queue_mean, Some(26.0));
        // The cache-hit rate: cached over prompt tokens, both as deltas over the window.
        let hits = |c: f64, p: f64| {
            format!("sglang:cached_tokens_total {c}\nsglang:prompt_tokens_total {p}\n")
        };
        let hit = summarize(&[
            Scrape {
                t_s: 0.0,
                samples: parse(&hits(100.0, 1000.0)),
            },
            Scrape {
                t_s: 3.0,
                samples: parse(&hits(400.0, 2000.0)),
            },
        ]);
        assert_eq!(hit.cache_hit_rate, Some(0.3));
        assert_eq!(m.token_usage_max, Some(0.88));
        assert_eq!(summarize(&[]).gen_tput_from_counter, None);
    }

    /// vLLM 0.x's V1 series (names as vllm/v1/metrics/loggers.py registers them; `_created`
    /// companions and other series ignored).
    fn vllm(g: f64, running: f64, usage: f64, hits: f64, queries: f64, preempt: f64) -> String {
        format!(
            "# HELP vllm:num_requests_running Number of requests in model execution batches.\n\
             # TYPE vllm:num_requests_running gauge\n\
             vllm:num_requests_running{{engine=\"0\",model_name=\"tiny\"}} {running}\n\
             vllm:num_requests_waiting{{engine=\"0\",model_name=\"tiny\"}} 3.0\n\
             vllm:kv_cache_usage_perc{{engine=\"0\",model_name=\"tiny\"}} {usage}\n\
             vllm:prefix_cache_queries_total{{engine=\"0\",model_name=\"tiny\"}} {queries}\n\
             vllm:prefix_cache_hits_total{{engine=\"0\",model_name=\"tiny\"}} {hits}\n\
             vllm:num_preemptions_total{{engine=\"0\",model_name=\"tiny\"}} {preempt}\n\
             vllm:prompt_tokens_total{{engine=\"0\",model_name=\"tiny\"}} {queries}\n\
             vllm:generation_tokens_total{{engine=\"0\",model_name=\"tiny\"}} {g}\n\
             vllm:generation_tokens_created{{engine=\"0\",model_name=\"tiny\"}} 1.7e9\n\
             process_cpu_seconds_total 12.0\n"
        )
    }

    #[test]
    fn vllm_series_fill_the_same_summary() {
        let scrapes = [
            Scrape {
                t_s: 0.0,
                samples: parse(&vllm(1000.0, 16.0, 0.5, 100.0, 1000.0, 2.0)),
            },
            Scrape {
                t_s: 1.0,
                samples: parse(&vllm(2000.0, 8.0, 0.9, 160.0, 1200.0, 2.0)),
            },
            Scrape {
                t_s: 2.0,
                samples: parse(&vllm(3000.0, 0.0, 0.1, 400.0, 2000.0, 5.0)),
            },
        ];
        assert_eq!(series_of(&scrapes).running, "vllm:num_requests_running");
        let m = summarize(&scrapes);
        assert_eq!(m.gen_tput_from_counter, Some(1000.0));
        assert_eq!(
            m.gen_tput_source.as_deref(),
            Some("vllm:generation_tokens_total")
        );
        assert_eq!(m.prompt_tput_from_counter, Some(500.0));
        // Gauges over the scrapes inside the window: 16 and 8, not the closing 0.
        assert_eq!(m.running_mean, Some(12.0));
        assert_eq!(m.queue_mean, Some(3.0));
        assert_eq!(m.token_usage_max, Some(0.9));
        assert_eq!(m.retractions, Some(3.0));
        // (400 - 100) hit tokens of (2000 - 1000) queried.
        assert_eq!(m.cache_hit_rate, Some(0.3));
        // V0's usage gauge name is read too.
        let v0 = parse("vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.42\n");
        let m = summarize(&[Scrape {
            t_s: 0.0,
            samples: v0,
        }]);
        assert_eq!(m.token_usage_max, Some(0.42));
        // An SGLang scrape is not read with vLLM's names.
        assert!(std::ptr::eq(
            series_of(&[Scrape {
                t_s: 0.0,
                samples: parse(TEXT)
            }]),
            &SGLANG
        ));
    }
}
