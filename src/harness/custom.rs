//! `vllm bench serve --dataset-name custom` (v0.11): a JSONL file of
//! `{"prompt": ...}` lines, shuffled by Python's `random` seeded 0 (v0.11
//! passes no `--seed` to it), the first `n` taken, and when there are fewer
//! `random.choices` of them added; each asks for `output_len` tokens and
//! counts its prompt with the tokenizer's special tokens. Only with
//! `--custom-skip-chat-template`: perfpipe renders no chat template. (pure)

use thiserror::Error;

use super::py_random::PyRandom;
use crate::dataset::BenchRequest;
use crate::tokenizer::Tokenizer;

/// vLLM's `BenchmarkDataset.DEFAULT_SEED`.
const SEED: u64 = 0;

#[derive(Debug, Error, PartialEq)]
pub enum CustomError {
    #[error("line {line} is not a JSON object with a string `prompt`")]
    Line { line: usize },
    #[error("the file has no prompt")]
    Empty,
}

pub fn custom(
    tokenizer: &Tokenizer,
    jsonl: &str,
    n: u32,
    output_len: u32,
) -> Result<Vec<BenchRequest>, CustomError> {
    let mut prompts = Vec::new();
    for (i, line) in jsonl.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|_| CustomError::Line { line: i + 1 })?;
        let prompt = value["prompt"]
            .as_str()
            .ok_or(CustomError::Line { line: i + 1 })?;
        prompts.push(prompt.to_owned());
    }
    if prompts.is_empty() {
        return Err(CustomError::Empty);
    }
    PyRandom::new(SEED).shuffle(&mut prompts);
    prompts.truncate(n as usize);
    let mut picked: Vec<usize> = (0..prompts.len()).collect();
    let short = (n as usize).saturating_sub(prompts.len());
    picked.extend(PyRandom::new(SEED).choices(prompts.len(), short));
    Ok(picked
        .into_iter()
        .map(|i| BenchRequest {
            prompt: prompts[i].clone(),
            prompt_len: tokenizer.encode(&prompts[i], true).len() as u64,
            output_len,
            exact_output: false,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(n: usize) -> String {
        (0..n)
            .map(|i| format!("{{\"prompt\": \"p{i} a b\"}}\n"))
            .collect()
    }

    #[test]
    fn picks_as_vllm_picks_and_oversamples_with_choices() {
        let t = Tokenizer::Whitespace;
        let prompts = |n| -> Vec<String> {
            custom(&t, &lines(8), n, 256)
                .unwrap()
                .into_iter()
                .map(|r| r.prompt)
                .collect()
        };
        // CPython: random.seed(0); shuffle(range(8)) = [4, 1, 5, 2, 0, 3, 7, 6].
        assert_eq!(prompts(3), ["p4 a b", "p1 a b", "p5 a b"]);
        // Ten of eight: the eight, then random.choices(k=2) from them: seeded 0,
        // indices floor(random() * 8) = 6, 6 (CPython).
        let ten = prompts(10);
        assert_eq!(ten[8..], [ten[6].clone(), ten[6].clone()]);
        let r = &custom(&t, &lines(1), 1, 7).unwrap()[0];
        assert_eq!((r.prompt_len, r.output_len), (3, 7));
        assert_eq!(
            custom(&t, "{\"text\": 1}\n", 1, 1),
            Err(CustomError::Line { line: 1 })
        );
        assert_eq!(custom(&t, "\n", 1, 1), Err(CustomError::Empty));
    }
}
