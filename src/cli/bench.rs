//! `perfpipe bench`: the built-in load generator against any OpenAI-compatible
//! server, with `vllm bench serve`'s options, printed block and result file.

use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::args::{BackendArg, BenchArgs, DatasetArg};
use super::{CliError, write_text};
use crate::exit_code;
use crate::harness::ramp::RampUp;
use crate::harness::{self, BenchRequest, Load, RequestSettings, dataset};
use crate::metrics::{
    BlockOptions, Latency, MetricOptions, RequestRecord, ResultMeta, default_file_name,
    render_serving_block, save_result_json,
};
use crate::spec::{Backend, RequestRate, bounds};
use crate::tokenizer::Tokenizer;

pub fn bench(args: &BenchArgs) -> Result<u8, CliError> {
    let Checked {
        rate,
        percentile_metrics,
        percentiles,
        goodput,
        backend,
        base_url,
        endpoint,
        ramp,
        metadata,
        extra_body,
    } = check(args)?;
    let save = args.save_result || args.save_detailed || args.vllm.append_result;
    // Where the results go is settled before anything is measured.
    let mut journal = match &args.journal {
        Some(path) => Some(open_journal(path)?),
        None => None,
    };
    if save {
        let dir = args.result_dir.clone().unwrap_or_default();
        match &args.result_filename {
            Some(name) => super::check_writable(&dir.join(name))?,
            None => super::check_writable_dir(&dir)?,
        }
    }
    let dataset_file = read_dataset(args)?;
    let named_tokenizer = match &args.tokenizer {
        Some(name) => Some(load_tokenizer(name, true)?),
        None => None,
    };

    // One worker per core this process may use (`taskset` narrows it).
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .map_err(|source| CliError::Runtime { source })?;
    let https = base_url.starts_with("https:");
    let client = runtime.block_on(async { harness::http_client(https) });
    let model = match &args.model {
        Some(m) => m.clone(),
        None => runtime.block_on(first_model(&client, &base_url))?,
    };
    let tokenizer_id = args.tokenizer.clone().unwrap_or_else(|| model.clone());
    let tokenizer = std::sync::Arc::new(match named_tokenizer {
        Some(tokenizer) => tokenizer,
        None => load_tokenizer(&model, false)?,
    });
    let built = Instant::now();
    let (requests, cached) = requests(args, &tokenizer, dataset_file)?;
    eprintln!(
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
        urls: vec![format!("{base_url}{endpoint}")],
        backend,
        model: model.clone(),
        temperature: args.temperature,
        ignore_eos: args.ignore_eos,
        tokenizer: tokenizer.clone(),
        extra_body,
        request_id_prefix: Some(
            args.vllm
                .request_id_prefix
                .clone()
                .unwrap_or_else(random_request_id_prefix),
        ),
    };
    let load = Load {
        rate,
        // `vllm bench serve` has gamma arrivals only.
        arrival: crate::spec::Arrival::Poisson,
        burstiness: args.burstiness,
        max_concurrency: args.max_concurrency,
        seed: args.seed,
        stall_timeout: Duration::from_secs(args.stall_timeout),
        warmups: args.num_warmups as usize,
        ramp,
    };
    let options = MetricOptions {
        percentiles: percentiles.clone(),
        goodput,
    };
    eprintln!(
        "perfpipe bench: {} requests to {} (model `{model}`, rate {}, max concurrency {})",
        requests.len(),
        settings.urls[0],
        match (ramp, rate) {
            (Some(r), _) => format!(
                "ramping {} from {} to {} req/s",
                r.strategy.name(),
                r.start,
                r.end
            ),
            (None, RequestRate::Infinite) => "inf".to_owned(),
            (None, RequestRate::PerSecond(r)) => r.to_string(),
        },
        args.max_concurrency
            .map_or("unlimited".to_owned(), |c| c.to_string())
    );
    // Where each whole rate of a ramp was reached, from the same schedule.
    let ramp_events = match ramp {
        Some(r) => r
            .delays(requests.len(), args.burstiness, args.seed)
            .map(|delays| r.change_events(&delays))
            .unwrap_or_default(),
        None => Vec::new(),
    };
    let started_at = crate::clock::unix_now();
    let mut display = (!args.vllm.disable_tqdm).then(|| super::progress::Display::new("  "));
    if let Some(display) = display.as_mut() {
        display.benchmark("bench", requests.len());
    }
    let mut progress = crate::progress::BenchProgress::new(requests.len());
    let outcome = runtime
        .block_on(harness::benchmark(
            &client,
            &settings,
            requests,
            &load,
            &options,
            &mut |index, record| {
                progress.record(record);
                if let Some(display) = display.as_mut() {
                    display.request("bench", &progress);
                }
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
        .map_err(|e| CliError::Usage {
            message: e.to_string(),
            hint:
                "a `--request-rate` of at least 1e-6, or `inf`, and a finite `--burstiness` above 0"
                    .into(),
        })?;
    if let Some(mut display) = display {
        display.finish("bench");
    }

    let block = BlockOptions {
        percentile_metrics: percentile_metrics.clone(),
        percentiles: percentiles.clone(),
        max_concurrency: args.max_concurrency,
        request_rate: match rate {
            RequestRate::Infinite => None,
            RequestRate::PerSecond(r) => Some(r),
        },
    };
    let m = &outcome.metrics;
    out!("{}", render_serving_block(m, &block));
    outln!(
        "perfpipe exact peaks: {:.2} output tok/s (tokens, not chunks), {:.0} concurrent requests (at one instant)",
        m.exact_max_output_tokens_per_s.unwrap_or(f64::NAN),
        m.exact_max_concurrent_requests.unwrap_or(f64::NAN)
    );
    // CPU and wall over the same window: the measured requests only.
    let usage = crate::host::Usage {
        wall: outcome.duration,
        cpu: outcome.client_cpu,
    };
    eprintln!(
        "perfpipe bench: client ingested {:.0} output tok/s ({} chunks); client CPU {:.2} s over {:.2} s ({:.0}% of one core)",
        m.output_throughput,
        outcome
            .records
            .iter()
            .map(|r| r.itl.len() + usize::from(r.success))
            .sum::<usize>(),
        usage.cpu,
        usage.wall,
        usage.percent_of_one_core(),
    );
    if let Some(line) = probe_summary(&outcome.records) {
        eprintln!("{line}");
    }
    for warning in &outcome.warnings {
        eprintln!("warning: {warning}");
    }

    if save {
        let meta = ResultMeta {
            date: crate::clock::compact(crate::clock::unix_now()),
            backend: settings.backend.name().to_owned(),
            label: args.label.clone(),
            model_id: model.clone(),
            tokenizer_id: tokenizer_id.clone(),
            num_prompts: outcome.records.len(),
            request_rate: block.request_rate,
            burstiness: args.burstiness,
            max_concurrency: args.max_concurrency,
            metadata,
            ramp_up: ramp,
            rps_change_events: ramp_events
                .iter()
                .map(|(rps, at)| (*rps, crate::clock::rfc3339(started_at + at.as_secs())))
                .collect(),
        };
        let json = save_result_json(
            &meta,
            m,
            &outcome.records,
            &percentile_metrics,
            &percentiles,
            args.save_detailed,
        );
        let name = args
            .result_filename
            .clone()
            .unwrap_or_else(|| default_file_name(&meta));
        let path = args.result_dir.clone().unwrap_or_default().join(name);
        // The numbers are printed above: a disk that fills meanwhile loses no measurement.
        let mut text = json.to_string() + "\n";
        if args.vllm.append_result {
            text = appended(&path, &text);
        }
        write_text(&path, &text).map_err(|e| e.measured(
            "the result block above has the numbers; the per-request details are in `--journal` when one was given",
        ))?;
        eprintln!("perfpipe bench: result written to `{}`", path.display());
    }
    // Last, so that it includes the post-processing.
    if let Some(bytes) = crate::host::peak_rss_bytes() {
        eprintln!("perfpipe bench: peak RSS {} MiB", bytes >> 20);
    }
    Ok(if m.failed > 0 {
        exit_code::RUNS_FAILED
    } else {
        exit_code::OK
    })
}

/// The options checked, before any server is contacted or file written.
pub(super) struct Checked {
    pub rate: RequestRate,
    pub percentile_metrics: Vec<Latency>,
    pub percentiles: Vec<f64>,
    pub goodput: Vec<(Latency, f64)>,
    pub backend: Backend,
    pub base_url: String,
    pub endpoint: String,
    pub ramp: Option<RampUp>,
    pub metadata: Vec<(String, String)>,
    /// Sampling parameters set on every request's body.
    pub extra_body: serde_json::Map<String, serde_json::Value>,
}

/// Every option's value checked against the others; reads and writes nothing.
pub(super) fn check(args: &BenchArgs) -> Result<Checked, CliError> {
    let percentile_metrics = parse_list(&args.percentile_metrics, "--percentile-metrics", |s| {
        Latency::from_name(s)
    })?;
    let percentiles = parse_list(&args.metric_percentiles, "--metric-percentiles", |s| {
        s.parse::<f64>().ok().filter(|p| (0.0..=100.0).contains(p))
    })?;
    let goodput = args
        .goodput
        .iter()
        .map(|g| parse_slo(g))
        .collect::<Result<Vec<_>, _>>()?;
    let (backend, default_endpoint) = match args.backend {
        BackendArg::Openai => (Backend::Openai, "/v1/completions"),
        BackendArg::OpenaiChat => (Backend::OpenaiChat, "/v1/chat/completions"),
    };
    let base_url = match &args.base_url {
        Some(url) => url.clone(),
        None => super::args::parse_base_url(&format!("http://{}:{}", args.host, args.port))
            .map_err(|message| CliError::Usage {
                message,
                hint: "`--host` is a host name or an IP address".into(),
            })?,
    };
    let endpoint = args
        .endpoint
        .clone()
        .unwrap_or_else(|| default_endpoint.to_owned());
    if let Some(refused) = super::bench_options::unsupported_dataset(args.dataset_name, &args.vllm)
    {
        return Err(refused);
    }
    if args.dataset_name == DatasetArg::Random {
        bounds::random_prompt_tokens(
            args.num_prompts,
            args.random_input_len,
            args.random_range_ratio,
        )
        .map_err(|e| CliError::Usage {
            message: e.to_string(),
            hint: "lower `--num-prompts` or `--random-input-len`".into(),
        })?;
    }
    Ok(Checked {
        rate: args.request_rate,
        percentile_metrics,
        percentiles,
        goodput,
        backend,
        base_url,
        endpoint,
        ramp: args.vllm.ramp(args.request_rate)?,
        metadata: args.vllm.metadata()?,
        extra_body: args.vllm.sampling()?,
    })
}

/// The tokenizer `--tokenizer` names (a file, a directory or a cached model
/// id), which must load; or the model's, else words.
fn load_tokenizer(name: &str, named: bool) -> Result<Tokenizer, CliError> {
    if name == "whitespace" {
        return Ok(Tokenizer::Whitespace);
    }
    let tokenizer = if named {
        Tokenizer::named(name, "main")
    } else {
        Tokenizer::for_model(name, "main")
    };
    let tokenizer = tokenizer.map_err(|e| CliError::Usage {
        message: e.to_string(),
        hint: "`--tokenizer` takes a tokenizer.json, a model directory, a model id in the Hugging Face cache, or `whitespace` to count words".into(),
    })?;
    match &tokenizer {
        Tokenizer::HuggingFace { path, .. } => {
            eprintln!("perfpipe bench: tokenizer `{}`", path.display());
        }
        Tokenizer::Whitespace => eprintln!(
            "warning: no tokenizer.json for `{name}` on this machine (perfpipe never downloads); \
             prompts are built and counted in words. Pass `--tokenizer` to use the model's."
        ),
    }
    Ok(tokenizer)
}

#[expect(clippy::disallowed_methods, reason = "the journal the user asked for")]
fn open_journal(path: &std::path::Path) -> Result<std::io::BufWriter<std::fs::File>, CliError> {
    let file = fs_err::File::create(path).map_err(|source| CliError::Write {
        path: path.display().to_string(),
        source,
    })?;
    Ok(std::io::BufWriter::new(file.into_parts().0))
}

/// The ShareGPT file's text, read before any server is contacted.
/// The dataset file's text (ShareGPT or custom), read before any server is contacted.
fn read_dataset(args: &BenchArgs) -> Result<Option<(PathBuf, String)>, CliError> {
    let (name, example) = match args.dataset_name {
        DatasetArg::Sharegpt => ("sharegpt", "ShareGPT_V3_unfiltered_cleaned_split.json"),
        DatasetArg::Custom => ("custom", "prompts.jsonl"),
        _ => return Ok(None),
    };
    let path: PathBuf = args.dataset_path.clone().ok_or_else(|| CliError::Usage {
        message: format!("`--dataset-name {name}` needs `--dataset-path`"),
        hint: format!("e.g. `--dataset-path {example}`"),
    })?;
    let text = fs_err::read_to_string(&path).map_err(|e| CliError::Usage {
        message: format!("cannot read the dataset: {e}"),
        hint: "check `--dataset-path`".into(),
    })?;
    Ok(Some((path, text)))
}

/// The prompts, and whether they came from the prompt cache.
fn requests(
    args: &BenchArgs,
    tokenizer: &Tokenizer,
    file: Option<(PathBuf, String)>,
) -> Result<(Vec<BenchRequest>, bool), CliError> {
    let Some((path, text)) = file else {
        return Ok(harness::prompt_cache::random(
            &harness::prompt_cache::PromptCache::user(),
            tokenizer,
            args.random_input_len,
            args.random_output_len,
            args.random_range_ratio,
            args.seed,
            args.num_prompts,
        ));
    };
    if args.dataset_name == DatasetArg::Custom {
        return harness::custom::custom(
            tokenizer,
            &text,
            args.num_prompts,
            args.vllm.custom_output_len,
        )
        .map(|prompts| (prompts, false))
        .map_err(|e| CliError::Usage {
            message: format!("`{}`: {e}", path.display()),
            hint: "a custom dataset is JSONL: one {\"prompt\": \"...\"} per line".into(),
        });
    }
    dataset::sharegpt(
        tokenizer,
        &text,
        args.num_prompts,
        args.seed,
        args.sharegpt_output_len,
    )
    .map(|prompts| (prompts, false))
    .map_err(|e| CliError::Usage {
        message: format!("`{}`: {e}", path.display()),
        hint: "a ShareGPT file is a JSON list of {\"conversations\": [{\"from\", \"value\"}, ...]}"
            .into(),
    })
}

async fn first_model(client: &reqwest::Client, base_url: &str) -> Result<String, CliError> {
    let unreachable = |e: String| CliError::Server {
        message: format!("cannot list the models of `{base_url}`: {e}"),
    };
    let response = client
        .get(format!("{base_url}/v1/models"))
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .map_err(|e| unreachable(e.to_string()))?;
    if let Some(error) = harness::client::redirected(&response) {
        return Err(CliError::Usage {
            message: format!("`{base_url}/v1/models` answered {error}"),
            hint: "name the server itself with `--base-url`: perfpipe follows no redirect".into(),
        });
    }
    let body: serde_json::Value = response
        .json()
        .await
        .map_err(|e| unreachable(e.to_string()))?;
    body.pointer("/data/0/id")
        .and_then(|v| v.as_str())
        // Named in the result file and the output: the server's text.
        .map(|id| crate::secrets::redact(id).into_owned())
        .ok_or_else(|| unreachable("the answer lists no model".into()))
}

/// Against perfpipe's stamping test server: how late the client records what
/// the server wrote, and how long requests took to reach the server.
fn probe_summary(records: &[RequestRecord]) -> Option<String> {
    use crate::metrics::percentile;
    let delays: Vec<f64> = records
        .iter()
        .flat_map(|r| r.client_delays.iter().copied())
        .collect();
    let reached: Vec<f64> = records.iter().filter_map(|r| r.server_received).collect();
    if delays.is_empty() {
        return None;
    }
    let ms = |v: &[f64], p: f64| percentile(v, p) * 1000.0;
    Some(format!(
        "perfpipe bench: client delay from the server's write to the recorded timestamp: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms ({} reads); \
         requests reached the server after p50 {:.2} ms, p99 {:.2} ms",
        ms(&delays, 50.0),
        ms(&delays, 99.0),
        ms(&delays, 100.0),
        delays.len(),
        ms(&reached, 50.0),
        ms(&reached, 99.0)
    ))
}

fn parse_list<T>(
    text: &str,
    flag: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<Vec<T>, CliError> {
    text.split(',')
        .map(str::trim)
        .map(|item| {
            parse(item).ok_or_else(|| CliError::Usage {
                message: format!("invalid value `{item}` in `{flag}`"),
                hint: match flag {
                    "--percentile-metrics" => "any of `ttft,tpot,itl,e2el`".into(),
                    _ => "numbers between 0 and 100, e.g. `50,90,99`".into(),
                },
            })
        })
        .collect()
}

fn parse_slo(text: &str) -> Result<(Latency, f64), CliError> {
    let bad = || CliError::Usage {
        message: format!("invalid `--goodput` `{text}`"),
        hint: "write `KEY:MILLISECONDS` with KEY one of `ttft`, `tpot`, `e2el`, e.g. `ttft:500`"
            .into(),
    };
    let (key, value) = text.split_once(':').ok_or_else(bad)?;
    let latency = Latency::from_name(key)
        .filter(|l| *l != Latency::Itl)
        .ok_or_else(bad)?;
    let ms = value
        .parse::<f64>()
        .ok()
        .filter(|v| *v >= 0.0)
        .ok_or_else(bad)?;
    Ok((latency, ms))
}

/// The result file with `text` appended as its last line: vLLM's
/// `--append-result` (a file that does not end its last line gets a newline).
fn appended(path: &std::path::Path, text: &str) -> String {
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
