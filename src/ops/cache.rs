//! `cache push`, `cache keygen`, and the caches `run` and `plan` ask: the
//! workflows over the shared result cache (`crate::cache`), from options
//! the command line has validated.

use std::path::PathBuf;

use super::{Error, LockMode, Selection, Shell, load};
use crate::cache::{self, Caches, CredentialSources, KeyPair, Location, Recall, Remote};
use crate::facts::Runtime;
use crate::key::RunKey;
use crate::plural::count;
use crate::store::Store;
use crate::tokio_runtime::Io;

/// Which stored samples `cache push` sends.
#[derive(Debug, Clone)]
pub enum Pushing {
    /// Every entry of the store.
    All,
    /// The runs of these experiments (under the push's runtime).
    Experiments(Vec<PathBuf>),
}

/// What `cache push` needs: where to, signed with what, and which samples.
#[derive(Debug, Clone)]
pub struct PushOptions {
    /// `--to`, else `push-to` under `[cache]`: `None` when neither names one.
    pub to: Option<String>,
    /// `--secret-key`, else `secret-key-file` under `[cache]`.
    pub secret_key: Option<PathBuf>,
    pub pushing: Pushing,
    /// `--runtime`, which selects the experiments' runs.
    pub runtime: Option<Runtime>,
    pub store: PathBuf,
    /// `[credentials]` of config.toml.
    pub credentials: CredentialSources,
    /// The process's runtime, which uploads.
    pub io: Io,
}

/// What a push did, and where to and as whom.
#[derive(Debug)]
pub struct Pushed {
    pub location: Location,
    /// The signing key's name.
    pub signer: String,
    pub counts: cache::Pushed,
}

/// The cache `--to` (or the configuration) names; none is an error.
fn target(to: Option<&str>) -> Result<Location, Error> {
    let to = to.ok_or(cache::Error::NoPushTarget).map_err(Error::Cache)?;
    Location::parse(to).map_err(Error::Cache)
}

/// Signs and uploads the samples `options` select that the cache lacks.
pub fn push(options: &PushOptions) -> Result<Pushed, Error> {
    let to = target(options.to.as_deref())?;
    let secret_file = options
        .secret_key
        .as_deref()
        .ok_or(cache::Error::NoSecretKey)
        .map_err(Error::Cache)?;
    let secret = cache::read_secret(secret_file).map_err(Error::Cache)?;
    let store = Store::open(&options.store).map_err(Error::Store)?;
    let runs = pushed_runs(&options.pushing, options.runtime, &options.store, &store)?;
    let credential = cache::credential_for(&options.credentials, &to).map_err(Error::Cache)?;
    let remote = Remote::new(to).with_credential(credential);
    let counts = cache::push(&store, &runs, &remote, &secret, &options.io).map_err(Error::Cache)?;
    Ok(Pushed {
        location: remote.location,
        signer: secret.name,
        counts,
    })
}

/// The keys (and key material) a push (or `cache sign`) names, each once.
fn pushed_runs(
    pushing: &Pushing,
    runtime: Option<Runtime>,
    store_path: &std::path::Path,
    store: &Store,
) -> Result<Vec<(RunKey, String)>, Error> {
    let experiments = match pushing {
        Pushing::All => return store.entries().map_err(Error::Store),
        Pushing::Experiments(experiments) => experiments,
    };
    let mut runs = Vec::new();
    for experiment in experiments {
        let selection = Selection {
            runtime,
            ..Selection::declared(experiment, None, store_path)
        };
        let loaded = load(&selection, LockMode::Read)?;
        runs.extend(
            loaded
                .runs
                .iter()
                .map(|r| (r.key.clone(), r.canonical.clone())),
        );
    }
    runs.sort();
    runs.dedup();
    Ok(runs)
}

/// What `cache sign` needs: the cache, the new key, the keys whose
/// signatures it vouches after, and which runs.
#[derive(Debug, Clone)]
pub struct SignOptions {
    /// `--to`, else `push-to` under `[cache]`.
    pub to: Option<String>,
    /// `--key`: the secret key file whose signature is added.
    pub key: PathBuf,
    /// `--trusted-key`, else `public-keys` under `[trust]`.
    pub trusted_keys: Vec<String>,
    pub pushing: Pushing,
    pub runtime: Option<Runtime>,
    pub store: PathBuf,
    pub credentials: CredentialSources,
    pub io: Io,
}

/// What `cache sign` did, where, as whom.
#[derive(Debug)]
pub struct Vouched {
    pub location: Location,
    pub signer: String,
    pub counts: cache::Vouched,
}

/// Adds the signature of `options.key` to the samples of the runs named
/// that the cache holds under a trusted signature (key rotation, or a
/// second team vouching for results).
pub fn sign(options: &SignOptions) -> Result<Vouched, Error> {
    let to = target(options.to.as_deref())?;
    let secret = cache::read_secret(&options.key).map_err(Error::Cache)?;
    let keys = options
        .trusted_keys
        .iter()
        .map(|k| crate::signing::PublicKey::parse(k))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::Cache(e.into()))?;
    if keys.is_empty() {
        return Err(Error::Cache(cache::Error::NoTrustedKeys));
    }
    let trusted = crate::signing::TrustedKeys::new(keys);
    let store = Store::open(&options.store).map_err(Error::Store)?;
    let runs = pushed_runs(&options.pushing, options.runtime, &options.store, &store)?;
    let keys: Vec<RunKey> = runs.into_iter().map(|(key, _)| key).collect();
    let credential = cache::credential_for(&options.credentials, &to).map_err(Error::Cache)?;
    let remote = Remote::new(to).with_credential(credential);
    let counts =
        cache::sign(&keys, &remote, &secret, &trusted, &options.io).map_err(Error::Cache)?;
    Ok(Vouched {
        location: remote.location,
        signer: secret.name,
        counts,
    })
}

/// Makes a key pair named `name` in `dir`, else in the user's key
/// directory (`~/.config/perfpipe/keys`).
pub fn keygen(name: &str, dir: Option<PathBuf>) -> Result<KeyPair, Error> {
    let dir = dir
        .or_else(|| crate::project::user_config_dir().map(|d| d.join("perfpipe").join("keys")))
        .ok_or_else(|| Error::Usage {
            message: "no home directory to keep the key in".into(),
            hint: "name a directory with `--dir DIR`".into(),
        })?;
    cache::keygen(name, &dir).map_err(Error::Cache)
}

/// Which caches `run` and `plan` ask for missing runs, and whose
/// signatures they accept (the command line's over config.toml's).
#[derive(Debug, Clone, Default)]
pub struct Substitution {
    pub substituters: Vec<String>,
    pub trusted_keys: Vec<String>,
    /// `--no-substitute`: ask no cache.
    pub off: bool,
    pub recall: Recall,
    pub credentials: CredentialSources,
}

/// The caches to ask; `None` with `--no-substitute` or none configured.
/// Under `--offline` only directory caches are asked, which `shell` is told.
pub fn caches(
    substitution: &Substitution,
    offline: bool,
    io: &Io,
    shell: &dyn Shell,
) -> Result<Option<Caches>, Error> {
    if substitution.off {
        return Ok(None);
    }
    let configured = Caches::configure(
        &substitution.substituters,
        &substitution.trusted_keys,
        offline,
        substitution.recall,
        &substitution.credentials,
        io,
    )
    .map_err(Error::Cache)?;
    if let Some(first) = configured.skipped_offline.first() {
        say!(
            shell,
            "warning: offline (`--offline` or PERFPIPE_OFFLINE): {} not asked (`{first}`{}); only directory caches are",
            count(
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
