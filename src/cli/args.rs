//! The command line (clap types stay in `cli`).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use super::examples;
use crate::exec::slurm::options::{BadOption, Checked};
use crate::ops::Selection;
use crate::spec::{RequestRate, bounds};

/// Declared, reproducible, cached LLM-serving performance studies.
///
/// An experiment (a KDL file under `experiments/`) declares the model, GPUs,
/// engines and versions, serving flags and benchmark workloads. perfpipe hashes
/// every run, skips what `store/` already holds, runs the rest, and writes the
/// report.
///
/// Exit codes: 0 done · 1 some runs failed (recorded, or transient on every
/// attempt and left for the next run), some pins could not
/// be resolved, some inputs could not be fetched, or a measurement's file could
/// not be written (its numbers are kept) · 2 usage, experiment or lockfile
/// error, an output file that cannot be written (checked before measuring), or
/// not enough disk space to fetch · 3 lockfile missing or
/// out of date under `--locked` · 4 `verify` found numbers outside the
/// tolerance or missing, `store verify` found damage, or `diff
/// --fail-on-regression` found a regression · 101 internal error · 130
/// interrupted · 141 standard output closed early (`| head`), ended quietly.
#[derive(Debug, Parser)]
#[command(name = "perfpipe", version, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run every missing run of an experiment, then print and write its report.
    ///
    /// Under `docker` and `local` it first fetches, as `perfpipe fetch` does,
    /// the pinned models and images its missing runs need, before any GPU is
    /// taken (not with `--offline`).
    #[command(after_long_help = examples::RUN)]
    Run(RunArgs),
    /// List every run with its key and status (cached, missing, failed); runs nothing.
    #[command(after_long_help = examples::PLAN)]
    Plan(PlanArgs),
    /// Render the report from the store (or the published numbers); runs nothing.
    #[command(after_long_help = examples::REPORT)]
    Report(ReportArgs),
    /// Compare every stored result with its published expectation; exit 4 when
    /// any is outside the tolerance or missing.
    #[command(after_long_help = examples::VERIFY)]
    Verify(VerifyArgs),
    /// Pin every input (image digests, model commits, dataset and tokenizer
    /// hashes, harness version) in `lockfiles/<experiment>.lock`, with every run's key.
    #[command(after_long_help = examples::LOCK)]
    Lock(LockArgs),
    /// Download the models and images the lockfile pins, before any GPU is taken.
    ///
    /// Each model's files at its pinned commit go into the Hugging Face cache
    /// (`HF_HUB_CACHE`, else `HF_HOME/hub`, else `~/.cache/huggingface/hub`),
    /// from `HF_ENDPOINT` (else huggingface.co) with `HF_TOKEN`; under `docker`,
    /// each engine's image is pulled by digest. What is missing is listed with
    /// its size and refused (exit 2) when the disk has less free space; every
    /// download is checked against the digest the Hub lists (exit 1 naming the
    /// file when it differs). Unpinned inputs are reported, never fetched by
    /// tag or branch.
    #[command(after_long_help = examples::FETCH)]
    Fetch(FetchArgs),
    /// Why each run is cached, failed or missing: for a missing run, the
    /// nearest stored run and every field that differs; for a cached one,
    /// where its numbers came from.
    #[command(after_long_help = examples::EXPLAIN)]
    Explain(ExplainArgs),
    /// What changed between two lockfiles (inputs, run keys) and what it did to
    /// every number both have in the store; exit 4 with `--fail-on-regression`.
    #[command(after_long_help = examples::DIFF)]
    Diff(DiffArgs),
    /// Execute one engine launch from its material alone, without the
    /// experiment file, and commit its runs to the store as `run` does.
    ///
    /// LAUNCH is a launch key, whose material `plan --write-launches` and `run` write to
    /// `<store>/drv/<launch key>.json` (or its first 12 or more hex digits,
    /// as `plan` lists launches and Slurm names jobs, `pp-` optional), or
    /// such a file. Material that does not hash to its name, or whose
    /// datasets and tokenizers are missing from `<store>/inputs/sha256/` or
    /// do not hash to their names, is refused before anything starts (exit 2).
    /// Models and images are this machine's, as `perfpipe fetch` brings them.
    #[command(after_long_help = examples::REALISE)]
    Realise(RealiseArgs),
    /// Import a published "Serving Benchmark Result" block as a run's published numbers.
    #[command(after_long_help = examples::IMPORT)]
    Import(ImportArgs),
    /// Write the experiment of a published study page: every configuration,
    /// every number of every result block as an expectation, the comparisons,
    /// the conclusion and the report layout.
    #[command(after_long_help = examples::INIT)]
    Init(InitArgs),
    /// Benchmark any OpenAI-compatible server, with `vllm bench serve`'s options and numbers.
    // The last of a repeated option wins, as in `vllm bench serve` (argparse).
    #[command(after_long_help = examples::BENCH, args_override_self = true)]
    Bench(Box<BenchArgs>),
    /// Check the store (`verify`), list a run's files (`path`) and remove what nothing reaches (`gc`).
    #[command(after_long_help = examples::STORE)]
    Store(StoreArgs),
    /// Share results between machines: keys (`keygen`), signed samples in a
    /// cache (`push`); `run` and `plan` substitute from trusted caches.
    #[command(after_long_help = examples::CACHE)]
    Cache(super::cache::CacheArgs),
    /// Print the completion script of a shell.
    ///
    /// Load it in the shell's startup file, or install it where the shell
    /// looks for completions.
    #[command(after_long_help = examples::COMPLETIONS)]
    Completions(CompletionsArgs),
    /// Write the man pages (`perfpipe.1` and one per subcommand) into DIR,
    /// or print `perfpipe.1`; generated from the same definitions as `--help`.
    #[command(after_long_help = examples::MAN)]
    Man(ManArgs),
    /// The simulated engine, as `--runtime sim` starts it; a server to try
    /// `bench` against without a GPU (docs/metrics.md): `PERFPIPE_SIM_GPU`
    /// names the GPU type, `PERFPIPE_SIM_LOAD_MS` the load time,
    /// `PERFPIPE_SIM_TIMING` a fixed schedule.
    #[command(hide = true)]
    SimEngine {
        /// The real engine's argv, e.g. `vllm serve MODEL --port 8000 -tp 8`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        argv: Vec<String>,
    },
}

