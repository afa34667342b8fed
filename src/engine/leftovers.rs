//! Launch records: every engine perfpipe starts is written down (pid,
//! process group, container) for the life of the perfpipe that started it,
//! so that the next perfpipe stops what a killed one left behind. SIGKILL
//! skips every destructor, and a container outlives its `docker run` client.
//!
//! ```text
//! <dir>/proc-<pid>-<random>/            one perfpipe's records, an OwnedDir
//! <dir>/proc-<pid>-<random>/<n>.json    one launch of it, replaced by rename
//! <dir>/order.lock                      the directories' order lock
//! ```
//!
//! The launches of a dead owner are leftovers. (fs, signals, `docker rm`)

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::atomic_write::{AtomicWrite, Temp};
use crate::external;
use crate::filelock::{self, OwnedDir, Owner};

/// What is known of one launch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launch {
    /// The engine (or `docker run` client) and its process group; 0 before it started.
    pub pid: i32,
    /// When the pid started (`/proc/<pid>/stat`), so a reused pid is never killed.
    pub started: u64,
    pub container: Option<String>,
    /// What was launched, for messages.
    pub program: String,
}

/// This process's record directory, held for its life.
pub struct Registry {
    dir: OwnedDir,
    next: AtomicUsize,
}

/// One recorded launch, removed when dropped (the engine was stopped).
pub struct Recorded {
    path: PathBuf,
}

/// A leftover that was stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stopped {
    pub launch: Launch,
    /// Processes killed (0 when they had already gone).
    pub processes: usize,
}

const PREFIX: &str = "proc-";
const ORDER: &str = "order.lock";

/// Where launch records live: beside the GPU locks, one directory per machine.
pub fn dir() -> PathBuf {
    super::gpus::lock_dir().join("launches")
}

impl Registry {
    /// Claims a record directory for this process under `root`.
    pub fn open(root: &Path) -> std::io::Result<Self> {
        Ok(Self {
            dir: OwnedDir::create(root, &root.join(ORDER), PREFIX)?,
            next: AtomicUsize::new(0),
        })
    }

    /// Records a launch about to happen (its container name is known before
    /// it starts; its pid is added by [`Recorded::started`]).
    pub fn record(&self, launch: &Launch) -> std::io::Result<Recorded> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let recorded = Recorded {
            path: self.dir.path().join(format!("{n}.json")),
        };
        recorded.write(launch)?;
        Ok(recorded)
    }
}

impl Recorded {
    /// The launch started as `pid`.
    pub fn started(&self, mut launch: Launch, pid: i32) -> std::io::Result<()> {
        launch.pid = pid;
        launch.started = start_ticks(pid).unwrap_or(0);
        self.write(&launch)
    }

    fn write(&self, launch: &Launch) -> std::io::Result<()> {
        let json = serde_json::to_vec(launch)?;
        // The registry's directory goes with its process: never made again.
        AtomicWrite::new()
            .temp(Temp::Prefixed(".launch-"))
            .in_existing_dir()
            .write(&self.path, &json)
    }
}

impl Drop for Recorded {
    fn drop(&mut self) {
        let _ = fs_err::remove_file(&self.path);
    }
}

/// A leftover found and left alone (by `plan`, which stops nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub launch: Launch,
    /// Its processes still alive (a container's processes are dockerd's).
    pub processes: usize,
}

/// The launches of dead perfpipes recorded under `root`, without touching
/// them: what the next `run` will stop.
pub fn find(root: &Path) -> Vec<Found> {
    let Ok(owners) = owners(root) else {
        return Vec::new();
    };
    owners
        .dead
        .into_iter()
        .flat_map(|(_, _, launches)| launches)
        .map(|launch| Found {
            processes: group_members(launch.pid, launch.started).len(),
            launch,
        })
        .collect()
}

/// The record directories under `root`, by whether their owner lives.
struct Owners {
    /// Directory, its owner's lock (held while the directory is removed), launches.
    dead: Vec<(PathBuf, Option<std::fs::File>, Vec<Launch>)>,
    live_containers: Vec<String>,
}

fn owners(root: &Path) -> std::io::Result<Owners> {
    let entries = fs_err::read_dir(root)?;
    let order = filelock::open(&root.join(ORDER))?;
    order.lock()?;
    let mut owners = Owners {
        dead: Vec::new(),
        live_containers: Vec::new(),
    };
    for entry in entries.filter_map(|e| e.ok()) {
        let path = entry.path();
        if !entry.file_name().to_string_lossy().starts_with(PREFIX) || !path.is_dir() {
            continue;
        }
        let launches = launches(&path);
        match filelock::owner(&path) {
            Ok(Owner::Dead(lock)) => owners.dead.push((path, lock, launches)),
            Ok(Owner::Alive) => owners
                .live_containers
                .extend(launches.into_iter().filter_map(|l| l.container)),
            Err(_) => {}
        }
    }
    Ok(owners)
}

