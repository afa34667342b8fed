//! The provisional tokenizer shared by the built-in harness and the simulated
//! engine: one token per whitespace-separated word. It enters every key as
//! [`TOKENIZER`]; the `tokenizers`-crate tokenizer replaces it for real models.

/// The tokenizer's identity in keys.
pub const TOKENIZER: &str = "whitespace-v1";

pub fn count(text: &str) -> usize {
    text.split_whitespace().count()
}
