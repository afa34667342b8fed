//! The command line (clap types stay in `cli`).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Declared, reproducible, cached LLM-serving performance studies.
///
/// An experiment (a KDL file under `experiments/`) declares the model, GPUs,
/// engines and versions, serving flags and benchmark workloads. perfpipe hashes
/// every run, skips what `store/` already holds, runs the rest, and writes the
/// report.
///
/// Exit codes: 0 done · 1 some runs failed (recorded) · 2 usage or experiment
/// error · 101 internal error · 130 interrupted.
#[derive(Debug, Parser)]
#[command(name = "perfpipe", version, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run every missing run of an experiment, then print and write its report.
    Run(RunArgs),
    /// List every run with its key and status (cached, missing, failed); runs nothing.
    Plan(PlanArgs),
    /// Render the report from the store (or the published numbers); runs nothing.
    Report(ReportArgs),
    /// The simulated engine, as `--runtime sim` starts it (internal).
    #[command(hide = true)]
    SimEngine {
        /// The real engine's argv, e.g. `vllm serve MODEL --port 8000 -tp 8`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        argv: Vec<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RuntimeArg {
    /// The engine's official container image for the declared version.
    Docker,
    /// The engine binary on PATH.
    Local,
    /// perfpipe's simulated engine: real processes and HTTP, no GPU.
    Sim,
}

#[derive(Debug, Args)]
pub struct Common {
    /// The experiment file.
    pub experiment: PathBuf,
    /// How engines start; overrides the experiment's `runtime`.
    #[arg(long, value_enum, env = "PERFPIPE_RUNTIME")]
    pub runtime: Option<RuntimeArg>,
    /// The store directory.
    #[arg(long, default_value = "store", env = "PERFPIPE_STORE")]
    pub store: PathBuf,
    /// Samples each run should have in the store.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub samples: u32,
    /// Run again the runs whose stored result is a failure.
    #[arg(long)]
    pub retry_failed: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub common: Common,
    /// Where to write the report [default: reports/<experiment>.md].
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Seconds an engine may take to answer `/health`.
    #[arg(long, default_value_t = 1200)]
    pub startup_timeout: u64,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub common: Common,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub common: Common,
    /// Render from the experiment's published expectations instead of the store.
    #[arg(long)]
    pub published: bool,
    /// Also write the report to this file.
    #[arg(long)]
    pub out: Option<PathBuf>,
}
