//! Benchmark prompts: the dataset files perfpipe reads (checked by `inputs`
//! before anything starts) and the prompts the harnesses send: random
//! prompts are `vllm bench serve` 0.32's, token for token (numpy's
//! generator, [`crate::numpy_random`]); ShareGPT is sampled with vLLM
//! v0.11's filters and perfpipe's own seeded shuffle. (pure)

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::numpy_random::Generator;
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
    /// when its data gives an output token count (benchmark-runner's ShareGPT)
    /// and vLLM 0.32 asks of its random prompts.
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

/// `random` as `vllm bench serve` 0.32 samples it (`RandomDataset`),
/// prompt for prompt and token for token: from
/// `np.random.default_rng(seed)`, input lengths drawn from
/// `[⌊L'(1−r)⌋, ⌈L'(1+r)⌉]` with `L'` = L minus the special tokens the
/// tokenizer adds, then output lengths from `[max(1, ⌊O(1−r)⌋), ⌈O(1+r)⌉]`,
/// then an offset per prompt from `[0, vocab)`; prompt `i` is the token ids
/// `allowed[(offset + i + j) mod |allowed|]`, `allowed` being the base
/// vocabulary without the special ids, ascending (the order Python's set
/// gives them). Then vLLM's loop: decode, re-encode, and truncate or extend
/// with drawn ids until the count is right, at most 10 times, so a prompt
/// can come out longer or shorter than drawn. With `prefix_len` (vLLM's
/// `--random-prefix-len`), `prefix_len` indices into `allowed` are drawn
/// next, once, and put through the same loop; every prompt is that prefix
/// and then its own ids, `prefix_len` + its length long. The prompts are
/// built on every core this process may use.
pub fn random(tokenizer: &Tokenizer, shape: Shape, seed: u64, n: u32) -> Vec<BenchRequest> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    random_on(tokenizer, shape, seed, n, workers)
}

/// The lengths of [`random`]'s prompts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    /// Tokens drawn once that begin every prompt.
    pub prefix_len: u32,
    pub input_len: u32,
    pub output_len: u32,
    /// Lengths are drawn from `[L(1-r), L(1+r)]`.
    pub range_ratio: f64,
}

impl Shape {
    /// Prompts of `input_len` tokens, without a prefix.
    pub fn unprefixed(input_len: u32, output_len: u32, range_ratio: f64) -> Self {
        Self {
            prefix_len: 0,
            input_len,
            output_len,
            range_ratio,
        }
    }
}

/// [`random`] on `workers` threads.
fn random_on(
    tokenizer: &Tokenizer,
    shape: Shape,
    seed: u64,
    n: u32,
    workers: usize,
) -> Vec<BenchRequest> {
    let Shape {
        prefix_len,
        input_len,
        output_len,
        range_ratio,
    } = shape;
    let mut rng = Generator::default_rng(seed);
    let count = n as usize;
    // vLLM's `get_sampling_params`, with Python's float arithmetic.
    let real_input_len = f64::from(input_len.saturating_sub(tokenizer.special_tokens_to_add()));
    let in_lo = (real_input_len * (1.0 - range_ratio)).floor() as u64;
    let in_hi = ((real_input_len * (1.0 + range_ratio)).ceil() as u64).max(in_lo);
    let out_lo = ((f64::from(output_len) * (1.0 - range_ratio)).floor() as u64).max(1);
    let out_hi = ((f64::from(output_len) * (1.0 + range_ratio)).ceil() as u64).max(out_lo);
    let vocab = u64::from(tokenizer.vocab_size().max(1));
    let input_lens = rng.integers(in_lo, in_hi + 1, count);
    let output_lens = rng.integers(out_lo, out_hi + 1, count);
    let offsets = rng.integers(0, vocab, count);
    let special = tokenizer.special_ids();
    let allowed: Vec<u32> = (0..vocab as u32)
        .filter(|id| special.binary_search(id).is_err())
        .collect();
    let allowed = if allowed.is_empty() {
        (0..vocab as u32).collect()
    } else {
        allowed
    };
    let prefix = random_prefix(tokenizer, &allowed, prefix_len as usize, vocab, &mut rng);

    // The decode/re-encode loop draws more ids only for a prompt that comes
    // out short, from the one generator, in prompt order. Every prompt runs
    // its loop on any core up to its first draw (most never draw); those
    // that must draw then go on one after the other, in order: the same
    // prompts, byte for byte, as built one after the other.
    let tokenizer = tokenizer.for_batch();
    let target = |i: usize| prefix_len as usize + input_lens[i] as usize;
    let first_pass = |i: usize| {
        let len = allowed.len() as u64;
        let ids: Vec<u32> = prefix
            .iter()
            .copied()
            .chain(
                (0..input_lens[i]).map(|j| allowed[((offsets[i] + i as u64 + j) % len) as usize]),
            )
            .collect();
        fit(&tokenizer, ids, target(i), FIT_TRIES, None)
    };
    crate::parallel::in_parallel(count, workers, &first_pass)
        .into_iter()
        .enumerate()
        .map(|(i, fitted)| {
            let (prompt, tokens) =
                fitted.unwrap_or_else(|short| short.resume(&tokenizer, target(i), vocab, &mut rng));
            BenchRequest {
                prompt,
                prompt_len: tokens.len() as u64,
                output_len: output_lens[i] as u32,
                // `vllm bench serve` 0.32 asks random prompts for exactly
                // their output length (`ignore_eos`) on OpenAI backends.
                exact_output: true,
            }
        })
        .collect()
}

