//! Trace files for `sessions: {from_trace: FILE, format: ...}` (issue 43), parsed strictly and
//! built into prompts, as pure functions: the file is read once before launch
//! (`dataset::load_for`), and a bad record is an error naming the file, the record and the
//! field, never a skipped line.
//!
//! - **agentic**: the JSON SGLang's bench_serving reads with `--dataset-name agentic-trace`
//!   (sglang `python/sglang/benchmark/datasets/agentic_trace.py`): `{"conversations": [[turn,
//!   ...], ...]}`, each turn `{"messages": [...], "prompt_tokens": N?}` whose `messages` are
//!   only that turn's new non-assistant messages (user, tool, system). bench_serving skips a
//!   turn without messages and an empty conversation; sgtune refuses them, since a trace that
//!   silently loses turns measures a different workload than the one named.
//! - **mooncake**: JSONL records `{"timestamp": ms, "input_length": n, "output_length": m,
//!   "hash_ids": [...]}`; equal hash ids at the same place stand for equal blocks of
//!   `block_tokens` prompt tokens. bench_serving (`datasets/mooncake.py`) sorts the records by
//!   timestamp and writes each hash id as a word into a text prompt; sgtune builds token-id
//!   blocks of the trace's real lengths, so the prefix cache sees the reuse the trace has, and
//!   refuses records out of time order (a trace out of order is a concatenation gone wrong, and
//!   "earlier record", which the reusable share counts, must mean the same thing to the file
//!   and to the replay).

use super::prompts;
use serde_json::Value;
use std::collections::HashMap;

/// Mixed into the seed of mooncake blocks, so they never draw another workload's streams.
const BLOCK_SALT: u64 = 0x4D00_C4CE;

/// One mooncake record, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct MooncakeRecord {
    /// Arrival, milliseconds after the trace's first record.
    pub at_ms: f64,
    pub input: u64,
    pub output: u64,
    pub hash_ids: Vec<u64>,
    /// Prompt tokens an earlier record already sent: the blocks this one shares with an
    /// earlier record's prefix, token by token (`count_reuse`). Exact, since sgtune builds
    /// the prompts.
    pub reusable: u64,
}

/// An agentic conversation: per turn, the new messages (JSON objects as the file has them).
pub type AgenticConversation = Vec<Vec<Value>>;

const AGENTIC_SHAPE: &str = "expected bench_serving's agentic-trace shape: {\"conversations\": [[{\"messages\": [{\"role\": \"user\", \"content\": \"...\"}]}, ...], ...]}";

/// One message of a turn: a JSON object with a `role` of user, tool or system and a
/// `content` (text, or a list of content parts). Err: what is wrong.
fn check_message(m: &Value) -> Result<(), String> {
    let role = m
        .get("role")
        .and_then(Value::as_str)
        .ok_or("has no text `role`")?;
    match role {
        "user" | "tool" | "system" => {}
        "assistant" => {
            return Err("is an assistant message: a turn holds only the new non-assistant messages (user, tool, system); the server's own reply takes the assistant's place".into());
        }
        other => {
            return Err(format!(
                "has the unknown role `{other}` (expected user, tool or system)"
            ));
        }
    }
    match m.get("content") {
        Some(Value::String(_) | Value::Array(_)) => Ok(()),
        _ => Err("has no `content` (text or a list of content parts)".into()),
    }
}

/// bench_serving's agentic-trace JSON, every conversation and turn checked.
pub fn parse_agentic(text: &str, origin: &str) -> Result<Vec<AgenticConversation>, String> {
    let v: Value =
        serde_json::from_str(text).map_err(|e| format!("{origin}: not valid JSON ({e})"))?;
    let convs = v
        .get("conversations")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{origin}: no `conversations` list; {AGENTIC_SHAPE}"))?;
    if convs.is_empty() {
        return Err(format!("{origin}: `conversations` is empty"));
    }
    let mut out = Vec::with_capacity(convs.len());
    for (i, c) in convs.iter().enumerate() {
        let at = format!("{origin}: conversation {}", i + 1);
        let turns = c
            .as_array()
            .ok_or_else(|| format!("{at}: not a list of turns; {AGENTIC_SHAPE}"))?;
        if turns.is_empty() {
            return Err(format!(
                "{at} is an empty conversation: give it at least one turn, or remove it"
            ));
        }
        let mut conv = Vec::with_capacity(turns.len());
        for (j, t) in turns.iter().enumerate() {
            let at = format!("{at}, turn {}", j + 1);
            let msgs = t
                .get("messages")
                .and_then(Value::as_array)
                .filter(|m| !m.is_empty())
                .ok_or_else(|| {
                    format!("{at} has no `messages`: every turn needs its new messages (user, tool or system), or remove the turn")
                })?;
            for (k, m) in msgs.iter().enumerate() {
                check_message(m).map_err(|e| format!("{at}, message {} {e}", k + 1))?;
            }
            conv.push(msgs.clone());
        }
        out.push(conv);
    }
    Ok(out)
}

