//! The flags an engine knows, as spec keys: sgtune's built-in list per engine (`sglang.txt`,
//! `vllm.txt` beside this file), or the installed engine's own, read from its `--help`
//! ([`parse_help`]; `server::flags` runs it). A key in `sweep:`, `configs:` or `server.args`
//! that is not in the list is still passed through (newer engines have newer flags), with a
//! warning that names its place and the nearest known name ([`nearest`]); a `tune:` knob that
//! is not in the built-in list is an error (`plan::tune::check`).

use std::fmt;

/// SGLang's flags as spec keys, one a line (`#` starts a comment).
pub const SGLANG_BUILT_IN: &str = include_str!("sglang.txt");
/// vLLM's flags as spec keys, one a line (`#` starts a comment).
pub const VLLM_BUILT_IN: &str = include_str!("vllm.txt");

/// Where a list of flags came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlagSource {
    /// sgtune's own list, kept in the source (the releases it names in its header).
    BuiltIn,
    /// The installed engine's `--help`, asked with this command line (the `--help` included).
    Installed(String),
}

/// A list of flag names as spec keys (`mem_fraction_static`), sorted, each once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownFlags {
    names: Vec<String>,
    pub source: FlagSource,
}

impl KnownFlags {
    /// A built-in list: one name a line, blank lines and `#` comments skipped.
    pub fn built_in(list: &str) -> KnownFlags {
        let names = list
            .lines()
            .map(|l| l.split('#').next().unwrap_or("").trim())
            .filter(|l| !l.is_empty())
            .map(String::from);
        KnownFlags::new(names, FlagSource::BuiltIn)
    }

    /// The installed engine's list, from the text its `--help` printed (`command`: how it was
    /// asked). `Err` says why the text is not a flag list (no `--flag` in it).
    pub fn from_help(help: &str, command: &str) -> Result<KnownFlags, String> {
        let names = parse_help(help);
        if names.is_empty() {
            return Err(format!(
                "`{command}` printed no `--flag` (is it the engine's launch command?)"
            ));
        }
        Ok(KnownFlags::new(
            names,
            FlagSource::Installed(command.to_string()),
        ))
    }

    fn new(names: impl IntoIterator<Item = String>, source: FlagSource) -> KnownFlags {
        let mut names: Vec<String> = names.into_iter().collect();
        names.sort_unstable();
        names.dedup();
        KnownFlags { names, source }
    }

    /// Whether `key` (a spec key, `snake_case`) is one of the flags.
    pub fn contains(&self, key: &str) -> bool {
        self.names.binary_search_by(|n| n.as_str().cmp(key)).is_ok()
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

impl FlagSource {
    /// The list in words, for the engine labelled `engine` ("SGLang"): what a warning says
    /// it checked against (`validate`'s `flags:` line names the command).
    pub fn describe(&self, engine: &str) -> String {
        match self {
            FlagSource::BuiltIn => format!("sgtune's built-in list of {engine} flags"),
            FlagSource::Installed(_) => format!("the installed {engine}'s own list"),
        }
    }
}

impl fmt::Display for FlagSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlagSource::BuiltIn => f.write_str("built-in"),
            FlagSource::Installed(command) => write!(f, "installed (`{command}`)"),
        }
    }
}

/// The flag names in an argparse `--help` text, as spec keys (`--mem-fraction-static` →
/// `mem_fraction_static`; `--help` left out). Read from the two places argparse lists every
/// flag: the `usage:` block (up to its first blank line; vLLM's grouped help lists its flags
/// only there), and the option lines (indented at most four spaces, starting with `-`; their
/// invocation, up to two spaces, holds the flag and its aliases). A description's mention of a
/// flag is not read: a wrapped description line is indented further.
pub fn parse_help(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut in_usage = false;
    for line in text.lines() {
        if line.trim_start().starts_with("usage:") {
            in_usage = true;
        } else if line.trim().is_empty() {
            in_usage = false;
        }
        if in_usage {
            out.extend(flags_in(line));
            continue;
        }
        let trimmed = line.trim_start_matches(' ');
        if line.len() - trimmed.len() > 4 || !trimmed.starts_with('-') {
            continue;
        }
        let invocation = trimmed.split("  ").next().unwrap_or("");
        for part in invocation.split(", ") {
            let word = part.split([' ', '=']).next().unwrap_or("");
            out.extend(flag_key(word));
        }
    }
    out.retain(|k| k != "help");
    out.sort_unstable();
    out.dedup();
    out
}

