//! `bench`'s options from `vllm bench serve` after v0.11 and its sampling
//! group, as users pass them; checked against each other in `bench::check`.

use clap::{Args, ValueEnum};
use serde_json::{Map, Value, json};

use super::args::DatasetArg;
use crate::harness::ramp::{RampUp, Strategy};
use crate::ops::Error;
use crate::spec::RequestRate;

#[derive(Debug, Args)]
pub struct VllmBenchOptions {
    /// Ramp the request rate from `--ramp-up-start-rps` to
    /// `--ramp-up-end-rps` over the benchmark (instead of `--request-rate`).
    #[arg(long, value_enum)]
    pub ramp_up_strategy: Option<RampUpArg>,
    /// Requests per second the ramp starts at (at least 1).
    #[arg(long, value_name = "RPS")]
    pub ramp_up_start_rps: Option<u32>,
    /// Requests per second the ramp ends at (at least the start).
    #[arg(long, value_name = "RPS")]
    pub ramp_up_end_rps: Option<u32>,
    /// `KEY=VALUE` pairs written as top-level keys of the result JSON.
    // `Set`: a repeated option keeps its last values, as argparse's `nargs`.
    #[arg(long, value_name = "KEY=VALUE", num_args = 0.., action = clap::ArgAction::Set)]
    pub metadata: Vec<String>,
    /// Append the result JSON to the result file, a line each, instead of
    /// replacing it (implies `--save-result`).
    #[arg(long)]
    pub append_result: bool,
    /// Draw no progress bar.
    #[arg(long)]
    pub disable_tqdm: bool,
    /// Top-p sampling (0 < p <= 1), sent as `top_p`.
    #[arg(long)]
    pub top_p: Option<f64>,
    /// Top-k sampling (-1 or 0 for every token), sent as `top_k`.
    #[arg(long, allow_negative_numbers = true)]
    pub top_k: Option<i64>,
    /// Min-p sampling (0 <= p <= 1), sent as `min_p`.
    #[arg(long)]
    pub min_p: Option<f64>,
    /// Accepted for vLLM's command lines: perfpipe reads `tokenizer.json`
    /// files only and runs no code of a model's repository.
    #[arg(long)]
    pub trust_remote_code: bool,
    /// Request `i` is sent with `x-request-id: {PREFIX}{i}` [default:
    /// `bench-{8 random hex digits}-`, as vLLM].
    #[arg(long, value_name = "PREFIX")]
    pub request_id_prefix: Option<String>,
    /// Output tokens each `--dataset-name custom` request asks for.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..))]
    pub custom_output_len: u32,
    /// Send a custom dataset's prompts as they are (required: perfpipe
    /// renders no chat template).
    #[arg(long)]
    pub custom_skip_chat_template: bool,
    /// The model name the requests carry (with `--model`, which then names
    /// the tokenizer and the result file's `model_id`), as vLLM sends it;
    /// without `--model` they carry the `id` of the server's first model,
    /// and its `root` names the rest.
    #[arg(long, value_name = "NAME")]
    pub served_model_name: Option<String>,
    /// Random tokens, drawn once, that begin every random prompt, before its
    /// `--random-input-len` tokens (vLLM's `RandomDataset` prefix).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub random_prefix_len: u32,
    /// Before the benchmark, send the first prompt every 5 s until it
    /// succeeds, for at most SECS seconds, and stop if it never does; 0 or
    /// less: no check, as vLLM 0.32.
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub ready_check_timeout_sec: i64,
    /// A JSON object whose fields are set on every request's body last
    /// (over the sampling options), as vLLM's `payload.update`.
    #[arg(long, value_name = "JSON")]
    pub extra_body: Option<String>,
    /// `KEY=VALUE` headers sent with every request (and the `/v1/models`
    /// lookup); `x-request-id` is still each request's id, and
    /// `Authorization` replaces `Bearer $OPENAI_API_KEY`.
    #[arg(long, value_name = "KEY=VALUE", num_args = 0.., action = clap::ArgAction::Set)]
    pub header: Vec<String>,
    /// Only 1, vLLM's default: vLLM batches random prompts into one request
    /// only for its embeddings benchmarks, which perfpipe does not run.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub random_batch_size: i64,
    /// Accepted for vLLM's command lines: vLLM reads it only when it loads
    /// a Hugging Face dataset; requests are streamed either way, as vLLM's are.
    #[arg(long)]
    pub no_stream: bool,
    /// Log-probabilities asked per output token (`logprobs` of each
    /// completions body; -1 for all); vLLM sends none in chat bodies.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub logprobs: Option<i64>,
    /// Accept any certificate from an `https` server (self-signed ones).
    #[arg(long)]
    pub insecure: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RampUpArg {
    Linear,
    Exponential,
}

impl RampUpArg {
    pub fn strategy(self) -> Strategy {
        match self {
            Self::Linear => Strategy::Linear,
            Self::Exponential => Strategy::Exponential,
        }
    }
}

impl VllmBenchOptions {
    /// The ramp, checked as vLLM checks it; and a rate that never sends
    /// (a start of 0) is refused here rather than mid-benchmark.
    pub fn ramp(&self, rate: RequestRate) -> Result<Option<RampUp>, Error> {
        let usage = |message: &str, hint: &str| Error::Usage {
            message: message.into(),
            hint: hint.into(),
        };
        let Some(strategy) = self.ramp_up_strategy else {
            if self.ramp_up_start_rps.is_some() || self.ramp_up_end_rps.is_some() {
                return Err(usage(
                    "`--ramp-up-start-rps` and `--ramp-up-end-rps` need `--ramp-up-strategy`",
                    "add `--ramp-up-strategy linear` or `exponential`",
                ));
            }
            return Ok(None);
        };
        if rate != RequestRate::Infinite {
            return Err(usage(
                "`--ramp-up-strategy` sets the request rate: `--request-rate` cannot be given with it",
                "remove `--request-rate`, as vLLM requires",
            ));
        }
        let (Some(start), Some(end)) = (self.ramp_up_start_rps, self.ramp_up_end_rps) else {
            return Err(usage(
                "`--ramp-up-strategy` needs both `--ramp-up-start-rps` and `--ramp-up-end-rps`",
                "e.g. `--ramp-up-start-rps 1 --ramp-up-end-rps 20`",
            ));
        };
        if start == 0 {
            return Err(usage(
                "`--ramp-up-start-rps 0` sends the first request at a rate of 0, which is never",
                "start the ramp at 1 request per second or more",
            ));
        }
        if start > end {
            return Err(usage(
                &format!("the ramp starts at {start} req/s, above its end, {end} req/s"),
                "`--ramp-up-end-rps` is at least `--ramp-up-start-rps`",
            ));
        }
        Ok(Some(RampUp {
            strategy: strategy.strategy(),
            start,
            end,
        }))
    }

