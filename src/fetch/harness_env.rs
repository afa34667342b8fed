//! The environments external benchmark clients run from, made by perfpipe:
//! `guidellm` or vLLM (for `vllm bench serve`) of the declared version,
//! installed from the package index into a virtual environment outside the
//! project, content-addressed like a Nix store path.
//!
//! ```text
//! $PERFPIPE_ENV_DIR, else $XDG_CACHE_HOME/perfpipe/envs, else ~/.cache/perfpipe/envs
//!   <address>/                  a whole environment; `.perfpipe-env` inside says what defines it
//!   .building/<address>.lock    held while one perfpipe makes <address>
//!   .building/proc-<pid>-<r>/   an environment being made (an `OwnedDir`), renamed into place when whole
//! ```
//!
//! The address is a hash of what defines the environment: the requirement
//! (`guidellm==0.5.3`), the Python's version and platform, and this
//! scheme's version (`<32 hex>-guidellm-0.5.3`). An environment is made
//! beside its place and renamed into it when whole, so a half-made one is
//! never used; a killed install leaves a directory perfpipe proves its own
//! (its lock is free) and removes at the next install. Nothing else in the
//! directory is ever removed.
//!
//! Made with `uv` when it is on PATH (or `PERFPIPE_UV`), else `python -m
//! venv` and pip; the Python is `PERFPIPE_PYTHON`, else `python3` on PATH.
//! Once made, an environment is used without the network. Its programs run
//! as `<env>/bin/python <env>/bin/<program>`: an environment renamed into
//! place keeps its scripts' first lines pointing at where it was made.

use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::lock::{Attrs, HarnessRequirement};
use crate::tokio_runtime::Io;

/// Bumped when what an environment holds for the same definition changes.
const SCHEME: &str = "perfpipe harness environment v1";
/// The file inside an environment that says what defines it, written last.
const MARKER: &str = ".perfpipe-env";
const BUILDING: &str = ".building";
/// Installs of vLLM download gigabytes.
const INSTALL_LIMIT: Duration = Duration::from_secs(60 * 60);
const PROBE_LIMIT: Duration = Duration::from_secs(60);

#[derive(Debug, Error)]
pub enum Error {
    #[error(
        "cannot run the Python perfpipe makes the `{requirement}` environment with (`{python}`): {reason}"
    )]
    NoPython {
        requirement: String,
        python: String,
        reason: String,
    },
    #[error(
        "no directory for harness environments: none of PERFPIPE_ENV_DIR, XDG_CACHE_HOME and HOME is set"
    )]
    NoEnvDir,
    #[error("cannot reach the package index to install `{requirement}` with {tool}: {line}")]
    IndexUnreachable {
        requirement: String,
        tool: &'static str,
        line: String,
    },
    #[error("{tool} could not install `{requirement}`: {tail}")]
    InstallFailed {
        requirement: String,
        tool: &'static str,
        tail: String,
    },
    #[error(
        "`{path}` is not an environment perfpipe made (it has no `{MARKER}` saying `{requirement}`)"
    )]
    NotPerfpipes { path: String, requirement: String },
    #[error("cannot make the harness environment in `{path}`: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// What the user can do.
    pub fn hint(&self) -> String {
        match self {
            Self::NoPython { .. } => "install Python 3 (3.10-3.13 for vLLM and guidellm) and put `python3` on PATH, or name it with PERFPIPE_PYTHON; `uv` on PATH makes installs faster".into(),
            Self::NoEnvDir => "set PERFPIPE_ENV_DIR to where perfpipe keeps the benchmark clients' environments".into(),
            Self::IndexUnreachable { .. } => "perfpipe installs the declared client from the package index (PyPI, or the index UV_INDEX_URL / PIP_INDEX_URL names) once; run `perfpipe fetch EXPERIMENT` where it is reachable (an install uv has cached installs offline), or set PERFPIPE_HARNESS_FROM=path to use the client on PATH".into(),
            Self::InstallFailed { .. } => "the installer's output above says why; set PERFPIPE_HARNESS_FROM=path to use a client of the declared version installed by hand".into(),
            Self::NotPerfpipes { .. } => "perfpipe never changes a directory it cannot prove it made: move it away, or set PERFPIPE_ENV_DIR to another directory".into(),
            Self::Io { .. } => "check that the directory is writable and has room, or set PERFPIPE_ENV_DIR".into(),
        }
    }

    /// Whether the user's setup is at fault (else the machine or the network).
    pub fn is_usage(&self) -> bool {
        !matches!(
            self,
            Self::IndexUnreachable { .. } | Self::InstallFailed { .. } | Self::Io { .. }
        )
    }
}

