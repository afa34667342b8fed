//! The job of one launch: its name (`pp-<launch key, 12 hex>`), its
//! comment (the store it writes to and the run keys it measures: how a
//! later `run` of that store finds and adopts it), its GPUs, every option
//! as one `sbatch` argument, and the batch script of the one command it
//! runs. No option is a line of the script, so no value can become a
//! command. (pure)

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::options::{Checked, Placement, Share, SlurmOptions};
use super::pyxis::PyxisStep;
use super::state::QueuedJob;

/// What one job runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRequest {
    /// The launch's key (hex); its first 12 digits name the job.
    pub launch_key: String,
    /// The identity of the store the job writes to ([`store_id`]): a job
    /// belongs to one store, and only a `run` of that store adopts or
    /// cancels it.
    pub store: String,
    /// The keys of the runs the launch measures.
    pub run_keys: Vec<String>,
    /// Its GPUs, their type, its node's CPUs and memory.
    pub placement: Placement,
    /// The argv of the job's one step (`perfpipe realise MATERIAL --store DIR`).
    pub command: Vec<String>,
    /// The step in the engine's image, under [`super::options::ContainerMode::Pyxis`].
    pub container: Option<PyxisStep>,
}

impl JobRequest {
    /// Whether `queued` (a job a killed head left, to adopt) serves this
    /// launch: perfpipe's, for the same store, measuring at least one of
    /// its runs. A launch rebuilt from the runs a half-done job has not
    /// stored yet has another key, but its runs are that job's.
    pub fn is_served_by(&self, queued: &QueuedJob) -> bool {
        self.served_runs(queued) > 0
    }

    /// Whether `queued` measures every run of this launch.
    pub fn is_wholly_served_by(&self, queued: &QueuedJob) -> bool {
        self.served_runs(queued) == self.run_keys.len()
    }

    fn served_runs(&self, queued: &QueuedJob) -> usize {
        match parse_comment(&queued.comment) {
            Some(job) if queued.name.starts_with(NAME_PREFIX) && job.store == self.store => self
                .run_keys
                .iter()
                .filter(|k| job.run_keys.contains(k))
                .count(),
            _ => 0,
        }
    }
}

const NAME_PREFIX: &str = "pp-";
const COMMENT_PREFIX: &str = "perfpipe:";

/// The job name of a launch: `pp-` and its key's first 12 hex digits.
pub fn job_name(launch_key: &str) -> String {
    format!("{NAME_PREFIX}{}", &launch_key[..launch_key.len().min(12)])
}

/// The identity of the store at `canonical_root` (its canonical absolute
/// path): the first 16 hex digits of the path's sha256. Two stores never
/// share one; every node reaches a store by the same path.
pub fn store_id(canonical_root: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let digest = Sha256::digest(canonical_root.as_os_str().as_bytes());
    hex::encode(&digest[..8])
}

/// The `--comment` of a launch's job: `perfpipe:STORE:KEY,KEY…`.
pub fn comment(job: &JobRequest) -> String {
    format!("{COMMENT_PREFIX}{}:{}", job.store, job.run_keys.join(","))
}

/// What perfpipe wrote in a job's comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobComment {
    pub store: String,
    pub run_keys: Vec<String>,
}

/// The store and run keys of a job's comment, when perfpipe wrote it (an
/// older perfpipe's comment names no store: its jobs are never adopted).
pub fn parse_comment(comment: &str) -> Option<JobComment> {
    let (store, keys) = comment
        .trim()
        .strip_prefix(COMMENT_PREFIX)?
        .split_once(':')?;
    Some(JobComment {
        store: store.to_owned(),
        run_keys: keys.split(',').map(str::to_owned).collect(),
    })
}

