//! `perfpipe bench`: the built-in load generator against any
//! OpenAI-compatible server — prompts built, requests sent at the load
//! asked, metrics computed — and vLLM's result file written.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::user_files::{check_writable, check_writable_dir, write_text};
use super::{Error, Shell};
use crate::dataset::{self, BenchRequest};
use crate::harness::prompt_cache::{self, PromptCache};
use crate::harness::ramp::RampUp;
use crate::harness::save_result::{ResultMeta, default_file_name, save_result_json};
use crate::harness::{self, BenchOutcome, Load, RequestSettings, custom};
use crate::metrics::{BlockOptions, Latency, MetricOptions};
use crate::progress::BenchProgress;
use crate::spec::{Arrival, Backend, RequestRate};
use crate::tokenizer::Tokenizer;

/// What `bench` is asked to do, every value checked against the others.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// The server, without a path (`http://127.0.0.1:8000`).
    pub base_url: String,
    /// The API path the requests go to (`/v1/completions`).
    pub endpoint: String,
    pub backend: Backend,
    /// The backend as the result file names it (`vllm` is `openai`'s alias).
    pub backend_name: &'static str,
    /// The model: the tokenizer's default and the result's `model_id`;
    /// none: the `root` of the first one `/v1/models` lists, the requests
    /// carrying its `id` (as vLLM 0.32).
    pub model: Option<String>,
    /// The model name the requests carry, when `model` is given (vLLM's
    /// `--served-model-name`); none or empty: `model`.
    pub served_model_name: Option<String>,
    /// Headers of every request, the `/v1/models` lookup's too (vLLM's
    /// `Authorization: Bearer $OPENAI_API_KEY` among them, from the CLI).
    pub headers: hyper::header::HeaderMap,
    /// `logprobs` of every completions body (none: `null`).
    pub logprobs: Option<i64>,
    /// The first prompt is sent until it succeeds, for at most this long,
    /// before the benchmark; none: no check.
    pub ready_check: Option<Duration>,
    /// An `https` server's certificate is not verified.
    pub insecure: bool,
    /// The tokenizer that builds and counts prompts (a file, a directory, a
    /// cached model id or `whitespace`); none: the model's.
    pub tokenizer: Option<String>,
    pub prompts: Prompts,
    /// Requests measured.
    pub num_prompts: u32,
    /// Seed of the prompts drawn and of the arrival times.
    pub seed: u64,
    pub rate: RequestRate,
    /// A rate that ramps over the benchmark instead of `rate`.
    pub ramp: Option<RampUp>,
    /// Gamma shape of the gaps between requests.
    pub burstiness: f64,
    pub max_concurrency: Option<u32>,
    /// Times the first request is sent before the benchmark, not measured.
    pub warmups: u32,
    pub ignore_eos: bool,
    /// None: no `temperature` in the bodies (vLLM 0.32's default).
    pub temperature: Option<f64>,
    /// Sampling parameters set on every request's body.
    pub extra_body: serde_json::Map<String, serde_json::Value>,
    /// Request `i` carries `x-request-id: {prefix}{i}`; none: vLLM's
    /// default, `bench-` and 8 random hex digits.
    pub request_id_prefix: Option<String>,
    pub percentile_metrics: Vec<Latency>,
    pub percentiles: Vec<f64>,
    /// SLOs in milliseconds, for goodput.
    pub goodput: Vec<(Latency, f64)>,
    /// Time without an event from the server before a waiting request fails.
    pub stall_timeout: Duration,
    /// Each request's timings appended here (JSONL) as it completes.
    pub journal: Option<PathBuf>,
    /// The result file to write, if any.
    pub result: Option<ResultFile>,
}

/// Where the prompts come from.
#[derive(Debug, Clone)]
pub enum Prompts {
    /// Random token ids, lengths drawn from `[L(1-r), L(1+r)]`.
    Random(dataset::Shape),
    /// A ShareGPT JSON file; `output_len` replaces each reply's length.
    ShareGpt {
        path: PathBuf,
        output_len: Option<u32>,
    },
    /// A JSONL file of `{"prompt": …}`, each asking `output_len` tokens.
    Custom { path: PathBuf, output_len: u32 },
}

