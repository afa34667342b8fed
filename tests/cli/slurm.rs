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