#[derive(Debug, Args)]
pub struct RealiseArgs {
    /// A launch key (12 hex digits or more), or the launch material file
    /// (`<launch key>.json`).
    #[arg(value_name = "LAUNCH")]
    pub launch: String,
    #[command(flatten)]
    pub store: StoreArg,
    /// Start an engine the material runs with docker as a process of this
    /// machine: already in the engine's image (a Slurm job's step under
    /// Pyxis, `container = "pyxis"`). The runs keep their keys.
    #[arg(long, hide = true)]
    pub engine_here: bool,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell whose script to print.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Directory to write the pages into (made if missing); the written
    /// paths are printed [default: print `perfpipe.1` alone].
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct StoreArgs {
    #[command(subcommand)]
    pub command: StoreCommand,
}

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Re-hash every entry's key material, launch material and input against
    /// its name and parse every sample's result; exit 4 when anything is damaged.
    ///
    /// Damage (an `inputs.json` that does not hash to its entry's key, a
    /// `result.json` that is truncated or names another key) is never used:
    /// its runs read as missing, and `perfpipe run` redoes them, moving the
    /// damage to `store/quarantine/` for inspection. Damaged launch material
    /// (`drv/`) or inputs (`inputs/sha256/`) are refused by `realise`; `gc`
    /// removes them and `plan --write-launches` writes them again. Temp dirs of killed runs
    /// are listed, not counted as damage.
    ///
    /// The index of results (`index/`) is compared with the entries: stale
    /// records (a run killed while appending, entries changed outside
    /// perfpipe) are not damage, as readers read those entries from their
    /// files; a record that gives other samples than the files is.
    /// `--repair` rewrites the index from the entries.
    #[command(after_long_help = examples::STORE_VERIFY)]
    Verify(StoreVerifyArgs),
    /// Remove the entries no experiment and no lockfile reaches, the launch
    /// material and inputs no kept run needs, damage, quarantine, and temp
    /// dirs of killed runs; says what and why.
    ///
    /// The runs kept are those of every `experiments/*.kdl` under each runtime
    /// and every key of every perfpipe lockfile anywhere in the project tree
    /// (a copy such as `before.lock` too; `store/`, `target/`, `.git/` and
    /// hidden directories are not searched, and other programs' `.lock` files
    /// such as `Cargo.lock` are ignored), or of the files named, plus every
    /// entry committed in the last 7 days unless `--all`. An experiment or
    /// lockfile that cannot be read makes gc remove nothing (exit 2). Runs
    /// capped with `--max-prompts` have keys of their own that no experiment
    /// declares: gc removes them once they are 7 days old. An entry whose key
    /// a running perfpipe holds is left alone. Launch material (`drv/`) stays
    /// while one of its runs is kept, an input (`inputs/sha256/`) while kept
    /// material reads it, and either while written or used (by `plan`, `run`,
    /// `lock`) in the last 7 days unless `--all`: a queued Slurm job may be
    /// about to read it.
    #[command(after_long_help = examples::STORE_GC)]
    Gc(StoreGcArgs),
    /// Print where each run's files are: its entry, samples, results and logs.
    ///
    /// One file or directory per line, as tab-separated columns: step,
    /// workload, what it is (`entry`, `sample`, `result` or `log`), path. Runs
    /// with nothing stored print nothing and are named on standard error.
    #[command(after_long_help = examples::STORE_PATH)]
    Path(StorePathArgs),
}