/// vLLM's `RandomDataset.get_prefix`: `len` ids of `allowed` drawn by index,
/// through the decode/re-encode loop (drawing from `[0, vocab)` when short);
/// none drawn for a length of 0.
fn random_prefix(
    tokenizer: &Tokenizer,
    allowed: &[u32],
    len: usize,
    vocab: u64,
    rng: &mut Generator,
) -> Vec<u32> {
    if len == 0 {
        return Vec::new();
    }
    let ids = rng
        .integers(0, allowed.len() as u64, len)
        .into_iter()
        .map(|i| allowed[i as usize])
        .collect();
    fit(tokenizer, ids, len, FIT_TRIES, Some((vocab, rng)))
        .expect("with a generator, the loop ends with a prompt")
        .1
}

/// How often vLLM's `gen_prompt_decode_to_target_len` re-encodes before it
/// keeps a prompt of the wrong length (`max_retry`).
const FIT_TRIES: u32 = 10;

/// A prompt whose loop stopped where it must draw ids (see [`fit`]).
#[derive(Debug)]
struct Short {
    /// The re-encoded ids, fewer than the target.
    ids: Vec<u32>,
    tries_left: u32,
}

impl Short {
    /// [`fit`] from where it stopped, drawing from `rng`.
    fn resume(
        mut self,
        tokenizer: &Tokenizer,
        target: usize,
        vocab: u64,
        rng: &mut Generator,
    ) -> (String, Vec<u32>) {
        extend_with_draws(&mut self.ids, target, vocab, rng);
        fit(
            tokenizer,
            self.ids,
            target,
            self.tries_left - 1,
            Some((vocab, rng)),
        )
        .expect("with a generator, the loop ends with a prompt")
    }
}

fn extend_with_draws(ids: &mut Vec<u32>, target: usize, vocab: u64, rng: &mut Generator) {
    let missing = target - ids.len();
    ids.extend(
        rng.integers(0, vocab, missing)
            .into_iter()
            .map(|id| id as u32),
    );
}