    /// `--metadata` as pairs, split at the first `=` and trimmed, as vLLM does.
    pub fn metadata(&self) -> Result<Vec<(String, String)>, Error> {
        self.metadata
            .iter()
            .map(|item| {
                let invalid = || Error::Usage {
                    message: format!("invalid `--metadata` `{item}`"),
                    hint: "write `KEY=VALUE` with a key that is not empty, e.g. `--metadata tp=1 version=0.11.0`".into(),
                };
                let (key, value) = item.split_once('=').ok_or_else(invalid)?;
                // An empty key would be a top-level `""` of the result JSON.
                if key.trim().is_empty() {
                    return Err(invalid());
                }
                Ok((key.trim().to_owned(), value.trim().to_owned()))
            })
            .collect()
    }

    /// The sampling parameters given, as body fields; values the server
    /// would refuse (failing every request) are refused first.
    pub fn sampling(&self) -> Result<Map<String, Value>, Error> {
        let bad = |flag: &str, value: String, hint: &str| Error::Usage {
            message: format!("invalid `{flag}` `{value}`"),
            hint: hint.into(),
        };
        let mut body = Map::new();
        if let Some(p) = self.top_p {
            if !(p > 0.0 && p <= 1.0) {
                return Err(bad("--top-p", p.to_string(), "a number in (0, 1]"));
            }
            body.insert("top_p".into(), json!(p));
        }
        if let Some(k) = self.top_k {
            if k < -1 {
                return Err(bad(
                    "--top-k",
                    k.to_string(),
                    "-1 or 0 (every token), or at least 1",
                ));
            }
            body.insert("top_k".into(), json!(k));
        }
        if let Some(p) = self.min_p {
            if !(0.0..=1.0).contains(&p) {
                return Err(bad("--min-p", p.to_string(), "a number in [0, 1]"));
            }
            body.insert("min_p".into(), json!(p));
        }
        Ok(body)
    }
}

impl VllmBenchOptions {
    /// `--header` as a header map, split at the first `=` and trimmed, as
    /// vLLM does (a repeated key keeps its last value), over vLLM's
    /// `Authorization: Bearer $OPENAI_API_KEY` when `openai_api_key` is set.
    pub fn headers(
        &self,
        openai_api_key: Option<&std::ffi::OsStr>,
    ) -> Result<hyper::header::HeaderMap, Error> {
        let mut headers = hyper::header::HeaderMap::new();
        // vLLM's `_get_headers`: `Bearer $OPENAI_API_KEY` when set and not
        // empty, under `--header`'s (`headers |= extra_headers`).
        if let Some(key) = openai_api_key.filter(|key| !key.is_empty()) {
            // The message never quotes the key.
            let unsendable = || {
                Error::Usage {
                message: "`OPENAI_API_KEY` cannot be sent in an HTTP header: it holds a control or non-ASCII character".into(),
                hint: "set it to the key alone, or unset it and pass `--header Authorization=...`".into(),
            }
            };
            let key = key.to_str().ok_or_else(unsendable)?;
            let mut value = hyper::header::HeaderValue::from_str(&format!("Bearer {key}"))
                .map_err(|_| unsendable())?;
            // Never shown by `Debug`, nor indexed by HTTP/2 header compression.
            value.set_sensitive(true);
            headers.insert(hyper::header::AUTHORIZATION, value);
        }
        for item in &self.header {
            // Quotes the header's name only: its value may be a secret.
            let invalid = |quoted: &str, why: &str| Error::Usage {
                message: format!("invalid `--header` `{quoted}`: {why}"),
                hint: "write `KEY=VALUE`, e.g. `--header x-tenant=lab`".into(),
            };
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| invalid(item, "no `=`"))?;
            let name = hyper::header::HeaderName::from_bytes(key.trim().as_bytes())
                .map_err(|_| invalid(&format!("{key}=…"), "not a header name"))?;
            let value = hyper::header::HeaderValue::from_str(value.trim())
                .map_err(|_| invalid(&format!("{key}=…"), "not a header value"))?;
            headers.insert(name, value);
        }
        Ok(headers)
    }