/// Whether `PERFPIPE_HARNESS_FROM=path` asks for the client on PATH
/// instead of perfpipe's environment.
pub fn from_path() -> bool {
    std::env::var("PERFPIPE_HARNESS_FROM").is_ok_and(|v| v.trim() == "path")
}

/// The directory the environments live in: `PERFPIPE_ENV_DIR`, else the
/// user's cache directory's `perfpipe/envs`. (pure)
pub fn envs_dir_from(
    env_dir: Option<&str>,
    xdg_cache: Option<&str>,
    home: Option<&str>,
) -> Option<PathBuf> {
    let set = |v: Option<&str>| v.filter(|v| !v.is_empty()).map(PathBuf::from);
    set(env_dir)
        .or_else(|| set(xdg_cache).map(|c| c.join("perfpipe/envs")))
        .or_else(|| set(home).map(|h| h.join(".cache/perfpipe/envs")))
}

fn envs_dir() -> Result<PathBuf, Error> {
    let var = |name: &str| std::env::var(name).ok();
    envs_dir_from(
        var("PERFPIPE_ENV_DIR").as_deref(),
        var("XDG_CACHE_HOME").as_deref(),
        var("HOME").as_deref(),
    )
    .ok_or(Error::NoEnvDir)
}

/// The interpreter an environment is made with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Python {
    pub exe: String,
    /// `3.11`
    pub version: String,
    /// `linux-x86_64`, as `sysconfig.get_platform()` says.
    pub platform: String,
}

/// What defines an environment, in the marker's words. (pure)
fn definition(requirement: &str, python: &Python) -> String {
    format!(
        "{SCHEME}\nrequirement {requirement}\npython {}\nplatform {}\n",
        python.version, python.platform
    )
}

/// The environment's address: `<32 hex of the definition's sha256>-<package>-<version>`. (pure)
pub fn address(wanted: &HarnessRequirement, python: &Python) -> String {
    let digest = Sha256::digest(definition(&wanted.requirement(), python).as_bytes());
    format!(
        "{}-{}-{}",
        &hex::encode(digest)[..32],
        wanted.package,
        wanted.version
    )
}

/// An environment perfpipe made.
#[derive(Debug, Clone)]
pub struct Env {
    pub prefix: PathBuf,
    pub address: String,
    pub python: Python,
    /// Every package installed, `(name, version)`, sorted.
    pub packages: Vec<(String, String)>,
}

impl Env {
    /// What the lockfile records of it.
    pub fn locked(&self) -> Attrs {
        crate::lock::locked_attrs(&self.address, &self.python.version, &self.packages)
    }

    /// The argv that runs `program` of this environment (its interpreter
    /// and its script, which runs whatever the script's first line says).
    pub fn program_argv(&self, program: &str) -> [String; 2] {
        program_argv(&self.prefix, program)
    }
}

/// `<prefix>/bin/python <prefix>/bin/<program>`. (pure)
pub fn program_argv(prefix: &Path, program: &str) -> [String; 2] {
    let bin = prefix.join("bin");
    [
        bin.join("python").display().to_string(),
        bin.join(program).display().to_string(),
    ]
}

/// The Python to make environments with, asked its version and platform.
pub fn python(wanted: &HarnessRequirement, io: &Io) -> Result<Python, Error> {
    let exe = std::env::var("PERFPIPE_PYTHON")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "python3".into());
    let fail = |reason: String| Error::NoPython {
        requirement: wanted.requirement(),
        python: exe.clone(),
        reason,
    };
    let probe = [
        "-c",
        "import sys, sysconfig; print('%d.%d' % sys.version_info[:2]); print(sysconfig.get_platform())",
    ];
    let runtime = io.handle().map_err(|e| fail(e.to_string()))?;
    let out = runtime
        .block_on(crate::external::read(&exe, &probe, PROBE_LIMIT))
        .map_err(|e| fail(e.to_string()))?;
    let mut lines = out.lines().map(str::trim);
    match (lines.next(), lines.next()) {
        (Some(version), Some(platform)) if !version.is_empty() && !platform.is_empty() => {
            Ok(Python {
                exe: exe.clone(),
                version: version.to_owned(),
                platform: platform.to_owned(),
            })
        }
        _ => Err(fail(format!(
            "it printed `{}`, not its version and platform",
            out.trim()
        ))),
    }
}

