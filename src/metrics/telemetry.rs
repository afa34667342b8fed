//! What the machine and the engine did while a run measured: GPU samples
//! (`nvidia-smi`), the engine's processes (`/proc`: CPU time and resident
//! memory) and the engine's Prometheus `/metrics`, summarized. (pure)

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
    /// `utilization.gpu`: the share of the last sample period in which a
    /// kernel ran, in percent (not how busy the SMs were).
    pub utilization_pct: f64,
}

/// The engine's processes (every process of its process groups) at one
/// moment, as `/proc/<pid>/stat` reports them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessSample {
    pub processes: u32,
    /// User and system CPU time since they started, summed.
    pub cpu_seconds: f64,
    /// Resident memory, summed.
    pub rss_mib: f64,
}

/// One process as `/proc/<pid>/stat` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub pgrp: i32,
    /// utime + stime, in clock ticks.
    pub cpu_ticks: u64,
    /// Resident pages.
    pub rss_pages: u64,
}

/// Parses `/proc/<pid>/stat`. The command name (field 2) is in parentheses
/// and may hold spaces and parentheses: the fields after it are counted
/// from its last `)`.
pub fn parse_proc_stat(stat: &str) -> Option<ProcStat> {
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // After the name: state(3) ppid(4) pgrp(5) ... utime(14) stime(15) ... rss(24).
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok());
    Some(ProcStat {
        pgrp: fields.get(2)?.parse().ok()?,
        cpu_ticks: field(14)? + field(15)?,
        rss_pages: field(24)?,
    })
}

/// The sample of the processes of `stats` in `groups`.
pub fn process_sample(
    stats: &[ProcStat],
    groups: &[i32],
    ticks_per_second: u64,
    page_bytes: u64,
) -> ProcessSample {
    let ours: Vec<&ProcStat> = stats.iter().filter(|s| groups.contains(&s.pgrp)).collect();
    ProcessSample {
        processes: u32::try_from(ours.len()).unwrap_or(u32::MAX),
        cpu_seconds: ours.iter().map(|s| s.cpu_ticks).sum::<u64>() as f64
            / ticks_per_second.max(1) as f64,
        rss_mib: (ours.iter().map(|s| s.rss_pages).sum::<u64>() * page_bytes) as f64
            / (1024.0 * 1024.0),
    }
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
    /// The mean of `utilization.gpu` (absent from results measured before it was sampled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_gpu_utilization_pct: Option<f64>,
    pub max_temperature_c: Option<f64>,
    /// Throttle reasons seen (other than idle), e.g. `0x0000000000000040`.
    pub throttling: Vec<String>,
    pub engine_samples: usize,
    pub mean_kv_cache_usage: Option<f64>,
    pub max_running: Option<f64>,
    pub max_waiting: Option<f64>,
    /// Preemptions during the run (the counter's increase).
    pub preemptions: Option<f64>,
    /// Samples of the engine's processes (local engines only).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub process_samples: usize,
    /// CPU time the engine's processes used during the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_cpu_seconds: Option<f64>,
    /// The most resident memory the engine's processes held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_engine_rss_mib: Option<f64>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The `nvidia-smi` arguments of a telemetry sample.
pub const GPU_QUERY: &[&str] = &[
    // `clocks_throttle_reasons.active` is the name drivers before 535 know;
    // later ones (580 seen) still answer it, as `clocks_event_reasons.active`.
    "--query-gpu=index,power.draw,clocks.sm,temperature.gpu,clocks_throttle_reasons.active,memory.used,utilization.gpu",
    "--format=csv,noheader,nounits",
];

/// Parses [`GPU_QUERY`] output; lines it cannot read are skipped (`[N/A]` values read as NaN).
pub fn parse_gpu_samples(csv: &str) -> Vec<GpuSample> {
    csv.lines()
        .filter_map(|line| {
            let c: Vec<&str> = line.split(',').map(str::trim).collect();
            let num = |s: &str| s.parse::<f64>().unwrap_or(f64::NAN);
            if c.len() != 7 {
                return None;
            }
            Some(GpuSample {
                index: c[0].parse().ok()?,
                power_w: num(c[1]),
                sm_clock_mhz: num(c[2]),
                temperature_c: num(c[3]),
                throttle_reasons: c[4].to_owned(),
                memory_used_mib: num(c[5]),
                utilization_pct: num(c[6]),
            })
        })
        .collect()
}

/// A sample's telemetry, under `logs/`: one JSON object a line, in the
/// order they were read, each `{"t_s": <seconds since the run's start>,
/// "<kind>": {...}}` (docs/metrics.md, "Telemetry").
pub const TELEMETRY_FILE: &str = "telemetry.jsonl";

/// One line of [`TELEMETRY_FILE`]: what was read (`kind`: `gpu`,
/// `process`, `engine`, `engine_start`, `engine_end`), `t_s` seconds after
/// the run's start (to the millisecond).
pub fn telemetry_line(t_s: f64, kind: &str, sample: &impl Serialize) -> String {
    let t_s = (t_s * 1000.0).round() / 1000.0;
    let mut line = serde_json::json!({ "t_s": t_s, kind: sample }).to_string();
    line.push('\n');
    line
}

/// A GPU sample as [`TELEMETRY_FILE`] keeps it: as read, and its throttle
/// mask in NVML's words.
#[derive(Debug, Serialize)]
pub struct GpuLine<'a> {
    #[serde(flatten)]
    pub sample: &'a GpuSample,
    pub throttle_reason_names: Vec<String>,
}

