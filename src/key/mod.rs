//! Run keys: sha256 over the canonical serialization of a run's key material. (pure)

mod canonical;
mod cap;
mod diff;
mod material;
mod runs;

use crate::digest::Digest;

pub use canonical::to_canonical_json;
pub use cap::{key_with_prompts, num_prompts};
pub use diff::{FieldChange, material_changes, material_distance, material_fields};
pub use material::*;
pub use runs::{KeyedRun, keyed_runs};

/// Version of the key schema; bumping it changes every key on purpose.
///
/// History:
/// - 1: first schema (engine, model, runtime, canonical serve args, env, GPU,
///   builtin harness options, workload).
pub const KEY_SCHEMA_VERSION: u32 = 1;

/// A run's key: the sha256 of its canonical key material, 64 lowercase hex
/// characters, checked wherever one is read, so a key can name a store path.
pub type RunKey = Digest<RunKind>;

/// What a [`RunKey`] names: a run's key material.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RunKind {}

impl crate::digest::Kind for RunKind {
    const TYPE: &'static str = "RunKey";
    const WHAT: &'static str = "run key";
}

impl RunKey {
    /// The key of some key material, and the exact bytes it was computed over.
    pub fn of(material: &KeyMaterial) -> (RunKey, String) {
        let value = serde_json::to_value(material).expect("key material is plain data");
        let canonical = to_canonical_json(&value);
        (Self::of_canonical(&canonical), canonical)
    }

    pub fn of_canonical(canonical: &str) -> RunKey {
        Self::of_bytes(canonical.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixed key material: every field set, none left to a default.
    fn fixed_material() -> KeyMaterial {
        KeyMaterial {
            schema: 1,
            runtime: RuntimeMaterial {
                name: "docker".into(),
                sim_engine_version: None,
            },
            engine: EngineMaterial {
                name: "vllm".into(),
                version: "0.11.0".into(),
                image: Some("vllm/vllm-openai:v0.11.0".into()),
            },
            model: ModelMaterial {
                id: "Qwen/Qwen3-14B".into(),
                revision: "main".into(),
                sha256: None,
            },
            serve_args: vec!["--max-num-seqs".into(), "4".into()],
            env: [("VLLM_USE_V1".to_owned(), "1".to_owned())].into(),
            hardware: HardwareMaterial {
                gpu: "nvidia-h100-80gb".into(),
                gpus_per_instance: 2,
                instances: None,
                cpu: None,
            },
            harness: HarnessMaterial {
                name: "builtin".into(),
                version: "1".into(),
                backend: "openai-chat".into(),
                endpoint: "/v1/chat/completions".into(),
                temperature: 0.0,
                ignore_eos: true,
                percentile_metrics: "ttft,tpot,itl".into(),
                metric_percentiles: "99".into(),
                tokenizer: "whitespace-v1".into(),
            },
            workload: WorkloadMaterial {
                dataset: DatasetMaterial::Random {
                    input_len: 32,
                    output_len: 4,
                    range_ratio: 0.0,
                    seed: 1,
                },
                num_prompts: 8,
                request_rate: "inf".into(),
                arrival: None,
                max_concurrency: Some(4),
            },
        }
    }

    /// The bytes a key is computed over and the key itself, pinned: a
    /// change to either changes every stored key (bump `KEY_SCHEMA_VERSION`
    /// on purpose, then update these). The sha256 was checked with
    /// `printf %s CANONICAL | sha256sum`.
    #[test]
    fn a_fixed_key_material_has_a_fixed_key_and_short_form() {
        let (key, canonical) = RunKey::of(&fixed_material());
        assert_eq!(
            canonical,
            concat!(
                r#"{"engine":{"image":"vllm/vllm-openai:v0.11.0","name":"vllm","version":"0.11.0"},"env":{"VLLM_USE_V1":"1"},"hardware":{"gpu":"nvidia-h100-80gb","gpus_per_instance":2},"#,
                r#""harness":{"backend":"openai-chat","endpoint":"/v1/chat/completions","ignore_eos":true,"metric_percentiles":"99","name":"builtin","percentile_metrics":"ttft,tpot,itl","temperature":0.0,"tokenizer":"whitespace-v1","version":"1"},"model":{"id":"Qwen/Qwen3-14B","revision":"main"},"#,
                r#""runtime":{"name":"docker","sim_engine_version":null},"schema":1,"serve_args":["--max-num-seqs","4"],"workload":{"dataset":{"input_len":32,"kind":"random","output_len":4,"range_ratio":0.0,"seed":1},"max_concurrency":4,"num_prompts":8,"request_rate":"inf"}}"#,
            )
        );
        assert_eq!(
            key.as_str(),
            "f4cf69cde943baba8a2dc48bc662ccd227988deefe9f0a325402864365f72d8d"
        );
        assert_eq!(key.short(), "f4cf69cde943");
        assert_eq!(key.to_string(), key.as_str());
        assert_eq!(RunKey::of_canonical(&canonical), key);
        assert_eq!(RunKey::of_bytes(canonical.as_bytes()), key);
    }

    #[test]
    fn only_64_lowercase_hex_is_a_key() {
        let key = RunKey::of_canonical("{}");
        assert_eq!(RunKey::parse(key.as_str()), Some(key.clone()));
        let hex = key.as_str();
        for text in [
            String::new(),
            "..".into(),
            hex.to_uppercase(),
            format!("../{}", &hex[3..]),
            format!("{}/", &hex[..63]),
            hex[..63].into(),
            format!("{hex}0"),
            format!("{}g", &hex[..63]),
            format!("{}\0", &hex[..63]),
            format!("{}é", &hex[..62]),
        ] {
            assert_eq!(
                RunKey::parse(&text),
                None,
                "{text:?} must not name a store path"
            );
            let json = serde_json::to_string(&text).unwrap();
            assert!(serde_json::from_str::<RunKey>(&json).is_err(), "{text:?}");
        }
        let json = serde_json::to_string(&key).unwrap();
        assert_eq!(json, format!("\"{hex}\""));
        assert_eq!(serde_json::from_str::<RunKey>(&json).unwrap(), key);
    }
}
