//! What a command with nothing to do skips, and that it skips nothing it
//! must do: the store's cache of input hashes (racy timestamps, damage,
//! `lock` reading every file again). Commands that write (`lock`, `run`)
//! keep the cache; `plan`, which only reads, uses it and writes nothing.

use std::os::unix::fs::MetadataExt;

use serde_json::Value;

use crate::common::TestEnv;

const CACHE: &str = "store/cache/inputs.json";
const GRANULARITY_NS: i64 = 2_000_000_000;

/// The tiny project with a store, which commands keep their cache in (a
/// command creates no store for it).
fn project() -> TestEnv {
    let env = TestEnv::tiny();
    std::fs::create_dir(env.path("store")).unwrap();
    env
}

/// The runs `plan` lists, with their keys.
fn plan(env: &TestEnv) -> String {
    let out = env.run(&["plan", "tiny.kdl", "--runtime", "sim"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let table = text.find("\nSTEP").expect("a table of runs");
    text[table..].to_owned()
}

/// `lock --offline`, which hashes every input again and keeps the hashes
/// in the store's cache (pinning nothing new, so the keys stay).
fn lock(env: &TestEnv) {
    let out = env.run(&["lock", "tiny.kdl", "--offline"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The cache's one entry (the tiny study's dataset), edited by `edit`.
fn edit_cache_entry(env: &TestEnv, edit: impl FnOnce(&mut Value)) {
    let mut cache: Value = serde_json::from_str(&env.read(CACHE)).unwrap();
    let files = cache["files"].as_object_mut().unwrap();
    assert_eq!(files.len(), 1, "{files:?}");
    let (path, entry) = files.iter_mut().next().unwrap();
    assert!(path.ends_with("/sharegpt-tiny.json"), "{path}");
    edit(entry);
    env.write(CACHE, &cache.to_string());
}

/// What `stat` says of the file, as the cache records it.
fn stamp_of(env: &TestEnv, rel: &str) -> Value {
    let meta = std::fs::metadata(env.path(rel)).unwrap();
    serde_json::json!({
        "size": meta.len(),
        "mtime_ns": meta.mtime() * 1_000_000_000 + meta.mtime_nsec(),
        "ctime_ns": meta.ctime() * 1_000_000_000 + meta.ctime_nsec(),
        "inode": meta.ino(),
        "device": meta.dev(),
    })
}

fn latest_change(stamp: &Value) -> i64 {
    stamp["mtime_ns"]
        .as_i64()
        .unwrap()
        .max(stamp["ctime_ns"].as_i64().unwrap())
}

#[test]
fn a_settled_hash_is_taken_from_the_cache_and_lock_reads_the_file_again() {
    let env = project();
    let fresh = plan(&env);
    assert!(!env.path(CACHE).exists(), "`plan` writes nothing");
    lock(&env);
    // Recorded as the file is now, but too soon after it was written to be believed.
    assert!(env.read(CACHE).contains("sharegpt-tiny.json"));

    // A cache entry that is settled (hashed well after the file's last
    // change) and holds another sha256 is believed: the keys change.
    let stamp = stamp_of(&env, "sharegpt-tiny.json");
    edit_cache_entry(&env, |entry| {
        assert_eq!(entry["stamp"], stamp);
        entry["sha256"] = Value::from("f".repeat(64));
        entry["hashed_at_ns"] = Value::from(latest_change(&stamp) + 3 * GRANULARITY_NS);
    });
    let believed = plan(&env);
    assert_ne!(believed, fresh, "the settled cache entry was not used");

    // `lock` believes no earlier hash: it writes the file's own sha256 and
    // corrects the cache, so the keys are the fresh ones again.
    lock(&env);
    let lockfile = env.read("lockfiles/tiny.lock");
    assert!(!lockfile.contains(&"f".repeat(64)), "{lockfile}");
    let sha = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(
            env.read("sharegpt-tiny.json").as_bytes(),
        ))
    };
    assert!(lockfile.contains(&sha), "{lockfile}");
    assert!(env.read(CACHE).contains(&sha));
    assert_eq!(plan(&env), fresh);
}

/// Racy git: on a file system whose timestamps are coarser than the time
/// between two writes, a file can change (same size) and keep its stamp.
/// An entry hashed within the timestamp granularity of the file's last
/// change is never believed, so the change is seen.
#[test]
fn a_same_size_change_within_the_timestamp_granularity_is_hashed_again() {
    let env = project();
    let before = plan(&env);
    lock(&env);
    let text = env.read("sharegpt-tiny.json");
    let changed = text.replacen("gamma eta", "gamma eta".to_uppercase().as_str(), 1);
    assert_ne!(changed, text);
    assert_eq!(changed.len(), text.len());
    env.write("sharegpt-tiny.json", &changed);
    // As the coarse file system would leave it: the old entry still
    // matches the file's stamp, and was hashed within the granularity.
    let stamp = stamp_of(&env, "sharegpt-tiny.json");
    edit_cache_entry(&env, |entry| {
        entry["stamp"] = stamp.clone();
        entry["hashed_at_ns"] = Value::from(latest_change(&stamp) + GRANULARITY_NS / 2);
    });
    let after = plan(&env);
    assert_ne!(after, before, "the changed file was not hashed again");
    std::fs::remove_file(env.path(CACHE)).unwrap();
    assert_eq!(
        plan(&env),
        after,
        "not what a command without the cache sees"
    );
}

#[test]
fn a_corrupt_hash_cache_is_ignored_and_rewritten() {
    let none = TestEnv::tiny();
    let fresh = plan(&none);
    // `plan` makes no store, and no cache where there was no store.
    assert!(!none.path("store").exists(), "a store made by `plan`");
    let env = project();
    assert_eq!(plan(&env), fresh);
    for damage in ["{\"perfpipe\": ", "[1, 2]", "\u{0}garbage"] {
        env.write(CACHE, damage);
        assert_eq!(plan(&env), fresh);
        lock(&env);
        let rewritten: Value = serde_json::from_str(&env.read(CACHE)).unwrap();
        assert!(rewritten["files"].is_object(), "{rewritten}");
    }
    // A directory where the cache goes costs a hash, not the command.
    std::fs::remove_file(env.path(CACHE)).unwrap();
    std::fs::create_dir(env.path(CACHE)).unwrap();
    assert_eq!(plan(&env), fresh);
}
