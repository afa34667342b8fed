//! Against a real two-node Slurm cluster (`common::slurm`): what perfpipe's
//! Slurm executor relies on, and the executor itself.

use std::time::Duration;

use crate::common::live_processes;
use crate::common::slurm::{self, Cluster};

/// The ports a cluster's `slurm.conf` gives its daemons.
fn ports(cluster: &Cluster) -> Vec<u16> {
    std::fs::read_to_string(cluster.conf())
        .unwrap()
        .split_whitespace()
        .filter_map(|word| {
            let port = word
                .strip_prefix("SlurmctldPort=")
                .or(word.strip_prefix("Port="))?;
            port.parse().ok()
        })
        .collect()
}

/// The nodes a cluster's clients see.
fn nodes_seen(cluster: &Cluster) -> Vec<String> {
    let nodes = cluster.ask("sinfo", &["-h", "-N", "-o", "%N"]);
    let mut nodes: Vec<String> = nodes.lines().map(str::to_owned).collect();
    nodes.sort();
    nodes
}

/// Clusters run side by side (tests in parallel, in one process or two):
/// each has its own name, nodes, ports and directory, and its clients see
/// only its nodes; dropping one leaves nothing of it and the other running.
/// What a test process killed before its clusters' drop left (its `owner`
/// ended) is removed by the next cluster started.
#[test]
fn clusters_side_by_side_share_no_name_port_or_state_and_leave_nothing() {
    // As a killed test process leaves its cluster: the directory, its
    // owner ended, and a process of the cluster (naming the directory in
    // its environment, as every daemon and job does) still alive.
    let left = std::env::temp_dir().join(format!(
        "{}-left-by-{}",
        slurm::DIR_PREFIX,
        std::process::id()
    ));
    std::fs::create_dir_all(&left).unwrap();
    let mut left_running = std::process::Command::new("sleep")
        .arg("600")
        .env("SLURM_CONF", left.join("slurm.conf"))
        .spawn()
        .unwrap();
    // The owner last: from then on any test's cluster may remove it all.
    let mut ended = std::process::Command::new("true").spawn().unwrap();
    ended.wait().unwrap();
    std::fs::write(left.join(slurm::OWNER), format!("{} 1", ended.id())).unwrap();
    let Some(a) = Cluster::start() else {
        let _ = left_running.kill();
        let _ = left_running.wait();
        let _ = std::fs::remove_dir_all(&left);
        return;
    };
    let needle = left.to_string_lossy().into_owned();
    assert!(
        live_processes(&needle).is_empty(),
        "a leftover process lives"
    );
    assert!(!left.exists(), "{} is left", left.display());
    let killed = left_running.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&killed),
        Some(libc::SIGKILL)
    );

    let b = Cluster::start().expect("a second cluster");
    assert_ne!(a.name(), b.name());
    assert_ne!(a.dir(), b.dir());
    let (a_nodes, b_nodes) = (a.nodes(), b.nodes());
    assert!(
        a_nodes.iter().all(|n| !b_nodes.contains(n)),
        "{a_nodes:?} {b_nodes:?}"
    );
    let (a_ports, b_ports) = (ports(&a), ports(&b));
    assert_eq!(a_ports.len(), 1 + slurm::NODES, "{a_ports:?}");
    assert!(
        a_ports.iter().all(|p| !b_ports.contains(p)),
        "{a_ports:?} {b_ports:?}"
    );
    assert_eq!(nodes_seen(&a), a_nodes);
    assert_eq!(nodes_seen(&b), b_nodes);

    let a_dir = a.dir().to_owned();
    drop(a);
    let needle = a_dir.to_string_lossy().into_owned();
    assert!(
        live_processes(&needle).is_empty(),
        "a process of a dropped cluster lives"
    );
    assert!(!a_dir.exists(), "{} is left", a_dir.display());
    assert_eq!(nodes_seen(&b), b_nodes, "the other cluster runs on");
}

#[test]
fn slurm_grants_disjoint_gpus_through_cuda_visible_devices() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    // Each job holds its GPUs until both have written theirs (at most 30
    // s): the two run at once however loaded the machine, with no sleep.
    let script = cluster.path("devices.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$CUDA_VISIBLE_DEVICES\" > \"$1\"\n\
             for _ in $(seq 300); do [ -s {first} ] && [ -s {second} ] && exit 0; sleep 0.1; done\n",
            first = cluster.path("first").display(),
            second = cluster.path("second").display(),
        ),
    )
    .unwrap();
    // Both on one node: its GPUs, shared between them.
    let node = format!("--nodelist={}", cluster.nodes()[0]);
    let submit = |out: &str| {
        let out = cluster.path(out);
        cluster
            .ask(
                "sbatch",
                &[
                    "--parsable",
                    "--gres=gpu:4",
                    &node,
                    "--output=/dev/null",
                    script.to_str().unwrap(),
                    out.to_str().unwrap(),
                ],
            )
            .trim()
            .to_owned()
    };
    let (first, second) = (submit("first"), submit("second"));
    assert!(
        first.parse::<u32>().is_ok(),
        "sbatch --parsable printed `{first}`"
    );
    assert_ne!(first, second);
    cluster.wait_until_empty(Duration::from_secs(30));
    let read = |name: &str| std::fs::read_to_string(cluster.path(name)).unwrap();
    assert_eq!(read("first").trim(), "0,1,2,3", "{}", cluster.logs());
    assert_eq!(read("second").trim(), "4,5,6,7");
}

/// A value of a Slurm option that is not a name (or a time limit) is
/// refused before anything is planned or submitted: a flag by its name, a
/// value of `perfpipe.toml` at its line. No value can become a line of a
/// job's script (`script::tests` checks what reaches `sbatch`).
#[test]
fn a_slurm_option_that_could_inject_a_line_is_refused_naming_its_place() {
    let env = crate::common::TestEnv::tiny();
    let words = |out: &std::process::Output| {
        let err = crate::common::stderr(out);
        // Without miette's frame, as one line.
        err.split_whitespace()
            .filter(|w| *w != "│")
            .collect::<Vec<_>>()
            .join(" ")
    };
    let hostile = "gpu\ntouch /tmp/PWNED\n#";
    let run = |extra: &[&str]| {
        let args = [
            &["run", "tiny.kdl", "--runtime", "sim", "--executor", "slurm"][..],
            extra,
        ]
        .concat();
        env.run(&args)
    };
    let out = run(&["--partition", hostile]);
    assert_eq!(out.status.code(), Some(2), "{}", words(&out));
    assert!(words(&out).contains("--partition"), "{}", words(&out));
    assert!(
        words(&out).contains("is not a Slurm partition"),
        "{}",
        words(&out)
    );

    env.write(
        "perfpipe.toml",
        "[executor.slurm]\naccount = \"perf\"\nqos = \"normal\\ntouch /tmp/PWNED\\n#\"\n",
    );
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", words(&out));
    assert!(
        words(&out).contains("perfpipe.toml:3: `normal\\ntouch /tmp/PWNED\\n#` is not a Slurm QOS"),
        "{}",
        words(&out)
    );
    assert!(!env.path("store/drv").exists(), "nothing planned");
}

mod executor {
    use std::path::Path;
    use std::time::{Duration, Instant};

    use perfpipe::exec::slurm::{
        self, Followed, JobEvent, JobRequest, Slurm, SlurmOptions, Verdict, follow,
    };
    use tokio::sync::watch;

    use crate::common::slurm::Cluster;

    const POLL: Duration = Duration::from_millis(100);

    fn request(launch: char, command: &str) -> JobRequest {
        JobRequest {
            launch_key: launch.to_string().repeat(64),
            store: slurm::script::store_id(Path::new("/a/store")),
            run_keys: vec!["1".repeat(64), "2".repeat(64)],
            placement: shared(2),
            command: vec!["sh".into(), "-c".into(), command.into()],
            container: None,
        }
    }

    /// `gpus` GPUs, one CPU and 100 MB of a node, beside other jobs.
    fn shared(gpus: u32) -> slurm::Placement {
        slurm::Placement {
            gpus,
            gpu_type: None,
            constraint: None,
            partition: None,
            share: slurm::Share::Shared {
                cpus: 1,
                mem_mb: 100,
            },
        }
    }

    fn slurm(cluster: &Cluster) -> Slurm {
        Slurm {
            conf: Some(cluster.conf()),
            ..Slurm::default()
        }
    }

