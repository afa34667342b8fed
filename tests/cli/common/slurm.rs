//! A real two-node Slurm cluster on this machine for a test: its own
//! `munged` (key and socket in a temporary directory), `slurmctld -D` and
//! one `slurmd -D -N NODE` per node (each its own `Port=` on its `NodeName`
//! line, `%n` in its spool, pid and log files) with a generated
//! `slurm.conf` on free ports; each node of 8 stand-in GPUs (character
//! devices made with `mknod`), of a type of its own (`GPU_TYPES`). Nothing of the machine's own
//! configuration is read or touched: every client gets `SLURM_CONF`.
//! Torn down on drop, a failing test too.
//!
//! Clusters run side by side (tests in parallel, two test processes): each
//! has a name of its own (`pp<pid>c<n>`: the test process and a count), its
//! own directory (state, spool, munge socket, logs) and ports no other
//! cluster of the process was given, taken below the kernel's ephemeral
//! range, so that no client's connection takes one before its daemon binds
//! it. A test process killed before its clusters' drop leaves their daemons
//! to die with it (`PR_SET_PDEATHSIG`); the next cluster started removes
//! what is left of them: the processes naming their directory, and the
//! directory, proven a test cluster's by its `owner` file.
//!
//! It needs root (`mknod`, `slurmd`) and Debian's `slurm-wlm` and `munge`
//! (`scripts/test-deps.sh`). A cluster that cannot start fails the test
//! unless `PERFPIPE_TEST_SKIP=slurm` skips it (see `common::cannot_test`).

use std::collections::BTreeSet;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// GPUs each node declares.
pub const GPUS: u32 = 8;

/// Nodes of the cluster.
pub const NODES: usize = 2;

/// The GPU type of each node (`Gres=gpu:TYPE:8`), in order.
pub const GPU_TYPES: [&str; NODES] = ["a100", "h100"];

/// Where slurmctld is in [`Cluster`]'s daemons (munged, slurmctld, a slurmd per node).
const CONTROLLER: usize = 1;

const BINARIES: &[&str] = &[
    "/usr/sbin/munged",
    "/usr/sbin/slurmctld",
    "/usr/sbin/slurmd",
    "/usr/bin/sbatch",
];

/// What a cluster's directory is named after (`pp-slurm…` in the
/// temporary directory).
pub const DIR_PREFIX: &str = "pp-slurm";

/// The file in a cluster's directory naming the test process that made it
/// (`PID START`, its start time in clock ticks after boot, so that a pid
/// used again is not taken for it).
pub const OWNER: &str = "owner";

/// Clusters this test process started, for their names.
static STARTED: AtomicU32 = AtomicU32::new(0);

pub struct Cluster {
    dir: tempfile::TempDir,
    daemons: Vec<Child>,
    /// The cluster's name, which its node names begin with: `pp<pid>c<n>`,
    /// no other live cluster's.
    name: String,
}

impl Cluster {
    /// A running cluster with its node idle, or `None` when this machine
    /// cannot run one and `PERFPIPE_TEST_SKIP` says to skip it.
    pub fn start() -> Option<Self> {
        // SAFETY: a plain syscall.
        let root = unsafe { libc::geteuid() } == 0;
        let missing: Vec<&str> = BINARIES
            .iter()
            .copied()
            .filter(|b| !Path::new(b).exists())
            .collect();
        let why_not = if !root {
            Some("it needs root (mknod, slurmd)".to_owned())
        } else if !missing.is_empty() {
            Some(format!(
                "{} missing (scripts/test-deps.sh installs slurm-wlm and munge)",
                missing.join(", ")
            ))
        } else {
            None
        };
        if let Some(why) = why_not {
            super::cannot_test("slurm", &format!("no Slurm test cluster: {why}"));
            return None;
        }
        remove_clusters_of_dead_tests();
        let dir = tempfile::Builder::new()
            .prefix(DIR_PREFIX)
            .tempdir()
            .expect("temp dir");
        let me = std::process::id();
        std::fs::write(
            dir.path().join(OWNER),
            format!(
                "{me} {}",
                start_time(me).expect("this process's start time")
            ),
        )
        .unwrap();
        let mut cluster = Self {
            dir,
            daemons: Vec::new(),
            name: format!("pp{me}c{}", STARTED.fetch_add(1, Ordering::Relaxed)),
        };
        cluster.boot();
        Some(cluster)
    }

