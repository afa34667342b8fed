//! The errors of the commands' workflows as the user sees them: message,
//! cause, hint (miette renders them in `cli`), and the kind of failure
//! that `cli` makes an exit code.

use miette::Diagnostic;

use crate::error_kind::ErrorKind;
use crate::exec::ExecError;
use crate::spec::SpecErrors;

/// Every failure of a command's workflow, with its [`ErrorKind`].
#[derive(Debug, thiserror::Error, Diagnostic)]
pub enum Error {
    #[error(transparent)]
    #[diagnostic(transparent)]
    Project(crate::project::Error),
    #[error("cannot read the experiment `{path}`")]
    #[diagnostic(help("{hint}"))]
    ReadExperiment {
        path: String,
        #[source]
        source: std::io::Error,
        /// Where the experiments are (see [`experiment_hint`]).
        hint: String,
    },
    #[error(transparent)]
    #[diagnostic(transparent)]
    Spec(Box<SpecErrors>),
    #[error("an input of the experiment is missing")]
    #[diagnostic(help(
        "the experiment's paths are relative to the project root (the directory holding `perfpipe.toml`, else `experiments/`), wherever perfpipe is typed; a `sharegpt` dataset may name a `sample=` file to use when the real one is absent"
    ))]
    Inputs(#[source] crate::inputs::Error),
    #[error("an input of the experiment is not a file")]
    #[diagnostic(help("`path=` (and `sample=`) name the dataset's JSON file itself"))]
    NotAFile(#[source] crate::inputs::Error),
    #[error("a dataset of the experiment cannot be used")]
    #[diagnostic(help(
        "a `sharegpt` dataset is a JSON list of conversations, each `{{\"conversations\": [{{\"from\": \"human\", \"value\": \"...\"}}, {{\"from\": \"gpt\", \"value\": \"...\"}}]}}`"
    ))]
    Dataset(#[source] crate::inputs::Error),
    #[error("this machine cannot run the experiment as declared")]
    #[diagnostic(help(
        "run it where `nvidia-smi` shows the declared GPUs, declare the GPUs this machine has, or use `--runtime sim`"
    ))]
    Machine(#[source] ExecError),
    #[error("this machine cannot run the experiment as declared")]
    #[diagnostic(help(
        "run it on the declared CPU, or declare this machine's: the message above writes its `hardware \"cpu\"` line"
    ))]
    CpuMachine(#[source] ExecError),
    #[error("the engine is not the one the experiment declares")]
    #[diagnostic(help(
        "install the declared version, change `version=` in the experiment, or use `--runtime docker`"
    ))]
    EngineSetup(#[source] ExecError),
    #[error(transparent)]
    #[diagnostic(help(
        "install the declared version of the client on this machine (`pip install guidellm==<version>`, or vLLM for `vllm bench serve`), change `version=` in the experiment, or measure with `harness builtin` (vLLM's definitions)"
    ))]
    HarnessSetup(ExecError),
    #[error("interrupted: engines were stopped, runs already finished are kept in the store")]
    Interrupted,
    #[error("execution failed")]
    Exec(#[source] ExecError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Store(crate::store::Error),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Cache(crate::cache::Error),
    #[error("cannot tell which runs `{path}` reaches, so `store gc` removes nothing")]
    #[diagnostic(help(
        "fix the file or move it away, or name the experiments and lockfiles whose runs to keep: `perfpipe store gc FILE...`"
    ))]
    GcRoot {
        path: String,
        /// Rendered in full, with the spans of an experiment's errors.
        #[diagnostic_source]
        cause: Box<dyn Diagnostic + Send + Sync>,
    },
    #[error(transparent)]
    #[diagnostic(transparent)]
    Page(Box<PageReport>),
    #[error("cannot write `{path}`")]
    #[diagnostic(help("name a file in a directory this user can write"))]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A file that could not be written after its numbers were measured.
    #[error("measured, but cannot write `{path}`")]
    #[diagnostic(help("{kept}"))]
    NotWritten {
        path: String,
        /// Where the measurement is kept instead.
        kept: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{message}")]
    #[diagnostic(help("{hint}"))]
    Usage { message: String, hint: String },
    #[error(transparent)]
    #[diagnostic(help(
        "lockfiles are written by `perfpipe lock`; delete the file and run `perfpipe lock <experiment>` to write it again"
    ))]
    Lockfile(crate::lock::Error),
    #[error("cannot read the lockfile `{path}`")]
    ReadLockfile {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{message}")]
    #[diagnostic(help("{hint}"))]
    LockStale { message: String, hint: String },
    #[error("{message}")]
    #[diagnostic(help("is the server running? `--base-url`, or `--host` and `--port`, name it"))]
    Server { message: String },
    #[error("{message}")]
    #[diagnostic(help(
        "free space in `{dir}`, or set HF_HOME (or HF_HUB_CACHE) to a directory on a disk with room; the docker runtime mounts HF_HOME into the engine's container"
    ))]
    NoSpace { message: String, dir: String },
    #[error("cannot fetch the pinned inputs")]
    #[diagnostic(help("set HF_HOME (or HF_HUB_CACHE) to where the Hugging Face cache should be"))]
    FetchSetup(#[source] crate::fetch::Error),
    #[error("cannot fetch {inputs}")]
    #[diagnostic(help("{hint}"))]
    FetchFailed { inputs: String, hint: String },
    #[error("{error}")]
    #[diagnostic(help("{hint}"))]
    HarnessEnv {
        error: crate::fetch::harness_env::Error,
        hint: String,
    },
    #[error("cannot start the async runtime")]
    Runtime {
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    #[diagnostic(help(
        "perfpipe keeps secrets (variables named `HF_TOKEN`, `*_TOKEN`, `TOKEN_*`, `*_API_KEY`, `*PASSWORD*`, `*SECRET*`) out of everything it writes; give a real secret, unset the variable, or keep the secret out of the experiment (key material is stored as written)"
    ))]
    Secret(crate::secrets::Error),
    #[error("cannot read the launch material `{path}`")]
    #[diagnostic(help(
        "`perfpipe plan` and `perfpipe run` write each launch's material to `<store>/drv/<launch key>.json`; `--store DIR` names the store"
    ))]
    ReadMaterial {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the launch material `{path}` does not hash to its name (its sha256 is {actual})")]
    #[diagnostic(help(
        "it was changed after perfpipe wrote it, so it is not the launch its name says; nothing ran. `perfpipe plan EXPERIMENT` writes the material again"
    ))]
    TamperedMaterial { path: String, actual: String },
    #[error("`{path}` is not launch material")]
    #[diagnostic(help("launch material is the JSON `perfpipe plan` and `perfpipe run` write"))]
    BadMaterial {
        path: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("the launch material cannot be realised")]
    #[diagnostic(help("write it again with this perfpipe: `perfpipe plan EXPERIMENT`"))]
    Material(#[source] crate::launch::RebuildError),
    #[error("the store has no {what} (sha256 {sha256}), which launch {launch} reads; nothing ran")]
    #[diagnostic(help(
        "the store keeps the inputs of a launch at `{path}`: `perfpipe plan` or `perfpipe run` of the experiment on a machine that has the file puts it there"
    ))]
    MissingInput {
        what: String,
        sha256: String,
        launch: String,
        path: String,
    },
    #[error(
        "the store's copy of the {what} that launch {launch} reads is corrupted: `{path}` hashes to {actual}, not to {sha256}; nothing ran"
    )]
    #[diagnostic(help(
        "a launch reads only the input its material names by sha256: `perfpipe store gc` removes the corrupted copy, and `perfpipe plan` or `perfpipe run` of the experiment on a machine that has the file puts it back"
    ))]
    CorruptInput {
        what: String,
        sha256: String,
        actual: String,
        launch: String,
        path: String,
    },
}