/// Stops every launch of a dead perfpipe recorded under `root`, and forgets it.
/// Containers still claimed by a live perfpipe are left alone. Safe at any
/// moment: a dead owner's launches are nobody's.
pub async fn reap(root: &Path) -> Vec<Stopped> {
    let mut stopped = Vec::new();
    let Ok(Owners {
        dead,
        live_containers,
    }) = owners(root)
    else {
        return stopped;
    };
    for (dir, _lock, launches) in dead {
        for launch in launches {
            let mut processes = kill_group(launch.pid, launch.started);
            if let Some(name) = launch
                .container
                .as_ref()
                .filter(|n| !live_containers.contains(n))
            {
                let removed =
                    external::read("docker", &["rm", "--force", name], DOCKER_TIMEOUT).await;
                // `docker rm` prints the name of a container it removed.
                if removed.is_ok_and(|stdout| !stdout.is_empty()) {
                    processes += 1;
                }
            }
            stopped.push(Stopped { launch, processes });
        }
        let _ = filelock::remove_owned(&dir);
    }
    stopped
}

const DOCKER_TIMEOUT: Duration = Duration::from_secs(60);

/// The launches recorded in an owner's directory.
fn launches(dir: &Path) -> Vec<Launch> {
    let Ok(entries) = fs_err::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .filter_map(|e| serde_json::from_str(&fs_err::read_to_string(e.path()).ok()?).ok())
        .collect()
}

/// SIGKILLs the live processes of a recorded launch's group; how many.
fn kill_group(pgid: i32, started: u64) -> usize {
    group_members(pgid, started)
        .into_iter()
        // SAFETY: a plain syscall on a process checked to be one of ours.
        .filter(|&pid| unsafe { libc::kill(pid, libc::SIGKILL) } == 0)
        .count()
}

/// Every live process of group `pgid` that started no earlier than its
/// leader did (`started`); a group id reused since is left alone.
fn group_members(pgid: i32, started: u64) -> Vec<i32> {
    if pgid <= 0 {
        return Vec::new();
    }
    let Ok(procs) = fs_err::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| {
            stat(pid).is_some_and(|s| s.pgid == pgid && s.state != 'Z' && s.started >= started)
        })
        .collect()
}

/// The fields of `/proc/<pid>/stat` this module needs.
struct Stat {
    state: char,
    pgid: i32,
    started: u64,
}

fn stat(pid: i32) -> Option<Stat> {
    parse_stat(&fs_err::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

fn start_ticks(pid: i32) -> Option<u64> {
    stat(pid).map(|s| s.started)
}

/// `pid (comm) state ppid pgrp ... starttime(22) ...`; `comm` may hold spaces
/// and parentheses, so fields are counted from the last `)`.
fn parse_stat(text: &str) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(Stat {
        state: fields.first()?.chars().next()?,
        pgid: fields.get(2)?.parse().ok()?,
        started: fields.get(19)?.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        let line = "4242 (vllm (worker) 1) S 1 4240 4240 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 4 0 987654 1000 200";
        let stat = parse_stat(line).unwrap();
        assert_eq!((stat.state, stat.pgid, stat.started), ('S', 4240, 987654));
        assert!(parse_stat("garbage").is_none());
    }

    #[test]
    fn a_live_owners_launches_are_kept_and_a_dead_ones_are_stopped() {
        let root = tempfile::tempdir().unwrap();
        let owners = || {
            fs_err::read_dir(root.path())
                .unwrap()
                .filter(|e| e.as_ref().unwrap().path().is_dir())
                .count()
        };
        let io = crate::tokio_runtime::Io::new();
        let runtime = io.handle().unwrap();
        // `sleep` in a group of its own stands for an engine.
        #[expect(clippy::disallowed_methods, reason = "a process to reap")]
        let mut sleeper = std::process::Command::new("sleep");
        std::os::unix::process::CommandExt::process_group(&mut sleeper, 0);
        let mut child = sleeper.arg("600").spawn().unwrap();
        let launch = Launch {
            pid: 0,
            started: 0,
            container: None,
            program: "vllm".into(),
        };

        let live = Registry::open(root.path()).unwrap();
        let recorded = live.record(&launch).unwrap();
        recorded.started(launch.clone(), child.id() as i32).unwrap();
        assert!(
            runtime.block_on(reap(root.path())).is_empty(),
            "owner alive"
        );
        drop(recorded);
        drop(live);
        assert_eq!(owners(), 0);

        // What a perfpipe killed by SIGKILL leaves: its records and an unlocked lock file.
        let owner = root.path().join("proc-1-x");
        fs_err::create_dir(&owner).unwrap();
        let recorded = Launch {
            pid: child.id() as i32,
            started: start_ticks(child.id() as i32).unwrap(),
            ..launch
        };
        let json = serde_json::to_string(&recorded).unwrap();
        #[expect(clippy::disallowed_methods, reason = "a record left behind")]
        std::fs::write(owner.join("0.json"), json).unwrap();
        #[expect(clippy::disallowed_methods, reason = "a lock left behind")]
        std::fs::write(owner.join("owner.lock"), "").unwrap();
        let stopped = runtime.block_on(reap(root.path()));
        assert_eq!(
            stopped,
            [Stopped {
                launch: recorded,
                processes: 1
            }]
        );
        assert!(!child.wait().unwrap().success(), "killed");
        assert_eq!(owners(), 0);
        assert!(runtime.block_on(reap(root.path())).is_empty());
    }
}