    /// The cluster's name (`ClusterName`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its directory: state, spool, munge socket, logs.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// The names of the nodes, in order.
    pub fn nodes(&self) -> Vec<String> {
        (1..=NODES).map(|n| format!("{}n{n}", self.name)).collect()
    }

    /// `SLURM_CONF` for every Slurm client talking to this cluster.
    pub fn conf(&self) -> PathBuf {
        self.path("slurm.conf")
    }

    /// A Slurm client (`sbatch`, `squeue`…) of this cluster.
    pub fn client(&self, program: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(program);
        cmd.args(args).env("SLURM_CONF", self.conf());
        cmd
    }

    /// Runs a client to success and returns what it printed.
    pub fn ask(&self, program: &str, args: &[&str]) -> String {
        let out = self.client(program, args).output().expect("runs");
        assert!(
            out.status.success(),
            "`{program} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until no job of this cluster is queued or running.
    pub fn wait_until_empty(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        while !self.ask("squeue", &["-h", "-o", "%i"]).trim().is_empty() {
            assert!(
                Instant::now() < deadline,
                "jobs still queued after {limit:?}:\n{}",
                self.ask("squeue", &[])
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Stops slurmctld as an admin's restart or a crash would (SIGTERM); the
    /// node and its jobs go on. [`Cluster::start_controller`] brings it back.
    pub fn stop_controller(&mut self) {
        let ctld = &mut self.daemons[CONTROLLER];
        // SAFETY: a plain syscall on a child we started.
        unsafe {
            libc::kill(ctld.id() as i32, libc::SIGTERM);
        }
        ctld.wait().unwrap();
    }

    /// Starts slurmctld again from its saved state (the queue, the jobs), and
    /// waits until it answers.
    pub fn start_controller(&mut self) {
        let log = std::fs::File::create(self.path("log/slurmctld-again.out")).unwrap();
        let mut slurmctld = Command::new("/usr/sbin/slurmctld");
        dies_with_its_test(&mut slurmctld);
        self.daemons[CONTROLLER] = slurmctld
            .args(["-D", "-i"])
            .env("SLURM_CONF", self.conf())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("slurmctld starts again");
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self
            .client("squeue", &["-h"])
            .output()
            .unwrap()
            .status
            .success()
        {
            assert!(
                Instant::now() < deadline,
                "slurmctld did not come back: {}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn boot(&mut self) {
        let dir = self.dir.path().to_owned();
        for sub in ["state", "spool", "dev", "log"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        let mut key = vec![0; 1024];
        std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom").unwrap(), &mut key)
            .unwrap();
        std::fs::write(dir.join("munge.key"), key).unwrap();
        set_mode(&dir.join("munge.key"), 0o600);
        let nodes = self.nodes();
        for node in &nodes {
            std::fs::create_dir_all(dir.join("dev").join(node)).unwrap();
            for i in 0..GPUS {
                let dev = dir.join(format!("dev/{node}/gpu{i}"));
                let c = std::ffi::CString::new(dev.to_str().unwrap()).unwrap();
                // SAFETY: a plain syscall; c 1 3 is /dev/null's device number.
                let made =
                    unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
                assert_eq!(made, 0, "mknod {}", dev.display());
            }
        }
        let name = self.name.clone();
        let socket = dir.join("munge.sock");
        let ports = free_ports(1 + NODES);
        let ctld_port = ports[0];
        let host = hostname();
        let d = dir.display();
        // One line per node, each slurmd on a port of its own.
        let node_lines: String = nodes
            .iter()
            .zip(GPU_TYPES)
            .zip(&ports[1..])
            .map(|((node, kind), port)| {
                format!(
                    "NodeName={node} NodeHostname={host} NodeAddr=127.0.0.1 Port={port} CPUs=16 RealMemory=16000 Gres=gpu:{kind}:{GPUS} Feature={kind} State=UNKNOWN\n"
                )
            })
            .collect();
        std::fs::write(
            dir.join("slurm.conf"),
            format!(
                "ClusterName={name}\n\
                 SlurmctldHost={host}(127.0.0.1)\n\
                 SlurmctldPort={ctld_port}\n\
                 SlurmUser=root\n\
                 SlurmdUser=root\n\
                 AuthType=auth/munge\n\
                 CredType=cred/munge\n\
                 AuthInfo=socket={socket}\n\
                 StateSaveLocation={d}/state\n\
                 SlurmdSpoolDir={d}/spool/%n\n\
                 SlurmctldPidFile={d}/slurmctld.pid\n\
                 SlurmdPidFile={d}/slurmd-%n.pid\n\
                 SlurmctldLogFile={d}/log/slurmctld.log\n\
                 SlurmdLogFile={d}/log/slurmd-%n.log\n\
                 ProctrackType=proctrack/pgid\n\
                 TaskPlugin=task/none\n\
                 SelectType=select/cons_tres\n\
                 SelectTypeParameters=CR_Core_Memory\n\
                 SchedulerParameters=bf_interval=1\n\
                 DefMemPerCPU=100\n\
                 AccountingStorageType=accounting_storage/none\n\
                 JobCompType=jobcomp/none\n\
                 MpiDefault=none\n\
                 ReturnToService=2\n\
                 MinJobAge=300\n\
                 KillWait=30\n\
                 MessageTimeout=5\n\
                 GresTypes=gpu\n\
                 SlurmdParameters=config_overrides\n\
                 {node_lines}\
                 PartitionName=test Nodes={name}n[1-{NODES}] Default=YES MaxTime=INFINITE State=UP\n",
                socket = socket.display(),
            ),
        )
        .unwrap();
        let gres: String = nodes
            .iter()
            .zip(GPU_TYPES)
            .map(|(node, kind)| {
                format!(
                    "NodeName={node} Name=gpu Type={kind} File={d}/dev/{node}/gpu[0-{}]\n",
                    GPUS - 1
                )
            })
            .collect();
        std::fs::write(dir.join("gres.conf"), gres).unwrap();
        self.daemon(
            "munged",
            Command::new("/usr/sbin/munged").args([
                "--foreground",
                "--force",
                &format!("--key-file={d}/munge.key"),
                &format!("--socket={}", socket.display()),
                &format!("--pid-file={d}/munged.pid"),
                &format!("--log-file={d}/log/munged.log"),
                &format!("--seed-file={d}/munged.seed"),
            ]),
        );
        wait_for(Duration::from_secs(10), "munged's socket", || {
            socket.exists()
        });
        self.daemon(
            "slurmctld",
            Command::new("/usr/sbin/slurmctld").args(["-D", "-i"]),
        );
        for node in &nodes {
            std::fs::create_dir_all(dir.join("spool").join(node)).unwrap();
            self.daemon(
                &format!("slurmd-{node}"),
                Command::new("/usr/sbin/slurmd").args(["-D", "-N", node]),
            );
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let state = self
                .client("sinfo", &["-h", "-N", "-o", "%T"])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
                .unwrap_or_default();
            if state.lines().filter(|l| *l == "idle").count() == NODES {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the Slurm test nodes never became idle (states `{state}`); logs:\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn daemon(&mut self, name: &str, cmd: &mut Command) {
        let log = std::fs::File::create(self.path(&format!("log/{name}.out"))).unwrap();
        dies_with_its_test(cmd);
        let child = cmd
            .env("SLURM_CONF", self.conf())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        self.daemons.push(child);
    }

    /// The daemons' logs, for a failure message.
    pub fn logs(&self) -> String {
        let mut text = String::new();
        for entry in std::fs::read_dir(self.path("log"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let body = std::fs::read_to_string(entry.path()).unwrap_or_default();
            let tail: Vec<&str> = body.lines().rev().take(20).collect();
            text.push_str(&format!("== {} ==\n", entry.path().display()));
            for line in tail.into_iter().rev() {
                text.push_str(line);
                text.push('\n');
            }
        }
        text
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Nothing of a test's cluster is kept, so nothing waits for a
        // graceful stop (slurmd waits for its jobs' steps, seconds): its
        // daemons, its jobs' processes and what they started, each naming
        // this cluster's directory (`SLURM_CONF`), are killed at once.
        for daemon in &mut self.daemons {
            let _ = daemon.kill();
            let _ = daemon.wait();
        }
        kill_every_process_naming(self.dir.path());
        // The directory goes with the `TempDir`, once nothing writes in it.
    }
}

/// Kills every process whose command line or environment names `dir` (a
/// cluster's daemons, its jobs' processes and what they started, each
/// given `SLURM_CONF`), this one excepted.
fn kill_every_process_naming(dir: &Path) {
    // A process may start another as they are killed: until none is left.
    let needle = dir.to_string_lossy().into_owned();
    for _ in 0..10 {
        let left: Vec<u32> = super::live_processes(&needle)
            .into_iter()
            .filter(|pid| *pid != std::process::id())
            .collect();
        if left.is_empty() {
            break;
        }
        for pid in left {
            // SAFETY: a plain syscall.
            unsafe {
                libc::kill(pid as i32, libc::SIGKILL);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Makes the daemon `cmd` starts get SIGKILL when the thread that starts it
/// (the test's, which drops the cluster) ends, as it does when the test
/// process is killed, so that no daemon outlives its test.
fn dies_with_its_test(cmd: &mut Command) {
    // SAFETY: prctl is async-signal-safe, and nothing else runs between
    // fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// When process `pid` started, in clock ticks after boot (`/proc/PID/stat`'s
/// 22nd field); `None` when there is no such process.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command's `(name)`, which may hold spaces: state is field 3.
    let (_, rest) = stat.rsplit_once(") ")?;
    rest.split_whitespace().nth(22 - 3)?.parse().ok()
}

/// Whether the cluster directory `dir` is one a test process that has
/// ended made: its `owner` names a process no longer alive (or a pid now
/// another process's). A directory without a readable `owner` is not
/// proven a test cluster's, and is left alone.
fn owner_has_ended(dir: &Path) -> bool {
    let Ok(owner) = std::fs::read_to_string(dir.join(OWNER)) else {
        return false;
    };
    let Some((pid, started)) = owner.trim().split_once(' ') else {
        return false;
    };
    let (Ok(pid), Ok(started)) = (pid.parse::<u32>(), started.parse::<u64>()) else {
        return false;
    };
    !(super::pid_alive(pid) && start_time(pid) == Some(started))
}

/// Removes what the clusters of test processes that ended without dropping
/// them (killed, aborted) left: their processes (jobs and their children,
/// which outlive the daemons) and their directories.
fn remove_clusters_of_dead_tests() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let dir = entry.path();
        let ours = entry.file_name().to_string_lossy().starts_with(DIR_PREFIX)
            && entry.file_type().is_ok_and(|t| t.is_dir());
        if ours && owner_has_ended(&dir) {
            kill_every_process_naming(&dir);
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

/// Ports handed to this process's clusters: none is given twice, though
/// each is free again until its daemon binds it.
static PORTS_GIVEN: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// `n` loopback ports nothing listens on, none given to another cluster of
/// this process, all below the kernel's ephemeral range (where `connect`
/// takes its local ports and `bind` to port 0 its own), so that nothing but
/// another explicit bind can take one before its daemon does.
fn free_ports(n: usize) -> Vec<u16> {
    let ephemeral_start = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    // Ports from 10000 (above the usual services) up to the ephemeral range,
    // from a starting point of this process's own.
    let low = 10_000.min(ephemeral_start.saturating_sub(1024));
    let span = u32::from(ephemeral_start - low);
    let mut given = PORTS_GIVEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut next = std::process::id()
        .wrapping_mul(7919)
        .wrapping_add(given.len() as u32)
        % span;
    let mut ports = Vec::with_capacity(n);
    for _ in 0..span {
        let port = low + next as u16;
        next = (next + 1) % span;
        if given.contains(&port) {
            continue;
        }
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            given.insert(port);
            ports.push(port);
            if ports.len() == n {
                return ports;
            }
        }
    }
    panic!("no {n} free loopback ports below {ephemeral_start}");
}

fn wait_for(limit: Duration, what: &str, ready: impl Fn() -> bool) {
    let deadline = Instant::now() + limit;
    while !ready() {
        assert!(Instant::now() < deadline, "{what} never appeared");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn hostname() -> String {
    let out: Output = Command::new("hostname").arg("-s").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}
