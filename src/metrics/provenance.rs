//! Where a number came from. A report never shows a simulated or published
//! number as measured.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Provenance {
    /// Measured on real GPUs.
    Measured {
        host: String,
        perfpipe_version: String,
        started_at: String,
        finished_at: String,
        /// The GPU model `nvidia-smi` reported, and the indices used.
        gpu: String,
        gpu_indices: Vec<u32>,
        driver: String,
        cuda_version: String,
    },
    /// Measured on a machine without GPUs (`hardware "cpu"`): the CPU as
    /// `/proc/cpuinfo` and `/proc/meminfo` reported it, and no GPU field.
    MeasuredOnCpu {
        host: String,
        perfpipe_version: String,
        started_at: String,
        finished_at: String,
        cpu: String,
        cores: u32,
        memory_gib: u32,
        isa: Vec<String>,
    },
    /// Produced by the simulated engine: shows the pipeline works, predicts nothing.
    Simulated {
        host: String,
        perfpipe_version: String,
        sim_engine_version: String,
        started_at: String,
        finished_at: String,
    },
    /// Taken from a published report.
    Published { source: String },
}

impl Provenance {
    /// The machine and software a number came from, as a report names it:
    /// host, GPU, driver and CUDA for measured numbers.
    pub fn environment(&self) -> String {
        match self {
            Self::Measured {
                host,
                gpu,
                driver,
                cuda_version,
                ..
            } => format!("{host}: {gpu}, driver {driver}, CUDA {cuda_version}"),
            Self::MeasuredOnCpu {
                host, cpu, cores, ..
            } => format!("{host}: {cpu}, {cores} CPUs, no GPU"),
            Self::Simulated {
                host,
                sim_engine_version,
                ..
            } => format!("{host}: simulated engine v{sim_engine_version}"),
            Self::Published { source } => format!("published: {source}"),
        }
    }
}

/// The environment variable the Slurm executor's batch script sets to the
/// attempt it is (1, then 2 for its first resubmission…): a result whose
/// process sees it was measured through `run --executor slurm`.
pub const SLURM_ATTEMPT_ENV: &str = "PERFPIPE_SLURM_ATTEMPT";

/// The Slurm job that measured a result (`run --executor slurm`), as the
/// job saw itself: its id, the attempt it was of its launch, and its node.
/// Where a number was measured, not what was measured: it never enters a key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlurmJob {
    pub job_id: u64,
    pub attempt: u32,
    pub node: String,
}

impl SlurmJob {
    /// The job this process runs in, from its environment (`var` reads one):
    /// `None` outside the executor's jobs (a local run, or perfpipe in a
    /// job of the user's own), or where Slurm's variables are unreadable.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Option<Self> {
        Some(Self {
            attempt: var(SLURM_ATTEMPT_ENV)?.parse().ok()?,
            job_id: var("SLURM_JOB_ID")?.parse().ok()?,
            node: var("SLURMD_NODENAME")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slurm_job_is_read_from_the_executors_job_only() {
        fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
            move |name| {
                vars.iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        }
        let job = [
            (SLURM_ATTEMPT_ENV, "2"),
            ("SLURM_JOB_ID", "41"),
            ("SLURMD_NODENAME", "gpu-07"),
        ];
        assert_eq!(
            SlurmJob::from_env(env(&job)),
            Some(SlurmJob {
                job_id: 41,
                attempt: 2,
                node: "gpu-07".into()
            })
        );
        // perfpipe in a job of the user's own: not the executor's.
        assert_eq!(SlurmJob::from_env(env(&job[1..])), None);
        assert_eq!(SlurmJob::from_env(env(&[])), None);
    }
}
