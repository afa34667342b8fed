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

    const POLL: Duration = Duration::from_millis(200);

    fn request(launch: char, command: &str) -> JobRequest {
        JobRequest {
            launch_key: launch.to_string().repeat(64),
            store: slurm::script::store_id(Path::new("/a/store")),
            run_keys: vec!["1".repeat(64), "2".repeat(64)],
            gpus: 2,
            whole_node: false,
            command: vec!["sh".into(), "-c".into(), command.into()],
            image: None,
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
        let script = slurm::script::script(job, &options);
        let path = cluster.path(&format!(
            "left-{}.sh",
            slurm::script::job_name(&job.launch_key)
        ));
        std::fs::write(&path, script).unwrap();
        let mut args = vec!["--parsable".to_owned()];
        args.extend(slurm::script::sbatch_args(
            job,
            &options,
            Path::new("/dev/null"),
        ));
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

    /// A job Slurm ended at its time limit is not resubmitted with the same
    /// limit (it would end so again).
    #[test]
    fn a_job_that_reached_its_time_limit_is_not_resubmitted() {
        let Some(cluster) = Cluster::start() else {
            return;
        };
        let job = request('9', "sleep 600");
        let options = SlurmOptions {
            time_limit: Some("1".into()),
            ..SlurmOptions::default()
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let logs = cluster.path("logs/timeout");
        std::fs::create_dir_all(&logs).unwrap();
        let (_never, cancel) = watch::channel(false);
        let mut events = Vec::new();
        let followed = runtime
            .block_on(follow(
                &slurm(&cluster),
                &job,
                &options,
                &logs,
                Duration::from_secs(1),
                cancel,
                &mut |e| events.push(e),
            ))
            .unwrap();
        assert_eq!(followed.verdict, Verdict::TimedOut, "{events:?}");
        assert_eq!(followed.jobs.len(), 1, "{events:?}");
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
                gpus: whole.engine.gpus_per_instance * whole.engine.instances,
                whole_node: false,
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
                image: None,
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
    const LOAD_TIMING: &str = "load:ttft_ms=100,ttft_ms_per_req=5,itl_ms=10,itl_ms_per_req=0.5";

    /// `run tiny.kdl --runtime sim --executor EXECUTOR ARGS`, its launches on `cluster`.
    fn command(env: &TestEnv, cluster: &Cluster, executor: &str, args: &[&str]) -> Command {
        let mut cmd = env.cmd(
            &[
                &[
                    "run",
                    "tiny.kdl",
                    "--runtime",
                    "sim",
                    "--executor",
                    executor,
                ][..],
                args,
            ]
            .concat(),
        );
        cmd.env("SLURM_CONF", cluster.conf())
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("PERFPIPE_SLURM_POLL_MS", "200")
            .env("PERFPIPE_SIM_TIMING", LOAD_TIMING);
        cmd
    }

    fn run(env: &TestEnv, cluster: &Cluster, executor: &str) -> Output {
        command(env, cluster, executor, &[])
            .output()
            .expect("perfpipe runs")
    }

    /// Starts `cmd`, its standard error to `err` (read it with [`read`]).
    fn spawn(cmd: &mut Command, err: &PathBuf) -> Child {
        cmd.stdout(Stdio::null())
            .stderr(std::fs::File::create(err).unwrap())
            .spawn()
            .expect("perfpipe starts")
    }

    fn read(path: &PathBuf) -> String {
        std::fs::read_to_string(path).unwrap_or_default()
    }

    /// Waits for `child` to exit, killing it and failing after `limit`.
    fn exit_within(child: &mut Child, limit: Duration, what: &str) -> std::process::ExitStatus {
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

    fn wait_until(limit: Duration, what: &str, mut ready: impl FnMut() -> bool) {
        let deadline = Instant::now() + limit;
        while !ready() {
            assert!(Instant::now() < deadline, "{what} within {limit:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The jobs of the cluster in `states` (`squeue -t`), as (id, name).
    fn jobs(cluster: &Cluster, states: &str) -> Vec<(u64, String)> {
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
    /// (its `--job-name=` argument) to `submitted` and hands on to the real one.
    fn sbatch_shim(env: &TestEnv) -> (std::ffi::OsString, PathBuf) {
        let log = env.path("submitted");
        let shim = env.path("shim/sbatch");
        env.write(
            "shim/sbatch",
            &format!(
                "#!/bin/sh\n\
                 for arg; do case $arg in --job-name=*) echo \"${{arg#--job-name=}}\" >> {log};; esac; done\n\
                 exec /usr/bin/sbatch \"$@\"\n",
                log = log.display()
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

    /// How many samples the store holds of each key.
    fn samples_per_key(env: &TestEnv) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for sample in env.samples() {
            let key = sample.split('/').next().unwrap().to_owned();
            *counts.entry(key).or_default() += 1;
        }
        counts
    }

    fn keys(env: &TestEnv) -> Vec<String> {
        samples_per_key(env).into_keys().collect()
    }

    /// How many runs `plan` says the study has.
    fn planned_runs(env: &TestEnv) -> usize {
        let out = env.run(&["plan", "tiny.kdl", "--runtime", "sim"]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.lines()
            .find_map(|l| l.split_once(" runs: ")?.0.trim().parse().ok())
            .unwrap_or_else(|| panic!("no run count in:\n{text}"))
    }

    /// Each key's stored result as `(status, what does not depend on wall time)`.
    fn results(env: &TestEnv) -> BTreeMap<String, serde_json::Value> {
        env.results()
            .into_iter()
            .map(|(_, r)| (r["key"].as_str().unwrap().to_owned(), r))
            .collect()
    }

    /// The results of two stores agree: counts exactly, latencies (a
    /// function of the load under [`LOAD_TIMING`]) within 5 % and 2 ms.
    fn assert_same_results(slurm: &TestEnv, local: &TestEnv) {
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

        let local = TestEnv::tiny();
        let out = run(&local, &cluster, "local");
        assert!(out.status.success(), "{}", stderr(&out));
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
        // Two at a time, each engine loading for 3 s: when the head is
        // killed, jobs run and launches wait to be submitted.
        let head = |err: &str| {
            let mut cmd = command(&env, &cluster, "slurm", &["--jobs", "2"]);
            cmd.env("PATH", &path).env("PERFPIPE_SIM_LOAD_MS", "3000");
            spawn(&mut cmd, &env.path(err))
        };
        let mut first = head("first.err");
        wait_until(Duration::from_secs(60), "a job runs", || {
            !jobs(&cluster, "RUNNING").is_empty()
        });
        first.kill().unwrap();
        first.wait().unwrap();
        let left = jobs(&cluster, "PENDING,RUNNING");
        assert!(!left.is_empty(), "{}", read(&env.path("first.err")));

        let mut second = head("second.err");
        let status = exit_within(&mut second, Duration::from_secs(120), "the second run");
        let err = read(&env.path("second.err"));
        assert!(status.success(), "{err}\n{}", cluster.logs());
        // (A job may end between the kill and the second run.)
        assert!(
            left.iter()
                .any(|(id, _)| err.contains(&format!("Slurm job {id} adopted ("))),
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
        let mut cmd = command(&env, &cluster, "slurm", &["--jobs", "2"]);
        cmd.env("PERFPIPE_SIM_LOAD_MS", "3000");
        let mut head = spawn(&mut cmd, &env.path("head.err"));
        wait_until(Duration::from_secs(60), "a job runs", || {
            !jobs(&cluster, "RUNNING").is_empty()
        });
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
        cluster.wait_until_empty(Duration::from_secs(30));
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
        let mut cmd = command(&env, &cluster, "slurm", &["--retries", "1"]);
        cmd.env(name, value).env("PERFPIPE_SIM_LOAD_MS", "3000");
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
        let mut cmd = command(&env, &cluster, "slurm", &["--jobs", "2"]);
        cmd.env("PERFPIPE_SIM_LOAD_MS", "3000");
        let mut head = spawn(&mut cmd, &env.path("head.err"));
        wait_until(Duration::from_secs(60), "a job runs", || {
            !jobs(&cluster, "RUNNING").is_empty()
        });
        cluster.stop_controller();
        wait_until(Duration::from_secs(30), "the head says it waits", || {
            read(&env.path("head.err")).contains("Slurm's controller does not answer")
        });
        std::thread::sleep(Duration::from_secs(5));
        assert!(
            head.try_wait().unwrap().is_none(),
            "{}",
            read(&env.path("head.err"))
        );
        cluster.start_controller();
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
        // The first head's jobs load their engines for 40 s: still running
        // when the controller is back (each `squeue` without one takes
        // seconds to fail); the second head's, 3 s.
        let head = |cluster: &Cluster, err: &str, load_ms: &str| {
            let mut cmd = command(
                &env,
                cluster,
                "slurm",
                &["--jobs", "2", "--slurm-patience", "15"],
            );
            cmd.env("PERFPIPE_SIM_LOAD_MS", load_ms);
            spawn(&mut cmd, &env.path(err))
        };
        let mut first = head(&cluster, "first.err", "40000");
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

        let mut second = head(&cluster, "second.err", "3000");
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
        // Every GPU held until the head has said its first job waits for
        // Resources (then cancelled): perfpipe's first job waits, however
        // slowly the head starts.
        let blocker = cluster
            .ask(
                "sbatch",
                &[
                    "--parsable",
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

/// The wall time of the repository's qwen3-235b-a100 study on `--runtime
/// sim`, locally and through the test cluster, and the jobs it took:
/// `cargo test --test cli slurm::measure -- --ignored --nocapture` (as root).
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