#[derive(Debug, Args)]
pub struct StorePathArgs {
    #[command(flatten)]
    pub experiment: ExperimentArgs,
    /// Only this step's runs.
    pub step: Option<String>,
    /// Only this workload's run of the step.
    pub workload: Option<String>,
    #[command(flatten)]
    pub runtime: RuntimeOpt,
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub cap: CapArg,
}

impl StorePathArgs {
    pub fn selection(&self) -> Selection {
        Selection::selecting(&self.experiment, &self.store, &self.runtime, &self.cap)
    }
}

#[derive(Debug, Args)]
pub struct StoreVerifyArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// Rewrite the store's index of results (`index/`) from its entries
    /// before checking; nothing else is changed.
    #[arg(long)]
    pub repair: bool,
}

#[derive(Debug, Args)]
pub struct StoreGcArgs {
    /// Experiments (`.kdl`) and lockfiles (`.lock`) whose runs to keep
    /// [default: `experiments/*.kdl` and every perfpipe lockfile in the project].
    #[arg(value_name = "FILE")]
    pub roots: Vec<PathBuf>,
    /// Say what would be removed and why each entry stays or goes, and
    /// remove nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Also remove unreached entries committed, and launch material and
    /// inputs written or used, in the last 7 days.
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub store: StoreArg,
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

/// The experiment and its lockfile: what every experiment command reads.
#[derive(Debug, Args)]
pub struct ExperimentArgs {
    /// The experiment file.
    pub experiment: PathBuf,
    /// The lockfile [default: lockfiles/<experiment file name>.lock].
    #[arg(long)]
    pub lockfile: Option<PathBuf>,
}

/// Where results are kept.
#[derive(Debug, Args)]
pub struct StoreArg {
    /// The store directory [default: `perfpipe.toml`'s `store`, else `store`
    /// at the project root].
    #[arg(long = "store", value_name = "STORE", env = "PERFPIPE_STORE")]
    pub dir: Option<PathBuf>,
}

impl StoreArg {
    /// The store, once the project's settings have filled in the default.
    pub fn path(&self) -> &std::path::Path {
        self.dir.as_deref().unwrap_or(std::path::Path::new("store"))
    }
}

/// How engines start, which selects the runs (a run's key holds its runtime).
#[derive(Debug, Args)]
pub struct RuntimeOpt {
    /// How engines start; overrides the experiment's `runtime`, as
    /// `perfpipe.toml`'s `runtime` does below it.
    #[arg(long, value_enum, env = "PERFPIPE_RUNTIME")]
    pub runtime: Option<RuntimeArg>,
}

/// The smoke-test cap, which selects the capped runs.
#[derive(Debug, Args)]
pub struct CapArg {
    /// Cap every workload at N prompts, for a quick smoke test of a study.
    /// A capped workload is another workload: its runs have their own keys.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = prompt_count(1))]
    pub max_prompts: Option<u32>,
}

/// Which steps' runs a command works on.
#[derive(Debug, Args)]
pub struct StepsArg {
    /// Only the runs of this step (repeatable; `*` matches any characters,
    /// `?` one: `--step 'vllm-seqs*'` takes a sweep's steps).
    #[arg(long = "step", value_name = "NAME")]
    pub steps: Vec<String>,
}

/// What running means: how many samples, whether failures run again, how
/// engines are shared (for `run`, and for `plan`, which says what `run` does).
#[derive(Debug, Args)]
pub struct RunPolicy {
    /// Samples each run should have in the store.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub samples: u32,
    /// Run again the runs whose stored result is a failure (one a cache
    /// supplied too).
    #[arg(long)]
    pub retry_failed: bool,
    /// Start an engine for every run, instead of one per step whose runs share it.
    #[arg(long)]
    pub fresh_engine: bool,
}

/// What the experiment commands load ([`Selection`]), assembled from each
/// command's own options (a command without an option takes its default).
impl Selection {
    /// The declared runs of `experiment`, uncapped, one sample each, on the
    /// experiment's own runtime.
    pub fn of(experiment: &ExperimentArgs, store: &std::path::Path) -> Self {
        Self::declared(&experiment.experiment, experiment.lockfile.clone(), store)
    }

    /// The declared runs under `--runtime`.
    pub fn selecting_runtime(
        experiment: &ExperimentArgs,
        store: &StoreArg,
        runtime: &RuntimeOpt,
    ) -> Self {
        Self {
            runtime: super::runtime_of(runtime.runtime),
            ..Self::of(experiment, store.path())
        }
    }

