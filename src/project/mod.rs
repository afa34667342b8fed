//! The project a command works in: its root, found as cargo and git find
//! theirs (the nearest ancestor of the current directory with a
//! `perfpipe.toml`, else with an `experiments/` directory, else the current
//! directory), and its settings (`perfpipe.toml` at the root, the user's
//! `config.toml`). (reads files)

mod config;

use std::path::{Path, PathBuf};

pub use config::{
    CacheConfig, ConfigError, Personal, ProjectConfig, Trust, UserConfig, parse_project, parse_user,
};

/// The project's settings file, at its root.
pub const PROJECT_FILE: &str = "perfpipe.toml";

#[derive(Debug, Clone, Default)]
pub struct Project {
    pub root: PathBuf,
    /// The current directory relative to the root (empty at the root).
    pub within: PathBuf,
    pub config: ProjectConfig,
    pub user: UserConfig,
}

#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum Error {
    #[error(transparent)]
    #[diagnostic(transparent)]
    Config(Box<ConfigError>),
    #[error("cannot read `{path}`")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// The project around `cwd`, with its settings and those of the user's
/// `config_dir` (`$XDG_CONFIG_HOME`, else `~/.config`) when there is one.
pub fn discover(cwd: &Path, config_dir: Option<&Path>) -> Result<Project, Error> {
    let root = find_root(cwd);
    let within = cwd.strip_prefix(&root).unwrap_or(Path::new("")).to_owned();
    let config = match read(&root.join(PROJECT_FILE))? {
        Some((name, text)) => parse_project(&name, &text).map_err(Error::Config)?,
        None => ProjectConfig::default(),
    };
    let user_file = config_dir.map(|d| d.join("perfpipe").join("config.toml"));
    let user = match user_file.map(|f| read(&f)).transpose()?.flatten() {
        Some((name, text)) => parse_user(&name, &text).map_err(Error::Config)?,
        None => UserConfig::default(),
    };
    Ok(Project {
        root,
        within,
        config,
        user,
    })
}

/// The nearest ancestor of `cwd` (itself included) holding a
/// `perfpipe.toml`, else an `experiments/` directory, else `cwd`.
pub fn find_root(cwd: &Path) -> PathBuf {
    let with = |found: fn(&Path) -> bool| cwd.ancestors().find(|dir| found(dir));
    with(|d| d.join(PROJECT_FILE).is_file())
        .or_else(|| with(|d| d.join("experiments").is_dir()))
        .unwrap_or(cwd)
        .to_owned()
}

/// The user's configuration directory: `$XDG_CONFIG_HOME`, else `~/.config`.
pub fn user_config_dir() -> Option<PathBuf> {
    let set = |name| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    set("XDG_CONFIG_HOME")
        .filter(|d| d.is_absolute())
        .or_else(|| set("HOME").map(|home| home.join(".config")))
}

impl Project {
    /// `path` as given on the command line (relative to the current
    /// directory), relative to the root instead.
    pub fn from_cwd(&self, path: &Path) -> PathBuf {
        if path.is_absolute() {
            path.to_owned()
        } else {
            self.within.join(path)
        }
    }
}

/// A file's path (as shown) and text, or `None` when it does not exist.
fn read(path: &Path) -> Result<Option<(String, String)>, Error> {
    match fs_err::read_to_string(path) {
        Ok(text) => Ok(Some((path.display().to_string(), text))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(Error::Read {
            path: path.display().to_string(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_is_the_nearest_perfpipe_toml_else_experiments_dir() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().join("top");
        let inner = top.join("studies/a/experiments/deep");
        std::fs::create_dir_all(&inner).unwrap();
        assert_eq!(
            find_root(&inner),
            top.join("studies/a"),
            "experiments/ marks a root"
        );
        std::fs::File::create_new(top.join(PROJECT_FILE)).unwrap();
        assert_eq!(
            find_root(&inner),
            top,
            "perfpipe.toml wins over a nearer experiments/"
        );
        let project = discover(&inner, None).unwrap();
        assert_eq!(project.within, Path::new("studies/a/experiments/deep"));
        assert_eq!(
            project.from_cwd(Path::new("x.kdl")),
            Path::new("studies/a/experiments/deep/x.kdl")
        );
        assert_eq!(
            project.from_cwd(Path::new("/abs.kdl")),
            Path::new("/abs.kdl")
        );
        let lone = dir.path().join("lone");
        std::fs::create_dir_all(&lone).unwrap();
        assert_eq!(
            find_root(&lone),
            lone,
            "without either, the current directory"
        );
    }
}
