//! The built-in benchmark client: a tokio + hyper load generator that
//! measures what `vllm bench serve` measures, under its definitions. (effects)

pub mod arrivals;
pub mod bounds;
pub mod chunk;
pub mod client;
pub mod custom;
pub mod guidellm;
pub mod http;
pub mod liveness;
pub mod prompt_cache;
pub mod py_random;
pub mod ramp;
pub mod save_result;
pub mod sse;
pub mod vllm_bench;

use std::sync::Arc;

use futures_util::future::OptionFuture;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::{Duration, Instant};

pub use client::{RequestSettings, Tls, http_client};
pub use http::StreamClient;

use crate::dataset::BenchRequest;
use crate::metrics::{MetricOptions, RequestRecord, ServingMetrics, compute};
use crate::spec::{Arrival, RequestRate};

/// The default stall timeout. It is counted from the engine's last event to
/// any request, not from the request's own start: published 32K-prompt runs
/// wait up to 13 minutes for a first token while the engine streams to the
/// others, and vLLM's client allows a request 6 hours, but a busy engine is
/// never silent for minutes. Ten minutes still covers a long prefill or a
/// kernel compiled on first use.
pub const DEFAULT_STALL_TIMEOUT_SECS: u64 = 600;

/// How requests are sent.
#[derive(Debug, Clone)]
pub struct Load {
    pub rate: RequestRate,
    /// How requests arrive at a finite rate.
    pub arrival: Arrival,
    /// Gamma shape of the gaps between requests; 1 is Poisson.
    pub burstiness: f64,
    pub max_concurrency: Option<u32>,
    pub seed: u64,
    /// A request fails when neither it nor any other request to its engine
    /// instance has received an event for this long.
    pub stall_timeout: Duration,
    /// How many times the first request is sent first, not measured.
    pub warmups: usize,
    /// The rate ramps instead (`vllm bench serve --ramp-up-strategy`);
    /// `rate` is then `inf`.
    pub ramp: Option<ramp::RampUp>,
}

impl Load {
    pub fn new(rate: RequestRate, max_concurrency: Option<u32>, seed: u64) -> Self {
        Self {
            rate,
            arrival: Arrival::Poisson,
            burstiness: 1.0,
            max_concurrency,
            seed,
            stall_timeout: Duration::from_secs(DEFAULT_STALL_TIMEOUT_SECS),
            warmups: 0,
            ramp: None,
        }
    }
}

/// A measured benchmark: every request's record (in dataset order), and the numbers.
#[derive(Debug, Clone)]
pub struct BenchOutcome {
    pub records: Vec<RequestRecord>,
    pub duration: f64,
    /// CPU seconds the client spent over `duration` (the same window:
    /// warm-ups, preparation and post-processing excluded).
    pub client_cpu: f64,
    pub metrics: ServingMetrics,
    pub warnings: Vec<String>,
}

/// Warms up, sends every request (at `load`'s rate, at most `max_concurrency`
/// in flight), and computes the metrics. `on_done` sees each record as its
/// request completes, so a journal loses nothing if the process dies. A
/// rate or burstiness that gives no send schedule is refused before any
/// request is sent.
pub async fn benchmark(
    client: &StreamClient,
    settings: &RequestSettings,
    requests: Vec<BenchRequest>,
    load: &Load,
    options: &MetricOptions,
    on_done: &mut dyn FnMut(usize, &RequestRecord),
) -> Result<BenchOutcome, arrivals::ScheduleError> {
    let delays = match &load.ramp {
        Some(ramp) => ramp.delays(requests.len(), load.burstiness, load.seed)?,
        None => arrivals::delays(
            requests.len(),
            load.rate,
            load.arrival,
            load.burstiness,
            load.seed,
        )?,
    };
    if let Some(first) = requests.first() {
        warm_up(client, settings, first, load, requests.len()).await;
    }
    let prepared = requests
        .into_iter()
        .enumerate()
        .map(|(i, r)| client::prepare(settings, &r, i))
        .collect();
    let (records, window) = send_all(client, settings, prepared, delays, load, on_done).await;
    let duration = window.wall;
    let metrics = compute(&records, duration, options);
    let mut warnings = Vec::new();
    warnings.extend(short_output_warning(&records));
    warnings.extend(counted_output_warning(&records));
    if metrics.failed > 0 {
        let first = records
            .iter()
            .find_map(|r| r.error.as_deref())
            .unwrap_or_default();
        warnings.push(format!(
            "{} of {} failed (first: {first})",
            metrics.failed,
            crate::plural::count(records.len(), "request", "requests")
        ));
    }
    Ok(BenchOutcome {
        records,
        duration,
        client_cpu: window.cpu,
        metrics,
        warnings,
    })
}

