//! `workload.endpoint:`: the OpenAI API a workload's requests go to. Its own file because both
//! `workload` and `sessions` (whose traces need one endpoint or the other) read it, and
//! neither may use the other both ways (tests/layers.rs refuses the circle).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Endpoint {
    /// `/v1/completions` with token-id prompts of exact length.
    Completions,
    /// `/v1/chat/completions` with text prompts.
    Chat,
}

impl Endpoint {
    pub fn path(self) -> &'static str {
        match self {
            Endpoint::Completions => "/v1/completions",
            Endpoint::Chat => "/v1/chat/completions",
        }
    }
}
