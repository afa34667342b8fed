//! Per-request timings → [`ServingMetrics`], exactly as vLLM v0.11's
//! `calculate_metrics` (in `vllm/benchmarks/serve.py`) does it.

use serde::{Deserialize, Serialize};

use super::ServingMetrics;
use super::gaps::{Gaps, nanos_to_secs};
use super::select::order_statistics;

/// What the client saw of one request. Times are seconds; `start` is relative
/// to the benchmark's start.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    pub success: bool,
    /// The engine instance it went to (replicas measured together).
    #[serde(default)]
    pub instance: u32,
    /// Prompt tokens: the server's `usage.prompt_tokens` when it sends it,
    /// else as the client counted them (vLLM 0.32's `prompt_len`).
    pub prompt_len: u64,
    /// Output tokens: the server's usage, or when it sends none (or 0) the
    /// streamed text counted with the tokenizer, as vLLM's client does.
    pub output_tokens: u64,
    /// Which of the two `output_tokens` is.
    #[serde(default)]
    pub output_tokens_source: OutputTokensSource,
    /// Output tokens that were asked for (`max_tokens`).
    pub requested_output_tokens: u64,
    pub start: f64,
    /// Send → first chunk carrying `choices`.
    pub ttft: f64,
    /// Send → end of the stream.
    pub latency: f64,
    /// Gaps between successive chunks after the first.
    pub itl: Gaps,
    pub error: Option<String>,
    /// Against perfpipe's test server only: seconds from the server's write to
    /// the client's timestamp, per read (the client's own delay).
    #[serde(skip)]
    pub client_delays: Vec<f64>,
    /// Against perfpipe's test server only: seconds from sending to the server
    /// having the request (connection and accept queue).
    #[serde(skip)]
    pub server_received: Option<f64>,
}

/// Where output token counts came from: the server's `usage`, or the
/// tokenizer over the streamed text (a server that sends no usage).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputTokensSource {
    #[default]
    Usage,
    Tokenizer,
    /// Some requests' counts came from usage, others' from the tokenizer.
    Mixed,
}

impl OutputTokensSource {
    /// The source of a benchmark's counts: its successful requests' one, if they agree.
    pub fn of(records: &[&RequestRecord]) -> Option<Self> {
        let mut sources = records.iter().map(|r| r.output_tokens_source);
        let first = sources.next()?;
        Some(match sources.all(|s| s == first) {
            true => first,
            false => Self::Mixed,
        })
    }
}

/// A latency family, as `--percentile-metrics` and `--goodput` name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Latency {
    Ttft,
    Tpot,
    Itl,
    E2el,
}

impl Latency {
    pub const ALL: [Latency; 4] = [Self::Ttft, Self::Tpot, Self::Itl, Self::E2el];

    pub fn name(self) -> &'static str {
        match self {
            Self::Ttft => "ttft",
            Self::Tpot => "tpot",
            Self::Itl => "itl",
            Self::E2el => "e2el",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.name() == name)
    }
}

/// What to summarize beyond the fixed set (vLLM's `--metric-percentiles`, `--goodput`).
#[derive(Debug, Clone, PartialEq)]
pub struct MetricOptions {
    /// Percentiles to report, e.g. `[99.0]` or `[50.0, 90.0, 99.9]`.
    pub percentiles: Vec<f64>,
    /// SLOs in milliseconds; a request is good when it meets all of them.
    pub goodput: Vec<(Latency, f64)>,
}

impl Default for MetricOptions {
    fn default() -> Self {
        Self {
            percentiles: vec![99.0],
            goodput: Vec::new(),
        }
    }
}

/// vLLM's key for a percentile: `p99`, `p99.9`, `p50` (as Python prints the number).
pub fn percentile_key(p: f64, latency: Latency) -> String {
    let number = if p.fract() == 0.0 {
        format!("{p:.0}")
    } else {
        p.to_string()
    };
    format!("p{number}_{}_ms", latency.name())
}