/// vLLM's warm-up (`benchmark` in `serve.py`): the first request,
/// `load.warmups` times, all at once under the concurrency limit, without
/// request id. In waves of at most `wave` (the benchmark's own size), so
/// their count costs time, never memory.
async fn warm_up(
    client: &StreamClient,
    settings: &RequestSettings,
    first: &BenchRequest,
    load: &Load,
    wave: usize,
) {
    let warming = RequestSettings {
        request_id_prefix: None,
        ..settings.clone()
    };
    let mut left = load.warmups;
    while left > 0 {
        let size = left.min(wave);
        // Spread over the instances as the benchmark's requests are.
        let same = (0..size)
            .map(|i| client::prepare(&warming, first, i))
            .collect();
        let at_once = vec![Duration::ZERO; size];
        send_all(client, &warming, same, at_once, load, &mut |_, _| {}).await;
        left -= size;
    }
}

/// vLLM's ready check (`wait_for_endpoint`): `first`, as a warm-up sends
/// it (no request id), again every 5 s until it succeeds, for at most
/// `timeout`; the last failure's reason when it never does.
pub async fn wait_until_ready(
    client: &StreamClient,
    settings: &RequestSettings,
    first: &BenchRequest,
    timeout: Duration,
) -> Result<(), String> {
    const RETRY: Duration = Duration::from_secs(5);
    let settings = RequestSettings {
        request_id_prefix: None,
        ..settings.clone()
    };
    let request = client::prepare(&settings, first, 0);
    let deadline = Instant::now() + timeout;
    let mut last = String::from("no answer");
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(last);
        }
        // A try that hangs ends at the deadline, or when it stalls.
        let liveness = liveness::Liveness::new(settings.urls.len(), left);
        let tried = tokio::time::timeout(
            left,
            client::send(client, &settings, &request, Instant::now(), &liveness),
        )
        .await;
        match tried {
            Ok(record) if record.success => return Ok(()),
            Ok(record) => last = record.error.unwrap_or_else(|| "it failed".into()),
            Err(_) => last = "no answer before the deadline".into(),
        }
        tokio::time::sleep(RETRY.min(deadline.saturating_duration_since(Instant::now()))).await;
    }
}

