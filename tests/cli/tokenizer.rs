//! The model's tokenizer, when this machine has it, builds prompts and enters keys.

use crate::common::{FIXTURES, TestEnv};

/// `(step, key)` of each run `perfpipe plan` lists.
fn keys(plan: &std::process::Output) -> Vec<(String, String)> {
    String::from_utf8_lossy(&plan.stdout)
        .lines()
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            (cols.len() > 3 && cols[2].len() == 12)
                .then(|| (cols[0].to_owned(), cols[2].to_owned()))
        })
        .collect()
}

#[test]
fn a_cached_tokenizer_changes_the_keys_of_its_model_only_when_present() {
    let env = TestEnv::tiny();
    let without = env.run(&["plan", "tiny.kdl", "--runtime", "sim"]);
    // A Hugging Face cache holding Qwen/Qwen3-14B's tokenizer (the test fixture).
    let snapshot = env.path("hub/models--Qwen--Qwen3-14B/snapshots/0123abcd");
    std::fs::create_dir_all(&snapshot).unwrap();
    std::fs::create_dir_all(env.path("hub/models--Qwen--Qwen3-14B/refs")).unwrap();
    env.write("hub/models--Qwen--Qwen3-14B/refs/main", "0123abcd");
    std::fs::copy(
        format!("{FIXTURES}/tokenizer/tokenizer.json"),
        snapshot.join("tokenizer.json"),
    )
    .unwrap();
    let with = env
        .cmd(&["plan", "tiny.kdl", "--runtime", "sim"])
        .env("HF_HUB_CACHE", env.path("hub"))
        .output()
        .unwrap();
    let (a, b) = (keys(&without), keys(&with));
    assert_eq!(a.len(), 7);
    // Every Qwen3-14B run changes key; the FP8 model (no tokenizer cached) keeps its own.
    for ((step, before), (_, after)) in a.iter().zip(&b) {
        assert_eq!(before == after, step == "trtllm-fp8", "{step}");
    }
}

#[test]
fn bench_builds_prompts_with_the_given_tokenizer() {
    let env = TestEnv::new();
    let tokenizer = format!("{FIXTURES}/tokenizer/tokenizer.json");
    // No server needed to see the prompts fail to send: the dataset is built first.
    let port = crate::common::free_port();
    let out = env.run(&[
        "bench",
        "--port",
        &port.to_string(),
        "--model",
        "m",
        "--tokenizer",
        &tokenizer,
        "--num-prompts",
        "3",
        "--random-input-len",
        "50",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("tokenizer.json`"), "{err}");
    assert!(err.contains("3 of 3 requests failed"), "{err}");
    let missing = env.run(&[
        "bench",
        "--port",
        &port.to_string(),
        "--model",
        "m",
        "--num-prompts",
        "1",
    ]);
    assert!(
        String::from_utf8_lossy(&missing.stderr)
            .contains("no tokenizer.json for `m` on this machine")
    );
}
