//! Entering the project: a command run anywhere inside a project works at
//! its root (`crate::project`), with the paths given on its command line
//! still meaning what they meant where it was typed, and the settings of
//! `perfpipe.toml` filled in where the command line and the environment
//! say nothing (command line > environment > project > user).

use std::path::PathBuf;

use super::args::{
    Command, ContainerArg, ExperimentArgs, RuntimeArg, RuntimeOpt, SlurmArgs, StoreArg,
    StoreCommand,
};
use super::cache::CacheCommand;
use crate::exec::slurm::{ContainerMode, SlurmOptions};
use crate::facts::Runtime;
use crate::ops::Error;
use crate::project::{self, Project};

/// Finds the project around the current directory, rewrites `command`'s
/// paths relative to its root, fills in its settings and makes the root the
/// current directory. Commands outside any project (`bench`, `completions`,
/// `man`) are left as they are.
pub(super) fn enter(command: &mut Command) -> Result<(), Error> {
    if matches!(
        command,
        Command::Bench(_) | Command::Completions(_) | Command::Man(_) | Command::SimEngine { .. }
    ) {
        return Ok(());
    }
    let cwd = std::env::current_dir().map_err(|source| {
        Error::Project(project::Error::Read {
            path: ".".into(),
            source,
        })
    })?;
    let project =
        project::discover(&cwd, project::user_config_dir().as_deref()).map_err(Error::Project)?;
    apply(command, &project);
    std::env::set_current_dir(&project.root).map_err(|source| {
        Error::Project(project::Error::Read {
            path: project.root.display().to_string(),
            source,
        })
    })
}

fn apply(command: &mut Command, project: &Project) {
    let path = |p: &mut PathBuf| *p = project.from_cwd(p);
    let optional = |p: &mut Option<PathBuf>| {
        if let Some(p) = p {
            *p = project.from_cwd(p);
        }
    };
    let experiment = |e: &mut ExperimentArgs| {
        path(&mut e.experiment);
        optional(&mut e.lockfile);
    };
    let store = |s: &mut StoreArg| {
        optional(&mut s.dir);
        if s.dir.is_none() {
            s.dir = project.config.store.clone();
        }
    };
    let runtime = |r: &mut Option<RuntimeArg>| {
        if r.is_none() {
            *r = project.config.runtime.map(runtime_arg);
        }
    };
    let runtime_opt = |r: &mut RuntimeOpt| runtime(&mut r.runtime);
    match command {
        Command::Run(a) => {
            experiment(&mut a.experiment);
            runtime_opt(&mut a.runtime);
            store(&mut a.store);
            optional(&mut a.report);
            a.substitute.or_user(&project.user);
            slurm(&mut a.slurm, &project.config.executor.slurm);
        }
        Command::Plan(a) => {
            experiment(&mut a.experiment);
            runtime_opt(&mut a.runtime);
            store(&mut a.store);
            a.substitute.or_user(&project.user);
        }
        Command::Report(a) => {
            experiment(&mut a.experiment);
            runtime_opt(&mut a.runtime);
            store(&mut a.store);
            optional(&mut a.out);
        }
        Command::Verify(a) => {
            experiment(&mut a.experiment);
            runtime_opt(&mut a.runtime);
            store(&mut a.store);
        }
        Command::Lock(a) => experiment(&mut a.experiment),
        Command::Fetch(a) => {
            path(&mut a.experiment);
            optional(&mut a.lockfile);
            runtime(&mut a.runtime);
        }
        Command::Explain(a) => {
            experiment(&mut a.experiment);
            runtime_opt(&mut a.runtime);
            store(&mut a.store);
        }
        Command::Diff(a) => {
            path(&mut a.before);
            path(&mut a.after);
            store(&mut a.store);
            runtime(&mut a.runtime);
        }
        Command::Init(a) => {
            path(&mut a.from_page);
            optional(&mut a.output);
        }
        Command::Import(a) => {
            experiment(&mut a.experiment);
            store(&mut a.store);
            optional(&mut a.from);
        }
        Command::Realise(a) => {
            // A launch key names no file; a material file is a path.
            if crate::launch::LaunchKey::parse(&a.launch).is_none() {
                let mut launch = PathBuf::from(&a.launch);
                path(&mut launch);
                a.launch = launch.display().to_string();
            }
            store(&mut a.store);
        }
        Command::Store(a) => match &mut a.command {
            StoreCommand::Verify(a) => store(&mut a.store),
            StoreCommand::Gc(a) => {
                a.roots.iter_mut().for_each(path);
                store(&mut a.store);
            }
            StoreCommand::Path(a) => {
                experiment(&mut a.experiment);
                runtime_opt(&mut a.runtime);
                store(&mut a.store);
            }
        },
        Command::Cache(a) => match &mut a.command {
            CacheCommand::Keygen(_) => {}
            CacheCommand::Push(a) => {
                a.experiments.iter_mut().for_each(path);
                runtime_opt(&mut a.runtime);
                store(&mut a.store);
                optional(&mut a.secret_key);
                if a.to.is_none() {
                    a.to = project.user.cache.push_to.clone();
                }
                if a.secret_key.is_none() {
                    a.secret_key = project.user.cache.secret_key_file.clone();
                }
                a.credentials = project.user.credentials.clone();
            }
            CacheCommand::Sign(a) => {
                a.experiments.iter_mut().for_each(path);
                runtime_opt(&mut a.runtime);
                store(&mut a.store);
                path(&mut a.key);
                if a.to.is_none() {
                    a.to = project.user.cache.push_to.clone();
                }
                if a.trusted_keys.is_empty() {
                    a.trusted_keys = project.user.trust.public_keys.clone();
                }
                a.credentials = project.user.credentials.clone();
            }
        },
        Command::Bench(_)
        | Command::Completions(_)
        | Command::Man(_)
        | Command::SimEngine { .. } => {}
    }
}

