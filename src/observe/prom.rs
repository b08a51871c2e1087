//! The second source for the server's side: SGLang's Prometheus `/metrics` (with
//! `--enable-metrics`), scraped about once a second during the measured window into
//! `metrics.csv`. Counters give throughput as deltas over the window, gauges give running and
//! queued requests; the summary says where each number came from, and the runner notes where
//! it disagrees with the log.

use crate::server::control::Control;
use serde::Serialize;
use std::time::{Duration, Instant};

/// One sample: `name{labels} value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: String,
    pub value: f64,
}

/// Parse the Prometheus text format, keeping SGLang's own series (`sglang:` or, re-exported by
/// some gateways, `sglang_`). Comments and malformed lines are skipped.
pub fn parse(text: &str) -> Vec<Sample> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            if l.is_empty() || l.starts_with('#') || !l.starts_with("sglang") {
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
#[derive(Debug, Clone)]
pub struct Scrape {
    pub t_s: f64,
    pub samples: Vec<Sample>,
}

fn total(s: &[Sample], name: &str) -> Option<f64> {
    total_where(s, name, "")
}

/// Sum of `name`'s series whose labels contain `label` (e.g. `mode="decode"`).
fn total_where(s: &[Sample], name: &str, label: &str) -> Option<f64> {
    let v: Vec<f64> = s
        .iter()
        .filter(|x| x.name == name && x.labels.contains(label))
        .map(|x| x.value)
        .collect();
    // Summed over label sets: one series per DP rank.
    (!v.is_empty()).then(|| v.iter().sum())
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MetricsSummary {
    pub scrapes: usize,
    /// Generated tokens/s from a counter's delta over the scrapes; see `gen_tput_source`.
    pub gen_tput_from_counter: Option<f64>,
    /// Which counter: `sglang:realtime_tokens_total{mode="decode"}` (updated at every decode
    /// log interval, 2026+) when exported, else `sglang:generation_tokens_total` (counted
    /// when a request finishes, so only whole requests inside the window count).
    pub gen_tput_source: Option<String>,
    /// Δ sglang:prompt_tokens_total / Δt.
    pub prompt_tput_from_counter: Option<f64>,
    /// Mean of sglang:num_running_reqs over the scrapes inside the window.
    pub running_mean: Option<f64>,
    /// Mean of sglang:num_queue_reqs.
    pub queue_mean: Option<f64>,
    /// Max of sglang:token_usage.
    pub token_usage_max: Option<f64>,
    /// Δ sglang:num_retracted_requests_total (or total_retracted_reqs), when exported.
    pub retractions: Option<f64>,
    /// Prefix-cache hit rate in the window: Δ sglang:cached_tokens_total /
    /// Δ sglang:prompt_tokens_total (prompt tokens include the cached ones).
    pub cache_hit_rate: Option<f64>,
}

pub fn summarize(scrapes: &[Scrape]) -> MetricsSummary {
    let mut m = MetricsSummary {
        scrapes: scrapes.len(),
        ..Default::default()
    };
    let (Some(first), Some(last)) = (scrapes.first(), scrapes.last()) else {
        return m;
    };
    let dt = last.t_s - first.t_s;
    let rate = |name: &str| -> Option<f64> {
        let (a, b) = (total(&first.samples, name)?, total(&last.samples, name)?);
        (dt > 0.0).then(|| (b - a) / dt)
    };
    let decode = |s: &[Sample]| total_where(s, "sglang:realtime_tokens_total", "mode=\"decode\"");
    if let (Some(a), Some(b)) = (decode(&first.samples), decode(&last.samples)) {
        m.gen_tput_from_counter = (dt > 0.0).then(|| (b - a) / dt);
        m.gen_tput_source = Some("sglang:realtime_tokens_total{mode=\"decode\"}".into());
    } else {
        m.gen_tput_from_counter = rate("sglang:generation_tokens_total");
        m.gen_tput_source = m
            .gen_tput_from_counter
            .map(|_| "sglang:generation_tokens_total".into());
    }
    m.prompt_tput_from_counter = rate("sglang:prompt_tokens_total");
    let delta = |name: &str| Some(total(&last.samples, name)? - total(&first.samples, name)?);
    if let (Some(c), Some(p)) = (
        delta("sglang:cached_tokens_total"),
        delta("sglang:prompt_tokens_total"),
    ) {
        m.cache_hit_rate = (p > 0.0).then(|| (c / p).clamp(0.0, 1.0));
    }
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
    m.running_mean = mean("sglang:num_running_reqs");
    m.queue_mean = mean("sglang:num_queue_reqs");
    m.token_usage_max = scrapes
        .iter()
        .filter_map(|s| {
            s.samples
                .iter()
                .filter(|x| x.name == "sglang:token_usage")
                .map(|x| x.value)
                .reduce(f64::max)
        })
        .reduce(f64::max);
    for name in [
        "sglang:num_retracted_requests_total",
        "sglang:total_retracted_reqs",
    ] {
        if let (Some(a), Some(b)) = (total(&first.samples, name), total(&last.samples, name)) {
            m.retractions = Some(b - a);
            break;
        }
    }
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
}