/// vLLM's result file.
#[derive(Debug, Clone)]
pub struct ResultFile {
    /// Its directory (empty: the current one).
    pub dir: PathBuf,
    /// Its name; none: vLLM's default name.
    pub name: Option<String>,
    /// What prefixes the default name.
    pub label: Option<String>,
    /// With the per-request lists.
    pub detailed: bool,
    /// Appended as a line to the file rather than replacing it.
    pub append: bool,
    /// Top-level keys of its JSON.
    pub metadata: Vec<(String, String)>,
}

/// What a benchmark measured, before its result file is written.
#[derive(Debug)]
pub struct Measured {
    pub outcome: BenchOutcome,
    /// The model requested.
    pub model: String,
    /// The tokenizer named in the result file.
    pub tokenizer_id: String,
    /// When the measured requests started (Unix seconds).
    pub started_at: u64,
    /// Where each whole rate of a ramp was reached.
    pub ramp_events: Vec<(u32, Duration)>,
}

impl BenchOptions {
    /// How vLLM's printed block is laid out for these options.
    pub fn block(&self) -> BlockOptions {
        BlockOptions {
            percentile_metrics: self.percentile_metrics.clone(),
            percentiles: self.percentiles.clone(),
            max_concurrency: self.max_concurrency,
            request_rate: match self.rate {
                RequestRate::Infinite => None,
                RequestRate::PerSecond(r) => Some(r),
            },
        }
    }
}

/// How a benchmark goes, for a progress display.
#[derive(Debug)]
pub enum BenchEvent<'a> {
    /// The measured requests start.
    Started { requests: usize },
    /// A request ended: the counts so far.
    Request(&'a BenchProgress),
}

