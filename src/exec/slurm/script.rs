//! The batch script of one launch's job: its name (`pp-<launch key, 12
//! hex>`), its run keys in `--comment` (how a later `run` finds and adopts
//! it), its GPUs, and the one command it runs. (pure)

use std::path::Path;

use super::options::{ContainerMode, SlurmOptions};
use super::state::QueuedJob;

/// What one job runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRequest {
    /// The launch's key (hex); its first 12 digits name the job.
    pub launch_key: String,
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
    /// Whether `queued` is this launch's job (one a killed head left, to
    /// adopt): the launch's name and the comment of its run keys.
    pub fn is_queued_as(&self, queued: &QueuedJob) -> bool {
        queued.name == job_name(&self.launch_key) && queued.comment == comment(&self.run_keys)
    }
}

const COMMENT_PREFIX: &str = "perfpipe:";

/// The job name of a launch: `pp-` and its key's first 12 hex digits.
pub fn job_name(launch_key: &str) -> String {
    format!("pp-{}", &launch_key[..launch_key.len().min(12)])
}

/// The `--comment` that names a launch's run keys.
pub fn comment(run_keys: &[String]) -> String {
    format!("{COMMENT_PREFIX}{}", run_keys.join(","))
}

/// The run keys of a job's comment, when perfpipe wrote it.
pub fn comment_keys(comment: &str) -> Option<Vec<String>> {
    let keys = comment.trim().strip_prefix(COMMENT_PREFIX)?;
    Some(keys.split(',').map(str::to_owned).collect())
}

/// The script `sbatch` runs; its output goes to `log`.
pub fn script(job: &JobRequest, options: &SlurmOptions, log: &Path) -> String {
    let mut lines = vec![
        "#!/bin/sh".to_owned(),
        format!(
            "# perfpipe: one engine launch measuring {} run(s); the results go to the store.",
            job.run_keys.len()
        ),
    ];
    let mut directive = |arg: String| lines.push(format!("#SBATCH {arg}"));
    directive(format!("--job-name={}", job_name(&job.launch_key)));
    directive(format!("--comment={}", comment(&job.run_keys)));
    directive("--nodes=1".to_owned());
    directive("--ntasks=1".to_owned());
    if job.gpus > 0 {
        directive(format!("--gres=gpu:{}", job.gpus));
    }
    if job.whole_node {
        directive("--exclusive".to_owned());
    }
    for (flag, value) in [
        ("partition", &options.partition),
        ("account", &options.account),
        ("qos", &options.qos),
        ("time", &options.time_limit),
    ] {
        if let Some(value) = value {
            directive(format!("--{flag}={value}"));
        }
    }
    directive(format!("--output={}", log.display()));
    // Slurm would requeue a job of a failed node by itself; perfpipe
    // resubmits it, counting the attempts.
    directive("--no-requeue".to_owned());
    let command = shlex::try_join(job.command.iter().map(String::as_str))
        .expect("a command holds no NUL byte");
    match (options.container, &job.image) {
        (ContainerMode::Pyxis, Some(image)) => {
            let image = shlex::try_quote(image).expect("an image holds no NUL byte");
            lines.push(format!(
                "exec srun --container-image={image} --container-mount-home {command}"
            ));
        }
        _ => lines.push(format!("exec {command}")),
    }
    lines.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> JobRequest {
        JobRequest {
            launch_key: "0123456789abcdef".repeat(4),
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

    #[test]
    fn the_script_names_the_launch_its_runs_and_its_gpus() {
        let options = SlurmOptions {
            partition: Some("gpu".into()),
            time_limit: Some("2:00:00".into()),
            ..Default::default()
        };
        let text = script(&request(), &options, Path::new("/shared/logs/job.log"));
        let expected = format!(
            "#!/bin/sh\n\
             # perfpipe: one engine launch measuring 2 run(s); the results go to the store.\n\
             #SBATCH --job-name=pp-0123456789ab\n\
             #SBATCH --comment=perfpipe:{},{}\n\
             #SBATCH --nodes=1\n\
             #SBATCH --ntasks=1\n\
             #SBATCH --gres=gpu:4\n\
             #SBATCH --partition=gpu\n\
             #SBATCH --time=2:00:00\n\
             #SBATCH --output=/shared/logs/job.log\n\
             #SBATCH --no-requeue\n\
             exec /opt/perfpipe realise '/shared/store/launch material.json'\n",
            "a".repeat(64),
            "b".repeat(64)
        );
        assert_eq!(text, expected);
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
        let text = script(&job, &options, Path::new("/l"));
        assert!(
            text.contains("#SBATCH --gres=gpu:8\n#SBATCH --exclusive\n"),
            "{text}"
        );
        assert!(text.ends_with(
            "exec srun --container-image=vllm/vllm-openai@sha256:00 --container-mount-home \
             /opt/perfpipe realise '/shared/store/launch material.json'\n"
        ));
    }

    #[test]
    fn a_comment_gives_back_its_run_keys_and_others_none() {
        let keys = vec!["a".repeat(64), "b".repeat(64)];
        assert_eq!(comment_keys(&comment(&keys)), Some(keys));
        assert_eq!(comment_keys("(null)"), None);
        assert_eq!(job_name(&"f".repeat(64)), "pp-ffffffffffff");
    }
}