/// vLLM's metrics over one benchmark of `duration` seconds.
pub fn compute(
    records: &[RequestRecord],
    duration: f64,
    options: &MetricOptions,
) -> ServingMetrics {
    let ok: Vec<&RequestRecord> = records.iter().filter(|r| r.success).collect();
    let completed = ok.len() as u64;
    let total_input: u64 = ok.iter().map(|r| r.prompt_len).sum();
    let total_output: u64 = ok.iter().map(|r| r.output_tokens).sum();
    let ttfts: Vec<f64> = ok.iter().map(|r| r.ttft).collect();
    let e2els: Vec<f64> = ok.iter().map(|r| r.latency).collect();
    let tpots: Vec<f64> = ok
        .iter()
        .filter(|r| r.output_tokens > 1)
        .map(|r| (r.latency - r.ttft) / (r.output_tokens - 1) as f64)
        .collect();
    // The pooled ITLs are millions: read where they are, never copied.
    let itls = || ok.iter().flat_map(|r| r.itl.secs());
    let (peak_tokens, peak_concurrency) = peaks(&ok);
    let good = ok
        .iter()
        .filter(|r| super::slo::meets(r, &options.goodput))
        .count();
    // Means and deviations over the values in request order (as vLLM sums
    // them); then each short list is sorted once, in place, for all its
    // percentiles, and the ITLs' ones are selected.
    let moments = |v: &[f64]| {
        (
            mean(v.iter().copied()) * 1000.0,
            std(|| v.iter().copied()) * 1000.0,
        )
    };
    let (mean_ttft, std_ttft) = moments(&ttfts);
    let (mean_tpot, std_tpot) = moments(&tpots);
    let (mean_itl, std_itl) = (mean(itls()) * 1000.0, std(itls) * 1000.0);
    let (mean_e2el, std_e2el) = moments(&e2els);
    let [ttfts, tpots, e2els] = [ttfts, tpots, e2els].map(Sorted::new);
    let wanted: Vec<f64> = [50.0, 99.0]
        .into_iter()
        .chain(options.percentiles.iter().copied())
        .collect();
    let itls = Selected::new(&ok, &wanted);
    let mut percentiles = std::collections::BTreeMap::new();
    for latency in Latency::ALL {
        for &p in options.percentiles.iter().filter(|p| **p != 99.0) {
            let value = match latency {
                Latency::Ttft => ttfts.percentile(p),
                Latency::Tpot => tpots.percentile(p),
                Latency::Itl => itls.percentile(p),
                Latency::E2el => e2els.percentile(p),
            };
            percentiles.insert(percentile_key(p, latency), value * 1000.0);
        }
    }
    let per_s = |n: f64| if duration > 0.0 { n / duration } else { 0.0 };
    let ms = |v: &Sorted, p: f64| v.percentile(p) * 1000.0;

    ServingMetrics {
        completed,
        failed: records.len() as u64 - completed,
        duration,
        total_input_tokens: total_input,
        total_output_tokens: total_output,
        request_throughput: per_s(completed as f64),
        request_goodput: (!options.goodput.is_empty()).then(|| per_s(good as f64)),
        output_throughput: per_s(total_output as f64),
        total_token_throughput: per_s((total_input + total_output) as f64),
        max_output_tokens_per_s: peak_tokens,
        max_concurrent_requests: peak_concurrency,
        exact_max_output_tokens_per_s: Some(exact_token_peak(&ok)),
        exact_max_concurrent_requests: Some(exact_concurrency_peak(&ok)),
        output_tokens_source: OutputTokensSource::of(&ok),
        mean_ttft_ms: mean_ttft,
        median_ttft_ms: ms(&ttfts, 50.0),
        std_ttft_ms: std_ttft,
        p99_ttft_ms: ms(&ttfts, 99.0),
        mean_tpot_ms: mean_tpot,
        median_tpot_ms: ms(&tpots, 50.0),
        std_tpot_ms: std_tpot,
        p99_tpot_ms: ms(&tpots, 99.0),
        mean_itl_ms: mean_itl,
        median_itl_ms: itls.percentile(50.0) * 1000.0,
        std_itl_ms: std_itl,
        p99_itl_ms: itls.percentile(99.0) * 1000.0,
        mean_e2el_ms: mean_e2el,
        median_e2el_ms: ms(&e2els, 50.0),
        std_e2el_ms: std_e2el,
        p99_e2el_ms: ms(&e2els, 99.0),
        percentiles,
    }
}

