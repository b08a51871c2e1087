//! RunConfig → LaunchCommand: the exact program, arguments and environment of one run. Pure,
//! so the plan printed by `validate`/`--dry-run` is the command that will run.

use crate::plan::expand::RunConfig;
use crate::plan::flags;
use crate::plan::spec::ServerSpec;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchCommand {
    pub program: String,
    pub args: Vec<String>,
    /// Variables set on top of sgtune's own environment.
    pub env: Vec<(String, String)>,
}

/// Where `program` would be found when launched with `env` on top of sgtune's environment
/// (a `PATH` there wins), or why not: a missing interpreter or launcher is one mistake for
/// the whole sweep, said before anything starts, rather than the same failed row per run.
/// A name with a `/` is a path (relative to the working directory); any other is looked up
/// in `PATH`, as `execvp` does.
pub fn find_program(program: &str, env: &[(String, String)]) -> Result<std::path::PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.is_empty() {
        return Err("server.command is empty".to_string());
    }
    if program.contains('/') {
        let p = std::path::PathBuf::from(program);
        return if runnable(&p) {
            Ok(p)
        } else {
            Err(format!(
                "`{program}` (server.command's program) is not an executable file"
            ))
        };
    }
    let path = env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| std::ffi::OsString::from(v))
        .or_else(|| std::env::var_os("PATH"))
        .unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| runnable(p))
        .ok_or_else(|| {
            format!(
                "`{program}` (server.command's program) is not on PATH: activate the environment that has it, or give its full path in server.command"
            )
        })
}

/// Where the port is not known yet (a free port is picked at launch).
pub const AUTO_PORT: &str = "<free-port>";

/// Build the launch command; `port` None prints the placeholder (plans, dry runs).
pub fn build(server: &ServerSpec, run: &RunConfig, port: Option<u16>) -> LaunchCommand {
    let engine = run.engine;
    let mut parts = server.command_for(engine).into_iter().map(|e| e.0);
    let program = parts.next().unwrap_or_default();
    let mut args: Vec<String> = parts.collect();
    args.extend([
        engine.model_flag().to_string(),
        server.model_path.0.clone(),
        "--host".to_string(),
        server.host.clone(),
        "--port".to_string(),
        port.map_or_else(|| AUTO_PORT.to_string(), |p| p.to_string()),
    ]);
    args.extend(flags::flag_args(&engine.map_params(&run.resolved)));
    let env = crate::plan::expand::launch_env(server, engine);
    LaunchCommand { program, args, env }
}

/// Set (or replace) one environment variable of the command, e.g. the GPUs of a slot.
pub fn set_env(cmd: &mut LaunchCommand, key: &str, value: &str) {
    cmd.env.retain(|(k, _)| k != key);
    cmd.env.push((key.to_string(), value.to_string()));
}