/// Sends `requests[i]` (encoded) at `delays[i]` after the start; returns the records
/// and the wall and CPU time from the start to the last record.
async fn send_all(
    client: &StreamClient,
    settings: &RequestSettings,
    requests: Vec<client::Prepared>,
    delays: Vec<Duration>,
    load: &Load,
    on_done: &mut dyn FnMut(usize, &RequestRecord),
) -> (Vec<RequestRecord>, crate::host::Usage) {
    let n = requests.len();
    let semaphore = load
        .max_concurrency
        .map(|n| Arc::new(Semaphore::new(n as usize)));
    let settings = Arc::new(settings.clone());
    let liveness = Arc::new(liveness::Liveness::new(
        settings.urls.len(),
        load.stall_timeout,
    ));
    // Names are looked up before the clock starts, as vLLM's client has
    // them cached by its first request.
    client.resolve(&settings.urls).await;
    let t0 = Instant::now();
    let window = crate::host::Window::start();
    // A request's task is spawned when it may be sent (its time has come and
    // a slot is free), not before: 12,000 tasks waiting from the start would
    // each hold a whole request's state. The semaphore is FIFO, so requests
    // are sent in the order and at the times they were when each task waited
    // on its own.
    let mut queue = requests.into_iter().zip(delays).enumerate();
    let mut admitting = std::pin::pin!(OptionFuture::from(queue.next().map(|next| admit(
        next,
        t0,
        semaphore.clone()
    ))));
    let mut tasks = JoinSet::new();
    let mut records: Vec<Option<RequestRecord>> = vec![None; n];
    let mut left = n;
    while left > 0 {
        tokio::select! {
            Some((index, req, permit)) = &mut admitting => {
                let (client, settings, liveness) = (client.clone(), settings.clone(), liveness.clone());
                tasks.spawn(async move {
                    let _permit = permit;
                    (index, client::send(&client, &settings, &req, t0, &liveness).await)
                });
                admitting.set(queue.next().map(|next| admit(next, t0, semaphore.clone())).into());
            }
            Some(joined) = tasks.join_next() => match joined {
                Ok((index, mut record)) => {
                    // Kept to the end: without the room left for more gaps.
                    record.itl.shrink_to_fit();
                    on_done(index, &record);
                    records[index] = Some(record);
                    left -= 1;
                }
                Err(e) => std::panic::resume_unwind(e.into_panic()),
            },
            else => unreachable!("a request is either waiting to be sent or in flight"),
        }
    }
    let used = window.finish();
    (
        records
            .into_iter()
            .map(|r| r.expect("every request reports"))
            .collect(),
        used,
    )
}

/// Waits until request `index` may be sent: its time has come and, under a
/// concurrency limit, a slot is free.
async fn admit(
    (index, (req, delay)): (usize, (client::Prepared, Duration)),
    t0: Instant,
    semaphore: Option<Arc<Semaphore>>,
) -> (
    usize,
    client::Prepared,
    Option<tokio::sync::OwnedSemaphorePermit>,
) {
    // The bounds (`spec::bounds`) keep every schedule within the clock; past
    // it, a request would be sent never rather than panic.
    match t0.checked_add(delay) {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
    let permit = match semaphore {
        Some(s) => Some(s.acquire_owned().await.expect("semaphore is never closed")),
        None => None,
    };
    (index, req, permit)
}

/// A warning when output tokens were counted with the tokenizer: the server
/// sent no usage, so the counts are the client's, as vLLM's client makes them.
pub fn counted_output_warning(records: &[RequestRecord]) -> Option<String> {
    let ok = records.iter().filter(|r| r.success).count();
    let counted = records
        .iter()
        .filter(|r| {
            r.success && r.output_tokens_source == crate::metrics::OutputTokensSource::Tokenizer
        })
        .count();
    (counted > 0).then(|| {
        format!(
            "{counted} of {} carried no usage: their output tokens were counted from the streamed text with the tokenizer",
            crate::plural::count(ok, "response", "responses")
        )
    })
}

/// A warning when requests generated fewer tokens than asked.
pub fn short_output_warning(records: &[RequestRecord]) -> Option<String> {
    let ok: Vec<&RequestRecord> = records.iter().filter(|r| r.success).collect();
    let short = ok
        .iter()
        .filter(|r| r.output_tokens < r.requested_output_tokens)
        .count();
    (short > 0).then(|| {
        let got: u64 = ok.iter().map(|r| r.output_tokens).sum();
        let asked: u64 = ok.iter().map(|r| r.requested_output_tokens).sum();
        format!(
            "{short} of {} generated fewer tokens than asked ({got} of {asked})",
            crate::plural::count(ok.len(), "request", "requests")
        )
    })
}

/// The 4K-input random workload of the published studies, for argv tests.
#[cfg(test)]
pub(crate) fn long_workload(rate: RequestRate, concurrency: Option<u32>) -> crate::spec::Workload {
    crate::spec::Workload {
        name: crate::spec::Spanned {
            value: "long".into(),
            span: (0..0).into(),
        },
        title: None,
        dataset: crate::spec::Dataset::Random {
            input_len: 4000,
            output_len: 200,
            range_ratio: 0.0,
            seed: 42,
        },
        prompts: 500,
        rate,
        arrival: crate::spec::Arrival::Poisson,
        concurrency,
        axis: None,
        slo: None,
        search: None,
    }
}