    /// The runs a command selects with `--runtime` and `--max-prompts`.
    fn selecting(
        experiment: &ExperimentArgs,
        store: &StoreArg,
        runtime: &RuntimeOpt,
        cap: &CapArg,
    ) -> Self {
        Self {
            runtime: super::runtime_of(runtime.runtime),
            max_prompts: cap.max_prompts,
            ..Self::of(experiment, store.path())
        }
    }

    fn with_steps(self, steps: &StepsArg) -> Self {
        Self {
            steps: steps.steps.clone(),
            ..self
        }
    }

    fn with_policy(self, policy: &RunPolicy) -> Self {
        Self {
            samples: policy.samples,
            retry_failed: policy.retry_failed,
            fresh_engine: policy.fresh_engine,
            ..self
        }
    }
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub experiment: ExperimentArgs,
    #[command(flatten)]
    pub steps: StepsArg,
    #[command(flatten)]
    pub runtime: RuntimeOpt,
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub cap: CapArg,
    #[command(flatten)]
    pub policy: RunPolicy,
    /// Where to write the report [default: reports/<experiment>.md]; its
    /// charts and the HTML report (`.html`) go beside it.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Engine launches to run at once, each on GPUs of its own (waits while
    /// none are free) [default: 1]; under `--executor slurm`, how many of
    /// this perfpipe's Slurm jobs may be queued or running at once, the next
    /// submitted as one ends [default: no bound].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,
    /// Seconds any engine may take to become ready, overriding each engine's
    /// `startup-timeout=` and default (vLLM and SGLang 1200, TensorRT-LLM 2400);
    /// at most 604800 (a week).
    #[arg(long, value_name = "SECS", allow_negative_numbers = true, value_parser = timeout_secs())]
    pub startup_timeout: Option<u64>,
    /// Seconds without an event from the engine, to this request or any
    /// other, before a waiting request fails (a stream that stalls, a request
    /// never answered); at most 604800 (a week). The built-in harness only;
    /// not part of any key.
    #[arg(long, value_name = "SECS", default_value_t = crate::harness::DEFAULT_STALL_TIMEOUT_SECS,
          allow_negative_numbers = true, value_parser = timeout_secs())]
    pub stall_timeout: u64,
    /// Fail (exit 3) instead of writing the lockfile when it is missing or
    /// does not match the experiment, as in CI.
    #[arg(long)]
    pub locked: bool,
    /// No network: inputs new to the lockfile stay unpinned (datasets,
    /// tokenizer and harness are always pinned), and nothing is fetched
    /// (`perfpipe fetch` does it where the Hub and registries are reachable).
    #[arg(long, env = "PERFPIPE_OFFLINE", value_parser = clap::builder::FalseyValueParser::new())]
    pub offline: bool,
    #[command(flatten)]
    pub substitute: super::cache::SubstituteArgs,
    /// Where engine launches run: on this machine, or one Slurm job each
    /// running `perfpipe realise` on a node that sees the store (docs/slurm.md).
    #[arg(long, value_enum, default_value_t = ExecutorArg::Local)]
    pub executor: ExecutorArg,
    /// (Boxed: a `run`'s arguments stay near the size of another command's.)
    #[command(flatten)]
    pub slurm: Box<SlurmArgs>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExecutorArg {
    /// This machine.
    Local,
    /// One Slurm job per engine launch.
    Slurm,
}

/// How `--executor slurm` submits; each one set here wins over
/// `[executor.slurm]` of `perfpipe.toml`. None of it is in a key.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Slurm (--executor slurm)")]
pub struct SlurmArgs {
    /// `sbatch --partition`.
    #[arg(long, value_parser = slurm_value(Checked::Partition))]
    pub partition: Option<String>,
    /// `sbatch --account`.
    #[arg(long, value_parser = slurm_value(Checked::Account))]
    pub account: Option<String>,
    /// `sbatch --qos`.
    #[arg(long, value_parser = slurm_value(Checked::Qos))]
    pub qos: Option<String>,
    /// `sbatch --time` of each job (`90`, `1:30:00`, `2-00:00:00`).
    #[arg(long, value_name = "TIME", value_parser = slurm_value(Checked::TimeLimit))]
    pub time_limit: Option<String>,
    /// A further `sbatch` argument (repeat it), after `[executor.slurm]`'s.
    #[arg(long = "sbatch-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub sbatch_args: Vec<String>,
    /// How a job runs the engine [default: docker].
    #[arg(long, value_enum)]
    pub container: Option<ContainerArg>,
    /// Resubmissions of a launch whose job Slurm ended (node failure,
    /// preemption; never a time limit, which would end it again) [default: 2].
    #[arg(long, value_name = "N")]
    pub retries: Option<u32>,
    /// Seconds a Slurm controller that does not answer (a restart, a
    /// failover) is waited for, asked again with backoff, before `run`
    /// gives up and leaves its jobs queued for the next `run` to adopt
    /// [default: 300].
    #[arg(long, value_name = "SECS", env = "PERFPIPE_SLURM_PATIENCE")]
    pub slurm_patience: Option<u64>,
    /// Milliseconds between two `squeue` polls.
    #[arg(
        long,
        hide = true,
        env = "PERFPIPE_SLURM_POLL_MS",
        default_value_t = 5000
    )]
    pub slurm_poll_ms: u64,
    /// `[executor.slurm]` as the file says, for what has no flag (the
    /// hardware mapping, `exclusive` and the share of a node).
    #[arg(skip)]
    pub file: crate::exec::slurm::SlurmOptions,
}