/// The log of a launch's job `id` in `dir`: `pp-KEY.ID.log`, each
/// attempt's its own (`output_pattern`).
pub fn log_path(dir: &Path, launch_key: &str, id: u64) -> PathBuf {
    if has_backslash(dir) {
        dir.join(format!("{}.log", job_name(launch_key)))
    } else {
        dir.join(format!("{}.{id}.log", job_name(launch_key)))
    }
}

/// The record job `id` (named `name`) leaves in `dir`, beside its log,
/// when its command ends: the command's exit status (see [`script`]). It
/// says how a job ended that Slurm no longer lists (`MinJobAge`), and a
/// failed job's exit status.
pub fn exit_record_path(dir: &Path, name: &str, id: u64) -> PathBuf {
    dir.join(format!("{name}.{id}.exit"))
}

/// Whether `name` is a job name perfpipe gives ([`job_name`]): `pp-` and
/// up to 12 hex digits, safe as part of a file's name.
pub fn is_job_name(name: &str) -> bool {
    name.strip_prefix(NAME_PREFIX).is_some_and(|hex| {
        (1..=12).contains(&hex.len()) && hex.bytes().all(|b| b.is_ascii_hexdigit())
    })
}

/// The `sbatch --output` of a launch's jobs in `dir`: `%j` the job id, so
/// that each attempt writes a log of its own. A `%` of `dir` would be a
/// pattern there, so it is doubled; in a directory with a backslash
/// (which turns Slurm's patterns off) every attempt appends to one log.
fn output_pattern(dir: &Path, launch_key: &str) -> String {
    if has_backslash(dir) {
        return log_path(dir, launch_key, 0).display().to_string();
    }
    let dir = dir.display().to_string().replace('%', "%%");
    format!("{dir}/{}.%j.log", job_name(launch_key))
}

fn has_backslash(dir: &Path) -> bool {
    dir.display().to_string().contains('\\')
}

/// What a job asks of its node, each one `sbatch` argument: its GPUs (of
/// their type), a node feature, its partition, and its CPUs and memory.
pub fn resources(placement: &Placement) -> Vec<String> {
    let mut args = vec!["--nodes=1".to_owned(), "--ntasks=1".to_owned()];
    if placement.gpus > 0 {
        let gres = match &placement.gpu_type {
            Some(kind) => format!("--gres=gpu:{kind}:{}", placement.gpus),
            None => format!("--gres=gpu:{}", placement.gpus),
        };
        args.push(gres);
    }
    if let Some(constraint) = &placement.constraint {
        args.push(format!("--constraint={constraint}"));
    }
    if let Some(partition) = &placement.partition {
        args.push(format!("--partition={partition}"));
    }
    match placement.share {
        // Every CPU and all the memory of the node.
        Share::Exclusive => args.extend(["--exclusive".to_owned(), "--mem=0".to_owned()]),
        Share::Shared { cpus, mem_mb } => {
            args.push(format!("--cpus-per-task={cpus}"));
            args.push(format!("--mem={mem_mb}M"));
        }
    }
    args
}

/// The `sbatch` arguments of a job, each option one argument: perfpipe's
/// own, then `options.sbatch_args` (they win). Its output goes to a log
/// of its own in `logs`.
pub fn sbatch_args(job: &JobRequest, options: &SlurmOptions, logs: &Path) -> Vec<String> {
    let mut args = vec![
        format!("--job-name={}", job_name(&job.launch_key)),
        format!("--comment={}", comment(job)),
    ];
    args.extend(resources(&job.placement));
    for (option, value) in options.checked() {
        // The hardware's own partition, when it has one.
        if option == Checked::Partition && job.placement.partition.is_some() {
            continue;
        }
        args.push(format!("{}={value}", option.sbatch_flag()));
    }
    args.push(format!(
        "--output={}",
        output_pattern(logs, &job.launch_key)
    ));
    // Slurm would requeue a job of a failed node by itself; perfpipe
    // resubmits it, counting the attempts.
    args.push("--no-requeue".to_owned());
    args.extend(options.sbatch_args.iter().cloned());
    args
}

