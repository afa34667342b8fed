//! How a runtime starts an engine: the program, its argv, its environment and
//! its GPUs. Secrets are passed by name only (`-e HF_TOKEN`), never by value. (pure)

use std::collections::BTreeMap;

use crate::facts::{Runtime, default_image};
use crate::spec::EngineDecl;

/// The command that starts one engine process (`leftovers::Launch` is the
/// record of one started).
#[derive(Debug, Clone, PartialEq)]
pub struct EngineCommand {
    pub program: String,
    pub args: Vec<String>,
    /// Added to perfpipe's own environment.
    pub env: BTreeMap<String, String>,
    /// The container to stop (`docker stop NAME`) when the run ends.
    pub container: Option<String>,
}

/// Environment variables handed to containers by name, so their values never
/// appear in an argv, a log or the store.
const PASSED_BY_NAME: &[&str] = &["HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_ENDPOINT"];

/// What a launch needs besides the engine's argv.
#[derive(Debug, Clone)]
pub struct Placement<'a> {
    /// GPU indices as `nvidia-smi` numbers them.
    pub gpus: &'a [u32],
    /// The step's declared environment.
    pub env: &'a BTreeMap<String, String>,
    /// Container name (docker), derived from the run key.
    pub name: &'a str,
    /// Host directory of the Hugging Face cache (docker mounts it).
    pub hf_home: &'a str,
    /// perfpipe itself, which serves `sim` engines.
    pub sim_program: &'a str,
    /// GPU type the simulated engine pretends to run on.
    pub sim_gpu: &'a str,
}

/// The command that starts `argv` (the engine's serve command) under `runtime`.
pub fn launch(
    runtime: Runtime,
    engine: &EngineDecl,
    argv: &[String],
    at: &Placement,
) -> EngineCommand {
    let devices = at
        .gpus
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",");
    match runtime {
        Runtime::Local => {
            let mut env = at.env.clone();
            env.insert("CUDA_VISIBLE_DEVICES".into(), devices);
            EngineCommand {
                program: argv[0].clone(),
                args: argv[1..].to_vec(),
                env,
                container: None,
            }
        }
        Runtime::Docker => {
            let image = engine
                .image
                .clone()
                .unwrap_or_else(|| default_image(engine.kind, &engine.version));
            let mut args: Vec<String> = vec![
                "run".into(),
                "--rm".into(),
                "--name".into(),
                at.name.into(),
                // Quoted as docker's CSV parser needs for a list of devices.
                "--gpus".into(),
                format!("\"device={devices}\""),
                "--ipc=host".into(),
                "--network=host".into(),
                "-v".into(),
                format!("{}:/root/.cache/huggingface", at.hf_home),
            ];
            for name in PASSED_BY_NAME {
                args.extend(["-e".into(), (*name).into()]);
            }
            for (k, v) in at.env {
                args.extend(["-e".into(), format!("{k}={v}")]);
            }
            args.extend(["--entrypoint".into(), argv[0].clone(), image]);
            args.extend(argv[1..].iter().cloned());
            EngineCommand {
                program: "docker".into(),
                args,
                env: BTreeMap::new(),
                container: Some(at.name.into()),
            }
        }
        Runtime::Sim => {
            let mut env = at.env.clone();
            env.insert(super::sim::GPU_ENV.into(), at.sim_gpu.into());
            let mut args = vec!["sim-engine".to_owned()];
            args.extend(argv.iter().cloned());
            EngineCommand {
                program: at.sim_program.into(),
                args,
                env,
                container: None,
            }
        }
    }
}

/// The container name of a run: `perfpipe-` and the key's first 12 characters.
pub fn container_name(key: &str) -> String {
    format!("perfpipe-{}", &key[..12])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::EngineKind;
    use crate::facts::command::serve_argv;

    fn render(l: &EngineCommand) -> String {
        let env: Vec<String> = l.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!(
            "{}{} {}",
            env.iter().map(|e| format!("{e} ")).collect::<String>(),
            l.program,
            l.args.join(" ")
        )
    }

    #[test]
    fn each_runtime_starts_the_same_engine_its_own_way() {
        let engine = EngineDecl {
            kind: EngineKind::Vllm,
            version: "0.11.0".into(),
            image: None,
            startup_timeout: None,
        };
        let argv = serve_argv(
            EngineKind::Vllm,
            "Qwen/Qwen3-14B",
            "127.0.0.1",
            8123,
            &["-tp".into(), "2".into()],
        );
        let env = BTreeMap::from([("VLLM_USE_V1".to_owned(), "1".to_owned())]);
        let at = Placement {
            gpus: &[2, 3],
            env: &env,
            name: "perfpipe-0123456789ab",
            hf_home: "/home/u/.cache/huggingface",
            sim_program: "/usr/bin/perfpipe",
            sim_gpu: "nvidia-a100-sxm4-80gb",
        };
        insta::assert_snapshot!(render(&launch(Runtime::Local, &engine, &argv, &at)), @"CUDA_VISIBLE_DEVICES=2,3 VLLM_USE_V1=1 vllm serve Qwen/Qwen3-14B --host 127.0.0.1 --port 8123 -tp 2");
        insta::assert_snapshot!(render(&launch(Runtime::Docker, &engine, &argv, &at)), @r#"docker run --rm --name perfpipe-0123456789ab --gpus "device=2,3" --ipc=host --network=host -v /home/u/.cache/huggingface:/root/.cache/huggingface -e HF_TOKEN -e HUGGING_FACE_HUB_TOKEN -e HF_ENDPOINT -e VLLM_USE_V1=1 --entrypoint vllm vllm/vllm-openai:v0.11.0 serve Qwen/Qwen3-14B --host 127.0.0.1 --port 8123 -tp 2"#);
        insta::assert_snapshot!(render(&launch(Runtime::Sim, &engine, &argv, &at)), @"PERFPIPE_SIM_GPU=nvidia-a100-sxm4-80gb VLLM_USE_V1=1 /usr/bin/perfpipe sim-engine vllm serve Qwen/Qwen3-14B --host 127.0.0.1 --port 8123 -tp 2");
    }

    #[test]
    fn images_follow_the_declared_version_unless_overridden() {
        assert_eq!(
            default_image(EngineKind::Sglang, "0.5.5.post1"),
            "lmsysorg/sglang:v0.5.5.post1-cu129"
        );
        assert_eq!(
            default_image(EngineKind::Trtllm, "1.2.0rc1"),
            "nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc1"
        );
        assert_eq!(
            default_image(EngineKind::Vllm, "0.32.0+cpu"),
            "vllm/vllm-openai:v0.32.0",
            "a docker tag cannot hold `+`"
        );
        let engine = EngineDecl {
            kind: EngineKind::Sglang,
            version: "0.5.5.post1".into(),
            image: Some("registry.local/sglang:pinned".into()),
            startup_timeout: None,
        };
        let argv = serve_argv(EngineKind::Sglang, "m", "127.0.0.1", 1, &[]);
        let at = Placement {
            gpus: &[0],
            env: &BTreeMap::new(),
            name: "n",
            hf_home: "/h",
            sim_program: "p",
            sim_gpu: "g",
        };
        let docker = launch(Runtime::Docker, &engine, &argv, &at);
        assert!(
            docker
                .args
                .windows(3)
                .any(|w| w == ["--entrypoint", "python3", "registry.local/sglang:pinned"])
        );
    }
}