/// Chunk arrival times of a request, with the tokens each chunk stands for.
fn chunk_times(r: &RequestRecord) -> impl Iterator<Item = f64> + '_ {
    std::iter::once(0.0)
        .chain(r.itl.secs())
        .scan(r.start + r.ttft, |t, gap| {
            *t += gap;
            Some(*t)
        })
}

/// Output tokens per 1-second bin, a chunk weighing its request's tokens / chunks.
fn exact_token_peak(ok: &[&RequestRecord]) -> f64 {
    let Some(t0) = ok.iter().map(|r| r.start).min_by(f64::total_cmp) else {
        return 0.0;
    };
    let mut bins: Vec<f64> = Vec::new();
    for r in ok {
        let weight = r.output_tokens as f64 / (r.itl.len() + 1) as f64;
        for t in chunk_times(r) {
            let bin = (t - t0).max(0.0) as usize;
            if bins.len() <= bin {
                bins.resize(bin + 1, 0.0);
            }
            bins[bin] += weight;
        }
    }
    bins.into_iter().fold(0.0, f64::max)
}

/// The most requests in flight at one instant, over `[start, start + latency)`.
fn exact_concurrency_peak(ok: &[&RequestRecord]) -> f64 {
    let mut events: Vec<(f64, i32)> = ok
        .iter()
        .flat_map(|r| [(r.start, 1), (r.start + r.latency, -1)])
        .collect();
    // Ends before starts at the same instant: `[start, end)` intervals.
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut alive = 0;
    let mut peak = 0;
    for (_, delta) in events {
        alive += delta;
        peak = peak.max(alive);
    }
    f64::from(peak)
}

/// vLLM v0.11's peaks: chunks per 1-second bin, and requests alive in each
/// 1-second bucket (a request counts in every bucket from its start to its end).
fn peaks(ok: &[&RequestRecord]) -> (f64, f64) {
    let Some(t0) = ok.iter().map(|r| r.start).min_by(f64::total_cmp) else {
        return (0.0, 0.0);
    };
    let t_end = ok.iter().map(|r| r.start + r.latency).fold(t0, f64::max);
    // Starts are times since the benchmark began (never negative), so
    // `t0 >= 0`: a count of `t_end + t0` buckets only adds empty ones at the
    // end (cargo-mutants' `- with +` here cannot be told apart).
    let buckets = (t_end - t0).ceil() as usize + 1;
    let mut tokens = vec![0u64; buckets];
    let mut alive = vec![0u64; buckets];
    for r in ok {
        for t in chunk_times(r) {
            if let Some(b) = tokens.get_mut((t - t0) as usize) {
                *b += 1;
            }
        }
        let first = (r.start - t0) as usize;
        // Never binds (no end is past `t_end`); a bound of `buckets + 1`
        // (cargo-mutants) is the same function.
        let last = ((r.start + r.latency - t0) as usize).min(buckets - 1);
        for b in &mut alive[first..=last] {
            *b += 1;
        }
    }
    let max = |v: &[u64]| v.iter().copied().max().unwrap_or(0) as f64;
    (max(&tokens), max(&alive))
}

/// The mean, summed in order.
fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = v.fold((0.0, 0_usize), |(sum, n), x| (sum + x, n + 1));
    if n == 0 { 0.0 } else { sum / n as f64 }
}

/// Population standard deviation (numpy's default, ddof=0), over values read twice.
fn std<I: Iterator<Item = f64>>(v: impl Fn() -> I) -> f64 {
    let m = mean(v());
    let (squares, n) = v().fold((0.0, 0_usize), |(sum, n), x| (sum + (x - m).powi(2), n + 1));
    if n == 0 {
        return 0.0;
    }
    (squares / n as f64).sqrt()
}