/// The script `sbatch` runs as attempt `attempt` of its launch: the job's
/// one command, every word quoted (under Pyxis, its one `srun` step in the
/// engine's image); then the command's exit status, written to its record
/// in `logs` ([`exit_record_path`]), and the script exits with it.
///
/// The shell outlives the command, so that Slurm, which kills what is left
/// of the job once the script ends, never kills the command while it stops
/// its engines. Slurm's SIGTERM reaches the command (of the script's
/// process group) by itself, and the shell passes on one that reaches it
/// alone; one that comes before the command has started (a job cancelled
/// as it starts) ends the script there, never leaving a command that did
/// not see it. The command runs in the background of the shell for that
/// (so it starts with SIGINT ignored, as POSIX has it; perfpipe stops its
/// engines with SIGTERM). A job Slurm ends before its command started may
/// leave no record.
pub fn script(job: &JobRequest, attempt: u32, logs: &Path) -> String {
    let words: Vec<String> = match &job.container {
        Some(step) => ["srun".to_owned()]
            .into_iter()
            .chain(step.srun_args())
            .chain(job.command.iter().cloned())
            .collect(),
        None => job.command.clone(),
    };
    let command =
        shlex::try_join(words.iter().map(String::as_str)).expect("a command holds no NUL byte");
    let dir = logs.display().to_string();
    let dir = shlex::try_quote(&dir).expect("a path holds no NUL byte");
    let record = format!("{dir}/{}.\"$SLURM_JOB_ID\".exit", job_name(&job.launch_key));
    // What it asks, checked names and numbers only, kept by Slurm with the
    // script (`scontrol write batch_script ID`). The shell's own variables
    // are set first: the job inherits the head's environment.
    format!(
        "#!/bin/sh\n\
         # perfpipe: one engine launch measuring {} run(s); the results go to the store.\n\
         # perfpipe: it asks {}\n\
         pid= status=\n\
         export {}={attempt}\n\
         trap 'if [ -n \"$pid\" ]; then kill -TERM \"$pid\" 2>/dev/null; else exit 143; fi' HUP INT TERM\n\
         {command} &\n\
         pid=$!\n\
         while :; do wait \"$pid\"; status=$?; kill -0 \"$pid\" 2>/dev/null || break; done\n\
         echo \"$status\" > {record}\n\
         exit \"$status\"\n",
        job.run_keys.len(),
        resources(&job.placement).join(" "),
        crate::metrics::SLURM_ATTEMPT_ENV,
    )
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn request() -> JobRequest {
        JobRequest {
            launch_key: "0123456789abcdef".repeat(4),
            store: store_id(Path::new("/shared/store")),
            run_keys: vec!["a".repeat(64), "b".repeat(64)],
            placement: Placement {
                gpus: 4,
                gpu_type: None,
                constraint: None,
                partition: None,
                share: Share::Exclusive,
            },
            command: vec![
                "/opt/perfpipe".into(),
                "realise".into(),
                "/shared/store/launch material.json".into(),
            ],
            container: None,
        }
    }

    fn queued(name: &str, comment: &str) -> QueuedJob {
        QueuedJob {
            id: 1,
            name: name.into(),
            state: super::super::state::JobState::Running,
            reason: "None".into(),
            nodes: "n1".into(),
            comment: comment.into(),
        }
    }

    #[test]
    fn every_option_is_one_argument_and_the_script_runs_one_command() {
        let options = SlurmOptions {
            partition: Some("gpu".into()),
            time_limit: Some("2:00:00".into()),
            sbatch_args: vec!["--mem=0".into()],
            ..Default::default()
        };
        let job = request();
        let args = sbatch_args(&job, &options, Path::new("/shared/logs"));
        assert_eq!(
            args,
            [
                "--job-name=pp-0123456789ab".to_owned(),
                format!(
                    "--comment=perfpipe:{}:{},{}",
                    job.store,
                    "a".repeat(64),
                    "b".repeat(64)
                ),
                "--nodes=1".into(),
                "--ntasks=1".into(),
                "--gres=gpu:4".into(),
                "--exclusive".into(),
                "--mem=0".into(),
                "--partition=gpu".into(),
                "--time=2:00:00".into(),
                "--output=/shared/logs/pp-0123456789ab.%j.log".into(),
                "--no-requeue".into(),
                "--mem=0".into(),
            ]
        );
        assert_eq!(
            script(&job, 2, Path::new("/shared/store/logs/slurm")),
            "#!/bin/sh\n\
             # perfpipe: one engine launch measuring 2 run(s); the results go to the store.\n\
             # perfpipe: it asks --nodes=1 --ntasks=1 --gres=gpu:4 --exclusive --mem=0\n\
             pid= status=\n\
             export PERFPIPE_SLURM_ATTEMPT=2\n\
             trap 'if [ -n \"$pid\" ]; then kill -TERM \"$pid\" 2>/dev/null; else exit 143; fi' HUP INT TERM\n\
             /opt/perfpipe realise '/shared/store/launch material.json' &\n\
             pid=$!\n\
             while :; do wait \"$pid\"; status=$?; kill -0 \"$pid\" 2>/dev/null || break; done\n\
             echo \"$status\" > /shared/store/logs/slurm/pp-0123456789ab.\"$SLURM_JOB_ID\".exit\n\
             exit \"$status\"\n"
        );
    }

    #[test]
    fn a_shared_launch_asks_its_cpus_and_memory_and_a_typed_one_its_gpu_type() {
        let job = JobRequest {
            placement: Placement {
                gpus: 2,
                gpu_type: Some("h100".into()),
                constraint: Some("hbm3".into()),
                partition: Some("gpu-h100".into()),
                share: Share::Shared {
                    cpus: 16,
                    mem_mb: 131_072,
                },
            },
            ..request()
        };
        let options = SlurmOptions {
            partition: Some("default".into()),
            ..Default::default()
        };
        let args = sbatch_args(&job, &options, Path::new("/l"));
        assert_eq!(
            args[2..9],
            [
                "--nodes=1",
                "--ntasks=1",
                "--gres=gpu:h100:2",
                "--constraint=hbm3",
                "--partition=gpu-h100",
                "--cpus-per-task=16",
                "--mem=131072M",
            ]
        );
        assert!(
            !args.contains(&"--partition=default".to_owned()),
            "{args:?}"
        );
        assert!(
            script(&job, 1, Path::new("/l")).contains(
                "# perfpipe: it asks --nodes=1 --ntasks=1 --gres=gpu:h100:2 --constraint=hbm3 \
                 --partition=gpu-h100 --cpus-per-task=16 --mem=131072M\n"
            ),
            "{}",
            script(&job, 1, Path::new("/l"))
        );
    }

    #[test]
    fn pyxis_runs_the_one_step_in_the_image_each_word_quoted() {
        let digest = "ab".repeat(32);
        let job = JobRequest {
            container: Some(
                PyxisStep::new(
                    Some(&format!("nvcr.io/nvidia/vllm:25.09@sha256:{digest}")),
                    Path::new("/shared/store"),
                    Path::new("/opt/perfpipe"),
                )
                .unwrap(),
            ),
            ..request()
        };
        let script = script(&job, 1, Path::new("/l"));
        assert!(
            script.contains(&format!(
                "\nsrun '--ntasks=1' '--container-image=nvcr.io#nvidia/vllm@sha256:{digest}' \
                 '--container-mounts=/shared/store:/shared/store,/opt/perfpipe:/opt/perfpipe' \
                 '--container-workdir=/shared/store' --no-container-mount-home \
                 /opt/perfpipe realise '/shared/store/launch material.json' &\n"
            )),
            "{script}"
        );
    }

    /// The script records its command's exit status beside its log, in a
    /// directory whose name the shell would otherwise read, and exits with it.
    #[test]
    #[expect(
        clippy::disallowed_methods,
        reason = "the batch script, run as Slurm runs it"
    )]
    fn the_script_records_its_commands_exit_status_and_exits_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let logs = dir.path().join("it's $HOME `x`");
        std::fs::create_dir(&logs).unwrap();
        let job = JobRequest {
            command: vec![
                "sh".into(),
                "-c".into(),
                "echo $PERFPIPE_SLURM_ATTEMPT; exit 3".into(),
            ],
            ..request()
        };
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(script(&job, 2, &logs))
            .env("SLURM_JOB_ID", "77")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "2\n");
        let record = exit_record_path(&logs, &job_name(&job.launch_key), 77);
        assert_eq!(std::fs::read_to_string(record).unwrap(), "3\n");
        // A SIGTERM to the shell alone reaches the command, whose status
        // is recorded once it ended.
        let started = dir.path().join("started");
        let job = JobRequest {
            command: vec![
                "sh".into(),
                "-c".into(),
                format!(
                    "trap 'exit 7' TERM; touch {}; while :; do sleep 0.05; done",
                    started.display()
                ),
            ],
            ..request()
        };
        let mut shell = std::process::Command::new("sh")
            .arg("-c")
            .arg(script(&job, 1, &logs))
            .env("SLURM_JOB_ID", "78")
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !started.exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "the command never started"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // SAFETY: signals our own child.
        unsafe { libc::kill(shell.id() as i32, libc::SIGTERM) };
        assert_eq!(shell.wait().unwrap().code(), Some(7));
        let record = exit_record_path(&logs, &job_name(&job.launch_key), 78);
        assert_eq!(std::fs::read_to_string(record).unwrap(), "7\n");
        assert!(is_job_name("pp-0123456789ab"));
        for name in ["pp-", "pp-0123456789abc", "pp-../x", "other", "pp-01/2"] {
            assert!(!is_job_name(name), "{name}");
        }
    }

    #[test]
    fn a_log_path_keeps_its_percent_signs() {
        let args = sbatch_args(
            &request(),
            &SlurmOptions::default(),
            Path::new("/s/100%j/l"),
        );
        assert!(
            args.contains(&"--output=/s/100%%j/l/pp-0123456789ab.%j.log".to_owned()),
            "{args:?}"
        );
        assert_eq!(
            log_path(Path::new("/s/100%j/l"), &request().launch_key, 42),
            Path::new("/s/100%j/l/pp-0123456789ab.42.log")
        );
        let args = sbatch_args(&request(), &SlurmOptions::default(), Path::new("/s\\%j/l"));
        assert!(
            args.contains(&"--output=/s\\%j/l/pp-0123456789ab.log".to_owned()),
            "{args:?}"
        );
    }

    #[test]
    fn a_comment_gives_back_its_store_and_run_keys_and_others_none() {
        let job = request();
        assert_eq!(
            parse_comment(&comment(&job)),
            Some(JobComment {
                store: job.store.clone(),
                run_keys: job.run_keys.clone()
            })
        );
        assert_eq!(parse_comment("(null)"), None);
        // An older perfpipe's comment, without a store: never adopted.
        assert_eq!(parse_comment(&format!("perfpipe:{}", "a".repeat(64))), None);
        assert_eq!(job_name(&"f".repeat(64)), "pp-ffffffffffff");
    }

    /// A job belongs to its store; it serves a launch whose runs it measures,
    /// whatever launch it was submitted for.
    #[test]
    fn a_job_serves_the_launches_of_its_own_store_whose_runs_it_measures() {
        let job = request();
        let mine = comment(&job);
        assert!(job.is_wholly_served_by(&queued("pp-0123456789ab", &mine)));
        let other_store = JobRequest {
            store: store_id(Path::new("/shared/other-store")),
            ..request()
        };
        assert_ne!(other_store.store, job.store);
        assert!(!other_store.is_served_by(&queued("pp-0123456789ab", &mine)));
        assert!(
            !job.is_served_by(&queued("mine", &mine)),
            "not perfpipe's name"
        );

        // A killed head's half-done launch of five runs, two stored: the
        // launch rebuilt from the other three has another key and is served.
        let five: Vec<String> = ('1'..='5').map(|c| c.to_string().repeat(64)).collect();
        let killed = JobRequest {
            launch_key: "e".repeat(64),
            run_keys: five.clone(),
            ..request()
        };
        let left = queued(&job_name(&killed.launch_key), &comment(&killed));
        let rebuilt = JobRequest {
            launch_key: "f".repeat(64),
            run_keys: five[2..].to_vec(),
            ..request()
        };
        assert!(rebuilt.is_wholly_served_by(&left));
        let with_a_new_run = JobRequest {
            run_keys: vec![five[4].clone(), "6".repeat(64)],
            ..rebuilt.clone()
        };
        assert!(with_a_new_run.is_served_by(&left));
        assert!(!with_a_new_run.is_wholly_served_by(&left));
    }

    /// The value of an option as the job would get it: `None` when it is
    /// refused, else every argument of its `sbatch` option, and the script.
    fn submitted(option: Checked, value: &str) -> Option<(Vec<String>, String)> {
        let mut options = SlurmOptions::default();
        let field = match option {
            Checked::Partition => &mut options.partition,
            Checked::Account => &mut options.account,
            Checked::Qos => &mut options.qos,
            Checked::TimeLimit => &mut options.time_limit,
        };
        *field = Some(value.to_owned());
        options.check().ok()?;
        let args = sbatch_args(&request(), &options, Path::new("/l"));
        let flag = format!("{}=", option.sbatch_flag());
        let carrying = args.into_iter().filter(|a| a.starts_with(&flag)).collect();
        Some((carrying, script(&request(), 1, Path::new("/l"))))
    }

    fn option() -> impl Strategy<Value = Checked> {
        prop_oneof![
            Just(Checked::Partition),
            Just(Checked::Account),
            Just(Checked::Qos),
            Just(Checked::TimeLimit),
        ]
    }

    /// Hostile values, and names and limits Slurm takes, mixed.
    fn value() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<String>(),
            "[a-z0-9_.+,-]{0,12}",
            "[0-9:-]{1,10}",
            "(gpu|1:00:00)[\\n\\r'\"$`; #]{1,3}[a-z /]{0,10}",
        ]
    }

    proptest! {
        /// Any value of `[executor.slurm]` is refused, or reaches the job
        /// exactly as one option: one `sbatch` argument, `--flag=VALUE`,
        /// and nothing of the script.
        #[test]
        fn any_option_value_is_refused_or_exactly_one_argument(option in option(), value in value()) {
            if let Some((carrying, script)) = submitted(option, &value) {
                prop_assert!(!value.is_empty());
                prop_assert_eq!(carrying, vec![format!("{}={value}", option.sbatch_flag())]);
                // The script is the same whatever the option's value.
                prop_assert_eq!(script, super::script(&request(), 1, Path::new("/l")));
                prop_assert!(!value.contains(['\n', '\r', ' ', '\'', '"', '$', '`', ';', '#']));
            }
        }
    }

    #[test]
    fn a_value_that_would_be_a_line_of_the_script_is_refused() {
        assert_eq!(
            submitted(Checked::Partition, "gpu\ntouch /tmp/PWNED\n#"),
            None
        );
        assert_eq!(submitted(Checked::Account, "a b"), None);
        assert_eq!(submitted(Checked::Qos, "--wrap=x"), None);
        assert_eq!(submitted(Checked::TimeLimit, "1:00:00\n#"), None);
        assert!(submitted(Checked::Partition, "gpu,debug").is_some());
    }
}
