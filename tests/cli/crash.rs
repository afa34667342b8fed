//! `kill -9` of perfpipe at random moments of a run: resumed each time, the
//! store ends with every run exactly once, `store verify` clean, and no
//! process of the runs alive.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::common::{TestEnv, live_processes, random_hex, stderr, stdout};

const KILLS: usize = 20;

/// A small experiment: 2 steps × 3 workloads, each run a fraction of a second.
const EXPERIMENT: &str = r#"experiment "crash" {
    hardware "nvidia-a100-sxm4-80gb" gpus=2
    model "Qwen/Qwen3-14B"
    engine vllm version="0.11.0"
    engine sglang version="0.5.5.post1"
    workload a {
        dataset random input=32 output=48 seed=1
        prompts 6
    }
    workload b {
        dataset random input=64 output=32 seed=2
        prompts 6
    }
    workload c {
        dataset random input=16 output=64 seed=3
        prompts 6
    }
    step vllm engine=vllm gpus=1
    step sglang engine=sglang gpus=1
}"#;

/// xorshift64*: moments that differ between test runs, printed to replay one.
fn moments(seed: u64) -> impl Iterator<Item = Duration> {
    let mut state = seed | 1;
    std::iter::repeat_with(move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        let r = state.wrapping_mul(0x2545_f491_4f6c_dd1d);
        Duration::from_millis(r % 700)
    })
}

#[test]
fn sigkill_at_random_moments_loses_and_repeats_nothing() {
    let env = TestEnv::new();
    env.write("crash.kdl", EXPERIMENT);
    let tag = format!("crash-{}", random_hex());
    let seed = std::env::var("CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::UNIX_EPOCH
                .elapsed()
                .unwrap()
                .as_nanos() as u64
        });
    let context = format!("replay with CRASH_SEED={seed}");
    let run = || {
        let mut cmd = env.cmd(&["run", "crash.kdl", "--runtime", "sim"]);
        // Children inherit the tag, so any process of the runs can be found.
        cmd.env("CRASH_TAG", &tag)
            .env("PERFPIPE_SIM_TIMING", "fixed:ttft_ms=20,itl_ms=4")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        cmd
    };

    let mut kills = 0;
    let mut finished_early = 0;
    for moment in moments(seed) {
        if kills == KILLS {
            break;
        }
        let mut perfpipe = run().spawn().unwrap();
        std::thread::sleep(moment);
        if perfpipe.try_wait().unwrap().is_some() {
            // It finished first: start over on an empty store, so every
            // kill lands inside a run.
            finished_early += 1;
            assert!(
                finished_early < 50,
                "runs end too fast to be killed; {context}"
            );
            std::fs::remove_dir_all(env.path("store")).unwrap();
            continue;
        }
        perfpipe.kill().unwrap();
        perfpipe.wait().unwrap();
        kills += 1;
        // Only complete entries, whatever the moment.
        if env.path("store").exists() {
            let verify = env.run(&["store", "verify"]);
            assert_eq!(
                verify.status.code(),
                Some(0),
                "after kill {kills} at {moment:?}; {context}\n{}",
                stdout(&verify)
            );
        }
    }

    eprintln!(
        "{kills} kills ({finished_early} runs finished first); {} of 6 runs committed before the last resume",
        env.samples().len()
    );
    let out = env.run(&["run", "crash.kdl", "--runtime", "sim"]);
    assert_eq!(out.status.code(), Some(0), "{context}\n{}", stderr(&out));

    // Every run exactly once.
    let mut per_key: BTreeMap<String, usize> = BTreeMap::new();
    for sample in env.samples() {
        *per_key
            .entry(sample.split('/').next().unwrap().to_owned())
            .or_default() += 1;
    }
    assert_eq!(per_key.len(), 6, "{context}\n{per_key:?}");
    assert!(per_key.values().all(|n| *n == 1), "{context}\n{per_key:?}");
    let plan = env.run(&["plan", "crash.kdl", "--runtime", "sim"]);
    assert!(
        stdout(&plan).contains("6 runs: 6 cached, 0 failed, 0 missing; 0 to run"),
        "{context}\n{}",
        stdout(&plan)
    );

    let verify = env.run(&["store", "verify"]);
    assert_eq!(
        std::fs::read_dir(env.path("store/tmp")).unwrap().count(),
        0,
        "the temp dirs of killed runs are gone; {context}"
    );
    assert_eq!(
        verify.status.code(),
        Some(0),
        "{context}\n{}",
        stdout(&verify)
    );

    // No engine, harness or perfpipe of the runs is alive.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !live_processes(&tag).is_empty() {
        assert!(
            Instant::now() < deadline,
            "{context}: left alive: {:?}",
            live_processes(&tag)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
