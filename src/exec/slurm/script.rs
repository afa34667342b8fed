//! The job of one launch: its name (`pp-<launch key, 12 hex>`), its
//! comment (the store it writes to and the run keys it measures: how a
//! later `run` of that store finds and adopts it), its GPUs, every option
//! as one `sbatch` argument, and the batch script of the one command it
//! runs. No option is a line of the script, so no value can become a
//! command. (pure)

use std::path::Path;

use sha2::{Digest, Sha256};

use super::options::{ContainerMode, SlurmOptions};
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
    pub gpus: u32,
    /// GPUs of a whole node: the job asks `--exclusive`, so no other job
    /// shares the node's CPUs, memory or interconnect.
    pub whole_node: bool,
    /// The argv of the job's one step (`perfpipe realise MATERIAL --store DIR`).
    pub command: Vec<String>,
    /// The engine image, run through Pyxis under [`ContainerMode::Pyxis`].
    pub image: Option<String>,
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

/// `path` as `sbatch --output` reads it: a `%` is a pattern there
/// (`%j`…), so it is doubled, unless the path holds a backslash (which
/// turns the patterns off).
fn output_pattern(path: &Path) -> String {
    let text = path.display().to_string();
    if text.contains('\\') {
        text
    } else {
        text.replace('%', "%%")
    }
}

/// The `sbatch` arguments of a job, each option one argument: perfpipe's
/// own, then `options.sbatch_args` (they win). Its output goes to `log`.
pub fn sbatch_args(job: &JobRequest, options: &SlurmOptions, log: &Path) -> Vec<String> {
    let mut args = vec![
        format!("--job-name={}", job_name(&job.launch_key)),
        format!("--comment={}", comment(job)),
        "--nodes=1".to_owned(),
        "--ntasks=1".to_owned(),
    ];
    if job.gpus > 0 {
        args.push(format!("--gres=gpu:{}", job.gpus));
    }
    if job.whole_node {
        args.push("--exclusive".to_owned());
    }
    for (option, value) in options.checked() {
        args.push(format!("{}={value}", option.sbatch_flag()));
    }
    args.push(format!("--output={}", output_pattern(log)));
    // Slurm would requeue a job of a failed node by itself; perfpipe
    // resubmits it, counting the attempts.
    args.push("--no-requeue".to_owned());
    args.extend(options.sbatch_args.iter().cloned());
    args
}

/// The script `sbatch` runs: the job's one command, every word quoted.
pub fn script(job: &JobRequest, options: &SlurmOptions) -> String {
    let command = shlex::try_join(job.command.iter().map(String::as_str))
        .expect("a command holds no NUL byte");
    let exec = match (options.container, &job.image) {
        (ContainerMode::Pyxis, Some(image)) => {
            let image = shlex::try_quote(image).expect("an image holds no NUL byte");
            format!("exec srun --container-image={image} --container-mount-home {command}")
        }
        _ => format!("exec {command}"),
    };
    format!(
        "#!/bin/sh\n\
         # perfpipe: one engine launch measuring {} run(s); the results go to the store.\n\
         {exec}\n",
        job.run_keys.len()
    )
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::options::Checked;
    use super::*;

    fn request() -> JobRequest {
        JobRequest {
            launch_key: "0123456789abcdef".repeat(4),
            store: store_id(Path::new("/shared/store")),
            run_keys: vec!["a".repeat(64), "b".repeat(64)],
            gpus: 4,
            whole_node: false,
            command: vec![
                "/opt/perfpipe".into(),
                "realise".into(),
                "/shared/store/launch material.json".into(),
            ],
            image: Some("vllm/vllm-openai@sha256:00".into()),
        }
    }

    fn queued(name: &str, comment: &str) -> QueuedJob {
        QueuedJob {
            id: 1,
            name: name.into(),
            state: super::super::state::JobState::Running,
            reason: "None".into(),
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
        let args = sbatch_args(&job, &options, Path::new("/shared/logs/pp-x.1.log"));
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
                "--partition=gpu".into(),
                "--time=2:00:00".into(),
                "--output=/shared/logs/pp-x.1.log".into(),
                "--no-requeue".into(),
                "--mem=0".into(),
            ]
        );
        assert_eq!(
            script(&job, &options),
            "#!/bin/sh\n\
             # perfpipe: one engine launch measuring 2 run(s); the results go to the store.\n\
             exec /opt/perfpipe realise '/shared/store/launch material.json'\n"
        );
    }

    #[test]
    fn a_whole_node_is_exclusive_and_pyxis_runs_the_step_in_the_image() {
        let job = JobRequest {
            gpus: 8,
            whole_node: true,
            ..request()
        };
        let options = SlurmOptions {
            container: ContainerMode::Pyxis,
            ..Default::default()
        };
        let args = sbatch_args(&job, &options, Path::new("/l"));
        assert!(
            args.windows(2)
                .any(|w| w == ["--gres=gpu:8", "--exclusive"]),
            "{args:?}"
        );
        assert!(script(&job, &options).ends_with(
            "exec srun --container-image=vllm/vllm-openai@sha256:00 --container-mount-home \
             /opt/perfpipe realise '/shared/store/launch material.json'\n"
        ));
    }

    #[test]
    fn a_log_path_keeps_its_percent_signs() {
        let args = sbatch_args(
            &request(),
            &SlurmOptions::default(),
            Path::new("/s/100%j/l"),
        );
        assert!(
            args.contains(&"--output=/s/100%%j/l".to_owned()),
            "{args:?}"
        );
        let args = sbatch_args(&request(), &SlurmOptions::default(), Path::new("/s\\%j/l"));
        assert!(args.contains(&"--output=/s\\%j/l".to_owned()), "{args:?}");
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
        Some((carrying, script(&request(), &options)))
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
                prop_assert_eq!(script, super::script(&request(), &SlurmOptions::default()));
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
