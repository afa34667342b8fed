//! Against a real one-node Slurm cluster (`common::slurm`): what perfpipe's
//! Slurm executor relies on, and the executor itself.

use std::time::Duration;

use crate::common::slurm::Cluster;

#[test]
fn slurm_grants_disjoint_gpus_through_cuda_visible_devices() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let script = cluster.path("devices.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\necho \"$CUDA_VISIBLE_DEVICES\" > \"$1\"\nsleep 2\n",
    )
    .unwrap();
    let submit = |out: &str| {
        let out = cluster.path(out);
        cluster
            .ask(
                "sbatch",
                &[
                    "--parsable",
                    "--gres=gpu:4",
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

mod executor {
    use std::path::Path;
    use std::time::{Duration, Instant};

    use perfpipe::exec::slurm::{
        self, Followed, JobEvent, JobRequest, Slurm, SlurmOptions, Verdict, follow,
    };
    use tokio::sync::watch;

    use crate::common::slurm::Cluster;

    const POLL: Duration = Duration::from_millis(200);

    fn request(launch: char, command: &str) -> JobRequest {
        JobRequest {
            launch_key: launch.to_string().repeat(64),
            run_keys: vec!["1".repeat(64), "2".repeat(64)],
            gpus: 2,
            whole_node: false,
            command: vec!["sh".into(), "-c".into(), command.into()],
            image: None,
        }
    }

    fn run(
        cluster: &Cluster,
        job: &JobRequest,
        cancel: watch::Receiver<bool>,
    ) -> (Result<Followed, slurm::Error>, Vec<JobEvent>) {
        let slurm = Slurm {
            conf: Some(cluster.conf()),
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut events = Vec::new();
        let log = cluster.path("job.log");
        let followed = runtime.block_on(follow(
            &slurm,
            job,
            &SlurmOptions::default(),
            &log,
            POLL,
            cancel,
            &mut |e| events.push(e),
        ));
        (followed, events)
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
        let script = slurm::script::script(&job, &SlurmOptions::default(), Path::new("/dev/null"));
        std::fs::write(cluster.path("left.sh"), script).unwrap();
        let left: u64 = cluster
            .ask(
                "sbatch",
                &["--parsable", cluster.path("left.sh").to_str().unwrap()],
            )
            .trim()
            .parse()
            .unwrap();
        let (followed, events) = run(&cluster, &job, cancel);
        let followed = followed.unwrap();
        assert!(followed.adopted, "{events:?}");
        assert_eq!(followed.jobs, [left]);
        assert_eq!(followed.verdict, Verdict::Ended);
        assert!(marker.exists());
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
            JobEvent::Resubmitting { why, .. } if why.contains("CANCELLED")
        )));
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

    /// Each launch of a study goes to a job running `perfpipe realise` on
    /// its material; the store then holds every run, and a second time
    /// submits nothing.
    #[test]
    fn a_studys_launches_run_as_jobs_of_perfpipe_realise_once() {
        use perfpipe::drv::{LaunchKey, LaunchMaterial};
        use perfpipe::exec::slurm::{SlurmExec, execute};

        let Some(cluster) = Cluster::start() else {
            return;
        };
        let env = crate::common::TestEnv::tiny();
        let planned = env.run(&["plan", "tiny.kdl", "--runtime", "sim"]);
        assert!(
            planned.status.success(),
            "{}",
            crate::common::stderr(&planned)
        );
        let launches: Vec<(LaunchKey, LaunchMaterial)> = std::fs::read_dir(env.path("store/drv"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|path| {
                let key = LaunchKey::parse(&path.file_stem().unwrap().to_string_lossy()).unwrap();
                let material = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
                (key, material)
            })
            .collect();
        assert!(!launches.is_empty());
        let runs: usize = launches.iter().map(|(_, m)| m.runs.len()).sum();
        let store = perfpipe::store::Store::open(env.path("store")).unwrap();
        let exec = SlurmExec {
            slurm: Slurm {
                conf: Some(cluster.conf()),
            },
            options: SlurmOptions::default(),
            program: env!("CARGO_BIN_EXE_perfpipe").into(),
            poll: POLL,
        };
        let mut events = Vec::new();
        let summary = execute(&launches, &store, &exec, &mut |_, e| events.push(e.clone()))
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
        execute(&launches, &store, &exec, &mut |_, e| again.push(e.clone())).unwrap();
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
}

/// `perfpipe run --executor slurm` end to end on the test cluster.
mod run {
    use crate::common::slurm::Cluster;
    use crate::common::{TestEnv, stderr};

    /// `run tiny.kdl --runtime sim` with `executor`, its launches on `cluster`.
    fn run(env: &TestEnv, cluster: &Cluster, executor: &str) -> std::process::Output {
        env.cmd(&[
            "run",
            "tiny.kdl",
            "--runtime",
            "sim",
            "--executor",
            executor,
        ])
        .env("SLURM_CONF", cluster.conf())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("PERFPIPE_SLURM_POLL_MS", "200")
        .output()
        .expect("perfpipe runs")
    }

    fn keys(env: &TestEnv) -> Vec<String> {
        let mut keys: Vec<String> = env
            .samples()
            .iter()
            .filter_map(|s| s.split('/').next().map(str::to_owned))
            .collect();
        keys.dedup();
        keys
    }

    #[test]
    fn a_study_through_slurm_stores_the_keys_of_a_local_run_once() {
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

        let local = TestEnv::tiny();
        let out = run(&local, &cluster, "local");
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(!keys(&env).is_empty());
        assert_eq!(keys(&env), keys(&local), "the same runs, the same keys");

        let again = run(&env, &cluster, "slurm");
        assert!(again.status.success(), "{}", stderr(&again));
        assert!(
            !stderr(&again).contains("Slurm job"),
            "a second run submits nothing: {}",
            stderr(&again)
        );
        cluster.wait_until_empty(std::time::Duration::from_secs(30));
    }
}

/// The wall time of the repository's qwen3-235b-a100 study on `--runtime
/// sim`, locally and through the test cluster, and the jobs it took:
/// `PERFPIPE_TEST_SLURM=1 cargo test --test cli slurm::measure -- --ignored --nocapture`.
#[test]
#[ignore = "minutes: a figure for docs/slurm.md, not a check"]
fn measure() {
    use std::time::Instant;

    let Some(cluster) = Cluster::start() else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let run = |executor: &str| {
        let store = scratch.path().join(executor);
        let report = scratch.path().join(format!("{executor}.md"));
        let started = Instant::now();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_perfpipe"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["run", "experiments/qwen3-235b-a100.kdl", "--runtime", "sim"])
            .args(["--locked", "--offline", "--executor", executor, "--store"])
            .arg(&store)
            .arg("--report")
            .arg(&report)
            .env("SLURM_CONF", cluster.conf())
            .env("PERFPIPE_SLURM_POLL_MS", "500")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{err}\n{}", cluster.logs());
        let jobs = err.lines().filter(|l| l.ends_with(" pending")).count();
        eprintln!("{executor}: {:.1?}, {jobs} Slurm jobs", started.elapsed());
    };
    run("local");
    run("slurm");
}
