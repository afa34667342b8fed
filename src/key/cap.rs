//! A run's key with another prompt count: how a run capped with
//! `--max-prompts` (whose key material differs only in
//! `workload.num_prompts`) is matched to the declared run a lockfile
//! lists. (pure)

use serde_json::Value;

use super::{RunKey, to_canonical_json};

/// The prompt count of some key material.
pub fn num_prompts(material: &Value) -> Option<u32> {
    material
        .pointer("/workload/num_prompts")?
        .as_u64()?
        .try_into()
        .ok()
}

/// The key of `material` with `prompts` prompts.
pub fn key_with_prompts(material: &Value, prompts: u32) -> RunKey {
    let mut material = material.clone();
    if let Some(workload) = material.get_mut("workload") {
        workload["num_prompts"] = prompts.into();
    }
    RunKey::of_canonical(&to_canonical_json(&material))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::Runtime;
    use crate::inputs::ResolvedInputs;
    use crate::spec::{SourceFile, parse};

    #[test]
    fn a_capped_runs_material_with_the_declared_prompts_has_the_declared_key() {
        let text = |prompts: u32| SourceFile {
            name: "s.kdl".into(),
            text: format!(
                r#"experiment "e" {{
                    hardware "nvidia-a100-sxm4-80gb" gpus=1
                    model "o/m"
                    engine vllm version="0.11.0"
                    workload a {{ dataset random input=8 output=8; prompts {prompts}; }}
                    step v engine=vllm gpus=1
                }}"#
            ),
        };
        let run = |prompts| {
            let spec = parse(&text(prompts)).unwrap();
            crate::key::keyed_runs(&spec, Runtime::Sim, &ResolvedInputs::default()).remove(0)
        };
        let (declared, capped) = (run(100), run(5));
        let material: Value = serde_json::from_str(&capped.canonical).unwrap();
        assert_eq!(num_prompts(&material), Some(5));
        assert_eq!(key_with_prompts(&material, 100), declared.key);
        assert_eq!(key_with_prompts(&material, 5), capped.key);
    }
}
