//! Broken experiment files: every error, with its place and a hint, exit code 2.

use crate::common::TestEnv;
use crate::perfpipe_snapshot;

const VALID: &str = r#"experiment "demo" {
    hardware "nvidia-a100-sxm4-80gb" gpus=8
    model "Qwen/Qwen3-14B"
    engine vllm version="0.11.0"
    workload short {
        dataset random input=128 output=4 seed=42
        prompts 100
    }
    step vllm engine=vllm gpus=1
    compare "Engine Selection" baseline=vllm {
        candidate vllm
    }
}
"#;

/// `perfpipe plan` on `VALID` with `from` replaced by `to`.
fn plan_with(from: &str, to: &str) -> std::process::Output {
    assert!(VALID.contains(from), "{from}");
    let env = TestEnv::new();
    env.write("demo.kdl", &VALID.replacen(from, to, 1));
    let out = env.run(&["plan", "demo.kdl", "--runtime", "sim"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        crate::common::render(&out)
    );
    out
}

#[test]
fn the_valid_file_is_valid() {
    let env = TestEnv::new();
    env.write("demo.kdl", VALID);
    assert_eq!(
        env.run(&["plan", "demo.kdl", "--runtime", "sim"])
            .status
            .code(),
        Some(0)
    );
}

#[test]
fn kdl_syntax_error() {
    perfpipe_snapshot!(
        "kdl_syntax_error",
        plan_with("\"Qwen/Qwen3-14B\"", "\"Qwen/Qwen3-14B")
    );
}

#[test]
fn v1_boolean() {
    perfpipe_snapshot!("v1_boolean", plan_with("seed=42", "seed=42 ignore=true"));
}

#[test]
fn unknown_node_with_suggestion() {
    perfpipe_snapshot!(
        "unknown_node",
        plan_with("    workload short", "    worklaod short")
    );
}

#[test]
fn unknown_property_with_suggestion() {
    perfpipe_snapshot!(
        "unknown_property",
        plan_with("engine=vllm gpus=1", "engine=vllm gpu=1")
    );
}

#[test]
fn missing_required_value() {
    perfpipe_snapshot!(
        "missing_value",
        plan_with("step vllm engine=vllm gpus=1", "step vllm gpus=1")
    );
}

#[test]
fn wrong_type() {
    perfpipe_snapshot!("wrong_type", plan_with("prompts 100", "prompts \"100\""));
}

#[test]
fn undeclared_reference() {
    perfpipe_snapshot!(
        "undeclared_engine",
        plan_with("engine=vllm gpus=1", "engine=sglang gpus=1")
    );
}

#[test]
fn undeclared_step_with_suggestion() {
    perfpipe_snapshot!(
        "undeclared_step",
        plan_with("candidate vllm", "candidate vlm")
    );
}

#[test]
fn duplicate_names() {
    perfpipe_snapshot!(
        "duplicate_step",
        plan_with(
            "    step vllm engine=vllm gpus=1",
            "    step vllm engine=vllm gpus=1\n    step vllm engine=vllm gpus=2"
        )
    );
}

#[test]
fn too_many_gpus() {
    perfpipe_snapshot!(
        "too_many_gpus",
        plan_with("engine=vllm gpus=1", "engine=vllm gpus=4 replicas=4")
    );
}

#[test]
fn out_of_range_number() {
    perfpipe_snapshot!(
        "out_of_range",
        plan_with("prompts 100", "prompts 99999999999999999999")
    );
}

#[test]
fn all_errors_are_reported_at_once() {
    let out = plan_with("gpus=8\n", "gpus=0\n    modle \"x\"\n");
    let out = String::from_utf8_lossy(&out.stderr).replace("plan_with", "");
    assert!(out.contains("has 2 errors"), "{out}");
    assert!(out.contains("between 1 and"), "{out}");
    assert!(out.contains("did you mean `model`?"), "{out}");
}

#[test]
fn missing_experiment_file() {
    let env = TestEnv::new();
    perfpipe_snapshot!("missing_file", env.run(&["plan", "nope.kdl"]));
}

#[test]
fn missing_dataset() {
    let env = TestEnv::new();
    env.write(
        "demo.kdl",
        &VALID.replace(
            "dataset random input=128 output=4 seed=42",
            "dataset sharegpt path=\"datasets/absent.json\"",
        ),
    );
    perfpipe_snapshot!("missing_dataset", env.run(&["plan", "demo.kdl"]));
}

#[test]
fn a_machine_without_the_declared_gpus_is_refused_with_a_hint() {
    let env = TestEnv::new();
    env.write("demo.kdl", VALID);
    // The test environment has no `nvidia-smi` on its PATH.
    let out = env.run(&["run", "demo.kdl", "--runtime", "docker"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot run `nvidia-smi`"), "{err}");
    assert!(err.contains("--runtime sim"), "{err}");
}

#[test]
fn a_secret_in_the_experiment_is_refused() {
    perfpipe_snapshot!(
        "secret_in_env",
        plan_with(
            "step vllm engine=vllm gpus=1",
            "step vllm engine=vllm gpus=1 {\n        env HF_TOKEN=\"hf_0123456789\" VLLM_USE_V1=\"1\"\n    }"
        )
    );
}
