//! The checks across keys, made once the whole spec is read: each error placed on the key it
//! concerns (`plan::locate`).

use super::{AUTO_FIRST_REPEATS, AutoRepeats, SpecError, SweepSpec};
use crate::plan::columns::{Col, Column};
use crate::plan::engine::Engine;
use crate::plan::flags::ParamValue;
use crate::plan::locate::{locate_key, locate_text};

/// The objective's goodput columns: they stay empty unless `workload.slo` says what a good
/// request is, so without one they are refused, placed on the name (`maximize:`'s value, or
/// the SLO's key). The names themselves were resolved as the objective was read.
pub(super) fn check_objective_goodput(
    spec: &SweepSpec,
    text: &str,
    origin: &str,
) -> Result<(), SpecError> {
    use crate::plan::locate::{ObjectiveKey, locate_objective};
    const GOODPUT: [Column; 2] = [Column::GoodputShare, Column::GoodputReqS];
    let (Some(o), None) = (&spec.objective, &spec.workload.slo) else {
        return Ok(());
    };
    let goodput = |c: &Col| GOODPUT.iter().any(|g| *c == Col::Listed(*g));
    let found = if goodput(&o.metric) {
        Some((ObjectiveKey::Metric, "objective", &o.metric))
    } else {
        o.slo.iter().find(|b| goodput(&b.column)).map(|b| {
            (
                ObjectiveKey::Slo(b.column.name()),
                "objective.slo",
                &b.column,
            )
        })
    };
    let Some((key, place, column)) = found else {
        return Ok(());
    };
    let (line, at) = locate_objective(text, &key);
    Err(SpecError {
        file: origin.to_string(),
        line,
        column: at,
        message: format!(
            "{place}: `{column}` stays empty unless `workload.slo` says what a good request is (e.g. `slo: {{ttft_ms: 500}}` under workload:)"
        ),
    })
}

/// `tune:` against the rest of the spec (`plan::tune::check`), the error placed on the key it
/// concerns; resolves the tune's start.
pub(super) fn check_tune(spec: &mut SweepSpec, text: &str, origin: &str) -> Result<(), SpecError> {
    use crate::plan::locate::{Seg, locate_path};
    let Some(mut t) = spec.tune.take() else {
        return Ok(());
    };
    if spec.search.preflight.is_some() {
        let (line, column) = locate_key(text, "preflight").unwrap_or((1, 1));
        return Err(SpecError {
            file: origin.to_string(),
            line,
            column,
            message: "search.preflight is not supported with tune: yet: give mem_fraction_static as a tune knob (a range), or run the pre-flight as a sweep first".into(),
        });
    }
    let checked = crate::plan::tune::check(
        &mut t,
        spec.server.engine,
        &spec.server.args.0,
        !spec.sweep.0.is_empty(),
        !spec.configs.is_empty(),
        spec.objective.is_some(),
        spec.objective.as_ref().is_some_and(|o| o.prune),
        spec.auto_repeats.is_some(),
        spec.search.max_load.is_some(),
    );
    spec.tune = Some(t);
    checked.map_err(|p| {
        let segs: Vec<Seg<'_>> = p.path.iter().map(|s| Seg::Key(s.as_str())).collect();
        // The deepest part of the path the text shows (a key inside a flow mapping, else its
        // section).
        let (line, column) = (1..=segs.len())
            .rev()
            .find_map(|n| locate_path(text, &segs[..n]))
            .or_else(|| p.path.last().and_then(|k| locate_key(text, k)))
            .unwrap_or((1, 1));
        SpecError {
            file: origin.to_string(),
            line,
            column,
            message: p.message,
        }
    })
}