/// The environment of `wanted` on this machine, when it is made.
pub fn find(wanted: &HarnessRequirement, io: &Io) -> Result<Option<Env>, Error> {
    let python = python(wanted, io)?;
    let dir = envs_dir()?;
    look(&dir, wanted, &python)
}

/// The environment at its address in `dir`: whole (its marker says its
/// definition), absent, or a directory perfpipe did not make.
fn look(dir: &Path, wanted: &HarnessRequirement, python: &Python) -> Result<Option<Env>, Error> {
    let address = address(wanted, python);
    let prefix = dir.join(&address);
    if !prefix.exists() {
        return Ok(None);
    }
    let marker = crate::regular_file::read_at_most(&prefix.join(MARKER), 64 * 1024).ok();
    if marker.as_deref() != Some(definition(&wanted.requirement(), python).as_bytes()) {
        return Err(Error::NotPerfpipes {
            path: prefix.display().to_string(),
            requirement: wanted.requirement(),
        });
    }
    Ok(Some(Env {
        packages: crate::pyenv::installed_packages(&prefix),
        prefix,
        address,
        python: python.clone(),
    }))
}

/// The environment of `wanted`, made when missing (holding exactly
/// `pinned`'s packages, where a lockfile records them, else what the index
/// resolves now; with `offline`, only from the installer's cache). `say`
/// hears what is done. Returns it and whether it was made now.
pub fn ensure(
    wanted: &HarnessRequirement,
    pinned: &[String],
    offline: bool,
    io: &Io,
    say: &mut dyn FnMut(String),
) -> Result<(Env, bool), Error> {
    let python = python(wanted, io)?;
    let dir = envs_dir()?;
    if let Some(env) = look(&dir, wanted, &python)? {
        return Ok((env, false));
    }
    let io_error = |path: &Path| {
        let path = path.display().to_string();
        move |source| Error::Io { path, source }
    };
    let building = dir.join(BUILDING);
    let address = address(wanted, &python);
    // One perfpipe makes an address at a time; the next finds it made.
    let lock_path = building.join(format!("{address}.lock"));
    let lock = crate::filelock::open(&lock_path).map_err(io_error(&lock_path))?;
    lock.lock().map_err(io_error(&lock_path))?;
    if let Some(env) = look(&dir, wanted, &python)? {
        return Ok((env, false));
    }
    remove_dead_builds(&building);
    let owned = crate::filelock::OwnedDir::create(&building, &building.join("order"), "proc-")
        .map_err(io_error(&building))?;
    let staging = owned.path().join("env");
    let requirements: Vec<String> = if pinned.is_empty() {
        vec![wanted.requirement()]
    } else {
        pinned.to_vec()
    };
    let tool = Installer::find(io);
    say(format!(
        "perfpipe: installing {} into `{}` with {}{}{}",
        wanted.requirement(),
        dir.join(&address).display(),
        tool.name(),
        if pinned.is_empty() {
            String::new()
        } else {
            format!(", {} packages as the lockfile records them", pinned.len())
        },
        if offline {
            ", offline (from its cache)"
        } else {
            ""
        }
    ));
    let started = std::time::Instant::now();
    tool.install(&python, &staging, &requirements, offline, wanted, io)?;
    crate::atomic_write::AtomicWrite::new()
        .mode(0o644)
        .write(
            &staging.join(MARKER),
            definition(&wanted.requirement(), &python).as_bytes(),
        )
        .map_err(io_error(&staging))?;
    let prefix = dir.join(&address);
    std::fs::rename(&staging, &prefix).map_err(io_error(&prefix))?;
    drop(owned);
    let env = look(&dir, wanted, &python)?.ok_or_else(|| Error::NotPerfpipes {
        path: prefix.display().to_string(),
        requirement: wanted.requirement(),
    })?;
    say(format!(
        "perfpipe: installed {} ({} packages) in {:.0} s",
        wanted.requirement(),
        env.packages.len(),
        started.elapsed().as_secs_f64()
    ));
    drop(lock);
    Ok((env, true))
}

