//! Counting, decoding and encoding tokens the way the model's tokenizer does:
//! a Hugging Face `tokenizer.json` when one is on this machine, or the
//! built-in whitespace tokenizer (one token per word) when none is. The
//! tokenizer's identity enters every key, so the two never share results.

mod find;

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use thiserror::Error;
use tokenizers::PostProcessor as _;

pub use find::{find_tokenizer_json, hub_cache};

/// The built-in tokenizer's identity in keys.
pub const WHITESPACE: &str = "whitespace-v1";

/// Words the whitespace tokenizer decodes token ids to.
const VOCABULARY: &[&str] = &[
    "time",
    "person",
    "year",
    "way",
    "day",
    "thing",
    "man",
    "world",
    "life",
    "hand",
    "part",
    "child",
    "eye",
    "woman",
    "place",
    "work",
    "week",
    "case",
    "point",
    "number",
    "group",
    "problem",
    "fact",
    "be",
    "have",
    "do",
    "say",
    "get",
    "make",
    "go",
    "know",
    "take",
    "see",
    "come",
    "think",
    "look",
    "want",
    "give",
    "use",
    "find",
    "tell",
    "ask",
    "seem",
    "feel",
    "try",
    "leave",
    "call",
    "good",
    "new",
    "first",
    "last",
    "long",
    "great",
    "little",
    "own",
    "other",
    "old",
    "right",
    "big",
    "high",
    "different",
    "small",
    "large",
    "next",
    "early",
    "young",
    "important",
    "few",
    "public",
    "bad",
];

pub enum Tokenizer {
    Whitespace,
    HuggingFace {
        inner: Box<tokenizers::Tokenizer>,
        /// `sha256:<hex>` of the `tokenizer.json` bytes.
        id: String,
        path: PathBuf,
    },
}

#[derive(Debug, Error)]
pub enum Error {
    #[error("cannot read tokenizer `{path}`")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{path}` is not a tokenizer.json: {message}")]
    Parse { path: String, message: String },
    #[error(
        "no tokenizer `{name}` on this machine: not a tokenizer.json, a model directory holding one, nor a model in the Hugging Face cache"
    )]
    NotFound { name: String },
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.id())
    }
}

impl Tokenizer {
    /// Loads a `tokenizer.json`.
    pub fn from_file(path: &Path) -> Result<Self, Error> {
        let bytes = fs_err::read(path).map_err(|source| Error::Read {
            path: path.display().to_string(),
            source,
        })?;
        let inner = tokenizers::Tokenizer::from_bytes(&bytes).map_err(|e| Error::Parse {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Ok(Self::HuggingFace {
            inner: Box::new(inner),
            id: format!("sha256:{}", hex::encode(Sha256::digest(&bytes))),
            path: path.to_owned(),
        })
    }

    /// The model's tokenizer if this machine has it (a model directory or the
    /// Hugging Face cache), else the whitespace tokenizer. Never downloads.
    pub fn for_model(model: &str, revision: &str) -> Result<Self, Error> {
        match find_tokenizer_json(model, revision) {
            Some(path) => Self::from_file(&path),
            None => Ok(Self::Whitespace),
        }
    }

    /// The tokenizer a user named: a `tokenizer.json` (under any file name),
    /// a model directory, or a model in the Hugging Face cache. It loads or
    /// fails; it never falls back to words.
    pub fn named(name: &str, revision: &str) -> Result<Self, Error> {
        let path = Path::new(name);
        if path.is_file() {
            return Self::from_file(path);
        }
        match find_tokenizer_json(name, revision) {
            Some(path) => Self::from_file(&path),
            None => Err(Error::NotFound { name: name.into() }),
        }
    }

    /// What enters keys: `whitespace-v1` or `sha256:<hex>` of the file.
    pub fn id(&self) -> String {
        match self {
            Self::Whitespace => WHITESPACE.to_owned(),
            Self::HuggingFace { id, .. } => id.clone(),
        }
    }

    /// Tokens of the base vocabulary (without added tokens), as Python's `tokenizer.vocab_size`.
    pub fn vocab_size(&self) -> u32 {
        match self {
            Self::Whitespace => VOCABULARY.len() as u32,
            Self::HuggingFace { inner, .. } => inner.get_vocab_size(false) as u32,
        }
    }

    /// Special tokens the tokenizer adds to one sequence (`num_special_tokens_to_add()`).
    pub fn special_tokens_to_add(&self) -> u32 {
        match self {
            Self::Whitespace => 0,
            Self::HuggingFace { inner, .. } => inner
                .get_post_processor()
                .map_or(0, |p| p.added_tokens(false) as u32),
        }
    }

    pub fn encode(&self, text: &str, add_special_tokens: bool) -> Vec<u32> {
        match self {
            Self::Whitespace => text
                .split_whitespace()
                .map(|w| VOCABULARY.iter().position(|v| *v == w).unwrap_or(0) as u32)
                .collect(),
            Self::HuggingFace { inner, .. } => inner
                .encode_fast(text, add_special_tokens)
                .map(|e| e.get_ids().to_vec())
                .unwrap_or_default(),
        }
    }

    pub fn decode(&self, ids: &[u32]) -> String {
        match self {
            Self::Whitespace => ids
                .iter()
                .map(|&id| VOCABULARY[id as usize % VOCABULARY.len()])
                .collect::<Vec<_>>()
                .join(" "),
            Self::HuggingFace { inner, .. } => inner.decode(ids, false).unwrap_or_default(),
        }
    }

    /// Tokens of generated text, as `vllm bench serve` counts a response
    /// without usage: `tokenizer(text, add_special_tokens=False).input_ids`.
    pub fn count_generated(&self, text: &str) -> usize {
        self.encode(text, false).len()
    }

    /// Tokens in `text` (with special tokens, as `tokenizer(text).input_ids`).
    pub fn count(&self, text: &str) -> usize {
        match self {
            Self::Whitespace => text.split_whitespace().count(),
            Self::HuggingFace { .. } => self.encode(text, true).len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn fixture() -> Tokenizer {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tokenizer/tokenizer.json");
        Tokenizer::from_file(&path).unwrap()
    }

    #[test]
    fn a_shipped_bpe_tokenizer_round_trips_text_and_has_an_identity() {
        let t = fixture();
        assert_eq!(t.vocab_size(), 1024);
        assert_eq!(t.special_tokens_to_add(), 0);
        let ids = t.encode("the engine serves tokens", false);
        assert_eq!(t.decode(&ids), "the engine serves tokens");
        assert!(t.id().starts_with("sha256:") && t.id().len() == 71);
    }

    #[test]
    fn whitespace_counts_words() {
        let t = Tokenizer::Whitespace;
        assert_eq!(t.count(" a  b\nc "), 3);
        assert_eq!(t.decode(&t.encode("time person", false)), "time person");
        assert_eq!(t.id(), WHITESPACE);
    }
}
