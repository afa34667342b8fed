//! Benchmark prompts: the dataset files perfpipe reads (checked by `inputs`
//! before anything starts) and the prompts the harnesses send, sampled the
//! way `vllm bench serve` v0.11 samples them (same distributions, not
//! byte-identical prompts: vLLM's RNG is numpy's). (pure)

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::rng::Rng;
use crate::tokenizer::Tokenizer;

/// One request to send.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchRequest {
    pub prompt: String,
    /// Prompt tokens as the client counts them.
    pub prompt_len: u64,
    pub output_len: u32,
    /// Asks for exactly `output_len` tokens (`ignore_eos`), as guidellm asks
    /// when its data gives an output token count (benchmark-runner's ShareGPT).
    pub exact_output: bool,
}

#[derive(Debug, Error)]
pub enum DatasetError {
    #[error("the dataset is not ShareGPT JSON (a list of {{\"conversations\": [...]}})")]
    Shape(#[source] serde_json::Error),
    #[error(
        "the dataset has no usable conversation (≥ 2 turns, prompt 4..=1024 tokens, prompt + reply ≤ 2048)"
    )]
    Empty,
    #[error("the dataset has no conversation of 2 or more turns (a prompt and its reply)")]
    NoConversation,
    #[error(
        "the dataset has {} (a human or user turn, then a gpt or assistant turn, both non-empty), fewer than the {} asked",
        crate::plural::count(*.found, "usable first turn", "usable first turns"),
        crate::plural::count(*.wanted as usize, "request", "requests")
    )]
    TooFewFirstTurns { found: usize, wanted: u32 },
}

/// `random` as vLLM v0.11 samples it: input lengths from
/// `[⌊L'(1−r)⌋, ⌈L'(1+r)⌉]` with `L'` = L minus the special tokens the tokenizer
/// adds, output lengths from `[max(1, ⌊O(1−r)⌋), ⌈O(1+r)⌉]`, a random offset per
/// prompt, token ids `(offset + i + j) mod vocab`, then decode, re-encode,
/// truncate and decode again, so a prompt can come out shorter than asked
/// (500 × 4000 tokens total 1,997,942 in a published run). The prompts are
/// built on every core this process may use.
pub fn random(
    tokenizer: &Tokenizer,
    input_len: u32,
    output_len: u32,
    range_ratio: f64,
    seed: u64,
    n: u32,
) -> Vec<BenchRequest> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    random_on(
        tokenizer,
        input_len,
        output_len,
        range_ratio,
        seed,
        n,
        workers,
    )
}

/// [`random`] on `workers` threads.
fn random_on(
    tokenizer: &Tokenizer,
    input_len: u32,
    output_len: u32,
    range_ratio: f64,
    seed: u64,
    n: u32,
    workers: usize,
) -> Vec<BenchRequest> {
    let mut rng = Rng::new(seed);
    let bounds = |len: u32, min: u64| {
        let lo = ((f64::from(len) * (1.0 - range_ratio)).floor() as u64).max(min);
        let hi = ((f64::from(len) * (1.0 + range_ratio)).ceil() as u64).max(lo);
        (lo, hi)
    };
    let (in_lo, in_hi) = bounds(
        input_len.saturating_sub(tokenizer.special_tokens_to_add()),
        0,
    );
    let (out_lo, out_hi) = bounds(output_len, 1);
    let vocab = u64::from(tokenizer.vocab_size().max(1));
    let input_lens: Vec<u64> = (0..n).map(|_| rng.range(in_lo, in_hi)).collect();
    let output_lens: Vec<u64> = (0..n).map(|_| rng.range(out_lo, out_hi)).collect();
    let offsets: Vec<u64> = (0..n).map(|_| rng.range(0, vocab - 1)).collect();
    // Every random draw is made above, in vLLM's order; what is left is the
    // tokenizer's work, a pure function of the prompt's index, split into
    // contiguous ranges across cores and joined in order: the same prompts,
    // byte for byte, as built one after the other.
    let tokenizer = tokenizer.for_batch();
    let build = |i: usize| {
        let ids: Vec<u32> = (0..input_lens[i])
            .map(|j| ((offsets[i] + i as u64 + j) % vocab) as u32)
            .collect();
        let mut reencoded = tokenizer.encode(&tokenizer.decode(&ids), false);
        reencoded.truncate(input_lens[i] as usize);
        BenchRequest {
            prompt: tokenizer.decode(&reencoded),
            prompt_len: reencoded.len() as u64,
            output_len: output_lens[i] as u32,
            exact_output: false,
        }
    };
    in_parallel(n as usize, workers, &build)
}

