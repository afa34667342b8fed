//! A registry that misbehaves: it names another origin for a tag page or an
//! upload, echoes the login it was sent, lists tags without end, or serves
//! more than a manifest declares. Credentials stay with their origin, no
//! secret is printed, and nothing is read without bound. Nor is a secret key
//! file or a line of a configuration file ever quoted.

use std::process::Output;

use crate::common::fake_registry::{FakeRegistry, Misbehaviour};
use crate::common::{TestEnv, assert_secret_absent, stderr, stdout, words};

const PASSWORD: &str = "S3cretPassw0rdFromEnv";

/// A trusted key that signed nothing: for caches that are only asked.
const NOBODY: &str = "nobody:11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=";

/// `perfpipe ARGS` online, with `env`'s `config/` as the user's
/// configuration and the registry password in `REG_PW` (a name that does
/// not say it holds a secret); killed (failing the test) after 3 minutes.
fn online(env: &TestEnv, args: &[&str]) -> Output {
    let mut command = env.cmd(args);
    command
        .env_remove("PERFPIPE_OFFLINE")
        .env("XDG_CONFIG_HOME", env.path("config"))
        .env("REG_PW", PASSWORD);
    crate::common::output_within(&mut command, 180)
}

/// Alice's login for `registry`, given as `source` (`password-env = …` or
/// `password-file = …`), and `rest` of the config.toml.
fn configure(env: &TestEnv, registry: &FakeRegistry, source: &str, rest: &str) {
    env.write(
        "config/perfpipe/config.toml",
        &format!(
            "{rest}\n[credentials.\"{}\"]\nusername = \"alice\"\n{source}\n",
            registry.host()
        ),
    );
}

/// A project asking `registry` for the tiny study's runs, trusting `public`.
fn substituting(registry: &FakeRegistry, public: &str) -> TestEnv {
    let bob = TestEnv::tiny();
    let lock = bob.run(&["lock", "tiny.kdl", "--offline"]);
    assert_eq!(lock.status.code(), Some(0), "{}", stderr(&lock));
    let cache = format!(
        "[cache]\nsubstituters = [\"{}\"]\n[trust]\npublic-keys = [\"{public}\"]",
        registry.location
    );
    configure(&bob, registry, "password-env = \"REG_PW\"", &cache);
    bob
}

/// The `Authorization` headers `registry` received.
fn authorizations(registry: &FakeRegistry) -> Vec<Option<String>> {
    registry
        .seen()
        .into_iter()
        .map(|s| s.authorization)
        .collect()
}

#[test]
fn a_key_is_looked_up_with_one_request_whatever_else_the_registry_holds() {
    let (_alice, dir, public) = pushed();
    let registry = FakeRegistry::start(
        Some(dir),
        Misbehaviour {
            unrelated_tags: 20_000,
            ..Default::default()
        },
    );
    let bob = substituting(&registry, &public);
    let plan = online(&bob, &["plan", "tiny.kdl", "--runtime", "sim"]);
    assert_eq!(plan.status.code(), Some(0), "{}", stderr(&plan));
    assert!(
        stdout(&plan).contains("substitutable: 7 runs from trusted caches"),
        "{}{}",
        stdout(&plan),
        stderr(&plan)
    );
    let asked: Vec<String> = registry.seen().into_iter().map(|s| s.path).collect();
    assert_eq!(asked.len(), 7, "one request per run: {asked:?}");
    for path in &asked {
        let reference = path.rsplit('/').next().unwrap();
        assert!(
            path.starts_with("/v2/team/cache/manifests/")
                && reference.len() == 64
                && reference.bytes().all(|b| b.is_ascii_hexdigit()),
            "the key's index by its tag, never a listing: {path}"
        );
    }
    assert!(
        authorizations(&registry).iter().all(Option::is_some),
        "its own origin is shown the login"
    );
    // `run` asks no index again for the samples it takes: blobs only.
    let run = online(&bob, &["run", "tiny.kdl", "--runtime", "sim"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let seen = registry.seen();
    let indexes = seen
        .iter()
        .filter(|s| s.path.starts_with("/v2/team/cache/manifests/"))
        .count();
    assert_eq!(indexes, 14, "7 for plan, 7 for run");
    assert!(seen.iter().all(|s| !s.path.contains("tags/list")));
}

#[test]
fn an_upload_sent_to_another_origin_carries_no_credentials() {
    let (alice, _) = crate::cache::measured_with_key();
    let elsewhere = FakeRegistry::start(None, Misbehaviour::default());
    let registry = FakeRegistry::start(
        None,
        Misbehaviour {
            upload_at: Some(format!("{}/v2/team/cache/blobs/uploads/u1", elsewhere.base)),
            ..Default::default()
        },
    );
    configure(&alice, &registry, "password-env = \"REG_PW\"", "");
    let out = online(&alice, &crate::cache::push_args(&registry.location));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("pushed 7 samples"),
        "{}",
        stderr(&out)
    );
    let uploads = elsewhere.seen();
    assert!(
        uploads.iter().any(|s| s.method == "PUT"),
        "the blobs went to the upload's Location: {uploads:?}"
    );
    assert!(
        uploads.iter().all(|s| s.authorization.is_none()),
        "another origin got credentials: {uploads:?}"
    );
    assert!(authorizations(&registry).iter().all(Option::is_some));
}

#[test]
fn a_login_the_registry_echoes_is_never_printed() {
    let registry = FakeRegistry::start(
        None,
        Misbehaviour {
            echo_login: true,
            ..Default::default()
        },
    );
    let bob = substituting(&registry, NOBODY);
    let header = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        format!("alice:{PASSWORD}"),
    );
    let plan = ["plan", "tiny.kdl", "--runtime", "sim"];
    let from_env = crate::common::exited(online(&bob, &plan), 0);
    assert!(
        words(&from_env).contains("login failed for alice:[redacted"),
        "{}",
        stderr(&from_env)
    );
    // The same password from a file.
    let file = bob.path("registry-password");
    std::fs::write(&file, format!("{PASSWORD}\n")).unwrap();
    configure(
        &bob,
        &registry,
        &format!("password-file = \"{}\"", file.display()),
        &format!(
            "[cache]\nsubstituters = [\"{}\"]\n[trust]\npublic-keys = [\"{NOBODY}\"]",
            registry.location
        ),
    );
    // `REG_PW` is still set, but no longer named by the configuration.
    let from_file = crate::common::exited(online(&bob, &plan), 0);
    assert!(
        words(&from_file).contains("login failed for alice:[redacted"),
        "{}",
        stderr(&from_file)
    );
    let outputs = [from_env, from_file];
    let files = crate::common::files_under(&bob.path("store"));
    assert_secret_absent(&files, &outputs, PASSWORD);
    assert_secret_absent(&files, &outputs, &header);
}