/// A Slurm option's value, refused (naming the flag) unless Slurm takes it.
fn slurm_value(option: Checked) -> impl Fn(&str) -> Result<String, BadOption> + Clone {
    move |value| option.check(value).map(|()| value.to_owned())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ContainerArg {
    /// perfpipe on the node starts the engine as under `--runtime docker`.
    Docker,
    /// The job step runs in the engine's image through Pyxis/enroot.
    Pyxis,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    #[command(flatten)]
    pub experiment: ExperimentArgs,
    /// Only this step's runs.
    pub step: Option<String>,
    #[command(flatten)]
    pub steps: StepsArg,
    #[command(flatten)]
    pub runtime: RuntimeOpt,
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub cap: CapArg,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The lockfile before (e.g. a copy from before an engine upgrade).
    pub before: PathBuf,
    /// The lockfile after.
    pub after: PathBuf,
    #[command(flatten)]
    pub store: StoreArg,
    /// Whose run keys to compare [default: docker].
    #[arg(long, value_enum, env = "PERFPIPE_RUNTIME")]
    pub runtime: Option<RuntimeArg>,
    /// Metrics to compare (comma-separated names)
    /// [default: total_token_throughput,mean_ttft_ms,mean_tpot_ms].
    #[arg(long, value_delimiter = ',')]
    pub metrics: Option<Vec<String>>,
    /// Markdown for people, JSON for other tools.
    #[arg(long, value_enum, default_value_t = DiffFormat::Md)]
    pub format: DiffFormat,
    /// Exit 4 when a metric got worse by more than this many % (and more
    /// than run-to-run noise), as a CI gate. Without it, diff exits 0.
    #[arg(long, value_name = "PCT", value_parser = parse_percent)]
    pub fail_on_regression: Option<f64>,
    /// Where a side has one sample (no spread to judge by), a change of
    /// METRIC within PCT% is noise; repeatable [defaults: 20 for TTFT, 5 for
    /// throughputs and mean or median TPOT, ITL and E2EL, 10 otherwise].
    #[arg(long, value_name = "METRIC=PCT", value_parser = parse_noise_floor)]
    pub noise_floor: Vec<(String, f64)>,
    /// Compare the runs capped with `run --max-prompts N` (found through the
    /// experiment's file, in `experiments/` or here).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = prompt_count(1))]
    pub max_prompts: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiffFormat {
    Md,
    Json,
}

#[derive(Debug, Args)]
pub struct LockArgs {
    #[command(flatten)]
    pub experiment: ExperimentArgs,
    /// Resolve without the network: images and model revisions not pinned yet
    /// stay unpinned, and are listed.
    #[arg(long, env = "PERFPIPE_OFFLINE", value_parser = clap::builder::FalseyValueParser::new())]
    pub offline: bool,
    /// Resolve these pinned inputs again (e.g. `engine.vllm`), or every one
    /// when none is named. Without it, `lock` only adds missing pins.
    #[arg(long, num_args = 0.., value_name = "INPUT")]
    pub update: Option<Vec<String>>,
}

#[derive(Debug, Args)]
pub struct FetchArgs {
    /// The experiment file; its lockfile must match it (`perfpipe lock` writes it).
    pub experiment: PathBuf,
    /// Pull engine images only under `docker` (models are fetched under any
    /// runtime); overrides the experiment's `runtime`.
    #[arg(long, value_enum, env = "PERFPIPE_RUNTIME")]
    pub runtime: Option<RuntimeArg>,
    /// The lockfile [default: lockfiles/<experiment file name>.lock].
    #[arg(long)]
    pub lockfile: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub experiment: ExperimentArgs,
    #[command(flatten)]
    pub steps: StepsArg,
    #[command(flatten)]
    pub runtime: RuntimeOpt,
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub cap: CapArg,
    #[command(flatten)]
    pub policy: RunPolicy,
    #[command(flatten)]
    pub substitute: super::cache::SubstituteArgs,
    /// Ask no cache over the network (directory caches are still asked).
    #[arg(long, env = "PERFPIPE_OFFLINE", value_parser = clap::builder::FalseyValueParser::new())]
    pub offline: bool,
    /// Write the material of each launch listed, and the inputs it reads,
    /// to the store, for `perfpipe realise` (without it `plan` writes nothing).
    #[arg(long)]
    pub write_launches: bool,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub experiment: ExperimentArgs,
    #[command(flatten)]
    pub steps: StepsArg,
    #[command(flatten)]
    pub runtime: RuntimeOpt,
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub cap: CapArg,
    /// Render from the experiment's published expectations instead of the store.
    #[arg(long)]
    pub published: bool,
    /// Markdown for people, HTML (one self-contained page, charts inline) for
    /// a browser, JSON or CSV (one number per line) for other tools.
    #[arg(long, value_enum, default_value_t = ReportFormat::Md)]
    pub format: ReportFormat,
    /// Also write the report to this file; markdown gets its charts beside it
    /// (`<name>.png` and `<name>.svg`, `<name>.<chart>.png` and `.svg`),
    /// linked from the report.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Md,
    Html,
    Json,
    Csv,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub experiment: ExperimentArgs,
    #[command(flatten)]
    pub runtime: RuntimeOpt,
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub cap: CapArg,
    /// How far a stored number may lie from its published value, in % (`5` or
    /// `5%`) [default: the experiment's `report tolerance=`, else 5].
    #[arg(long, value_parser = parse_percent)]
    pub tolerance: Option<f64>,
    /// Only these metrics count (comma-separated names, `failure` for published
    /// errors) [default: every metric the experiment expects].
    #[arg(long, value_delimiter = ',')]
    pub metrics: Option<Vec<String>>,
}

/// Seconds of a timeout: 1 to a week.
/// Whole seconds from 1 to a week: any number outside says the bound
/// (`1e9`, `-5` and `2.5` too, not clap's "invalid digit").
fn timeout_secs() -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync + 'static {
    |text| {
        let most = bounds::MAX_TIMEOUT_SECS;
        let refused =
            || format!("`{text}` is not a whole number of seconds in 1..={most} (a week)");
        let number = text.trim().parse::<f64>().map_err(|_| refused())?;
        if number.fract() != 0.0 || !(1.0..=most as f64).contains(&number) {
            return Err(refused());
        }
        Ok(number as u64)
    }
}

/// A count of prompts or warm-ups: `min` to [`bounds::MAX_PROMPTS`].
fn prompt_count(min: u32) -> impl Fn(&str) -> Result<u32, String> + Clone + Send + Sync + 'static {
    whole_number(min, bounds::MAX_PROMPTS)
}

