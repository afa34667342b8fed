//! What the machine and the engine did while a run measured: GPU samples
//! (`nvidia-smi`) and the engine's Prometheus `/metrics`, summarized. (pure)

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One `nvidia-smi` reading of one GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuSample {
    pub index: u32,
    pub power_w: f64,
    pub sm_clock_mhz: f64,
    pub temperature_c: f64,
    /// `clocks_throttle_reasons.active` as printed (a bit mask, `0x0000000000000000` when none).
    pub throttle_reasons: String,
    pub memory_used_mib: f64,
}

/// One scrape of the engine's gauges, under engine-neutral names.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineSample {
    pub running: Option<f64>,
    pub waiting: Option<f64>,
    /// KV-cache usage, 0..1.
    pub kv_cache_usage: Option<f64>,
    pub preemptions_total: Option<f64>,
}

/// The summary a report shows next to a run's numbers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TelemetrySummary {
    pub gpu_samples: usize,
    pub mean_power_w: Option<f64>,
    pub max_temperature_c: Option<f64>,
    /// Throttle reasons seen (other than idle), e.g. `0x0000000000000040`.
    pub throttling: Vec<String>,
    pub engine_samples: usize,
    pub mean_kv_cache_usage: Option<f64>,
    pub max_running: Option<f64>,
    pub max_waiting: Option<f64>,
    /// Preemptions during the run (the counter's increase).
    pub preemptions: Option<f64>,
}

/// The `nvidia-smi` arguments of a telemetry sample.
pub const GPU_QUERY: &[&str] = &[
    "--query-gpu=index,power.draw,clocks.sm,temperature.gpu,clocks_throttle_reasons.active,memory.used",
    "--format=csv,noheader,nounits",
];

/// Parses [`GPU_QUERY`] output; lines it cannot read are skipped (`[N/A]` values read as NaN).
pub fn parse_gpu_samples(csv: &str) -> Vec<GpuSample> {
    csv.lines()
        .filter_map(|line| {
            let c: Vec<&str> = line.split(',').map(str::trim).collect();
            let num = |s: &str| s.parse::<f64>().unwrap_or(f64::NAN);
            if c.len() != 6 {
                return None;
            }
            Some(GpuSample {
                index: c[0].parse().ok()?,
                power_w: num(c[1]),
                sm_clock_mhz: num(c[2]),
                temperature_c: num(c[3]),
                throttle_reasons: c[4].to_owned(),
                memory_used_mib: num(c[5]),
            })
        })
        .collect()
}

/// Sums each Prometheus sample by metric name (labels dropped).
pub fn parse_prometheus(text: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for line in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let (name_labels, value) = match line.rsplit_once(' ') {
            Some(pair) => pair,
            None => continue,
        };
        let name = name_labels.split('{').next().unwrap_or(name_labels).trim();
        if let Ok(v) = value.parse::<f64>() {
            *out.entry(name.to_owned()).or_default() += v;
        }
    }
    out
}

/// The engine's gauges, from vLLM's or SGLang's metric names.
pub fn engine_sample(metrics: &BTreeMap<String, f64>) -> EngineSample {
    let first = |names: &[&str]| names.iter().find_map(|n| metrics.get(*n).copied());
    EngineSample {
        running: first(&["vllm:num_requests_running", "sglang:num_running_reqs"]),
        waiting: first(&["vllm:num_requests_waiting", "sglang:num_queue_reqs"]),
        kv_cache_usage: first(&[
            "vllm:gpu_cache_usage_perc",
            "vllm:kv_cache_usage_perc",
            "sglang:token_usage",
        ]),
        preemptions_total: first(&["vllm:num_preemptions_total"]),
    }
}

/// A run's samples: gauges read while the load ran, and the engine's
/// counters also read at its start and end.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Samples {
    pub gpu: Vec<GpuSample>,
    pub engine: Vec<EngineSample>,
    pub start: Option<EngineSample>,
    pub end: Option<EngineSample>,
}

