//! The GPU types an experiment can name, with what engines need to know of them.

/// One GPU type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuType {
    pub name: &'static str,
    /// What `nvidia-smi` calls it.
    pub marketing_name: &'static str,
    /// CUDA compute capability ×10 (A100 = 80, H100 = 90).
    pub sm: u32,
    pub memory_gib: u32,
}

pub const CATALOG: &[GpuType] = &[
    GpuType {
        name: "nvidia-a100-sxm4-80gb",
        marketing_name: "NVIDIA A100-SXM4-80GB",
        sm: 80,
        memory_gib: 80,
    },
    GpuType {
        name: "nvidia-a100-pcie-40gb",
        marketing_name: "NVIDIA A100-PCIE-40GB",
        sm: 80,
        memory_gib: 40,
    },
    GpuType {
        name: "nvidia-l40s-48gb",
        marketing_name: "NVIDIA L40S",
        sm: 89,
        memory_gib: 48,
    },
    GpuType {
        name: "nvidia-h100-sxm5-80gb",
        marketing_name: "NVIDIA H100 80GB HBM3",
        sm: 90,
        memory_gib: 80,
    },
    GpuType {
        name: "nvidia-h200-sxm-141gb",
        marketing_name: "NVIDIA H200",
        sm: 90,
        memory_gib: 141,
    },
];

pub const NAMES: &[&str] = &[
    "nvidia-a100-sxm4-80gb",
    "nvidia-a100-pcie-40gb",
    "nvidia-l40s-48gb",
    "nvidia-h100-sxm5-80gb",
    "nvidia-h200-sxm-141gb",
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
}
