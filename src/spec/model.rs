//! The typed experiment: what `spec::parse` produces and every later stage reads.

use std::collections::BTreeMap;
use std::time::Duration;

use miette::SourceSpan;

pub use crate::cpu::CpuDecl;
use crate::facts::{EngineKind, Runtime};

pub use super::printed::{
    CellMetric, PrintedCell, PrintedLine, PrintedNote, PrintedNumber, Quantity,
};

/// A value together with where it was written, for diagnostics.
#[derive(Debug, Clone, PartialEq)]
pub struct Spanned<T> {
    pub value: T,
    pub span: SourceSpan,
}

#[derive(Debug, Clone)]
pub struct Spec {
    pub name: String,
    pub title: Option<String>,
    pub hardware: Hardware,
    pub model: ModelRef,
    pub runtime: Option<Runtime>,
    pub engines: Vec<EngineDecl>,
    pub harness: HarnessDecl,
    pub workloads: Vec<Workload>,
    pub steps: Vec<Step>,
    pub comparisons: Vec<Comparison>,
    pub conclusion: Option<Conclusion>,
    /// What the study optimizes: how comparisons and the conclusion rank.
    pub objective: Objective,
    pub report: ReportDecl,
}

impl Spec {
    /// How a report names a workload: its `title`, else its name.
    pub fn workload_title<'a>(&'a self, name: &'a str) -> &'a str {
        self.workload(name)
            .and_then(|w| w.title.as_deref())
            .unwrap_or(name)
    }

    pub fn step(&self, name: &str) -> Option<&Step> {
        self.steps.iter().find(|s| s.name.value == name)
    }

    pub fn workload(&self, name: &str) -> Option<&Workload> {
        self.workloads.iter().find(|w| w.name.value == name)
    }

    pub fn engine(&self, kind: EngineKind) -> Option<&EngineDecl> {
        self.engines.iter().find(|e| e.kind == kind)
    }
}

/// What a study optimizes (`objective throughput|latency`); never part of a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Objective {
    /// Total token throughput, higher is better (the throughput pages).
    #[default]
    Throughput,
    /// Mean end-to-end latency per request, lower is better (the latency pages).
    Latency,
}

impl Objective {
    pub const NAMES: &[&str] = &["throughput", "latency"];

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "throughput" => Some(Self::Throughput),
            "latency" => Some(Self::Latency),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Hardware {
    /// Normalized GPU type, e.g. `nvidia-a100-sxm4-80gb`; [`CPU_HARDWARE`]
    /// for a machine measured without GPUs.
    pub gpu: String,
    /// GPUs on the box; 0 on CPU hardware.
    pub gpus: u32,
    /// The CPU of a machine without GPUs (`hardware "cpu" ...`).
    pub cpu: Option<CpuDecl>,
}

/// The hardware name of a study measured on CPUs alone.
pub const CPU_HARDWARE: &str = "cpu";

#[derive(Debug, Clone, PartialEq)]
pub struct ModelRef {
    pub id: String,
    pub revision: String,
}

#[derive(Debug, Clone)]
pub struct EngineDecl {
    pub kind: EngineKind,
    pub version: String,
    /// A container image instead of the engine's official one for the version.
    pub image: Option<String>,
    /// `startup-timeout=` (seconds), else the engine's default.
    pub startup_timeout: Option<Duration>,
}

impl EngineDecl {
    /// How long this engine may take to become ready.
    pub fn startup_timeout(&self) -> Duration {
        self.startup_timeout
            .unwrap_or_else(|| self.kind.default_startup_timeout())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// `/v1/completions`.
    Openai,
    /// `/v1/chat/completions`.
    OpenaiChat,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Self::Openai => "openai",
            Self::OpenaiChat => "openai-chat",
        }
    }

    pub fn default_endpoint(self) -> &'static str {
        match self {
            Self::Openai => "/v1/completions",
            Self::OpenaiChat => "/v1/chat/completions",
        }
    }
}