/// Each `--flag` token in a usage line (inside `[...]`, `|`, `{...}` or plain).
fn flags_in(line: &str) -> Vec<String> {
    line.split(|c: char| c.is_whitespace() || matches!(c, '[' | ']' | '|' | '{' | '}' | ','))
        .filter_map(|w| flag_key(w.split('=').next().unwrap_or("")))
        .collect()
}

/// `--mem-fraction-static` → `mem_fraction_static`; None for anything else (`-h`, `MODEL`,
/// `--`, `--x.`).
fn flag_key(word: &str) -> Option<String> {
    let name = word.strip_prefix("--")?;
    let ok = name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    ok.then(|| name.replace('-', "_"))
}

/// The known name nearest to `key`, when one is near enough to be a misspelling of it: the
/// fewest edits (`util::edit_distance`), at most a fifth of the longer name's length,
/// between 1 and 3, ties to the first in order; else the one name `key` is the start of
/// (argparse would take `tp` for `tp_size`, but a spec names the whole flag).
pub fn nearest<'a>(key: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut best: Option<(usize, &'a str)> = None;
    let mut starts: Vec<&'a str> = Vec::new();
    for name in candidates {
        if name == key {
            continue;
        }
        if name.starts_with(key) {
            starts.push(name);
        }
        let d = crate::util::edit_distance(key, name);
        let allowed = (key.len().max(name.len()) / 5).clamp(1, 3);
        if d <= allowed && best.is_none_or(|(bd, bn)| (d, name) < (bd, bn)) {
            best = Some((d, name));
        }
    }
    starts.sort_unstable();
    starts.dedup();
    best.map(|(_, n)| n).or(match starts.as_slice() {
        [one] => Some(*one),
        _ => None,
    })
}

