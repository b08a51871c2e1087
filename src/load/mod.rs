//! The load generator: seeded prompts, OpenAI-compatible streaming requests, closed-loop
//! concurrency, per-request samples.
pub mod dataset;
pub mod driver;
pub mod http1;
pub mod openai;
pub mod prompts;
pub mod quality;
pub mod sessions;
pub mod sse;
pub mod trace;