/// `np.percentile`'s linear interpolation between the values at the ranks
/// around `p`, given how many values there are and the value at a rank.
fn interpolate(len: usize, p: f64, at: impl Fn(usize) -> f64) -> f64 {
    if len == 0 {
        return 0.0;
    }
    let (lo, hi, fraction) = ranks(len, p);
    at(lo) + (at(hi) - at(lo)) * fraction
}

fn ranks(len: usize, p: f64) -> (usize, usize, f64) {
    let rank = p / 100.0 * (len - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    (lo, hi, rank - lo as f64)
}

/// Values sorted once, for any number of percentiles.
#[derive(Debug)]
pub struct Sorted(Vec<f64>);

impl Sorted {
    pub fn new(mut v: Vec<f64>) -> Self {
        v.sort_unstable_by(f64::total_cmp);
        Self(v)
    }

    /// `np.percentile` with linear interpolation; 0 for no values, as vLLM's `x or 0`.
    pub fn percentile(&self, p: f64) -> f64 {
        interpolate(self.0.len(), p, |i| self.0[i])
    }
}

/// The pooled ITLs at the ranks some percentiles need, selected from the
/// records' gaps (as nanoseconds, whose order is their seconds' order).
struct Selected {
    len: usize,
    at: std::collections::BTreeMap<usize, f64>,
}

impl Selected {
    fn new(ok: &[&RequestRecord], percentiles: &[f64]) -> Self {
        let len = ok.iter().map(|r| r.itl.len()).sum();
        let mut wanted: Vec<usize> = match len {
            0 => Vec::new(),
            _ => percentiles
                .iter()
                .flat_map(|&p| {
                    let (lo, hi, _) = ranks(len, p);
                    [lo, hi]
                })
                .collect(),
        };
        wanted.sort_unstable();
        wanted.dedup();
        let values = order_statistics(|| ok.iter().flat_map(|r| r.itl.nanos()), &wanted);
        let at = wanted
            .into_iter()
            .zip(values.into_iter().map(nanos_to_secs))
            .collect();
        Self { len, at }
    }

    fn percentile(&self, p: f64) -> f64 {
        interpolate(self.len, p, |i| self.at[&i])
    }
}

/// `np.percentile` with linear interpolation; 0 for no values, as vLLM's `x or 0`.
pub fn percentile(v: &[f64], p: f64) -> f64 {
    Sorted::new(v.to_vec()).percentile(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(start: f64, ttft: f64, itl: &[f64], out: u64) -> RequestRecord {
        RequestRecord {
            success: true,
            prompt_len: 10,
            output_tokens: out,
            requested_output_tokens: out,
            start,
            ttft,
            latency: ttft + itl.iter().sum::<f64>(),
            itl: Gaps::from_secs(itl),
            ..Default::default()
        }
    }

    #[test]
    fn percentiles_interpolate_linearly_like_numpy() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&v, 50.0), 2.5);
        // np.percentile([1,2,3,4], 99) == 3.97
        assert!((percentile(&v, 99.0) - 3.97).abs() < 1e-12);
        assert_eq!(percentile(&[], 99.0), 0.0);
    }

    #[test]
    fn tpot_excludes_the_first_token_and_itl_pools_chunks() {
        let records = [
            request(0.0, 0.5, &[0.1, 0.1, 0.1], 4),
            request(0.0, 1.0, &[0.3], 2),
            RequestRecord {
                error: Some("HTTP 500".into()),
                prompt_len: 99,
                ..Default::default()
            },
        ];
        let m = compute(&records, 2.0, &MetricOptions::default());
        assert_eq!((m.completed, m.failed), (2, 1));
        // Failed requests contribute neither input nor output tokens.
        assert_eq!((m.total_input_tokens, m.total_output_tokens), (20, 6));
        assert_eq!(m.total_token_throughput, 13.0);
        // TPOT per request: 0.3/3 = 0.1 s and 0.3/1 = 0.3 s.
        assert!((m.mean_tpot_ms - 200.0).abs() < 1e-9);
        // ITL pools all four gaps.
        assert!((m.mean_itl_ms - 150.0).abs() < 1e-9);
        assert!((m.mean_ttft_ms - 750.0).abs() < 1e-9);
    }

    #[test]
    fn peaks_count_chunks_per_second_and_requests_per_bucket() {
        let records = [
            request(0.0, 0.1, &[0.1, 0.1, 1.0], 4),
            request(0.5, 0.1, &[0.1], 2),
            request(1.5, 0.1, &[], 1),
        ];
        let m = compute(&records, 2.0, &MetricOptions::default());
        // None failed (a count that is not `sent - completed`, e.g. their
        // quotient, gives 1 here).
        assert_eq!((m.completed, m.failed), (3, 0));
        // Second 0 holds chunks at 0.1, 0.2, 0.3 (first) and 0.6, 0.7 (second).
        assert_eq!(m.max_output_tokens_per_s, 5.0);
        // Buckets: the first request spans 0 and 1, the second 0, the third 1.
        assert_eq!(m.max_concurrent_requests, 2.0);
        // At no instant are two requests in flight together except 0.5..0.7.
        assert_eq!(m.exact_max_concurrent_requests, Some(2.0));
    }

    /// The trace of the test above, starting 10.25 s into the benchmark:
    /// its bins and buckets are counted from its first start, so every peak
    /// is the same (a bin counted from anything else, e.g. `t + t0`, splits
    /// second 0 across two).
    #[test]
    fn peaks_are_counted_from_the_first_start_wherever_it_is() {
        let records = [
            request(10.25, 0.1, &[0.1, 0.1, 1.0], 4),
            request(10.75, 0.1, &[0.1], 2),
            request(11.75, 0.1, &[], 1),
        ];
        let m = compute(&records, 2.0, &MetricOptions::default());
        assert_eq!(m.max_output_tokens_per_s, 5.0);
        assert_eq!(m.exact_max_output_tokens_per_s, Some(5.0));
        assert_eq!(m.max_concurrent_requests, 2.0);
        assert_eq!(m.exact_max_concurrent_requests, Some(2.0));
    }

    /// Chunks arriving exactly at the trace's end (2.0 s) fall in a bucket
    /// of their own, the busiest: the buckets run to the last end, inclusive.
    #[test]
    fn chunks_at_the_very_end_of_the_trace_are_counted() {
        let records = [request(0.0, 0.5, &[1.5], 2), request(1.0, 1.0, &[], 1)];
        let m = compute(&records, 2.0, &MetricOptions::default());
        assert_eq!(m.max_output_tokens_per_s, 2.0);
    }

    #[test]
    fn the_source_of_output_counts_is_the_one_all_requests_share_else_mixed() {
        let counted = |source| RequestRecord {
            output_tokens_source: source,
            ..request(0.0, 0.1, &[], 1)
        };
        let (usage, tokenizer) = (
            counted(OutputTokensSource::Usage),
            counted(OutputTokensSource::Tokenizer),
        );
        let of = |records: &[&RequestRecord]| OutputTokensSource::of(records);
        assert_eq!(of(&[]), None);
        assert_eq!(of(&[&usage, &usage]), Some(OutputTokensSource::Usage));
        assert_eq!(
            of(&[&tokenizer, &tokenizer]),
            Some(OutputTokensSource::Tokenizer)
        );
        assert_eq!(of(&[&usage, &tokenizer]), Some(OutputTokensSource::Mixed));
        assert_eq!(of(&[&tokenizer, &usage]), Some(OutputTokensSource::Mixed));
        let m = compute(&[usage, tokenizer], 1.0, &MetricOptions::default());
        assert_eq!(m.output_tokens_source, Some(OutputTokensSource::Mixed));
    }

    #[test]
    fn every_latency_is_found_by_its_name_and_nothing_else_is() {
        for latency in Latency::ALL {
            assert_eq!(Latency::from_name(latency.name()), Some(latency));
        }
        let names: Vec<&str> = Latency::ALL.iter().map(|l| l.name()).collect();
        assert_eq!(names, ["ttft", "tpot", "itl", "e2el"]);
        for other in ["", "TTFT", "latency", "e2e"] {
            assert_eq!(Latency::from_name(other), None, "{other:?}");
        }
    }

    #[test]
    fn exact_peaks_count_tokens_of_multi_token_chunks_and_instants() {
        // Two chunks carrying 8 tokens in all (4 per chunk), both in second 0.
        let multi = request(0.0, 0.1, &[0.1], 8);
        let m = compute(&[multi], 1.0, &MetricOptions::default());
        assert_eq!(m.max_output_tokens_per_s, 2.0, "vLLM counts chunks");
        assert_eq!(m.exact_max_output_tokens_per_s, Some(8.0));
        // Back to back: one ends at 1.0 as the next starts; vLLM's buckets see two.
        let a = request(0.0, 0.5, &[0.5], 2);
        let b = request(1.0, 0.5, &[0.5], 2);
        let m = compute(&[a, b], 2.0, &MetricOptions::default());
        assert_eq!(m.max_concurrent_requests, 2.0);
        assert_eq!(m.exact_max_concurrent_requests, Some(1.0));
    }

    #[test]
    fn one_token_outputs_have_no_tpot_and_count_as_good() {
        let one = request(0.0, 0.3, &[], 1);
        let slow = request(0.0, 0.1, &[0.5], 2);
        let options = MetricOptions {
            percentiles: vec![50.0, 99.0, 99.9],
            goodput: vec![(Latency::Tpot, 100.0), (Latency::Ttft, 400.0)],
        };
        let m = compute(&[one, slow], 2.0, &options);
        // Only the two-token request has a TPOT: 0.5 s.
        assert_eq!(m.mean_tpot_ms, 500.0);
        // The one-token request is good (TPOT counts as 0); the other misses the TPOT SLO.
        assert_eq!(m.request_goodput, Some(0.5));
        assert_eq!(m.get("p50_ttft_ms"), Some(200.0));
        assert!(m.get("p99.9_tpot_ms").is_some());
        assert_eq!(percentile_key(99.9, Latency::Itl), "p99.9_itl_ms");
    }

    /// The compact gaps give, bit for bit, what the measured `f64` seconds
    /// gave: sums in request order, a sort of a copy for percentiles.
    #[test]
    fn itl_numbers_from_compact_gaps_are_those_of_the_measured_seconds() {
        let mut rng = crate::rng::Rng::new(3);
        let mut records = Vec::new();
        let mut measured = Vec::new();
        for i in 0..40 {
            let mut r = request(i as f64 * 0.01, 0.2, &[], 1);
            for _ in 0..rng.range(0, 300) {
                // Same-read gaps (0), microseconds, tens of milliseconds, seconds.
                let scale = [0, 1_000, 30_000_000, 5_000_000_000][rng.range(0, 3) as usize];
                let gap = std::time::Duration::from_nanos(rng.range(0, scale));
                r.itl.push(gap);
                measured.push(gap.as_secs_f64());
            }
            r.output_tokens = r.itl.len() as u64 + 1;
            records.push(r);
        }
        let options = MetricOptions {
            percentiles: vec![0.0, 25.0, 50.0, 90.0, 99.0, 99.9, 100.0],
            goodput: vec![],
        };
        let m = compute(&records, 10.0, &options);
        let mean = measured.iter().sum::<f64>() / measured.len() as f64;
        let var = measured.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / measured.len() as f64;
        assert_eq!(m.mean_itl_ms, mean * 1000.0);
        assert_eq!(m.std_itl_ms, var.sqrt() * 1000.0);
        assert_eq!(m.median_itl_ms, percentile(&measured, 50.0) * 1000.0);
        assert_eq!(m.p99_itl_ms, percentile(&measured, 99.0) * 1000.0);
        for p in options.percentiles.iter().filter(|p| **p != 99.0) {
            let key = percentile_key(*p, Latency::Itl);
            assert_eq!(
                m.get(&key),
                Some(percentile(&measured, *p) * 1000.0),
                "{key}"
            );
        }
    }

    /// A benchmark that took no measurable time has no rates (vLLM would
    /// divide by zero), while its latencies are still those measured.
    #[test]
    fn a_zero_duration_has_no_rates() {
        let m = compute(
            &[request(0.0, 0.2, &[0.1], 2)],
            0.0,
            &MetricOptions::default(),
        );
        assert_eq!(
            (
                m.request_throughput,
                m.output_throughput,
                m.total_token_throughput
            ),
            (0.0, 0.0, 0.0)
        );
        assert!((m.mean_ttft_ms - 200.0).abs() < 1e-9);
    }

    /// Every metric of one trace, computed by hand (see the comments).
    #[test]
    fn every_metric_of_a_recorded_trace() {
        let trace = [
            request(0.0, 0.2, &[0.1, 0.1, 0.2], 4), // latency 0.6
            request(0.5, 0.4, &[0.3], 2),           // latency 0.7
            request(1.0, 0.1, &[], 1),              // latency 0.1, no TPOT
            RequestRecord {
                prompt_len: 40,
                error: Some("HTTP 503".into()),
                ..Default::default()
            },
        ];
        let options = MetricOptions {
            percentiles: vec![99.0],
            goodput: vec![(Latency::Ttft, 300.0)],
        };
        let m = compute(&trace, 2.0, &options);
        let close = |got: f64, want: f64| assert!((got - want).abs() < 1e-9, "{got} != {want}");
        assert_eq!(
            (
                m.completed,
                m.failed,
                m.total_input_tokens,
                m.total_output_tokens
            ),
            (3, 1, 30, 7)
        );
        close(m.request_throughput, 1.5);
        close(m.output_throughput, 3.5);
        close(m.total_token_throughput, 18.5); // (30 + 7) / 2
        close(m.request_goodput.unwrap(), 1.0); // TTFTs 0.2 and 0.1 meet 300 ms
        // TTFT [0.2, 0.4, 0.1]: mean 233.33, median 200, std sqrt(0.046667/3), p99 0.2 + 0.2 × 0.98.
        close(m.mean_ttft_ms, 700.0 / 3.0);
        close(m.median_ttft_ms, 200.0);
        close(m.std_ttft_ms, (0.14f64 / 9.0).sqrt() * 1000.0);
        close(m.p99_ttft_ms, 396.0);
        // TPOT [0.4/3, 0.3]: mean and median 216.67, p99 0.1333 + 0.1667 × 0.99.
        close(m.mean_tpot_ms, 650.0 / 3.0);
        close(m.median_tpot_ms, 650.0 / 3.0);
        close(
            m.p99_tpot_ms,
            (0.4 / 3.0 + (0.3 - 0.4 / 3.0) * 0.99) * 1000.0,
        );
        close(m.std_tpot_ms, (0.3 - 0.4 / 3.0) / 2.0 * 1000.0);
        // ITL pooled [0.1, 0.1, 0.2, 0.3]: mean 175, median 150, p99 0.2 + 0.1 × 0.97.
        close(m.mean_itl_ms, 175.0);
        close(m.median_itl_ms, 150.0);
        close(m.p99_itl_ms, 297.0);
        close(m.std_itl_ms, 0.006875f64.sqrt() * 1000.0);
        // E2EL [0.6, 0.7, 0.1]: mean 466.67, median 600, p99 0.6 + 0.1 × 0.98.
        close(m.mean_e2el_ms, 1400.0 / 3.0);
        close(m.median_e2el_ms, 600.0);
        close(m.p99_e2el_ms, 698.0);
        // Deviations from 1.4 / 3: 0.4 / 3, 0.7 / 3 and -1.1 / 3.
        close(m.std_e2el_ms, (1.86f64 / 27.0).sqrt() * 1000.0);
        // Chunks at 0.2 0.3 0.4 0.6 | 0.9 1.2 | 1.1: five in second 0.
        close(m.max_output_tokens_per_s, 5.0);
        close(m.exact_max_output_tokens_per_s.unwrap(), 5.0);
        // Buckets 0: first and second; 1: second and third. Instants: never three.
        close(m.max_concurrent_requests, 2.0);
        close(m.exact_max_concurrent_requests.unwrap(), 2.0);
    }
}
