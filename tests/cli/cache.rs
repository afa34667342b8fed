//! The shared result cache: keys, push, substitution into another store,
//! and refusal of anything not signed by a trusted key.

use crate::common::{TestEnv, stderr, stdout, words};

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
fn measured_with_key() -> (TestEnv, String) {
    let env = TestEnv::tiny();
    let out = env.run(&["run", "tiny.kdl", "--runtime", "sim"]);
    assert!(out.status.code() == Some(0), "{}", stderr(&out));
    let key = env.run(&["cache", "keygen", "alice", "--dir", "keys"]);
    (env, stdout(&key).trim().to_owned())
}

fn push(env: &TestEnv, to: &str) -> String {
    let out = env.run(&[
        "cache",
        "push",
        "tiny.kdl",
        "--runtime",
        "sim",
        "--to",
        to,
        "--secret-key",
        "keys/alice.secret",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    stderr(&out)
}

#[test]
fn a_directory_cache_supplies_another_store_instead_of_measuring() {
    let (alice, public) = measured_with_key();
    let cache = alice.path("team-cache");
    let cache = cache.to_str().unwrap();
    let first = push(&alice, cache);
    assert!(first.contains("pushed 7 samples"), "{first}");
    let again = push(&alice, cache);
    assert!(
        again.contains("pushed 0 samples") && again.contains("7 already there"),
        "{again}"
    );

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
    assert!(
        table.contains("substitutable: 7 runs from trusted caches"),
        "{table}"
    );

    let run = bob.run(&[&["run", "tiny.kdl"][..], &trust].concat());
    let err = stderr(&run);
    assert_eq!(run.status.code(), Some(0), "{err}");
    assert_eq!(
        err.matches("substituted a sample signed by `alice`")
            .count(),
        7,
        "{err}"
    );
    assert!(err.contains("7 in the store, 0 to run"), "{err}");
    assert!(err.contains("ran 0 (failed: 0)"), "{err}");
    // The deterministic failure came as a failure, shown with its signer.
    let verify = bob.run(&["store", "verify"]);
    assert_eq!(verify.status.code(), Some(0), "{}", stderr(&verify));

    // `--no-substitute` measures anyway, adding this machine's sample.
    let fresh = TestEnv::tiny();
    let measure = fresh.run(&[&["plan", "tiny.kdl", "--no-substitute"][..], &trust].concat());
    assert_eq!(rows(&stdout(&measure)), 0);
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