/// A whole number in `min..=max`, refused with that bound whatever form it
/// is written in: clap's integer parser said "invalid digit found in string"
/// of `1e9` or `2.5`, which names no bound.
fn whole_number(
    min: u32,
    max: u32,
) -> impl Fn(&str) -> Result<u32, String> + Clone + Send + Sync + 'static {
    move |text| {
        let refused = || format!("`{text}` is not a whole number in {min}..={max}");
        let number = text.trim().parse::<f64>().map_err(|_| refused())?;
        if number.fract() != 0.0 || !(f64::from(min)..=f64::from(max)).contains(&number) {
            return Err(refused());
        }
        Ok(number as u32)
    }
}

/// A number checked by one of `spec::bounds`' rules, as a clap parser.
fn bounded<T: 'static>(
    rule: fn(f64) -> Result<T, bounds::BoundError>,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static {
    move |text| {
        let number = text
            .trim()
            .parse::<f64>()
            .map_err(|_| format!("`{text}` is not a number"))?;
        rule(number).map_err(|e| e.to_string())
    }
}

/// An `http` or `https` URL with a host, without its trailing `/`.
pub(super) fn parse_base_url(text: &str) -> Result<String, String> {
    let url = reqwest::Url::parse(text).map_err(|e| {
        format!("`{text}` is not a URL ({e}); write it as `http://HOST:PORT`, e.g. `http://127.0.0.1:8000`")
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "`{text}` is not an `http` or `https` URL; write it as `http://HOST:PORT`"
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!(
            "`{text}` names no host; write it as `http://HOST:PORT`"
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(format!(
            "`{text}` has a query or fragment; the base URL is `http://HOST:PORT[/PATH]`"
        ));
    }
    Ok(text.trim_end_matches('/').to_owned())
}

fn parse_noise_floor(text: &str) -> Result<(String, f64), String> {
    match text.split_once('=') {
        Some((metric, pct)) if !metric.trim().is_empty() => {
            Ok((metric.trim().to_owned(), parse_percent(pct)?))
        }
        _ => Err(format!(
            "`{text}` is not METRIC=PCT, such as `mean_ttft_ms=20`"
        )),
    }
}

fn parse_percent(text: &str) -> Result<f64, String> {
    let number = text.trim().trim_end_matches('%');
    match number.parse::<f64>() {
        Ok(v) if v >= 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!("`{text}` is not a percentage such as `5` or `5%`")),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// `/v1/completions` requests.
    Openai,
    /// `/v1/completions` requests, as `openai`; the result file names its
    /// backend `vllm`, as vLLM's does.
    Vllm,
    /// `/v1/chat/completions` requests.
    OpenaiChat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DatasetArg {
    /// Random token ids, `--random-input-len` long.
    Random,
    /// Conversations of a ShareGPT JSON file (`--dataset-path`).
    Sharegpt,
    /// `{"prompt": ...}` lines of a JSONL file (`--dataset-path`), with
    /// `--custom-skip-chat-template`.
    Custom,
    // vLLM's other datasets, named so that `bench` can say why it refuses
    // them (`bench_options::unsupported_dataset`).
    #[value(hide = true, name = "prefix_repetition")]
    PrefixRepetition,
    #[value(hide = true)]
    Hf,
    #[value(hide = true)]
    Sonnet,
    #[value(hide = true)]
    Burstgpt,
    #[value(hide = true, name = "random-mm")]
    RandomMm,
    #[value(hide = true, name = "spec_bench")]
    SpecBench,
}

/// Options named as `vllm bench serve` names them; defaults are v0.11's,
/// but for what the request bodies hold (0.32's: no `--temperature`,
/// `ignore_eos` for random prompts).
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Server URL (e.g. `http://127.0.0.1:8000`); overrides `--host` and `--port`.
    #[arg(long, value_parser = parse_base_url)]
    pub base_url: Option<String>,
    /// Server host, when `--base-url` is not given.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Server port, when `--base-url` is not given.
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// API path [default: `/v1/completions`, or `/v1/chat/completions` with `--backend openai-chat`].
    #[arg(long)]
    pub endpoint: Option<String>,
    /// The OpenAI API the requests use.
    #[arg(long, value_enum, default_value = "openai")]
    pub backend: BackendArg,
    /// Model name to request [default: the first one `/v1/models` lists, by
    /// its `id`; its `root` names the tokenizer and the result's `model_id`].
    #[arg(long)]
    pub model: Option<String>,
    /// Tokenizer that builds and counts prompts: a `tokenizer.json`, a model
    /// directory, or a model id found in the Hugging Face cache [default: the
    /// model]. perfpipe never downloads; without one it counts words (`whitespace`).
    #[arg(long)]
    pub tokenizer: Option<String>,
    /// Where the prompts come from.
    #[arg(long, value_enum, default_value = "random")]
    pub dataset_name: DatasetArg,
    /// ShareGPT JSON file (with `--dataset-name sharegpt`).
    #[arg(long)]
    pub dataset_path: Option<std::path::PathBuf>,
    /// Requests to measure, 1 to 1000000.
    #[arg(long, default_value_t = 1000, value_parser = prompt_count(1))]
    pub num_prompts: u32,
    /// Prompt tokens of each random request (at least 1; at most 2^30 in
    /// all, with `--num-prompts`).
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..))]
    pub random_input_len: u32,
    /// Output tokens each random request asks for (at least 1).
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..))]
    pub random_output_len: u32,
    /// Lengths are drawn from [L(1-r), L(1+r)]; 0 <= r < 1, as vLLM requires.
    #[arg(long, default_value_t = 0.0, value_parser = bounded(bounds::range_ratio))]
    pub random_range_ratio: f64,
    /// Fixed output length for ShareGPT requests instead of the reply's.
    #[arg(long)]
    pub sharegpt_output_len: Option<u32>,
    /// Seed of the prompts drawn and of the arrival times.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Requests per second (at least 1e-6), or `inf` to send all at once.
    #[arg(long, default_value = "inf", value_parser = bounded(bounds::request_rate))]
    pub request_rate: RequestRate,
    /// Gamma shape of the gaps between requests (1 = Poisson; < 1 burstier; > 0).
    #[arg(long, default_value_t = 1.0, value_parser = bounded(bounds::burstiness))]
    pub burstiness: f64,
    /// Requests in flight at most (at least 1).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_concurrency: Option<u32>,
    /// Times the first prompt is sent before the benchmark, not measured, as
    /// vLLM warms up (at most 1000000).
    #[arg(long, default_value_t = 0, value_parser = prompt_count(0))]
    pub num_warmups: u32,
    /// Ask the server to ignore end-of-sequence, so each request generates
    /// all the tokens it asks for.
    #[arg(long)]
    pub ignore_eos: bool,
    /// Sampling temperature (finite, at least 0). Without it none is sent
    /// and the server's default applies, as with `vllm bench serve` 0.32;
    /// `--temperature 0` is greedy, as vLLM v0.11's client sent.
    #[arg(long, value_parser = bounded(bounds::temperature))]
    pub temperature: Option<f64>,
    /// Comma-separated: any of `ttft,tpot,itl,e2el`.
    #[arg(long, default_value = "ttft,tpot,itl")]
    pub percentile_metrics: String,
    /// Comma-separated percentiles, e.g. `50,90,99`.
    #[arg(long, default_value = "99")]
    pub metric_percentiles: String,
    /// SLOs as `KEY:MILLISECONDS` (`ttft`, `tpot`, `e2el`); a request is good when it meets all.
    // `Set`: a repeated option keeps its last values, as argparse's `nargs`.
    #[arg(long, num_args = 1.., action = clap::ArgAction::Set)]
    pub goodput: Vec<String>,
    /// Write the result JSON (vLLM's keys).
    #[arg(long)]
    pub save_result: bool,
    /// Also write per-request lists (input_lens, ttfts, itls, errors, ...).
    #[arg(long)]
    pub save_detailed: bool,
    /// Directory of the result file [default: the current directory].
    #[arg(long)]
    pub result_dir: Option<std::path::PathBuf>,
    /// Name of the result file [default:
    /// `{label or backend}-{rate}qps[-concurrency{N}]-{model}-{date}.json`, as vLLM names it].
    #[arg(long)]
    pub result_filename: Option<String>,
    /// Label that prefixes the default result file name.
    #[arg(long)]
    pub label: Option<String>,
    /// Append each request's timings to this JSONL file as it completes.
    #[arg(long)]
    pub journal: Option<std::path::PathBuf>,
    /// Seconds without an event from the server, to this request or any
    /// other, before a waiting request fails; at most 604800 (a week).
    #[arg(long, value_name = "SECS", default_value_t = crate::harness::DEFAULT_STALL_TIMEOUT_SECS,
          allow_negative_numbers = true, value_parser = timeout_secs())]
    pub stall_timeout: u64,
    #[command(flatten)]
    pub vllm: super::bench_options::VllmBenchOptions,
}

