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
