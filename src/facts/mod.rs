//! What perfpipe knows about engines and harnesses, below the experiment's
//! vocabulary: which engines there are and how each is started, which
//! accelerators they run on, their serve flags' canonical form, and the
//! versions of perfpipe's own simulated engine and built-in harness that
//! keys name. The experiment parser, the keys and the lockfile read these
//! facts; the code that starts engines and measures them is in `engine`,
//! `harness` and `exec`. (pure)

pub mod command;
mod engine;
pub mod flags;
pub mod releases;
pub mod startable;

pub use engine::{EngineKind, Runtime, default_image};

/// Version of the simulated engine's behaviour; part of every `sim` key.
/// Bump it by hand whenever the simulation changes a number.
pub const SIM_ENGINE_VERSION: &str = "1";

/// Version of the built-in harness's behaviour; part of every key.
/// Bump it by hand whenever a change can move a number.
///
/// History:
/// - 1: first version.
/// - 2: chunks timestamped per network read by perfpipe's own SSE parser;
///   random prompts built as vLLM v0.11 builds them, through the model's tokenizer.
/// - 3: each stream read to its end so its connection is reused (no TCP
///   connect inside a later request's TTFT); client CPU counted over the
///   measured window. Later, the stream client's own pool made that exact
///   (one connection per stream, where a race could open a few more) with
///   the same bytes sent: a fix of 3's intent, not a new version.
/// - 4: random prompts are vLLM 0.32's token for token (numpy's PCG64, the
///   special ids left out, the decode/re-encode loop drawing ids).
/// - 5: request bodies are vLLM 0.32's (`repetition_penalty` and `logprobs`
///   in completions, a chat prompt as a text part, `ignore_eos` only when
///   true and always for random prompts); input tokens are the server's
///   `usage.prompt_tokens` when it sends them.
pub const BUILTIN_HARNESS_VERSION: &str = "5";

/// A full git commit sha, as the Hub names revisions.
pub fn is_commit(revision: &str) -> bool {
    revision.len() == 40 && revision.bytes().all(|b| b.is_ascii_hexdigit())
}