/// The warning for a key that is not in the list: its place in the spec (`sweep.x`,
/// `configs[1].x`), the list checked, the nearest name, and what happens to it.
pub fn unknown_key_warning(
    place: &str,
    key: &str,
    engine: &str,
    source: &FlagSource,
    suggestion: Option<&str>,
) -> String {
    let fix = match suggestion {
        Some(s) => format!("did you mean `{s}`? Fix the key"),
        None => format!("check its spelling against {engine}'s `--help`"),
    };
    let outcome = match source {
        FlagSource::BuiltIn => {
            format!("which {engine} refuses at start-up unless it is a flag newer than the list")
        }
        FlagSource::Installed(_) => format!("which the installed {engine} would refuse"),
    };
    format!(
        "`{place}` is not in {}: {fix}. As written it goes to the server as --{}, {outcome}",
        source.describe(engine),
        key.replace('_', "-")
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    const SGLANG_HELP: &str = include_str!("../../../tests/fixtures/help/sglang-0.5.23.txt");
    const VLLM_HELP: &str = include_str!("../../../tests/fixtures/help/vllm-0.32.0.txt");

    #[test]
    fn the_help_parser_reads_usage_and_option_lines_and_not_descriptions() {
        let names = parse_help(SGLANG_HELP);
        for k in [
            "model_path",
            "model", // an alias on the same option line
            "tokenizer_path",
            "load_format", // its choices hold commas
            "mem_fraction_static",
            "tp_size",
            "tensor_parallel_size",
            "enable_hierarchical_cache",
            "hicache_ratio",
            "disable_radix_cache",
        ] {
            assert!(names.iter().any(|n| n == k), "{k} not in {names:?}");
        }
        assert!(!names.iter().any(|n| n == "help"), "{names:?}");
        // Flags a description mentions are not read: this excerpt has no option line of
        // theirs (and one mention is cut at the line's end: `--disable-`).
        for k in [
            "hicache_storage_backend",
            "enable_unified_memory",
            "speculative_eagle_topk",
            "disable_",
        ] {
            assert!(!names.iter().any(|n| n == k), "{k} in {names:?}");
        }
        assert!(!names.iter().any(|n| n.contains('-')), "{names:?}");
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted, names);
    }

    #[test]
    fn the_help_parser_reads_vllms_grouped_help_from_its_usage_block() {
        let names = parse_help(VLLM_HELP);
        for k in [
            "headless",
            "gpu_memory_utilization",
            "max_num_seqs",
            "enable_prefix_caching",
            "no_enable_prefix_caching", // `[--x | --no-x]`
            "tool_parser_plugin",       // inside a choice's words
        ] {
            assert!(names.iter().any(|n| n == k), "{k} not in {names:?}");
        }
        // The groups' descriptions below the usage are not flags.
        assert!(!names.iter().any(|n| n == "frontend"), "{names:?}");
    }

    #[test]
    fn a_text_without_flags_is_not_a_flag_list() {
        let e = KnownFlags::from_help("Traceback: No module named sglang\n", "python --help")
            .unwrap_err();
        assert!(e.contains("printed no `--flag`"), "{e}");
        let k =
            KnownFlags::from_help(SGLANG_HELP, "python -m sglang.launch_server --help").unwrap();
        assert!(k.contains("mem_fraction_static"));
        assert_eq!(
            k.source,
            FlagSource::Installed("python -m sglang.launch_server --help".into())
        );
    }

    #[test]
    fn the_built_in_lists_hold_each_engines_own_names() {
        let sglang = KnownFlags::built_in(SGLANG_BUILT_IN);
        let vllm = KnownFlags::built_in(VLLM_BUILT_IN);
        for k in [
            "mem_fraction_static",
            "max_running_requests",
            "hicache_size",
            "cuda_graph_max_bs",
            "served_model_name",
        ] {
            assert!(sglang.contains(k), "{k}");
        }
        for k in ["gpu_memory_utilization", "max_num_seqs", "enforce_eager"] {
            assert!(vllm.contains(k), "{k}");
            assert!(!sglang.contains(k) || k == "enforce_eager", "{k}");
        }
        assert!(!vllm.contains("mem_fraction_static"));
        assert!(!sglang.contains("help") && !sglang.contains(""));
        assert!(sglang.len() > 500 && vllm.len() > 300);
        // The captured 0.5.23 help's names are all in the built-in list.
        for k in parse_help(SGLANG_HELP) {
            assert!(sglang.contains(&k), "{k}");
        }
        for k in parse_help(VLLM_HELP) {
            assert!(vllm.contains(&k), "{k}");
        }
    }

    #[test]
    fn a_misspelling_gets_the_right_name_and_a_far_off_key_none() {
        let sglang = KnownFlags::built_in(SGLANG_BUILT_IN);
        let near = |k: &str| nearest(k, sglang.names());
        assert_eq!(near("mem_fraction_statc"), Some("mem_fraction_static"));
        assert_eq!(near("mem_fraciton_static"), Some("mem_fraction_static"));
        assert_eq!(near("max_runing_requests"), Some("max_running_requests"));
        assert_eq!(near("kv_cache_dtpye"), Some("kv_cache_dtype"));
        assert_eq!(near("zzzzzzzzzzzz_qqqq"), None);
        assert_eq!(near("banana"), None);
        // The start of exactly one flag: that flag.
        assert_eq!(near("hicache_stor"), None); // several start so
        assert_eq!(near("mem_fraction"), Some("mem_fraction_static"));
    }

    #[test]
    fn the_warning_names_the_place_the_list_and_the_fix() {
        let w = unknown_key_warning(
            "configs[1].mem_fraction_statc",
            "mem_fraction_statc",
            "SGLang",
            &FlagSource::BuiltIn,
            Some("mem_fraction_static"),
        );
        assert!(w.starts_with("`configs[1].mem_fraction_statc` is not in sgtune's built-in list of SGLang flags: did you mean `mem_fraction_static`?"), "{w}");
        assert!(w.contains("--mem-fraction-statc"), "{w}");
        let w = unknown_key_warning(
            "sweep.zz",
            "zz",
            "vLLM",
            &FlagSource::Installed("python -m vllm.entrypoints.openai.api_server --help".into()),
            None,
        );
        assert!(w.contains("is not in the installed vLLM's own list: check its spelling against vLLM's `--help`"), "{w}");
        assert!(!w.contains("did you mean"), "{w}");
    }
}
