//! The two configuration files, as typed settings (pure: text in, settings
//! or an error pointing into the text out). Unknown keys are errors, so a
//! typo never silently does nothing; later features add their sections as
//! fields here.

use std::path::PathBuf;

use miette::Diagnostic;
use serde::Deserialize;
use thiserror::Error;

use crate::facts::Runtime;

/// `perfpipe.toml` at the project root: settings shared by everyone who
/// works in the project (commit it). None of them enters a run's key.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectConfig {
    /// The store directory, relative to the project root [default: `store`].
    pub store: Option<PathBuf>,
    /// The runtime where neither `--runtime` nor `PERFPIPE_RUNTIME` names one.
    #[serde(default, deserialize_with = "runtime")]
    pub runtime: Option<Runtime>,
    /// Caches, trusted keys and credentials are one person's, never a
    /// cloned project's: these sections are refused here (docs/result-cache.md).
    #[serde(default)]
    pub cache: Personal,
    #[serde(default)]
    pub trust: Personal,
    #[serde(default)]
    pub credentials: Personal,
    #[serde(default)]
    pub executor: ExecutorConfig,
}

/// `[executor.*]`: where launches run besides this machine.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecutorConfig {
    /// `[executor.slurm]`: how jobs are submitted (docs/slurm.md).
    #[serde(default)]
    pub slurm: crate::exec::slurm::SlurmOptions,
}

/// `$XDG_CONFIG_HOME/perfpipe/config.toml` (else `~/.config/perfpipe/`):
/// one person's settings. Its sections are reserved for the features that
/// will fill them; a key in one is an error until then.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserConfig {
    /// `[credentials."HOST"]`: what to show each cache (docs/result-cache.md).
    #[serde(default)]
    pub credentials: crate::cache::CredentialSources,
    #[serde(default)]
    pub trust: Trust,
    #[serde(default)]
    pub cache: CacheConfig,
}

/// `[trust]`: whose signed results this person accepts.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Trust {
    /// Public keys, `NAME:base64` as `perfpipe cache keygen` prints them.
    #[serde(default)]
    pub public_keys: Vec<String>,
}

/// `[cache]`: where results are shared (docs/result-cache.md).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CacheConfig {
    /// Caches `run` and `plan` ask for missing runs, in order.
    #[serde(default)]
    pub substituters: Vec<String>,
    /// The cache `cache push` writes to.
    pub push_to: Option<String>,
    /// The secret key `cache push` signs with.
    pub secret_key_file: Option<PathBuf>,
    /// Seconds a cache's "no sample of this run" is believed before it is
    /// asked again [default: 3600, as Nix's `narinfo-cache-negative-ttl`].
    pub negative_ttl: Option<u64>,
}

/// A section a project file may not have: always an error, at its line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Personal;

impl<'de> Deserialize<'de> for Personal {
    fn deserialize<D: serde::Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        Err(serde::de::Error::custom(
            "caches, trusted keys and credentials are not taken from a project's file (a cloned project would choose whose numbers you trust, or where your secrets go); set them in your own config.toml or on the command line",
        ))
    }
}

fn runtime<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Runtime>, D::Error> {
    let name = String::deserialize(d)?;
    Runtime::from_name(&name).map(Some).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "unknown runtime `{name}`, expected one of {}",
            Runtime::NAMES.join(", ")
        ))
    })
}

/// A configuration file that does not parse, by its path and line. Its
/// text is never quoted: a line (or the one beside it) may hold a password.
#[derive(Debug, Error, Diagnostic)]
#[error("{path}:{line}: {message}")]
#[diagnostic(help("{help}"))]
pub struct ConfigError {
    pub path: String,
    pub line: usize,
    pub message: String,
    help: String,
}

pub fn parse_project(path: &str, text: &str) -> Result<ProjectConfig, Box<ConfigError>> {
    parse(
        path,
        text,
        "`perfpipe.toml` takes `store`, `runtime` and `[executor.slurm]` (README, \"Project root and configuration\")",
    )
}

pub fn parse_user(path: &str, text: &str) -> Result<UserConfig, Box<ConfigError>> {
    parse(
        path,
        text,
        "the user configuration takes `[cache]` (`substituters`, `push-to`, `secret-key-file`, `negative-ttl`), `[trust]` (`public-keys`) and `[credentials.\"HOST\"]` (`username` with `password-env` or `password-file` and, for S3, `session-token-env` or `session-token-file`; or `token-file`) (docs/result-cache.md)",
    )
}

