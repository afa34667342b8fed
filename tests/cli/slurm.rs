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
}