/// Means, maxima and what throttled, over the samples read while the load
/// ran; a counter's increase from the start to the end.
pub fn summarize(samples: &Samples) -> TelemetrySummary {
    let Samples {
        gpu,
        engine,
        start,
        end,
    } = samples;
    let mean = |v: Vec<f64>| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let max = |v: Vec<f64>| v.into_iter().reduce(f64::max);
    let finite = |v: f64| v.is_finite().then_some(v);
    let mut throttling: Vec<String> = gpu
        .iter()
        .map(|s| s.throttle_reasons.clone())
        .filter(|r| {
            // 0x1 is "GPU idle", not a slowdown.
            u64::from_str_radix(r.trim_start_matches("0x"), 16).is_ok_and(|bits| bits & !0x1 != 0)
        })
        .collect();
    throttling.sort();
    throttling.dedup();
    let preemptions = {
        let seen: Vec<f64> = (start.iter().chain(engine).chain(end))
            .filter_map(|e| e.preemptions_total)
            .collect();
        match (seen.first(), seen.last()) {
            (Some(a), Some(b)) => Some(b - a),
            _ => None,
        }
    };
    TelemetrySummary {
        gpu_samples: gpu.len(),
        mean_power_w: mean(gpu.iter().filter_map(|s| finite(s.power_w)).collect()),
        max_temperature_c: max(gpu.iter().filter_map(|s| finite(s.temperature_c)).collect()),
        throttling,
        engine_samples: engine.len(),
        mean_kv_cache_usage: mean(engine.iter().filter_map(|e| e.kv_cache_usage).collect()),
        max_running: max(engine.iter().filter_map(|e| e.running).collect()),
        max_waiting: max(engine.iter().filter_map(|e| e.waiting).collect()),
        preemptions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_samples_and_throttling() {
        let csv = "0, 312.45, 1410, 67, 0x0000000000000000, 61234\n1, 250.00, 1275, 71, 0x0000000000000040, 60000\n2, [N/A], 1410, 60, 0x0000000000000001, 1\n";
        let samples = parse_gpu_samples(csv);
        assert_eq!(samples.len(), 3);
        let s = summarize(&Samples {
            gpu: samples,
            ..Samples::default()
        });
        assert!(
            (s.mean_power_w.unwrap() - 281.225).abs() < 1e-9,
            "N/A is not a zero"
        );
        assert_eq!(s.max_temperature_c, Some(71.0));
        assert_eq!(
            s.throttling,
            ["0x0000000000000040"],
            "idle is not throttling"
        );
    }

    #[test]
    fn prometheus_text_of_vllm_and_sglang() {
        let vllm = "# HELP vllm:num_requests_running Number of requests\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 12.0\nvllm:num_requests_waiting{model_name=\"m\"} 3.0\nvllm:gpu_cache_usage_perc{model_name=\"m\"} 0.5\nvllm:num_preemptions_total{model_name=\"m\"} 7.0\n";
        let a = engine_sample(&parse_prometheus(vllm));
        assert_eq!(
            (a.running, a.waiting, a.kv_cache_usage),
            (Some(12.0), Some(3.0), Some(0.5))
        );
        let sglang = "sglang:num_running_reqs{tp_rank=\"0\"} 4\nsglang:num_queue_reqs{tp_rank=\"0\"} 1\nsglang:token_usage{tp_rank=\"0\"} 0.25\n";
        let b = engine_sample(&parse_prometheus(sglang));
        assert_eq!(
            (b.running, b.waiting, b.kv_cache_usage, b.preemptions_total),
            (Some(4.0), Some(1.0), Some(0.25), None)
        );
        let later = EngineSample {
            preemptions_total: Some(10.0),
            ..a.clone()
        };
        let s = summarize(&Samples {
            engine: vec![a.clone(), later],
            ..Samples::default()
        });
        assert_eq!(s.preemptions, Some(3.0));
        assert_eq!(s.mean_kv_cache_usage, Some(0.5));
    }

    #[test]
    fn gauges_come_from_the_load_and_counters_from_its_start_to_its_end() {
        let idle = EngineSample {
            running: Some(0.0),
            waiting: Some(0.0),
            kv_cache_usage: Some(0.0),
            preemptions_total: Some(5.0),
        };
        let busy = EngineSample {
            running: Some(8.0),
            waiting: Some(2.0),
            kv_cache_usage: Some(0.6),
            preemptions_total: Some(6.0),
        };
        let end = EngineSample {
            preemptions_total: Some(9.0),
            ..idle.clone()
        };
        let s = summarize(&Samples {
            engine: vec![busy],
            start: Some(idle.clone()),
            end: Some(end.clone()),
            ..Samples::default()
        });
        assert_eq!(
            (s.mean_kv_cache_usage, s.max_running, s.max_waiting),
            (Some(0.6), Some(8.0), Some(2.0)),
            "the idle start and end are no gauge samples"
        );
        assert_eq!(s.preemptions, Some(4.0), "from the start to the end");
        // Shorter than a period: the counters, and no gauge to report.
        let short = summarize(&Samples {
            start: Some(idle),
            end: Some(end),
            ..Samples::default()
        });
        assert_eq!((short.engine_samples, short.max_running), (0, None));
        assert_eq!(short.preemptions, Some(4.0));
    }
}
