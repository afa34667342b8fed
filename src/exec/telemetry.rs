//! Sampling while a run measures: the run's GPUs through `nvidia-smi` (real
//! runtimes) and the engine's Prometheus `/metrics`, once a second.

use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::external;
use crate::metrics::telemetry::{self, EngineSample, GpuSample};

const PERIOD: Duration = Duration::from_secs(1);

/// A sampler running beside a benchmark.
pub struct Sampler {
    stop: watch::Sender<bool>,
    task: JoinHandle<(Vec<GpuSample>, Vec<EngineSample>)>,
}

/// Starts sampling `gpus` (none under `sim`) and each engine instance's `/metrics`.
pub fn start(client: reqwest::Client, gpus: Option<Vec<u32>>, base_urls: Vec<String>) -> Sampler {
    let (stop, mut stopped) = watch::channel(false);
    let task = tokio::spawn(async move {
        let mut gpu_samples = Vec::new();
        let mut engine_samples = Vec::new();
        loop {
            if let Some(gpus) = &gpus {
                let ids = gpus
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(",");
                let mut args = telemetry::GPU_QUERY.to_vec();
                args.extend(["-i", &ids]);
                if let Ok(out) =
                    external::output("nvidia-smi", &args, Duration::from_secs(10)).await
                {
                    gpu_samples.extend(telemetry::parse_gpu_samples(&out.stdout));
                }
            }
            let mut scraped = std::collections::BTreeMap::new();
            for url in &base_urls {
                let text = async {
                    client
                        .get(format!("{url}/metrics"))
                        .timeout(PERIOD)
                        .send()
                        .await?
                        .text()
                        .await
                };
                if let Ok(text) = text.await {
                    for (k, v) in telemetry::parse_prometheus(&text) {
                        *scraped.entry(k).or_insert(0.0) += v;
                    }
                }
            }
            if !scraped.is_empty() {
                let mut sample = telemetry::engine_sample(&scraped);
                // Instances' cache usages were summed; report their mean.
                sample.kv_cache_usage = sample.kv_cache_usage.map(|u| u / base_urls.len() as f64);
                engine_samples.push(sample);
            }
            tokio::select! {
                _ = tokio::time::sleep(PERIOD) => {}
                _ = stopped.changed() => break,
            }
        }
        (gpu_samples, engine_samples)
    });
    Sampler { stop, task }
}

impl Sampler {
    pub async fn finish(self) -> (Vec<GpuSample>, Vec<EngineSample>) {
        let _ = self.stop.send(true);
        self.task.await.unwrap_or_default()
    }
}
