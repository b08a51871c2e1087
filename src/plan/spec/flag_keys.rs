//! The spec's flag keys against each engine's list of flags (`plan::flags::known`): every key
//! of `server.args`, `server.<engine>.args`, `sweep:` and `configs:` that its engine's list
//! lacks gets a warning naming its place and the nearest known name. Pure: the lists are handed
//! in (the built-in ones, or what `server::flags` read from the installed engines' `--help`).

use super::SweepSpec;
use crate::plan::engine::Engine;
use crate::plan::flags::KnownFlags;
use crate::plan::flags::known::unknown_key_warning;
use crate::plan::locate::{Seg, locate_path};

/// One flag key where the spec writes it: its engine, its place in words (`sweep.x`,
/// `configs[1].x`, `server.args.x`) and its path in the text.
struct Place<'a> {
    engine: Engine,
    words: String,
    section: Vec<Seg<'a>>,
    key: &'a str,
}

fn places(spec: &SweepSpec) -> Vec<Place<'_>> {
    let server = &spec.server;
    let mut out: Vec<Place<'_>> = Vec::new();
    for engine in Engine::ALL {
        let section = if engine == server.engine {
            vec![Seg::Key("server"), Seg::Key("args")]
        } else if server.side(engine).is_some() {
            vec![
                Seg::Key("server"),
                Seg::Key(engine.as_str()),
                Seg::Key("args"),
            ]
        } else {
            continue;
        };
        let words = if engine == server.engine {
            "server.args".to_string()
        } else {
            format!("server.{}.args", engine.as_str())
        };
        for (k, _) in server.args_for(engine) {
            out.push(Place {
                engine,
                words: format!("{words}.{k}"),
                section: section.clone(),
                key: k,
            });
        }
    }
    for (k, _) in &spec.sweep.0 {
        out.push(Place {
            engine: server.engine,
            words: format!("sweep.{k}"),
            section: vec![Seg::Key("sweep")],
            key: k,
        });
    }
    for (i, c) in spec.configs.iter().enumerate() {
        for (k, _) in &c.params.0 {
            out.push(Place {
                engine: c.engine.unwrap_or(server.engine),
                words: format!("configs[{i}].{k}"),
                section: vec![Seg::Key("configs"), Seg::Item(i)],
                key: k,
            });
        }
    }
    out
}

/// The engines whose flags the spec writes keys for, each once: the lists to get.
pub fn flag_engines(spec: &SweepSpec) -> Vec<Engine> {
    let mut out: Vec<Engine> = Vec::new();
    for p in places(spec) {
        if !out.contains(&p.engine) {
            out.push(p.engine);
        }
    }
    out
}