/// A record's field as a non-negative integer (a timestamp may be fractional).
fn field_u64(v: &Value, key: &str) -> Result<u64, String> {
    match v.get(key) {
        None => Err(format!("has no `{key}`")),
        Some(x) => x
            .as_u64()
            .ok_or_else(|| format!("`{key}` must be a whole number >= 0, got {x}")),
    }
}

/// Mooncake's JSONL, every record checked (`block_tokens`: tokens per hash block), with
/// each record's reusable tokens counted (`count_reuse`).
pub fn parse_mooncake(
    text: &str,
    origin: &str,
    block_tokens: u64,
) -> Result<Vec<MooncakeRecord>, String> {
    let block = block_tokens.max(1);
    let mut out: Vec<MooncakeRecord> = Vec::new();
    let (mut first_ms, mut prev) = (None, None::<(f64, usize)>);
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let at = format!("{origin}:{}: record {}", i + 1, out.len() + 1);
        let v: Value =
            serde_json::from_str(line).map_err(|e| format!("{at}: not a JSON object ({e})"))?;
        let ts = match v.get("timestamp") {
            None => Err("has no `timestamp` (milliseconds)".to_string()),
            Some(x) => x
                .as_f64()
                .filter(|t| t.is_finite() && *t >= 0.0)
                .ok_or_else(|| format!("`timestamp` must be milliseconds >= 0, got {x}")),
        }
        .map_err(|e| format!("{at} {e}"))?;
        let input = field_u64(&v, "input_length").map_err(|e| format!("{at} {e}"))?;
        let output = field_u64(&v, "output_length").map_err(|e| format!("{at} {e}"))?;
        if input == 0 || output == 0 {
            return Err(format!(
                "{at}: `input_length` and `output_length` must be >= 1 (got {input} and {output})"
            ));
        }
        let ids = v
            .get("hash_ids")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("{at} has no `hash_ids` list (the prompt's block hashes)"))?;
        let hash_ids = ids
            .iter()
            .map(|h| {
                h.as_u64()
                    .ok_or_else(|| format!("{at}: `hash_ids` holds {h}, not a whole number"))
            })
            .collect::<Result<Vec<u64>, String>>()?;
        let n = hash_ids.len() as u64;
        // Every block but the last is whole: fewer tokens than that means the block size is
        // not the trace's.
        if n > 0 && input <= (n - 1) * block {
            return Err(format!(
                "{at}: `input_length` {input} is shorter than its {n} hash blocks imply (more than {} tokens at {block} per block): set `sessions.block_tokens` to the trace's block size (mooncake's traces use 512)",
                (n - 1) * block
            ));
        }
        if let Some((p, line)) = prev {
            if ts < p {
                return Err(format!(
                    "{at}: `timestamp` {ts} is earlier than line {line}'s {p}: the records must be in time order (sort the file, e.g. `jq -s -c 'sort_by(.timestamp)[]'`)"
                ));
            }
        }
        prev = Some((ts, i + 1));
        let first = *first_ms.get_or_insert(ts);
        out.push(MooncakeRecord {
            at_ms: ts - first,
            input,
            output,
            hash_ids,
            reusable: 0,
        });
    }
    if out.is_empty() {
        return Err(format!(
            "{origin}: no records found (expected JSONL lines with `timestamp`, `input_length`, `output_length`, `hash_ids`)"
        ));
    }
    count_reuse(&mut out, block);
    Ok(out)
}

/// Tokens of block `j` of a record of `input` tokens (the last block may be partial; past the
/// blocks, 0).
fn block_len(input: u64, block: u64, j: u64) -> u64 {
    input.saturating_sub(j * block).min(block)
}

