//! Benchmark prompts, sampled the way `vllm bench serve` v0.11 samples them
//! (same distributions, not byte-identical prompts: vLLM's RNG is numpy's).

use serde::Deserialize;
use thiserror::Error;

use crate::rng::Rng;
use crate::tokenizer;

/// One request to send.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchRequest {
    pub prompt: String,
    /// Prompt tokens as the client counts them.
    pub prompt_len: u64,
    pub output_len: u32,
}

#[derive(Debug, Error)]
pub enum DatasetError {
    #[error("the dataset is not ShareGPT JSON (a list of {{\"conversations\": [...]}})")]
    Shape(#[source] serde_json::Error),
    #[error(
        "the dataset has no usable conversation (≥ 2 turns, prompt 4..=1024 tokens, prompt + reply ≤ 2048)"
    )]
    Empty,
}

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

/// `random`: input and output lengths drawn from
/// `[⌊L(1−r)⌋, ⌈L(1+r)⌉]` (output at least 1), prompts of random words.
pub fn random(
    input_len: u32,
    output_len: u32,
    range_ratio: f64,
    seed: u64,
    n: u32,
) -> Vec<BenchRequest> {
    let mut rng = Rng::new(seed);
    let bounds = |len: u32, min: u64| {
        let lo = ((f64::from(len) * (1.0 - range_ratio)).floor() as u64).max(min);
        let hi = ((f64::from(len) * (1.0 + range_ratio)).ceil() as u64).max(lo);
        (lo, hi)
    };
    let (in_lo, in_hi) = bounds(input_len, 0);
    let (out_lo, out_hi) = bounds(output_len, 1);
    (0..n)
        .map(|_| {
            let len = rng.range(in_lo, in_hi);
            let out = rng.range(out_lo, out_hi) as u32;
            let words: Vec<&str> = (0..len)
                .map(|_| VOCABULARY[rng.range(0, VOCABULARY.len() as u64 - 1) as usize])
                .collect();
            let prompt = words.join(" ");
            BenchRequest {
                prompt_len: tokenizer::count(&prompt) as u64,
                prompt,
                output_len: out,
            }
        })
        .collect()
}

#[derive(Deserialize)]
struct Conversation {
    conversations: Vec<Turn>,
}

#[derive(Deserialize)]
struct Turn {
    value: String,
}

/// `sharegpt` as vLLM v0.11 does it: conversations with ≥ 2 turns, a seeded
/// shuffle, the first turn as prompt and the reply's length as output length
/// (unless fixed), vLLM's filters (prompt and reply ≥ 4 tokens, prompt ≤ 1024,
/// total ≤ 2048), and oversampling by seeded draws when there are too few.
pub fn sharegpt(
    json: &str,
    n: u32,
    seed: u64,
    fixed_output: Option<u32>,
) -> Result<Vec<BenchRequest>, DatasetError> {
    let data: Vec<Conversation> = serde_json::from_str(json).map_err(DatasetError::Shape)?;
    let mut pairs: Vec<(String, String)> = data
        .into_iter()
        .filter(|c| c.conversations.len() >= 2)
        .map(|mut c| {
            let reply = c.conversations.swap_remove(1).value;
            (c.conversations.swap_remove(0).value, reply)
        })
        .collect();
    let mut rng = Rng::new(seed);
    for i in (1..pairs.len()).rev() {
        pairs.swap(i, rng.range(0, i as u64) as usize);
    }
    let mut out = Vec::new();
    for (prompt, reply) in pairs {
        if out.len() == n as usize {
            break;
        }
        let prompt_len = tokenizer::count(&prompt) as u64;
        let output_len = fixed_output.map_or(tokenizer::count(&reply) as u64, u64::from);
        let short = prompt_len < 4 || (fixed_output.is_none() && output_len < 4);
        if short || prompt_len > 1024 || prompt_len + output_len > 2048 {
            continue;
        }
        out.push(BenchRequest {
            prompt,
            prompt_len,
            output_len: output_len as u32,
        });
    }
    if out.is_empty() {
        return Err(DatasetError::Empty);
    }
    let found = out.len();
    while out.len() < n as usize {
        out.push(out[rng.range(0, found as u64 - 1) as usize].clone());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_lengths_are_exact_without_range_and_seeded() {
        let a = random(128, 4, 0.0, 42, 10);
        assert!(a.iter().all(|r| r.prompt_len == 128 && r.output_len == 4));
        assert_eq!(a, random(128, 4, 0.0, 42, 10));
        assert_ne!(a, random(128, 4, 0.0, 43, 10));
        let ranged = random(100, 10, 0.5, 1, 200);
        assert!(
            ranged
                .iter()
                .all(|r| (50..=150).contains(&r.prompt_len) && (5..=15).contains(&r.output_len))
        );
    }

    #[test]
    fn sharegpt_filters_like_vllm_and_oversamples() {
        let words = |n: usize| vec!["w"; n].join(" ");
        let json = serde_json::json!([
            {"conversations": [{"from": "human", "value": words(10)}, {"from": "gpt", "value": words(20)}]},
            {"conversations": [{"from": "human", "value": words(10)}]},
            {"conversations": [{"from": "human", "value": words(2)}, {"from": "gpt", "value": words(20)}]},
            {"conversations": [{"from": "human", "value": words(1025)}, {"from": "gpt", "value": words(5)}]},
            {"conversations": [{"from": "human", "value": words(1000)}, {"from": "gpt", "value": words(1049)}]},
        ])
        .to_string();
        let reqs = sharegpt(&json, 3, 0, None).unwrap();
        assert_eq!(reqs.len(), 3);
        assert!(
            reqs.iter()
                .all(|r| r.prompt_len == 10 && r.output_len == 20)
        );
        let fixed = sharegpt(&json, 1, 0, Some(7)).unwrap();
        assert_eq!(fixed[0].output_len, 7);
        assert!(matches!(
            sharegpt("{\"not\": 1}", 1, 0, None),
            Err(DatasetError::Shape(_))
        ));
    }
}