    /// `--extra-body`'s fields; `null` or `{}` is none, as vLLM takes them.
    pub fn extra_body(&self) -> Result<Map<String, Value>, Error> {
        let Some(text) = &self.extra_body else {
            return Ok(Map::new());
        };
        let invalid = |why: String| {
            Error::Usage {
            message: format!("invalid `--extra-body`: {why}"),
            hint: "a JSON object, e.g. `--extra-body '{\"chat_template_kwargs\": {\"enable_thinking\": false}}'`".into(),
        }
        };
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(fields)) => Ok(fields),
            Ok(Value::Null) => Ok(Map::new()),
            Ok(other) => Err(invalid(format!("`{other}` is not a JSON object"))),
            Err(e) => Err(invalid(e.to_string())),
        }
    }

    /// `--logprobs`, refused where vLLM's server would refuse every request.
    pub fn logprobs(&self) -> Result<Option<i64>, Error> {
        match self.logprobs {
            Some(n) if n < -1 => Err(Error::Usage {
                message: format!("invalid `--logprobs` `{n}`"),
                hint: "0 or more log-probabilities per token, or -1 for all of them".into(),
            }),
            n => Ok(n),
        }
    }

    /// How long the ready check may take; none: no check (0 or less, as vLLM).
    pub fn ready_check(&self) -> Option<std::time::Duration> {
        u64::try_from(self.ready_check_timeout_sec)
            .ok()
            .filter(|s| *s > 0)
            .map(std::time::Duration::from_secs)
    }

    /// Why a `--random-batch-size` is refused, if it is.
    pub fn unsupported_batch(&self) -> Option<Error> {
        (self.random_batch_size != 1).then(|| Error::Usage {
            message: format!(
                "`--random-batch-size {}` is not supported: vLLM batches random prompts into one request only for its embeddings benchmarks (`--backend openai-embeddings`), and perfpipe measures generation",
                self.random_batch_size
            ),
            hint: "leave it out (1, vLLM's default): one prompt per request".into(),
        })
    }
}

/// Why `bench` refuses one of vLLM's datasets, if it does.
pub fn unsupported_dataset(dataset: DatasetArg, options: &VllmBenchOptions) -> Option<Error> {
    let (name, why) = match dataset {
        DatasetArg::Random | DatasetArg::Sharegpt => return None,
        DatasetArg::Custom if options.custom_skip_chat_template => return None,
        DatasetArg::Custom => {
            return Some(Error::Usage {
                message: "`--dataset-name custom` without `--custom-skip-chat-template` is not supported: vLLM wraps each prompt in the model's chat template (Jinja), which perfpipe does not render".into(),
                hint: "pass `--custom-skip-chat-template` to send the prompts as they are, as vLLM then does".into(),
            });
        }
        DatasetArg::PrefixRepetition => (
            "prefix_repetition",
            "its prompts are drawn by numpy's generator from the tokenizer's vocabulary and re-aligned against the server's `/tokenize`; perfpipe does not build them yet",
        ),
        DatasetArg::Hf => (
            "hf",
            "it downloads a Hugging Face dataset, and perfpipe never downloads",
        ),
        DatasetArg::Sonnet => (
            "sonnet",
            "vLLM builds its prompts with the model's chat template (Jinja), which perfpipe does not render",
        ),
        DatasetArg::Burstgpt => (
            "burstgpt",
            "vLLM samples its rows with pandas' generator, which perfpipe does not reproduce",
        ),
        DatasetArg::RandomMm => (
            "random-mm",
            "it sends images, and perfpipe's requests are text only",
        ),
        DatasetArg::SpecBench => (
            "spec_bench",
            "vLLM wraps each prompt in the model's chat template (Jinja), which perfpipe does not render",
        ),
    };
    Some(Error::Usage {
        message: format!("`--dataset-name {name}` is not supported: {why}"),
        hint: "`--dataset-name random`, or `sharegpt` with a local `--dataset-path`".into(),
    })
}
