//! `perfpipe bench`: the built-in load generator against any OpenAI-compatible
//! server, with `vllm bench serve`'s options, printed block and result file;
//! the workflow is `ops::bench`.

use std::time::Duration;

use super::args::{BackendArg, BenchArgs, DatasetArg};
use crate::exit_code;
use crate::metrics::{Latency, RequestRecord, render_serving_block};
use crate::ops::Error;
use crate::ops::bench::{BenchEvent, BenchOptions, Prompts, ResultFile};
use crate::ops::{self, Stderr};
use crate::spec::{Backend, bounds};
use crate::tokio_runtime::Io;

pub fn bench(args: &BenchArgs, io: &Io) -> Result<u8, Error> {
    let options = check(args)?;
    let mut display = (!args.vllm.disable_tqdm).then(|| super::progress::Display::new("  "));
    let measured = ops::bench::measure(&options, io, &Stderr, &mut |event| {
        let Some(display) = display.as_mut() else {
            return;
        };
        match event {
            BenchEvent::Started { requests } => display.benchmark("bench", requests),
            BenchEvent::Request(progress) => display.request("bench", progress),
        }
    })?;
    if let Some(mut display) = display {
        display.finish("bench");
    }

    let outcome = &measured.outcome;
    let m = &outcome.metrics;
    out!("{}", render_serving_block(m, &options.block()));
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
    eoutln!(
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
        eoutln!("{line}");
    }
    for warning in &outcome.warnings {
        eoutln!("warning: {warning}");
    }

    // After the numbers are printed: a disk that fills meanwhile loses no measurement.
    if let Some(result) = &options.result {
        let path = ops::bench::save_result(&options, result, &measured)?;
        eoutln!("perfpipe bench: result written to `{}`", path.display());
    }
    // Last, so that it includes the post-processing.
    if let Some(bytes) = crate::host::peak_rss_bytes() {
        eoutln!("perfpipe bench: peak RSS {} MiB", bytes >> 20);
    }
    Ok(if m.failed > 0 {
        exit_code::RUNS_FAILED
    } else {
        exit_code::OK
    })
}

/// Every option's value checked against the others, as the library's
/// options; reads and writes nothing.
pub(super) fn check(args: &BenchArgs) -> Result<BenchOptions, Error> {
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
    let (backend, backend_name) = match args.backend {
        BackendArg::Openai => (Backend::Openai, "openai"),
        BackendArg::Vllm => (Backend::Openai, "vllm"),
        BackendArg::OpenaiChat => (Backend::OpenaiChat, "openai-chat"),
    };
    let default_endpoint = backend.default_endpoint();
    let base_url = match &args.base_url {
        Some(url) => url.clone(),
        None => super::args::parse_base_url(&format!("http://{}:{}", args.host, args.port))
            .map_err(|message| Error::Usage {
                message,
                hint: "`--host` is a host name or an IP address".into(),
            })?,
    };
    let endpoint = args
        .endpoint
        .clone()
        .unwrap_or_else(|| default_endpoint.to_owned());
    if let Some(refused) = super::bench_options::unsupported_dataset(args.dataset_name, &args.vllm)
        .or_else(|| args.vllm.unsupported_batch())
    {
        return Err(refused);
    }
    if args.dataset_name == DatasetArg::Random {
        bounds::random_prompt_tokens(
            args.num_prompts,
            args.random_input_len
                .saturating_add(args.vllm.random_prefix_len),
            args.random_range_ratio,
        )
        .map_err(|e| Error::Usage {
            message: e.to_string(),
            hint: "lower `--num-prompts` or `--random-input-len`".into(),
        })?;
    }
    let ramp = args.vllm.ramp(args.request_rate)?;
    let metadata = args.vllm.metadata()?;
    // vLLM's `{**sampling_params, **extra_body}`: `--extra-body` wins.
    let mut extra_body = args.vllm.sampling()?;
    extra_body.extend(args.vllm.extra_body()?);
    let save = args.save_result || args.save_detailed || args.vllm.append_result;
    Ok(BenchOptions {
        base_url,
        endpoint,
        backend,
        backend_name,
        model: args.model.clone(),
        served_model_name: args.vllm.served_model_name.clone(),
        headers: args
            .vllm
            .headers(std::env::var_os("OPENAI_API_KEY").as_deref())?,
        logprobs: args.vllm.logprobs()?,
        ready_check: args.vllm.ready_check(),
        insecure: args.vllm.insecure,
        tokenizer: args.tokenizer.clone(),
        prompts: prompts(args)?,
        num_prompts: args.num_prompts,
        seed: args.seed,
        rate: args.request_rate,
        ramp,
        burstiness: args.burstiness,
        max_concurrency: args.max_concurrency,
        warmups: args.num_warmups,
        ignore_eos: args.ignore_eos,
        temperature: args.temperature,
        extra_body,
        request_id_prefix: args.vllm.request_id_prefix.clone(),
        percentile_metrics,
        percentiles,
        goodput,
        stall_timeout: Duration::from_secs(args.stall_timeout),
        journal: args.journal.clone(),
        result: save.then(|| ResultFile {
            dir: args.result_dir.clone().unwrap_or_default(),
            name: args.result_filename.clone(),
            label: args.label.clone(),
            detailed: args.save_detailed,
            append: args.vllm.append_result,
            metadata,
        }),
    })
}

/// Where the prompts come from; a dataset file is named.
fn prompts(args: &BenchArgs) -> Result<Prompts, Error> {
    let path = |name: &str, example: &str| {
        args.dataset_path.clone().ok_or_else(|| Error::Usage {
            message: format!("`--dataset-name {name}` needs `--dataset-path`"),
            hint: format!("e.g. `--dataset-path {example}`"),
        })
    };
    Ok(match args.dataset_name {
        DatasetArg::Sharegpt => Prompts::ShareGpt {
            path: path("sharegpt", "ShareGPT_V3_unfiltered_cleaned_split.json")?,
            output_len: args.sharegpt_output_len,
        },
        DatasetArg::Custom => Prompts::Custom {
            path: path("custom", "prompts.jsonl")?,
            output_len: args.vllm.custom_output_len,
        },
        // The others are refused by `unsupported_dataset`.
        _ => Prompts::Random(crate::dataset::Shape {
            prefix_len: args.vllm.random_prefix_len,
            input_len: args.random_input_len,
            output_len: args.random_output_len,
            range_ratio: args.random_range_ratio,
        }),
    })
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
) -> Result<Vec<T>, Error> {
    text.split(',')
        .map(str::trim)
        .map(|item| {
            parse(item).ok_or_else(|| Error::Usage {
                message: format!("invalid value `{item}` in `{flag}`"),
                hint: match flag {
                    "--percentile-metrics" => "any of `ttft,tpot,itl,e2el`".into(),
                    _ => "numbers between 0 and 100, e.g. `50,90,99`".into(),
                },
            })
        })
        .collect()
}

fn parse_slo(text: &str) -> Result<(Latency, f64), Error> {
    let bad = || Error::Usage {
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