/// `build(0..n)` in order, on up to `workers` threads.
fn in_parallel<T: Send>(n: usize, workers: usize, build: &(dyn Fn(usize) -> T + Sync)) -> Vec<T> {
    let per_worker = n.div_ceil(workers.max(1)).max(1);
    std::thread::scope(|scope| {
        let parts: Vec<_> = (0..n)
            .step_by(per_worker)
            .map(|from| {
                let to = (from + per_worker).min(n);
                scope.spawn(move || (from..to).map(build).collect::<Vec<T>>())
            })
            .collect();
        parts
            .into_iter()
            .flat_map(|part| part.join().expect("building a prompt does not panic"))
            .collect()
    })
}

#[derive(Deserialize)]
struct Conversation {
    conversations: Vec<Turn>,
}

#[derive(Deserialize)]
struct Turn {
    value: String,
}

/// Checks that `json` has the shape [`sharegpt`] reads, keeping one
/// conversation's text at a time (a ShareGPT file is hundreds of MB), and
/// that [`sharegpt`] with each of `tokenizers` would find a prompt to send
/// (its filters, with `fixed_output`): a file that cannot be sampled fails
/// when the experiment is loaded, not after an engine has started. With no
/// tokenizers (a harness that samples by itself), a conversation of two
/// turns is enough.
pub fn check_sharegpt(
    json: impl std::io::Read,
    tokenizers: &[&Tokenizer],
    fixed_output: Option<u32>,
) -> Result<(), DatasetError> {
    struct Check<'a> {
        tokenizers: &'a [&'a Tokenizer],
        fixed_output: Option<u32>,
        /// Per tokenizer: a usable conversation was found.
        found: Vec<bool>,
        two_turns: bool,
    }
    impl<'de> serde::de::Visitor<'de> for &mut Check<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of conversations")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            while let Some(c) = seq.next_element::<Conversation>()? {
                let [prompt, reply, ..] = &c.conversations[..] else {
                    continue;
                };
                self.two_turns = true;
                for (found, tokenizer) in self.found.iter_mut().zip(self.tokenizers) {
                    *found = *found
                        || request(tokenizer, &prompt.value, &reply.value, self.fixed_output)
                            .is_some();
                }
            }
            Ok(())
        }
    }
    let mut check = Check {
        tokenizers,
        fixed_output,
        found: vec![false; tokenizers.len()],
        two_turns: false,
    };
    let mut de = serde_json::Deserializer::from_reader(json);
    serde::Deserializer::deserialize_seq(&mut de, &mut check).map_err(DatasetError::Shape)?;
    de.end().map_err(DatasetError::Shape)?;
    if !check.two_turns {
        return Err(DatasetError::NoConversation);
    }
    if check.found.contains(&false) {
        return Err(DatasetError::Empty);
    }
    Ok(())
}

/// The request a conversation makes, unless vLLM's filters drop it: prompt
/// and reply ≥ 4 tokens (the reply unless the output length is fixed),
/// prompt ≤ 1024, prompt + output ≤ 2048.
fn request(
    tokenizer: &Tokenizer,
    prompt: &str,
    reply: &str,
    fixed_output: Option<u32>,
) -> Option<BenchRequest> {
    let prompt_len = tokenizer.count(prompt) as u64;
    let output_len = fixed_output.map_or_else(|| tokenizer.count(reply) as u64, u64::from);
    let short = prompt_len < 4 || (fixed_output.is_none() && output_len < 4);
    if short || prompt_len > 1024 || prompt_len + output_len > 2048 {
        return None;
    }
    Some(BenchRequest {
        prompt: prompt.to_owned(),
        prompt_len,
        output_len: output_len as u32,
        exact_output: false,
    })
}

