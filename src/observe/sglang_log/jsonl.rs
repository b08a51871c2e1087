//! One JSON object per event line (`sgtune log --events jsonl`).
//!
//! ```json
//! {"line": 77, "kind": "decode", "timestamp": "2026-11-30 15:53:30", "ranks": {"dp": 1, "tp": 1},
//!  "fields": {"running_req": 6, "token": 492, "token_usage": 0.24, "cpu_graph": false,
//!             "gen_throughput_token_s": 317.9, "queue_req": 26}}
//! ```
//!
//! Kinds: `decode`, `prefill`, `retract`, `capacity`, `kv_alloc`, `hicache_alloc`, `ready`,
//! `error`. Every `key: value` (or `key=value`) of the line is kept under a stable snake_case
//! name: lower-case, `#` dropped, any other run of non-alphanumerics → `_`; renamed keys get
//! their current name (`#remaining_req` → `queue_req`, v0.1 `#seq` → `new_seq`). Values are
//! typed: integers, floats, booleans; `12.5%` becomes `<key>_pct: 12.5` and `0.02 GB` becomes
//! `<key>_gb: 0.02`; anything else (`0.1 -> 0.7`, `full=1, swa=2`) stays a string. The first
//! of two equal keys wins.

use serde_json::{Map, Number, Value};

use super::fields::split_fields;
use super::line::LogEvent;
use super::prefix::{Timestamp, parse_prefix_bytes};
use super::scan::{Scanned, scan_with};

/// An event line, ready to be written.
#[derive(Debug, Clone, PartialEq)]
pub struct LineEvent {
    pub kind: &'static str,
    pub ts: Option<Timestamp>,
    pub ranks: Vec<(String, u32)>,
    pub fields: Map<String, Value>,
}

/// `2026-11-30 15:53:30`, `15:53:30` without a date, `.615` when the time has a fraction.
pub fn format_ts(t: &Timestamp) -> String {
    let secs = t.secs_of_day.max(0.0);
    let whole = secs.floor();
    let ms = ((secs - whole) * 1000.0).round() as u64;
    let (whole, ms) = if ms >= 1000 {
        (whole + 1.0, 0)
    } else {
        (whole, ms)
    };
    let w = whole as u64;
    let mut s = String::new();
    if let Some((y, m, d)) = t.date {
        s.push_str(&format!("{y:04}-{m:02}-{d:02} "));
    }
    s.push_str(&format!(
        "{:02}:{:02}:{:02}",
        w / 3600,
        (w / 60) % 60,
        w % 60
    ));
    if ms > 0 {
        s.push_str(&format!(".{ms:03}"));
    }
    s
}

/// Stable snake_case name of a raw key.
pub fn snake_key(k: &str) -> String {
    let mut out = String::with_capacity(k.len());
    let mut gap = false;
    for c in k.chars() {
        if c.is_ascii_alphanumeric() {
            if gap && !out.is_empty() {
                out.push('_');
            }
            gap = false;
            out.push(c.to_ascii_lowercase());
        } else if c != '#' {
            gap = true;
        }
    }
    match out.as_str() {
        "" => "field".to_string(),
        "remaining_req" => "queue_req".to_string(),
        "seq" => "new_seq".to_string(),
        _ => out,
    }
}

fn plain_number(t: &str) -> Option<Value> {
    let digits_only = !t.is_empty()
        && t.bytes().any(|c| c.is_ascii_digit())
        && t.bytes()
            .all(|c| c.is_ascii_digit() || c == b'.' || c == b'-');
    if !digits_only {
        return None;
    }
    if let Ok(i) = t.parse::<i64>() {
        return Some(Value::Number(i.into()));
    }
    if let Ok(u) = t.parse::<u64>() {
        return Some(Value::Number(u.into()));
    }
    t.parse::<f64>()
        .ok()
        .and_then(Number::from_f64)
        .map(Value::Number)
}

/// A key and its value, typed (see the module docs).
pub fn typed_field(key: &str, value: &str) -> (String, Value) {
    let key = snake_key(key);
    let t = value.trim();
    if t.eq_ignore_ascii_case("true") {
        return (key, Value::Bool(true));
    }
    if t.eq_ignore_ascii_case("false") {
        return (key, Value::Bool(false));
    }
    if let Some(n) = plain_number(t) {
        return (key, n);
    }
    if let Some(n) = t.strip_suffix('%').and_then(plain_number) {
        return (format!("{key}_pct"), n);
    }
    // `0.02 GB`, `0.01s`, `488282 tokens`.
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let unit = unit.trim();
    if let Some(n) = plain_number(num) {
        if !unit.is_empty() && unit.len() <= 8 && unit.chars().all(|c| c.is_ascii_alphabetic()) {
            return (format!("{key}_{}", unit.to_ascii_lowercase()), n);
        }
    }
    (key, Value::String(t.to_string()))
}

