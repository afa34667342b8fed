//! A machine without GPUs, as `/proc/cpuinfo` and `/proc/meminfo` describe
//! it: the facts a CPU engine's numbers depend on, read as the GPU facts are
//! read from `nvidia-smi`, and checked against what the study declares. (pure)

use thiserror::Error;

/// The instruction-set features CPU engines choose kernels by (vLLM's CPU
/// backend: AVX-512 with BF16/VNNI, AMX on Sapphire Rapids and later; SVE on
/// Arm). Other flags never change the numbers, so they stay out of the key.
pub const ENGINE_FEATURES: &[&str] = &[
    "avx2",
    "avx512f",
    "avx512_bf16",
    "avx512_vnni",
    "avx512_fp16",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
    "sve",
];

/// A machine without GPUs, as a study declares it and as `/proc/cpuinfo`
/// and `/proc/meminfo` must confirm it: what changes a CPU engine's numbers.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CpuDecl {
    /// `/proc/cpuinfo`'s `model name`, e.g. `AMD EPYC 9654 96-Core Processor`.
    pub model: String,
    /// Logical CPUs (`processor` entries of `/proc/cpuinfo`), or fewer
    /// where a cgroup's `cpu.max` limits the process ([`limit_cores`]).
    pub cores: u32,
    /// `MemTotal` in whole GiB, when declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_gib: Option<u32>,
    /// The instruction-set features engines choose kernels by that the CPU
    /// has (of [`ENGINE_FEATURES`]), sorted.
    pub isa: Vec<String>,
}

/// What this machine's CPU is, in the terms of [`CpuDecl`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuFacts {
    pub model: String,
    pub cores: u32,
    pub memory_gib: u32,
    /// The [`ENGINE_FEATURES`] the CPU has, in that order.
    pub isa: Vec<String>,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum Error {
    #[error("`/proc/cpuinfo` names no CPU (no `model name` line)")]
    NoModel,
    #[error("cannot read `{path}`: {reason}")]
    Unreadable { path: String, reason: String },
    #[error("`/proc/meminfo` has no `MemTotal` line perfpipe can read")]
    NoMemory,
    #[error("the experiment declares {declared}, but this machine has {found}")]
    Mismatch { declared: String, found: String },
}

/// Reads `/proc/cpuinfo`'s text and `/proc/meminfo`'s.
pub fn parse(cpuinfo: &str, meminfo: &str) -> Result<CpuFacts, Error> {
    let field = |line: &str, name: &str| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == name).then(|| value.trim().to_owned())
    };
    let model = cpuinfo
        .lines()
        .find_map(|l| field(l, "model name"))
        .filter(|m| !m.is_empty())
        .ok_or(Error::NoModel)?;
    let cores = cpuinfo
        .lines()
        .filter(|l| field(l, "processor").is_some())
        .count();
    // x86 says `flags`, Arm `Features`.
    let flags = cpuinfo
        .lines()
        .find_map(|l| field(l, "flags").or_else(|| field(l, "Features")))
        .unwrap_or_default();
    let flags: Vec<&str> = flags.split_whitespace().collect();
    let isa = ENGINE_FEATURES
        .iter()
        .filter(|f| flags.contains(f))
        .map(|f| (*f).to_owned())
        .collect();
    let kib: u64 = meminfo
        .lines()
        .find_map(|l| field(l, "MemTotal"))
        .and_then(|v| v.trim_end_matches("kB").trim().parse().ok())
        .ok_or(Error::NoMemory)?;
    Ok(CpuFacts {
        model,
        cores: u32::try_from(cores).unwrap_or(u32::MAX),
        memory_gib: u32::try_from(kib / (1024 * 1024)).unwrap_or(u32::MAX),
        isa,
    })
}

/// The CPUs a cgroup v2 `cpu.max` allows (`"200000 100000"`: a quota of
/// 200 ms per 100 ms period, 2 CPUs; a fraction rounds up, as the process
/// can use part of another CPU), or `None` when it sets no limit (`max`).
pub fn cpu_max_cores(cpu_max: &str) -> Option<u32> {
    let mut fields = cpu_max.split_whitespace();
    let quota: u64 = fields.next()?.parse().ok()?;
    let period: u64 = fields.next().map_or(Some(100_000), |p| p.parse().ok())?;
    if period == 0 {
        return None;
    }
    u32::try_from(quota.div_ceil(period).max(1)).ok()
}

/// The process's cgroup v2 path (`/proc/self/cgroup`'s `0::<path>` line),
/// and each of its ancestors up to the root, deepest first: any of them may
/// limit the CPUs.
pub fn cgroup_v2_paths(proc_self_cgroup: &str) -> Vec<String> {
    let Some(path) = proc_self_cgroup
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(str::trim)
    else {
        return Vec::new();
    };
    let mut out = vec![path.to_owned()];
    let mut at = path;
    while let Some((parent, _)) = at.rsplit_once('/') {
        at = parent;
        out.push(if parent.is_empty() {
            "/".into()
        } else {
            parent.to_owned()
        });
    }
    out.dedup();
    out
}

/// The logical CPUs this process may use: `/proc/cpuinfo`'s count, or less
/// where a cgroup's `cpu.max` (each of `cpu_max`, any level) limits it, as
/// in a container with `--cpus`.
pub fn limit_cores(facts: CpuFacts, cpu_max: &[String]) -> CpuFacts {
    let limit = cpu_max.iter().filter_map(|t| cpu_max_cores(t)).min();
    CpuFacts {
        cores: limit.map_or(facts.cores, |l| l.min(facts.cores)),
        ..facts
    }
}

