//! The page's words for its hardware and study → the experiment's GPU type,
//! GPU count and name.

/// The experiment language's GPU type for the accelerator a text names.
pub fn gpu_type(text: &str) -> Option<&'static str> {
    let upper = text.to_uppercase();
    [
        ("910B", "huawei-ascend-910b-64gb"),
        ("H200", "nvidia-h200-sxm-141gb"),
        ("H100", "nvidia-h100-sxm5-80gb"),
        ("L40S", "nvidia-l40s-48gb"),
        ("A100", "nvidia-a100-sxm4-80gb"),
    ]
    .into_iter()
    .find(|(word, _)| upper.contains(word))
    .map(|(_, ty)| ty)
}

/// The short name of the accelerator (`a100`, `910b`), for the experiment's name.
pub fn short(text: &str) -> Option<&'static str> {
    let upper = text.to_uppercase();
    ["910B", "H200", "H100", "L40S", "A100"]
        .into_iter()
        .find(|w| upper.contains(w))
        .map(|w| match w {
            "910B" => "910b",
            "H200" => "h200",
            "H100" => "h100",
            "L40S" => "l40s",
            _ => "a100",
        })
}

/// "8 × NVIDIA H200 SXM GPUs on a single node." → 8; "A single … GPU." → 1.
pub fn count(text: &str) -> Option<u32> {
    let lower = text.to_lowercase();
    if lower.starts_with("a single") || lower.starts_with("one ") {
        return Some(1);
    }
    let first = lower.split_whitespace().next()?;
    let n = first.trim_end_matches(['x', '×']).parse().ok()?;
    let second = lower.split_whitespace().nth(1).unwrap_or("");
    (first.ends_with(['x', '×']) || second == "×" || second == "x").then_some(n)
}

/// "Optimizing Qwen3-14B Throughput on NVIDIA A100 GPUs" → "qwen3-14b".
pub fn study_model(title: &str) -> Option<String> {
    let rest = title.strip_prefix("Optimizing ")?;
    let end = rest.find(" Throughput").or_else(|| rest.find(" Latency"))?;
    Some(rest[..end].trim().to_lowercase().replace(' ', "-"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_of_every_page() {
        assert_eq!(count("A single NVIDIA A100 SXM GPU."), Some(1));
        assert_eq!(count("8 × NVIDIA H200 SXM GPUs on a single node."), Some(8));
        assert_eq!(count("NVIDIA H200"), None);
        assert_eq!(count("NVIDIA H100 80GB HBM3"), None);
    }

    #[test]
    fn types_and_names() {
        assert_eq!(
            gpu_type("A single Ascend 910B NPU."),
            Some("huawei-ascend-910b-64gb")
        );
        assert_eq!(
            gpu_type("NVIDIA H100 80GB HBM3"),
            Some("nvidia-h100-sxm5-80gb")
        );
        assert_eq!(
            study_model("Optimizing Qwen3-235B-A22B Throughput on NVIDIA A100 GPUs").as_deref(),
            Some("qwen3-235b-a22b")
        );
        assert_eq!(
            study_model("Optimizing Qwen3-8B Latency on NVIDIA H100 GPUs").as_deref(),
            Some("qwen3-8b")
        );
        assert_eq!(study_model("Qwen3 notes"), None);
    }
}