/// Which benchmark client measures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HarnessKind {
    /// perfpipe's own load generator.
    Builtin,
    /// `vllm bench serve` at this exact version, driven as a subprocess.
    VllmBench { version: String },
    /// guidellm at this exact version, through that version's CLI (`guidellm
    /// benchmark run` before 0.7, `guidellm run` from 0.7), its numbers kept
    /// under its own definitions.
    Guidellm { version: String },
}

impl HarnessKind {
    /// The name an experiment declares it by.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Builtin => "builtin",
            Self::VllmBench { .. } => "vllm-bench",
            Self::Guidellm { .. } => "guidellm",
        }
    }

    /// Whose definitions its numbers follow.
    pub fn metric_set(&self) -> crate::metrics::MetricSet {
        match self {
            Self::Builtin | Self::VllmBench { .. } => crate::metrics::MetricSet::Vllm,
            Self::Guidellm { .. } => crate::metrics::MetricSet::Guidellm,
        }
    }
}

/// The benchmark client with every option made explicit.
#[derive(Debug, Clone)]
pub struct HarnessDecl {
    pub kind: HarnessKind,
    pub backend: Backend,
    pub endpoint: String,
    /// Sampling temperature; 0 is greedy, as `vllm bench serve` v0.11 sends by default.
    pub temperature: f64,
    pub ignore_eos: bool,
}

impl Default for HarnessDecl {
    fn default() -> Self {
        Self {
            kind: HarnessKind::Builtin,
            backend: Backend::OpenaiChat,
            endpoint: Backend::OpenaiChat.default_endpoint().to_owned(),
            temperature: 0.0,
            ignore_eos: false,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Workload {
    pub name: Spanned<String>,
    /// The name a report prints ("Short Prompt"); the key ignores it.
    pub title: Option<String>,
    pub dataset: Dataset,
    pub prompts: u32,
    pub rate: RequestRate,
    /// How requests arrive at a finite rate (ignored at `inf`).
    pub arrival: Arrival,
    /// The cap on requests in flight (`concurrency`): none is unlimited.
    pub concurrency: Option<u32>,
    /// The declared workload this is a point of, when it lists several loads
    /// (`concurrency 1 2 4`, `rate 1 4`); never key material.
    pub axis: Option<String>,
    /// The latency objectives its requests are held to (`slo`, else the
    /// experiment's): analysis, never key material.
    pub slo: Option<crate::metrics::slo::Slo>,
    /// `search`: its load is found by probing (each probe a point of its
    /// own), so the workload itself is no run.
    pub search: Option<super::SearchDecl>,
}

impl Workload {
    /// The name it was declared under: `chat` for the point `chat@c=8`.
    pub fn declared_name(&self) -> &str {
        self.axis.as_deref().unwrap_or(&self.name.value)
    }
}

/// How requests arrive at a finite rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Arrival {
    /// Exponential gaps: vLLM's gamma process with burstiness 1 (rescaled so
    /// the last request leaves at N / rate) under the built-in harness and
    /// `vllm bench serve`, guidellm's `poisson` profile under guidellm.
    #[default]
    Poisson,
    /// Evenly spaced: request k (from 1) leaves at k / rate, as guidellm's
    /// `constant` profile sends them.
    Constant,
}

impl Arrival {
    pub const NAMES: &[&str] = &["poisson", "constant"];

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "poisson" => Some(Self::Poisson),
            "constant" => Some(Self::Constant),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Poisson => "poisson",
            Self::Constant => "constant",
        }
    }
}

/// How a ShareGPT file becomes requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SharegptConversion {
    /// `vllm bench serve`'s sampling: a seeded shuffle, vLLM's length filters,
    /// the reply's length as output length.
    #[default]
    Vllm,
    /// GPUStack benchmark-runner's conversion for guidellm: the first turn of
    /// each conversation in file order (a human/user turn then a gpt/assistant
    /// turn, both non-empty), output length = the reply's token count, the
    /// first ⌊1.2·N⌋ kept; no shuffle, no filter.
    BenchmarkRunner,
}