fn insert(map: &mut Map<String, Value>, key: &str, value: &str) {
    let (k, v) = typed_field(key, value);
    map.entry(k).or_insert(v);
}

/// The event a line is, if it is one of the listed kinds.
pub fn line_event(line: &[u8]) -> Option<LineEvent> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    scan_with(line, |sc| event_of(line, sc))
}

fn event_of(line: &[u8], sc: Scanned<'_>) -> Option<LineEvent> {
    let mut fields = Map::new();
    let (kind, prefix) = match sc {
        Scanned::Stats(s) => {
            s.visit_fields(&mut |k, v| {
                insert(
                    &mut fields,
                    &String::from_utf8_lossy(k),
                    &String::from_utf8_lossy(v),
                );
            });
            let kind = match s.kind {
                super::line::StatsKind::Decode => "decode",
                super::line::StatsKind::Prefill => "prefill",
            };
            (kind, s.prefix)
        }
        Scanned::Event(ev) => {
            let text = String::from_utf8_lossy(line);
            let after = |marker: &str| {
                text.find(marker)
                    .and_then(|p| text.get(p + marker.len()..))
                    .unwrap_or("")
                    .to_string()
            };
            let kind = match ev {
                LogEvent::Ready => "ready",
                LogEvent::Capacity(_) => {
                    let from = text.find("max_total_num_tokens=").unwrap_or(0);
                    for piece in text.get(from..).unwrap_or("").split(',') {
                        if let Some((k, v)) = piece.split_once('=') {
                            insert(&mut fields, k, v);
                        }
                    }
                    "capacity"
                }
                LogEvent::KvAlloc(_) => {
                    for (k, v) in split_fields(&after("KV Cache is allocated")) {
                        insert(&mut fields, &k, &v);
                    }
                    "kv_alloc"
                }
                LogEvent::HiCacheAlloc { gb, .. } => {
                    if let Some(n) = Number::from_f64(gb) {
                        fields.insert("host_gb".into(), Value::Number(n));
                    }
                    let pool = after("host pool:");
                    if let Some(tokens) = pool
                        .split(',')
                        .next()
                        .and_then(|p| p.trim().strip_suffix("tokens"))
                    {
                        insert(&mut fields, "tokens", tokens);
                    }
                    "hicache_alloc"
                }
                LogEvent::Retract(r) => {
                    let rest = ["Retract requests", "out of memory happened"]
                        .iter()
                        .map(|m| after(m))
                        .find(|r| !r.is_empty())
                        .unwrap_or_default();
                    for (k, v) in split_fields(&rest) {
                        insert(&mut fields, &k, &v);
                    }
                    fields
                        .entry("retracted_reqs")
                        .or_insert(Value::Number(r.retracted_reqs.into()));
                    "retract"
                }
                LogEvent::Error(msg) => {
                    fields.insert("message".into(), Value::String(msg));
                    "error"
                }
                _ => return None,
            };
            (kind, parse_prefix_bytes(line))
        }
        Scanned::Skip | Scanned::Nothing => return None,
    };
    Some(LineEvent {
        kind,
        ts: prefix.ts,
        ranks: prefix
            .ranks
            .to_owned_vec()
            .into_iter()
            .map(|(n, r)| (n.to_ascii_lowercase(), r))
            .collect(),
        fields,
    })
}