fn parse<T: serde::de::DeserializeOwned>(
    path: &str,
    text: &str,
    help: &str,
) -> Result<T, Box<ConfigError>> {
    toml::from_str(text).map_err(|e| {
        let span = e.span();
        let line = span.as_ref().map_or(1, |s| {
            text[..s.start.min(text.len())].matches('\n').count() + 1
        });
        Box::new(ConfigError {
            path: path.to_owned(),
            line,
            message: e.message().to_owned(),
            help: help.to_owned(),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_project_file_takes_a_store_and_a_runtime() {
        let config = parse_project(
            "perfpipe.toml",
            "store = \"/data/store\"\nruntime = \"sim\"\n",
        )
        .unwrap();
        assert_eq!(config.store, Some(PathBuf::from("/data/store")));
        assert_eq!(config.runtime, Some(Runtime::Sim));
        assert_eq!(
            parse_project("perfpipe.toml", "").unwrap(),
            ProjectConfig::default()
        );
    }

    #[test]
    fn the_project_file_takes_the_slurm_executors_options() {
        let config = parse_project(
            "perfpipe.toml",
            "[executor.slurm]\npartition = \"gpu\"\ntime_limit = \"4:00:00\"\n",
        )
        .unwrap();
        assert_eq!(config.executor.slurm.partition.as_deref(), Some("gpu"));
        assert_eq!(config.executor.slurm.time_limit.as_deref(), Some("4:00:00"));
        let e = parse_project("perfpipe.toml", "[executor.slurm]\nqueue = \"gpu\"\n").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        // A value Slurm would not take, refused at its line (never a line of a job script).
        let e = parse_project(
            "perfpipe.toml",
            "[executor.slurm]\naccount = \"perf\"\npartition = \"gpu\\ntouch /tmp/PWNED\\n#\"\n",
        )
        .unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        assert!(
            e.to_string().starts_with(
                "perfpipe.toml:3: `gpu\\ntouch /tmp/PWNED\\n#` is not a Slurm partition (`partition`, `--partition`): a name"
            ),
            "{e}"
        );
        assert!(parse_project("perfpipe.toml", "[executor.k8s]\n").is_err());
    }

    #[test]
    fn an_unknown_key_or_value_is_an_error_at_its_line() {
        let e = parse_project("p/perfpipe.toml", "store = \"s\"\nstroe = \"x\"\n").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        assert!(
            e.to_string()
                .starts_with("p/perfpipe.toml:2: unknown field `stroe`"),
            "{e}"
        );
        let e = parse_project("perfpipe.toml", "\n\nruntime = \"gpu\"\n").unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        assert!(e.message.contains("unknown runtime `gpu`"), "{e}");
        let e = parse_user(
            "config.toml",
            "[credentials.\"r.example\"]\nusername = \"a\"\npassword = \"x\"\n",
        )
        .unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        assert!(parse_user("config.toml", "[credentials]\n[trust]\n").is_ok());
    }

    #[test]
    fn an_error_names_the_key_and_line_and_quotes_no_value() {
        let text = "store = \"s\"\nregistry_password = \"hunter2-pw\"\nruntime = \"sim\"\n";
        let e = parse_project("perfpipe.toml", text).unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        let mut rendered = String::new();
        miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
            .render_report(&mut rendered, e.as_ref())
            .unwrap();
        assert!(
            rendered.contains("unknown field `registry_password`"),
            "{rendered}"
        );
        assert!(
            !rendered.contains("hunter2") && !rendered.contains("s3cret"),
            "{rendered}"
        );
        let text = "[executor.slurm]\npartition = \"gpu\"\npassword = \"s3cret-pw\"\n";
        let e = parse_project("perfpipe.toml", text).unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        assert!(!format!("{e:?}").contains("s3cret"), "{e:?}");
    }

    #[test]
    fn caches_and_trust_come_from_the_user_never_the_project() {
        let user = parse_user(
            "config.toml",
            "[trust]\npublic-keys = [\"alice:K\"]\n[cache]\nsubstituters = [\"/srv/cache\"]\npush-to = \"/srv/cache\"\n",
        )
        .unwrap();
        assert_eq!(user.trust.public_keys, ["alice:K"]);
        assert_eq!(user.cache.substituters, ["/srv/cache"]);
        for text in [
            "[cache]\nsubstituters = [\"https://evil.example\"]\n",
            "store = \"s\"\n[trust]\npublic-keys = [\"mallory:K\"]\n",
            "[credentials.\"r.example\"]\nusername = \"a\"\n",
        ] {
            let e = parse_project("perfpipe.toml", text).unwrap_err();
            assert!(e.message.contains("not taken from a project's file"), "{e}");
            assert_eq!(
                e.line,
                text.lines().position(|l| l.starts_with('[')).unwrap() + 1
            );
        }
    }
}
