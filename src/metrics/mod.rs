//! Serving metrics under `vllm bench serve`'s names and definitions (or
//! guidellm's, kept apart), and where a number came from. (pure)

mod block_parse;
mod compute;
mod gaps;
mod guidellm;
mod measurement;
mod model;
mod provenance;
mod select;
mod serving_block;
pub mod slo;
pub mod telemetry;

pub use block_parse::{BlockError, ParsedBlock, parse_block};
pub use compute::{
    Latency, MetricOptions, OutputTokensSource, RequestRecord, Sorted, compute, percentile,
    percentile_key,
};
pub use gaps::Gaps;
pub use guidellm::{GUIDELLM_METRIC_NAMES, GuidellmMetrics, read_report as read_guidellm_report};
pub use measurement::{Measurement, MetricSet};
pub use model::{METRIC_NAMES, ServingMetrics};
pub use provenance::{Provenance, SLURM_ATTEMPT_ENV, SlurmJob};
pub use serving_block::{BlockOptions, render_serving_block};
