//! The GPUs of this machine, as `nvidia-smi` reports them, and per-GPU locks
//! so two perfpipe processes never share a GPU.

use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::gpu::GpuType;

/// One GPU as `nvidia-smi` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuInfo {
    pub index: u32,
    pub uuid: String,
    pub name: String,
    pub memory_mib: u64,
    pub driver: String,
}

/// What the machine has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    pub gpus: Vec<GpuInfo>,
    pub cuda_version: String,
    /// The CPU of a machine measured without GPUs (`hardware "cpu"`).
    pub cpu: Option<crate::cpu::CpuFacts>,
}

#[derive(Debug, Error)]
pub enum Error {
    #[error(transparent)]
    NvidiaSmi(#[from] crate::external::Error),
    #[error("`nvidia-smi` printed a line perfpipe cannot read: `{0}`")]
    Parse(String),
    #[error("the experiment declares {declared} × `{gpu}`, but this machine has {found}")]
    Mismatch {
        gpu: String,
        declared: u32,
        found: String,
    },
    #[error("cannot lock GPU `{uuid}`")]
    Lock {
        uuid: String,
        #[source]
        source: std::io::Error,
    },
}

/// The arguments of the one `nvidia-smi` query perfpipe makes.
pub const QUERY: &[&str] = &[
    "--query-gpu=index,uuid,name,memory.total,driver_version",
    "--format=csv,noheader,nounits",
];

/// The query of the processes that hold GPU memory.
pub const PROCESSES_QUERY: &[&str] = &[
    "--query-compute-apps=gpu_uuid,pid,process_name,used_memory",
    "--format=csv,noheader,nounits",
];

/// A process holding memory on a GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuProcess {
    pub gpu_uuid: String,
    pub pid: u32,
    pub name: String,
    /// `[N/A]` in some containers.
    pub memory_mib: Option<u64>,
}

impl std::fmt::Display for GpuProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pid {} `{}`", self.pid, self.name)?;
        if let Some(mib) = self.memory_mib {
            write!(f, " ({mib} MiB)")?;
        }
        Ok(())
    }
}

/// Parses the CSV of [`PROCESSES_QUERY`]; lines it cannot read (such as
/// "No running processes found") are skipped. A name may hold commas.
pub fn parse_processes(csv: &str) -> Vec<GpuProcess> {
    csv.lines()
        .filter_map(|line| {
            let (uuid, rest) = line.split_once(',')?;
            let (pid, rest) = rest.split_once(',')?;
            let (name, memory) = rest.rsplit_once(',')?;
            Some(GpuProcess {
                gpu_uuid: uuid.trim().into(),
                pid: pid.trim().parse().ok()?,
                name: name.trim().into(),
                memory_mib: memory.trim().parse().ok(),
            })
        })
        .collect()
}

/// Parses the CSV of [`QUERY`].
pub fn parse_query(csv: &str) -> Result<Vec<GpuInfo>, Error> {
    csv.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let cols: Vec<&str> = line.split(',').map(str::trim).collect();
            match cols.as_slice() {
                [index, uuid, name, memory, driver] => Ok(GpuInfo {
                    index: index.parse().map_err(|_| Error::Parse(line.into()))?,
                    uuid: (*uuid).into(),
                    name: (*name).into(),
                    memory_mib: memory.parse().map_err(|_| Error::Parse(line.into()))?,
                    driver: (*driver).into(),
                }),
                _ => Err(Error::Parse(line.into())),
            }
        })
        .collect()
}

/// The `CUDA Version: 12.8` of `nvidia-smi`'s banner.
pub fn parse_cuda_version(banner: &str) -> Option<String> {
    let rest = &banner[banner.find("CUDA Version:")? + "CUDA Version:".len()..];
    rest.split_whitespace().next().map(str::to_owned)
}

/// Refuses a machine whose GPUs are not the declared type, or too few.
pub fn check(machine: &Machine, declared: &GpuType, count: u32) -> Result<(), Error> {
    let matching = machine
        .gpus
        .iter()
        .filter(|g| g.name == declared.marketing_name)
        .count();
    if matching >= count as usize && !machine.gpus.is_empty() {
        return Ok(());
    }
    let mut names: Vec<String> = machine.gpus.iter().map(|g| g.name.clone()).collect();
    names.dedup();
    let found = if names.is_empty() {
        "no GPU".to_owned()
    } else {
        format!("{} × `{}`", machine.gpus.len(), names.join("`, `"))
    };
    Err(Error::Mismatch {
        gpu: declared.marketing_name.into(),
        declared: count,
        found,
    })
}

/// An exclusive lock on one GPU, held while a run uses it.
pub struct GpuLease {
    pub index: u32,
    _file: std::fs::File,
}

