//! The built-in benchmark client: a tokio + reqwest load generator that
//! measures what `vllm bench serve` measures, under its definitions. (effects)

pub mod chunk;
pub mod client;
pub mod dataset;
pub mod sse;

use std::sync::Arc;

use tokio::sync::Semaphore;
use tokio::time::{Duration, Instant};

pub use crate::tokenizer::TOKENIZER;
pub use client::{RequestSettings, http_client};
pub use dataset::{BenchRequest, DatasetError};

use crate::metrics::RequestRecord;
use crate::rng::Rng;
use crate::spec::RequestRate;

/// Version of the built-in harness's behaviour; part of every key.
/// Bump it by hand whenever a change can move a number.
pub const BUILTIN_HARNESS_VERSION: &str = "1";

/// How requests are sent.
#[derive(Debug, Clone)]
pub struct Load {
    pub rate: RequestRate,
    pub max_concurrency: Option<u32>,
    pub seed: u64,
    /// A request that receives nothing for this long fails.
    pub stall_timeout: Duration,
}

/// Every request's record, in dataset order, and the benchmark's duration.
#[derive(Debug, Clone)]
pub struct BenchOutput {
    pub records: Vec<RequestRecord>,
    pub duration: f64,
}

/// Sends every request (at `load`'s rate, at most `max_concurrency` in flight)
/// and waits for all of them.
pub async fn run(
    client: &reqwest::Client,
    settings: &RequestSettings,
    requests: Vec<BenchRequest>,
    load: &Load,
) -> BenchOutput {
    let delays = arrival_delays(requests.len(), load);
    let semaphore = load
        .max_concurrency
        .map(|n| Arc::new(Semaphore::new(n as usize)));
    let settings = Arc::new(settings.clone());
    let stall = load.stall_timeout;
    let t0 = Instant::now();
    let mut tasks = Vec::with_capacity(requests.len());
    for (req, delay) in requests.into_iter().zip(delays) {
        let (client, settings, semaphore) = (client.clone(), settings.clone(), semaphore.clone());
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep_until(t0 + delay).await;
            let _permit = match &semaphore {
                Some(s) => Some(
                    s.clone()
                        .acquire_owned()
                        .await
                        .expect("semaphore is never closed"),
                ),
                None => None,
            };
            client::send(&client, &settings, &req, t0, stall).await
        }));
    }
    let mut records = Vec::with_capacity(tasks.len());
    for task in tasks {
        records.push(task.await.unwrap_or_else(|e| RequestRecord {
            error: Some(format!("request task failed: {e}")),
            ..Default::default()
        }));
    }
    BenchOutput {
        records,
        duration: t0.elapsed().as_secs_f64(),
    }
}

/// All at once for `inf`; otherwise exponential gaps (Poisson arrivals),
/// rescaled as vLLM does so the last request leaves at `n / rate`.
fn arrival_delays(n: usize, load: &Load) -> Vec<Duration> {
    let RequestRate::PerSecond(rate) = load.rate else {
        return vec![Duration::ZERO; n];
    };
    let mut rng = Rng::new(load.seed);
    let mut t = 0.0;
    let mut times: Vec<f64> = (0..n)
        .map(|_| {
            t += -(1.0 - rng.next_f64()).ln() / rate;
            t
        })
        .collect();
    if let Some(&last) = times.last()
        && last > 0.0
    {
        let target = n as f64 / rate;
        times.iter_mut().for_each(|x| *x *= target / last);
    }
    times.into_iter().map(Duration::from_secs_f64).collect()
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
            "{short} of {} requests generated fewer tokens than asked ({got} of {asked})",
            ok.len()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_arrivals_end_at_n_over_rate() {
        let load = Load {
            rate: RequestRate::PerSecond(4.0),
            max_concurrency: None,
            seed: 0,
            stall_timeout: Duration::from_secs(1),
        };
        let d = arrival_delays(100, &load);
        assert!((d[99].as_secs_f64() - 25.0).abs() < 1e-6);
        assert!(d.windows(2).all(|w| w[0] <= w[1]));
        let inf = Load {
            rate: RequestRate::Infinite,
            ..load
        };
        assert!(arrival_delays(3, &inf).iter().all(|d| d.is_zero()));
    }
}