/// The machine must be the one declared: the same CPU model, logical CPUs
/// and engine features (all of them: a feature the study does not name
/// would change which kernels run), and the memory where it is declared.
pub fn check(declared: &CpuDecl, found: &CpuFacts) -> Result<(), Error> {
    let mut isa = declared.isa.clone();
    isa.sort();
    let mut found_isa = found.isa.clone();
    found_isa.sort();
    let same = declared.model == found.model
        && declared.cores == found.cores
        && declared.memory_gib.is_none_or(|m| m == found.memory_gib)
        && isa == found_isa;
    if same {
        return Ok(());
    }
    let memory = |m: Option<u32>| m.map(|m| format!(" memory-gib={m}")).unwrap_or_default();
    Err(Error::Mismatch {
        declared: describe(
            &declared.model,
            declared.cores,
            &memory(declared.memory_gib),
            &declared.isa,
        ),
        found: describe(
            &found.model,
            found.cores,
            &memory(Some(found.memory_gib)),
            &found.isa,
        ),
    })
}

/// A CPU as its `hardware` line would declare it, so the message can be pasted.
fn describe(model: &str, cores: u32, memory: &str, isa: &[String]) -> String {
    format!(
        "`hardware \"cpu\" model={} cores={cores}{memory} isa={}`",
        crate::kdl_string::quote(model),
        crate::kdl_string::quote(&isa.join(" "))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cgroup_cpu_limit_is_the_cores_a_container_has() {
        assert_eq!(cpu_max_cores("max 100000"), None);
        assert_eq!(cpu_max_cores("200000 100000"), Some(2));
        assert_eq!(
            cpu_max_cores("150000 100000\n"),
            Some(2),
            "a part of a CPU is one"
        );
        assert_eq!(cpu_max_cores("50000 100000"), Some(1));
        assert_eq!(
            cpu_max_cores("400000"),
            Some(4),
            "the period defaults to 100 ms"
        );
        assert_eq!(cpu_max_cores("1 0"), None);
        assert_eq!(cpu_max_cores(""), None);
        assert_eq!(
            cgroup_v2_paths("1:cpu:/\n0::/system.slice/docker-1.scope\n"),
            ["/system.slice/docker-1.scope", "/system.slice", "/"]
        );
        assert_eq!(cgroup_v2_paths("0::/\n"), ["/"]);
        assert!(
            cgroup_v2_paths("4:memory:/x\n").is_empty(),
            "cgroup v1 only"
        );
        let facts = CpuFacts {
            model: "m".into(),
            cores: 16,
            memory_gib: 64,
            isa: Vec::new(),
        };
        let limited = |texts: &[&str]| {
            let texts: Vec<String> = texts.iter().map(|t| (*t).to_owned()).collect();
            limit_cores(facts.clone(), &texts).cores
        };
        assert_eq!(limited(&[]), 16);
        assert_eq!(
            limited(&["max 100000", "400000 100000"]),
            4,
            "an ancestor limits"
        );
        assert_eq!(
            limited(&["800000 100000", "200000 100000"]),
            2,
            "the tightest"
        );
        assert_eq!(
            limited(&["3200000 100000"]),
            16,
            "never more than there are"
        );
    }

    const CPUINFO: &str = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse avx avx2 avx512f avx512dq avx512_bf16 avx512_vnni\n\nprocessor\t: 1\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse avx avx2 avx512f avx512dq avx512_bf16 avx512_vnni\n";
    const MEMINFO: &str = "MemTotal:       24684092 kB\nMemFree:  1 kB\n";

    fn declared() -> CpuDecl {
        CpuDecl {
            model: "AMD EPYC".into(),
            cores: 2,
            memory_gib: None,
            isa: vec![
                "avx512f".into(),
                "avx2".into(),
                "avx512_bf16".into(),
                "avx512_vnni".into(),
            ],
        }
    }

    #[test]
    fn reads_the_model_cores_memory_and_only_engine_features() {
        let facts = parse(CPUINFO, MEMINFO).unwrap();
        assert_eq!(facts.model, "AMD EPYC");
        assert_eq!(facts.cores, 2);
        assert_eq!(facts.memory_gib, 23);
        assert_eq!(
            facts.isa,
            ["avx2", "avx512f", "avx512_bf16", "avx512_vnni"],
            "avx512dq never changes a kernel choice"
        );
        assert_eq!(parse("processor: 0\n", MEMINFO), Err(Error::NoModel));
    }

    #[test]
    fn the_machine_must_be_the_declared_one() {
        let facts = parse(CPUINFO, MEMINFO).unwrap();
        assert_eq!(check(&declared(), &facts), Ok(()));
        let mut amx = declared();
        amx.isa.push("amx_bf16".into());
        let err = check(&amx, &facts).unwrap_err().to_string();
        assert_eq!(
            err,
            "the experiment declares `hardware \"cpu\" model=\"AMD EPYC\" cores=2 isa=\"avx512f avx2 avx512_bf16 avx512_vnni amx_bf16\"`, \
             but this machine has `hardware \"cpu\" model=\"AMD EPYC\" cores=2 memory-gib=23 isa=\"avx2 avx512f avx512_bf16 avx512_vnni\"`"
        );
        let mut memory = declared();
        memory.memory_gib = Some(64);
        assert!(check(&memory, &facts).is_err());
    }
}
