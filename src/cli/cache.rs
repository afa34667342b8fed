//! `perfpipe cache`: keys and the shared result cache (`crate::cache`).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::CliError;
use super::examples;
use crate::exit_code;

#[derive(Debug, Args)]
pub struct CacheArgs {
    #[command(subcommand)]
    pub command: CacheCommand,
}

#[derive(Debug, Subcommand)]
pub enum CacheCommand {
    /// Make an ed25519 key pair to sign pushed results with; prints the
    /// public key (`NAME:base64`) for colleagues to trust.
    ///
    /// Writes `NAME.secret` (readable by you only) and `NAME.public`; never
    /// replaces a key.
    #[command(after_long_help = examples::CACHE_KEYGEN)]
    Keygen(KeygenArgs),
    /// Sign and upload the stored samples of experiments (or of the whole
    /// store) that the cache lacks; pushing again uploads nothing.
    ///
    /// A sample substituted from another machine keeps its signer's
    /// signature; imported (published) numbers are not pushed.
    #[command(after_long_help = examples::CACHE_PUSH)]
    Push(PushArgs),
}

#[derive(Debug, Args)]
pub struct PushArgs {
    /// Experiments whose runs (under `--runtime`) to push.
    #[arg(value_name = "EXPERIMENT", required_unless_present = "all")]
    pub experiments: Vec<PathBuf>,
    /// Push every entry of the store.
    #[arg(long, conflicts_with = "experiments")]
    pub all: bool,
    /// The cache: a directory or `oci://host/repository` [default: `push-to`
    /// under `[cache]` in config.toml].
    #[arg(long, value_name = "LOCATION")]
    pub to: Option<String>,
    /// The secret key file to sign with [default: `secret-key-file` under `[cache]`].
    #[arg(long, value_name = "FILE")]
    pub secret_key: Option<PathBuf>,
    #[command(flatten)]
    pub runtime: super::args::RuntimeOpt,
    #[command(flatten)]
    pub store: super::args::StoreArg,
    /// `[credentials]` of config.toml.
    #[arg(skip)]
    pub credentials: crate::cache::CredentialSources,
}

/// Which caches `run` and `plan` ask for missing runs, and whose signatures
/// they accept.
#[derive(Debug, Args)]
pub struct SubstituteArgs {
    /// A cache to ask for missing runs, repeatable: a directory, an
    /// `https://` URL or `oci://host/repository` [default: `substituters`
    /// under `[cache]` in config.toml].
    #[arg(long = "substituter", value_name = "LOCATION")]
    pub substituters: Vec<String>,
    /// A public key whose signed results to accept, repeatable
    /// [default: `public-keys` under `[trust]` in config.toml].
    #[arg(long = "trusted-key", value_name = "NAME:BASE64")]
    pub trusted_keys: Vec<String>,
    /// Ask no cache: measure every missing run here.
    #[arg(long)]
    pub no_substitute: bool,
    /// Ask the caches again about runs they lacked within `negative-ttl`
    /// (e.g. just after a colleague pushed them).
    #[arg(long)]
    pub refresh: bool,
    /// `negative-ttl` under `[cache]` in config.toml.
    #[arg(skip)]
    pub negative_ttl: Option<u64>,
    /// `[credentials]` of config.toml.
    #[arg(skip)]
    pub credentials: crate::cache::CredentialSources,
}

#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// The key's name, shown as the signer of every result it signs
    /// (letters, digits and `._-@+`, e.g. `alice-1`).
    pub name: String,
    /// Where to write the key files [default: ~/.config/perfpipe/keys].
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

pub fn cache(args: &CacheArgs) -> Result<u8, CliError> {
    match &args.command {
        CacheCommand::Keygen(args) => keygen(args),
        CacheCommand::Push(args) => push(args),
    }
}

