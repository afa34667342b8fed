//! A sample pushed from one store is substituted into another; any change
//! to it on the way is refused with its reason and stores nothing.
#![expect(
    clippy::disallowed_methods,
    reason = "the tests damage a cache as a forger would"
)]

use std::path::Path;

use serde_json::Value;

use super::{Caches, Location, Outcome, Remote, push, sign};
use crate::digest::sha256_hex;
use crate::key::RunKey;
use crate::signing::{SecretKey, TrustedKeys};
use crate::store::Store;
use crate::store::testing::{commit, store};
use crate::tokio_runtime::Io;

const MATERIAL: &str = r#"{"engine":"vllm"}"#;

/// A cache directory holding one sample signed by `alice`, and its key.
fn pushed(alice: &SecretKey) -> (tempfile::TempDir, RunKey, std::path::PathBuf) {
    let (root, from) = store();
    let (key, _) = commit(&from, MATERIAL);
    let cache = root.path().join("cache");
    let remote = Remote::new(Location::Dir(cache.clone()));
    let runs = [(key.clone(), MATERIAL.to_owned())];
    let first = push(&from, &runs, &remote, alice, &Io::new()).unwrap();
    assert_eq!((first.uploaded, first.already), (1, 0));
    let again = push(&from, &runs, &remote, alice, &Io::new()).unwrap();
    assert_eq!(
        (again.uploaded, again.already),
        (0, 1),
        "pushing again uploads nothing"
    );
    (root, key, cache)
}

fn substitute(
    cache: &Path,
    trusted: &[&SecretKey],
    key: &RunKey,
) -> (tempfile::TempDir, Store, Vec<Outcome>) {
    let (root, into) = store();
    let caches = Caches {
        remotes: vec![Remote::new(Location::Dir(cache.to_owned()))],
        trusted: TrustedKeys::new(trusted.iter().map(|k| k.public()).collect()),
        recall: Default::default(),
        io: Io::new(),
    };
    let done = caches.substitute(&into, &[(key, MATERIAL)]).unwrap();
    let outcomes = done
        .samples
        .get(key)
        .into_iter()
        .flatten()
        .map(|(_, o)| o.clone())
        .collect();
    (root, into, outcomes)
}

fn blob_path(cache: &Path, digest: &str) -> std::path::PathBuf {
    cache
        .join("blobs/sha256")
        .join(digest.trim_start_matches("sha256:"))
}

fn index_path(cache: &Path, key: &RunKey) -> std::path::PathBuf {
    cache.join(format!("keys/{key}.json"))
}

fn read_index(cache: &Path, key: &RunKey) -> Value {
    serde_json::from_slice(&fs_err::read(index_path(cache, key)).unwrap()).unwrap()
}

fn write_index(cache: &Path, key: &RunKey, index: &Value) {
    fs_err::write(index_path(cache, key), index.to_string()).unwrap();
}

/// The manifest of the cache's one sample of `key` (as its index embeds
/// it), and its digest.
fn manifest(cache: &Path, key: &RunKey) -> (String, Value) {
    use base64::Engine as _;
    let entry = read_index(cache, key)["manifests"][0].clone();
    let data = base64::engine::general_purpose::STANDARD
        .decode(entry["data"].as_str().unwrap())
        .unwrap();
    let digest = entry["digest"].as_str().unwrap().to_owned();
    assert_eq!(fs_err::read(blob_path(cache, &digest)).unwrap(), data);
    (digest, serde_json::from_slice(&data).unwrap())
}

/// Rewrites the manifest as a forger would (a new blob, the key's index
/// naming it, with the signatures it had).
fn rewrite(cache: &Path, key: &RunKey, change: impl FnOnce(&mut Value)) {
    use base64::Engine as _;
    let (_, mut value) = manifest(cache, key);
    change(&mut value);
    let bytes = serde_json::to_vec(&value).unwrap();
    let digest = format!("sha256:{}", sha256_hex(&bytes));
    fs_err::write(blob_path(cache, &digest), &bytes).unwrap();
    let mut index = read_index(cache, key);
    let entry = &mut index["manifests"][0];
    entry["digest"] = digest.into();
    entry["size"] = bytes.len().into();
    entry["data"] = base64::engine::general_purpose::STANDARD
        .encode(&bytes)
        .into();
    write_index(cache, key, &index);
}

/// Replaces the signatures of the cache's one sample of `key`.
fn resign(cache: &Path, key: &RunKey, signatures: Value) {
    let mut index = read_index(cache, key);
    index["manifests"][0]["annotations"]["dev.perfpipe.signatures"] = signatures.to_string().into();
    write_index(cache, key, &index);
}