/// `init --from-page`: a published page becomes an experiment file.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The page (markdown, as the performance lab publishes it).
    #[arg(long, value_name = "PAGE")]
    pub from_page: PathBuf,
    /// Where to write the experiment [default: experiments/<model>-<hardware>[-latency].kdl].
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
    /// Replace the file if it exists.
    #[arg(long)]
    pub force: bool,
}

/// `import`'s own options: published numbers are filed under the runs the
/// experiment declares, on its own runtime (they were measured on real
/// hardware), so options that shape a run (`--runtime`, `--samples`,
/// `--max-prompts`, `--retry-failed`, `--fresh-engine`) mean nothing here.
#[derive(Debug, Args)]
pub struct ImportArgs {
    #[command(flatten)]
    pub experiment: ExperimentArgs,
    #[command(flatten)]
    pub store: StoreArg,
    /// The step the block measured.
    #[arg(long)]
    pub step: String,
    /// The workload the block measured.
    #[arg(long)]
    pub workload: String,
    /// File holding the block [default: standard input].
    #[arg(long)]
    pub from: Option<PathBuf>,
    /// Where the numbers were published (a URL or a citation).
    #[arg(long)]
    pub source: Option<String>,
}

impl ImportArgs {
    /// The experiment as every command loads it: the declared runs, uncapped,
    /// on the experiment's own runtime.
    pub fn selection(&self) -> Selection {
        Selection::of(&self.experiment, self.store.path())
    }
}

impl RunArgs {
    pub fn selection(&self) -> Selection {
        Selection::selecting(&self.experiment, &self.store, &self.runtime, &self.cap)
            .with_policy(&self.policy)
            .with_steps(&self.steps)
    }
}

impl PlanArgs {
    pub fn selection(&self) -> Selection {
        Selection::selecting(&self.experiment, &self.store, &self.runtime, &self.cap)
            .with_policy(&self.policy)
            .with_steps(&self.steps)
    }
}

impl ReportArgs {
    pub fn selection(&self) -> Selection {
        Selection::selecting(&self.experiment, &self.store, &self.runtime, &self.cap)
            .with_steps(&self.steps)
    }
}

impl ExplainArgs {
    pub fn selection(&self) -> Selection {
        Selection::selecting(&self.experiment, &self.store, &self.runtime, &self.cap)
            .with_steps(&self.steps)
    }
}

impl VerifyArgs {
    pub fn selection(&self) -> Selection {
        Selection::selecting(&self.experiment, &self.store, &self.runtime, &self.cap)
    }
}

impl LockArgs {
    /// Keys are locked under every runtime, uncapped; the store is not read.
    pub fn selection(&self) -> Selection {
        Selection::of(&self.experiment, std::path::Path::new("store"))
    }
}