fn push(args: &PushArgs) -> Result<u8, CliError> {
    let to = args.to.as_deref().ok_or(crate::cache::Error::NoPushTarget);
    let to =
        crate::cache::Location::parse(to.map_err(CliError::Cache)?).map_err(CliError::Cache)?;
    let secret_file = args
        .secret_key
        .as_deref()
        .ok_or(crate::cache::Error::NoSecretKey)
        .map_err(CliError::Cache)?;
    let secret = crate::cache::read_secret(secret_file).map_err(CliError::Cache)?;
    let store = crate::store::Store::open(args.store.path()).map_err(CliError::Store)?;
    let runs = if args.all {
        store.entries().map_err(CliError::Store)?
    } else {
        let mut runs = Vec::new();
        for experiment in &args.experiments {
            let experiment = super::args::ExperimentArgs {
                experiment: experiment.clone(),
                lockfile: None,
            };
            let common =
                super::args::Common::selecting_runtime(&experiment, &args.store, &args.runtime);
            let loaded = super::load(&common, super::LockMode::Read)?;
            runs.extend(
                loaded
                    .runs
                    .iter()
                    .map(|r| (r.key.clone(), r.canonical.clone())),
            );
        }
        runs.sort();
        runs.dedup();
        runs
    };
    let credential =
        crate::cache::credential_for(&args.credentials, &to).map_err(CliError::Cache)?;
    let remote = crate::cache::Remote::new(to).with_credential(credential);
    let pushed = crate::cache::push(&store, &runs, &remote, &secret).map_err(CliError::Cache)?;
    eoutln!(
        "perfpipe: pushed {} to `{}` as `{}` ({} already there{})",
        crate::plural::count(pushed.uploaded, "sample", "samples"),
        remote.location,
        secret.name,
        pushed.already,
        match pushed.published {
            0 => String::new(),
            n => format!(", {n} imported left out"),
        }
    );
    Ok(exit_code::OK)
}

impl SubstituteArgs {
    /// The caches to ask; `None` with `--no-substitute` or none configured.
    pub fn caches(&self, offline: bool) -> Result<Option<crate::cache::Caches>, CliError> {
        if self.no_substitute {
            return Ok(None);
        }
        let recall = crate::cache::Recall {
            negative_ttl: self
                .negative_ttl
                .unwrap_or(crate::cache::DEFAULT_NEGATIVE_TTL),
            refresh: self.refresh,
        };
        let configured = crate::cache::Caches::configure(
            &self.substituters,
            &self.trusted_keys,
            offline,
            recall,
            &self.credentials,
        )
        .map_err(CliError::Cache)?;
        if let Some(first) = configured.skipped_offline.first() {
            eoutln!(
                "warning: offline (`--offline` or PERFPIPE_OFFLINE): {} not asked (`{first}`{}); only directory caches are",
                crate::plural::count(
                    configured.skipped_offline.len(),
                    "web or registry cache",
                    "web or registry caches"
                ),
                match configured.skipped_offline.len() {
                    1 => String::new(),
                    n => format!(" and {} more", n - 1),
                }
            );
        }
        Ok(configured.caches)
    }

    /// Fills what the command line leaves out from the user's configuration.
    pub fn or_user(&mut self, user: &crate::project::UserConfig) {
        if self.substituters.is_empty() {
            self.substituters = user.cache.substituters.clone();
        }
        if self.trusted_keys.is_empty() {
            self.trusted_keys = user.trust.public_keys.clone();
        }
        self.negative_ttl = user.cache.negative_ttl;
        self.credentials = user.credentials.clone();
    }
}
fn keygen(args: &KeygenArgs) -> Result<u8, CliError> {
    let dir = args
        .dir
        .clone()
        .or_else(|| crate::project::user_config_dir().map(|d| d.join("perfpipe").join("keys")))
        .ok_or_else(|| CliError::Usage {
            message: "no home directory to keep the key in".into(),
            hint: "name a directory with `--dir DIR`".into(),
        })?;
    let pair = crate::cache::keygen(&args.name, &dir).map_err(CliError::Cache)?;
    outln!("{}", pair.public);
    eoutln!(
        "perfpipe: wrote `{}` (keep it secret) and `{}`; colleagues add the line above to `public-keys` under `[trust]` in their config.toml",
        pair.secret_file.display(),
        pair.public_file.display()
    );
    Ok(exit_code::OK)
}
