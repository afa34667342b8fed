//! Lockfiles across an engine upgrade: `run --locked` refuses a stale one,
//! `lock` says what changed, and `diff` says what it did to the numbers.

use crate::common::{TestEnv, filters, render};

const STUDY: &str = r#"
experiment "upgrade" {
    hardware "nvidia-a100-sxm4-80gb" gpus=2
    model "Qwen/Qwen3-14B"
    engine vllm version="0.11.0"
    engine sglang version="0.5.5.post1"
    workload short {
        dataset random input=32 output=8 seed=1
        prompts 24
        concurrency 8
    }
    workload shorter {
        dataset random input=16 output=4 seed=2
        prompts 16
    }
    step vllm engine=vllm gpus=1
    step sglang engine=sglang gpus=1
}
"#;

/// Results differ run to run; the table's shape, keys' places and verdict words do not.
fn diff_filters() -> Vec<(&'static str, &'static str)> {
    let mut f = vec![
        (
            r"\| \d+\.\d\d ± \d+\.\d\d \(n=(\d+)\) ",
            "| [N] ± [SD] (n=$1) ",
        ),
        (r"[+-]\d+\.\d%", "[Δ]"),
        (r"\d+\.\d GPU-hours", "[N] GPU-hours"),
        (
            r"\| (better|worse|within noise|unchanged) \|",
            "| [VERDICT] |",
        ),
    ];
    f.extend(filters());
    f
}

fn ok(env: &TestEnv, args: &[&str]) -> std::process::Output {
    let out = env.run(args);
    assert_eq!(out.status.code(), Some(0), "{}", render(&out));
    out
}