impl From<crate::fetch::harness_env::Error> for Error {
    fn from(error: crate::fetch::harness_env::Error) -> Self {
        Self::HarnessEnv {
            hint: error.hint(),
            error,
        }
    }
}

impl From<ExecError> for Error {
    fn from(e: ExecError) -> Self {
        match e {
            ExecError::Interrupted => Self::Interrupted,
            e @ ExecError::Gpus(_) => Self::Machine(e),
            e @ ExecError::Cpu(_) => Self::CpuMachine(e),
            ExecError::Unstartable { ref why, .. } => Self::Usage {
                hint: why.hint.to_owned(),
                message: e.to_string(),
            },
            ExecError::Store(e) => Self::Store(e),
            ExecError::Slurm(ref slurm) if slurm.hint().is_some() => Self::Usage {
                hint: slurm.hint().unwrap_or_default(),
                message: e.to_string(),
            },
            e @ ExecError::Harness(_) => Self::HarnessSetup(e),
            e @ (ExecError::EngineMissing { .. } | ExecError::EngineVersion { .. }) => {
                Self::EngineSetup(e)
            }
            other => Self::Exec(other),
        }
    }
}

impl Error {
    /// This error, when it comes after a measurement: a file that cannot be
    /// written then says where the numbers are kept (`kept`).
    pub fn measured(self, kept: &str) -> Self {
        match self {
            Self::Write { path, source } => Self::NotWritten {
                path,
                kept: kept.to_owned(),
                source,
            },
            other => other,
        }
    }

