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