/// Each record's reusable tokens, in trace order: the tokens of its prompt that an earlier
/// record's prompt already holds at the same place after the same blocks. Equal hash ids
/// under equal earlier blocks are equal tokens (`mooncake_prompt`), and a partial block is
/// the start of the whole one, so the count is per token: a block is reused up to the
/// longest of it an earlier record sent, and the match stops at the first block not wholly
/// reused (a prefix cache matches a prefix). Tokens past the blocks are the record's own.
pub fn count_reuse(records: &mut [MooncakeRecord], block_tokens: u64) {
    let block = block_tokens.max(1);
    // (parent node, hash id) -> (node, the most of that block any record has sent).
    let mut trie: HashMap<(usize, u64), (usize, u64)> = HashMap::new();
    for r in records.iter_mut() {
        let (mut node, mut reused, mut matching) = (0usize, 0u64, true);
        for (j, &id) in r.hash_ids.iter().enumerate() {
            let len = block_len(r.input, block, j as u64);
            let next_id = trie.len() + 1;
            let entry = trie.entry((node, id));
            let seen = match &entry {
                std::collections::hash_map::Entry::Occupied(e) => Some(e.get().1),
                std::collections::hash_map::Entry::Vacant(_) => None,
            };
            let slot = entry.or_insert((next_id, 0));
            if matching {
                match seen {
                    Some(s) => {
                        reused += len.min(s);
                        matching = s >= len;
                    }
                    None => matching = false,
                }
            }
            slot.1 = slot.1.max(len);
            node = slot.0;
        }
        r.reusable = reused;
    }
}

/// Record `index`'s prompt as token ids: block j is seeded by its hash id and the hash ids
/// before it (so equal ids after equal blocks give equal tokens, whichever record sends them),
/// in `stream` (the measured and warmup phases get different blocks, so a warmup leaves
/// nothing in the cache the measurement reuses); tokens past the blocks are the record's own.
pub fn mooncake_prompt(
    r: &MooncakeRecord,
    seed: u64,
    stream: u64,
    block_tokens: u64,
    index: u64,
    vocab: u64,
) -> Vec<u64> {
    let block = block_tokens.max(1);
    let vocab = vocab.max(1);
    let mut ids = Vec::with_capacity(usize::try_from(r.input).unwrap_or(0));
    let mut chain = prompts::measurement_seed(seed, &[BLOCK_SALT, stream]);
    for (j, &h) in r.hash_ids.iter().enumerate() {
        // The block's seed is its whole prefix of hash ids, as a prefix cache keys it.
        chain = prompts::measurement_seed(chain, &[h]);
        let len = block_len(r.input, block, j as u64);
        ids.extend(prompts::token_ids(chain, 0, 0, len, vocab));
    }
    let covered = r.hash_ids.len() as u64 * block;
    if r.input > covered {
        let tail_seed = prompts::measurement_seed(seed, &[BLOCK_SALT, stream, u64::MAX]);
        ids.extend(prompts::token_ids(
            tail_seed,
            1,
            index,
            r.input - covered,
            vocab,
        ));
    }
    ids
}

/// A trace's shape for `validate`: records, tokens, the time it spans and the reusable share.
#[derive(Debug, Clone, PartialEq)]
pub struct MooncakeShape {
    pub records: usize,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub reusable_tokens: u64,
    /// The last record's arrival, seconds after the first (unscaled).
    pub span_s: f64,
}