/// Where GPU locks live: `PERFPIPE_GPU_LOCKS`, else one directory per machine.
pub fn lock_dir() -> PathBuf {
    std::env::var_os("PERFPIPE_GPU_LOCKS")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("perfpipe-gpu-locks"))
}

/// Locks `n` free GPUs, or returns `None` when fewer are free now.
pub fn try_acquire(gpus: &[GpuInfo], n: usize, dir: &Path) -> Result<Option<Vec<GpuLease>>, Error> {
    let mut leases = Vec::new();
    for gpu in gpus {
        if leases.len() == n {
            break;
        }
        let lock = |source| Error::Lock {
            uuid: gpu.uuid.clone(),
            source,
        };
        let file = crate::filelock::open(&dir.join(format!("{}.lock", gpu.uuid))).map_err(lock)?;
        match file.try_lock() {
            Ok(()) => leases.push(GpuLease {
                index: gpu.index,
                _file: file,
            }),
            Err(std::fs::TryLockError::WouldBlock) => {}
            Err(std::fs::TryLockError::Error(e)) => return Err(lock(e)),
        }
    }
    Ok((leases.len() == n).then_some(leases))
}

/// The GPUs of `gpus` no perfpipe holds a lease on right now.
pub fn unheld<'a>(gpus: &'a [GpuInfo], dir: &Path) -> Result<Vec<&'a GpuInfo>, Error> {
    let mut out = Vec::new();
    for gpu in gpus {
        if try_acquire(std::slice::from_ref(gpu), 1, dir)?.is_some() {
            out.push(gpu);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A100S: &str = "0, GPU-aaaa, NVIDIA A100-SXM4-80GB, 81920, 550.54.15\n1, GPU-bbbb, NVIDIA A100-SXM4-80GB, 81920, 550.54.15\n";

    #[test]
    fn reads_nvidia_smi_and_checks_the_declared_type() {
        let gpus = parse_query(A100S).unwrap();
        assert_eq!(gpus[1].uuid, "GPU-bbbb");
        assert_eq!(gpus[0].memory_mib, 81920);
        let machine = Machine {
            gpus,
            cuda_version: "12.4".into(),
            cpu: None,
        };
        let a100 = crate::gpu::lookup("nvidia-a100-sxm4-80gb").unwrap();
        assert!(check(&machine, a100, 2).is_ok());
        assert!(check(&machine, a100, 8).is_err());
        let h100 = crate::gpu::lookup("nvidia-h100-sxm5-80gb").unwrap();
        let err = check(&machine, h100, 1).unwrap_err().to_string();
        assert_eq!(
            err,
            "the experiment declares 1 × `NVIDIA H100 80GB HBM3`, but this machine has 2 × `NVIDIA A100-SXM4-80GB`"
        );
        assert_eq!(
            parse_cuda_version(
                "| NVIDIA-SMI 550.54.15  Driver Version: 550.54.15  CUDA Version: 12.4 |"
            )
            .as_deref(),
            Some("12.4")
        );
        assert!(parse_query("0, GPU-a, only three").is_err());
    }

    #[test]
    fn reads_the_processes_on_the_gpus() {
        let csv = "GPU-aaaa, 4242, python3, 70312\nGPU-bbbb, 77, /usr/bin/vllm, serve, [N/A]\nNo running processes found\n";
        let procs = parse_processes(csv);
        assert_eq!(procs.len(), 2);
        assert_eq!(procs[0].to_string(), "pid 4242 `python3` (70312 MiB)");
        assert_eq!(procs[1].gpu_uuid, "GPU-bbbb");
        assert_eq!(procs[1].to_string(), "pid 77 `/usr/bin/vllm, serve`");
    }

    #[test]
    fn a_locked_gpu_is_not_handed_out_twice() {
        let dir = tempfile::tempdir().unwrap();
        let gpus = parse_query(A100S).unwrap();
        let first = try_acquire(&gpus, 1, dir.path()).unwrap().unwrap();
        assert_eq!(first[0].index, 0);
        let second = try_acquire(&gpus, 1, dir.path()).unwrap().unwrap();
        assert_eq!(second[0].index, 1);
        assert!(try_acquire(&gpus, 1, dir.path()).unwrap().is_none());
        drop(first);
        // A process forked meanwhile by another test holds a copy of the lock's
        // descriptor until it execs; the executor polls, and so does this test.
        let again = (0..100)
            .find_map(|_| {
                let leases = try_acquire(&gpus, 1, dir.path()).unwrap();
                if leases.is_none() {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                leases
            })
            .expect("a released GPU is handed out again");
        assert_eq!(again[0].index, 0);
    }
}