/// Builds the prompts and sends them to the server at the load asked.
/// What it does goes to `shell`, how the benchmark goes to `progress`.
pub fn measure(
    options: &BenchOptions,
    io: &crate::tokio_runtime::Io,
    shell: &dyn Shell,
    progress: &mut dyn FnMut(BenchEvent),
) -> Result<Measured, Error> {
    // Where the results go is settled before anything is measured.
    let mut journal = match &options.journal {
        Some(path) => Some(open_journal(path)?),
        None => None,
    };
    if let Some(result) = &options.result {
        match &result.name {
            Some(name) => check_writable(&result.dir.join(name))?,
            None => check_writable_dir(&result.dir)?,
        }
    }
    let dataset_file = read_dataset(&options.prompts)?;
    let named_tokenizer = match &options.tokenizer {
        Some(name) => Some(load_tokenizer(name, true, shell)?),
        None => None,
    };

    // One worker per core this process may use (`crate::tokio_runtime`).
    let runtime = io.handle().map_err(|source| Error::Runtime { source })?;
    let base_url = &options.base_url;
    let https = base_url.starts_with("https:");
    let tls = harness::Tls::of(https, options.insecure);
    let client = runtime.block_on(async { harness::http_client(tls) });
    let streams = runtime.block_on(async { harness::StreamClient::new(tls) });
    // vLLM's `model_id` (`model`) and `model_name` (`requested`), as
    // `serve.py` sets them: `--served-model-name` counts only with `--model`.
    let (model, requested) = match &options.model {
        Some(m) => {
            let served = options.served_model_name.as_ref();
            // vLLM's bodies fall back to `--model` when the name is empty.
            let requested = served.filter(|name| !name.is_empty()).unwrap_or(m);
            (m.clone(), requested.clone())
        }
        None => {
            let first = runtime.block_on(first_model(&client, base_url, &options.headers))?;
            (first.root, first.id)
        }
    };
    let tokenizer_id = options.tokenizer.clone().unwrap_or_else(|| model.clone());
    let tokenizer = Arc::new(match named_tokenizer {
        Some(tokenizer) => tokenizer,
        None => load_tokenizer(&model, false, shell)?,
    });
    let built = Instant::now();
    let (requests, cached) = requests(options, &tokenizer, dataset_file)?;
    say!(
        shell,
        "perfpipe bench: {} prompts {} in {:.2} s",
        requests.len(),
        if cached {
            "read from the cache"
        } else {
            "built"
        },
        built.elapsed().as_secs_f64()
    );
    let settings = RequestSettings {
        urls: vec![format!("{base_url}{}", options.endpoint)],
        backend: options.backend,
        model: requested.clone(),
        temperature: options.temperature,
        logprobs: options.logprobs,
        headers: Arc::new(options.headers.clone()),
        ignore_eos: options.ignore_eos,
        tokenizer: tokenizer.clone(),
        extra_body: options.extra_body.clone(),
        request_id_prefix: Some(
            options
                .request_id_prefix
                .clone()
                .unwrap_or_else(random_request_id_prefix),
        ),
    };
    let load = Load {
        rate: options.rate,
        // `vllm bench serve` has gamma arrivals only.
        arrival: Arrival::Poisson,
        burstiness: options.burstiness,
        max_concurrency: options.max_concurrency,
        seed: options.seed,
        stall_timeout: options.stall_timeout,
        warmups: options.warmups as usize,
        ramp: options.ramp,
    };
    let metric_options = MetricOptions {
        percentiles: options.percentiles.clone(),
        goodput: options.goodput.clone(),
    };
    say!(
        shell,
        "perfpipe bench: {} requests to {} (model `{requested}`, rate {}, max concurrency {})",
        requests.len(),
        settings.urls[0],
        match (options.ramp, options.rate) {
            (Some(r), _) => format!(
                "ramping {} from {} to {} req/s",
                r.strategy.name(),
                r.start,
                r.end
            ),
            (None, RequestRate::Infinite) => "inf".to_owned(),
            (None, RequestRate::PerSecond(r)) => r.to_string(),
        },
        options
            .max_concurrency
            .map_or("unlimited".to_owned(), |c| c.to_string())
    );
    // Where each whole rate of a ramp was reached, from the same schedule.
    let ramp_events = match options.ramp {
        Some(r) => r
            .delays(requests.len(), options.burstiness, options.seed)
            .map(|delays| r.change_events(&delays))
            .unwrap_or_default(),
        None => Vec::new(),
    };
    if let Some(timeout) = options.ready_check {
        ready_check(&runtime, &streams, &settings, &requests, timeout, shell)?;
    }
    let started_at = crate::clock::unix_now();
    progress(BenchEvent::Started {
        requests: requests.len(),
    });
    let mut counts = BenchProgress::new(requests.len());
    let outcome = runtime
        .block_on(harness::benchmark(
            &streams,
            &settings,
            requests,
            &load,
            &metric_options,
            &mut |index, record| {
                counts.record(record);
                progress(BenchEvent::Request(&counts));
                if let Some(journal) = journal.as_mut() {
                    let _ = writeln!(
                        journal,
                        "{}",
                        serde_json::json!({"index": index, "record": record})
                    );
                    let _ = journal.flush();
                }
            },
        ))
        .map_err(|e| Error::Usage {
            message: e.to_string(),
            hint:
                "a `--request-rate` of at least 1e-6, or `inf`, and a finite `--burstiness` above 0"
                    .into(),
        })?;
    Ok(Measured {
        outcome,
        model,
        tokenizer_id,
        started_at,
        ramp_events,
    })
}

/// Writes vLLM's result file of what was measured; returns its path.
pub fn save_result(
    options: &BenchOptions,
    result: &ResultFile,
    measured: &Measured,
) -> Result<PathBuf, Error> {
    let block = options.block();
    let outcome = &measured.outcome;
    let meta = ResultMeta {
        date: crate::clock::compact(crate::clock::unix_now()),
        backend: options.backend_name.to_owned(),
        label: result.label.clone(),
        model_id: measured.model.clone(),
        tokenizer_id: measured.tokenizer_id.clone(),
        num_prompts: outcome.records.len(),
        request_rate: block.request_rate,
        burstiness: options.burstiness,
        max_concurrency: options.max_concurrency,
        metadata: result.metadata.clone(),
        ramp_up: options.ramp,
        rps_change_events: measured
            .ramp_events
            .iter()
            .map(|(rps, at)| {
                (
                    *rps,
                    crate::clock::rfc3339(measured.started_at + at.as_secs()),
                )
            })
            .collect(),
    };
    let json = save_result_json(
        &meta,
        &outcome.metrics,
        &outcome.records,
        &options.percentile_metrics,
        &options.percentiles,
        result.detailed,
    );
    let name = result
        .name
        .clone()
        .unwrap_or_else(|| default_file_name(&meta));
    let path = result.dir.join(name);
    let mut text = json.to_string() + "\n";
    if result.append {
        text = appended(&path, &text);
    }
    write_text(&path, &text).map_err(|e| e.measured(
        "the result block above has the numbers; the per-request details are in `--journal` when one was given",
    ))?;
    Ok(path)
}

