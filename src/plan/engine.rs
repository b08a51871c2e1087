//! The serving engines sgtune reads: the name a spec and results use. `observe::engine_log`
//! picks the log parser by it.

use serde::{Deserialize, Serialize};

/// A serving engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    #[default]
    Sglang,
    Vllm,
}

impl Engine {
    pub const ALL: [Engine; 2] = [Engine::Sglang, Engine::Vllm];

    /// The name a spec and results use.
    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Sglang => "sglang",
            Engine::Vllm => "vllm",
        }
    }

    /// The name for people.
    pub fn label(self) -> &'static str {
        match self {
            Engine::Sglang => "SGLang",
            Engine::Vllm => "vLLM",
        }
    }
}
