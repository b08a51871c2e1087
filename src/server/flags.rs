//! The installed engine's own list of flags: its launch command with `--help`, read by
//! `plan::flags::known::parse_help`. `sgtune validate` checks the spec's keys against it, the
//! source of truth for the engine that will run; when it cannot be asked (the command is not a
//! python or the engine's own program, it fails, it takes too long), the caller falls back to
//! the built-in list and says why.

use crate::plan::flags::KnownFlags;
use crate::plan::spec::Expanded;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long `--help` may take: SGLang imports torch first (about 6 s on an idle CPU machine).
pub const HELP_TIMEOUT: Duration = Duration::from_secs(60);

/// The flags `command --help` lists, run with the server's extra environment `env`; `Err`
/// says why there is no list (in words that follow "the installed one could not be read: ").
/// Only a command whose program is a python (`python -m sglang.launch_server`) or the
/// engine's own program (`sglang serve`, `vllm serve`) is asked: a wrapper (`sh -c`, `srun`)
/// might start a server instead of printing its help.
pub fn installed(
    command: &[Expanded],
    env: &BTreeMap<String, Expanded>,
    timeout: Duration,
) -> Result<KnownFlags, String> {
    let Some(program) = command.first().map(|e| e.0.as_str()) else {
        return Err("server.command is empty".into());
    };
    let base = Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    if !(base.starts_with("python") || base == "sglang" || base == "vllm") {
        return Err(format!(
            "server.command starts with `{program}`, not a python or the engine's own program, so it is not run"
        ));
    }
    let mut argv: Vec<&str> = command.iter().map(|e| e.0.as_str()).collect();
    argv.push("--help");
    let shown = argv.join(" ");
    let text = run(&argv, env, timeout).map_err(|e| format!("`{shown}`: {e}"))?;
    KnownFlags::from_help(&text, &shown)
}

/// Run `argv` and return its stdout, or why not: not started, no exit within `timeout` (then
/// killed), or a failure with the last line it wrote to stderr.
fn run(
    argv: &[&str],
    env: &BTreeMap<String, Expanded>,
    timeout: Duration,
) -> Result<String, String> {
    let (program, args) = argv.split_first().ok_or_else(|| "no program".to_string())?;
    let mut child = Command::new(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.0.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start it ({e})"))?;
    // Read both pipes while it runs: a --help of ~200 kB fills a pipe before the exit.
    let reader = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out = reader(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = reader(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let t0 = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if t0.elapsed() < timeout => std::thread::sleep(Duration::from_millis(50)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no answer in {} s", timeout.as_secs()));
            }
            Err(e) => return Err(e.to_string()),
        }
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    if !status.success() {
        let last = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no message");
        return Err(format!("it failed ({status}): {}", last.trim()));
    }
    Ok(stdout)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn cmd(words: &[&str]) -> Vec<Expanded> {
        words.iter().map(|w| Expanded(w.to_string())).collect()
    }

    #[test]
    fn a_wrapper_is_not_run_and_a_failure_says_why() {
        let env = BTreeMap::new();
        let e = installed(&cmd(&["sh", "-c", "touch x"]), &env, HELP_TIMEOUT).unwrap_err();
        assert!(e.contains("not a python"), "{e}");
        let e = installed(
            &cmd(&["python-surely-not-installed-here"]),
            &env,
            HELP_TIMEOUT,
        )
        .unwrap_err();
        assert!(e.contains("cannot start it"), "{e}");
    }

    #[test]
    fn a_python_that_fails_or_hangs_is_named_with_its_reason() {
        let Ok(python) = which("python3") else {
            return; // no python here: nothing to run
        };
        let env = BTreeMap::new();
        let e = installed(
            &cmd(&[&python, "-m", "surely_no_such_module_sgtune"]),
            &env,
            HELP_TIMEOUT,
        )
        .unwrap_err();
        assert!(e.contains("No module named"), "{e}");
        let e = installed(
            &cmd(&[&python, "-c", "import time; time.sleep(30)"]),
            &env,
            Duration::from_millis(300),
        )
        .unwrap_err();
        assert!(e.contains("no answer in"), "{e}");
        // A real argparse help: its flags, and the command that printed them.
        let script = "import argparse, sys\np = argparse.ArgumentParser()\np.add_argument('--mem-fraction-static')\np.add_argument('--tp-size', '--tensor-parallel-size')\np.parse_args()\n";
        let k = installed(&cmd(&[&python, "-c", script]), &env, HELP_TIMEOUT).unwrap();
        assert!(k.contains("mem_fraction_static") && k.contains("tensor_parallel_size"));
        assert!(k.source.to_string().contains("-c"), "{}", k.source);
    }

    fn which(name: &str) -> Result<String, ()> {
        let path = std::env::var("PATH").map_err(|_| ())?;
        std::env::split_paths(&path)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
            .map(|p| p.display().to_string())
            .ok_or(())
    }
}
