//! `server:`: the engine, its command, flags and environment, and the other engine's side.

use super::env::Expanded;
use super::grid::ParamMap;
use crate::plan::engine::Engine;
use crate::plan::flags::ParamValue;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub(super) fn default_command(engine: Engine) -> Vec<Expanded> {
    engine
        .default_command()
        .iter()
        .map(|s| Expanded(s.to_string()))
        .collect()
}
fn default_host() -> String {
    "127.0.0.1".into()
}
fn default_ready_timeout() -> u64 {
    1800
}
fn default_stop_timeout() -> u64 {
    30
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSpec {
    /// The serving engine: `sglang` (default) or `vllm` (`plan::engine` has what differs).
    #[serde(default)]
    pub engine: Engine,
    /// `command` as written, when it is: the engine's default otherwise.
    #[serde(default, rename = "command", skip_serializing)]
    pub(super) command_given: Option<Vec<Expanded>>,
    /// Program and leading arguments; `${VAR}` is expanded from the environment. Set by
    /// [`parse`] from `command`, or the engine's default command.
    #[serde(skip_deserializing)]
    pub command: Vec<Expanded>,
    pub model_path: Expanded,
    #[serde(default = "default_host")]
    pub host: String,
    /// Fixed port; default: a free port per run.
    #[serde(default)]
    pub port: Option<u16>,
    /// Flags for every run.
    #[serde(default)]
    pub args: ParamMap,
    /// Extra environment for the server; values may use `${VAR}`.
    #[serde(default)]
    pub env: BTreeMap<String, Expanded>,
    #[serde(default = "default_ready_timeout")]
    pub ready_timeout_s: u64,
    #[serde(default = "default_stop_timeout")]
    pub stop_timeout_s: u64,
    /// On GPU machines: how long to wait, after a server stops, for every GPU to return to the
    /// memory it used before the sweep (polled with nvidia-smi).
    #[serde(default = "default_gpu_release")]
    pub gpu_release_timeout_s: u64,
    /// For configurations of the other engine (`engine: vllm` in a configuration of an SGLang
    /// sweep, or the reverse): that engine's command, flags and extra environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sglang: Option<EngineSide>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vllm: Option<EngineSide>,
}

/// `server.sglang:` / `server.vllm:`: what a configuration of that engine runs with when it
/// is not `server.engine`. Its `args` replace `server.args` (the engines' flags differ); its
/// `env` is added to `server.env`; without `command`, the engine's default command.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EngineSide {
    #[serde(default)]
    pub command: Option<Vec<Expanded>>,
    #[serde(default)]
    pub args: ParamMap,
    #[serde(default)]
    pub env: BTreeMap<String, Expanded>,
}

impl ServerSpec {
    pub(super) fn side(&self, engine: Engine) -> Option<&EngineSide> {
        match engine {
            Engine::Sglang => self.sglang.as_ref(),
            Engine::Vllm => self.vllm.as_ref(),
        }
    }

    /// The program and leading arguments of a configuration of `engine`.
    pub fn command_for(&self, engine: Engine) -> Vec<Expanded> {
        if engine == self.engine {
            return self.command.clone();
        }
        self.side(engine)
            .and_then(|s| s.command.clone())
            .unwrap_or_else(|| default_command(engine))
    }

    /// The flags every configuration of `engine` starts from.
    pub fn args_for(&self, engine: Engine) -> &[(String, ParamValue)] {
        if engine == self.engine {
            return &self.args.0;
        }
        self.side(engine).map_or(&[], |s| s.args.0.as_slice())
    }

    /// The extra environment of a configuration of `engine`.
    pub fn env_for(&self, engine: Engine) -> BTreeMap<String, Expanded> {
        let mut env = self.env.clone();
        if engine != self.engine {
            if let Some(s) = self.side(engine) {
                env.extend(s.env.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
        env
    }
}

fn default_gpu_release() -> u64 {
    60
}
