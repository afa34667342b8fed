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
    plan_with_all(&[(from, to)])
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

/// Typed from inside `experiments/`, `experiments/x.kdl` is
/// `experiments/experiments/x.kdl`: the hint names the file meant, not an
/// example the project does not have.
#[test]
fn an_experiment_path_typed_from_inside_experiments_names_the_file_meant() {
    let env = TestEnv::new();
    env.write("experiments/x.kdl", VALID);
    let out = env
        .cmd(&["plan", "experiments/x.kdl"])
        .current_dir(env.path("experiments"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    insta::assert_snapshot!(crate::common::words(&out), @"× cannot read the experiment `experiments/experiments/x.kdl` failed to open file `experiments/experiments/x.kdl`: No such file or directory (os error 2) a path on the command line is relative to the directory it is typed in, so this one is the project's `experiments/experiments/x.kdl`; did you mean `x.kdl` (the project's `experiments/x.kdl`)?");
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

    // A workload of several loads is run as points (`short@c=1`), shown
    // where the workload declares the file; a directory, as not a file.
    let points = VALID.replace(
        "dataset random input=128 output=4 seed=42",
        "dataset sharegpt path=\"datasets/absent.json\"\n        concurrency 1 2",
    );
    env.write("demo.kdl", &points);
    let err = crate::common::words(&env.run(&["plan", "demo.kdl"]));
    assert!(
        err.contains("× dataset `datasets/absent.json` of workload `short@c=1` does not exist ╭─[demo.kdl:6:26]"),
        "{err}"
    );
    env.write(
        "demo.kdl",
        &points.replace("datasets/absent.json", "datasets"),
    );
    std::fs::create_dir_all(env.path("datasets")).unwrap();
    let err = crate::common::words(&env.run(&["plan", "demo.kdl"]));
    assert!(
        err.contains("is a directory, not a file ╭─[demo.kdl:6:26]") && err.contains("not a file"),
        "{err}"
    );
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

/// `perfpipe plan` on `VALID` with each `from` replaced by its `to`.
fn plan_with_all(replacements: &[(&str, &str)]) -> std::process::Output {
    let text = replacements
        .iter()
        .fold(VALID.to_owned(), |text, (from, to)| {
            assert!(text.contains(from), "{from}");
            text.replacen(from, to, 1)
        });
    let env = TestEnv::new();
    env.write("demo.kdl", &text);
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
fn deeply_nested_nodes() {
    let depth = 40;
    let nested = format!(
        "    step deep engine=vllm gpus=1 {{\n{}{}    }}\n",
        "        env {\n".repeat(depth),
        "        }\n".repeat(depth)
    );
    perfpipe_snapshot!(
        "deeply_nested",
        plan_with("    compare", &format!("{nested}    compare"))
    );
}

/// Input that overflowed kdl's stack, or took it minutes, before it was refused.
#[test]
fn pathological_files_are_refused_quickly_and_never_crash() {
    let n = 100_000;
    for (what, text) in [
        (
            "nested blocks",
            format!("{}{}", "a {".repeat(n), "}".repeat(n)),
        ),
        ("unclosed blocks", "a {\n".repeat(n)),
        (
            "stray closing braces",
            format!("experiment \"x\"\n{}", "}".repeat(n)),
        ),
        (
            "slashdash chain",
            format!("experiment \"x\" {}", "/- ".repeat(50)),
        ),
        (
            "nested comments",
            format!("{}\nexperiment \"x\"", "/*".repeat(n)),
        ),
        (
            "a long comment",
            format!("/* {} */ experiment \"x\"", "a/*/".repeat(n)),
        ),
        (
            "stray parentheses",
            format!("experiment \"x\" {}", ")".repeat(3000)),
        ),
        (
            "many errors on one line",
            format!("experiment \"x\"\n{}", "a;".repeat(4000)),
        ),
    ] {
        let env = TestEnv::new();
        env.write("x.kdl", &text);
        let started = std::time::Instant::now();
        let out = env.run(&["plan", "x.kdl", "--runtime", "sim"]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{what}: {}",
            crate::common::render(&out)
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "{what} took {:?}",
            started.elapsed()
        );
        let err = crate::common::stderr(&out);
        assert!(err.contains("`x.kdl` has"), "{what}: {err}");
        assert!(
            err.len() < 2_000_000,
            "{what}: {} bytes of errors",
            err.len()
        );
    }
}

#[test]
fn huge_numbers() {
    perfpipe_snapshot!(
        "huge_numbers",
        plan_with_all(&[
            ("gpus=8", "gpus=4294967296"),
            ("input=128", "input=18446744073709551616"),
            ("seed=42", "seed=-1"),
            ("prompts 100", "prompts 100\n        rate 1e400"),
            (
                "engine=vllm gpus=1",
                "engine=vllm gpus=65536 replicas=65536"
            ),
        ])
    ); // Beyond the 128-bit integers kdl reads, the number itself is named.
    let out = plan_with("input=128", "input=340282366920938463463374607431768211455");
    let err = crate::common::words(&out);
    assert!(
        err.contains("`340282366920938463463374607431768211455` is too large a number"),
        "{err}"
    );
    assert!(err.contains("[demo.kdl:6:30]"), "{err}");
}

#[test]
fn unicode_names_and_values() {
    perfpipe_snapshot!(
        "unicode",
        plan_with_all(&[
            (
                "experiment \"demo\" {",
                "experiment \"démo 🦀\" {\n    title \"日本語 \\u{202e}\""
            ),
            ("workload short", "workload ça-va"),
            (
                "step vllm engine=vllm gpus=1",
                "step ステップ engine=vllm gpus=9 { workloads 日本 }"
            ),
            ("baseline=vllm", "baseline=ステップ"),
        ])
    );
}

#[test]
fn wrong_types() {
    perfpipe_snapshot!(
        "wrong_types",
        plan_with_all(&[
            ("gpus=8", "gpus=\"8\""),
            ("seed=42", "seed=#true"),
            ("prompts 100", "prompts 100\n        rate \"fast\""),
            ("engine=vllm gpus=1", "engine=#null gpus=1.5"),
        ])
    );
}

/// A project whose workload reads `datasets/bad.json`, holding `json`.
fn with_sharegpt(json: &str) -> TestEnv {
    let env = TestEnv::new();
    env.write(
        "demo.kdl",
        &VALID.replace(
            "dataset random input=128 output=4 seed=42",
            "dataset sharegpt path=\"datasets/bad.json\"",
        ),
    );
    env.write("datasets/bad.json", json);
    env
}

/// `plan` and `run` fail alike, before any engine starts or anything is written.
fn refused_before_any_engine(env: &TestEnv) -> std::process::Output {
    let plan = env.run(&["plan", "demo.kdl", "--runtime", "sim"]);
    let run = env.run(&["run", "demo.kdl", "--runtime", "sim"]);
    assert_eq!(
        run.status.code(),
        Some(2),
        "{}",
        crate::common::render(&run)
    );
    assert_eq!(crate::common::stderr(&run), crate::common::stderr(&plan));
    assert!(env.samples().is_empty());
    assert!(!env.path("lockfiles").exists(), "nothing is written");
    plan
}

#[test]
fn sharegpt_dataset_that_is_not_json() {
    let env = with_sharegpt("<html>\n  <body>rate limited</body>\n</html>\n");
    perfpipe_snapshot!("dataset_not_json", refused_before_any_engine(&env));
}

#[test]
fn sharegpt_dataset_of_the_wrong_shape() {
    let env = with_sharegpt("{\"conversations\": []}\n");
    perfpipe_snapshot!("dataset_wrong_shape", refused_before_any_engine(&env));
    let env = with_sharegpt("[\n  {\"id\": \"a\", \"conversations\": []},\n  {\"id\": \"b\"}\n]\n");
    let err = crate::common::words(&refused_before_any_engine(&env));
    assert!(
        err.contains("`datasets/bad.json` is the dataset of workload `short`"),
        "{err}"
    );
    assert!(
        err.contains("missing field `conversations` at line 3"),
        "{err}"
    );
}

#[test]
fn import_of_a_block_with_missing_rows() {
    let env = TestEnv::tiny();
    env.write(
        "block.txt",
        "============ Serving Benchmark Result ============
Successful requests:                     1000
Benchmark duration (s):                  106.82
Total input tokens:                      217393
Total generated tokens:                  201605
---------------Time to First Token----------------
-----Time per Output Token (excl. 1st token)------
Mean TPOT (ms):                          114.34
==================================================
",
    );
    let import = |file: &str| {
        env.run(&[
            "import",
            "tiny.kdl",
            "--step",
            "vllm",
            "--workload",
            "chat",
            "--from",
            file,
        ])
    };
    perfpipe_snapshot!("import_missing_rows", import("block.txt"));
    let text = env.read("block.txt");
    env.write(
        "rows.txt",
        &text.replace("---------------Time to First Token----------------\n", ""),
    );
    let out = import("rows.txt");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        crate::common::words(&out).contains(
            "rows.txt: line 8: the block ends without the rows `Request throughput (req/s)`, `Total Token throughput (tok/s)`"
        ),
        "{}",
        crate::common::words(&out)
    );
    assert!(env.samples().is_empty(), "nothing is imported");
}

/// miette pads underlines with a width, and one above 65,535 panicked: a
/// place that far into a line is shown on a clipped line, at its true column.
#[test]
fn places_past_column_65535_are_shown_clipped() {
    let out = plan_with(
        "    workload short",
        &format!("{}bogus 1\n    workload short", " ".repeat(70_000)),
    );
    let err = crate::common::stderr(&out);
    assert!(
        err.contains("unknown node `bogus` in `experiment`"),
        "{err}"
    );
    assert!(err.contains("[demo.kdl:5:70001]"), "{err}");
    assert!(err.contains("…"), "{err}");
    assert!(err.len() < 10_000, "{} bytes of errors", err.len());

    // Over the size limit, the place is at the limit, far into the last line.
    let env = TestEnv::new();
    env.write("x.kdl", &format!("{VALID}{}", "x".repeat(1 << 20)));
    let out = env.run(&["plan", "x.kdl", "--runtime", "sim"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        crate::common::render(&out)
    );
    let err = crate::common::stderr(&out);
    let column = (1 << 20) - VALID.len() + 1;
    assert!(
        err.contains(&format!("[x.kdl:{}:{column}]", VALID.lines().count() + 1)),
        "{err}"
    );
    assert!(
        err.contains("an experiment file has at most 1048576"),
        "{err}"
    );
    assert!(err.len() < 10_000, "{} bytes of errors", err.len());
}

/// A file whose every conversation the harness filters out was accepted by
/// `plan` and failed `run` after its engine was ready.
#[test]
fn sharegpt_dataset_whose_every_conversation_is_filtered_out() {
    let env = with_sharegpt(
        r#"[{"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello to you"}]}]"#,
    );
    let err = crate::common::words(&refused_before_any_engine(&env));
    assert!(
        err.contains("`datasets/bad.json` is the dataset of workload `short`"),
        "{err}"
    );
    assert!(
        err.contains("the dataset has no usable conversation"),
        "{err}"
    );
    // With a fixed output length the short reply does not matter.
    let text = env.read("demo.kdl").replace(
        "path=\"datasets/bad.json\"",
        "path=\"datasets/bad.json\" output-len=8",
    );
    env.write("demo.kdl", &text);
    env.write(
        "datasets/bad.json",
        r#"[{"conversations": [{"from": "human", "value": "a b c d"}, {"from": "gpt", "value": "ok"}]}]"#,
    );
    let out = env.run(&["plan", "demo.kdl", "--runtime", "sim"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        crate::common::render(&out)
    );
}

/// A directory, a device or a FIFO is said to be what it is, and a FIFO is
/// never opened (it would block).
#[test]
fn a_dataset_that_is_not_a_file_is_named_by_its_type() {
    let env = with_sharegpt("[]");
    std::fs::remove_file(env.path("datasets/bad.json")).unwrap();
    let fifo = env.path("datasets/fifo.json");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let text = env.read("demo.kdl");
    for (path, what) in [
        ("datasets/fifo.json", "a FIFO"),
        ("/dev/zero", "a device"),
        ("datasets", "a directory"),
    ] {
        env.write("demo.kdl", &text.replace("datasets/bad.json", path));
        let started = std::time::Instant::now();
        let err = crate::common::words(&refused_before_any_engine(&env));
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
        assert!(
            err.contains(&format!(
                "dataset `{path}` of workload `short` is {what}, not a file"
            )),
            "{err}"
        );
    }
}

/// A code point KDL v2 does not allow was reported as "Expected quoted
/// string … not quoted string"; it is named and pointed at.
#[test]
fn disallowed_code_points_are_named_at_their_place() {
    perfpipe_snapshot!(
        "disallowed_code_point",
        plan_with(
            "model \"Qwen/Qwen3-14B\"",
            "model \"Qwen/\u{202e}Qwen3-14B\""
        )
    );
    let err = crate::common::words(&plan_with(
        "prompts 100",
        "prompts 100\n        title \"a\u{0}b\"",
    ));
    assert!(
        err.contains("`U+0000` (a control character) is not allowed in a KDL file"),
        "{err}"
    );
    assert!(err.contains("[demo.kdl:8:17]"), "{err}");
    assert!(!err.contains("Expected quoted string"), "{err}");
}

/// Values that reach docker, an engine's environment or argv, or the Hub's
/// URLs are refused outside their grammar, at their place.
#[test]
fn values_that_reach_other_programs_are_checked() {
    perfpipe_snapshot!(
        "values_reaching_programs",
        plan_with_all(&[
            (
                "engine vllm version=\"0.11.0\"",
                "engine vllm version=\"0.11.0\" image=\"--privileged\"\n    engine sglang version=\"\""
            ),
            (
                "step vllm engine=vllm gpus=1",
                "step vllm engine=vllm gpus=1 model=\"../../../etc/passwd\" {\n        env \"A=B\"=\"x\" \"\"=\"y\"\n    }"
            ),
        ])
    );
    let err = crate::common::words(&plan_with("\"Qwen/Qwen3-14B\"", "\"\""));
    assert!(err.contains("the model id is empty"), "{err}");
    assert!(err.contains("[demo.kdl:3:11]"), "{err}");
}

/// `import` took `Successful requests: 10.5`, negative throughputs, and the
/// first of two differing blocks.
#[test]
fn import_refuses_fractional_counts_negative_numbers_and_differing_blocks() {
    let env = TestEnv::tiny();
    let block = |completed: &str, tps: &str| {
        format!(
            "============ Serving Benchmark Result ============
Successful requests:                     {completed}
Benchmark duration (s):                  106.82
Total input tokens:                      217393
Total generated tokens:                  201605
Request throughput (req/s):              9.36
Total Token throughput (tok/s):          {tps}
==================================================
"
        )
    };
    let import = |text: &str| {
        let out = env.import_block("chat", text);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{}",
            crate::common::render(&out)
        );
        assert!(env.samples().is_empty());
        crate::common::words(&out)
    };
    let err = import(&block("10.5", "3922.44"));
    assert!(
        err.contains(
            "block.txt: line 2: `Successful requests` counts, so it is a whole number, not `10.5`"
        ),
        "{err}"
    );
    let err = import(&block("1000", "-3922.44"));
    assert!(
        err.contains("line 7: `Total Token throughput (tok/s)` cannot be negative: `-3922.44`"),
        "{err}"
    );
    perfpipe_snapshot!("import_differing_blocks", {
        env.import_block(
            "chat",
            &format!("{}\n{}", block("1000", "3922.44"), block("1000", "3900.00")),
        )
    });
}