/// vLLM's `gen_prompt_decode_to_target_len`: decode `ids`, re-encode the
/// text (no special tokens added); with `tries_left` at 0 or `target` ids,
/// that text is the prompt; with more, the ids are cut to `target`, with
/// fewer, extended by ids drawn from `[0, vocab)` (the whole base
/// vocabulary, special ids included); and again. Without a generator it
/// stops at the first draw and says where ([`Short`]).
fn fit(
    tokenizer: &Tokenizer,
    mut ids: Vec<u32>,
    target: usize,
    mut tries_left: u32,
    mut draws: Option<(u64, &mut Generator)>,
) -> Result<(String, Vec<u32>), Short> {
    loop {
        let prompt = tokenizer.decode(&ids);
        ids = tokenizer.encode(&prompt, false);
        if tries_left == 0 || ids.len() == target {
            return Ok((prompt, ids));
        }
        if ids.len() > target {
            ids.truncate(target);
        } else if let Some((vocab, rng)) = draws.as_mut() {
            extend_with_draws(&mut ids, target, *vocab, rng);
        } else {
            return Err(Short { ids, tries_left });
        }
        tries_left -= 1;
    }
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

    fn shape(input_len: u32, output_len: u32, range_ratio: f64) -> Shape {
        Shape::unprefixed(input_len, output_len, range_ratio)
    }

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
        let sequential = random_on(&bpe, shape(64, 8, 0.5), 7, 37, 1);
        assert_eq!(sequential.len(), 37);
        for workers in [2, 3, 8, 64] {
            assert_eq!(
                random_on(&bpe, shape(64, 8, 0.5), 7, 37, workers),
                sequential
            );
        }
        assert!(random_on(&bpe, shape(64, 8, 0.5), 7, 0, 3).is_empty());
    }

    /// sha256 of the prompts `vllm bench serve` 0.32 builds (`RandomDataset`)
    /// with the fixture tokenizer, in a directory whose
    /// `tokenizer_config.json` is `{"backend": "tokenizers", "eos_token":
    /// "<|endoftext|>", "tokenizer_class": "TokenizersBackend"}` (so that
    /// `all_special_ids` is `[0]`, as the fixture's flag says):
    /// ```python
    /// tok = vllm.tokenizers.get_tokenizer(DIR); d = hashlib.sha256()
    /// for r in RandomDataset(random_seed=SEED).sample(tokenizer=tok,
    ///         num_requests=N, input_len=IN, output_len=OUT, range_ratio=R):
    ///     d.update(r.prompt.encode()); d.update(r.prompt_len.to_bytes(8, "little"))
    ///     d.update(r.expected_output_len.to_bytes(4, "little"))
    /// print(sum(r.prompt_len for r in ...), d.hexdigest())
    /// ```
    /// As [`GOLDEN`], with `prefix_len=P` passed to `sample` (vLLM's
    /// `--random-prefix-len`); the third's prefix re-encodes 2 tokens
    /// longer, so it goes through the loop's draws.
    /// The prompts' total input tokens, and the sha256 the golden values
    /// were computed with (each prompt's text, then its lengths, little-endian).
    fn tokens_and_digest(prompts: &[BenchRequest]) -> (u64, String) {
        use sha2::{Digest, Sha256};
        let mut digest = Sha256::new();
        for r in prompts {
            digest.update(r.prompt.as_bytes());
            digest.update(r.prompt_len.to_le_bytes());
            digest.update(r.output_len.to_le_bytes());
        }
        let total = prompts.iter().map(|r| r.prompt_len).sum();
        (total, hex::encode(digest.finalize()))
    }

    #[test]
    fn random_prompts_with_a_prefix_are_vllm_0_32_s_token_for_token() {
        let bpe = bpe();
        let golden = [
            (
                64,
                8,
                0.5,
                7,
                37,
                16,
                3123,
                "16994ea59631f751dd67708f52ed9a7b644c209bfdf9a3a81fcf821edcd805a2",
            ),
            (
                128,
                32,
                0.5,
                3,
                300,
                50,
                53292,
                "b0d8b67108c99279589fdcb7986e02824d362798c1c411d65dda3dafe2cb73ce",
            ),
            (
                4,
                2,
                0.0,
                0,
                6,
                3,
                42,
                "e8fc0bf2975277c7583afdd7033cc8984b393d798531f3bdc5d06f99f8ef92ff",
            ),
        ];
        for (input, output, ratio, seed, n, prefix, tokens, sha256) in golden {
            let shape = Shape {
                prefix_len: prefix,
                ..shape(input, output, ratio)
            };
            let prompts = random_on(&bpe, shape, seed, n, 2);
            assert_eq!(
                tokens_and_digest(&prompts),
                (tokens, sha256.to_owned()),
                "{n} prompts of {prefix} + {input} tokens, ratio {ratio}, seed {seed}"
            );
        }
    }

    #[test]
    fn random_prompts_are_vllm_0_32_s_token_for_token() {
        let bpe = bpe();
        for (input, output, ratio, seed, n, tokens, sha256) in GOLDEN {
            let prompts = random_on(&bpe, shape(input, output, ratio), seed, n, 2);
            assert_eq!(
                tokens_and_digest(&prompts),
                (tokens, sha256.to_owned()),
                "{n} prompts of {input} tokens, ratio {ratio}, seed {seed}"
            );
        }
    }

    /// (input, output, range ratio, seed, prompts, vLLM's total input
    /// tokens, sha256), from the Python above.
    const GOLDEN: [(u32, u32, f64, u64, u32, u64, &str); 3] = [
        (
            64,
            8,
            0.5,
            7,
            37,
            2531,
            "0af9effea9dc35b8a170f56172488d4f66aeb8c388995a4848324bbf7491ba78",
        ),
        (
            128,
            32,
            0.5,
            3,
            300,
            38293,
            "b6ecc6ae4b16a2b02d4038be60b78e6954ad712d2f47838b661b92ed77df0781",
        ),
        (
            400,
            20,
            0.2,
            42,
            50,
            20351,
            "71b0c341760e1ac08f53053f486b11bdbf1bec75e556ab04a581b50cafed3edb",
        ),
    ];

    /// A prompt whose loop must draw ids stops there when built off the
    /// generator, and goes on from there to the prompt it would have been.
    #[test]
    fn a_short_prompt_resumes_where_it_stopped() {
        let bpe = bpe();
        let (vocab, target) = (u64::from(bpe.vocab_size()), 96);
        let shorts: Vec<(Vec<u32>, Short)> = (0..1024)
            .step_by(7)
            .filter_map(|start| {
                let ids: Vec<u32> = (start..start + target as u32).map(|i| i % 1024).collect();
                let short = fit(&bpe, ids.clone(), target, FIT_TRIES, None).err()?;
                Some((ids, short))
            })
            .collect();
        assert!(shorts.len() > 3, "{} of 147 windows draw", shorts.len());
        let mut straight = Generator::default_rng(5);
        let mut resumed = Generator::default_rng(5);
        for (ids, short) in shorts {
            let expected = fit(&bpe, ids, target, FIT_TRIES, Some((vocab, &mut straight))).unwrap();
            assert_eq!(short.resume(&bpe, target, vocab, &mut resumed), expected);
        }
        assert_eq!(straight.next_u64(), resumed.next_u64(), "the same draws");
    }

    #[test]
    fn random_lengths_are_exact_without_range_and_seeded() {
        let ws = Tokenizer::Whitespace;
        let a = random(&ws, Shape::unprefixed(128, 4, 0.0), 42, 10);
        assert!(a.iter().all(|r| r.prompt_len == 128 && r.output_len == 4));
        assert_eq!(a, random(&ws, Shape::unprefixed(128, 4, 0.0), 42, 10));
        assert_ne!(a, random(&ws, Shape::unprefixed(128, 4, 0.0), 43, 10));
        let ranged = random(&ws, Shape::unprefixed(100, 10, 0.5), 1, 200);
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
        let reqs = random(&t, Shape::unprefixed(400, 20, 0.2), 42, 50);
        assert_eq!(reqs, random(&t, Shape::unprefixed(400, 20, 0.2), 42, 50));
        assert_ne!(reqs, random(&t, Shape::unprefixed(400, 20, 0.2), 7, 50));
        // Re-encoding can leave a prompt a few tokens off its drawn length
        // (in [320, 480]) after vLLM's 10 tries.
        assert!(
            reqs.iter()
                .all(|r| (310..=490).contains(&r.prompt_len) && (16..=24).contains(&r.output_len))
        );
        // The prompt is text of the model's tokens, not the whitespace words.
        assert!(reqs.iter().all(|r| !r.prompt.is_empty()));
        assert_ne!(
            reqs[0].prompt,
            random(
                &Tokenizer::Whitespace,
                Shape::unprefixed(400, 20, 0.2),
                42,
                50
            )[0]
            .prompt
        );
    }
}