/// Alice's pushed directory cache and her public key.
fn pushed() -> (TestEnv, std::path::PathBuf, String) {
    let (alice, public) = crate::cache::measured_with_key();
    let dir = alice.path("team-cache");
    crate::cache::push(&alice, dir.to_str().unwrap());
    (alice, dir, public)
}

#[test]
fn a_blob_longer_than_its_manifest_declares_is_not_read_past_it() {
    let (_alice, dir, public) = pushed();
    let registry = FakeRegistry::start(
        Some(dir),
        Misbehaviour {
            endless_blobs: true,
            ..Default::default()
        },
    );
    let bob = substituting(&registry, &public);
    let run = online(&bob, &["run", "tiny.kdl", "--runtime", "sim"]);
    let err = words(&run);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert_eq!(
        err.matches("bytes its manifest declares; nothing of it was stored")
            .count(),
        7,
        "{}",
        stderr(&run)
    );
    assert!(err.contains("ran 7"), "{err}");
}

#[test]
fn a_sample_declaring_too_many_bytes_is_refused_before_any_blob_is_fetched() {
    let (_alice, dir, public) = pushed();
    let registry = FakeRegistry::start(
        Some(dir),
        Misbehaviour {
            declared_size: Some(1_500_000_000),
            ..Default::default()
        },
    );
    let bob = substituting(&registry, &public);
    let run = online(&bob, &["run", "tiny.kdl", "--runtime", "sim"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert_eq!(
        words(&run)
            .matches("bytes, more than the 268435456 perfpipe fetches for a sample")
            .count(),
        7,
        "{}",
        stderr(&run)
    );
    let blobs: Vec<_> = registry
        .seen()
        .into_iter()
        .filter(|s| s.path.contains("/blobs/"))
        .collect();
    assert!(blobs.is_empty(), "{blobs:?}");
}

#[test]
fn a_wrong_or_readable_secret_key_file_is_refused_without_showing_it() {
    let (alice, _) = crate::cache::measured_with_key();
    let to = alice.path("team-cache");
    let to = to.to_str().unwrap();
    let wrong = alice.path("keys/registry-password");
    std::fs::write(&wrong, "hunter2-registry-password:xyz\n").unwrap();
    let private = |path: &std::path::Path, mode| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    private(&wrong, 0o600);
    let push = |key: &str| alice.run(&["cache", "push", "--all", "--to", to, "--secret-key", key]);
    let out = push("keys/registry-password");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        words(&out).contains("keys/registry-password` does not hold a secret key"),
        "{}",
        stderr(&out)
    );
    assert_secret_absent(&[], &[out], "hunter2");

    private(&alice.path("keys/alice.secret"), 0o644);
    let out = push("keys/alice.secret");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = words(&out);
    assert!(err.contains("may be read by others (mode 644)"), "{err}");
    assert!(err.contains("`chmod 600 keys/"), "{err}");
    private(&alice.path("keys/alice.secret"), 0o600);
    assert_eq!(push("keys/alice.secret").status.code(), Some(0));
}

#[test]
fn a_project_file_error_names_the_key_and_line_but_quotes_no_value() {
    let env = TestEnv::tiny();
    env.write(
        "perfpipe.toml",
        "store = \"store\"\nregistry_password = \"hunter2-pw-in-toml\"\nruntime = \"sim\"\n",
    );
    let out = env.run(&["plan", "tiny.kdl"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = words(&out);
    assert!(
        err.contains("perfpipe.toml:2: unknown field `registry_password`"),
        "{err}"
    );
    assert_secret_absent(&[], &[out], "hunter2");
}

#[test]
fn a_token_answer_longer_than_a_token_is_not_read_past_its_limit() {
    let registry = FakeRegistry::start(
        None,
        Misbehaviour {
            huge_token: true,
            ..Default::default()
        },
    );
    let bob = substituting(&registry, NOBODY);
    let plan = online(&bob, &["plan", "tiny.kdl", "--runtime", "sim"]);
    let err = words(&plan);
    assert!(
        err.contains(
            "the token endpoint's answer is longer than the 1048576 bytes perfpipe reads of a token"
        ),
        "{err}"
    );
    assert!(
        authorizations(&registry)
            .iter()
            .flatten()
            .all(|a| !a.starts_with("Bearer ")),
        "no token was taken from the answer"
    );
    assert_eq!(plan.status.code(), Some(0), "{err}");
}
