//! Real SGLang 0.5.23 on CPU for the end-to-end tests (tests/real_sglang.rs,
//! tests/real_quality.rs): its environment from scripts/setup-cpu-sglang.sh, and a spec that
//! starts it.

pub struct RealEnv {
    pub python: String,
    pub model: String,
    pub standin: String,
}

/// The real server's environment, or a panic that says how to get it: a test that was asked
/// to run against real SGLang and has none fails.
pub fn real_env() -> RealEnv {
    let get = |k: &str| {
        std::env::var(k).unwrap_or_else(|_| {
            panic!("{k} is not set: run `scripts/test.sh` (or `. \"$(scripts/setup-cpu-sglang.sh)\"` first)")
        })
    };
    RealEnv {
        python: get("SGTUNE_PYTHON"),
        model: get("SGTUNE_MODEL"),
        standin: get("SGTUNE_KERNEL_STANDIN"),
    }
}

pub fn spec(env: &RealEnv, tag: &str, body: &str) -> String {
    format!(
        r#"name: e2e
server:
  command: ["{python}", -m, sglang.launch_server]
  model_path: {model}
  env:
    PYTHONPATH: {standin}
    SGLANG_USE_CPU_ENGINE: "1"
    HF_HUB_OFFLINE: "1"
    SGTUNE_TEST_TAG: {tag}
  args:
    served_model_name: tiny
    device: cpu
    attention_backend: torch_native
    disable_overlap_schedule: true
    sleep_on_idle: true
    dtype: bfloat16
    enable_metrics: true
  ready_timeout_s: 480
  stop_timeout_s: 30
{body}"#,
        python = env.python,
        model = env.model,
        standin = env.standin,
    )
}