    fn run(
        cluster: &Cluster,
        job: &JobRequest,
        cancel: watch::Receiver<bool>,
    ) -> (Result<Followed, slurm::Error>, Vec<JobEvent>) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut events = Vec::new();
        let logs = cluster.path("logs/jobs");
        std::fs::create_dir_all(&logs).unwrap();
        let followed = runtime.block_on(follow(
            &slurm(cluster),
            job,
            &SlurmOptions::default(),
            &logs,
            POLL,
            cancel,
            &mut |e| events.push(e),
        ));
        (followed, events)
    }

    /// Submits `job` as a killed head would have left it, and returns its id.
    fn leave(cluster: &Cluster, job: &JobRequest) -> u64 {
        let options = SlurmOptions::default();
        let logs = cluster.path("logs/left");
        std::fs::create_dir_all(&logs).unwrap();
        let script = slurm::script::script(job, 1, &logs);
        let path = cluster.path(&format!(
            "left-{}.sh",
            slurm::script::job_name(&job.launch_key)
        ));
        std::fs::write(&path, script).unwrap();
        let mut args = vec!["--parsable".to_owned()];
        args.extend(slurm::script::sbatch_args(job, &options, &logs));
        args.push(path.to_str().unwrap().to_owned());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        cluster.ask("sbatch", &args).trim().parse().unwrap()
    }

    fn wait_for(path: &Path) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !path.exists() {
            assert!(
                Instant::now() < deadline,
                "{} never appeared",
                path.display()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    #[test]
    fn a_launch_is_submitted_once_followed_to_its_end_and_a_queued_one_adopted() {
        let Some(cluster) = Cluster::start() else {
            return;
        };
        let out = cluster.path("devices");
        let job = request(
            'a',
            &format!("echo \"$CUDA_VISIBLE_DEVICES\" > {}", out.display()),
        );
        let (_never, cancel) = watch::channel(false);
        let (followed, events) = run(&cluster, &job, cancel.clone());
        let followed = followed.unwrap();
        assert_eq!(followed.verdict, Verdict::Ended);
        assert_eq!(followed.jobs.len(), 1);
        assert!(!followed.adopted);
        assert_eq!(
            events[0],
            JobEvent::Submitted {
                id: followed.jobs[0]
            }
        );
        assert_eq!(std::fs::read_to_string(&out).unwrap().trim(), "0,1");

        // A job a killed head left queued or running is adopted, not submitted again.
        let marker = cluster.path("adopted");
        let job = request('b', &format!("touch {}; sleep 1", marker.display()));
        let left = leave(&cluster, &job);
        let (followed, events) = run(&cluster, &job, cancel.clone());
        let followed = followed.unwrap();
        assert!(followed.adopted, "{events:?}");
        assert_eq!(followed.jobs, [left]);
        assert_eq!(followed.verdict, Verdict::Ended);
        assert!(marker.exists());

        // A job whose command fails says its exit status, which its script
        // recorded beside its log; it is not resubmitted.
        let job = request('e', "echo failing; exit 3");
        let (followed, events) = run(&cluster, &job, cancel);
        let followed = followed.unwrap();
        assert_eq!(
            followed.verdict,
            Verdict::Failed {
                why: "the job's command exited with status 3 (FAILED)".into()
            },
            "{events:?}"
        );
        assert_eq!(followed.jobs.len(), 1, "{events:?}");
        let record = slurm::script::exit_record_path(
            &cluster.path("logs/jobs"),
            &slurm::script::job_name(&job.launch_key),
            followed.jobs[0],
        );
        assert_eq!(std::fs::read_to_string(&record).unwrap(), "3\n");
        assert_eq!(
            std::fs::read_to_string(&followed.logs[0]).unwrap(),
            "failing\n"
        );
    }

    #[test]
    fn a_job_an_admin_cancels_is_resubmitted() {
        let Some(cluster) = Cluster::start() else {
            return;
        };
        let marker = cluster.path("first-attempt");
        // The first attempt waits to be cancelled; the second ends at once.
        let job = request(
            'c',
            &format!(
                "[ -e {m} ] && exit 0; touch {m}; sleep 60",
                m = marker.display()
            ),
        );
        let (_never, cancel) = watch::channel(false);
        let followed = std::thread::scope(|scope| {
            let following = scope.spawn(|| run(&cluster, &job, cancel));
            wait_for(&marker);
            cluster.ask(
                "scancel",
                &["--name", &slurm::script::job_name(&job.launch_key)],
            );
            following.join().unwrap()
        });
        let (followed, events) = followed;
        let followed = followed.unwrap();
        assert_eq!(followed.verdict, Verdict::Ended, "{events:?}");
        assert_eq!(followed.jobs.len(), 2, "{events:?}");
        assert!(events.iter().any(|e| matches!(
            e,
            JobEvent::Resubmitting { why, attempt: 2, attempts: 3, .. } if why.contains("CANCELLED")
        )));
        // Each attempt keeps its log.
        assert_eq!(followed.logs.len(), 2, "{:?}", followed.logs);
        assert_ne!(followed.logs[0], followed.logs[1]);
        assert!(
            followed.logs.iter().all(|l| l.exists()),
            "{:?}",
            followed.logs
        );
    }

    /// A job belongs to the store it writes to: a launch of another store
    /// with the same name and runs neither adopts it nor, on Ctrl-C,
    /// cancels it.
    #[test]
    fn a_job_of_another_store_is_neither_adopted_nor_cancelled() {
        let Some(cluster) = Cluster::start() else {
            return;
        };
        let theirs = request('f', "sleep 60");
        let left = leave(&cluster, &theirs);
        let marker = cluster.path("mine-runs");
        let mine = JobRequest {
            store: slurm::script::store_id(Path::new("/another/store")),
            command: vec![
                "sh".into(),
                "-c".into(),
                format!("touch {}; sleep 60", marker.display()),
            ],
            ..theirs.clone()
        };
        assert_eq!(
            slurm::script::job_name(&mine.launch_key),
            slurm::script::job_name(&theirs.launch_key)
        );
        let (interrupt, cancel) = watch::channel(false);
        let (followed, events) = std::thread::scope(|scope| {
            let following = scope.spawn(|| run(&cluster, &mine, cancel));
            wait_for(&marker);
            interrupt.send(true).unwrap();
            following.join().unwrap()
        });
        assert!(
            !events.iter().any(|e| matches!(e, JobEvent::Adopted { .. })),
            "{events:?}"
        );
        let Err(slurm::Error::Interrupted { jobs }) = followed else {
            panic!("{followed:?}");
        };
        assert_eq!(jobs.len(), 1);
        assert_ne!(jobs[0], left);
        let state = cluster.ask("squeue", &["-h", "-j", &left.to_string(), "-o", "%T"]);
        assert!(
            matches!(state.trim(), "RUNNING" | "PENDING"),
            "the other store's job is left alone: `{state}`"
        );
        cluster.ask("scancel", &[&left.to_string()]);
    }

    /// Ends the running job named `name` as its time limit would, without
    /// waiting the minute of Slurm's shortest limit: an admin lowers its
    /// limit to 0 minutes, already passed, and slurmctld ends it with
    /// TIMEOUT at its next check of limits (at most 30 s on 22.05).
    fn reach_time_limit(cluster: &Cluster, name: &str) {
        let id = cluster.ask("squeue", &["-h", "-n", name, "-t", "RUNNING", "-o", "%i"]);
        let id = id.trim();
        assert!(id.parse::<u64>().is_ok(), "`{name}` runs: `{id}`");
        cluster.ask(
            "scontrol",
            &["update", &format!("JobId={id}"), "TimeLimit=0"],
        );
    }

    /// A job Slurm ended at its time limit is resubmitted once with twice
    /// the limit (`timeout_retries`, by default 1), each attempt's log its
    /// own (`%j`); a second TIMEOUT is not resubmitted, and says why.
    #[test]
    fn a_job_that_reached_its_time_limit_is_resubmitted_with_a_longer_one() {
        let Some(cluster) = Cluster::start() else {
            return;
        };
        // The first attempt runs until Slurm ends it at its limit of one
        // minute ([`reach_time_limit`]); the second (the marker exists)
        // ends at once.
        let marker = cluster.path("timed-out-once");
        let job = request(
            '9',
            &format!(
                "echo attempt; [ -e {m} ] && exit 0; touch {m}; sleep 600",
                m = marker.display()
            ),
        );
        let options = SlurmOptions {
            time_limit: Some("1".into()),
            ..SlurmOptions::default()
        };
        // Without resubmission after a TIMEOUT (beside, at the same time).
        let never = SlurmOptions {
            timeout_retries: Some(0),
            ..options.clone()
        };
        let logs = cluster.path("logs/timeout");
        std::fs::create_dir_all(&logs).unwrap();
        let follow_with = |options: &SlurmOptions, job: &JobRequest| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let (_never, cancel) = watch::channel(false);
            let mut events = Vec::new();
            let followed = runtime
                .block_on(follow(
                    &slurm(&cluster),
                    job,
                    options,
                    &logs,
                    POLL,
                    cancel,
                    &mut |e| events.push(e),
                ))
                .unwrap();
            (followed, events)
        };
        // Runs of its own: a job measuring the same runs would be adopted
        // by the other follower, as a head adopts any job serving its runs.
        let running = cluster.path("never-lengthened-runs");
        let once = JobRequest {
            run_keys: vec!["3".repeat(64), "4".repeat(64)],
            ..request('8', &format!("touch {}; sleep 600", running.display()))
        };
        let ((followed, events), (not_again, _)) = std::thread::scope(|scope| {
            let lengthened = scope.spawn(|| follow_with(&options, &job));
            let not_again = scope.spawn(|| follow_with(&never, &once));
            for (marker, job) in [(&marker, &job), (&running, &once)] {
                wait_for(marker);
                reach_time_limit(&cluster, &slurm::script::job_name(&job.launch_key));
            }
            (lengthened.join().unwrap(), not_again.join().unwrap())
        });
        assert_eq!(followed.verdict, Verdict::Ended, "{events:?}");
        assert_eq!(followed.jobs.len(), 2, "{events:?}");
        assert!(
            events.contains(&JobEvent::Lengthening {
                id: followed.jobs[0],
                limit: "0-00:02:00".into(),
                retry: 1,
                retries: 1,
            }),
            "{events:?}"
        );
        assert_eq!(followed.time_limit.as_deref(), Some("0-00:02:00"));
        // Each attempt's log is named by its job id, and written: the
        // first's ends as Slurm ended it.
        let logs: Vec<String> = followed
            .logs
            .iter()
            .zip(&followed.jobs)
            .map(|(log, id)| {
                assert!(
                    log.ends_with(format!("pp-999999999999.{id}.log")),
                    "{log:?}"
                );
                std::fs::read_to_string(log).unwrap()
            })
            .collect();
        assert!(
            logs[0].starts_with("attempt\n") && logs[0].contains("DUE TO TIME LIMIT"),
            "{logs:?}"
        );
        assert_eq!(logs[1], "attempt\n");
        assert_eq!(not_again.verdict, Verdict::TimedOut);
        assert_eq!(not_again.jobs.len(), 1);
        assert_eq!(
            not_again.not_lengthened.as_deref(),
            Some("`timeout_retries = 0` in `[executor.slurm]`")
        );
    }

    #[test]
    fn ctrl_c_cancels_the_job_and_leaves_nothing_queued() {
        let Some(cluster) = Cluster::start() else {
            return;
        };
        let marker = cluster.path("running");
        let job = request('d', &format!("touch {}; sleep 60", marker.display()));
        let (interrupt, cancel) = watch::channel(false);
        let (followed, _) = std::thread::scope(|scope| {
            let following = scope.spawn(|| run(&cluster, &job, cancel));
            wait_for(&marker);
            interrupt.send(true).unwrap();
            following.join().unwrap()
        });
        assert!(
            matches!(followed, Err(slurm::Error::Interrupted { ref jobs }) if jobs.len() == 1),
            "{followed:?}"
        );
        cluster.wait_until_empty(Duration::from_secs(20));
    }

    /// The launch material `plan --write-launches` writes for tiny.kdl.
    fn planned_launches(
        env: &crate::common::TestEnv,
    ) -> Vec<(
        perfpipe::launch::LaunchKey,
        perfpipe::launch::LaunchMaterial,
    )> {
        let planned = env.run(&["plan", "tiny.kdl", "--runtime", "sim", "--write-launches"]);
        assert!(
            planned.status.success(),
            "{}",
            crate::common::stderr(&planned)
        );
        std::fs::read_dir(env.path("store/drv"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|path| {
                let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
                let key = perfpipe::launch::LaunchKey::parse(&stem).unwrap();
                let material = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
                (key, material)
            })
            .collect()
    }

    /// Each launch of a study goes to a job running `perfpipe realise` on
    /// its material; the store then holds every run, and a second time
    /// submits nothing.
    #[test]
    fn a_studys_launches_run_as_jobs_of_perfpipe_realise_once() {
        use perfpipe::exec::slurm::{SlurmExec, execute};
        use perfpipe::tokio_runtime::Io;

        let Some(cluster) = Cluster::start() else {
            return;
        };
        let env = crate::common::TestEnv::tiny();
        let launches = planned_launches(&env);
        assert!(!launches.is_empty());
        let runs: usize = launches.iter().map(|(_, m)| m.runs.len()).sum();
        let store = perfpipe::store::Store::open(env.path("store")).unwrap();
        let exec = SlurmExec {
            slurm: slurm(&cluster),
            options: SlurmOptions::default(),
            program: env!("CARGO_BIN_EXE_perfpipe").into(),
            poll: POLL,
            jobs: None,
        };
        let mut events = Vec::new();
        let summary = execute(&launches, &store, &exec, &Io::new(), &mut |_, e| {
            events.push(e.clone())
        })
        .unwrap_or_else(|e| panic!("{e}: {}", cluster.logs()));
        let logs = || {
            std::fs::read_dir(env.path("store/logs/slurm"))
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
                .collect::<String>()
        };
        assert!(
            summary.unstored.is_empty(),
            "{:?}\n{}",
            summary.unstored,
            logs()
        );
        assert_eq!(summary.succeeded + summary.failed, runs, "{}", logs());
        let submitted = events
            .iter()
            .filter(|e| matches!(e, JobEvent::Submitted { .. }))
            .count();
        assert_eq!(submitted, launches.len(), "{events:?}");

        let mut again = Vec::new();
        execute(&launches, &store, &exec, &Io::new(), &mut |_, e| {
            again.push(e.clone())
        })
        .unwrap();
        assert_eq!(again, [], "a second time submits nothing");
        let planned = env.run(&["plan", "tiny.kdl", "--runtime", "sim"]);
        let text = String::from_utf8_lossy(&planned.stdout);
        let statuses: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with("STEP"))
            .skip(1)
            .take_while(|l| !l.trim().is_empty())
            .filter_map(|l| l.split_whitespace().nth(3))
            .collect();
        assert_eq!(statuses.len(), runs, "{text}");
        assert!(statuses.iter().all(|s| *s != "missing"), "{text}");
    }

    /// A killed head's launch of several runs, half done: the next `run`
    /// rebuilds a launch of the runs the store lacks (another key) and
    /// follows the job still measuring them, submitting none.
    #[test]
    fn a_launch_rebuilt_from_a_half_done_launchs_runs_follows_its_job() {
        use perfpipe::exec::slurm::{SlurmExec, execute};
        use perfpipe::launch::LaunchMaterial;
        use perfpipe::tokio_runtime::Io;

        let Some(cluster) = Cluster::start() else {
            return;
        };
        let env = crate::common::TestEnv::tiny();
        let (key, whole) = planned_launches(&env)
            .into_iter()
            .find(|(_, m)| m.runs.len() >= 2)
            .expect("tiny.kdl has a launch of several runs");
        let store = perfpipe::store::Store::open(env.path("store")).unwrap();
        let root = std::fs::canonicalize(store.root()).unwrap();
        let program = env!("CARGO_BIN_EXE_perfpipe");
        // The killed head's job: the whole launch, still running when the
        // next head looks.
        let left = leave(
            &cluster,
            &JobRequest {
                launch_key: key.as_str().to_owned(),
                store: slurm::script::store_id(&root),
                run_keys: whole.runs.iter().map(|r| r.key.to_string()).collect(),
                placement: shared(whole.engine.gpus_per_instance * whole.engine.instances),
                command: vec![
                    "sh".into(),
                    "-c".into(),
                    "sleep 3; exec \"$0\" \"$@\"".into(),
                    program.into(),
                    "realise".into(),
                    store.launch_path(&key).display().to_string(),
                    "--store".into(),
                    root.display().to_string(),
                ],
                container: None,
            },
        );
        // The next head's launch: the runs after the first (stored, say).
        let rest = LaunchMaterial {
            runs: whole.runs[1..].to_vec(),
            ..whole.clone()
        };
        let rest_key = store.put_launch(&rest).unwrap();
        assert_ne!(rest_key, key);
        let exec = SlurmExec {
            slurm: slurm(&cluster),
            options: SlurmOptions::default(),
            program: program.into(),
            poll: POLL,
            jobs: None,
        };
        let mut events = Vec::new();
        let summary = execute(
            &[(rest_key, rest.clone())],
            &store,
            &exec,
            &Io::new(),
            &mut |_, e| events.push(e.clone()),
        )
        .unwrap_or_else(|e| panic!("{e}: {}", cluster.logs()));
        assert!(
            matches!(events.first(), Some(JobEvent::Adopted { id, .. }) if *id == left),
            "{events:?}"
        );
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, JobEvent::Submitted { .. })),
            "nothing submitted: {events:?}"
        );
        assert!(summary.unstored.is_empty(), "{:?}", summary.unstored);
        assert_eq!(summary.succeeded + summary.failed, rest.runs.len());
        // The adopted job measured its whole launch.
        for run in &whole.runs {
            assert!(!store.samples(&run.key).unwrap().is_empty(), "{}", run.key);
        }
    }
}