/// `repeats: auto` with `precision` and `max_repeats`, or neither of those keys.
pub(super) fn resolve_repeats(
    spec: &mut SweepSpec,
    text: &str,
    origin: &str,
) -> Result<(), SpecError> {
    let err = |key: &str, message: String| {
        let (line, column) = locate_key(text, key).unwrap_or((1, 1));
        SpecError {
            file: origin.to_string(),
            line,
            column,
            message,
        }
    };
    if spec.repeats != 0 {
        for (key, given) in [
            ("precision", spec.precision.is_some()),
            ("max_repeats", spec.max_repeats.is_some()),
        ] {
            if given {
                return Err(err(
                    key,
                    format!(
                        "`{key}` goes with `repeats: auto`; with a fixed number of repeats, leave it out"
                    ),
                ));
            }
        }
        return Ok(());
    }
    if spec.objective.is_none() {
        return Err(err(
            "repeats",
            "`repeats: auto` repeats until the objective's interval is narrow enough: give an `objective:` (e.g. {maximize: output_tok_s})".into(),
        ));
    }
    if spec.search.max_load.is_some() {
        return Err(err(
            "repeats",
            "with search.max_load, a probe is repeated where it is close to the SLO (search.max_load.repeats); `repeats: auto` does not apply".into(),
        ));
    }
    let precision = spec.precision.unwrap_or(0.05);
    if !(precision.is_finite() && precision > 0.0 && precision < 1.0) {
        return Err(err(
            "precision",
            format!(
                "precision must be a fraction in (0, 1), e.g. 0.03 for ±3% of the mean; got {precision}"
            ),
        ));
    }
    let max = spec.max_repeats.unwrap_or(10);
    if max < AUTO_FIRST_REPEATS {
        return Err(err(
            "max_repeats",
            format!(
                "max_repeats must be at least {AUTO_FIRST_REPEATS} (two repeats give the first interval); got {max}"
            ),
        ));
    }
    spec.auto_repeats = Some(AutoRepeats { precision, max });
    spec.repeats = AUTO_FIRST_REPEATS;
    Ok(())
}