impl LineEvent {
    /// The JSON object; `line` is 1-based; `file` is added when given (several files).
    pub fn to_json(&self, line: usize, file: Option<&str>) -> Value {
        let mut o = Map::new();
        if let Some(f) = file {
            o.insert("file".into(), Value::String(f.to_string()));
        }
        o.insert("line".into(), Value::Number(line.into()));
        o.insert("kind".into(), Value::String(self.kind.into()));
        o.insert(
            "timestamp".into(),
            self.ts
                .map_or(Value::Null, |t| Value::String(format_ts(&t))),
        );
        let ranks: Map<String, Value> = self
            .ranks
            .iter()
            .map(|(n, r)| (n.clone(), Value::Number((*r).into())))
            .collect();
        o.insert("ranks".into(), Value::Object(ranks));
        o.insert("fields".into(), Value::Object(self.fields.clone()));
        Value::Object(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(l: &str) -> Value {
        line_event(l.as_bytes()).map_or(Value::Null, |e| e.to_json(1, None))
    }

    #[test]
    fn keys_and_values() {
        assert_eq!(snake_key("#running-req"), "running_req");
        assert_eq!(
            snake_key("gen throughput (token/s)"),
            "gen_throughput_token_s"
        );
        assert_eq!(
            snake_key("est. decode TFLOPS/s (per GPU)"),
            "est_decode_tflops_s_per_gpu"
        );
        assert_eq!(snake_key("#remaining_req"), "queue_req");
        assert_eq!(snake_key("#seq"), "new_seq");
        assert_eq!(snake_key("#"), "field");
        assert_eq!(typed_field("x", "12.50%"), ("x_pct".into(), json!(12.5)));
        assert_eq!(
            typed_field("K size", "0.02 GB"),
            ("k_size_gb".into(), json!(0.02))
        );
        assert_eq!(typed_field("t", "0.01s"), ("t_s".into(), json!(0.01)));
        assert_eq!(typed_field("c", "-1"), ("c".into(), json!(-1)));
        assert_eq!(
            typed_field("r", "0.0980 -> 0.7047"),
            ("r".into(), json!("0.0980 -> 0.7047"))
        );
        assert_eq!(typed_field("g", "False"), ("g".into(), json!(false)));
        assert_eq!(
            typed_field("d", "torch.bfloat16"),
            ("d".into(), json!("torch.bfloat16"))
        );
    }

    #[test]
    fn every_kind() {
        assert_eq!(
            ev(
                "[2026-09-24 01:47:50.615 DP3 TP3 EP3] Decode batch, #running-req: 12, #token: 5000, token usage: 0.20, cuda graph: True, gen throughput (token/s): 1500.25, #queue-req: 0, new key: x"
            ),
            json!({"line": 1, "kind": "decode", "timestamp": "2026-09-24 01:47:50.615",
                   "ranks": {"dp": 3, "tp": 3, "ep": 3},
                   "fields": {"running_req": 12, "token": 5000, "token_usage": 0.2, "cuda_graph": true,
                              "gen_throughput_token_s": 1500.25, "queue_req": 0, "new_key": "x"}})
        );
        assert_eq!(
            ev(
                "new fill batch. #seq: 1. #cached_token: 0. #new_token: 11. #remaining_req: 3. #running_req: 2. tree_cache_hit_rate: 12.50%."
            ),
            json!({"line": 1, "kind": "prefill", "timestamp": null, "ranks": {},
                   "fields": {"new_seq": 1, "cached_token": 0, "new_token": 11, "queue_req": 3,
                              "running_req": 2, "tree_cache_hit_rate_pct": 12.5}})
        );
        assert_eq!(
            ev(
                "[2026-11-30 15:53:26] max_total_num_tokens=2048, chunked_prefill_size=4096, max_prefill_tokens=16384, max_running_requests=1024, context_len=4096, available_cpu_mem=20.89 GB"
            )["fields"],
            json!({"max_total_num_tokens": 2048, "chunked_prefill_size": 4096, "max_prefill_tokens": 16384,
                   "max_running_requests": 1024, "context_len": 4096, "available_cpu_mem_gb": 20.89})
        );
        assert_eq!(
            ev(
                "[2026-11-30 15:53:26] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 2048, K size: 0.00 GB, V size: 0.00 GB"
            )["fields"],
            json!({"dtype": "torch.bfloat16", "tokens": 2048, "k_size_gb": 0.0, "v_size_gb": 0.0})
        );
        assert_eq!(
            ev(
                "[2026-11-30 15:45:04] Allocating kv hierarchical KV host pool: 488282 tokens, 1.00 GB host memory."
            )["fields"],
            json!({"host_gb": 1.0, "tokens": 488282})
        );
        assert_eq!(
            ev(
                "[2026-11-30 15:46:11] KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_tokens_gained: 340, #new_token_ratio: 0.0980 -> 0.7047"
            ),
            json!({"line": 1, "kind": "retract", "timestamp": "2026-11-30 15:46:11", "ranks": {},
                   "fields": {"retracted_reqs": 1, "new_tokens_gained": 340, "new_token_ratio": "0.0980 -> 0.7047"}})
        );
        assert_eq!(
            ev("[12:00:00 TP1] Decode out of memory happened")["fields"],
            json!({"retracted_reqs": 1})
        );
        assert_eq!(
            ev("[2026-11-30 15:53:28] The server is fired up and ready to roll!")["kind"],
            json!("ready")
        );
        assert_eq!(
            ev("ValueError: CPU FP8 KV cache requires Intel AMX support.")["fields"],
            json!({"message": "ValueError: CPU FP8 KV cache requires Intel AMX support."})
        );
        assert_eq!(
            ev("[2026-11-30 15:53:28] INFO:     127.0.0.1:1 - \"GET /v1/models HTTP/1.1\" 200 OK"),
            Value::Null
        );
        assert_eq!(
            ev("[2026-11-30 15:44:30] server_args={'model_path': '/m'}"),
            Value::Null
        );
        assert_eq!(
            format_ts(&Timestamp {
                date: None,
                secs_of_day: 45296.9996
            }),
            "12:34:57"
        );
    }
}