/// Quote for a POSIX shell only where needed, so the line can be pasted.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%<>".contains(c))
        && !s.contains('<')
    {
        return s.to_string();
    }
    if s == AUTO_PORT {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

impl LaunchCommand {
    /// `VAR=value ... program args`, pasteable into a shell.
    pub fn display(&self) -> String {
        let mut parts: Vec<String> = self
            .env
            .iter()
            .map(|(k, v)| format!("{k}={}", shell_quote(v)))
            .collect();
        parts.push(shell_quote(&self.program));
        parts.extend(self.args.iter().map(|a| shell_quote(a)));
        parts.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::engine::Engine;
    use crate::plan::expand::expand;
    use crate::plan::spec::parse;

    #[test]
    fn a_program_is_found_on_the_launch_path_or_named_as_missing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let exe = dir.path().join("serve");
        std::fs::write(&exe, "#!/bin/sh\n").expect("write");
        let plain = dir.path().join("notes");
        std::fs::write(&plain, "").expect("write");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let on = vec![("PATH".to_string(), dir.path().display().to_string())];
        // The launch's own PATH is where the name is looked up.
        assert_eq!(find_program("serve", &on), Ok(exe.clone()));
        let e = find_program("serve", &[("PATH".to_string(), "/nonexistent".to_string())])
            .expect_err("not on that PATH");
        assert!(e.contains("not on PATH") && e.contains("full path"), "{e}");
        // A path is taken as it is: executable, or said not to be.
        let abs = exe.display().to_string();
        assert_eq!(find_program(&abs, &[]), Ok(exe));
        let e = find_program(&plain.display().to_string(), &[]).expect_err("not executable");
        assert!(e.contains("not an executable file"), "{e}");
        assert!(
            find_program("notes", &on).is_err(),
            "a file without x is not a program"
        );
        assert!(find_program("", &on).is_err());
        // sgtune's own PATH without an override: sh is everywhere.
        assert!(find_program("sh", &[]).is_ok());
    }

    #[test]
    fn a_mixed_sweep_builds_each_engines_command() {
        let text = "name: t\nserver:\n  command: [/sg/python, -m, sglang.launch_server]\n  model_path: /models/m\n  env: {A: '1'}\n  args: {device: cpu}\n  vllm:\n    command: [/vl/python, -m, vllm.entrypoints.openai.api_server]\n    args: {max_model_len: 512}\n    env: {B: '2'}\nconfigs:\n  - name: sg\n    max_running_requests: 4\n  - name: vl\n    engine: vllm\n    max_running_requests: 4\nworkload: {concurrency: 1, requests: 1, input_tokens: 1, output_tokens: 1}\n";
        let spec = parse(text, "t").expect("valid");
        let plan = expand(&spec);
        let (sg, vl) = (&plan.runs[0], &plan.runs[1]);
        assert_eq!((sg.engine, vl.engine), (Engine::Sglang, Engine::Vllm));
        assert_ne!(sg.id, vl.id);
        assert_eq!(
            build(&spec.server, sg, Some(1)).display(),
            "PYTHONUNBUFFERED=1 A=1 /sg/python -m sglang.launch_server --model-path /models/m --host 127.0.0.1 --port 1 --device cpu --max-running-requests 4"
        );
        assert_eq!(
            build(&spec.server, vl, Some(1)).display(),
            "PYTHONUNBUFFERED=1 VLLM_SERVER_DEV_MODE=1 VLLM_LOG_STATS_INTERVAL=2 A=1 B=2 /vl/python -m vllm.entrypoints.openai.api_server --model /models/m --host 127.0.0.1 --port 1 --max-model-len 512 --max-num-seqs 4"
        );
        // An SGLang-only key in the vLLM configuration is refused at its line.
        let bad = text.replace(
            "    engine: vllm\n",
            "    engine: vllm\n    schedule_conservativeness: 0.3\n",
        );
        let e = parse(&bad, "t").expect_err("refused");
        assert!(e.message.contains("`schedule_conservativeness`"), "{e:?}");
    }

    #[test]
    fn builds_a_vllm_command_line() {
        let text = "name: t\nserver:\n  engine: vllm\n  model_path: /models/m\n  args: {max_model_len: 512}\nsweep:\n  max_running_requests: [4]\n  mem_fraction_static: [0.5]\n  kv_cache_memory_bytes: [8388608]\nworkload: {concurrency: 1, requests: 1, input_tokens: 1, output_tokens: 1}\n";
        let spec = parse(text, "t").expect("valid");
        let plan = expand(&spec);
        let cmd = build(&spec.server, &plan.runs[0], Some(31000));
        assert_eq!(
            cmd.display(),
            "PYTHONUNBUFFERED=1 VLLM_SERVER_DEV_MODE=1 VLLM_LOG_STATS_INTERVAL=2 python -m vllm.entrypoints.openai.api_server --model /models/m --host 127.0.0.1 --port 31000 --max-model-len 512 --max-num-seqs 4 --gpu-memory-utilization 0.5 --kv-cache-memory-bytes 8388608"
        );
    }

    #[test]
    fn builds_exact_command_line() {
        let text = "name: t\nserver:\n  command: [/venv/bin/python, -m, sglang.launch_server]\n  model_path: /models/m\n  env: {SGLANG_USE_CPU_ENGINE: '1', X: 'a b'}\n  args: {trust_remote_code: true}\nsweep:\n  hicache_size: [48]\nworkload: {concurrency: 1, requests: 1, input_tokens: 1, output_tokens: 1}\n";
        let spec = parse(text, "t").expect("valid");
        let plan = expand(&spec);
        let cmd = build(&spec.server, &plan.runs[0], Some(31000));
        assert_eq!(cmd.program, "/venv/bin/python");
        assert_eq!(
            cmd.args,
            [
                "-m",
                "sglang.launch_server",
                "--model-path",
                "/models/m",
                "--host",
                "127.0.0.1",
                "--port",
                "31000",
                "--trust-remote-code",
                "--enable-hierarchical-cache",
                "--hicache-size",
                "48"
            ]
        );
        assert_eq!(
            cmd.display(),
            "PYTHONUNBUFFERED=1 SGLANG_USE_CPU_ENGINE=1 X='a b' /venv/bin/python -m sglang.launch_server --model-path /models/m --host 127.0.0.1 --port 31000 --trust-remote-code --enable-hierarchical-cache --hicache-size 48"
        );
        assert!(
            build(&spec.server, &plan.runs[0], None)
                .display()
                .contains("--port <free-port>")
        );
    }
}
