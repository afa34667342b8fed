//! `perfpipe cache`: keys and the shared result cache (`crate::cache`).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::examples;
use crate::exit_code;
use crate::ops::Error;
use crate::ops::{
    self, cache::PushOptions, cache::Pushing, cache::SignOptions, cache::Substitution,
};
use crate::tokio_runtime::Io;

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
    /// Add a signature with another key to the samples a cache holds under
    /// a trusted signature: to rotate a key, or for a second team to vouch
    /// for results.
    ///
    /// Each sample's existing signature is verified against the trusted keys
    /// first; the sample's content is not changed.
    #[command(after_long_help = examples::CACHE_SIGN)]
    Sign(SignArgs),
}

#[derive(Debug, Args)]
pub struct SignArgs {
    /// Experiments whose runs (under `--runtime`) to sign.
    #[arg(value_name = "EXPERIMENT", required_unless_present = "all")]
    pub experiments: Vec<PathBuf>,
    /// Sign the samples of every entry of the store.
    #[arg(long, conflicts_with = "experiments")]
    pub all: bool,
    /// The cache: a directory, `oci://host/repository` or
    /// `s3://bucket/prefix` [default: `push-to` under `[cache]` in
    /// config.toml].
    #[arg(long, value_name = "LOCATION")]
    pub to: Option<String>,
    /// The secret key file whose signature is added.
    #[arg(long = "key", value_name = "FILE")]
    pub key: PathBuf,
    /// A public key whose signature to vouch after, repeatable [default:
    /// `public-keys` under `[trust]` in config.toml].
    #[arg(long = "trusted-key", value_name = "NAME:BASE64")]
    pub trusted_keys: Vec<String>,
    #[command(flatten)]
    pub runtime: super::args::RuntimeOpt,
    #[command(flatten)]
    pub store: super::args::StoreArg,
    /// `[credentials]` of config.toml.
    #[arg(skip)]
    pub credentials: crate::cache::CredentialSources,
}

#[derive(Debug, Args)]
pub struct PushArgs {
    /// Experiments whose runs (under `--runtime`) to push.
    #[arg(value_name = "EXPERIMENT", required_unless_present = "all")]
    pub experiments: Vec<PathBuf>,
    /// Push every entry of the store.
    #[arg(long, conflicts_with = "experiments")]
    pub all: bool,
    /// The cache: a directory, `oci://host/repository` or
    /// `s3://bucket/prefix` [default: `push-to` under `[cache]` in
    /// config.toml].
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
    /// `https://` URL, `oci://host/repository` or `s3://bucket/prefix`
    /// [default: `substituters` under `[cache]` in config.toml].
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

pub fn cache(args: &CacheArgs, io: &Io) -> Result<u8, Error> {
    match &args.command {
        CacheCommand::Keygen(args) => keygen(args),
        CacheCommand::Push(args) => push(args, io),
        CacheCommand::Sign(args) => sign(args, io),
    }
}

fn sign(args: &SignArgs, io: &Io) -> Result<u8, Error> {
    let vouched = ops::cache::sign(&SignOptions {
        to: args.to.clone(),
        key: args.key.clone(),
        trusted_keys: args.trusted_keys.clone(),
        pushing: pushing(args.all, &args.experiments),
        runtime: super::runtime_of(args.runtime.runtime),
        store: args.store.path().to_owned(),
        credentials: args.credentials.clone(),
        io: io.clone(),
    })?;
    for (key, why) in &vouched.counts.refused {
        eoutln!(
            "warning: a sample of `{key}` in `{}` was not signed: {why}",
            vouched.location
        );
    }
    eoutln!(
        "perfpipe: signed {} in `{}` as `{}` ({} already signed so{})",
        crate::plural::count(vouched.counts.signed, "sample", "samples"),
        vouched.location,
        vouched.signer,
        vouched.counts.already,
        match vouched.counts.refused.len() {
            0 => String::new(),
            n => format!(", {n} without a trusted signature left as they are"),
        }
    );
    Ok(exit_code::OK)
}

/// The runs `--all` or the experiments named select.
fn pushing(all: bool, experiments: &[PathBuf]) -> Pushing {
    if all {
        Pushing::All
    } else {
        Pushing::Experiments(experiments.to_vec())
    }
}

impl PushArgs {
    /// The push the arguments ask for.
    fn options(&self, io: &Io) -> PushOptions {
        PushOptions {
            to: self.to.clone(),
            secret_key: self.secret_key.clone(),
            pushing: pushing(self.all, &self.experiments),
            runtime: super::runtime_of(self.runtime.runtime),
            store: self.store.path().to_owned(),
            credentials: self.credentials.clone(),
            io: io.clone(),
        }
    }
}

fn push(args: &PushArgs, io: &Io) -> Result<u8, Error> {
    let pushed = ops::cache::push(&args.options(io))?;
    eoutln!(
        "perfpipe: pushed {} to `{}` as `{}` ({} already there{}{})",
        crate::plural::count(pushed.counts.uploaded, "sample", "samples"),
        pushed.location,
        pushed.signer,
        pushed.counts.already,
        match pushed.counts.signed {
            0 => String::new(),
            n => format!(", {n} there given this signature"),
        },
        match pushed.counts.published {
            0 => String::new(),
            n => format!(", {n} imported left out"),
        }
    );
    Ok(exit_code::OK)
}

impl SubstituteArgs {
    /// The substitution the arguments (over config.toml) ask for.
    pub fn options(&self) -> Substitution {
        Substitution {
            substituters: self.substituters.clone(),
            trusted_keys: self.trusted_keys.clone(),
            off: self.no_substitute,
            recall: crate::cache::Recall {
                negative_ttl: self
                    .negative_ttl
                    .unwrap_or(crate::cache::DEFAULT_NEGATIVE_TTL),
                refresh: self.refresh,
            },
            credentials: self.credentials.clone(),
        }
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

fn keygen(args: &KeygenArgs) -> Result<u8, Error> {
    let pair = ops::cache::keygen(&args.name, args.dir.clone())?;
    outln!("{}", pair.public);
    eoutln!(
        "perfpipe: wrote `{}` (keep it secret) and `{}`; colleagues add the line above to `public-keys` under `[trust]` in their config.toml",
        pair.secret_file.display(),
        pair.public_file.display()
    );
    Ok(exit_code::OK)
}
