//! The GPU types (and NPU types) an experiment can name, with what engines
//! need to know of them.

/// Who makes the accelerator, which decides how perfpipe finds and drives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vendor {
    /// CUDA GPUs, found and locked through `nvidia-smi`.
    Nvidia,
    /// Ascend NPUs (`npu-smi`, `/dev/davinci*`), which perfpipe cannot drive yet.
    Huawei,
}

/// One GPU type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuType {
    pub name: &'static str,
    pub vendor: Vendor,
    /// What `nvidia-smi` calls it (`npu-smi` for an NPU).
    pub marketing_name: &'static str,
    /// CUDA compute capability ×10 (A100 = 80, H100 = 90); 0 for an NPU,
    /// which has no CUDA and, like a GPU below 89, no FP8 kernels.
    pub sm: u32,
    pub memory_gib: u32,
}

pub const CATALOG: &[GpuType] = &[
    GpuType {
        name: "nvidia-a100-sxm4-80gb",
        vendor: Vendor::Nvidia,
        marketing_name: "NVIDIA A100-SXM4-80GB",
        sm: 80,
        memory_gib: 80,
    },
    GpuType {
        name: "nvidia-a100-pcie-40gb",
        vendor: Vendor::Nvidia,
        marketing_name: "NVIDIA A100-PCIE-40GB",
        sm: 80,
        memory_gib: 40,
    },
    GpuType {
        name: "nvidia-l40s-48gb",
        vendor: Vendor::Nvidia,
        marketing_name: "NVIDIA L40S",
        sm: 89,
        memory_gib: 48,
    },
    GpuType {
        name: "nvidia-h100-sxm5-80gb",
        vendor: Vendor::Nvidia,
        marketing_name: "NVIDIA H100 80GB HBM3",
        sm: 90,
        memory_gib: 80,
    },
    GpuType {
        name: "nvidia-h200-sxm-141gb",
        vendor: Vendor::Nvidia,
        marketing_name: "NVIDIA H200",
        sm: 90,
        memory_gib: 141,
    },
    GpuType {
        name: "huawei-ascend-910b-64gb",
        vendor: Vendor::Huawei,
        marketing_name: "Ascend910B",
        sm: 0,
        memory_gib: 64,
    },
];

pub const NAMES: &[&str] = &[
    "nvidia-a100-sxm4-80gb",
    "nvidia-a100-pcie-40gb",
    "nvidia-l40s-48gb",
    "nvidia-h100-sxm5-80gb",
    "nvidia-h200-sxm-141gb",
    "huawei-ascend-910b-64gb",
];

pub fn lookup(name: &str) -> Option<&'static GpuType> {
    CATALOG.iter().find(|g| g.name == name)
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_match_catalog() {
        let names: Vec<&str> = super::CATALOG.iter().map(|g| g.name).collect();
        assert_eq!(names, super::NAMES);
    }

    #[test]
    fn the_gpu_check_script_knows_each_nvidia_type_by_what_nvidia_smi_calls_it() {
        let script = include_str!("../scripts/gpu-check/run.sh");
        for g in super::CATALOG
            .iter()
            .filter(|g| g.vendor == super::Vendor::Nvidia)
        {
            let case = format!("\"{}\") echo {} ;;", g.marketing_name, g.name);
            assert!(
                script.contains(&case),
                "scripts/gpu-check/run.sh lacks `{case}`"
            );
        }
    }
}