    /// What went wrong, as far as a script tells it apart (`cli` makes it an exit code).
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::ReadExperiment { .. }
            | Self::Spec(_)
            | Self::Inputs(_)
            | Self::NotAFile(_)
            | Self::Dataset(_)
            | Self::Machine(_)
            | Self::CpuMachine(_)
            | Self::EngineSetup(_)
            | Self::HarnessSetup(_)
            | Self::Usage { .. }
            | Self::Lockfile(_)
            | Self::ReadLockfile { .. }
            | Self::NoSpace { .. }
            | Self::Write { .. }
            | Self::Page(_)
            | Self::GcRoot { .. }
            | Self::Secret(_)
            | Self::Project(_)
            | Self::ReadMaterial { .. }
            | Self::TamperedMaterial { .. }
            | Self::BadMaterial { .. }
            | Self::Material(_)
            | Self::MissingInput { .. }
            | Self::CorruptInput { .. } => ErrorKind::Usage,
            Self::Store(e) if e.is_usage() => ErrorKind::Usage,
            // The machine's fault, not perfpipe's: permissions, a read-only or full disk.
            Self::Store(crate::store::Error::Io(_)) | Self::Exec(ExecError::System { .. }) => {
                ErrorKind::Environment
            }
            Self::FetchSetup(crate::fetch::Error::Client(_)) => ErrorKind::Internal,
            Self::FetchSetup(_) => ErrorKind::Usage,
            Self::FetchFailed { .. } => ErrorKind::Environment,
            Self::HarnessEnv { error, .. } if error.is_usage() => ErrorKind::Usage,
            Self::HarnessEnv { .. } => ErrorKind::Environment,
            Self::LockStale { .. } => ErrorKind::LockStale,
            Self::Server { .. } | Self::NotWritten { .. } => ErrorKind::Environment,
            Self::Exec(
                ExecError::Dataset { .. }
                | ExecError::DatasetRead { .. }
                | ExecError::Schedule { .. },
            ) => ErrorKind::Usage,
            Self::Interrupted => ErrorKind::Interrupted,
            Self::Cache(e) => e.kind(),
            Self::Exec(ExecError::Slurm(e)) => e.kind(),
            Self::Exec(_) | Self::Store(_) | Self::Runtime { .. } => ErrorKind::Internal,
        }
    }
}

/// A page `init --from-page` cannot read, shown at its line.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("cannot read the page `{path}`: {message}")]
#[diagnostic(help(
    "`init --from-page` reads a study page as the performance lab publishes it (markdown): serving scripts or backend parameters under \"Experiment Results\", each followed by its benchmark result"
))]
pub struct PageReport {
    pub path: String,
    pub message: String,
    #[source_code]
    pub src: miette::NamedSource<String>,
    #[label("here")]
    pub span: miette::SourceSpan,
}

/// What to say of an experiment file `path` that cannot be read (perfpipe
/// works at the project root, `path` made relative to it): a file that
/// exists when a leading directory of `path` is dropped (typed from inside
/// `experiments/`, `experiments/x.kdl` is `experiments/experiments/x.kdl`),
/// else the experiments the project has.
pub fn experiment_hint(path: &std::path::Path) -> String {
    let parts: Vec<_> = path.components().collect();
    for skip in 1..parts.len() {
        let shorter: std::path::PathBuf = parts[skip..].iter().collect();
        if shorter.is_file() {
            // The directory it was typed in, and the file meant from there.
            let typed_in: std::path::PathBuf = parts[..skip].iter().collect();
            let meant = shorter.strip_prefix(&typed_in).unwrap_or(&shorter);
            return format!(
                "a path on the command line is relative to the directory it is typed in, so this one is the project's `{}`; did you mean `{}` (the project's `{}`)?",
                path.display(),
                meant.display(),
                shorter.display()
            );
        }
    }
    let mut here: Vec<String> = fs_err::read_dir("experiments")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "kdl"))
        .map(|p| p.display().to_string())
        .collect();
    here.sort();
    match here.as_slice() {
        [] => {
            "this project has no experiment under `experiments/` yet (`perfpipe init` writes one)"
                .into()
        }
        some => format!("the project's experiments: {}", some.join(", ")),
    }
}
