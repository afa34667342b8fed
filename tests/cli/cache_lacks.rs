//! The short-lived memory of what a cache lacks: a web cache that said it
//! has no sample of a run is not asked again within `negative-ttl`, unless
//! `--refresh`; a failure is never remembered.

use crate::common::web_cache::WebCache;
use crate::common::{TestEnv, stderr, stdout};

const NOW: u64 = 1795290164;

/// Bob's project, asking `url` (negative-ttl 60 s) and trusting `public`.
fn bob(url: &str, public: &str) -> TestEnv {
    let bob = TestEnv::tiny();
    let lock = bob.run(&["lock", "tiny.kdl", "--offline"]);
    assert_eq!(lock.status.code(), Some(0), "{}", stderr(&lock));
    bob.write(
        "config/perfpipe/config.toml",
        &format!(
            "[cache]\nsubstituters = [\"{url}\"]\nnegative-ttl = 60\n[trust]\npublic-keys = [\"{public}\"]\n"
        ),
    );
    bob
}

/// `plan` at `now`, online; how many runs it found substitutable, and how
/// many requests the cache got meanwhile: one per run, its index (which
/// embeds its samples' manifests).
fn plan(bob: &TestEnv, cache: &WebCache, now: u64, extra: &[&str]) -> (usize, usize) {
    let before = cache.requests();
    let out = bob
        .cmd(&[&["plan", "tiny.kdl", "--runtime", "sim"][..], extra].concat())
        .env_remove("PERFPIPE_OFFLINE")
        .env("PERFPIPE_NOW", now.to_string())
        .env("XDG_CONFIG_HOME", bob.path("config"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let table = stdout(&out);
    let substitutable = table
        .lines()
        .filter(|l| l.contains(" substitutable "))
        .count();
    (substitutable, cache.requests() - before)
}

#[test]
fn a_cache_that_lacks_a_run_is_not_asked_again_within_the_ttl() {
    let (alice, public) = crate::cache::measured_with_key();
    crate::cache::push(&alice, alice.path("site").to_str().unwrap());
    let cache = WebCache::start(alice.path("site"), None);
    let bob = bob(&cache.url, &public);

    // The cache lacks everything: asked once per run, then remembered.
    cache.answer_all(404);
    assert_eq!(plan(&bob, &cache, NOW, &[]), (0, 7));
    assert_eq!(plan(&bob, &cache, NOW + 59, &[]), (0, 0));
    // A colleague pushes: unseen within the TTL, found with `--refresh`.
    cache.answer_all(0);
    assert_eq!(plan(&bob, &cache, NOW + 59, &[]), (0, 0));
    assert_eq!(plan(&bob, &cache, NOW + 59, &["--refresh"]), (7, 7));

    // Remembered again; found once the TTL has passed.
    cache.answer_all(404);
    assert_eq!(plan(&bob, &cache, NOW, &["--refresh"]), (0, 7));
    cache.answer_all(0);
    assert_eq!(plan(&bob, &cache, NOW + 30, &[]), (0, 0));
    assert_eq!(plan(&bob, &cache, NOW + 60, &[]), (7, 7));
}

#[test]
fn a_cache_that_failed_is_asked_again_at_once() {
    let cache = WebCache::start(std::path::PathBuf::from("/nonexistent"), None);
    cache.answer_all(503);
    let bob = bob(
        &cache.url,
        "alice:O2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik=",
    );
    // Each run's lookup is tried 3 times (a 5xx may pass), never remembered.
    assert_eq!(plan(&bob, &cache, NOW, &[]), (0, 21));
    assert_eq!(plan(&bob, &cache, NOW, &[]), (0, 21));
}
