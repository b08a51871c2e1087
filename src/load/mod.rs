//! The load generator: seeded prompts, OpenAI-compatible streaming requests sent by the
//! workload's arrival mode (closed or open loop, sessions, a trace's replay), per-request
//! samples.
pub(crate) mod arrival;
pub mod dataset;
pub mod driver;
pub mod http1;
pub mod openai;
pub(crate) mod phase;
pub mod prompts;
pub mod quality;
pub mod request;
pub mod sample;
pub mod sessions;
pub mod sse;
pub mod trace;