/// `perfpipe run --executor slurm` end to end on the test cluster: the real
/// binary as a user runs it, its launches as jobs of the cluster.
mod run {
    use std::collections::BTreeMap;
    use std::path::PathBuf;
    use std::process::{Child, Command, Output, Stdio};
    use std::time::{Duration, Instant};

    use crate::common::slurm::Cluster;
    use crate::common::{TestEnv, live_processes, stderr};

    /// The simulated engine's latencies as a function of the load alone
    /// (`src/engine/sim/timing.rs`), so that two runs' latencies agree.
    pub(super) const LOAD_TIMING: &str =
        "load:ttft_ms=100,ttft_ms_per_req=5,itl_ms=10,itl_ms_per_req=0.5";

    /// `run tiny.kdl --runtime sim --executor EXECUTOR ARGS`, its launches on `cluster`.
    pub(super) fn command(
        env: &TestEnv,
        cluster: &Cluster,
        executor: &str,
        args: &[&str],
    ) -> Command {
        command_of("tiny.kdl", env, cluster, executor, args)
    }

    /// `run STUDY --runtime sim --executor EXECUTOR ARGS`, its launches on `cluster`.
    pub(super) fn command_of(
        study: &str,
        env: &TestEnv,
        cluster: &Cluster,
        executor: &str,
        args: &[&str],
    ) -> Command {
        let mut cmd = env.cmd(
            &[
                &["run", study, "--runtime", "sim", "--executor", executor][..],
                args,
            ]
            .concat(),
        );
        cmd.env("SLURM_CONF", cluster.conf())
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("PERFPIPE_SLURM_POLL_MS", "100")
            // Engines load at once unless a test says otherwise.
            .env("PERFPIPE_SIM_LOAD_MS", "0")
            .env("PERFPIPE_SIM_TIMING", LOAD_TIMING);
        cmd
    }