impl SharegptConversion {
    pub const NAMES: &[&str] = &["vllm", "benchmark-runner"];

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "vllm" => Some(Self::Vllm),
            "benchmark-runner" => Some(Self::BenchmarkRunner),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Vllm => "vllm",
            Self::BenchmarkRunner => "benchmark-runner",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Dataset {
    ShareGpt {
        /// The declared file (the real dataset).
        path: String,
        /// A small stand-in used when `path` does not exist.
        sample: Option<String>,
        /// Fixed output length instead of the reply's length.
        output_len: Option<u32>,
        /// Seed of the shuffle (`--seed`, default 0).
        seed: u64,
        /// How conversations become requests.
        conversion: SharegptConversion,
    },
    Random {
        input_len: u32,
        output_len: u32,
        range_ratio: f64,
        /// Seed of the generator (`--seed`, default 0).
        seed: u64,
    },
}

/// Requests per second, or all at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RequestRate {
    Infinite,
    PerSecond(f64),
}

#[derive(Debug, Clone)]
pub struct Step {
    pub name: Spanned<String>,
    pub engine: EngineKind,
    pub model: ModelRef,
    pub gpus: u32,
    pub replicas: u32,
    /// `measure=all`: every replica is started and driven; else one is
    /// measured and reported ×replicas (the published convention).
    pub measure_all: bool,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// Workload names, in the order they are measured.
    pub workloads: Vec<String>,
    pub expectations: Vec<Expectation>,
    /// The sweep this step was expanded from, and its point there.
    pub sweep: Option<SweepOrigin>,
}

impl Step {
    /// What the measured throughput is multiplied by to report all replicas.
    pub fn report_factor(&self) -> u32 {
        if self.measure_all { 1 } else { self.replicas }
    }

    /// Engine instances a run starts.
    pub fn instances(&self) -> u32 {
        if self.measure_all { self.replicas } else { 1 }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct SweepOrigin {
    pub sweep: String,
    /// Each varied flag and its value at this point, in declared order.
    pub settings: Vec<(String, String)>,
    /// The concurrency a flag following the load (`load=concurrency`) sets:
    /// the point runs only the workload points at it.
    pub concurrency: Option<u32>,
}

/// A published number (or failure) for one step and workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Expectation {
    pub workload: String,
    pub outcome: ExpectedOutcome,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ExpectedOutcome {
    /// Metric name (a `--save-result` key) to value, as printed.
    Metrics(Vec<ExpectedMetric>),
    Failure(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ExpectedMetric {
    pub name: String,
    pub value: f64,
    /// The text as written, so a report prints `3792.50`, not `3792.5`.
    pub text: String,
}

/// How the report is laid out (`report { ... }`); nothing here enters a key.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportDecl {
    /// Decimals of every delta % (older published pages print 1, newer 2).
    pub delta_decimals: usize,
    /// How far a measured number may lie from its published value, in %.
    pub tolerance_pct: f64,
    /// The "Summary of optimization options" rows; `None`: one per comparison.
    pub summary: Option<Vec<SummaryRowDecl>>,
    /// Which sections, in which order.
    pub sections: Vec<Section>,
    /// The page's summary table: its header and the rules it states.
    pub summary_table: Option<SummaryTableDecl>,
}

/// The page's "Summary of Optimization Options" table (`summary-table`):
/// the column titles as printed, from which a report reads each column's
/// kind, and the rules the page states for skipping an option.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryTableDecl {
    pub header: Vec<String>,
    /// An option whose requests succeeded below this share (%) is skipped.
    pub min_success_pct: Option<f64>,
    /// An option that gains less than the row before it is skipped in the
    /// final command ("lower than previous +9.75%").
    pub skip_lower_than_previous: bool,
}

impl Default for ReportDecl {
    fn default() -> Self {
        Self {
            delta_decimals: 1,
            tolerance_pct: 5.0,
            summary: None,
            sections: Section::ALL.to_vec(),
            summary_table: None,
        }
    }
}

/// A section of the markdown report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Conclusion,
    Comparisons,
    Summary,
    OtherCases,
    Published,
    Context,
    Runs,
}

impl Section {
    pub const ALL: [Section; 7] = [
        Self::Conclusion,
        Self::Comparisons,
        Self::Summary,
        Self::OtherCases,
        Self::Published,
        Self::Context,
        Self::Runs,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Conclusion => "conclusion",
            Self::Comparisons => "comparisons",
            Self::Summary => "summary",
            Self::OtherCases => "other-cases",
            Self::Published => "published",
            Self::Context => "context",
            Self::Runs => "runs",
        }
    }
}

