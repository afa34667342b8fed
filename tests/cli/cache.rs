//! The shared result cache: keys, push, substitution into another store,
//! and refusal of anything not signed by a trusted key.

use crate::common::web_cache::WebCache;
use crate::common::{TestEnv, render, stderr, stdout, words};

#[test]
fn keygen_prints_the_public_key_and_keeps_the_secret_private() {
    let env = TestEnv::new();
    let out = env.run(&["cache", "keygen", "alice-1", "--dir", "keys"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let public = stdout(&out);
    assert!(public.starts_with("alice-1:"), "{public}");
    assert_eq!(env.read("keys/alice-1.public"), public);
    let secret = env.read("keys/alice-1.secret");
    assert!(!public.contains(&secret[8..30]));
    // Never replaced: results signed with it would no longer verify.
    let again = env.run(&["cache", "keygen", "alice-1", "--dir", "keys"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        stderr(&again).contains("already exists"),
        "{}",
        stderr(&again)
    );
    assert_eq!(env.read("keys/alice-1.secret"), secret);
}

#[test]
fn a_project_file_naming_caches_or_keys_is_refused() {
    let env = TestEnv::tiny();
    env.write(
        "perfpipe.toml",
        "[cache]\nsubstituters = [\"https://cache.example\"]\n",
    );
    let out = env.run(&["plan", "tiny.kdl", "--runtime", "sim"]);
    assert_eq!(out.status.code(), Some(2));
    let err = words(&out);
    assert!(err.contains("perfpipe.toml:1"), "{err}");
    assert!(err.contains("not taken from a project's file"), "{err}");
}

/// A store with the tiny study measured on `sim`, and a key pair.
pub fn measured_with_key() -> (TestEnv, String) {
    let env = TestEnv::tiny();
    let out = env.run(&["run", "tiny.kdl", "--runtime", "sim"]);
    assert!(out.status.code() == Some(0), "{}", stderr(&out));
    let key = env.run(&["cache", "keygen", "alice", "--dir", "keys"]);
    (env, stdout(&key).trim().to_owned())
}

/// `cache push` of the tiny study's runs to `to`, signed with Alice's key.
pub fn push_args(to: &str) -> [&str; 9] {
    [
        "cache",
        "push",
        "tiny.kdl",
        "--runtime",
        "sim",
        "--to",
        to,
        "--secret-key",
        "keys/alice.secret",
    ]
}

pub fn push(env: &TestEnv, to: &str) -> String {
    let out = env.run(&push_args(to));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    stderr(&out)
}

/// The common filters, and estimates, which come from measured times.
fn cache_filters() -> Vec<(&'static str, &'static str)> {
    let mut filters = vec![(r"\d+\.\d GPU-hours", "[N] GPU-hours")];
    filters.extend(crate::common::filters());
    filters
}

/// What `run` says of the whole run: its lines but each run's progress.
fn run_summary(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|l| !l.starts_with('[') && !l.starts_with(' '))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_directory_cache_supplies_another_store_instead_of_measuring() {
    let (alice, public) = measured_with_key();
    // Alice's plan: the tiny study's expected failure is a failed row.
    let cached = alice.run(&["plan", "tiny.kdl", "--runtime", "sim"]);
    insta::with_settings!({ filters => cache_filters() }, {
        insta::assert_snapshot!(render(&cached), @r"
        exit_code: 0
        ----- stdout -----
        experiment `tiny` · runtime `sim` · store `store`
        lockfile `lockfiles/tiny.lock`: 8 inputs, 4 unpinned: engine.trtllm, engine.vllm, model.Qwen/Qwen3-14B-FP8@main, model.Qwen/Qwen3-14B@main
        note: workload `chat` uses the sample dataset `sharegpt-tiny.json` (the declared file is absent)

        STEP          WORKLOAD  KEY           STATUS   DETAIL
        vllm          chat      [SHORT-KEY]  cached   1 sample
        vllm          short     [SHORT-KEY]  cached   1 sample
        trtllm        chat      [SHORT-KEY]  cached   1 sample
        trtllm        short     [SHORT-KEY]  cached   1 sample
        trtllm-fp8    chat      [SHORT-KEY]  failed   RuntimeError: Unsupported SM version for FP8 block scaling GEMM
        vllm-seqs-8   short     [SHORT-KEY]  cached   1 sample
        vllm-seqs-64  short     [SHORT-KEY]  cached   1 sample

        7 runs: 6 cached, 1 failed, 0 missing; 0 to run (0 engine launches)

        ----- stderr -----
        ");
    });
    // Capped, every run is another run, missing.
    let capped = alice.run(&["plan", "tiny.kdl", "--runtime", "sim", "--max-prompts", "3"]);
    insta::with_settings!({ filters => cache_filters() }, {
        insta::assert_snapshot!(render(&capped), @r"
        exit_code: 0
        ----- stdout -----
        experiment `tiny` · runtime `sim` · store `store`
        lockfile `lockfiles/tiny.lock`: 8 inputs, 4 unpinned: engine.trtllm, engine.vllm, model.Qwen/Qwen3-14B-FP8@main, model.Qwen/Qwen3-14B@main
        note: workload `chat` uses the sample dataset `sharegpt-tiny.json` (the declared file is absent)

        STEP          WORKLOAD  KEY           STATUS   DETAIL
        vllm          chat      [SHORT-KEY]  missing  no result for this key
        vllm          short     [SHORT-KEY]  missing  no result for this key
        trtllm        chat      [SHORT-KEY]  missing  no result for this key
        trtllm        short     [SHORT-KEY]  missing  no result for this key
        trtllm-fp8    chat      [SHORT-KEY]  missing  no result for this key
        vllm-seqs-8   short     [SHORT-KEY]  missing  no result for this key
        vllm-seqs-64  short     [SHORT-KEY]  missing  no result for this key

        7 runs: 0 cached, 0 failed, 7 missing; 7 to run (5 engine launches)

        launches (`perfpipe plan --write-launches` writes their material for `perfpipe realise LAUNCH`):
          [SHORT-KEY]  vllm 0.11.0 · 2 runs: vllm × chat, vllm × short
          [SHORT-KEY]  trtllm 1.2.0rc1 · 2 runs: trtllm × chat, trtllm × short
          [SHORT-KEY]  trtllm 1.2.0rc1 · 1 run: trtllm-fp8 × chat
          [SHORT-KEY]  vllm 0.11.0 · 1 run: vllm-seqs-8 × short
          [SHORT-KEY]  vllm 0.11.0 · 1 run: vllm-seqs-64 × short
        estimate: [N] GPU-hours (5 engine launches at a typical start of 5 min for vLLM, 15 min for TensorRT-LLM, plus benchmark times of earlier results; 7 runs have no earlier result of their workload and count only their launch)

        ----- stderr -----
        ");
    });
    let cache = alice.path("team-cache");
    let cache = cache.to_str().unwrap();
    let first = push(&alice, cache);
    insta::with_settings!({ filters => cache_filters() }, {
        insta::assert_snapshot!(first, @"perfpipe: pushed 7 samples to `[TEMP]/team-cache` as `alice` (0 already there)");
    });
    let again = push(&alice, cache);
    insta::with_settings!({ filters => cache_filters() }, {
        insta::assert_snapshot!(again, @"perfpipe: pushed 0 samples to `[TEMP]/team-cache` as `alice` (7 already there)");
    });

    let bob = TestEnv::tiny();
    let trust = [
        "--runtime",
        "sim",
        "--substituter",
        cache,
        "--trusted-key",
        &public,
    ];
    let plan = bob.run(&[&["plan", "tiny.kdl"][..], &trust].concat());
    assert_eq!(plan.status.code(), Some(0), "{}", stderr(&plan));
    let table = stdout(&plan);
    let rows = |t: &str| t.lines().filter(|l| l.contains(" substitutable ")).count();
    assert_eq!(rows(&table), 7, "{table}");
    insta::with_settings!({ filters => cache_filters() }, {
        insta::assert_snapshot!(render(&plan), @r"
        exit_code: 0
        ----- stdout -----
        experiment `tiny` · runtime `sim` · store `store`
        lockfile `lockfiles/tiny.lock`: none yet; `perfpipe lock` or `perfpipe run` writes it
        note: workload `chat` uses the sample dataset `sharegpt-tiny.json` (the declared file is absent)

        STEP          WORKLOAD  KEY           STATUS         DETAIL
        vllm          chat      [SHORT-KEY]  substitutable  1 sample in `[TEMP]/team-cache`; no result for this key
        vllm          short     [SHORT-KEY]  substitutable  1 sample in `[TEMP]/team-cache`; no result for this key
        trtllm        chat      [SHORT-KEY]  substitutable  1 sample in `[TEMP]/team-cache`; no result for this key
        trtllm        short     [SHORT-KEY]  substitutable  1 sample in `[TEMP]/team-cache`; no result for this key
        trtllm-fp8    chat      [SHORT-KEY]  substitutable  1 sample in `[TEMP]/team-cache`; no result for this key
        vllm-seqs-8   short     [SHORT-KEY]  substitutable  1 sample in `[TEMP]/team-cache`; no result for this key
        vllm-seqs-64  short     [SHORT-KEY]  substitutable  1 sample in `[TEMP]/team-cache`; no result for this key

        7 runs: 0 cached, 0 failed, 7 missing; 7 to run (5 engine launches)

        launches (`perfpipe plan --write-launches` writes their material for `perfpipe realise LAUNCH`):
          [SHORT-KEY]  vllm 0.11.0 · 2 runs: vllm × chat, vllm × short
          [SHORT-KEY]  trtllm 1.2.0rc1 · 2 runs: trtllm × chat, trtllm × short
          [SHORT-KEY]  trtllm 1.2.0rc1 · 1 run: trtllm-fp8 × chat
          [SHORT-KEY]  vllm 0.11.0 · 1 run: vllm-seqs-8 × short
          [SHORT-KEY]  vllm 0.11.0 · 1 run: vllm-seqs-64 × short
        substitutable: 7 runs from trusted caches, saving [N] GPU-hours of the estimate
        estimate: [N] GPU-hours (5 engine launches at a typical start of 5 min for vLLM, 15 min for TensorRT-LLM, plus benchmark times of earlier results; 7 runs have no earlier result of their workload and count only their launch)

        ----- stderr -----
        ");
    });

    let run = bob.run(&[&["run", "tiny.kdl"][..], &trust].concat());
    let err = stderr(&run);
    assert_eq!(run.status.code(), Some(0), "{err}");
    assert_eq!(
        err.matches("substituted a sample signed by `alice`")
            .count(),
        7,
        "{err}"
    );
    insta::with_settings!({ filters => cache_filters() }, {
        insta::assert_snapshot!(run_summary(&err), @r"
        perfpipe: wrote `lockfiles/tiny.lock` (8 inputs, 4 unpinned: engine.trtllm, engine.vllm, model.Qwen/Qwen3-14B-FP8@main, model.Qwen/Qwen3-14B@main)
        perfpipe: `vllm` × `chat` ([SHORT-KEY]): substituted a sample signed by `alice` from `[TEMP]/team-cache`
        perfpipe: `vllm` × `short` ([SHORT-KEY]): substituted a sample signed by `alice` from `[TEMP]/team-cache`
        perfpipe: `trtllm` × `chat` ([SHORT-KEY]): substituted a sample signed by `alice` from `[TEMP]/team-cache`
        perfpipe: `trtllm` × `short` ([SHORT-KEY]): substituted a sample signed by `alice` from `[TEMP]/team-cache`
        perfpipe: `trtllm-fp8` × `chat` ([SHORT-KEY]): substituted a sample signed by `alice` from `[TEMP]/team-cache`
        perfpipe: `vllm-seqs-8` × `short` ([SHORT-KEY]): substituted a sample signed by `alice` from `[TEMP]/team-cache`
        perfpipe: `vllm-seqs-64` × `short` ([SHORT-KEY]): substituted a sample signed by `alice` from `[TEMP]/team-cache`
        perfpipe: 7 runs, 7 in the store, 0 to run (runtime `sim`)
        note: workload `chat` uses the sample dataset `sharegpt-tiny.json` (the declared file is absent)
        perfpipe: ran 0 (failed: 0); report written to `reports/tiny.md` (and `reports/tiny.html`)
        ");
    });
    let verify = bob.run(&["store", "verify"]);
    assert_eq!(verify.status.code(), Some(0), "{}", stderr(&verify));
    // `explain` names each sample's signer, the deterministic failure's too.
    let explain = bob.run(&["explain", "tiny.kdl", "--runtime", "sim"]);
    let text = stdout(&explain);
    assert_eq!(
        text.matches("from a cache, signed by `alice`").count(),
        7,
        "{text}"
    );
    assert!(
        text.contains("failed (test-host: simulated engine v1; from a cache"),
        "{text}"
    );

    // The report says which samples came from which signer, in markdown and JSON.
    let report = bob.run(&["report", "tiny.kdl", "--runtime", "sim"]);
    assert_eq!(report.status.code(), Some(0), "{}", stderr(&report));
    let markdown = stdout(&report);
    let section: String = markdown
        .split("\nSubstituted from a result cache:\n\n")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .unwrap_or_default()
        .to_owned();
    insta::assert_snapshot!(section, @r"
    - `vllm` × `chat`: 1 sample signed by `alice`
    - `vllm` × `short`: 1 sample signed by `alice`
    - `trtllm` × `chat`: 1 sample signed by `alice`
    - `trtllm` × `short`: 1 sample signed by `alice`
    - `trtllm-fp8` × `chat`: 1 sample signed by `alice`
    - `vllm-seqs-8` × `short`: 1 sample signed by `alice`
    - `vllm-seqs-64` × `short`: 1 sample signed by `alice`
    ");
    let json = bob.run(&["report", "tiny.kdl", "--runtime", "sim", "--format", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let runs = json["analysis"]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 7);
    assert!(
        runs.iter()
            .all(|r| r["signers"] == serde_json::json!({"alice": 1})),
        "{runs:?}"
    );

    // `--no-substitute` measures anyway: `plan` offers nothing, and `run`
    // measures every run on this machine, substituting nothing.
    let fresh = TestEnv::tiny();
    let no_substitute = |command: &str| {
        fresh.run(&[&[command, "tiny.kdl", "--no-substitute"][..], &trust].concat())
    };
    let plan = no_substitute("plan");
    assert_eq!(plan.status.code(), Some(0), "{}", stderr(&plan));
    assert_eq!(rows(&stdout(&plan)), 0, "{}", stdout(&plan));
    let measured = no_substitute("run");
    let err = stderr(&measured);
    assert_eq!(measured.status.code(), Some(0), "{err}");
    assert!(!err.contains("substituted"), "{err}");
    insta::with_settings!({ filters => cache_filters() }, {
        insta::assert_snapshot!(run_summary(&err), @r"
        perfpipe: wrote `lockfiles/tiny.lock` (8 inputs, 4 unpinned: engine.trtllm, engine.vllm, model.Qwen/Qwen3-14B-FP8@main, model.Qwen/Qwen3-14B@main)
        perfpipe: 7 runs, 0 in the store, 7 to run (runtime `sim`)
        note: workload `chat` uses the sample dataset `sharegpt-tiny.json` (the declared file is absent)
        perfpipe: ran 7 (failed: 1, as the experiment expects); report written to `reports/tiny.md` (and `reports/tiny.html`)
        ");
    });
    let results = fresh.results();
    assert_eq!(results.len(), 7);
    for (dir, result) in &results {
        assert_eq!(result["provenance"]["kind"], "simulated", "{result}");
        assert!(
            !dir.join("signature.json").exists(),
            "{} is signed",
            dir.display()
        );
    }
}

#[test]
fn a_cache_without_trusted_keys_is_a_usage_error() {
    let env = TestEnv::tiny();
    let out = env.run(&[
        "plan",
        "tiny.kdl",
        "--runtime",
        "sim",
        "--substituter",
        "cache",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        words(&out).contains("no key is trusted"),
        "{}",
        stderr(&out)
    );
}

/// A child process serving on a loopback port, killed on drop.
pub struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Debian's `docker-registry` on a free loopback port, its storage and
/// config in `env` (`config` appended to it: e.g. an `auth:` section), and
/// the cache location of a repository in it.
pub fn registry(env: &TestEnv, config: &str) -> (Server, String) {
    let port = crate::common::free_port();
    let path = env.path("registry.yml");
    std::fs::write(
        &path,
        format!(
            "version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: 127.0.0.1:{port}\n{config}",
            env.path("registry").display()
        ),
    )
    .unwrap();
    let server = Server::start(
        std::process::Command::new("docker-registry")
            .arg("serve")
            .arg(&path)
            .env_clear(),
        port,
    );
    (server, format!("oci://127.0.0.1:{port}/team/perfpipe"))
}

impl Server {
    pub fn start(command: &mut std::process::Command, port: u16) -> Self {
        let server = Self(
            command
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("the server starts"),
        );
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(std::time::Instant::now() < deadline, "no server on {port}");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        server
    }
}

/// Another machine's store: `plan` offers every run from `location`, and
/// `run` (with the network: not `--offline`) substitutes them all.
fn substitutes_everything(location: &str, public: &str) {
    substitutes_everything_signed_by(location, public, "alice");
}

/// [`substitutes_everything`], trusting `public` only, whose name is `signer`.
fn substitutes_everything_signed_by(location: &str, public: &str, signer: &str) {
    let bob = TestEnv::tiny();
    let lock = bob.run(&["lock", "tiny.kdl", "--offline"]);
    assert_eq!(lock.status.code(), Some(0), "{}", stderr(&lock));
    let trust = [
        "--runtime",
        "sim",
        "--substituter",
        location,
        "--trusted-key",
        public,
    ];
    let online = |args: &[&str]| {
        bob.cmd(&[args, &trust].concat())
            .env_remove("PERFPIPE_OFFLINE")
            .output()
            .unwrap()
    };
    let plan = online(&["plan", "tiny.kdl"]);
    assert!(
        stdout(&plan).contains("substitutable: 7 runs from trusted caches"),
        "{}{}",
        stdout(&plan),
        stderr(&plan)
    );
    let run = online(&["run", "tiny.kdl"]);
    let err = stderr(&run);
    assert_eq!(
        err.matches(&format!("substituted a sample signed by `{signer}`"))
            .count(),
        7,
        "{err}"
    );
    assert!(err.contains("ran 0 (failed: 0)"), "{err}");
    assert_eq!(bob.run(&["store", "verify"]).status.code(), Some(0));
}

#[test]
fn a_static_web_server_serves_a_pushed_directory_read_only() {
    let (alice, public) = measured_with_key();
    push(&alice, alice.path("site").to_str().unwrap());
    let port = crate::common::free_port();
    let _server = Server::start(
        std::process::Command::new("python3")
            .args([
                "-m",
                "http.server",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
            ])
            .current_dir(alice.path("site")),
        port,
    );
    let url = format!("http://127.0.0.1:{port}");
    substitutes_everything(&url, &public);
    // Read-only: pushing to it is a usage error.
    let out = alice.run(&[
        "cache",
        "push",
        "--all",
        "--to",
        &url,
        "--secret-key",
        "keys/alice.secret",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(words(&out).contains("read-only"), "{}", stderr(&out));
}

/// The tiny study with a sweep of 8 values: 13 runs, more than are asked
/// about at once (8).
fn wider(env: &TestEnv) {
    let kdl = env.read("tiny.kdl");
    let wider = kdl.replace(
        "vary \"--max-num-seqs\" 8 64",
        "vary \"--max-num-seqs\" 8 16 24 32 40 48 56 64",
    );
    assert_ne!(kdl, wider);
    env.write("tiny.kdl", &wider);
}

/// `run` takes each key up whole (its index, then its samples' blobs,
/// committed) before it asks about keys beyond the few in flight, so what
/// it holds while pulling is a few keys' manifests, never the whole study's.
#[test]
fn run_pulls_each_key_before_asking_about_the_keys_beyond_those_in_flight() {
    let alice = TestEnv::tiny();
    wider(&alice);
    let measured = alice.run(&["run", "tiny.kdl", "--runtime", "sim"]);
    assert_eq!(measured.status.code(), Some(0), "{}", stderr(&measured));
    let public = stdout(&alice.run(&["cache", "keygen", "alice", "--dir", "keys"]));
    let site = alice.path("site");
    let pushed = push(&alice, site.to_str().unwrap());
    assert!(pushed.contains("pushed 13 samples"), "{pushed}");
    let cache = WebCache::start(site, None);

    let bob = TestEnv::tiny();
    wider(&bob);
    let lock = bob.run(&["lock", "tiny.kdl", "--offline"]);
    assert_eq!(lock.status.code(), Some(0), "{}", stderr(&lock));
    let run = bob
        .cmd(&[
            "run",
            "tiny.kdl",
            "--runtime",
            "sim",
            "--substituter",
            &cache.url,
            "--trusted-key",
            public.trim(),
        ])
        .env_remove("PERFPIPE_OFFLINE")
        .output()
        .unwrap();
    let err = stderr(&run);
    assert_eq!(run.status.code(), Some(0), "{err}");
    assert_eq!(err.matches("substituted a sample").count(), 13, "{err}");
    assert!(err.contains("ran 0 (failed: 0)"), "{err}");

    let paths = cache.paths();
    let lookups: Vec<usize> = (0..paths.len())
        .filter(|&i| paths[i].starts_with("/keys/"))
        .collect();
    assert_eq!(lookups.len(), 13, "one lookup per key: {paths:#?}");
    let first_blob = paths.iter().position(|p| p.starts_with("/blobs/"));
    assert!(
        first_blob.is_some_and(|blob| blob < lookups[12]),
        "a blob is fetched before the last key is asked about: {paths:#?}"
    );
}

#[test]
fn an_oci_registry_takes_pushes_and_supplies_samples() {
    let (alice, public) = measured_with_key();
    let (_registry, location) = registry(&alice, "");
    let first = push(&alice, &location);
    assert!(first.contains("pushed 7 samples"), "{first}");
    let again = push(&alice, &location);
    assert!(again.contains("7 already there"), "{again}");
    substitutes_everything(&location, &public);
}

#[test]
fn samples_sharing_blobs_are_pushed_to_a_registry_each_blob_once() {
    // Two samples of each run share their key material (and the sim's
    // identical logs): uploaded concurrently, one blob used to be refused.
    let env = TestEnv::tiny();
    let out = env.run(&["run", "tiny.kdl", "--runtime", "sim", "--samples", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    env.run(&["cache", "keygen", "alice", "--dir", "keys"]);
    let (_registry, location) = registry(&env, "");
    let first = push(&env, &location);
    assert!(first.contains("pushed 13 samples"), "{first}");
    assert!(push(&env, &location).contains("13 already there"));
}

#[test]
fn a_key_rotated_by_cache_sign_alone_is_trusted_to_substitute() {
    let (alice, old) = measured_with_key();
    let (_registry, location) = registry(&alice, "");
    push(&alice, &location);
    let keygen = alice.run(&["cache", "keygen", "alice-2", "--dir", "keys"]);
    let new = stdout(&keygen).trim().to_owned();
    let sign = |trusted: &str| {
        alice.run(&[
            "cache",
            "sign",
            "tiny.kdl",
            "--runtime",
            "sim",
            "--to",
            &location,
            "--key",
            "keys/alice-2.secret",
            "--trusted-key",
            trusted,
        ])
    };
    // Only after a signature it trusts.
    let untrusting = sign(&new);
    assert_eq!(untrusting.status.code(), Some(0), "{}", stderr(&untrusting));
    let err = words(&untrusting);
    assert!(err.contains("signed 0 samples"), "{err}");
    assert_eq!(
        err.matches("signed by `alice`, which is not among the trusted keys")
            .count(),
        7,
        "{err}"
    );
    let signed = sign(&old);
    assert_eq!(signed.status.code(), Some(0), "{}", stderr(&signed));
    assert!(
        words(&signed).contains("signed 7 samples"),
        "{}",
        stderr(&signed)
    );
    assert!(words(&sign(&old)).contains("signed 0 samples"));
    // The content did not change: a push with either key uploads nothing.
    let again = alice.run(&[
        "cache",
        "push",
        "tiny.kdl",
        "--runtime",
        "sim",
        "--to",
        &location,
        "--secret-key",
        "keys/alice-2.secret",
    ]);
    assert!(
        words(&again).contains("pushed 0 samples") && words(&again).contains("7 already there"),
        "{}",
        stderr(&again)
    );
    substitutes_everything_signed_by(&location, &new, "alice-2");
}

/// `perfpipe ARGS` in `env`, online, its address space limited to `mib`
/// MiB (`ulimit -v`, through sh) and glibc's malloc to one arena, so that the
/// limit bounds what is allocated rather than what threads reserve.
fn within_memory(env: &TestEnv, mib: u64, args: &[&str]) -> std::process::Output {
    let inner = env.cmd(args);
    let mut command = std::process::Command::new("sh");
    command
        .arg("-c")
        .arg(format!("ulimit -v {} && exec \"$0\" \"$@\"", mib << 10))
        .arg(inner.get_program())
        .args(inner.get_args());
    for (name, value) in inner.get_envs() {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    if let Some(dir) = inner.get_current_dir() {
        command.current_dir(dir);
    }
    command
        .env("MALLOC_ARENA_MAX", "1")
        .env_remove("PERFPIPE_OFFLINE")
        .output()
        .unwrap()
}

/// What perfpipe may map in [`within_memory`]: its code and threads with
/// room to spare, far less than [`BIG_LOG_MIB`] held once.
const MEMORY_LIMIT_MIB: u64 = 320;
/// A log larger than the limit leaves room for (and under the 256 MiB
/// perfpipe fetches for a sample).
const BIG_LOG_MIB: u64 = 240;

#[test]
fn a_sample_larger_than_the_memory_allowed_is_pushed_and_pulled_as_a_stream() {
    let (alice, public) = measured_with_key();
    // One measured sample gets a log larger than the room the limit leaves.
    let result = crate::common::files_under(&alice.path("store"))
        .into_iter()
        .find(|p| p.ends_with("samples/0001/result.json"))
        .unwrap();
    let big = result.with_file_name("logs").join("big.log");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(BIG_LOG_MIB << 20)
        .unwrap();
    let to = alice.path("team-cache");
    let args = push_args(to.to_str().unwrap());
    let pushed = within_memory(&alice, MEMORY_LIMIT_MIB, &args);
    assert_eq!(pushed.status.code(), Some(0), "{}", stderr(&pushed));
    assert!(
        stderr(&pushed).contains("pushed 7 samples"),
        "{}",
        stderr(&pushed)
    );

    let bob = TestEnv::tiny();
    let lock = bob.run(&["lock", "tiny.kdl", "--offline"]);
    assert_eq!(lock.status.code(), Some(0), "{}", stderr(&lock));
    let run = within_memory(
        &bob,
        MEMORY_LIMIT_MIB,
        &[
            "run",
            "tiny.kdl",
            "--runtime",
            "sim",
            "--substituter",
            to.to_str().unwrap(),
            "--trusted-key",
            &public,
        ],
    );
    let err = stderr(&run);
    assert_eq!(run.status.code(), Some(0), "{err}");
    assert_eq!(err.matches("substituted a sample").count(), 7, "{err}");
    let pulled = crate::common::files_under(&bob.path("store"))
        .into_iter()
        .find(|p| p.ends_with("logs/big.log"))
        .unwrap();
    assert_eq!(std::fs::metadata(pulled).unwrap().len(), BIG_LOG_MIB << 20);
}