    fn run(env: &TestEnv, cluster: &Cluster, executor: &str) -> Output {
        command(env, cluster, executor, &[])
            .output()
            .expect("perfpipe runs")
    }

    /// Starts `cmd`, its standard error to `err` (read it with [`read`]).
    pub(super) fn spawn(cmd: &mut Command, err: &PathBuf) -> Child {
        cmd.stdout(Stdio::null())
            .stderr(std::fs::File::create(err).unwrap())
            .spawn()
            .expect("perfpipe starts")
    }

    pub(super) fn read(path: &PathBuf) -> String {
        std::fs::read_to_string(path).unwrap_or_default()
    }

    /// Waits for `child` to exit, killing it and failing after `limit`.
    pub(super) fn exit_within(
        child: &mut Child,
        limit: Duration,
        what: &str,
    ) -> std::process::ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("{what} did not end within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub(super) fn wait_until(limit: Duration, what: &str, mut ready: impl FnMut() -> bool) {
        let deadline = Instant::now() + limit;
        while !ready() {
            assert!(Instant::now() < deadline, "{what} within {limit:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The jobs of the cluster in `states` (`squeue -t`), as (id, name).
    pub(super) fn jobs(cluster: &Cluster, states: &str) -> Vec<(u64, String)> {
        cluster
            .ask("squeue", &["-h", "-t", states, "-o", "%i %j"])
            .lines()
            .filter_map(|l| {
                let (id, name) = l.trim().split_once(' ')?;
                Some((id.parse().ok()?, name.to_owned()))
            })
            .collect()
    }

    /// A `sbatch` first on `PATH` that logs the job name of each submission
    /// (its `--job-name=` argument) to `submitted`, keeps its script (its
    /// standard input) in `scripts/`, and hands on to the real one.
    pub(super) fn sbatch_shim(env: &TestEnv) -> (std::ffi::OsString, PathBuf) {
        let log = env.path("submitted");
        let shim = env.path("shim/sbatch");
        env.write(
            "shim/sbatch",
            &format!(
                "#!/bin/sh\n\
                 for arg; do case $arg in --job-name=*) echo \"${{arg#--job-name=}}\" >> {log};; esac; done\n\
                 mkdir -p {scripts}\n\
                 script=$(mktemp {scripts}/job.XXXXXX)\n\
                 cat > \"$script\"\n\
                 exec /usr/bin/sbatch \"$@\" < \"$script\"\n",
                log = log.display(),
                scripts = env.path("scripts").display()
            ),
        );
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = std::env::join_paths(std::iter::once(env.path("shim")).chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
        ))
        .unwrap();
        (path, log)
    }

    /// Shims first on `PATH` for `squeue`, `scontrol` and `sacct` that log
    /// each call (`NANOSECONDS NAME`) to `calls` and hand on to the real one.
    pub(super) fn counting_shims(env: &TestEnv) -> (std::ffi::OsString, PathBuf) {
        use std::os::unix::fs::PermissionsExt;
        let log = env.path("calls");
        for name in ["squeue", "scontrol", "sacct"] {
            env.write(
                &format!("counting/{name}"),
                &format!(
                    "#!/bin/sh
                     echo \"$(date +%s%N) {name}\" >> {log}\n\
                     exec /usr/bin/{name} \"$@\"\n",
                    log = log.display()
                ),
            );
            let shim = env.path(&format!("counting/{name}"));
            std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let path = std::env::join_paths(std::iter::once(env.path("counting")).chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
        ))
        .unwrap();
        (path, log)
    }

    /// A study of `launches` launches of one GPU each (a sweep of one
    /// step), each a few requests.
    pub(super) fn sweep_study(launches: usize) -> String {
        let values: Vec<String> = (1..=launches).map(|n| n.to_string()).collect();
        format!(
            "experiment \"sweep\" {{\n\
             \x20   hardware \"nvidia-a100-sxm4-80gb\" gpus=8\n\
             \x20   model \"Qwen/Qwen3-14B\"\n\
             \x20   runtime docker\n\
             \x20   engine vllm version=\"0.11.0\"\n\
             \x20   harness builtin backend=\"openai-chat\"\n\
             \x20   workload short {{\n\
             \x20       dataset random input=16 output=4 seed=42\n\
             \x20       prompts 4\n\
             \x20   }}\n\
             \x20   sweep seqs engine=vllm gpus=1 {{\n\
             \x20       vary \"--max-num-seqs\" {}\n\
             \x20   }}\n\
             }}\n",
            values.join(" ")
        )
    }

    /// How many samples the store holds of each key.
    pub(super) fn samples_per_key(env: &TestEnv) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for sample in env.samples() {
            let key = sample.split('/').next().unwrap().to_owned();
            *counts.entry(key).or_default() += 1;
        }
        counts
    }

    pub(super) fn keys(env: &TestEnv) -> Vec<String> {
        samples_per_key(env).into_keys().collect()
    }

    /// How many runs `plan` says the study has.
    pub(super) fn planned_runs(env: &TestEnv) -> usize {
        let out = env.run(&["plan", "tiny.kdl", "--runtime", "sim"]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.lines()
            .find_map(|l| l.split_once(" runs: ")?.0.trim().parse().ok())
            .unwrap_or_else(|| panic!("no run count in:\n{text}"))
    }

    /// Each key's stored result as `(status, what does not depend on wall time)`.
    pub(super) fn results(env: &TestEnv) -> BTreeMap<String, serde_json::Value> {
        env.results()
            .into_iter()
            .map(|(_, r)| (r["key"].as_str().unwrap().to_owned(), r))
            .collect()
    }

    /// The results of two stores agree: counts exactly, latencies (a
    /// function of the load under [`LOAD_TIMING`]) within 5 % and 2 ms.
    pub(super) fn assert_same_results(slurm: &TestEnv, local: &TestEnv) {
        let (slurm, local) = (results(slurm), results(local));
        assert_eq!(
            slurm.keys().collect::<Vec<_>>(),
            local.keys().collect::<Vec<_>>()
        );
        for (key, s) in &slurm {
            let l = &local[key];
            let (so, lo) = (&s["outcome"], &l["outcome"]);
            for field in ["status", "kind", "error"] {
                assert_eq!(so[field], lo[field], "{key}: outcome.{field}");
            }
            assert_eq!(s["engine_launch"], l["engine_launch"], "{key}");
            let (sm, lm) = (&so["metrics"], &lo["metrics"]);
            for field in [
                "completed",
                "failed",
                "total_input_tokens",
                "total_output_tokens",
                "output_tokens_source",
            ] {
                assert_eq!(sm[field], lm[field], "{key}: {field}");
            }
            for field in [
                "mean_ttft_ms",
                "median_ttft_ms",
                "mean_tpot_ms",
                "mean_itl_ms",
                "median_itl_ms",
            ] {
                let (a, b) = (sm[field].as_f64(), lm[field].as_f64());
                if let (Some(a), Some(b)) = (a, b) {
                    let tolerance = 0.05 * a.max(b) + 2.0;
                    assert!(
                        (a - b).abs() <= tolerance,
                        "{key}: {field} {a} through Slurm, {b} locally"
                    );
                } else {
                    assert_eq!(a, b, "{key}: {field}");
                }
            }
        }
    }

    #[test]
    fn a_study_through_slurm_stores_the_results_of_a_local_run_once() {
        let Some(cluster) = Cluster::start() else {
            return;
        };
        let env = TestEnv::tiny();
        let out = run(&env, &cluster, "slurm");
        assert!(out.status.success(), "{}\n{}", stderr(&out), cluster.logs());
        let err = stderr(&out);
        // Every launch's job is submitted and ends: done, or failed for
        // the launch whose failure tiny.kdl expects.
        let lines = |end: &str| err.lines().filter(|l| l.ends_with(end)).count();
        assert!(lines(" pending") > 0, "{err}");
        assert_eq!(
            lines(" pending"),
            lines(" done") + lines(" failed"),
            "{err}"
        );
        assert_eq!(lines(" failed"), 1, "{err}");
        // Launches spread over both nodes (each owns the node it runs on).
        let nodes: std::collections::BTreeSet<&str> = err
            .lines()
            .filter_map(|l| l.split_once(" running on ").map(|(_, node)| node))
            .collect();
        assert_eq!(nodes.len(), crate::common::slurm::NODES, "{nodes:?}\n{err}");
        // The material of the run's launches, written once; no other
        // runtime's (`perfpipe lock` records those).
        let material = crate::common::files_under(&env.path("store/drv"));
        assert_eq!(material.len(), lines(" pending"), "{material:?}");

        // Each result names the Slurm job that measured it, its attempt and
        // its node (`slurm`, which a local run's results have not).
        let nodes = cluster.nodes();
        for (key, result) in results(&env) {
            let job = &result["slurm"];
            let id = job["job_id"]
                .as_u64()
                .unwrap_or_else(|| panic!("{key}: {result}"));
            assert!(
                err.contains(&format!("Slurm job {id} ")),
                "{key}: {id}\n{err}"
            );
            assert_eq!(job["attempt"], 1, "{key}: {result}");
            assert!(
                nodes.iter().any(|n| job["node"] == n.as_str()),
                "{key}: {result}"
            );
        }

        let local = TestEnv::tiny();
        let out = run(&local, &cluster, "local");
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            results(&local).values().all(|r| r.get("slurm").is_none()),
            "{:?}",
            results(&local)
        );
        assert!(!keys(&env).is_empty());
        assert_eq!(keys(&env), keys(&local), "the same runs, the same keys");
        assert!(samples_per_key(&env).values().all(|n| *n == 1));
        assert_same_results(&env, &local);

        let again = run(&env, &cluster, "slurm");
        assert!(again.status.success(), "{}", stderr(&again));
        assert!(
            !stderr(&again).contains("Slurm job"),
            "a second run submits nothing: {}",
            stderr(&again)
        );
        cluster.wait_until_empty(Duration::from_secs(30));
    }

    /// A head killed while its jobs run loses nothing: the next `run`
    /// adopts the jobs still queued or running, submits the others, and
    /// every key is measured once.
    #[test]
    fn after_kill_9_of_the_head_run_adopts_its_jobs_and_measures_each_key_once() {
        let Some(cluster) = Cluster::start() else {
            return;
        };
        let env = TestEnv::tiny();
        let runs = planned_runs(&env);
        let (path, submitted) = sbatch_shim(&env);
        // Two at a time, the first head's engines loading until `release`
        // exists: when the head is killed, its jobs run and launches wait
        // to be submitted, and its jobs still run when the next head looks.
        let release = env.path("release");
        let head = |err: &str| {
            let mut cmd = command(&env, &cluster, "slurm", &["--jobs", "2"]);
            cmd.env("PATH", &path);
            spawn(&mut cmd, &env.path(err))
        };
        let mut first = {
            let mut cmd = command(&env, &cluster, "slurm", &["--jobs", "2"]);
            cmd.env("PATH", &path)
                .env("PERFPIPE_SIM_LOAD_UNTIL", &release);
            spawn(&mut cmd, &env.path("first.err"))
        };
        wait_until(Duration::from_secs(60), "a job runs", || {
            !jobs(&cluster, "RUNNING").is_empty()
        });
        first.kill().unwrap();
        first.wait().unwrap();
        let left = jobs(&cluster, "PENDING,RUNNING");
        assert!(!left.is_empty(), "{}", read(&env.path("first.err")));

        let mut second = head("second.err");
        wait_until(Duration::from_secs(60), "the next head adopts", || {
            read(&env.path("second.err")).contains(" adopted (")
        });
        std::fs::write(&release, "").unwrap();
        let status = exit_within(&mut second, Duration::from_secs(120), "the second run");
        let err = read(&env.path("second.err"));
        assert!(status.success(), "{err}\n{}", cluster.logs());
        assert!(
            left.iter()
                .all(|(id, _)| err.contains(&format!("Slurm job {id} adopted ("))),
            "{left:?} adopted: {err}"
        );
        let mut names = BTreeMap::<String, usize>::new();
        for name in read(&submitted).lines() {
            *names.entry(name.to_owned()).or_default() += 1;
        }
        assert!(!names.is_empty(), "the shim saw no submission");
        assert!(
            names.values().all(|n| *n == 1),
            "each launch submitted once: {names:?}\n{err}"
        );
        let measured = samples_per_key(&env);
        assert_eq!(measured.len(), runs, "every run measured: {err}");
        assert!(
            measured.values().all(|n| *n == 1),
            "each once: {measured:?}"
        );
    }

    /// Ctrl-C of the head cancels the jobs it submitted, submits no more,
    /// and exits 130.
    #[test]
    fn ctrl_c_of_the_head_leaves_no_job_queued_or_running_and_exits_130() {
        let Some(cluster) = Cluster::start() else {
            return;
        };
        let env = TestEnv::tiny();
        // The engines load until a path that never appears: no job ends
        // before the interruption, however slowly the machine runs.
        let mut cmd = command(&env, &cluster, "slurm", &["--jobs", "2"]);
        cmd.env("PERFPIPE_SIM_LOAD_UNTIL", env.path("never"));
        let mut head = spawn(&mut cmd, &env.path("head.err"));
        // Slurm calls a job RUNNING before its batch script starts; a job
        // cancelled in that instant is signalled before anything of it
        // runs, and is killed only `KillWait` (30 s) later. The head is
        // interrupted once each of its jobs runs its command: none is
        // pending (`--jobs 2` submits no more), and each running one's log
        // says `realise` began (the script set its trap before).
        let job_logs = env.path("store/logs/slurm");
        let command_began = |id: u64| {
            job_logs.is_dir()
                && crate::common::files_under(&job_logs)
                    .iter()
                    .filter(|f| f.to_string_lossy().ends_with(&format!(".{id}.log")))
                    .any(|f| read(f).contains("perfpipe: realising launch"))
        };
        wait_until(
            Duration::from_secs(60),
            "the jobs run their commands",
            || {
                let running = jobs(&cluster, "RUNNING");
                jobs(&cluster, "PENDING,CONFIGURING").is_empty()
                    && !running.is_empty()
                    && running.iter().all(|(id, _)| command_began(*id))
            },
        );
        // SAFETY: signals our own child.
        unsafe { libc::kill(head.id() as i32, libc::SIGINT) };
        let status = exit_within(&mut head, Duration::from_secs(30), "the interrupted run");
        let err = read(&env.path("head.err"));
        assert_eq!(status.code(), Some(130), "{err}");
        assert_eq!(
            jobs(&cluster, "PENDING,CONFIGURING,RUNNING,SUSPENDED"),
            [],
            "{err}"
        );
        let logs = || {
            crate::common::files_under(&env.path("store/logs/slurm"))
                .iter()
                .map(|f| format!("== {}\n{}", f.display(), read(f)))
                .collect::<String>()
        };
        if std::panic::catch_unwind(|| cluster.wait_until_empty(Duration::from_secs(30))).is_err() {
            panic!("the jobs' logs:\n{}\n{}", logs(), cluster.logs());
        }
    }

    /// `scancel` of a running job: its engines stop with it (no process of
    /// the job is left), and the head resubmits it, as Slurm ended it.
    #[test]
    fn scancel_of_a_running_job_leaves_no_engine_and_the_head_resubmits_it() {
        let Some(cluster) = Cluster::start() else {
            return;
        };
        let env = TestEnv::tiny();
        let runs = planned_runs(&env);
        let tag = format!("PP_TEST_SCANCEL={}", crate::common::random_hex());
        let (name, value) = tag.split_once('=').unwrap();
        // The engines load until `release` exists: the victim's engine is
        // there to be found however slowly the machine runs.
        let release = env.path("release");
        let mut cmd = command(&env, &cluster, "slurm", &["--retries", "1"]);
        cmd.env(name, value)
            .env("PERFPIPE_SIM_LOAD_UNTIL", &release);
        let mut head = spawn(&mut cmd, &env.path("head.err"));
        // The processes of job `id`: every one inherits its `SLURM_JOB_ID`,
        // and the tag (job ids of other tests' clusters are the same numbers).
        let of_job = |id: u64| {
            let tagged = live_processes(&tag);
            live_processes(&format!("SLURM_JOB_ID={id}\0"))
                .into_iter()
                .filter(|pid| tagged.contains(pid))
                .collect::<Vec<_>>()
        };
        let engines = |id: u64| {
            of_job(id)
                .into_iter()
                .filter(|pid| {
                    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                    String::from_utf8_lossy(&cmdline).contains("sim-engine")
                })
                .count()
        };
        let mut victim = None;
        wait_until(Duration::from_secs(60), "a job's engine starts", || {
            victim = jobs(&cluster, "RUNNING")
                .into_iter()
                .find(|(id, _)| engines(*id) > 0);
            victim.is_some()
        });
        let (id, job_name) = victim.unwrap();
        cluster.ask("scancel", &[&id.to_string()]);
        // Well within KillWait (30 s), after which slurmd would SIGKILL
        // the job step (not the engines' process groups).
        wait_until(
            Duration::from_secs(15),
            "every process of the job ends",
            || of_job(id).is_empty(),
        );
        std::fs::write(&release, "").unwrap();

        let status = exit_within(&mut head, Duration::from_secs(120), "the run");
        let err = read(&env.path("head.err"));
        assert!(status.success(), "{err}\n{}", cluster.logs());
        assert!(
            err.contains(&format!(
                "Slurm job {id} ended (it was cancelled by someone other than this perfpipe (CANCELLED)); resubmitting"
            )),
            "{err}"
        );
        let launch = job_name.trim_start_matches("pp-");
        // Its launch ends as tiny.kdl expects: done, or failed for FP8.
        assert!(
            err.lines()
                .any(|l| l.starts_with(&format!("launch {launch}"))
                    && (l.ends_with(" done") || l.ends_with(" failed"))),
            "{err}"
        );
        let measured = samples_per_key(&env);
        assert_eq!(measured.len(), runs, "{err}");
        assert!(measured.values().all(|n| *n == 1), "{measured:?}");
        wait_until(
            Duration::from_secs(10),
            "no process of the study is left",
            || live_processes(&tag).is_empty(),
        );
    }

    /// A controller that stops for a while (a restart): the head says it
    /// waits, asks again, and the study ends as without the outage.
    #[test]
    fn a_controller_outage_is_waited_out_and_the_study_ends() {
        let Some(mut cluster) = Cluster::start() else {
            return;
        };
        let env = TestEnv::tiny();
        let runs = planned_runs(&env);
        // The engines load until `release` exists (after the outage): jobs
        // run through it whatever the machine's speed.
        let release = env.path("release");
        let mut cmd = command(&env, &cluster, "slurm", &["--jobs", "2"]);
        cmd.env("PERFPIPE_SIM_LOAD_UNTIL", &release);
        let mut head = spawn(&mut cmd, &env.path("head.err"));
        wait_until(Duration::from_secs(60), "a job runs", || {
            !jobs(&cluster, "RUNNING").is_empty()
        });
        cluster.stop_controller();
        // Said twice: it asked again after the first wait, and still waits.
        wait_until(
            Duration::from_secs(60),
            "the head says it waits, twice",
            || {
                read(&env.path("head.err"))
                    .matches("Slurm's controller does not answer")
                    .count()
                    >= 2
            },
        );
        assert!(
            head.try_wait().unwrap().is_none(),
            "{}",
            read(&env.path("head.err"))
        );
        cluster.start_controller();
        std::fs::write(&release, "").unwrap();
        let status = exit_within(&mut head, Duration::from_secs(150), "the run");
        let err = read(&env.path("head.err"));
        assert!(status.success(), "{err}\n{}", cluster.logs());
        let measured = samples_per_key(&env);
        assert_eq!(measured.len(), runs, "{err}");
        assert!(measured.values().all(|n| *n == 1), "{measured:?}");
    }

    /// A controller away longer than `--slurm-patience` (each `squeue`
    /// without one takes seconds to fail): the head exits 1
    /// (the environment's failure, not an internal error), leaving its jobs
    /// queued; the next `run` adopts them and measures each run once.
    #[test]
    fn past_its_patience_the_head_exits_1_and_the_next_run_adopts_its_jobs() {
        let Some(mut cluster) = Cluster::start() else {
            return;
        };
        let env = TestEnv::tiny();
        let runs = planned_runs(&env);
        // The first head's jobs load their engines until `release` exists
        // (once the next head adopted them): still running when the
        // controller is back, however long it took.
        let release = env.path("release");
        let head = |cluster: &Cluster, err: &str, load_until: &std::path::Path| {
            let mut cmd = command(
                &env,
                cluster,
                "slurm",
                &["--jobs", "2", "--slurm-patience", "15"],
            );
            cmd.env("PERFPIPE_SIM_LOAD_UNTIL", load_until);
            spawn(&mut cmd, &env.path(err))
        };
        let mut first = head(&cluster, "first.err", &release);
        wait_until(Duration::from_secs(60), "a job runs", || {
            !jobs(&cluster, "RUNNING").is_empty()
        });
        let left = jobs(&cluster, "PENDING,RUNNING");
        cluster.stop_controller();
        let status = exit_within(&mut first, Duration::from_secs(60), "the first run");
        let err = read(&env.path("first.err"));
        assert_eq!(status.code(), Some(1), "{err}");
        assert!(err.contains("Slurm's controller does not answer"), "{err}");
        assert!(
            err.contains("Slurm's controller did not answer `")
                && err.contains("the next `perfpipe run` adopts them"),
            "{err}"
        );
        assert!(!err.contains("internal error"), "{err}");
        cluster.start_controller();
        let still = jobs(&cluster, "PENDING,RUNNING,COMPLETING");
        assert!(
            left.iter().any(|j| still.contains(j)),
            "the jobs stay queued: {left:?} {still:?}"
        );

        // The second head's own jobs load at once (`release` exists by then).
        let mut second = head(&cluster, "second.err", &release);
        wait_until(Duration::from_secs(60), "the next head adopts", || {
            read(&env.path("second.err")).contains(" adopted (")
        });
        std::fs::write(&release, "").unwrap();
        let status = exit_within(&mut second, Duration::from_secs(150), "the second run");
        let err = read(&env.path("second.err"));
        assert!(status.success(), "{err}\n{}", cluster.logs());
        assert!(
            left.iter()
                .any(|(id, _)| err.contains(&format!("Slurm job {id} adopted ("))),
            "{left:?} adopted: {err}"
        );
        let measured = samples_per_key(&env);
        assert_eq!(measured.len(), runs, "{err}");
        assert!(measured.values().all(|n| *n == 1), "{measured:?}");
    }

    /// `--jobs 1`: never two of the head's jobs in the queue at once; a
    /// job waiting for GPUs another job holds says why.
    #[test]
    fn jobs_bounds_the_heads_jobs_in_the_queue_and_pending_says_why() {
        let Some(cluster) = Cluster::start() else {
            return;
        };
        let env = TestEnv::tiny();
        let runs = planned_runs(&env);
        // Every GPU of every node held until the head has said its first
        // job waits for Resources (then cancelled): perfpipe's first job
        // waits, however slowly the head starts.
        let nodes = format!("--nodes={}", crate::common::slurm::NODES);
        let blocker = cluster
            .ask(
                "sbatch",
                &[
                    "--parsable",
                    &nodes,
                    "--exclusive",
                    "--gres=gpu:8",
                    "--output=/dev/null",
                    "--wrap",
                    "sleep 100",
                ],
            )
            .trim()
            .parse::<u64>()
            .unwrap();
        wait_until(Duration::from_secs(30), "the blocker runs", || {
            jobs(&cluster, "RUNNING")
                .iter()
                .any(|(id, _)| *id == blocker)
        });
        let mut head = spawn(
            &mut command(&env, &cluster, "slurm", &["--jobs", "1"]),
            &env.path("head.err"),
        );
        let mut most = 0;
        let mut released = false;
        let deadline = Instant::now() + Duration::from_secs(120);
        let status = loop {
            assert!(
                Instant::now() < deadline,
                "the run did not end within 120 s"
            );
            // What squeue lists by default: queued, running, completing.
            let ours = jobs(&cluster, "PENDING,CONFIGURING,RUNNING,COMPLETING,SUSPENDED")
                .iter()
                .filter(|(_, name)| name.starts_with("pp-"))
                .count();
            most = most.max(ours);
            if !released && read(&env.path("head.err")).contains(" pending (Resources)") {
                cluster.ask("scancel", &[&blocker.to_string()]);
                released = true;
            }
            if let Some(status) = head.try_wait().unwrap() {
                break status;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let err = read(&env.path("head.err"));
        assert!(status.success(), "{err}\n{}", cluster.logs());
        assert_eq!(most, 1, "at most one job of the head in the queue: {err}");
        assert!(
            err.lines()
                .any(|l| l.contains("Slurm job") && l.ends_with(" pending (Resources)")),
            "{err}"
        );
        assert_eq!(samples_per_key(&env).len(), runs, "{err}");
    }
}

/// `run --executor slurm` as a cluster operator sees it: the calls it
/// makes of the controller, how `--jobs` fills the queue.
mod operator {
    use std::time::Duration;

    use std::collections::BTreeMap;
    use std::path::PathBuf;

    use super::run::*;
    use crate::common::TestEnv;
    use crate::common::slurm::{Cluster, GPU_TYPES, NODES};

    /// The head asks the controller about its jobs once per poll interval
    /// (`PERFPIPE_SLURM_POLL_MS=200`), with 9 launches as with 30: never
    /// two calls of `squeue`, `scontrol` or `sacct` within one interval.
    #[test]
    fn one_squeue_per_poll_interval_whatever_the_number_of_launches() {
        let Some(cluster) = Cluster::start() else {
            return;
        };
        for launches in [9, 30] {
            let env = TestEnv::tiny();
            env.write("sweep.kdl", &sweep_study(launches));
            // Sixteen launches at once over the two nodes, not two: the
            // calls are counted, not the measurements.
            env.write(
                "perfpipe.toml",
                "[executor.slurm]\nexclusive = false\ncpus_per_gpu = 1\nmem_per_gpu = \"500M\"\n",
            );
            let (path, calls) = counting_shims(&env);
            let started = std::time::Instant::now();
            let out = command_of("sweep.kdl", &env, &cluster, "slurm", &[])
                .env("PATH", &path)
                .env("PERFPIPE_SIM_LOAD_MS", "0")
                .env("PERFPIPE_SLURM_POLL_MS", "200")
                .output()
                .unwrap();
            let took = started.elapsed();
            let err = crate::common::stderr(&out);
            assert!(out.status.success(), "{err}\n{}", cluster.logs());
            let submitted = err.lines().filter(|l| l.ends_with(" pending")).count();
            assert_eq!(submitted, launches, "{err}");
            let log = read(&calls);
            let calls: Vec<(u128, &str)> = log
                .lines()
                .map(|l| {
                    let (at, name) = l.split_once(' ').unwrap();
                    (at.parse().unwrap(), name)
                })
                .collect();
            assert!(
                calls.iter().all(|(_, name)| *name == "squeue"),
                "only squeue: {log}"
            );
            let poll_ns = Duration::from_millis(200).as_nanos();
            let closest = calls
                .windows(2)
                .map(|w| w[1].0 - w[0].0)
                .min()
                .unwrap_or(u128::MAX);
            // The shim's clock may round: 90 % of the interval.
            assert!(
                closest >= poll_ns * 9 / 10,
                "two calls {} ms apart with {launches} launches:\n{log}",
                closest / 1_000_000
            );
            eprintln!(
                "{launches} launches: {} calls of the controller in {:.1?} (poll 200 ms)",
                calls.len(),
                took
            );
        }
    }

    /// The head's jobs running now, counted per node.
    fn running_per_node(cluster: &Cluster) -> BTreeMap<String, usize> {
        let mut per_node = BTreeMap::new();
        for node in cluster
            .ask("squeue", &["-h", "-t", "RUNNING", "-o", "%N"])
            .lines()
        {
            *per_node.entry(node.trim().to_owned()).or_default() += 1;
        }
        per_node
    }

    /// A launch owns its node by default (`--exclusive`): of four one-GPU
    /// launches whose engines load until released, one per node runs and
    /// the others wait, never two measured at once on one node. With the
    /// operator's opt-out (`exclusive = false`, each launch's CPUs and
    /// memory sized), all four run at once, two or more on one node.
    #[test]
    fn launches_own_their_node_unless_the_operator_opts_out() {
        let Some(cluster) = Cluster::start() else {
            return;
        };
        for exclusive in [true, false] {
            let env = TestEnv::tiny();
            env.write("sweep.kdl", &sweep_study(4));
            if !exclusive {
                env.write(
                    "perfpipe.toml",
                    "[executor.slurm]\nexclusive = false\ncpus_per_gpu = 1\nmem_per_gpu = \"500M\"\n",
                );
            }
            let release = env.path("release");
            let (path, _) = sbatch_shim(&env);
            let mut cmd = command_of("sweep.kdl", &env, &cluster, "slurm", &[]);
            cmd.env("PERFPIPE_SIM_LOAD_UNTIL", &release)
                .env("PATH", &path);
            let mut head = spawn(&mut cmd, &env.path("head.err"));
            let at_once = if exclusive { NODES } else { 4 };
            // Every launch submitted, and those that may run started.
            wait_until(
                Duration::from_secs(60),
                "the jobs that may run start",
                || {
                    jobs(&cluster, "PENDING,RUNNING").len() == 4
                        && running_per_node(&cluster).values().sum::<usize>() >= at_once
                },
            );
            let per_node = running_per_node(&cluster);
            let most = per_node.values().copied().max().unwrap_or(0);
            let err = read(&env.path("head.err"));
            if exclusive {
                assert_eq!(most, 1, "one launch per node: {per_node:?}\n{err}");
                assert_eq!(jobs(&cluster, "PENDING").len(), 4 - NODES, "{err}");
            } else {
                assert!(most >= 2, "launches share a node: {per_node:?}\n{err}");
            }
            std::fs::write(&release, "").unwrap();
            let status = exit_within(&mut head, Duration::from_secs(60), "the run");
            let err = read(&env.path("head.err"));
            assert!(status.success(), "{err}\n{}", cluster.logs());
            assert_eq!(samples_per_key(&env).len(), 4, "{err}");
            // What each job asked is in the script Slurm keeps.
            let asks = if exclusive {
                "--exclusive --mem=0"
            } else {
                "--cpus-per-task=1 --mem=500M"
            };
            assert!(
                scripts(&env).iter().all(|s| s.contains(asks)),
                "{asks}: {:?}",
                scripts(&env)
            );
        }
    }

    /// The batch scripts the head submitted (an `sbatch` shim keeps each).
    fn scripts(env: &TestEnv) -> Vec<String> {
        std::fs::read_dir(env.path("scripts"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| std::fs::read_to_string(e.path()).unwrap())
            .collect()
    }

    /// The declared hardware reaches Slurm as its GPU type
    /// (`[executor.slurm.hardware]`): an A100 study's jobs run on the A100
    /// node only. A study of hardware without a mapping is refused before
    /// anything is submitted, naming the mapping to add.
    #[test]
    fn declared_hardware_lands_on_its_gpu_type_and_unmapped_hardware_is_refused() {
        let Some(cluster) = Cluster::start() else {
            return;
        };
        let env = TestEnv::tiny();
        env.write("sweep.kdl", &sweep_study(4));
        let (path, submitted) = sbatch_shim(&env);
        env.write(
            "perfpipe.toml",
            "[executor.slurm.hardware.\"nvidia-h100-80gb-hbm3\"]\ngres = \"h100\"\n",
        );
        let out = command_of("sweep.kdl", &env, &cluster, "slurm", &[])
            .env("PATH", &path)
            .output()
            .unwrap();
        let err = crate::common::stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        // Without miette's frame, as one line.
        let words = err
            .split_whitespace()
            .filter(|w| *w != "│")
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            words.contains(
                "the experiment's hardware `nvidia-a100-sxm4-80gb` has no Slurm mapping in `[executor.slurm.hardware]` of perfpipe.toml"
            ),
            "{err}"
        );
        assert!(
            words.contains("help: add `[executor.slurm.hardware.\"nvidia-a100-sxm4-80gb\"]`"),
            "{err}"
        );
        assert!(
            !submitted.exists(),
            "nothing submitted: {}",
            read(&submitted)
        );

        // The four launches at once on the one A100 node (sharing it).
        env.write(
            "perfpipe.toml",
            "[executor.slurm]\nexclusive = false\ncpus_per_gpu = 1\nmem_per_gpu = \"500M\"\n\
             [executor.slurm.hardware.\"nvidia-a100-sxm4-80gb\"]\ngres = \"a100\"\nconstraint = \"a100\"\n",
        );
        let out = command_of("sweep.kdl", &env, &cluster, "slurm", &[])
            .env("PATH", &path)
            .output()
            .unwrap();
        let err = crate::common::stderr(&out);
        assert!(out.status.success(), "{err}\n{}", cluster.logs());
        let a100 = &cluster.nodes()[GPU_TYPES.iter().position(|t| *t == "a100").unwrap()];
        let nodes: Vec<&str> = err
            .lines()
            .filter_map(|l| l.split_once(" running on ").map(|(_, node)| node))
            .collect();
        assert!(!nodes.is_empty(), "{err}");
        assert!(nodes.iter().all(|n| n == a100), "on {a100} only: {err}");
        assert!(
            scripts(&env)
                .iter()
                .all(|s| s.contains("--gres=gpu:a100:1 --constraint=a100")),
            "{:?}",
            scripts(&env)
        );
    }

    /// A stand-in `srun` first on `PATH` that checks its arguments as
    /// Pyxis documents them (<https://github.com/NVIDIA/pyxis/wiki/Usage>:
    /// `--container-image=[USER@][REGISTRY#]IMAGE[:TAG]|PATH`,
    /// `--container-mounts=SRC:DST[:FLAGS][,SRC:DST...]`,
    /// `--container-workdir=PATH`, `--no-container-mount-home`), logs them
    /// to `srun-args`, and runs the command outside any container (Pyxis is
    /// not packaged in Debian).
    fn pyxis_srun(env: &TestEnv) -> (std::ffi::OsString, PathBuf) {
        use std::os::unix::fs::PermissionsExt;
        let log = env.path("srun-args");
        env.write(
            "pyxis/srun",
            &format!(
                r#"#!/bin/bash
set -u
fail() {{ echo "pyxis stand-in: $*" >&2; exit 1; }}
image= mounts= workdir= nohome=
while [ $# -gt 0 ]; do
  case $1 in
    --ntasks=1) ;;
    --container-image=*) image=${{1#*=}} ;;
    --container-mounts=*) mounts=${{1#*=}} ;;
    --container-workdir=*) workdir=${{1#*=}} ;;
    --no-container-mount-home) nohome=1 ;;
    --*) fail "unknown option $1" ;;
    *) break ;;
  esac
  echo "$1" >> {log}
  shift
done
[[ $image =~ ^([a-z0-9.-]+(:[0-9]+)?#)?[a-z0-9._/-]+@sha256:[0-9a-f]{{64}}$ ]] || fail "image not an enroot URI by digest: $image"
[ -n "$nohome" ] || fail "the home directory is mounted"
[[ $workdir == /* ]] || fail "workdir not absolute: $workdir"
IFS=, read -ra each <<< "$mounts"
for m in "${{each[@]}}"; do
  src=${{m%%:*}} dst=${{m#*:}}
  [[ $src == /* && -e $src ]] || fail "mount source missing: $m"
  [[ $dst == /* || $dst == .* ]] || fail "mount target not absolute: $m"
done
[ $# -gt 0 ] || fail "no command"
echo "COMMAND $*" >> {log}
exec "$@"
"#,
                log = log.display()
            ),
        );
        std::fs::set_permissions(
            env.path("pyxis/srun"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let path = std::env::join_paths(std::iter::once(env.path("pyxis")).chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
        ))
        .unwrap();
        (path, log)
    }

    /// `container = "pyxis"`: each job's one step runs in the engine's
    /// image by digest in enroot's form, the store and perfpipe mounted,
    /// the home directory not, perfpipe inside starting the engine itself
    /// (`realise --engine-here`); a stand-in `srun` checks the arguments
    /// as Pyxis documents them. An engine without `image=` is refused
    /// before anything is submitted, never run bare.
    #[test]
    fn pyxis_runs_each_launch_in_its_image_by_digest_and_an_imageless_engine_is_refused() {
        let Some(cluster) = Cluster::start() else {
            return;
        };
        let env = TestEnv::tiny();
        let digest = "0123456789abcdef".repeat(4);
        let study = sweep_study(2).replace(
            "engine vllm version=\"0.11.0\"",
            &format!(
                "engine vllm version=\"0.11.0\" image=\"nvcr.io/nvidia/vllm:25.09-py3@sha256:{digest}\""
            ),
        );
        env.write("pyxis.kdl", &study);
        env.write("sweep.kdl", &sweep_study(2));
        env.write("perfpipe.toml", "[executor.slurm]\ncontainer = \"pyxis\"\n");
        let (path, submitted) = sbatch_shim(&env);
        let (with_srun, srun_args) = pyxis_srun(&env);

        let out = command_of("sweep.kdl", &env, &cluster, "slurm", &[])
            .env("PATH", &path)
            .output()
            .unwrap();
        let err = crate::common::stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        // Without miette's frame, as one line.
        let words = err
            .split_whitespace()
            .filter(|w| *w != "│")
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            words.contains("the experiment's engine names no `image=`"),
            "{err}"
        );
        assert!(
            words.contains("a job never runs bare in its place"),
            "{err}"
        );
        assert!(!submitted.exists(), "nothing submitted");

        let with_both = std::env::join_paths(
            std::env::split_paths(&with_srun)
                .take(1)
                .chain(std::env::split_paths(&path)),
        )
        .unwrap();
        let out = command_of("pyxis.kdl", &env, &cluster, "slurm", &[])
            .env("PATH", &with_both)
            .output()
            .unwrap();
        let err = crate::common::stderr(&out);
        assert!(out.status.success(), "{err}\n{}", read(&srun_args));
        let args = read(&srun_args);
        assert!(
            args.contains(&format!(
                "--container-image=nvcr.io#nvidia/vllm@sha256:{digest}\n"
            )),
            "{args}"
        );
        let store = std::fs::canonicalize(env.path("store")).unwrap();
        assert!(
            args.contains(&format!("--container-workdir={}\n", store.display())),
            "{args}"
        );
        let commands: Vec<&str> = args.lines().filter(|l| l.starts_with("COMMAND ")).collect();
        assert_eq!(commands.len(), 2, "{args}");
        assert!(
            commands
                .iter()
                .all(|c| c.contains(" realise ") && c.ends_with(" --engine-here")),
            "{args}"
        );
        assert_eq!(samples_per_key(&env).len(), 2, "{err}");
    }

    /// `--jobs 2` bounds the jobs queued or running, not the launches not
    /// yet reported: while the first job's engine is still loading, the
    /// other launches go through the second place, one after another.
    #[test]
    fn jobs_submits_a_later_launch_while_an_earlier_one_still_runs() {
        use std::os::unix::fs::PermissionsExt;

        let Some(cluster) = Cluster::start() else {
            return;
        };
        let env = TestEnv::tiny();
        env.write("sweep.kdl", &sweep_study(4));
        // The first submission's engine loads until `release` exists.
        let release = env.path("release");
        let first = env.path("first-submitted");
        env.write(
            "slow-first/sbatch",
            &format!(
                "#!/bin/sh\n\
                 if mkdir {first} 2>/dev/null; then\n\
                 \x20 exec /usr/bin/sbatch \"$@\" --export=ALL,PERFPIPE_SIM_LOAD_UNTIL={release}\n\
                 fi\n\
                 exec /usr/bin/sbatch \"$@\"\n",
                first = first.display(),
                release = release.display(),
            ),
        );
        std::fs::set_permissions(
            env.path("slow-first/sbatch"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let path = std::env::join_paths(std::iter::once(env.path("slow-first")).chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
        ))
        .unwrap();
        let mut cmd = command_of("sweep.kdl", &env, &cluster, "slurm", &["--jobs", "2"]);
        cmd.env("PATH", &path);
        let mut head = spawn(&mut cmd, &env.path("head.err"));
        let done = || {
            read(&env.path("head.err"))
                .lines()
                .filter(|l| l.ends_with(" done"))
                .count()
        };
        // The three launches after the first end while it still loads.
        wait_until(
            Duration::from_secs(60),
            "three launches done beside the first",
            || done() == 3,
        );
        let err = read(&env.path("head.err"));
        let running = jobs(&cluster, "RUNNING");
        assert_eq!(running.len(), 1, "the first still runs: {running:?}\n{err}");
        std::fs::write(&release, "").unwrap();
        let status = exit_within(&mut head, Duration::from_secs(60), "the run");
        let err = read(&env.path("head.err"));
        assert!(status.success(), "{err}\n{}", cluster.logs());
        assert_eq!(done(), 4, "{err}");
    }
}

/// The wall time of the repository's qwen3-235b-a100 study on `--runtime
/// sim`, locally, through the test cluster's two nodes and through one of
/// them, and the jobs it took:
/// `cargo test --test cli slurm::measure -- --ignored --nocapture` (as root).
#[test]
#[ignore = "minutes: a figure for docs/slurm.md, not a check"]
fn measure() {
    use std::time::Instant;

    let Some(cluster) = Cluster::start() else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let one_node = format!("--nodelist={}", cluster.nodes()[0]);
    let run = |name: &str, args: &[&str]| {
        let store = scratch.path().join(name);
        let report = scratch.path().join(format!("{name}.md"));
        let started = Instant::now();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_perfpipe"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["run", "experiments/qwen3-235b-a100.kdl", "--runtime", "sim"])
            .args(["--locked", "--offline", "--store"])
            .arg(&store)
            .arg("--report")
            .arg(&report)
            .args(args)
            .env("SLURM_CONF", cluster.conf())
            .env("PERFPIPE_SLURM_POLL_MS", "500")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{err}\n{}", cluster.logs());
        let jobs = err.lines().filter(|l| l.ends_with(" pending")).count();
        eprintln!("{name}: {:.1?}, {jobs} Slurm jobs", started.elapsed());
    };
    run("local", &["--executor", "local"]);
    run("slurm-two-nodes", &["--executor", "slurm"]);
    run(
        "slurm-one-node",
        &["--executor", "slurm", "--sbatch-arg", &one_node],
    );
}
