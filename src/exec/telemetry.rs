//! Sampling while a run measures: the run's GPUs through `nvidia-smi` (real
//! runtimes), a local engine's processes through `/proc`, and the engine's
//! Prometheus `/metrics`, once a second while the load runs; the engine's
//! counters and processes also at the start and at the end. Each reading
//! is written to the sample's `telemetry.jsonl` as it is read, and only
//! what the summary needs of the GPU samples is held.

use std::io::Write;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::external;
use crate::metrics::telemetry::{
    self, EngineSample, GpuLine, ProcStat, ProcessSample, Samples, telemetry_line,
};

const PERIOD: Duration = Duration::from_secs(1);

/// The most bytes of an engine's `/metrics` read: vLLM's are some 100 KiB
/// (more with many LoRA adapters); a longer answer, or one without end, is
/// stopped here and the instance left out of that sample.
const MAX_METRICS_BYTES: u64 = 16 << 20;

/// A sampler running beside a benchmark.
pub struct Sampler {
    stop: watch::Sender<bool>,
    task: JoinHandle<std::io::Result<Samples>>,
}

/// `telemetry.jsonl` as it is written: each line timed from the run's start.
struct Log {
    out: std::io::BufWriter<std::fs::File>,
    start: Instant,
}

impl Log {
    fn write(&mut self, kind: &str, sample: &impl serde::Serialize) -> std::io::Result<()> {
        let t_s = self.start.elapsed().as_secs_f64();
        self.out
            .write_all(telemetry_line(t_s, kind, sample).as_bytes())
    }
}

/// Starts sampling `gpus` (none under `sim` or on CPU hardware), the
/// processes of `process_groups` (a local engine's) and each engine
/// instance's `/metrics`, writing each reading to `log` (the sample's
/// `telemetry.jsonl`) as it is read. The first sample of gauges is taken a
/// period after the start: one taken at the start sees an engine with
/// nothing yet to do, and would be all a run shorter than a period reports.
pub fn start(
    client: reqwest::Client,
    gpus: Option<Vec<u32>>,
    process_groups: Vec<i32>,
    base_urls: Vec<String>,
    log: std::fs::File,
) -> Sampler {
    let (stop, mut stopped) = watch::channel(false);
    let task = tokio::spawn(async move {
        let mut log = Log {
            out: std::io::BufWriter::new(log),
            start: Instant::now(),
        };
        let mut samples = Samples {
            start: scrape(&client, &base_urls).await,
            ..Samples::default()
        };
        if let Some(s) = &samples.start {
            log.write("engine_start", s)?;
        }
        samples.process.extend(processes(&process_groups));
        if let Some(p) = samples.process.last() {
            log.write("process", p)?;
        }
        loop {
            tokio::select! {
                _ = tokio::time::sleep(PERIOD) => {}
                _ = stopped.changed() => break,
            }
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
                    for gpu in telemetry::parse_gpu_samples(&out.stdout) {
                        log.write("gpu", &GpuLine::of(&gpu))?;
                        samples.gpu.add(&gpu);
                    }
                }
            }
            if let Some(e) = scrape(&client, &base_urls).await {
                log.write("engine", &e)?;
                samples.engine.push(e);
            }
            if let Some(p) = processes(&process_groups) {
                log.write("process", &p)?;
                samples.process.push(p);
            }
        }
        samples.end = scrape(&client, &base_urls).await;
        if let Some(e) = &samples.end {
            log.write("engine_end", e)?;
        }
        if let Some(p) = processes(&process_groups) {
            log.write("process", &p)?;
            samples.process.push(p);
        }
        let file = log.out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok(samples)
    });
    Sampler { stop, task }
}

/// The processes of `groups` now; none when there are no groups, or no
/// process of theirs is left.
fn processes(groups: &[i32]) -> Option<ProcessSample> {
    if groups.is_empty() {
        return None;
    }
    let stats: Vec<ProcStat> = std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter_map(|text| telemetry::parse_proc_stat(&text))
        .collect();
    // SAFETY: sysconf only reads configuration values.
    let (ticks, page) = unsafe {
        (
            libc::sysconf(libc::_SC_CLK_TCK),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let sample = telemetry::process_sample(
        &stats,
        groups,
        u64::try_from(ticks).unwrap_or(100),
        u64::try_from(page).unwrap_or(4096),
    );
    (sample.processes > 0).then_some(sample)
}

/// One scrape of every engine instance's `/metrics`, summed; none when no
/// instance answered.
async fn scrape(client: &reqwest::Client, base_urls: &[String]) -> Option<EngineSample> {
    let mut scraped = std::collections::BTreeMap::new();
    for url in base_urls {
        let body = async {
            let response = client
                .get(format!("{url}/metrics"))
                .timeout(PERIOD)
                .send()
                .await
                .ok()?;
            crate::tls::body_at_most(response, MAX_METRICS_BYTES)
                .await
                .ok()
        };
        // An instance that does not answer, or answers past the limit, is
        // left out of this sample.
        if let Some(body) = body.await {
            for (k, v) in telemetry::parse_prometheus(&String::from_utf8_lossy(&body)) {
                *scraped.entry(k).or_insert(0.0) += v;
            }
        }
    }
    if scraped.is_empty() {
        return None;
    }
    let mut sample = telemetry::engine_sample(&scraped);
    // Instances' cache usages were summed; report their mean.
    sample.kv_cache_usage = sample.kv_cache_usage.map(|u| u / base_urls.len() as f64);
    Some(sample)
}

impl Sampler {
    /// Stops sampling; the samples read, or why `telemetry.jsonl` could
    /// not be written.
    pub async fn finish(self) -> std::io::Result<Samples> {
        let _ = self.stop.send(true);
        self.task.await.unwrap_or_else(|_| Ok(Samples::default()))
    }
}