/// Adds a blob, as a forger would, and gives its digest.
fn add_blob(cache: &Path, bytes: &[u8]) -> String {
    let digest = format!("sha256:{}", sha256_hex(bytes));
    fs_err::write(blob_path(cache, &digest), bytes).unwrap();
    digest
}

fn layer_digest(cache: &Path, key: &RunKey, title: &str) -> String {
    let (_, value) = manifest(cache, key);
    value["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["annotations"]["org.opencontainers.image.title"] == title)
        .unwrap()["digest"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[track_caller]
fn assert_refused(cache: &Path, trusted: &[&SecretKey], key: &RunKey, why: &str) {
    let (_root, into, outcomes) = substitute(cache, trusted, key);
    match outcomes.as_slice() {
        [Outcome::Refused { why: got, .. }] => assert!(got.contains(why), "{got}"),
        other => panic!("expected a refusal ({why}), got {other:?}"),
    }
    assert!(
        !into.root().join("entries").exists(),
        "a refused sample leaves the store untouched"
    );
}

#[test]
fn a_sound_sample_is_substituted_with_its_signer_and_rechecked_by_store_verify() {
    let alice = SecretKey::generate("alice").unwrap();
    let (_root, key, cache) = pushed(&alice);
    assert!(cache.join("oci-layout").is_file() && cache.join("index.json").is_file());
    let (_r, into, outcomes) = substitute(&cache, &[&alice], &key);
    assert_eq!(
        outcomes,
        [Outcome::Added {
            signer: "alice".into()
        }]
    );
    let samples = into.samples(&key).unwrap();
    assert_eq!(samples.len(), 1);
    assert_eq!(into.signature(&samples[0]).unwrap().signer_name(), "alice");
    assert!(into.verify().unwrap().findings.is_empty());
    // A second substitution finds nothing new: the sample is there.
    let caches = Caches {
        remotes: vec![Remote::new(Location::Dir(cache.clone()))],
        trusted: TrustedKeys::new(vec![alice.public()]),
        recall: Default::default(),
        io: Io::new(),
    };
    let done = caches.substitute(&into, &[(&key, MATERIAL)]).unwrap();
    assert_eq!(done.added(), 0);
    // Damage after substitution is found by `store verify`.
    let log = samples[0].dir.join("logs/engine.log");
    fs_err::write(&log, "edited\n").unwrap();
    let findings = into.verify().unwrap().findings;
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert!(
        findings[0]
            .damage
            .to_string()
            .contains("not the ones signed")
    );
}

#[test]
fn a_changed_result_is_refused() {
    let alice = SecretKey::generate("alice").unwrap();
    let (_root, key, cache) = pushed(&alice);
    // Its bytes changed in place: the blob no longer matches its digest.
    let result = layer_digest(&cache, &key, "result.json");
    let path = blob_path(&cache, &result);
    let edited = fs_err::read_to_string(&path)
        .unwrap()
        .replace("boom", "fine");
    fs_err::write(&path, &edited).unwrap();
    assert_refused(
        &cache,
        &[&alice],
        &key,
        "`result.json` does not match its digest",
    );
    // A new blob with the manifest pointing at it: no longer what was signed.
    let forged = add_blob(&cache, edited.as_bytes());
    rewrite(&cache, &key, |m| {
        m["layers"][0]["digest"] = forged.clone().into();
        m["layers"][0]["size"] = edited.len().into();
    });
    assert_refused(&cache, &[&alice], &key, "not the ones signed");
}

#[test]
fn a_swapped_blob_is_refused() {
    let alice = SecretKey::generate("alice").unwrap();
    let (_root, key, cache) = pushed(&alice);
    let result = layer_digest(&cache, &key, "result.json");
    let log = layer_digest(&cache, &key, "logs/engine.log");
    fs_err::copy(blob_path(&cache, &log), blob_path(&cache, &result)).unwrap();
    assert_refused(&cache, &[&alice], &key, "does not match its digest");
}

#[test]
fn a_wrong_signature_or_an_untrusted_key_is_refused() {
    let alice = SecretKey::generate("alice").unwrap();
    let mallory = SecretKey::generate("alice").unwrap();
    let (_root, key, cache) = pushed(&alice);
    assert_refused(
        &cache,
        &[&SecretKey::generate("bob").unwrap()],
        &key,
        "signed by `alice`, which is not among the trusted keys",
    );
    let statement = manifest(&cache, &key).1["annotations"]["dev.perfpipe.statement"]
        .as_str()
        .unwrap()
        .to_owned();
    resign(
        &cache,
        &key,
        serde_json::json!([{"signer": alice.public().to_string(), "signature": mallory.sign(&statement)}]),
    );
    assert_refused(
        &cache,
        &[&alice],
        &key,
        "does not verify under `alice`'s key",
    );
}

#[test]
fn key_material_not_hashing_to_the_key_is_refused() {
    let alice = SecretKey::generate("alice").unwrap();
    let (_root, key, cache) = pushed(&alice);
    let other = add_blob(&cache, br#"{"engine":"sglang"}"#);
    rewrite(&cache, &key, |m| {
        m["config"]["digest"] = other.clone().into()
    });
    assert_refused(&cache, &[&alice], &key, "hashes to");
    // The bytes changed under the right digest: a blob mismatch.
    let (_root, key, cache) = pushed(&alice);
    let config = format!("sha256:{key}");
    fs_err::write(blob_path(&cache, &config), br#"{"engine":"vLLM"}"#).unwrap();
    assert_refused(
        &cache,
        &[&alice],
        &key,
        "`key material` does not match its digest",
    );
    // More bytes than the manifest declares: not read past the declared size.
    fs_err::write(blob_path(&cache, &config), br#"{"engine":"sglang"}"#).unwrap();
    assert_refused(
        &cache,
        &[&alice],
        &key,
        "is longer than the 17 bytes its manifest declares",
    );
}

fn caches(cache: &Path, trusted: &[&SecretKey]) -> Caches {
    Caches {
        remotes: vec![Remote::new(Location::Dir(cache.to_owned()))],
        trusted: TrustedKeys::new(trusted.iter().map(|k| k.public()).collect()),
        recall: Default::default(),
        io: Io::new(),
    }
}

fn runs(key: &RunKey) -> [(RunKey, String); 1] {
    [(key.clone(), MATERIAL.to_owned())]
}

/// Lists the cache's one manifest of `key` `n` more times in its index, as
/// anyone with write access to a cache can.
fn tag_again(cache: &Path, key: &RunKey, n: usize) {
    let mut index = read_index(cache, key);
    let entry = index["manifests"][0].clone();
    for _ in 0..n {
        index["manifests"]
            .as_array_mut()
            .unwrap()
            .push(entry.clone());
    }
    write_index(cache, key, &index);
}

#[test]
fn one_sample_listed_several_times_in_an_index_is_one_sample() {
    let alice = SecretKey::generate("alice").unwrap();
    let (_root, key, cache) = pushed(&alice);
    tag_again(&cache, &key, 4);
    let (_r, into) = store();
    let caches = caches(&cache, &[&alice]);
    let offered = caches.offers(&into, std::slice::from_ref(&key));
    assert_eq!(offered.offers[&key].samples(), 1, "`plan` counts one");
    let done = caches.substitute(&into, &[(&key, MATERIAL)]).unwrap();
    assert_eq!((done.added(), done.refused()), (1, 0));
    assert_eq!(into.samples(&key).unwrap().len(), 1);
    // Asked again, the store holds that statement: nothing is offered.
    assert!(caches.offers(&into, &[key]).offers.is_empty());
}

#[test]
fn concurrent_substitutions_store_a_sample_once() {
    let alice = SecretKey::generate("alice").unwrap();
    let (_root, key, cache) = pushed(&alice);
    let (_r, into) = store();
    let caches = caches(&cache, &[&alice]);
    // Three processes' worth of substitutions at once, each its own store handle.
    let added: usize = std::thread::scope(|s| {
        let threads: Vec<_> = (0..3)
            .map(|_| {
                s.spawn(|| {
                    let store = Store::new(into.root());
                    caches
                        .substitute(&store, &[(&key, MATERIAL)])
                        .unwrap()
                        .added()
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).sum()
    });
    assert_eq!(added, 1);
    assert_eq!(into.samples(&key).unwrap().len(), 1);
    assert!(into.verify().unwrap().findings.is_empty());
    // The check is the commit's own, under the key's lock.
    let sample = &into.samples(&key).unwrap()[0];
    let files = into.stored_files(&key, sample).unwrap();
    let pending = into.begin_sample().unwrap();
    for log in &files.logs {
        let mut from = crate::regular_file::open(&log.path).unwrap();
        std::io::copy(&mut from, &mut pending.create_log(&log.name).unwrap()).unwrap();
    }
    let signed = into.signature(sample).unwrap();
    assert_eq!(
        into.add_pending_signed(&key, MATERIAL, pending, &files.result, &signed)
            .unwrap(),
        None
    );
}

/// Copies a directory tree (a sample), as a hand or an old perfpipe would.
fn copy_dir(from: &Path, to: &Path) {
    fs_err::create_dir_all(to).unwrap();
    for entry in fs_err::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs_err::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn a_second_copy_of_a_signed_sample_is_damage_and_not_used() {
    let alice = SecretKey::generate("alice").unwrap();
    let (_root, key, cache) = pushed(&alice);
    let (_r, into, _) = substitute(&cache, &[&alice], &key);
    let first = into.samples(&key).unwrap()[0].dir.clone();
    let second = first.with_file_name("0002");
    copy_dir(&first, &second);
    let samples = into.samples(&key).unwrap();
    assert_eq!(samples.len(), 1, "the copy is not a second sample");
    let findings = into.verify().unwrap().findings;
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0].path, second);
    assert_eq!(
        findings[0].damage,
        crate::store::Damage::Duplicate("0001".into())
    );
    // `store gc` sees the same damage, and removes the copy only.
    let garbage = into.garbage(&[key.clone()].into()).unwrap();
    assert_eq!(garbage.len(), 1, "{garbage:?}");
    assert_eq!(garbage[0].path, second);
    assert_eq!(
        into.remove(&garbage[0]).unwrap(),
        crate::store::Removal::Removed
    );
    assert!(!second.exists() && first.is_dir());
    assert!(into.verify().unwrap().findings.is_empty());
}

/// A cache holding one sample with two logs of different bytes.
fn pushed_with_two_logs(alice: &SecretKey) -> (tempfile::TempDir, RunKey, std::path::PathBuf) {
    let (root, from) = store();
    let key = RunKey::of_canonical(MATERIAL);
    let lock = from.lock(&key).unwrap();
    let pending = from.begin_sample().unwrap();
    pending.write_log("engine.log", "engine\n").unwrap();
    pending.write_log("harness.log", "harness\n").unwrap();
    let result = crate::store::testing::result(&key);
    pending
        .commit(&from, &key, MATERIAL, &result, &lock)
        .unwrap();
    let cache = root.path().join("cache");
    let remote = Remote::new(Location::Dir(cache.clone()));
    push(&from, &runs(&key), &remote, alice, &Io::new()).unwrap();
    (root, key, cache)
}

fn layer_index(manifest: &Value, title: &str) -> usize {
    manifest["layers"]
        .as_array()
        .unwrap()
        .iter()
        .position(|l| l["annotations"]["org.opencontainers.image.title"] == title)
        .unwrap()
}

fn retitle(cache: &Path, key: &RunKey, title: &str, to: &str) {
    let index = layer_index(&manifest(cache, key).1, title);
    rewrite(cache, key, |m| {
        m["layers"][index]["annotations"]["org.opencontainers.image.title"] = to.into();
    });
}

#[test]
fn swapped_logs_are_refused_in_a_cache_and_not_used_in_a_store() {
    let alice = SecretKey::generate("alice").unwrap();
    let (_root, key, cache) = pushed_with_two_logs(&alice);
    // Substituted as signed, then swapped in the store: not used.
    let (_r, into, outcomes) = substitute(&cache, &[&alice], &key);
    assert!(matches!(outcomes.as_slice(), [Outcome::Added { .. }]));
    let logs = into.samples(&key).unwrap()[0].dir.join("logs");
    fs_err::rename(logs.join("engine.log"), logs.join("x")).unwrap();
    fs_err::rename(logs.join("harness.log"), logs.join("engine.log")).unwrap();
    fs_err::rename(logs.join("x"), logs.join("harness.log")).unwrap();
    assert!(into.samples(&key).unwrap().is_empty(), "damage is not used");
    let findings = into.verify().unwrap().findings;
    assert!(
        findings[0]
            .damage
            .to_string()
            .contains("not the ones signed"),
        "{findings:?}"
    );
    // Swapped titles in the cache's manifest: refused before any blob.
    retitle(&cache, &key, "logs/engine.log", "logs/x");
    retitle(&cache, &key, "logs/harness.log", "logs/engine.log");
    retitle(&cache, &key, "logs/x", "logs/harness.log");
    assert_refused(&cache, &[&alice], &key, "not the ones signed");
}

#[test]
fn a_repeated_file_name_is_refused() {
    let alice = SecretKey::generate("alice").unwrap();
    let (_root, key, cache) = pushed_with_two_logs(&alice);
    retitle(&cache, &key, "logs/harness.log", "logs/engine.log");
    assert_refused(
        &cache,
        &[&alice],
        &key,
        "names the file `logs/engine.log` twice",
    );
}

#[test]
fn a_bad_log_name_is_refused_not_fatal() {
    let alice = SecretKey::generate("alice").unwrap();
    for bad in [
        format!("logs/{}", "a".repeat(300)),
        "logs/a\0b".into(),
        "logs/../../x".into(),
        "other".into(),
    ] {
        let (_root, key, cache) = pushed_with_two_logs(&alice);
        retitle(&cache, &key, "logs/engine.log", &bad);
        assert_refused(&cache, &[&alice], &key, "it has a file named");
    }
}

#[test]
fn an_older_statement_format_is_refused_with_what_to_do() {
    let alice = SecretKey::generate("alice").unwrap();
    let (_root, key, cache) = pushed(&alice);
    let statement = format!("perfpipe-sample-1;{key};r;l;p");
    let signature = alice.sign(&statement);
    rewrite(&cache, &key, |m| {
        m["annotations"]["dev.perfpipe.statement"] = statement.clone().into();
    });
    resign(
        &cache,
        &key,
        serde_json::json!([{"signer": alice.public().to_string(), "signature": signature}]),
    );
    assert_refused(&cache, &[&alice], &key, "`perfpipe-sample-1`");
}

#[test]
fn only_what_run_takes_is_offered() {
    let alice = SecretKey::generate("alice").unwrap();
    let bob = SecretKey::generate("bob").unwrap();
    let (_root, key, cache) = pushed(&alice);
    let (_r, into) = store();
    let offered = caches(&cache, &[&bob]).offers(&into, std::slice::from_ref(&key));
    assert!(offered.offers.is_empty(), "an untrusted signer's sample");
    match offered.refused[&key].as_slice() {
        [(_, Outcome::Refused { why, .. })] => {
            assert!(why.contains("not among the trusted keys"), "{why}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_second_key_signs_what_a_trusted_one_signed_and_alone_is_enough() {
    let alice = SecretKey::generate("alice").unwrap();
    let bob = SecretKey::generate("bob").unwrap();
    let (_root, key, cache) = pushed(&alice);
    let (_, before) = manifest(&cache, &key);
    let remote = Remote::new(Location::Dir(cache.clone()));
    let trusting = |k: &SecretKey| TrustedKeys::new(vec![k.public()]);
    let keys = [key.clone()];
    // Bob vouches only for what a key he trusts signed.
    let unvouched = sign(&keys, &remote, &bob, &trusting(&bob), &Io::new()).unwrap();
    assert_eq!(unvouched.signed, 0);
    assert!(
        unvouched.refused[0]
            .1
            .contains("`alice`, which is not among the trusted keys"),
        "{unvouched:?}"
    );
    let vouched = sign(&keys, &remote, &bob, &trusting(&alice), &Io::new()).unwrap();
    assert_eq!((vouched.signed, vouched.already), (1, 0));
    let again = sign(&keys, &remote, &bob, &trusting(&alice), &Io::new()).unwrap();
    assert_eq!((again.signed, again.already), (0, 1));
    // The content is as it was: one sample, the same manifest.
    assert_eq!(
        read_index(&cache, &key)["manifests"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(manifest(&cache, &key).1, before);
    // A consumer trusting only bob takes it, as bob's.
    let (_r, into, outcomes) = substitute(&cache, &[&bob], &key);
    assert_eq!(
        outcomes,
        [Outcome::Added {
            signer: "bob".into()
        }]
    );
    assert!(into.verify().unwrap().findings.is_empty());
    // Neither key trusted: refused, naming both signers.
    let carol = SecretKey::generate("carol").unwrap();
    assert_refused(
        &cache,
        &[&carol],
        &key,
        "signed by `alice` and `bob`, none of them among the trusted keys",
    );
}

#[test]
fn a_failure_its_manifest_calls_a_success_is_refused() {
    let alice = SecretKey::generate("alice").unwrap();
    let (_root, key, cache) = pushed(&alice);
    assert_eq!(
        manifest(&cache, &key).1["annotations"]["dev.perfpipe.outcome"],
        "failure"
    );
    // `plan` would count it towards `--samples`; `run` refuses it.
    rewrite(&cache, &key, |m| {
        m["annotations"]["dev.perfpipe.outcome"] = "success".into();
    });
    assert_refused(
        &cache,
        &[&alice],
        &key,
        "its manifest says it is a success, and it is a failure",
    );
}