/// The tokenizer `--tokenizer` names (a file, a directory or a cached model
/// id), which must load; or the model's, else words.
fn load_tokenizer(name: &str, named: bool, shell: &dyn Shell) -> Result<Tokenizer, Error> {
    if name == "whitespace" {
        return Ok(Tokenizer::Whitespace);
    }
    let tokenizer = if named {
        Tokenizer::named(name, "main")
    } else {
        Tokenizer::for_model(name, "main")
    };
    let tokenizer = tokenizer.map_err(|e| Error::Usage {
        message: e.to_string(),
        hint: "`--tokenizer` takes a tokenizer.json, a model directory, a model id in the Hugging Face cache, or `whitespace` to count words".into(),
    })?;
    match &tokenizer {
        Tokenizer::HuggingFace { path, .. } => {
            say!(shell, "perfpipe bench: tokenizer `{}`", path.display());
        }
        Tokenizer::Whitespace => say!(
            shell,
            "warning: no tokenizer.json for `{name}` on this machine (perfpipe never downloads); \
             prompts are built and counted in words. Pass `--tokenizer` to use the model's."
        ),
    }
    Ok(tokenizer)
}

#[expect(clippy::disallowed_methods, reason = "the journal the user asked for")]
fn open_journal(path: &Path) -> Result<std::io::BufWriter<std::fs::File>, Error> {
    let file = fs_err::File::create(path).map_err(|source| Error::Write {
        path: path.display().to_string(),
        source,
    })?;
    Ok(std::io::BufWriter::new(file.into_parts().0))
}

/// The dataset file's text (ShareGPT or custom), read before any server is contacted.
fn read_dataset(prompts: &Prompts) -> Result<Option<(PathBuf, String)>, Error> {
    let path = match prompts {
        Prompts::Random(_) => return Ok(None),
        Prompts::ShareGpt { path, .. } | Prompts::Custom { path, .. } => path,
    };
    let text = fs_err::read_to_string(path).map_err(|e| Error::Usage {
        message: format!("cannot read the dataset: {e}"),
        hint: "check `--dataset-path`".into(),
    })?;
    Ok(Some((path.clone(), text)))
}

/// The prompts, and whether they came from the prompt cache.
fn requests(
    options: &BenchOptions,
    tokenizer: &Tokenizer,
    file: Option<(PathBuf, String)>,
) -> Result<(Vec<BenchRequest>, bool), Error> {
    let text = file.map(|(_, text)| text).unwrap_or_default();
    match &options.prompts {
        &Prompts::Random(shape) => Ok(prompt_cache::random(
            &PromptCache::user(),
            tokenizer,
            shape,
            options.seed,
            options.num_prompts,
        )),
        Prompts::Custom { path, output_len } => {
            custom::custom(tokenizer, &text, options.num_prompts, *output_len)
                .map(|prompts| (prompts, false))
                .map_err(|e| Error::Usage {
                    message: format!("`{}`: {e}", path.display()),
                    hint: "a custom dataset is JSONL: one {\"prompt\": \"...\"} per line".into(),
                })
        }
        Prompts::ShareGpt { path, output_len } => dataset::sharegpt(
            tokenizer,
            &text,
            options.num_prompts,
            options.seed,
            *output_len,
        )
        .map(|prompts| (prompts, false))
        .map_err(|e| Error::Usage {
            message: format!("`{}`: {e}", path.display()),
            hint:
                "a ShareGPT file is a JSON list of {\"conversations\": [{\"from\", \"value\"}, ...]}"
                    .into(),
        }),
    }
}