impl<'a> GpuLine<'a> {
    pub fn of(sample: &'a GpuSample) -> Self {
        Self {
            sample,
            throttle_reason_names: throttle_reason_names(&sample.throttle_reasons),
        }
    }
}

/// What a chart reads of one GPU line of [`TELEMETRY_FILE`]; a value the
/// GPU did not give (`[N/A]`, written `null`) is `None`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct GpuReading {
    pub t_s: f64,
    pub index: u32,
    pub power_w: Option<f64>,
    pub utilization_pct: Option<f64>,
}

/// The GPU reading of a [`TELEMETRY_FILE`] line; `None` for other kinds of
/// line, for one cut short, and for the lines of samples stored before
/// `t_s` was written (they have no time to plot).
pub fn read_gpu_line(line: &str) -> Option<GpuReading> {
    #[derive(Deserialize)]
    struct Line {
        t_s: f64,
        gpu: Fields,
    }
    #[derive(Deserialize)]
    struct Fields {
        index: u32,
        power_w: Option<f64>,
        utilization_pct: Option<f64>,
    }
    // Most lines of a run on few GPUs are of other kinds: not parsed.
    if !line.contains("\"gpu\"") {
        return None;
    }
    let Line { t_s, gpu } = serde_json::from_str(line).ok()?;
    Some(GpuReading {
        t_s,
        index: gpu.index,
        power_w: gpu.power_w,
        utilization_pct: gpu.utilization_pct,
    })
}

/// The most spans of time a [`GpuTimeline`] keeps: a chart's worth of points.
pub const TIMELINE_SPANS: usize = 240;

/// One run's GPU series, averaged over its GPUs and over spans of time:
/// a second each while the run is shorter than [`TIMELINE_SPANS`] seconds,
/// twice as long each time it would need more, so that a day-long run is
/// read line by line into at most that many points.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuTimeline {
    span_s: f64,
    spans: Vec<Span>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Span {
    t_s: Mean,
    power_w: Mean,
    utilization_pct: Mean,
}

impl Default for GpuTimeline {
    fn default() -> Self {
        Self {
            span_s: 1.0,
            spans: Vec::new(),
        }
    }
}

impl GpuTimeline {
    pub fn add(&mut self, r: &GpuReading) {
        if !(r.t_s.is_finite() && r.t_s >= 0.0) {
            return;
        }
        let mut at = (r.t_s / self.span_s) as usize;
        while at >= TIMELINE_SPANS {
            self.coarsen();
            at = (r.t_s / self.span_s) as usize;
        }
        if self.spans.len() <= at {
            self.spans.resize(at + 1, Span::default());
        }
        let span = &mut self.spans[at];
        span.t_s.add(r.t_s);
        span.power_w.add(r.power_w.unwrap_or(f64::NAN));
        span.utilization_pct
            .add(r.utilization_pct.unwrap_or(f64::NAN));
    }

    /// Spans twice as long: each pair of spans merged.
    fn coarsen(&mut self) {
        self.span_s *= 2.0;
        let merge = |a: Mean, b: Mean| Mean {
            sum: a.sum + b.sum,
            n: a.n + b.n,
        };
        self.spans = self
            .spans
            .chunks(2)
            .map(|pair| {
                let b = pair.get(1).copied().unwrap_or_default();
                Span {
                    t_s: merge(pair[0].t_s, b.t_s),
                    power_w: merge(pair[0].power_w, b.power_w),
                    utilization_pct: merge(pair[0].utilization_pct, b.utilization_pct),
                }
            })
            .collect();
    }