fn runtime_arg(runtime: Runtime) -> RuntimeArg {
    match runtime {
        Runtime::Docker => RuntimeArg::Docker,
        Runtime::Local => RuntimeArg::Local,
        Runtime::Sim => RuntimeArg::Sim,
    }
}

/// `[executor.slurm]` where the command line says nothing; its extra
/// `sbatch` arguments come first, so the command line's win.
fn slurm(args: &mut SlurmArgs, file: &SlurmOptions) {
    let fill = |arg: &mut Option<String>, file: &Option<String>| {
        if arg.is_none() {
            arg.clone_from(file);
        }
    };
    fill(&mut args.partition, &file.partition);
    fill(&mut args.account, &file.account);
    fill(&mut args.qos, &file.qos);
    fill(&mut args.time_limit, &file.time_limit);
    args.sbatch_args = file
        .sbatch_args
        .iter()
        .cloned()
        .chain(std::mem::take(&mut args.sbatch_args))
        .collect();
    args.container.get_or_insert(match file.container {
        ContainerMode::Docker => ContainerArg::Docker,
        ContainerMode::Pyxis => ContainerArg::Pyxis,
    });
    args.retries = args.retries.or(file.retries);
    args.file = file.clone();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_wins_over_the_file_and_sbatch_args_add_up() {
        let file = SlurmOptions {
            partition: Some("gpu".into()),
            account: Some("team".into()),
            sbatch_args: vec!["--mem=0".into()],
            container: ContainerMode::Pyxis,
            retries: Some(5),
            ..Default::default()
        };
        let mut args = SlurmArgs {
            partition: Some("debug".into()),
            sbatch_args: vec!["--constraint=h100".into()],
            ..Default::default()
        };
        slurm(&mut args, &file);
        assert_eq!(args.partition.as_deref(), Some("debug"));
        assert_eq!(args.account.as_deref(), Some("team"));
        assert_eq!(args.sbatch_args, ["--mem=0", "--constraint=h100"]);
        assert_eq!(args.container, Some(ContainerArg::Pyxis));
        assert_eq!(args.retries, Some(5));
    }
}
