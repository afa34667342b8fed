//! Binding the page's printed numbers to the configurations that printed
//! them: every decision of the writer. Workloads and the study's facts
//! (`study`), one step per measured configuration, sweeps where the page
//! sweeps one flag, and each block as an expectation (`configurations`);
//! the conclusion's cases (`conclusion`); a `compare` per section and its
//! "Summary:" sentence (`compares`); the page's summary rows (`summary`),
//! all weighed by the blocks' own numbers (`blocks`). Where the page is
//! ambiguous the most faithful reading is taken and a `TODO:` quotes it.

mod blocks;
mod compares;
mod conclusion;
mod configurations;
mod hardware;
mod study;
mod summary;
pub(super) mod workloads;

use std::collections::BTreeMap;

use crate::metrics::MetricSet;
use crate::page::model::Page;
use workloads::{Workload, slug};

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Draft {
    pub name: String,
    pub header: Vec<String>,
    pub title: String,
    pub hardware_comments: Vec<String>,
    pub gpu_type: String,
    pub gpus: u32,
    pub model: String,
    pub model_comments: Vec<String>,
    pub latency: bool,
    pub engines: Vec<(String, String)>,
    pub engine_comments: Vec<String>,
    pub harness: String,
    pub harness_comments: Vec<String>,
    pub workloads: Vec<Workload>,
    pub steps: Vec<Step>,
    pub groups: Vec<Group>,
    pub compares: Vec<Compare>,
    pub conclusion: Option<Conclusion>,
    pub report: Option<Report>,
    pub blocks: usize,
    pub failures: usize,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Group {
    pub title: String,
    pub line: usize,
    pub steps: Vec<usize>,
    pub notes: Vec<String>,
    /// The section's sentences as printed ("Result: …", "Summary: …").
    pub printed: Vec<String>,
    /// Each configuration's label as printed (its heading, `#### vLLM`) and
    /// the step that runs it: what a "Summary:" sentence names.
    pub labels: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Step {
    pub name: String,
    pub engine: String,
    pub model: Option<String>,
    pub gpus: u32,
    pub replicas: u32,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub vary: Option<(String, Vec<String>)>,
    pub workloads: Vec<String>,
    pub expects: Vec<Expect>,
    pub comments: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Expect {
    pub workload: String,
    pub at: Option<String>,
    pub comments: Vec<String>,
    pub kind: ExpectKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ExpectKind {
    /// (metric, number as printed), in the block's order of names.
    Metrics(Vec<(String, String)>),
    Failure(String),
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Compare {
    pub title: String,
    pub comments: Vec<String>,
    pub baseline: String,
    pub workload: String,
    pub candidates: Vec<String>,
    /// The section's printed "Result:" line and "Summary:" sentence.
    pub result: Option<String>,
    pub summary: Option<String>,
    /// The steps the sentence names, in its order.
    pub summary_steps: Option<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Conclusion {
    pub comments: Vec<String>,
    pub baseline: String,
    pub optimized: String,
    /// The recommended command, one word a string, as printed.
    pub command: Vec<String>,
    /// The table's header and each case, as printed.
    pub table: Vec<String>,
    pub cases: Vec<Case>,
}

/// A row of the conclusion table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Case {
    /// The workload it measures; empty where none of the page's is.
    pub workload: String,
    /// Where no workload is: the row's label as printed and why.
    pub unbound: Option<(String, String)>,
    pub baseline: Vec<String>,
    pub optimized: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Report {
    pub comments: Vec<String>,
    pub delta_decimals: usize,
    /// The summary table's header and rules, as printed.
    pub table: Vec<String>,
    pub min_success: bool,
    pub skip_lower_than_previous: bool,
    pub summary: Vec<SummaryRow>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct SummaryRow {
    pub title: String,
    /// For a row the page prints "-" although its comparison gains a
    /// little: the gain, rounded up to a tenth (within run-to-run noise).
    pub threshold: Option<String>,
    /// Credits the conclusion's gain (the row prints the conclusion's delta).
    pub credits_conclusion: bool,
    /// Its gain is per GPU (its configurations run on different GPU counts).
    pub per_gpu: bool,
    /// The step its Optimized column shows, where that is the baseline
    /// itself (the latency page's engine row: the engine chosen).
    pub optimized: Option<String>,
    /// Each column but the title's: its lines as printed.
    pub cells: Vec<Vec<String>>,
}

/// `--flag value` pairs (a flag without a value has none).
pub(super) type Flags = Vec<(String, Option<String>)>;

/// A step's identity: what makes two of the page's configurations the same run.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Identity {
    engine: String,
    model: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    vary: Option<String>,
}

/// A sweep point's block: the sweep's name, the value and the numbers.
pub(super) struct SweepPointBlock {
    sweep: String,
    at: String,
    metrics: Vec<(String, String)>,
}

pub(super) struct Builder<'p> {
    page: &'p Page,
    draft: Draft,
    ids: BTreeMap<Identity, usize>,
    baseline_step: Option<usize>,
    optimized_step: Option<usize>,
    guidellm: bool,
    ascend: bool,
}

pub fn draft(page: &Page) -> Draft {
    let mut b = Builder {
        page,
        draft: Draft::default(),
        ids: BTreeMap::new(),
        baseline_step: None,
        optimized_step: None,
        guidellm: !page.profiles.is_empty(),
        ascend: false,
    };
    b.setup();
    b.configurations();
    b.conclusion();
    b.compares_and_report();
    b.hardware_count();
    let mut draft = b.draft;
    draft
        .groups
        .retain(|g| !g.steps.is_empty() || !g.notes.is_empty());
    for g in &mut draft.groups {
        g.steps.sort_unstable();
        g.steps.dedup();
    }
    draft
}

impl Builder<'_> {
    /// Whose definitions the page's blocks follow: guidellm's where the
    /// page runs benchmark profiles, else `vllm bench serve`'s.
    fn metric_set(&self) -> MetricSet {
        if self.guidellm {
            MetricSet::Guidellm
        } else {
            MetricSet::Vllm
        }
    }
}

/// The step's instances: its name, or a sweep's `<name>-<value>`s.
pub(super) fn instances(step: &Step) -> Vec<String> {
    match &step.vary {
        Some((_, values)) => values
            .iter()
            .map(|v| format!("{}-{}", step.name, slug(v)))
            .collect(),
        None => vec![step.name.clone()],
    }
}