pub fn mooncake_shape(records: &[MooncakeRecord]) -> MooncakeShape {
    MooncakeShape {
        records: records.len(),
        input_tokens: records.iter().map(|r| r.input).sum(),
        output_tokens: records.iter().map(|r| r.output).sum(),
        reusable_tokens: records.iter().map(|r| r.reusable).sum(),
        span_s: records.last().map_or(0.0, |r| r.at_ms / 1000.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(ts: u64, input: u64, ids: &[u64]) -> String {
        format!(
            "{{\"timestamp\": {ts}, \"input_length\": {input}, \"output_length\": 3, \"hash_ids\": {ids:?}}}"
        )
    }

    #[test]
    fn mooncake_records_parse_and_their_reuse_is_counted_per_token() {
        // Blocks of 4: A=[1,2] (8 tokens), B=[1,2,3] (11: two whole blocks shared),
        // C=[1,5] (6: block 1 shared), D=[9] (3: new), E=[1,2] (5: block 1 whole, then 1 of
        // block 2's 4 tokens), plus a tail: F=[1] with 10 tokens (4 shared, 6 its own).
        let text = [
            rec(1000, 8, &[1, 2]),
            rec(1000, 11, &[1, 2, 3]),
            String::new(),
            rec(1500, 6, &[1, 5]),
            rec(2000, 3, &[9]),
            rec(2500, 5, &[1, 2]),
            rec(3000, 10, &[1]),
        ]
        .join("\n");
        let r = parse_mooncake(&text, "t.jsonl", 4).expect("valid");
        let got: Vec<(f64, u64)> = r.iter().map(|r| (r.at_ms, r.reusable)).collect();
        assert_eq!(
            got,
            vec![
                (0.0, 0),
                (0.0, 8),
                (500.0, 4),
                (1000.0, 0),
                (1500.0, 5),
                (2000.0, 4)
            ]
        );
        let s = mooncake_shape(&r);
        assert_eq!(
            (s.records, s.input_tokens, s.reusable_tokens, s.span_s),
            (6, 43, 21, 2.0)
        );
    }

    #[test]
    fn equal_hash_ids_give_equal_token_blocks_and_the_rest_differs() {
        let r = parse_mooncake(
            &[
                rec(0, 8, &[1, 2]),
                rec(1, 7, &[1, 3]),
                rec(2, 6, &[2]),
                rec(3, 10, &[1]),
            ]
            .join("\n"),
            "t",
            4,
        )
        .expect("valid");
        let p: Vec<Vec<u64>> = r
            .iter()
            .enumerate()
            .map(|(i, x)| mooncake_prompt(x, 7, 0, 4, i as u64, 1000))
            .collect();
        assert_eq!(
            p.iter().map(Vec::len).collect::<Vec<_>>(),
            vec![8, 7, 6, 10]
        );
        assert_eq!(p[0][..4], p[1][..4], "hash 1 first: the same block");
        assert_ne!(p[0][4..7], p[1][4..7], "hash 2 and hash 3 differ");
        assert_ne!(
            p[2][..4],
            p[0][4..],
            "hash 2 first is not hash 2 after hash 1"
        );
        assert_eq!(p[3][..4], p[0][..4]);
        // Deterministic for a seed; the warmup's stream and another seed give other blocks.
        assert_eq!(mooncake_prompt(&r[0], 7, 0, 4, 0, 1000), p[0]);
        assert_ne!(mooncake_prompt(&r[0], 7, 1, 4, 0, 1000), p[0]);
        assert_ne!(mooncake_prompt(&r[0], 8, 0, 4, 0, 1000), p[0]);
    }

    #[test]
    fn bad_mooncake_records_are_refused_naming_the_line_and_field() {
        let cases = [
            ("not json".to_string(), "t:1: record 1: not a JSON object"),
            (
                "{\"input_length\": 3, \"output_length\": 1, \"hash_ids\": []}".into(),
                "t:1: record 1 has no `timestamp`",
            ),
            (
                format!(
                    "{}\n{{\"timestamp\": 5, \"output_length\": 1, \"hash_ids\": []}}",
                    rec(0, 3, &[1])
                ),
                "t:2: record 2 has no `input_length`",
            ),
            (
                "{\"timestamp\": 0, \"input_length\": 3, \"output_length\": 1}".into(),
                "has no `hash_ids`",
            ),
            (
                format!("{}\n{}", rec(10, 3, &[1]), rec(5, 3, &[1])),
                "t:2: record 2: `timestamp` 5 is earlier than line 1's 10",
            ),
            (
                rec(0, 4, &[1, 2]),
                "`input_length` 4 is shorter than its 2 hash blocks imply",
            ),
            (String::new(), "t: no records found"),
        ];
        for (text, want) in cases {
            let e = parse_mooncake(&text, "t", 4).expect_err(want);
            assert!(e.contains(want), "{e}\nwanted: {want}");
        }
    }

    #[test]
    fn agentic_traces_parse_and_bad_ones_are_refused_naming_the_place() {
        let ok = r#"{"metadata": {}, "conversations": [[
            {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}], "prompt_tokens": 9},
            {"messages": [{"role": "tool", "content": "out", "tool_call_id": "c1"}]}
        ]]}"#;
        let c = parse_agentic(ok, "a.json").expect("valid");
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].len(), 2);
        assert_eq!(c[0][1][0]["tool_call_id"], "c1", "kept as the file has it");
        let cases = [
            ("{", "a.json: not valid JSON"),
            ("{\"x\": 1}", "no `conversations` list"),
            (
                "{\"conversations\": [[]]}",
                "conversation 1 is an empty conversation",
            ),
            (
                r#"{"conversations": [[{"messages": [{"role": "user", "content": "q"}]}, {"prompt_tokens": 3}]]}"#,
                "conversation 1, turn 2 has no `messages`",
            ),
            (
                r#"{"conversations": [[{"messages": [{"role": "assistant", "content": "a"}]}]]}"#,
                "turn 1, message 1 is an assistant message",
            ),
            (
                r#"{"conversations": [[{"messages": [{"role": "user"}]}]]}"#,
                "message 1 has no `content`",
            ),
        ];
        for (text, want) in cases {
            let e = parse_agentic(text, "a.json").expect_err(want);
            assert!(e.contains(want), "{e}\nwanted: {want}");
        }
    }
}
