//! Every run of an experiment with its key: what `lock`, `plan` and the
//! launch material start from. (pure)

use std::collections::HashMap;

use super::{KeyMaterial, RunKey, WorkloadMaterial, to_canonical_json};
use crate::facts::Runtime;
use crate::inputs::ResolvedInputs;
use crate::metrics::slo::Slo;
use crate::spec::Spec;

/// A run with its key, before the store is consulted.
#[derive(Debug, Clone)]
pub struct KeyedRun {
    pub step: String,
    pub workload: String,
    pub key: RunKey,
    pub material: KeyMaterial,
    pub canonical: String,
    /// The workload's SLO: analysis of the stored requests, not key material.
    pub slo: Option<Slo>,
}

/// Every (step, workload) of the experiment with its key, in declared order.
///
/// Runs share most of their key material: a step's runs all of it but their
/// workload, and a workload's runs in every step their workload. So the
/// canonical text of a step's part is made once per step, of a workload's
/// once per workload, and each run's is the two joined (a study of 10,000
/// runs is keyed on every `plan`).
pub fn keyed_runs(spec: &Spec, runtime: Runtime, inputs: &ResolvedInputs) -> Vec<KeyedRun> {
    let mut workload_texts: HashMap<&str, String> = HashMap::new();
    let mut runs = Vec::new();
    for step in &spec.steps {
        let mut step_text: Option<Option<String>> = None;
        for w in &step.workloads {
            // A searched workload is its probes, planned as the search goes.
            let Some(workload) = spec.workload(w).filter(|w| w.search.is_none()) else {
                continue;
            };
            let material = KeyMaterial::new(spec, runtime, step, workload, inputs);
            let canonical = match step_text.get_or_insert_with(|| open_canonical(&material)) {
                Some(open) => {
                    let workload_text = workload_texts
                        .entry(w.as_str())
                        .or_insert_with(|| workload_canonical(&material.workload));
                    let canonical = format!("{open}\"workload\":{workload_text}}}");
                    debug_assert_eq!(canonical, RunKey::of(&material).1);
                    canonical
                }
                None => RunKey::of(&material).1,
            };
            runs.push(KeyedRun {
                step: step.name.value.clone(),
                workload: w.clone(),
                key: RunKey::of_canonical(&canonical),
                material,
                canonical,
                slo: workload.slo.clone(),
            });
        }
    }
    runs
}

/// The canonical text of `material` without its workload and closing brace
/// (ending in `{` or `,`), to which a workload's is appended: `None` when
/// some field sorts after `workload` (the canonical order is by name), so
/// the text cannot be joined that way.
fn open_canonical(material: &KeyMaterial) -> Option<String> {
    let mut value = serde_json::to_value(material).expect("key material is plain data");
    let object = value.as_object_mut()?;
    object.remove("workload")?;
    if object.keys().any(|name| name.as_str() > "workload") {
        return None;
    }
    let mut text = to_canonical_json(&value);
    text.pop();
    if text.len() > 1 {
        text.push(',');
    }
    Some(text)
}

fn workload_canonical(workload: &WorkloadMaterial) -> String {
    to_canonical_json(&serde_json::to_value(workload).expect("key material is plain data"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::SourceFile;

    #[test]
    fn runs_joined_from_shared_parts_have_the_keys_of_their_whole_material() {
        let text = r#"experiment "shared" {
    hardware "nvidia-a100-sxm4-80gb" gpus=8
    model "Qwen/Qwen3-8B"
    engine vllm version="0.11.0"
    harness builtin backend="openai-chat"
    workload a { dataset random input=128 output=16 seed=1; prompts 10; }
    workload b { dataset random input=256 output=8 seed=2; prompts 20; concurrency 4; }
    sweep s engine=vllm gpus=1 {
        vary "--max-num-seqs" 8 16
        workloads a b
    }
}"#;
        let source = SourceFile {
            name: "shared.kdl".into(),
            text: text.into(),
        };
        let spec = crate::spec::parse(&source).unwrap();
        let inputs = crate::inputs::resolve(
            &spec,
            std::path::Path::new(""),
            &mut crate::inputs::HashCache::in_memory(),
        )
        .unwrap();
        for runtime in [Runtime::Docker, Runtime::Sim] {
            let runs = keyed_runs(&spec, runtime, &inputs);
            assert_eq!(runs.len(), 4);
            for run in &runs {
                assert_eq!(
                    (run.key.clone(), run.canonical.clone()),
                    RunKey::of(&run.material)
                );
            }
            let keys: std::collections::BTreeSet<&RunKey> = runs.iter().map(|r| &r.key).collect();
            assert_eq!(keys.len(), 4, "every run its own key");
        }
    }
}