/// `sharegpt` as vLLM v0.11 does it: conversations with ≥ 2 turns, a seeded
/// shuffle, the first turn as prompt and the reply's length as output length
/// (unless fixed), vLLM's filters (prompt and reply ≥ 4 tokens, prompt ≤ 1024,
/// total ≤ 2048), and oversampling by seeded draws when there are too few.
pub fn sharegpt(
    tokenizer: &Tokenizer,
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
        out.extend(request(tokenizer, &prompt, &reply, fixed_output));
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

/// How many records benchmark-runner converts for `n` requests: Python's
/// `int(n * 1.2)`, a truncation of the float product (1 → 1, 3 → 3, 5 → 6).
pub fn benchmark_runner_records(n: u32) -> usize {
    (f64::from(n) * 1.2) as usize
}

/// ShareGPT as GPUStack's benchmark-runner converts it for guidellm
/// (`sharegpt_to_guidellm.py`): conversations in file order, no shuffle; of
/// each, its first turn, kept only when turn 0 is from `human` or `user`,
/// turn 1 from `gpt` or `assistant`, and both are non-empty; the output length
/// is the reply's token count without special tokens (or `fixed_output`);
/// conversion stops after [`benchmark_runner_records`]`(n)` records, of which
/// guidellm sends the first `n`, each asking for exactly its output length.
pub fn sharegpt_first_turns(
    tokenizer: &Tokenizer,
    json: &str,
    n: u32,
    fixed_output: Option<u32>,
) -> Result<Vec<BenchRequest>, DatasetError> {
    let mut records = benchmark_runner_conversion(tokenizer, json, n, fixed_output)?;
    records.truncate(n as usize);
    Ok(records)
}

/// Every record benchmark-runner writes for `n` requests, in order; an error
/// when there are fewer than `n` (guidellm would stop short of `prompts`).
pub fn benchmark_runner_conversion(
    tokenizer: &Tokenizer,
    json: &str,
    n: u32,
    fixed_output: Option<u32>,
) -> Result<Vec<BenchRequest>, DatasetError> {
    #[derive(Deserialize)]
    struct Conversation {
        #[serde(default)]
        conversations: Option<Vec<RunnerTurn>>,
    }
    #[derive(Deserialize)]
    struct RunnerTurn {
        #[serde(default)]
        from: Option<String>,
        #[serde(default)]
        value: Option<String>,
    }
    let data: Vec<Conversation> = serde_json::from_str(json).map_err(DatasetError::Shape)?;
    let keep = benchmark_runner_records(n);
    let mut out = Vec::new();
    for c in data {
        if out.len() == keep {
            break;
        }
        let Some([first, second, ..]) = c.conversations.as_deref() else {
            continue;
        };
        let from = |t: &RunnerTurn, names: [&str; 2]| {
            t.from.as_deref().is_some_and(|f| names.contains(&f))
        };
        if !from(first, ["human", "user"]) || !from(second, ["gpt", "assistant"]) {
            continue;
        }
        let (Some(prompt), Some(reply)) = (first.value.as_deref(), second.value.as_deref()) else {
            continue;
        };
        if prompt.is_empty() || reply.is_empty() {
            continue;
        }
        let output_len = fixed_output.unwrap_or_else(|| tokenizer.count_generated(reply) as u32);
        out.push(BenchRequest {
            prompt: prompt.to_owned(),
            prompt_len: tokenizer.count(prompt) as u64,
            output_len,
            exact_output: true,
        });
    }
    if out.len() < n as usize {
        return Err(DatasetError::TooFewFirstTurns {
            found: out.len(),
            wanted: n,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bpe() -> Tokenizer {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/tokenizer/tokenizer.json"
        );
        Tokenizer::from_file(std::path::Path::new(path)).unwrap()
    }

    #[test]
    fn random_prompts_built_in_parallel_are_those_built_one_after_the_other() {
        let bpe = bpe();
        let sequential = random_on(&bpe, 64, 8, 0.5, 7, 37, 1);
        assert_eq!(sequential.len(), 37);
        for workers in [2, 3, 8, 64] {
            assert_eq!(random_on(&bpe, 64, 8, 0.5, 7, 37, workers), sequential);
        }
        assert!(random_on(&bpe, 64, 8, 0.5, 7, 0, 3).is_empty());
    }

    /// sha256 of 300 prompts as built before the tokenizer's batch copy (any
    /// change of a byte of a prompt would change every key that uses them).
    #[test]
    fn random_prompts_are_byte_for_byte_those_built_before() {
        use sha2::{Digest, Sha256};
        let mut digest = Sha256::new();
        for r in random_on(&bpe(), 128, 32, 0.5, 3, 300, 2) {
            digest.update(r.prompt.as_bytes());
            digest.update(r.prompt_len.to_le_bytes());
            digest.update(r.output_len.to_le_bytes());
        }
        assert_eq!(
            hex::encode(digest.finalize()),
            "b90fd00be4670a1689b6092c6f1f0b2cbe7efdf481899e8b61d34fcd004472a9"
        );
    }

    #[test]
    fn random_lengths_are_exact_without_range_and_seeded() {
        let ws = Tokenizer::Whitespace;
        let a = random(&ws, 128, 4, 0.0, 42, 10);
        assert!(a.iter().all(|r| r.prompt_len == 128 && r.output_len == 4));
        assert_eq!(a, random(&ws, 128, 4, 0.0, 42, 10));
        assert_ne!(a, random(&ws, 128, 4, 0.0, 43, 10));
        let ranged = random(&ws, 100, 10, 0.5, 1, 200);
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
        let ws = Tokenizer::Whitespace;
        let reqs = sharegpt(&ws, &json, 3, 0, None).unwrap();
        assert_eq!(reqs.len(), 3);
        assert!(
            reqs.iter()
                .all(|r| r.prompt_len == 10 && r.output_len == 20)
        );
        let fixed = sharegpt(&ws, &json, 1, 0, Some(7)).unwrap();
        assert_eq!(fixed[0].output_len, 7);
        assert!(matches!(
            sharegpt(&ws, "{\"not\": 1}", 1, 0, None),
            Err(DatasetError::Shape(_))
        ));
    }

    #[test]
    fn benchmark_runner_keeps_first_turns_in_file_order_and_skips_the_rest() {
        let turn = |from: &str, value: &str| serde_json::json!({"from": from, "value": value});
        let json = serde_json::json!([
            {"conversations": [turn("human", "a b"), turn("gpt", "one two three"), turn("human", "later")]},
            {"conversations": [turn("gpt", "reply first"), turn("human", "then a question")]},
            {"conversations": [turn("user", "c"), turn("assistant", "four five six seven")]},
            {"conversations": [turn("human", ""), turn("gpt", "empty prompt")]},
            {"conversations": [turn("human", "empty reply"), turn("gpt", "")]},
            {"conversations": [turn("human", "alone")]},
            {"conversations": [turn("system", "be brief"), turn("human", "d")]},
            {"id": "no conversations"},
            {"conversations": [turn("human", "e f g"), turn("gpt", "x")]},
            {"conversations": [turn("user", "h"), turn("gpt", "y z")]},
            {"conversations": [turn("human", "i"), turn("assistant", "w")]},
        ])
        .to_string();
        let ws = Tokenizer::Whitespace;
        let all = benchmark_runner_conversion(&ws, &json, 5, None).unwrap();
        let prompts: Vec<&str> = all.iter().map(|r| r.prompt.as_str()).collect();
        assert_eq!(
            prompts,
            ["a b", "c", "e f g", "h", "i"],
            "file order, no shuffle"
        );
        let outputs: Vec<u32> = all.iter().map(|r| r.output_len).collect();
        assert_eq!(outputs, [3, 4, 1, 2, 1], "the reply's token count");
        assert!(all.iter().all(|r| r.exact_output));
        assert_eq!(all[2].prompt_len, 3);

        // ⌊1.2·N⌋ records are converted, as Python's int(N * 1.2), then N sent.
        assert_eq!(
            [1, 3, 4, 5, 10, 1000].map(benchmark_runner_records),
            [1, 3, 4, 6, 12, 1200]
        );
        assert_eq!(
            benchmark_runner_conversion(&ws, &json, 3, None)
                .unwrap()
                .len(),
            3
        );
        assert_eq!(
            benchmark_runner_conversion(&ws, &json, 4, None)
                .unwrap()
                .len(),
            4
        );
        let sent = sharegpt_first_turns(&ws, &json, 4, None).unwrap();
        assert_eq!(sent, all[..4]);
        let fixed = sharegpt_first_turns(&ws, &json, 2, Some(64)).unwrap();
        assert!(fixed.iter().all(|r| r.output_len == 64));
        assert_eq!(
            sharegpt_first_turns(&ws, &json, 6, None)
                .unwrap_err()
                .to_string(),
            "the dataset has 5 usable first turns (a human or user turn, then a gpt or assistant turn, both non-empty), fewer than the 6 requests asked"
        );
    }

    #[test]
    fn benchmark_runner_counts_replies_without_special_tokens() {
        let t = bpe();
        let reply = "The answer is forty-two.";
        let json = serde_json::json!([
            {"conversations": [{"from": "human", "value": "Why?"}, {"from": "gpt", "value": reply}]},
        ])
        .to_string();
        let [r] = <[BenchRequest; 1]>::try_from(sharegpt_first_turns(&t, &json, 1, None).unwrap())
            .unwrap();
        assert_eq!(r.output_len as usize, t.encode(reply, false).len());
    }

    #[test]
    fn the_shape_check_accepts_what_sharegpt_reads_and_names_the_place_otherwise() {
        let fixture = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/datasets/sharegpt-tiny.json"
        );
        check_sharegpt(fs_err::File::open(fixture).unwrap(), &[], None).unwrap();
        let err = |json: &str| {
            check_sharegpt(json.as_bytes(), &[], None)
                .unwrap_err()
                .to_string()
        };
        let cause = |json: &str| match check_sharegpt(json.as_bytes(), &[], None) {
            Err(DatasetError::Shape(e)) => e.to_string(),
            other => panic!("{other:?}"),
        };
        let causes: Vec<String> = [
            "{\"conversations\": []}",
            "[{\"id\": 1},\n {\"id\": 2}]",
            "[{\"conversations\": [{\"value\": 7}]}]",
            "<html>",
            "[] []",
        ]
        .into_iter()
        .map(cause)
        .collect();
        assert_eq!(
            causes,
            [
                "invalid type: map, expected a list of conversations at line 1 column 1",
                "missing field `conversations` at line 1 column 10",
                "invalid type: integer `7`, expected a string at line 1 column 32",
                "expected value at line 1 column 1",
                "trailing characters at line 1 column 4",
            ]
        );
        assert_eq!(
            err("[{\"conversations\": [{\"value\": \"hi\"}]}]"),
            DatasetError::NoConversation.to_string()
        );
    }

    #[test]
    fn the_check_refuses_a_file_whose_every_conversation_is_filtered_out() {
        let words = |n: usize| vec!["w"; n].join(" ");
        let json = serde_json::json!([
            {"conversations": [{"value": words(2)}, {"value": words(20)}]},
            {"conversations": [{"value": words(1025)}, {"value": words(5)}]},
            {"conversations": [{"value": words(10)}, {"value": words(3)}]},
        ])
        .to_string();
        let ws = Tokenizer::Whitespace;
        assert!(matches!(
            check_sharegpt(json.as_bytes(), &[&ws], None),
            Err(DatasetError::Empty)
        ));
        assert!(matches!(
            sharegpt(&ws, &json, 1, 0, None),
            Err(DatasetError::Empty)
        ));
        // A fixed output length keeps the short reply; a harness that samples
        // by itself only needs two turns.
        check_sharegpt(json.as_bytes(), &[&ws], Some(8)).unwrap();
        check_sharegpt(json.as_bytes(), &[], None).unwrap();
        // Each tokenizer must find a prompt: the BPE one counts more tokens.
        let json = serde_json::json!([
            {"conversations": [{"value": "an apple a day"}, {"value": words(10)}]},
        ])
        .to_string();
        check_sharegpt(json.as_bytes(), &[&ws], None).unwrap();
        assert_eq!(
            check_sharegpt(json.as_bytes(), &[&ws, &bpe()], None).is_ok(),
            sharegpt(&bpe(), &json, 1, 0, None).is_ok()
        );
    }

    #[test]
    fn random_prompts_go_through_the_bpe_tokenizer_like_vllms() {
        let t = bpe();
        let reqs = random(&t, 400, 20, 0.2, 42, 50);
        assert_eq!(reqs, random(&t, 400, 20, 0.2, 42, 50));
        assert_ne!(reqs, random(&t, 400, 20, 0.2, 7, 50));
        // Truncation after re-encoding never lets a prompt exceed its drawn length.
        assert!(
            reqs.iter()
                .all(|r| (1..=480).contains(&r.prompt_len) && (16..=24).contains(&r.output_len))
        );
        // The prompt is text of the model's tokens, not the whitespace words.
        assert!(reqs.iter().all(|r| !r.prompt.is_empty()));
        assert_ne!(
            reqs[0].prompt,
            random(&Tokenizer::Whitespace, 400, 20, 0.2, 42, 50)[0].prompt
        );
    }
}