#[test]
fn an_engine_upgrade_changes_exactly_its_runs_and_diff_shows_what_it_did() {
    let env = TestEnv::new();
    env.write("upgrade.kdl", STUDY);
    let first = ok(
        &env,
        &["run", "upgrade.kdl", "--runtime", "sim", "--samples", "2"],
    );
    assert!(
        String::from_utf8_lossy(&first.stderr).contains("perfpipe: wrote `lockfiles/upgrade.lock` (5 inputs, 3 unpinned: engine.sglang, engine.vllm, model.Qwen/Qwen3-14B@main)"),
        "{}",
        render(&first)
    );
    std::fs::copy(env.path("lockfiles/upgrade.lock"), env.path("before.lock")).unwrap();
    // Known numbers for the docker keys, which `diff` below judges: [Total
    // Token throughput, Mean TTFT, Mean TPOT] of two samples per run.
    import_vllm_samples(
        &env,
        [
            (
                "short",
                24,
                [
                    ["1000.00", "100.00", "10.00"],
                    ["1010.00", "102.00", "10.20"],
                ],
            ),
            (
                "shorter",
                16,
                [["500.00", "50.00", "8.00"], ["510.00", "50.00", "8.20"]],
            ),
        ],
    );
    // Unchanged inputs re-lock to the same bytes.
    ok(&env, &["lock", "upgrade.kdl"]);
    assert_eq!(env.read("lockfiles/upgrade.lock"), env.read("before.lock"));

    env.write("upgrade.kdl", &STUDY.replace("0.11.0", "0.17.1"));
    let stale = env.run(&["run", "upgrade.kdl", "--runtime", "sim", "--locked"]);
    insta::with_settings!({ filters => filters() }, {
        insta::assert_snapshot!(render(&stale), @r#"
        exit_code: 3
        ----- stdout -----

        ----- stderr -----
        perfpipe: the experiment no longer matches `lockfiles/upgrade.lock`:
          ~ engine.vllm: image vllm/vllm-openai:v0.11.0 → vllm/vllm-openai:v0.17.1; version 0.11.0 → 0.17.1
          2 runs with new keys (`perfpipe explain` says why each one runs)
          × `lockfiles/upgrade.lock` is out of date
          help: `perfpipe lock upgrade.kdl` updates it; commit the lockfile with the
                experiment
        "#);
    });
    assert_eq!(
        env.read("lockfiles/upgrade.lock"),
        env.read("before.lock"),
        "--locked writes nothing"
    );
    assert_eq!(env.samples().len(), 8 + 4, "--locked ran nothing");

    let relock = ok(&env, &["lock", "upgrade.kdl"]);
    insta::with_settings!({ filters => filters() }, {
        insta::assert_snapshot!(render(&relock), @r#"
        exit_code: 0
        ----- stdout -----

        ----- stderr -----
        perfpipe: updated `lockfiles/upgrade.lock`:
          ~ engine.vllm: image vllm/vllm-openai:v0.11.0 → vllm/vllm-openai:v0.17.1; version 0.11.0 → 0.17.1
          2 runs with new keys (`perfpipe explain` says why each one runs)
        perfpipe: 5 inputs, 3 unpinned: engine.sglang, engine.vllm, model.Qwen/Qwen3-14B@main
        perfpipe: offline, so images and model revisions not pinned before stay unpinned; `perfpipe lock upgrade.kdl` pins them where the registry and the Hub are reachable
        "#);
    });
    let plan = ok(
        &env,
        &["plan", "upgrade.kdl", "--runtime", "sim", "--samples", "2"],
    );
    insta::with_settings!({ filters => diff_filters() }, {
        insta::assert_snapshot!(render(&plan), @r"
        exit_code: 0
        ----- stdout -----
        experiment `upgrade` · runtime `sim` · store `store`
        lockfile `lockfiles/upgrade.lock`: 5 inputs, 3 unpinned: engine.sglang, engine.vllm, model.Qwen/Qwen3-14B@main

        STEP    WORKLOAD  KEY           STATUS   DETAIL
        vllm    short     [SHORT-KEY]  missing  no result for this key
        vllm    shorter   [SHORT-KEY]  missing  no result for this key
        sglang  short     [SHORT-KEY]  cached   2 samples
        sglang  shorter   [SHORT-KEY]  cached   2 samples

        4 runs: 2 cached, 0 failed, 2 missing; 2 to run (1 engine launch)

        launch (`perfpipe plan --write-launches` writes their material for `perfpipe realise LAUNCH`):
          [SHORT-KEY]  vllm 0.17.1 · 2 runs: vllm × short, vllm × shorter
        estimate: [N] GPU-hours (1 engine launch at a typical start of 5 min for vLLM, plus benchmark times of earlier results)

        ----- stderr -----
        ");
    });
    let explain = ok(&env, &["explain", "upgrade.kdl", "--runtime", "sim"]);
    insta::with_settings!({ filters => filters() }, {
        insta::assert_snapshot!(render(&explain), @r#"
        exit_code: 0
        ----- stdout -----
        `vllm` × `short`: missing (key [SHORT-KEY])
          no result for this key
          nearest stored run: [SHORT-KEY] (2 samples, simulated (test-host: simulated engine v1)); it differs in:
            engine.version: 0.11.0 → 0.17.1
        `vllm` × `shorter`: missing (key [SHORT-KEY])
          no result for this key
          nearest stored run: [SHORT-KEY] (2 samples, simulated (test-host: simulated engine v1)); it differs in:
            engine.version: 0.11.0 → 0.17.1
        `sglang` × `short`: cached (key [SHORT-KEY])
          sample 0001: simulated (test-host: simulated engine v1)
          sample 0002: simulated (test-host: simulated engine v1)
        `sglang` × `shorter`: cached (key [SHORT-KEY])
          sample 0001: simulated (test-host: simulated engine v1)
          sample 0002: simulated (test-host: simulated engine v1)

        ----- stderr -----
        "#);
    });
    let second = ok(
        &env,
        &[
            "run",
            "upgrade.kdl",
            "--runtime",
            "sim",
            "--locked",
            "--samples",
            "2",
        ],
    );
    let started: Vec<&str> = String::from_utf8_lossy(&second.stderr)
        .lines()
        .filter(|l| l.starts_with('['))
        .map(|l| {
            if l.contains("`vllm`") {
                "vllm"
            } else {
                "other"
            }
        })
        .collect();
    assert_eq!(started, ["vllm", "vllm"], "only the vLLM runs run again");

    // The simulated engine's numbers vary run to run: under `--runtime sim`
    // the table's shape only; the published numbers below are judged.
    let diff = |extra: &[&str]| {
        let mut args = vec![
            "diff",
            "before.lock",
            "lockfiles/upgrade.lock",
            "--runtime",
            "sim",
        ];
        args.extend(extra);
        env.run(&args)
    };
    let md = diff(&[]);
    assert_eq!(md.status.code(), Some(0));
    insta::with_settings!({ filters => diff_filters() }, {
        insta::assert_snapshot!(render(&md), @r#"
        exit_code: 0
        ----- stdout -----
        # Lockfile diff: `before.lock` → `lockfiles/upgrade.lock`

        Experiment `upgrade`; run keys under runtime `sim`.

        ## Inputs

        | | input | change |
        | --- | --- | --- |
        | ~ | engine.vllm | image vllm/vllm-openai:v0.11.0 → vllm/vllm-openai:v0.17.1; version 0.11.0 → 0.17.1 |

        Unchanged: engine.sglang, harness, model.Qwen/Qwen3-14B@main, tokenizer.Qwen/Qwen3-14B@main.

        ## Runs

        | step | workload | key before | key after | changed by |
        | --- | --- | --- | --- | --- |
        | vllm | short | [SHORT-KEY] | [SHORT-KEY] | engine.vllm |
        | vllm | shorter | [SHORT-KEY] | [SHORT-KEY] | engine.vllm |

        Unchanged keys: sglang × short, sglang × shorter.

        ## Results

        | step | workload | metric | before | after | Δ | verdict |
        | --- | --- | --- | --- | --- | --- | --- |
        | vllm | short | total_token_throughput | [N] ± [SD] (n=2) | [N] ± [SD] (n=2) | [Δ] | [VERDICT] |
        | vllm | short | mean_ttft_ms | [N] ± [SD] (n=2) | [N] ± [SD] (n=2) | [Δ] | [VERDICT] |
        | vllm | short | mean_tpot_ms | [N] ± [SD] (n=2) | [N] ± [SD] (n=2) | [Δ] | [VERDICT] |
        | vllm | shorter | total_token_throughput | [N] ± [SD] (n=2) | [N] ± [SD] (n=2) | [Δ] | [VERDICT] |
        | vllm | shorter | mean_ttft_ms | [N] ± [SD] (n=2) | [N] ± [SD] (n=2) | [Δ] | [VERDICT] |
        | vllm | shorter | mean_tpot_ms | [N] ± [SD] (n=2) | [N] ± [SD] (n=2) | [Δ] | [VERDICT] |

        ----- stderr -----
        "#);
    });
    // The upgrade's published numbers: short's throughput drops by 10%
    // (worse, beyond its spread), its TTFT falls (better), its TPOT moves
    // within its spread; shorter's throughput rises (better), its TTFT stays,
    // its TPOT rises by 7.4% (worse).
    import_vllm_samples(
        &env,
        [
            (
                "short",
                24,
                [["900.00", "80.00", "10.00"], ["910.00", "82.00", "10.40"]],
            ),
            (
                "shorter",
                16,
                [["540.00", "50.00", "8.60"], ["550.00", "50.00", "8.80"]],
            ),
        ],
    );
    let docker = |extra: &[&str]| {
        let args = ["diff", "before.lock", "lockfiles/upgrade.lock"];
        env.run(&[&args[..], extra].concat())
    };
    let md = docker(&[]);
    assert_eq!(md.status.code(), Some(0), "{}", render(&md));
    let results = {
        let text = String::from_utf8_lossy(&md.stdout).into_owned();
        text[text.find("## Results").expect("a results section")..].to_owned()
    };
    insta::assert_snapshot!(results, @r"
    ## Results

    | step | workload | metric | before | after | Δ | verdict |
    | --- | --- | --- | --- | --- | --- | --- |
    | vllm | short | total_token_throughput | 1005.00 ± 7.07 (n=2) | 905.00 ± 7.07 (n=2) | -10.0% | worse |
    | vllm | short | mean_ttft_ms | 101.00 ± 1.41 (n=2) | 81.00 ± 1.41 (n=2) | -19.8% | better |
    | vllm | short | mean_tpot_ms | 10.10 ± 0.14 (n=2) | 10.20 ± 0.28 (n=2) | +1.0% | within noise |
    | vllm | shorter | total_token_throughput | 505.00 ± 7.07 (n=2) | 545.00 ± 7.07 (n=2) | +7.9% | better |
    | vllm | shorter | mean_ttft_ms | 50.00 ± 0.00 (n=2) | 50.00 ± 0.00 (n=2) | +0.0% | unchanged |
    | vllm | shorter | mean_tpot_ms | 8.10 ± 0.14 (n=2) | 8.70 ± 0.14 (n=2) | +7.4% | worse |
    ");
    let json = docker(&["--format", "json"]);
    assert_eq!(json.status.code(), Some(0), "{}", render(&json));
    insta::with_settings!({ filters => filters() }, {
        insta::assert_snapshot!(String::from_utf8_lossy(&json.stdout), @r#"
        {
          "before": "before.lock",
          "after": "lockfiles/upgrade.lock",
          "experiment": "upgrade",
          "runtime": "docker",
          "max_prompts": null,
          "inputs": [
            {
              "name": "engine.vllm",
              "change": "changed",
              "detail": "image vllm/vllm-openai:v0.11.0 → vllm/vllm-openai:v0.17.1; version 0.11.0 → 0.17.1"
            }
          ],
          "unchanged_inputs": [
            "engine.sglang",
            "harness",
            "model.Qwen/Qwen3-14B@main",
            "tokenizer.Qwen/Qwen3-14B@main"
          ],
          "runs": [
            {
              "step": "vllm",
              "workload": "short",
              "key_before": "[KEY]",
              "key_after": "[KEY]",
              "changed_by": [
                "engine.vllm"
              ]
            },
            {
              "step": "vllm",
              "workload": "shorter",
              "key_before": "[KEY]",
              "key_after": "[KEY]",
              "changed_by": [
                "engine.vllm"
              ]
            }
          ],
          "unchanged_runs": [
            "sglang × short",
            "sglang × shorter"
          ],
          "metrics": [
            "total_token_throughput",
            "mean_ttft_ms",
            "mean_tpot_ms"
          ],
          "deltas": [
            {
              "step": "vllm",
              "workload": "short",
              "metric": "total_token_throughput",
              "before": 1005.0,
              "before_sd": 7.0710678118654755,
              "before_n": 2,
              "after": 905.0,
              "after_sd": 7.0710678118654755,
              "after_n": 2,
              "delta_pct": -9.950248756218906,
              "verdict": "worse",
              "noise_floor_pct": null
            },
            {
              "step": "vllm",
              "workload": "short",
              "metric": "mean_ttft_ms",
              "before": 101.0,
              "before_sd": 1.4142135623730951,
              "before_n": 2,
              "after": 81.0,
              "after_sd": 1.4142135623730951,
              "after_n": 2,
              "delta_pct": -19.801980198019802,
              "verdict": "better",
              "noise_floor_pct": null
            },
            {
              "step": "vllm",
              "workload": "short",
              "metric": "mean_tpot_ms",
              "before": 10.1,
              "before_sd": 0.141421356237309,
              "before_n": 2,
              "after": 10.2,
              "after_sd": 0.2828427124746193,
              "after_n": 2,
              "delta_pct": 0.9900990099009866,
              "verdict": "within_noise",
              "noise_floor_pct": null
            },
            {
              "step": "vllm",
              "workload": "shorter",
              "metric": "total_token_throughput",
              "before": 505.0,
              "before_sd": 7.0710678118654755,
              "before_n": 2,
              "after": 545.0,
              "after_sd": 7.0710678118654755,
              "after_n": 2,
              "delta_pct": 7.920792079207921,
              "verdict": "better",
              "noise_floor_pct": null
            },
            {
              "step": "vllm",
              "workload": "shorter",
              "metric": "mean_ttft_ms",
              "before": 50.0,
              "before_sd": 0.0,
              "before_n": 2,
              "after": 50.0,
              "after_sd": 0.0,
              "after_n": 2,
              "delta_pct": 0.0,
              "verdict": "unchanged",
              "noise_floor_pct": null
            },
            {
              "step": "vllm",
              "workload": "shorter",
              "metric": "mean_tpot_ms",
              "before": 8.1,
              "before_sd": 0.141421356237309,
              "before_n": 2,
              "after": 8.7,
              "after_sd": 0.14142135623731025,
              "after_n": 2,
              "delta_pct": 7.407407407407403,
              "verdict": "worse",
              "noise_floor_pct": null
            }
          ],
          "incomplete": []
        }
        "#);
    });

    // As a CI gate: a change for the worse beyond the threshold (and beyond
    // noise) fails with exit 4 and is named; without the flag, diff exits 0.
    let gate = |threshold: &str| docker(&["--fail-on-regression", threshold]);
    let both = gate("5");
    assert_eq!(both.status.code(), Some(4), "{}", render(&both));
    insta::assert_snapshot!(String::from_utf8_lossy(&both.stderr), @r"
    perfpipe: comparing the results under runtime `docker`, the one the store holds results of (`--runtime` chooses)
    perfpipe: 2 regressions beyond 5%: vllm × short total_token_throughput -10.0%; vllm × shorter mean_tpot_ms +7.4%
    ");
    let one = gate("8");
    assert_eq!(one.status.code(), Some(4), "{}", render(&one));
    insta::assert_snapshot!(String::from_utf8_lossy(&one.stderr), @r"
    perfpipe: comparing the results under runtime `docker`, the one the store holds results of (`--runtime` chooses)
    perfpipe: 1 regression beyond 8%: vllm × short total_token_throughput -10.0%
    ");
    let none = gate("10");
    assert_eq!(none.status.code(), Some(0), "{}", render(&none));
    assert_eq!(
        String::from_utf8_lossy(&none.stderr),
        "perfpipe: comparing the results under runtime `docker`, the one the store holds results of (`--runtime` chooses)\n"
    );
}

/// An experiment or another program's `.lock` named where a lockfile
/// belongs is said to be what it is; nothing advises deleting it.
#[test]
fn diff_of_a_file_that_is_no_lockfile_names_the_lockfile_meant() {
    let env = TestEnv::new();
    env.write("experiments/upgrade.kdl", STUDY);
    env.write(
        "Cargo.lock",
        "# This file is automatically @generated by Cargo.\nversion = 4\n",
    );
    let experiment = env.run(&["diff", "experiments/upgrade.kdl", "lockfiles/upgrade.lock"]);
    insta::with_settings!({ filters => filters() }, {
        insta::assert_snapshot!(render(&experiment), @r"
        exit_code: 2
        ----- stdout -----

        ----- stderr -----
          × `experiments/upgrade.kdl` is not a perfpipe lockfile: it begins with
          │ `experiment`, where a lockfile begins with `lockfile`
          help: `experiments/upgrade.kdl` is an experiment; its lockfile is
                `lockfiles/upgrade.lock` (`perfpipe lock experiments/upgrade.kdl`
                writes it)
        ");
    });
    let cargo = env.run(&["diff", "Cargo.lock", "lockfiles/upgrade.lock"]);
    insta::with_settings!({ filters => filters() }, {
        insta::assert_snapshot!(render(&cargo), @r"
        exit_code: 2
        ----- stdout -----

        ----- stderr -----
          × `Cargo.lock` is not a perfpipe lockfile: it begins with `#`, where a
          │ lockfile begins with `lockfile`
          help: name a lockfile written by `perfpipe lock`: `lockfiles/
                <experiment>.lock`, or a copy of one
        ");
    });
    for out in [&experiment, &cargo] {
        assert!(!render(out).contains("delete"), "{}", render(out));
    }
}

/// A published block of one sample, Mean TTFT `ttft` ms, other rows fixed.
fn block(ttft: &str) -> String {
    published(10, "720.00", ttft, "10.00")
}

/// A published block of `requests` requests with these Total Token
/// throughput, Mean TTFT and Mean TPOT; the other rows fixed.
fn published(requests: u32, tps: &str, ttft: &str, tpot: &str) -> String {
    format!(
        "============ Serving Benchmark Result ============
Successful requests:                     {requests}
Benchmark duration (s):                  1.00
Total input tokens:                      640
Total generated tokens:                  80
Request throughput (req/s):              10.00
Output token throughput (tok/s):         80.00
Total Token throughput (tok/s):          {tps}
---------------Time to First Token----------------
Mean TTFT (ms):                          {ttft}
Median TTFT (ms):                        100.00
P99 TTFT (ms):                           100.00
-----Time per Output Token (excl. 1st token)------
Mean TPOT (ms):                          {tpot}
Median TPOT (ms):                        10.00
P99 TPOT (ms):                           10.00
==================================================
"
    )
}

/// Two published samples of each vLLM run (Total Token throughput, Mean
/// TTFT, Mean TPOT), imported under the experiment as it is now: known
/// numbers, with a spread, for `diff` to judge.
fn import_vllm_samples(env: &TestEnv, samples: [(&str, u32, [[&str; 3]; 2]); 2]) {
    for (workload, requests, blocks) in samples {
        for [tps, ttft, tpot] in blocks {
            env.write("block.txt", &published(requests, tps, ttft, tpot));
            let args = ["import", "upgrade.kdl", "--step", "vllm", "--workload"];
            ok(
                env,
                &[&args[..], &[workload, "--from", "block.txt"]].concat(),
            );
        }
    }
}

/// With one sample a side there is no noise estimate: a change within the
/// metric's floor (TTFT: 20%) is noise, one beyond it a regression, and
/// `--noise-floor` sets it.
#[test]
fn with_one_sample_the_regression_gate_applies_each_metrics_noise_floor() {
    let env = TestEnv::new();
    let study = |version: &str| {
        format!(
            r#"experiment "floor" {{
    hardware "nvidia-a100-sxm4-80gb" gpus=1
    model "Qwen/Qwen3-14B"
    engine vllm version="{version}"
    workload short {{ dataset random input=64 output=8 seed=1; prompts 10; }}
    step vllm engine=vllm gpus=1
}}"#
        )
    };
    let import = |ttft: &str| {
        env.write("block.txt", &block(ttft));
        ok(
            &env,
            &[
                "import",
                "floor.kdl",
                "--step",
                "vllm",
                "--workload",
                "short",
                "--from",
                "block.txt",
            ],
        );
    };
    env.write("floor.kdl", &study("0.11.0"));
    ok(&env, &["lock", "floor.kdl"]);
    import("100.00");
    std::fs::copy(env.path("lockfiles/floor.lock"), env.path("before.lock")).unwrap();
    env.write("floor.kdl", &study("0.17.1"));
    ok(&env, &["lock", "floor.kdl"]);
    import("118.80");

    let gate = |extra: &[&str]| {
        let mut args = vec![
            "diff",
            "before.lock",
            "lockfiles/floor.lock",
            "--fail-on-regression",
            "5",
        ];
        args.extend(extra);
        env.run(&args)
    };
    let within = gate(&[]);
    assert_eq!(within.status.code(), Some(0), "{}", render(&within));
    let results = |out: &std::process::Output| {
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text[text.find("## Results").unwrap()..].to_owned()
    };
    insta::assert_snapshot!(results(&within), @r"
    ## Results

    | step | workload | metric | before | after | Δ | verdict |
    | --- | --- | --- | --- | --- | --- | --- |
    | vllm | short | total_token_throughput | 720.00 | 720.00 | +0.0% | unchanged |
    | vllm | short | mean_ttft_ms | 100.00 | 118.80 | +18.8% | within noise (n=1: no noise estimate, floor 20% applied) |
    | vllm | short | mean_tpot_ms | 10.00 | 10.00 | +0.0% | unchanged |
    ");

    let beyond = gate(&["--noise-floor", "mean_ttft_ms=15"]);
    assert_eq!(beyond.status.code(), Some(4), "{}", render(&beyond));
    insta::assert_snapshot!(String::from_utf8_lossy(&beyond.stderr), @r"
    perfpipe: comparing the results under runtime `docker`, the one the store holds results of (`--runtime` chooses)
    perfpipe: 1 regression beyond 5%: vllm × short mean_ttft_ms +18.8% (n=1: no noise estimate, floor 15% applied)
    ");

    let unknown = gate(&["--noise-floor", "mean_ttf_ms=15"]);
    assert_eq!(unknown.status.code(), Some(2), "{}", render(&unknown));
    assert!(
        crate::common::words(&unknown)
            .contains("`--noise-floor mean_ttf_ms=…` names a metric `diff` does not compare"),
        "{}",
        render(&unknown)
    );
}

/// `diff` suggests only commands that work: the experiment's own file for
/// the lockfile it matches, what to do for one it no longer matches (where
/// `run --locked` would exit 3), and `--max-prompts` for capped runs, which
/// `diff --max-prompts` compares.
#[test]
fn diff_compares_capped_runs_and_suggests_only_commands_that_work() {
    let env = TestEnv::new();
    let study = |version: &str| {
        format!(
            r#"experiment "cap" {{
    hardware "nvidia-a100-sxm4-80gb" gpus=1
    model "Qwen/Qwen3-14B"
    engine vllm version="{version}"
    workload short {{ dataset random input=32 output=4 seed=1; prompts 10; }}
    step vllm engine=vllm gpus=1
}}"#
        )
    };
    let smoke = [
        "run",
        "experiments/cap.kdl",
        "--runtime",
        "sim",
        "--max-prompts",
        "3",
    ];
    env.write("experiments/cap.kdl", &study("0.11.0"));
    ok(&env, &smoke);
    std::fs::copy(env.path("lockfiles/cap.lock"), env.path("before.lock")).unwrap();
    env.write("experiments/cap.kdl", &study("0.17.1"));
    ok(&env, &smoke);

    // The simulated engine's numbers vary run to run: under `--runtime sim`
    // the table's shape only; the published numbers below are judged.
    let diff = |extra: &[&str]| {
        let mut args = vec![
            "diff",
            "before.lock",
            "lockfiles/cap.lock",
            "--runtime",
            "sim",
        ];
        args.extend(extra);
        let out = ok(&env, &args);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let capped = diff(&["--max-prompts", "3"]);
    assert!(
        capped.contains("runs capped at 3 prompts (`--max-prompts 3`)")
            && capped.contains("| vllm | short | total_token_throughput | ")
            && !capped.contains("Not compared"),
        "{capped}"
    );

    // A cap no run used: the command that fills it carries the cap.
    let other_cap = diff(&["--max-prompts", "2"]);
    assert!(
        other_cap.contains("`lockfiles/cap.lock`: no result yet: `perfpipe run experiments/cap.kdl --lockfile lockfiles/cap.lock --locked --runtime sim --max-prompts 2`"),
        "{other_cap}"
    );

    // Without `--runtime` and `--max-prompts`: the results the store holds
    // (sim, capped at 3), said on stderr.
    let chosen = ok(&env, &["diff", "before.lock", "lockfiles/cap.lock"]);
    let shown = String::from_utf8_lossy(&chosen.stdout);
    assert!(
        shown.contains("runs capped at 3 prompts (`--max-prompts 3`)")
            && shown.contains("| vllm | short | total_token_throughput | ")
            && !shown.contains("Not compared"),
        "{shown}"
    );
    insta::assert_snapshot!(String::from_utf8_lossy(&chosen.stderr), @"perfpipe: the store holds no full-size result of these lockfiles' runs; comparing the 2 runs capped at 3 prompts under runtime `sim` (`--max-prompts 3`; `--runtime` and `--max-prompts` choose)");

    let full = diff(&[]);
    let not_compared = &full[full.find("Not compared").unwrap()..];
    insta::assert_snapshot!(not_compared, @r"
    Not compared:

    - `vllm` × `short`, `before.lock`: no result yet: `perfpipe run experiments/cap.kdl --lockfile before.lock --runtime sim` (runs them from the launch material the store recorded, without the experiment as it was)
    - `vllm` × `short`, `lockfiles/cap.lock`: no result yet: `perfpipe run experiments/cap.kdl --lockfile lockfiles/cap.lock --locked --runtime sim`
    ");
    // Without that material, what to do instead.
    let drv = env.path("store/drv");
    std::fs::rename(&drv, env.path("drv.kept")).unwrap();
    assert!(
        diff(&[]).contains("- `vllm` × `short`, `before.lock`: no result yet: `experiments/cap.kdl` has changed since `before.lock` was written, so `run --locked` would refuse it (exit 3); restore the experiment as it was then (e.g. from version control) and run `perfpipe run experiments/cap.kdl --lockfile before.lock --locked --runtime sim`"),
        "{}",
        diff(&[])
    );
    std::fs::rename(env.path("drv.kept"), &drv).unwrap();
    // The command suggested for the lockfile the experiment matches works.
    ok(
        &env,
        &[
            "run",
            "experiments/cap.kdl",
            "--lockfile",
            "lockfiles/cap.lock",
            "--locked",
            "--runtime",
            "sim",
        ],
    );
    let after = diff(&[]);
    assert!(
        !after.contains("`lockfiles/cap.lock`: no result yet"),
        "{after}"
    );
}

/// As the README goes: a study run under `sim`, its engine upgraded and run
/// again; plain `diff OLD NEW` compares the `sim` results (it compared keys
/// under `docker` and showed no number), chosen as `report` chooses, and
/// says which.
#[test]
fn diff_without_runtime_compares_the_results_the_store_holds_as_report_chooses() {
    let env = TestEnv::new();
    env.write("experiments/upgrade.kdl", STUDY);
    let run = ["run", "experiments/upgrade.kdl", "--runtime", "sim"];
    ok(&env, &run);
    std::fs::copy(env.path("lockfiles/upgrade.lock"), env.path("before.lock")).unwrap();
    env.write(
        "experiments/upgrade.kdl",
        &STUDY.replace(r#"vllm version="0.11.0""#, r#"vllm version="0.17.1""#),
    );
    ok(&env, &run);

    let diff = ok(&env, &["diff", "before.lock", "lockfiles/upgrade.lock"]);
    let shown = String::from_utf8_lossy(&diff.stdout);
    assert!(
        shown.contains("| vllm | short | total_token_throughput | ")
            && shown.contains("| vllm | shorter | mean_ttft_ms | ")
            && !shown.contains("Not compared")
            && !shown.contains("--runtime docker"),
        "{shown}"
    );
    insta::assert_snapshot!(String::from_utf8_lossy(&diff.stderr), @"perfpipe: comparing the results under runtime `sim`, the one the store holds results of (`--runtime` chooses)");
    let report = ok(&env, &["report", "experiments/upgrade.kdl"]);
    insta::assert_snapshot!(String::from_utf8_lossy(&report.stderr), @"perfpipe: reporting the results under runtime `sim`, the one the store holds results of (`--runtime` chooses)");
}

/// After one flag is added to a step, `explain`'s nearest stored run is that
/// step before the edit (one flag apart), not another step whose argv differs
/// as one string does; the flags that differ are named one by one, and a run
/// with samples of its own is never its own nearest run ("differs in:" and
/// nothing).
#[test]
fn explain_finds_the_step_before_its_edit_and_names_the_flags_that_differ() {
    let env = TestEnv::new();
    let study = |extra: &str| {
        format!(
            r#"experiment "flags" {{
    hardware "nvidia-a100-sxm4-80gb" gpus=1
    model "Qwen/Qwen3-14B"
    engine vllm version="0.11.0"
    workload short {{ dataset random input=32 output=4 seed=1; prompts 6; }}
    step a engine=vllm gpus=1 {{ args "--max-num-seqs" "4"{extra}; }}
    step b engine=vllm gpus=1 {{ args "--max-num-seqs" "8"; }}
    step c engine=vllm gpus=1 {{ args "--max-num-seqs" "16"; }}
    step d engine=vllm gpus=1 {{ args "--max-num-seqs" "32"; }}
}}"#
        )
    };
    env.write("flags.kdl", &study(""));
    ok(&env, &["run", "flags.kdl", "--runtime", "sim"]);
    let plan = ok(&env, &["plan", "flags.kdl", "--runtime", "sim"]);
    let before_edit = String::from_utf8_lossy(&plan.stdout)
        .lines()
        .find(|l| l.starts_with("a "))
        .and_then(|l| l.split_whitespace().nth(2))
        .unwrap()
        .to_owned();
    env.write(
        "flags.kdl",
        &study(r#" "--enforce-eager" "--max-model-len=2048""#),
    );
    let explain = ok(&env, &["explain", "flags.kdl", "a", "--runtime", "sim"]);
    assert!(
        String::from_utf8_lossy(&explain.stdout)
            .contains(&format!("nearest stored run: {before_edit} ")),
        "the step before its edit ({before_edit}): {}",
        render(&explain)
    );
    insta::with_settings!({ filters => filters() }, {
        insta::assert_snapshot!(render(&explain), @r"
        exit_code: 0
        ----- stdout -----
        `a` × `short`: missing (key [SHORT-KEY])
          no result for this key
          nearest stored run: [SHORT-KEY] (1 sample, simulated (test-host: simulated engine v1)); it differs in:
            serve_args: added `--enforce-eager`
            serve_args: added `--max-model-len 2048`

        ----- stderr -----
        ");
    });
}

/// `experiments/up.kdl` on vLLM 0.11.0, locked and its lockfile kept as
/// `before.lock`, then upgraded to 0.17.1 and locked again: the old
/// experiment file is gone.
fn locked_then_upgraded(env: &TestEnv) {
    let study = |version: &str| {
        format!(
            r#"experiment "up" {{
    hardware "nvidia-a100-sxm4-80gb" gpus=1
    model "Qwen/Qwen3-14B"
    engine vllm version="{version}"
    workload short {{ dataset random input=32 output=4 seed=1; prompts 6; }}
    step vllm engine=vllm gpus=1
}}"#
        )
    };
    env.write("experiments/up.kdl", &study("0.11.0"));
    // Offline here: unpinned images and commits, whatever `lock` exits with.
    env.run(&["lock", "experiments/up.kdl"]);
    std::fs::copy(env.path("lockfiles/up.lock"), env.path("before.lock")).unwrap();
    env.write("experiments/up.kdl", &study("0.17.1"));
    env.run(&["lock", "experiments/up.kdl"]);
}

/// The README's diff workflow, where the "before" side was locked but never
/// measured: `diff` suggests `run --lockfile before.lock`, which runs its
/// runs from the launch material the store recorded when it was locked,
/// without the experiment as it was; then `diff` compares both sides.
#[test]
fn the_before_side_of_a_diff_runs_from_its_recorded_material_without_the_old_experiment() {
    let env = TestEnv::new();
    locked_then_upgraded(&env);
    let before = env.read("before.lock");
    ok(&env, &["run", "experiments/up.kdl", "--runtime", "sim"]);

    let diff = || {
        let out = ok(
            &env,
            &[
                "diff",
                "before.lock",
                "lockfiles/up.lock",
                "--runtime",
                "sim",
            ],
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let first = diff();
    let suggested = "perfpipe run experiments/up.kdl --lockfile before.lock --runtime sim";
    assert!(
        first.contains(&format!("`before.lock`: no result yet: `{suggested}`")),
        "{first}"
    );
    let ran = ok(&env, &suggested.split(' ').skip(1).collect::<Vec<_>>());
    let said = String::from_utf8_lossy(&ran.stderr);
    assert!(said.contains("`before.lock` is left as it is"), "{said}");
    assert!(
        said.contains("ran 1 of `before.lock` (failed: 0)"),
        "{said}"
    );
    assert_eq!(
        env.read("before.lock"),
        before,
        "the older lockfile is kept"
    );
    let second = diff();
    assert!(
        second.contains("| vllm | short | total_token_throughput | ")
            && !second.contains("Not compared"),
        "{second}"
    );
    // Nothing left to run.
    let again = ok(&env, &suggested.split(' ').skip(1).collect::<Vec<_>>());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("ran 0 of `before.lock`"),
        "{}",
        render(&again)
    );
}

/// `run --lockfile OLD.lock` from recorded material takes this run's
/// `--samples` and timeouts, as an ordinary run does (none is key
/// material: the runs keep their keys), and records the launch it ran.
#[test]
fn an_older_lockfile_runs_with_the_samples_and_timeouts_asked() {
    let env = TestEnv::new();
    locked_then_upgraded(&env);
    let older = [
        "run",
        "experiments/up.kdl",
        "--lockfile",
        "before.lock",
        "--runtime",
        "sim",
        "--samples",
        "2",
        "--stall-timeout",
        "31",
        "--startup-timeout",
        "41",
    ];
    let ran = ok(&env, &older);
    let said = String::from_utf8_lossy(&ran.stderr);
    // Two samples of its one run: `--samples 2` held.
    assert!(said.contains("(run 2 on this engine)"), "{said}");
    let samples = env.samples();
    assert_eq!(samples.len(), 2, "{samples:?}");
    assert!(samples[0].split('/').next() == samples[1].split('/').next());
    let recorded: Vec<String> = crate::common::files_under(&env.path("store/drv"))
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .filter(|m| m.contains(r#""samples":2"#))
        .collect();
    assert_eq!(recorded.len(), 1, "the launch it ran is recorded");
    assert!(
        recorded[0].contains(r#""timeouts":{"stall_s":31,"startup_s":41}"#),
        "{}",
        recorded[0]
    );
    let again = ok(&env, &older);
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("ran 0 of `before.lock`"),
        "{}",
        render(&again)
    );
}