/// Under `engine: vllm`: no SGLang-only key, and no key set both by its common name and by
/// vLLM's (`max_running_requests` and `max_num_seqs`) for one configuration. The error points
/// at the key where it is written: `server.args`, `server.<engine>.args`, `sweep` or its own
/// configuration.
pub(super) fn check_engine_keys(
    spec: &SweepSpec,
    text: &str,
    origin: &str,
) -> Result<(), SpecError> {
    use crate::plan::locate::{Seg, locate_path};
    let err = |key: &str, path: &[Seg<'_>], message: String| {
        let (line, column) = locate_path(text, path)
            .or_else(|| locate_key(text, key))
            .unwrap_or((1, 1));
        SpecError {
            file: origin.to_string(),
            line,
            column,
            message,
        }
    };
    let server = &spec.server;
    // Each key with its path in the file.
    let base = |engine: Engine| -> Vec<(&str, Vec<Seg<'_>>)> {
        let section = if engine == server.engine {
            vec![Seg::Key("server"), Seg::Key("args")]
        } else {
            vec![
                Seg::Key("server"),
                Seg::Key(engine.as_str()),
                Seg::Key("args"),
            ]
        };
        server
            .args_for(engine)
            .iter()
            .map(|(k, _)| {
                let mut path = section.clone();
                path.push(Seg::Key(k.as_str()));
                (k.as_str(), path)
            })
            .collect()
    };
    let on_server = format!("server.engine is {}", server.engine.as_str());
    // The grid runs on server.engine; each configuration on its own engine.
    let mut grid = base(server.engine);
    grid.extend(
        spec.sweep
            .0
            .iter()
            .map(|(k, _)| (k.as_str(), vec![Seg::Key("sweep"), Seg::Key(k.as_str())])),
    );
    let mut sets = vec![(server.engine, on_server.clone(), grid)];
    for e in Engine::ALL {
        if e != server.engine && server.side(e).is_some() {
            let why = format!(
                "server.{0}.args are for configurations with engine: {0}",
                e.as_str()
            );
            sets.push((e, why, base(e)));
        }
    }
    for (i, c) in spec.configs.iter().enumerate() {
        let engine = c.engine.unwrap_or(server.engine);
        let why = match c.engine {
            Some(e) => format!("configuration `{}` runs on {}", c.name, e.as_str()),
            None => on_server.clone(),
        };
        let mut keys = base(engine);
        keys.extend(c.params.0.iter().map(|(k, _)| {
            (
                k.as_str(),
                vec![Seg::Key("configs"), Seg::Item(i), Seg::Key(k.as_str())],
            )
        }));
        sets.push((engine, why, keys));
    }
    for (engine, why_engine, keys) in &sets {
        let engine = *engine;
        for (k, path) in keys {
            if let Some(why) = engine.refuses(k) {
                return Err(err(k, path, format!("{why} ({why_engine})")));
            }
            if let Some(common) = engine.common_key(k) {
                if keys.iter().any(|(other, _)| *other == common) {
                    return Err(err(
                        k,
                        path,
                        format!(
                            "`{k}` and `{common}` set the same {} flag (--{}): keep one",
                            engine.label(),
                            k.replace('_', "-")
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Checks that span several keys; placed at the line of the key they concern.
pub(super) fn check_cross_fields(
    spec: &SweepSpec,
    text: &str,
    origin: &str,
) -> Result<(), SpecError> {
    let err = |key: &str, message: String| {
        let (line, column) = locate_key(text, key).unwrap_or((1, 1));
        SpecError {
            file: origin.to_string(),
            line,
            column,
            message,
        }
    };
    if spec.server.command.is_empty() {
        return Err(err(
            "command",
            "server.command is empty: give the program, e.g. [python, -m, sglang.launch_server]"
                .into(),
        ));
    }
    let mut names: Vec<&str> = Vec::new();
    for (i, c) in spec.configs.iter().enumerate() {
        if names.contains(&c.name.as_str()) {
            use crate::plan::locate::{Seg, locate_path};
            let mut e = err(
                "configs",
                format!(
                    "two configurations are named `{}`: names must be unique",
                    c.name
                ),
            );
            let second = [Seg::Key("configs"), Seg::Item(i), Seg::Key("name")];
            if let Some((line, column)) = locate_path(text, &second) {
                (e.line, e.column) = (line, column);
            }
            return Err(e);
        }
        names.push(&c.name);
    }
    check_search(spec, text, &err)
}

/// What `search:` needs from the rest of the spec.
fn check_search(
    spec: &SweepSpec,
    text: &str,
    err: &dyn Fn(&str, String) -> SpecError,
) -> Result<(), SpecError> {
    use crate::plan::flags::PREFLIGHT_VALUE;
    if spec.search.max_load.is_some() {
        let has_slo = spec.objective.as_ref().is_some_and(|o| !o.slo.is_empty());
        if !has_slo {
            return Err(err(
                "max_load",
                "search.max_load looks for the highest load within the SLO: give an `objective:` with an `slo:`, e.g. {maximize: output_tok_s, slo: {ttft_ms_p99: 2000}}".into(),
            ));
        }
        if spec.workload.load_points.len() > 1 {
            return Err(err(
                "concurrency",
                "search.max_load chooses the load points itself: give workload.concurrency (and request_rate) a single value, not a list".into(),
            ));
        }
        if spec.repeats > 1 {
            return Err(err(
                "repeats",
                "with search.max_load, a probe is repeated where it is close to the SLO: set search.max_load.repeats instead of `repeats`".into(),
            ));
        }
    }
    use crate::plan::locate::{Seg, locate_path};
    let is_placeholder = |v: &ParamValue| matches!(v, ParamValue::Str(s) if s == PREFLIGHT_VALUE);
    // Each placeholder with where it is written: a sweep list's item (or its single value), a
    // configuration's key, a server flag.
    let mut placeholders: Vec<(&String, Vec<Vec<Seg<'_>>>)> = Vec::new();
    for (k, vs) in &spec.sweep.0 {
        for (j, _) in vs.iter().enumerate().filter(|(_, v)| is_placeholder(v)) {
            let key = [Seg::Key("sweep"), Seg::Key(k.as_str())];
            let mut item = key.to_vec();
            item.push(Seg::Item(j));
            placeholders.push((k, vec![item, key.to_vec()]));
        }
    }
    for (i, c) in spec.configs.iter().enumerate() {
        for (k, _) in c.params.0.iter().filter(|(_, v)| is_placeholder(v)) {
            let path = vec![Seg::Key("configs"), Seg::Item(i), Seg::Key(k.as_str())];
            placeholders.push((k, vec![path]));
        }
    }
    for (k, _) in spec.server.args.0.iter().filter(|(_, v)| is_placeholder(v)) {
        let path = vec![Seg::Key("server"), Seg::Key("args"), Seg::Key(k.as_str())];
        placeholders.push((k, vec![path]));
    }
    for (k, paths) in placeholders {
        // The placeholder's own place (often inside a flow mapping: `{name: x, k: preflight}`).
        let err = |_: &str, message: String| {
            let mut e = err(k, message);
            if let Some((line, column)) = paths
                .iter()
                .find_map(|p| locate_path(text, p))
                .or_else(|| locate_text(text, &format!("{k}: {PREFLIGHT_VALUE}")))
                .or_else(|| locate_text(text, PREFLIGHT_VALUE))
            {
                (e.line, e.column) = (line, column);
            }
            e
        };
        match &spec.search.preflight {
            Some(p) if &p.knob == k => {}
            Some(p) => {
                return Err(err(
                    k,
                    format!(
                        "`{k}: {PREFLIGHT_VALUE}` but search.preflight searches `{}`: only that knob can take the pre-flight's value",
                        p.knob
                    ),
                ));
            }
            None => {
                return Err(err(
                    k,
                    format!(
                        "`{k}: {PREFLIGHT_VALUE}` needs a search.preflight section for `{k}`, e.g. {k}: {{from: .., to: .., resolution: ..}}"
                    ),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::plan::spec::fixtures::err_of;
    use crate::plan::spec::parse;

    /// `tune:`'s errors that depend on the rest of the spec land on the key they concern.
    #[test]
    fn tune_errors_are_placed_on_their_key() {
        let base = "name: t\nserver:\n  command: [python3]\n  model_path: /m\n  args:\n    hicache_size: 8\nworkload: {concurrency: 2, requests: 4, input_tokens: 4, output_tokens: 4, vocab_size: 10}\n";
        let objective = "objective: {maximize: output_tok_s}\n";
        let knobs = "tune:\n  knobs:\n    hicache_size: [0, 16]\n  launches: 2\n";
        // server.args' value is the start, and it is not among the knob's values.
        let e = parse(&format!("{base}{objective}{knobs}"), "t.yaml").unwrap_err();
        assert_eq!((e.line, e.column), (6, 5), "{e}");
        assert!(
            e.message.contains("server.args sets hicache_size = 8"),
            "{e}"
        );
        let ok = base.replace("hicache_size: 8", "hicache_size: 16");
        let s = parse(&format!("{ok}{objective}{knobs}"), "t.yaml").unwrap();
        assert_eq!(s.tune.as_ref().map(|t| t.start.clone()), Some(vec![1]));
        // No objective: on `tune:`.
        let e = parse(&format!("{ok}{knobs}"), "t.yaml").unwrap_err();
        assert_eq!(e.line, 8, "{e}");
        assert!(e.message.contains("needs an `objective:`"), "{e}");
        // repeats: auto.
        let e = parse(&format!("{ok}{objective}repeats: auto\n{knobs}"), "t.yaml").unwrap_err();
        assert_eq!(e.line, 9, "{e}");
        assert!(e.message.contains("`repeats: auto`"), "{e}");
    }

    /// Where an engine-refused key is reported: (line, column, message) of its error.
    fn engine_key_error(body: &str) -> (usize, usize, String) {
        let text = format!(
            "name: t\nserver:\n  model_path: /m\n{body}workload: {{concurrency: 1, requests: 1, input_tokens: 1, output_tokens: 1}}\n"
        );
        let e = err_of(&text);
        (e.line, e.column, e.message)
    }

    #[test]
    fn an_engine_refused_key_is_located_in_its_own_configuration_in_every_style() {
        // Flow style, one configuration per line: the key inside the second mapping.
        let (l, c, m) = engine_key_error(
            "configs:\n  - {name: a, hicache_size: 8}\n  - {name: b, engine: vllm, hicache_size: 48}\n",
        );
        assert_eq!((l, c), (6, 29), "{m}");
        // A flow list on one line: the second `hicache_size`, not the first.
        let (l, c, m) = engine_key_error(
            "configs: [{name: a, hicache_size: 8}, {name: b, engine: vllm, hicache-size: 48}]\n",
        );
        assert_eq!((l, c), (4, 63), "{m}");
        // Block style: the key repeated in several configurations is the one at fault.
        let (l, c, m) = engine_key_error(
            "configs:\n  - name: a\n    hicache_size: 8\n\n  - name: b\n    engine: vllm\n    hicache_size: 48\n",
        );
        assert_eq!((l, c), (10, 5), "{m}");
        // A block sequence at the parent's indent.
        let (l, c, m) = engine_key_error(
            "configs:\n- name: a\n  hicache_size: 8\n- name: b\n  hicache_size: 9\n  engine: vllm\n",
        );
        assert_eq!((l, c), (8, 3), "{m}");
        // The vLLM side's flags, after an SGLang side whose args have the same key.
        let (l, c, m) = engine_key_error(
            "  args:\n    schedule_conservativeness: 0.5\n  vllm:\n    args:\n      schedule_conservativeness: 0.3\nconfigs:\n  - {name: b, engine: vllm}\n",
        );
        assert_eq!((l, c), (8, 7), "{m}");
        // The grid of a vLLM server, flow style.
        let (l, c, m) =
            engine_key_error("  engine: vllm\nsweep: {max_num_seqs: [4], hicache_ratio: [0, 2]}\n");
        assert_eq!((l, c), (5, 28), "{m}");
    }

    #[test]
    fn an_engine_refusal_names_the_configurations_engine_not_the_servers() {
        let (_, _, m) =
            engine_key_error("configs:\n  - {name: b, engine: vllm, hicache_size: 48}\n");
        assert!(!m.contains("server.engine is vllm"), "{m}");
        assert!(m.contains("configuration `b` runs on vllm"), "{m}");
        let (_, _, m) = engine_key_error("  engine: vllm\nsweep: {hicache_size: [0, 2]}\n");
        assert!(m.contains("server.engine is vllm"), "{m}");
    }

    #[test]
    fn a_repeated_configuration_name_is_located_at_the_second() {
        let (l, c, m) =
            engine_key_error("configs:\n  - {name: a, tp_size: 1}\n  - {name: a, tp_size: 2}\n");
        assert!(m.contains("two configurations are named `a`"), "{m}");
        assert_eq!((l, c), (6, 6), "{m}");
    }

    #[test]
    fn a_misplaced_preflight_value_is_located_where_it_is_written() {
        let head = "name: t\nserver:\n  model_path: /m\nsearch:\n  preflight:\n    mem_fraction_static: {from: 0.8, to: 0.9, resolution: 0.01}\n";
        let tail = "workload: {concurrency: 1, requests: 1, input_tokens: 1, output_tokens: 1}\n";
        // In a sweep list, after another `preflight`: the list's item.
        let e = err_of(&format!(
            "{head}configs:\n  - {{name: a, mem_fraction_static: preflight}}\nsweep:\n  max_running_requests: [8, preflight]\n{tail}"
        ));
        assert!(
            e.message.contains("`max_running_requests: preflight` but search.preflight searches `mem_fraction_static`"),
            "{e}"
        );
        assert_eq!((e.line, e.column), (10, 29), "{e}");
        // Written with dashes in a configuration's flow mapping: that configuration's key.
        let e = err_of(&format!(
            "{head}configs:\n  - {{name: a, mem_fraction_static: preflight}}\n  - {{name: b, max-running-requests: preflight}}\n{tail}"
        ));
        assert_eq!((e.line, e.column), (9, 15), "{e}");
    }
}