/// A warning for each flag key its engine's list lacks, in the spec's order, each starting
/// with where it is (`origin:line:column: `, when the text shows the key). `lists`: each
/// engine's list (an engine without one is not checked).
pub fn unknown_flags(
    spec: &SweepSpec,
    text: &str,
    origin: &str,
    lists: &[(Engine, KnownFlags)],
) -> Vec<String> {
    let mut out = Vec::new();
    for p in places(spec) {
        let Some((_, known)) = lists.iter().find(|(e, _)| *e == p.engine) else {
            continue;
        };
        if p.engine.knows(p.key, known) {
            continue;
        }
        let dashed = p.key.replace('_', "-");
        let at = [p.key, dashed.as_str()].into_iter().find_map(|k| {
            let mut path = p.section.clone();
            path.push(Seg::Key(k));
            locate_path(text, &path)
        });
        let warning = unknown_key_warning(
            &p.words,
            p.key,
            p.engine.label(),
            &known.source,
            p.engine.nearest_key(p.key, known),
        );
        out.push(match at {
            Some((line, column)) => format!("{origin}:{line}:{column}: {warning}"),
            None => warning,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::plan::spec::parse;

    const HEAD: &str =
        "name: t\nserver:\n  model_path: /m\n  args: {tp_size: 1, trust_remote_code: true}\n";
    const TAIL: &str = "workload:\n  concurrency: 1\n  requests: 1\n  input_tokens: 1\n  output_tokens: 1\n  vocab_size: 100\n";

    fn warnings(body: &str) -> Vec<String> {
        let text = format!("{HEAD}{body}{TAIL}");
        let spec = parse(&text, "s.yaml").unwrap();
        let lists: Vec<(Engine, KnownFlags)> = flag_engines(&spec)
            .into_iter()
            .map(|e| (e, e.built_in_flags()))
            .collect();
        unknown_flags(&spec, &text, "s.yaml", &lists)
    }

    #[test]
    fn a_misspelled_sweep_key_is_named_with_its_place_and_the_right_name() {
        let w = warnings("sweep:\n  mem_fraction_statc: [0.8, 0.9]\n");
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("s.yaml:6:3: `sweep.mem_fraction_statc` is not in sgtune's built-in list of SGLang flags: did you mean `mem_fraction_static`?"),
            "{w:?}"
        );
        assert!(
            w[0].contains("goes to the server as --mem-fraction-statc"),
            "{w:?}"
        );
    }

    #[test]
    fn a_misspelled_config_key_is_named_by_its_item_in_block_or_flow_style() {
        let w = warnings(
            "configs:\n  - name: a\n    max_total_tokens: 4096\n  - {name: b, max_runing_requests: 8}\n",
        );
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("s.yaml:8:15: `configs[1].max_runing_requests` is not in"),
            "{w:?}"
        );
        assert!(
            w[0].contains("did you mean `max_running_requests`?"),
            "{w:?}"
        );
    }

    #[test]
    fn known_keys_pass_and_a_far_off_key_gets_no_suggestion() {
        assert!(warnings("sweep:\n  mem_fraction_static: [0.8]\n  kv_cache_dtype: [auto]\n  hicache_size: [0, 4]\n").is_empty());
        let w = warnings("sweep:\n  zzzz_qqqq_xxxx: [1]\n");
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(!w[0].contains("did you mean"), "{w:?}");
        assert!(w[0].contains("check its spelling"), "{w:?}");
    }

    #[test]
    fn each_engine_is_checked_against_its_own_list() {
        // vLLM's own name under SGLang is not a flag; under vLLM it is, and so is the common
        // name it renames.
        let w = warnings("sweep:\n  max_num_seqs: [8]\n");
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("list of SGLang flags"), "{w:?}");
        let w = warnings(
            "configs:\n  - {name: v, engine: vllm, max_num_seqs: 8, mem_fraction_static: 0.8, gpu_memory_utilisation: 0.8}\n",
        );
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("`configs[0].gpu_memory_utilisation` is not in sgtune's built-in list of vLLM flags: did you mean `gpu_memory_utilization`?"), "{w:?}");
        // server.args are checked too.
        let text = format!(
            "{}sweep:\n  mem_fraction_static: [0.8]\n{TAIL}",
            HEAD.replace("tp_size", "tp_sise")
        );
        let spec = parse(&text, "s.yaml").unwrap();
        let w = unknown_flags(
            &spec,
            &text,
            "s.yaml",
            &[(Engine::Sglang, Engine::Sglang.built_in_flags())],
        );
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("s.yaml:4:10: `server.args.tp_sise`"),
            "{w:?}"
        );
        assert!(w[0].contains("did you mean `tp_size`?"), "{w:?}");
    }

    #[test]
    fn an_installed_list_is_named_and_wins_over_the_built_in_one() {
        let text = format!("{HEAD}sweep:\n  brand_new_flag: [1]\n{TAIL}");
        let spec = parse(&text, "s.yaml").unwrap();
        assert_eq!(flag_engines(&spec), [Engine::Sglang]);
        let help = "usage: sglang serve [-h] [--brand-new-flag X] [--tp-size N]\n  [--trust-remote-code]\n";
        let installed =
            KnownFlags::from_help(help, "python -m sglang.launch_server --help").unwrap();
        assert!(unknown_flags(&spec, &text, "s.yaml", &[(Engine::Sglang, installed)]).is_empty());
        let w = unknown_flags(
            &spec,
            &text,
            "s.yaml",
            &[(Engine::Sglang, Engine::Sglang.built_in_flags())],
        );
        assert_eq!(w.len(), 1, "{w:?}");
    }
}