/// One row of the summary of optimization options, as the page made it.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRowDecl {
    pub title: String,
    /// The comparison whose data the row is about (default: the one titled alike).
    pub comparison: Option<String>,
    pub credits: Credit,
    /// Gains at or below this many % print as "-".
    pub threshold_pct: f64,
    /// The row's cells as the page printed them (`cell`), after its title.
    pub printed: Vec<PrintedCell>,
    /// The step the row's "Optimized" column shows (`optimized=`); default:
    /// the comparison's best candidate.
    pub optimized: Option<String>,
    /// The gain is per GPU (`per-gpu=#true`): configurations on different
    /// GPU counts, the best candidate the one with most throughput per GPU.
    pub per_gpu: bool,
}

/// What a summary row's number is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credit {
    /// The best candidate's gain over the comparison's baseline.
    Comparison,
    /// The conclusion's gain (optimized over baseline) on the comparison's workload.
    Conclusion,
}

#[derive(Debug, Clone)]
pub struct Comparison {
    pub title: String,
    pub baseline: String,
    pub candidates: Vec<String>,
    pub workload: String,
    /// What the page printed in this section.
    pub printed: PrintedSection,
}

/// What a page printed in a comparison's section (`result`, `summary`, `delta`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PrintedSection {
    /// The older pages' "Result:" line.
    pub result: Option<String>,
    /// The newer pages' "Summary:" sentence.
    pub summary: Option<String>,
    /// The steps the sentence names, in its order (`first=` and `second=`):
    /// its numbers are theirs, whatever their rank.
    pub summary_steps: Option<(String, String)>,
    /// The section's own delta (`+26.8%/GPU`).
    pub delta: Option<Quantity>,
}

#[derive(Debug, Clone)]
pub struct Conclusion {
    pub baseline: String,
    pub optimized: String,
    /// What the page printed in its conclusion.
    pub printed: PrintedConclusion,
}

/// A page's conclusion as printed (`command`, `table`, `case`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PrintedConclusion {
    /// The recommended serving command, one argument per word.
    pub command: Vec<String>,
    /// The table's column titles as printed.
    pub header: Vec<String>,
    pub cases: Vec<PrintedCase>,
}

/// One row of a printed conclusion table.
#[derive(Debug, Clone, PartialEq)]
pub struct PrintedCase {
    /// Empty for a row no workload of the experiment is (`unbound`).
    pub workload: String,
    /// A row bound to no workload (`case unbound="<label>" reason="<why>"`):
    /// the page's label and why; reprinted as printed, each number marked.
    pub unbound: Option<(String, String)>,
    pub baseline: PrintedCell,
    pub optimized: PrintedCell,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_engine_starts_within_its_declared_timeout_else_its_default() {
        let decl = |kind, secs: Option<u64>| EngineDecl {
            kind,
            version: "1".into(),
            image: None,
            startup_timeout: secs.map(Duration::from_secs),
        };
        assert_eq!(
            decl(EngineKind::Vllm, None).startup_timeout().as_secs(),
            1200
        );
        assert_eq!(
            decl(EngineKind::Trtllm, None).startup_timeout().as_secs(),
            2400
        );
        assert_eq!(
            decl(EngineKind::Sglang, Some(90))
                .startup_timeout()
                .as_secs(),
            90
        );
    }
}