/// vLLM's ready check: the first prompt, as the warm-ups send it (no
/// request id), until it succeeds, every 5 s, for at most `timeout`.
fn ready_check(
    runtime: &tokio::runtime::Handle,
    streams: &harness::StreamClient,
    settings: &harness::RequestSettings,
    requests: &[BenchRequest],
    timeout: Duration,
    shell: &dyn Shell,
) -> Result<(), Error> {
    let Some(first) = requests.first() else {
        return Ok(());
    };
    say!(
        shell,
        "perfpipe bench: waiting up to {} s for the server to answer the first prompt",
        timeout.as_secs()
    );
    let waited = Instant::now();
    runtime
        .block_on(harness::wait_until_ready(streams, settings, first, timeout))
        .map_err(|last| Error::Server {
            message: format!(
                "the server did not answer the first prompt within `--ready-check-timeout-sec {}`: {last}",
                timeout.as_secs()
            ),
        })?;
    say!(
        shell,
        "perfpipe bench: the server answered the first prompt after {:.1} s",
        waited.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The first model a server lists (`/v1/models`' `data[0]`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct FirstModel {
    /// The name requests carry (`id`: a vLLM server's `--served-model-name`).
    id: String,
    /// The model it serves (`root`: the path or Hugging Face id it loaded),
    /// which names the tokenizer and the result's `model_id`; `id` for a
    /// server that does not say.
    root: String,
}

/// The model the server serves first, as vLLM's `get_first_model_from_server`
/// reads it.
async fn first_model(
    client: &reqwest::Client,
    base_url: &str,
    headers: &hyper::header::HeaderMap,
) -> Result<FirstModel, Error> {
    let unreachable = |e: String| Error::Server {
        message: format!("cannot list the models of `{base_url}`: {e}"),
    };
    let response = client
        .get(format!("{base_url}/v1/models"))
        .headers(headers.clone())
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .map_err(|e| unreachable(e.to_string()))?;
    if let Some(error) = harness::client::redirected(response.status(), response.headers()) {
        return Err(Error::Usage {
            message: format!("`{base_url}/v1/models` answered {error}"),
            hint: "name the server itself with `--base-url`: perfpipe follows no redirect".into(),
        });
    }
    let limit = harness::client::MAX_MODEL_LIST;
    let body = crate::tls::body_at_most(response, limit.bytes)
        .await
        .map_err(|e| match e {
            crate::tls::BodyError::TooLong => unreachable(limit.exceeded_by("its answer")),
            crate::tls::BodyError::Transport(e) => unreachable(e.to_string()),
        })?;
    let body: serde_json::Value = serde_json::from_slice(&body)
        .map_err(|e| unreachable(format!("its answer is not JSON: {e}")))?;
    first_model_of(&body).ok_or_else(|| unreachable("the answer lists no model".into()))
}

/// `data[0]`'s `id` and `root` of a model list; none without an `id`.
fn first_model_of(list: &serde_json::Value) -> Option<FirstModel> {
    // Named in the result file and the output: the server's text.
    let field = |name: &str| {
        list.pointer(&format!("/data/0/{name}"))
            .and_then(|v| v.as_str())
            .map(|text| crate::secrets::redact(text).into_owned())
    };
    let id = field("id")?;
    Some(FirstModel {
        root: field("root").unwrap_or_else(|| id.clone()),
        id,
    })
}

/// The result file with `text` appended as its last line: vLLM's
/// `--append-result` (a file that does not end its last line gets a newline).
fn appended(path: &Path, text: &str) -> String {
    let mut old = fs_err::read_to_string(path).unwrap_or_default();
    if !old.is_empty() && !old.ends_with('\n') {
        old.push('\n');
    }
    old + text
}

/// vLLM's default `--request-id-prefix`: `bench-` and 8 random hex digits.
fn random_request_id_prefix() -> String {
    let seed = crate::clock::file_time_ns() as u64 ^ u64::from(std::process::id()) << 32;
    let hex = crate::rng::Rng::new(seed).next_u64() as u32;
    format!("bench-{hex:08x}-")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// vLLM 0.32's `get_first_model_from_server` returns `data[0]`'s `id`
    /// (the name requests carry) and `root` (the model, whose tokenizer
    /// loads and which the result names).
    #[test]
    fn the_first_model_is_its_id_for_requests_and_its_root_for_the_rest() {
        let list = serde_json::json!({"data": [
            {"id": "alias", "root": "org/model"},
            {"id": "other", "root": "org/other"},
        ]});
        assert_eq!(
            first_model_of(&list),
            Some(FirstModel {
                id: "alias".into(),
                root: "org/model".into()
            })
        );
        // A server that does not say its root (not vLLM): the id is both.
        let bare = serde_json::json!({"data": [{"id": "m"}]});
        assert_eq!(first_model_of(&bare).unwrap().root, "m");
        assert_eq!(first_model_of(&serde_json::json!({"data": []})), None);
    }
}