    /// How long each span is, in seconds.
    pub fn span_s(&self) -> f64 {
        self.span_s
    }

    pub fn is_empty(&self) -> bool {
        self.spans.iter().all(|s| s.t_s.n == 0)
    }

    /// (mean time, mean power per GPU) of each span with a power read.
    pub fn power_w(&self) -> Vec<(f64, f64)> {
        self.points(|s| s.power_w)
    }

    /// (mean time, mean utilization) of each span with a utilization read.
    pub fn utilization_pct(&self) -> Vec<(f64, f64)> {
        self.points(|s| s.utilization_pct)
    }

    fn points(&self, value: fn(&Span) -> Mean) -> Vec<(f64, f64)> {
        self.spans
            .iter()
            .filter_map(|s| Some((s.t_s.get()?, value(s).get()?)))
            .collect()
    }
}

/// The bits of `clocks_throttle_reasons.active`, as NVML names them
/// (`nvmlClocksEventReason*`).
const THROTTLE_REASONS: &[(u64, &str)] = &[
    (0x1, "GPU idle"),
    (0x2, "applications clocks setting"),
    (0x4, "SW power cap"),
    (0x8, "HW slowdown"),
    (0x10, "sync boost"),
    (0x20, "SW thermal slowdown"),
    (0x40, "HW thermal slowdown"),
    (0x80, "HW power brake slowdown"),
    (0x100, "display clock setting"),
];

/// What a throttle mask says, in NVML's words (`SW power cap`), each bit
/// NVML has not named as its hex value; a mask that is not hex as printed.
pub fn throttle_reason_names(mask: &str) -> Vec<String> {
    let Ok(bits) = u64::from_str_radix(mask.trim().trim_start_matches("0x"), 16) else {
        return vec![mask.to_owned()];
    };
    let named: u64 = THROTTLE_REASONS.iter().map(|(bit, _)| bit).sum();
    let mut names: Vec<String> = THROTTLE_REASONS
        .iter()
        .filter(|(bit, _)| bits & bit != 0)
        .map(|(_, name)| (*name).to_owned())
        .collect();
    let unnamed = bits & !named;
    if unnamed != 0 {
        names.push(format!("{unnamed:#x}"));
    }
    names
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

/// The GPU samples of a run as the summary needs them, added up as they
/// are read: a day-long run on 8 GPUs reads 700,000 samples, which its
/// `telemetry.jsonl` keeps and memory need not.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GpuTally {
    pub samples: usize,
    power_w: Mean,
    utilization_pct: Mean,
    max_temperature_c: Option<f64>,
    /// Masks other than idle, sorted, each once.
    throttling: std::collections::BTreeSet<String>,
}

/// A mean of the finite values added (`[N/A]` reads as NaN, which is not a zero).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Mean {
    sum: f64,
    n: usize,
}

impl Mean {
    fn add(&mut self, v: f64) {
        if v.is_finite() {
            self.sum += v;
            self.n += 1;
        }
    }

    fn get(self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / self.n as f64)
    }
}

impl GpuTally {
    pub fn add(&mut self, s: &GpuSample) {
        self.samples += 1;
        self.power_w.add(s.power_w);
        self.utilization_pct.add(s.utilization_pct);
        if s.temperature_c.is_finite() {
            self.max_temperature_c = Some(
                self.max_temperature_c
                    .map_or(s.temperature_c, |t| t.max(s.temperature_c)),
            );
        }
        // 0x1 is "GPU idle", not a slowdown.
        let mask = &s.throttle_reasons;
        if u64::from_str_radix(mask.trim_start_matches("0x"), 16).is_ok_and(|bits| bits & !0x1 != 0)
            && !self.throttling.contains(mask)
        {
            self.throttling.insert(mask.clone());
        }
    }
}

impl<'a> FromIterator<&'a GpuSample> for GpuTally {
    fn from_iter<I: IntoIterator<Item = &'a GpuSample>>(samples: I) -> Self {
        let mut tally = Self::default();
        samples.into_iter().for_each(|s| tally.add(s));
        tally
    }
}

