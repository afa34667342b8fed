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

/// "8 × NVIDIA H200 SXM GPUs on a single node." → 8; "A single … GPU." → 1;
/// the count after the model too: "NVIDIA A100x4", "NVIDIA H100 × 8",
/// "four NVIDIA A100 GPUs".
pub fn count(text: &str) -> Option<u32> {
    const WORDS: [&str; 8] = [
        "one", "two", "three", "four", "five", "six", "seven", "eight",
    ];
    let lower = text.to_lowercase();
    if lower.starts_with("a single") {
        return Some(1);
    }
    let words: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || c == ',' || c == '.')
        .filter(|w| !w.is_empty())
        .collect();
    if let Some(n) = words
        .first()
        .and_then(|w| WORDS.iter().position(|n| n == w))
    {
        return u32::try_from(n + 1).ok();
    }
    let times = |w: &str| w == "x" || w == "×";
    let number = |w: &str| w.parse::<u32>().ok().filter(|n| (1..=64).contains(n));
    for (i, w) in words.iter().enumerate() {
        // "8x", "8×" or "8 ×" before the model.
        if let Some(n) = w.strip_suffix(['x', '×']).and_then(number) {
            return Some(n);
        }
        if let Some(n) = number(w).filter(|_| words.get(i + 1).is_some_and(|x| times(x))) {
            return Some(n);
        }
        // "a100x4", "x8", "× 8" after it.
        if let Some((model, n)) = w.rsplit_once(['x', '×'])
            && (model.is_empty() || model.ends_with(|c: char| c.is_ascii_digit()))
            && let Some(n) = number(n)
        {
            return Some(n);
        }
        if times(w)
            && let Some(n) = words.get(i + 1).and_then(|n| number(n))
        {
            return Some(n);
        }
    }
    None
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
        // The count after the model, or in words.
        assert_eq!(count("NVIDIA A100x4"), Some(4));
        assert_eq!(count("NVIDIA A100 SXM x8"), Some(8));
        assert_eq!(count("NVIDIA H100 × 8, NVLink."), Some(8));
        assert_eq!(count("Four NVIDIA A100 GPUs."), Some(4));
        assert_eq!(count("8x NVIDIA H100"), Some(8));
        assert_eq!(count("One NVIDIA H100."), Some(1));
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
