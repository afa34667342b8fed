//! Counting, decoding and encoding tokens the way the model's tokenizer does:
//! a Hugging Face `tokenizer.json` when one is on this machine, or the
//! built-in whitespace tokenizer (one token per word) when none is. The
//! tokenizer's identity enters every key, so the two never share results.

mod find;

use std::path::{Path, PathBuf};

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
            id: format!("sha256:{}", crate::digest::sha256_hex(&bytes)),
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

    /// The special tokens' ids, ascending, as Python's
    /// `tokenizer.all_special_ids` lists them for a `tokenizer.json` whose
    /// added tokens flag the special ones (`<|endoftext|>` and the chat
    /// markers of Qwen's; `<unk>`, `<s>` and `</s>` of Llama 2's).
    pub fn special_ids(&self) -> Vec<u32> {
        match self {
            Self::Whitespace => Vec::new(),
            Self::HuggingFace { inner, .. } => {
                let mut ids: Vec<u32> = inner
                    .get_added_tokens_decoder()
                    .into_iter()
                    .filter(|(_, token)| token.special)
                    .map(|(id, _)| id)
                    .collect();
                ids.sort_unstable();
                ids
            }
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

    /// A copy that encodes exactly as this one, for a batch of many texts:
    /// its BPE word cache holds `BATCH_WORDS` words rather than the
    /// library's 10,000, and an empty continuing-subword prefix or
    /// end-of-word suffix is dropped (the library would add an empty one by
    /// allocating a string per character). Random prompts of a 150k-token
    /// vocabulary build about 20% faster; the copy is dropped with its cache.
    pub fn for_batch(&self) -> Self {
        /// Words repeat across random prompts, which are windows of one
        /// sequence of token ids; about 15 MB when full.
        const BATCH_WORDS: usize = 100_000;
        match self {
            Self::Whitespace => Self::Whitespace,
            Self::HuggingFace { inner, id, path } => {
                let mut inner = inner.clone();
                let mut model = inner.get_model().clone();
                if let tokenizers::ModelWrapper::BPE(bpe) = &mut model {
                    for affix in [
                        &mut bpe.continuing_subword_prefix,
                        &mut bpe.end_of_word_suffix,
                    ] {
                        if affix.as_deref() == Some("") {
                            *affix = None;
                        }
                    }
                }
                model.resize_cache(BATCH_WORDS);
                inner.with_model(model);
                Self::HuggingFace {
                    inner,
                    id: id.clone(),
                    path: path.clone(),
                }
            }
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
        assert_eq!(t.special_ids(), [0], "<|endoftext|>");
        let ids = t.encode("the engine serves tokens", false);
        assert_eq!(t.decode(&ids), "the engine serves tokens");
        assert!(t.id().starts_with("sha256:") && t.id().len() == 71);
    }

    /// The fixture as Qwen's tokenizer.json writes a BPE: an empty
    /// continuing-subword prefix and end-of-word suffix.
    fn fixture_with_empty_affixes() -> Tokenizer {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tokenizer/tokenizer.json");
        let mut json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        json["model"]["continuing_subword_prefix"] = "".into();
        json["model"]["end_of_word_suffix"] = "".into();
        Tokenizer::HuggingFace {
            inner: Box::new(tokenizers::Tokenizer::from_bytes(json.to_string()).unwrap()),
            id: "sha256:test".into(),
            path,
        }
    }

    #[test]
    fn a_batch_copy_encodes_and_decodes_as_the_tokenizer_does() {
        for t in [fixture(), fixture_with_empty_affixes()] {
            let batch = t.for_batch();
            assert_eq!(batch.id(), t.id());
            for start in (0..1024).step_by(61) {
                let ids: Vec<u32> = (start..start + 150).map(|i| i % 1024).collect();
                let text = t.decode(&ids);
                assert_eq!(batch.decode(&ids), text);
                let encoded = t.encode(&text, false);
                assert!(encoded.len() > 10, "{text:?} encodes to tokens");
                assert_eq!(batch.encode(&text, false), encoded, "{text:?}");
            }
        }
    }

    #[test]
    fn whitespace_counts_words() {
        let t = Tokenizer::Whitespace;
        assert_eq!(t.count(" a  b\nc "), 3);
        assert_eq!(t.decode(&t.encode("time person", false)), "time person");
        assert_eq!(t.id(), WHITESPACE);
    }
}