/// A run's samples: gauges read while the load ran, and the engine's
/// counters also read at its start and end.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Samples {
    pub gpu: GpuTally,
    /// The engine's processes, from the start of the run to its end.
    pub process: Vec<ProcessSample>,
    pub engine: Vec<EngineSample>,
    pub start: Option<EngineSample>,
    pub end: Option<EngineSample>,
}

/// Means, maxima and what throttled, over the samples read while the load
/// ran; a counter's increase from the start to the end.
pub fn summarize(samples: &Samples) -> TelemetrySummary {
    let Samples {
        gpu,
        process,
        engine,
        start,
        end,
    } = samples;
    let mean = |v: Vec<f64>| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let max = |v: Vec<f64>| v.into_iter().reduce(f64::max);
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
        gpu_samples: gpu.samples,
        mean_power_w: gpu.power_w.get(),
        mean_gpu_utilization_pct: gpu.utilization_pct.get(),
        max_temperature_c: gpu.max_temperature_c,
        throttling: gpu.throttling.iter().cloned().collect(),
        engine_samples: engine.len(),
        mean_kv_cache_usage: mean(engine.iter().filter_map(|e| e.kv_cache_usage).collect()),
        max_running: max(engine.iter().filter_map(|e| e.running).collect()),
        max_waiting: max(engine.iter().filter_map(|e| e.waiting).collect()),
        preemptions,
        process_samples: process.len(),
        engine_cpu_seconds: match (process.first(), process.last()) {
            (Some(a), Some(b)) if process.len() > 1 => Some(b.cpu_seconds - a.cpu_seconds),
            _ => None,
        },
        max_engine_rss_mib: max(process.iter().map(|p| p.rss_mib).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_samples_and_throttling() {
        let csv = "0, 312.45, 1410, 67, 0x0000000000000000, 61234, 97\n1, 250.00, 1275, 71, 0x0000000000000040, 60000, 88\n2, [N/A], 1410, 60, 0x0000000000000001, 1, [N/A]\n3, 1.0, 1410, 60, 0x0000000000000000, 1\n";
        let mut samples = parse_gpu_samples(csv);
        assert_eq!(samples.len(), 3, "a line of six columns is not a sample");
        samples.push(GpuSample {
            power_w: f64::NAN,
            temperature_c: f64::NAN,
            utilization_pct: f64::NAN,
            ..samples[1].clone()
        });
        let s = summarize(&Samples {
            gpu: samples.iter().collect(),
            ..Samples::default()
        });
        assert!(
            (s.mean_power_w.unwrap() - 281.225).abs() < 1e-9,
            "N/A is not a zero"
        );
        assert_eq!(s.max_temperature_c, Some(71.0));
        assert_eq!(s.mean_gpu_utilization_pct, Some(92.5));
        assert_eq!(s.gpu_samples, 4);
        assert_eq!(
            s.throttling,
            ["0x0000000000000040"],
            "idle is not throttling, and a mask seen twice is said once"
        );
    }

    #[test]
    fn a_gpu_line_keeps_the_sample_timed_and_its_throttling_named() {
        let csv = "0, 624.68, 1725, 58, 0x0000000000000004, 5069, 100\n1, [N/A], 1725, 58, 0x0000000000000000, 5069, 99\n";
        let samples = parse_gpu_samples(csv);
        let line = telemetry_line(3.0004, "gpu", &GpuLine::of(&samples[0]));
        assert_eq!(
            line,
            concat!(
                r#"{"t_s":3.0,"gpu":{"index":0,"power_w":624.68,"sm_clock_mhz":1725.0,"temperature_c":58.0,"#,
                r#""throttle_reasons":"0x0000000000000004","memory_used_mib":5069.0,"utilization_pct":100.0,"#,
                r#""throttle_reason_names":["SW power cap"]}}"#,
                "\n"
            )
        );
        assert_eq!(
            read_gpu_line(&line),
            Some(GpuReading {
                t_s: 3.0,
                index: 0,
                power_w: Some(624.68),
                utilization_pct: Some(100.0)
            })
        );
        let unread = telemetry_line(4.0, "gpu", &GpuLine::of(&samples[1]));
        assert!(unread.contains(r#""power_w":null"#), "{unread}");
        assert_eq!(
            read_gpu_line(&unread).map(|r| r.power_w),
            Some(None),
            "[N/A] is no number"
        );
        let process = telemetry_line(4.0, "process", &ProcessSample::default());
        assert_eq!(read_gpu_line(&process), None);
        assert_eq!(
            read_gpu_line(r#"{"gpu":{"index":0,"power_w":1.0,"utilization_pct":2.0}}"#),
            None,
            "a line stored before lines were timed has no place in time"
        );
        assert_eq!(read_gpu_line(&line[..40]), None, "cut short");
    }

    #[test]
    fn a_timeline_is_per_second_until_it_would_pass_its_points_then_coarser() {
        let reading = |t_s: f64, index, power| GpuReading {
            t_s,
            index,
            power_w: Some(power),
            utilization_pct: Some(50.0 + f64::from(index)),
        };
        let mut short = GpuTimeline::default();
        for t in 1..=15 {
            short.add(&reading(f64::from(t) + 0.004, 0, 600.0));
            short.add(&reading(f64::from(t) + 0.004, 1, 200.0));
        }
        assert_eq!(short.span_s(), 1.0);
        let power = short.power_w();
        assert_eq!(power.len(), 15, "a point a second");
        assert!(
            (power[0].0 - 1.004).abs() < 1e-9 && power[0].1 == 400.0,
            "{power:?}"
        );
        assert_eq!(short.utilization_pct()[14].1, 50.5, "the mean of the GPUs");

        // A day at a sample a second, 8 GPUs: at most TIMELINE_SPANS points.
        let mut day = GpuTimeline::default();
        for t in 0..86_400 {
            for gpu in 0..8 {
                day.add(&reading(
                    f64::from(t),
                    gpu,
                    if t < 43_200 { 100.0 } else { 300.0 },
                ));
            }
        }
        let power = day.power_w();
        assert!(power.len() <= TIMELINE_SPANS, "{}", power.len());
        assert!(power.len() > TIMELINE_SPANS / 2, "{}", power.len());
        assert_eq!(day.span_s(), 512.0);
        assert_eq!((power[0].1, power.last().unwrap().1), (100.0, 300.0));
        let mean: f64 = power.iter().map(|p| p.1).sum::<f64>() / power.len() as f64;
        assert!((mean - 200.0).abs() < 5.0, "{mean}");
        assert!(power.windows(2).all(|w| w[0].0 < w[1].0), "in time order");

        let mut nothing = GpuTimeline::default();
        nothing.add(&reading(f64::NAN, 0, 1.0));
        nothing.add(&reading(-1.0, 0, 1.0));
        assert!(nothing.is_empty());
    }

    #[test]
    fn throttle_masks_read_as_nvmls_names() {
        // What a real H200 printed under a matrix-product load (driver 580.159.04).
        assert_eq!(
            throttle_reason_names("0x0000000000000004"),
            ["SW power cap"]
        );
        assert_eq!(
            throttle_reason_names("0x0000000000000048"),
            ["HW slowdown", "HW thermal slowdown"]
        );
        assert_eq!(
            throttle_reason_names("0x0000000000001001"),
            ["GPU idle", "0x1000"],
            "a bit NVML has not named stays visible"
        );
        assert_eq!(throttle_reason_names("[N/A]"), ["[N/A]"]);
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
    fn the_engines_processes_from_proc_stat() {
        // A name with a space and a parenthesis; pgrp 4242, utime 150, stime 50, rss 1000.
        let stat = "4243 (python3 (x) y) S 4242 4242 4242 0 -1 4194560 1 0 0 0 150 50 0 0 20 0 3 0 100 400000000 1000 18446744073709551615";
        let parsed = parse_proc_stat(stat).unwrap();
        assert_eq!(
            parsed,
            ProcStat {
                pgrp: 4242,
                cpu_ticks: 200,
                rss_pages: 1000
            }
        );
        let other = ProcStat { pgrp: 1, ..parsed };
        let sample = process_sample(&[parsed, parsed, other], &[4242], 100, 4096);
        assert_eq!(sample.processes, 2, "only the engine's process group");
        assert_eq!(sample.cpu_seconds, 4.0);
        assert!((sample.rss_mib - 2.0 * 1000.0 * 4096.0 / 1048576.0).abs() < 1e-9);
        let later = ProcessSample {
            cpu_seconds: 10.5,
            rss_mib: 1.0,
            ..sample.clone()
        };
        let s = summarize(&Samples {
            process: vec![sample, later],
            ..Samples::default()
        });
        assert_eq!(s.process_samples, 2);
        assert_eq!(s.engine_cpu_seconds, Some(6.5), "the run's increase");
        assert!(
            s.gpu_samples == 0 && s.mean_power_w.is_none() && s.throttling.is_empty(),
            "no GPU numbers invented"
        );
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