/// Removes what killed installs left in `building`: directories whose
/// owner's lock is free (see `filelock::OwnedDir`). Others stay.
fn remove_dead_builds(building: &Path) {
    let Ok(order) = crate::filelock::open(&building.join("order")) else {
        return;
    };
    if order.lock().is_err() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(building) else {
        return;
    };
    for entry in entries.flatten() {
        let is_build = entry.file_name().to_string_lossy().starts_with("proc-")
            && entry.file_type().is_ok_and(|t| t.is_dir());
        if is_build
            && let Ok(crate::filelock::Owner::Dead(_held)) = crate::filelock::owner(&entry.path())
        {
            let _ = crate::filelock::remove_owned(&entry.path());
        }
    }
}

/// How an environment is made.
enum Installer {
    Uv(String),
    Pip,
}

impl Installer {
    /// `PERFPIPE_UV`, else `uv` on PATH, else pip.
    fn find(io: &Io) -> Self {
        let uv = std::env::var("PERFPIPE_UV")
            .ok()
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| "uv".into());
        let answers = io.handle().ok().is_some_and(|rt| {
            rt.block_on(crate::external::read(&uv, &["--version"], PROBE_LIMIT))
                .is_ok()
        });
        if answers { Self::Uv(uv) } else { Self::Pip }
    }

    fn name(&self) -> &'static str {
        match self {
            Self::Uv(_) => "uv",
            Self::Pip => "pip (uv is not on PATH)",
        }
    }

    fn install(
        &self,
        python: &Python,
        env: &Path,
        requirements: &[String],
        offline: bool,
        wanted: &HarnessRequirement,
        io: &Io,
    ) -> Result<(), Error> {
        let env_text = env.display().to_string();
        let env_python = env.join("bin/python").display().to_string();
        let (tool, steps): (&'static str, Vec<(String, Vec<String>)>) = match self {
            Self::Uv(uv) => {
                let mut install: Vec<String> = ["pip", "install", "--quiet", "--python"]
                    .map(String::from)
                    .to_vec();
                install.push(env_python);
                if offline {
                    install.push("--offline".into());
                }
                install.extend(requirements.iter().cloned());
                (
                    "uv",
                    vec![
                        (
                            uv.clone(),
                            ["venv", "--quiet", "--python", &python.exe, &env_text]
                                .map(String::from)
                                .to_vec(),
                        ),
                        (uv.clone(), install),
                    ],
                )
            }
            Self::Pip => {
                // Not `--quiet`: it hides the warnings that say the index
                // could not be reached.
                let mut install: Vec<String> =
                    ["-m", "pip", "install", "--disable-pip-version-check"]
                        .map(String::from)
                        .to_vec();
                if offline {
                    install.push("--no-index".into());
                }
                install.extend(requirements.iter().cloned());
                (
                    "pip",
                    vec![
                        (
                            python.exe.clone(),
                            ["-m", "venv", &env_text].map(String::from).to_vec(),
                        ),
                        (env_python, install),
                    ],
                )
            }
        };
        let runtime = io.handle().map_err(|source| Error::Io {
            path: env_text.clone(),
            source,
        })?;
        for (program, args) in steps {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = runtime
                .block_on(crate::external::output(&program, &args, INSTALL_LIMIT))
                .map_err(|e| Error::InstallFailed {
                    requirement: wanted.requirement(),
                    tool,
                    tail: e.to_string(),
                })?;
            if !out.status.success() {
                return Err(failure(wanted, tool, &out.stderr));
            }
        }
        Ok(())
    }
}

/// Why an install failed, from what the installer printed: the index out
/// of reach is said as such. (pure)
fn failure(wanted: &HarnessRequirement, tool: &'static str, stderr: &str) -> Error {
    const UNREACHABLE: &[&str] = &[
        "Failed to fetch",
        "error sending request",
        "dns error",
        "Connection refused",
        "NewConnectionError",
        "Failed to establish a new connection",
        "Temporary failure in name resolution",
        "Network is unreachable",
        "Could not fetch URL",
        "network connectivity is disabled",
    ];
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if let Some(line) = lines
        .iter()
        .find(|l| UNREACHABLE.iter().any(|u| l.contains(u)))
    {
        return Error::IndexUnreachable {
            requirement: wanted.requirement(),
            tool,
            line: (*line).to_owned(),
        };
    }
    let tail = lines[lines.len().saturating_sub(8)..].join("\n");
    Error::InstallFailed {
        requirement: wanted.requirement(),
        tool,
        tail: if tail.is_empty() {
            "it printed nothing".into()
        } else {
            tail
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guidellm(version: &str) -> HarnessRequirement {
        HarnessRequirement {
            package: "guidellm",
            program: "guidellm",
            version: version.into(),
        }
    }

    fn python(version: &str, platform: &str) -> Python {
        Python {
            exe: "/usr/bin/python3".into(),
            version: version.into(),
            platform: platform.into(),
        }
    }

    #[test]
    fn the_address_is_what_defines_the_environment() {
        let here = address(&guidellm("0.5.3"), &python("3.11", "linux-x86_64"));
        assert_eq!(here.len(), 32 + "-guidellm-0.5.3".len());
        assert!(here.ends_with("-guidellm-0.5.3"), "{here}");
        assert_eq!(
            here,
            address(
                &guidellm("0.5.3"),
                &Python {
                    exe: "/elsewhere/python".into(),
                    ..python("3.11", "linux-x86_64")
                }
            ),
            "where the interpreter lives does not define it"
        );
        for other in [
            address(&guidellm("0.7.2"), &python("3.11", "linux-x86_64")),
            address(&guidellm("0.5.3"), &python("3.12", "linux-x86_64")),
            address(&guidellm("0.5.3"), &python("3.11", "linux-aarch64")),
        ] {
            assert_ne!(here, other);
        }
        assert_eq!(
            program_argv(Path::new("/envs/a"), "guidellm"),
            ["/envs/a/bin/python", "/envs/a/bin/guidellm"]
        );
    }

    #[test]
    fn the_envs_dir_is_the_override_else_the_users_cache() {
        let dir = |a, b, c| envs_dir_from(a, b, c);
        assert_eq!(
            dir(Some("/e"), Some("/x"), Some("/h")),
            Some(PathBuf::from("/e"))
        );
        assert_eq!(
            dir(Some(""), Some("/x"), Some("/h")),
            Some(PathBuf::from("/x/perfpipe/envs"))
        );
        assert_eq!(
            dir(None, None, Some("/h")),
            Some(PathBuf::from("/h/.cache/perfpipe/envs"))
        );
        assert_eq!(dir(None, None, None), None);
    }

    #[test]
    fn an_index_out_of_reach_is_said_as_such() {
        let uv =
            "error: Failed to fetch: `https://pypi.org/simple/guidellm/`\n  Caused by: dns error";
        assert!(matches!(
            failure(&guidellm("0.5.3"), "uv", uv),
            Error::IndexUnreachable { ref line, .. } if line.starts_with("error: Failed to fetch")
        ));
        let missing = "  × No solution found when resolving dependencies:\n  ╰─▶ Because there is no version of guidellm==9.9.9";
        match failure(&guidellm("9.9.9"), "uv", missing) {
            Error::InstallFailed { tail, .. } => {
                assert!(tail.contains("no version of guidellm==9.9.9"))
            }
            other => panic!("{other:?}"),
        }
        assert!(!failure(&guidellm("0.5.3"), "pip", "").is_usage());
    }

    #[test]
    #[expect(
        clippy::disallowed_methods,
        reason = "the test lays out what a user's directory holds"
    )]
    fn a_directory_at_the_address_without_its_marker_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let (wanted, py) = (guidellm("0.5.3"), python("3.11", "linux-x86_64"));
        assert!(look(dir.path(), &wanted, &py).unwrap().is_none());
        let prefix = dir.path().join(address(&wanted, &py));
        std::fs::create_dir_all(
            prefix.join("lib/python3.11/site-packages/guidellm-0.5.3.dist-info"),
        )
        .unwrap();
        std::fs::write(
            prefix.join("lib/python3.11/site-packages/guidellm-0.5.3.dist-info/METADATA"),
            "Name: guidellm\nVersion: 0.5.3\n",
        )
        .unwrap();
        assert!(matches!(
            look(dir.path(), &wanted, &py),
            Err(Error::NotPerfpipes { .. })
        ));
        std::fs::write(prefix.join(MARKER), definition("guidellm==0.5.3", &py)).unwrap();
        let env = look(dir.path(), &wanted, &py).unwrap().unwrap();
        assert_eq!(env.packages, [("guidellm".to_owned(), "0.5.3".to_owned())]);
        assert_eq!(
            env.locked().get("packages").map(String::as_str),
            Some("guidellm==0.5.3")
        );
    }
}
