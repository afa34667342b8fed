//! An `s3://` cache on a real S3-compatible server (s3s-fs, which checks
//! every request's Signature Version 4): a push from one store supplies
//! another, byte for byte, with nothing run; a sample no trusted key
//! signed is refused; wrong credentials are refused saying which part is
//! wrong and where it is configured; a key is looked up with one request,
//! whatever else the bucket holds. With no `[credentials."HOST"]`, the
//! access key, session token, endpoint and region come from the `AWS_*`
//! variables; a section wins over them, its own session token included.

use std::process::Output;

use crate::common::s3_server::{self, ACCESS_KEY, CountingProxy, S3Server, SECRET_KEY};
use crate::common::{TestEnv, assert_secret_absent, stderr, stdout, words};

/// The variable the tests' config.toml names for the secret access key
/// (a name that does not say it holds a secret).
const SECRET_VAR: &str = "TEAM_BUCKET_PW";

/// `s3://BUCKET/team/results` at `endpoint`.
fn location(endpoint: &str, bucket: &str) -> String {
    format!("s3://{bucket}/team/results?endpoint={endpoint}")
}

/// `env`'s config.toml: `rest`, then the access key for `endpoint`'s host
/// with its secret read from [`SECRET_VAR`].
fn configure(env: &TestEnv, endpoint: &str, access_key: &str, rest: &str) {
    let host = endpoint.trim_start_matches("http://");
    env.write(
        "config/perfpipe/config.toml",
        &format!(
            "{rest}\n[credentials.\"{host}\"]\nusername = \"{access_key}\"\npassword-env = \"{SECRET_VAR}\"\n"
        ),
    );
}

/// `perfpipe ARGS` online, with `env`'s `config/` as the user's
/// configuration and `secret` in [`SECRET_VAR`]; killed (failing the test)
/// after 3 minutes.
fn online(env: &TestEnv, args: &[&str], secret: &str) -> Output {
    online_with(env, args, &[(SECRET_VAR, secret)])
}

/// Alice's measured store and key, pushed to a new bucket of `server`;
/// the bucket and its cache location.
fn pushed(server: &S3Server) -> (TestEnv, String, String, String) {
    let (alice, public) = crate::cache::measured_with_key();
    let bucket = server.bucket();
    let location = location(&server.endpoint, &bucket);
    configure(&alice, &server.endpoint, ACCESS_KEY, "");
    let push = online(&alice, &crate::cache::push_args(&location), SECRET_KEY);
    assert_eq!(push.status.code(), Some(0), "{}", stderr(&push));
    assert!(
        stderr(&push).contains("pushed 7 samples"),
        "{}",
        stderr(&push)
    );
    (alice, public, bucket, location)
}

/// Bob's project (locked offline), asking `location` (through `endpoint`)
/// and trusting `public`.
fn bob(endpoint: &str, location: &str, public: &str) -> TestEnv {
    let bob = TestEnv::tiny();
    let lock = bob.run(&["lock", "tiny.kdl", "--offline"]);
    assert_eq!(lock.status.code(), Some(0), "{}", stderr(&lock));
    let cache =
        format!("[cache]\nsubstituters = [\"{location}\"]\n[trust]\npublic-keys = [\"{public}\"]");
    configure(&bob, endpoint, ACCESS_KEY, &cache);
    bob
}

/// Every sample's `result.json`, as bytes, in one order.
fn result_files(env: &TestEnv) -> Vec<Vec<u8>> {
    let mut files: Vec<Vec<u8>> = env
        .results()
        .into_iter()
        .map(|(dir, _)| std::fs::read(dir.join("result.json")).unwrap())
        .collect();
    files.sort();
    files
}

#[test]
fn an_s3_bucket_takes_pushes_and_supplies_another_store_byte_for_byte() {
    let Some(server) = s3_server::shared() else {
        return;
    };
    let (alice, public, bucket, location) = pushed(server);
    // The directory cache's tree under the prefix, and nothing else.
    let objects = server.objects(&bucket);
    assert!(
        objects
            .iter()
            .all(|o| o.starts_with("team/results/keys/")
                || o.starts_with("team/results/blobs/sha256/")),
        "{objects:?}"
    );
    assert_eq!(
        objects.iter().filter(|o| o.contains("/keys/")).count(),
        7,
        "{objects:?}"
    );
    let again = online(&alice, &crate::cache::push_args(&location), SECRET_KEY);
    assert!(
        stderr(&again).contains("pushed 0 samples") && stderr(&again).contains("7 already there"),
        "{}",
        stderr(&again)
    );

    let bob = bob(&server.endpoint, &location, &public);
    let plan = online(&bob, &["plan", "tiny.kdl", "--runtime", "sim"], SECRET_KEY);
    assert_eq!(plan.status.code(), Some(0), "{}", stderr(&plan));
    assert!(
        stdout(&plan).contains("substitutable: 7 runs from trusted caches"),
        "{}",
        stdout(&plan)
    );
    assert_eq!(
        stdout(&plan)
            .matches(&format!("1 sample in `{location}`"))
            .count(),
        7,
        "{}",
        stdout(&plan)
    );
    let run = online(&bob, &["run", "tiny.kdl", "--runtime", "sim"], SECRET_KEY);
    let err = stderr(&run);
    assert_eq!(run.status.code(), Some(0), "{err}");
    assert_eq!(
        err.matches(&format!(
            "substituted a sample signed by `alice` from `{location}`"
        ))
        .count(),
        7,
        "{err}"
    );
    assert!(err.contains("ran 0 (failed: 0)"), "nothing ran: {err}");
    assert_eq!(result_files(&bob), result_files(&alice));
    let verify = bob.run(&["store", "verify"]);
    assert_eq!(verify.status.code(), Some(0), "{}", stderr(&verify));
    let files = crate::common::files_under(&bob.path("store"));
    assert_secret_absent(&files, &[plan, run], SECRET_KEY);
}

#[test]
fn a_sample_no_trusted_key_signed_is_refused_from_s3_and_measured() {
    let Some(server) = s3_server::shared() else {
        return;
    };
    let (alice, _public, _bucket, location) = pushed(server);
    let carol = alice.run(&["cache", "keygen", "carol", "--dir", "keys"]);
    let carol = stdout(&carol).trim().to_owned();
    let bob = bob(&server.endpoint, &location, &carol);
    let plan = online(&bob, &["plan", "tiny.kdl", "--runtime", "sim"], SECRET_KEY);
    assert_eq!(plan.status.code(), Some(0), "{}", stderr(&plan));
    assert!(
        !stdout(&plan).contains("substitutable"),
        "{}",
        stdout(&plan)
    );
    assert_eq!(
        stderr(&plan)
            .matches("signed by `alice`, which is not among the trusted keys")
            .count(),
        7,
        "{}",
        stderr(&plan)
    );
    let run = online(&bob, &["run", "tiny.kdl", "--runtime", "sim"], SECRET_KEY);
    let err = stderr(&run);
    assert_eq!(run.status.code(), Some(0), "{err}");
    assert!(!err.contains("substituted a sample"), "{err}");
    assert!(
        err.contains("ran 7"),
        "the refused runs are measured: {err}"
    );
}

#[test]
fn wrong_credentials_are_refused_saying_which_part_and_where_it_is_configured() {
    let Some(server) = s3_server::shared() else {
        return;
    };
    let (alice, _public) = crate::cache::measured_with_key();
    let bucket = server.bucket();
    let location = location(&server.endpoint, &bucket);
    let host = server.endpoint.trim_start_matches("http://");
    let push = |secret: &str| online(&alice, &crate::cache::push_args(&location), secret);

    // A secret that is not the access key's.
    configure(&alice, &server.endpoint, ACCESS_KEY, "");
    let wrong_secret = "not-the-secret-key-0123456789";
    let out = crate::common::exited(push(wrong_secret), 2);
    let err = words(&out);
    // (The message wraps the location at its `?`.)
    assert!(
        err.contains(&format!("cache `s3://{bucket}/team/results?")),
        "{err}"
    );
    assert!(err.contains("refused to get `keys/"), "{err}");
    assert!(err.contains("SignatureDoesNotMatch"), "{err}");
    assert!(err.contains("the secret access key"), "{err}");
    assert!(err.contains(&format!("[credentials.\"{host}\"]")), "{err}");
    assert!(err.contains("`username` (the access key ID)"), "{err}");
    assert_secret_absent(&[], &[out], wrong_secret);

    // An access key the server does not know.
    configure(&alice, &server.endpoint, "no-such-access-key", "");
    let out = crate::common::exited(push(SECRET_KEY), 2);
    let err = words(&out);
    assert!(err.contains("no such access key ID"), "{err}");
    assert_secret_absent(&[], &[out], SECRET_KEY);

    // None at all.
    alice.write("config/perfpipe/config.toml", "");
    let out = crate::common::exited(push(SECRET_KEY), 2);
    let err = words(&out);
    assert!(err.contains("none are configured"), "{err}");
    assert!(err.contains(&format!("[credentials.\"{host}\"]")), "{err}");
}

/// The requests `proxy` passed on since `from`, after asserting that they
/// are 7 GETs of 7 different keys' indexes: one per key of the tiny study.
fn one_get_per_key(proxy: &CountingProxy, from: usize) -> usize {
    let seen = proxy.seen();
    let asked = &seen[from..];
    let mut targets: Vec<&str> = asked.iter().map(|s| s.target.as_str()).collect();
    targets.sort_unstable();
    targets.dedup();
    assert_eq!(asked.len(), 7, "one request per key: {asked:?}");
    assert_eq!(targets.len(), 7, "each key once: {asked:?}");
    assert!(
        asked.iter().all(|s| s.method == "GET"
            && s.target.contains("/team/results/keys/")
            && s.target.ends_with(".json")
            && !s.target.contains('?')),
        "{asked:?}"
    );
    seen.len()
}

#[test]
fn a_key_is_looked_up_with_one_request_whatever_the_bucket_holds() {
    let Some(server) = s3_server::shared() else {
        return;
    };
    let (_alice, public, _bucket, location) = pushed(server);
    let proxy = CountingProxy::start(server);
    let through_proxy = location.replace(&server.endpoint, &proxy.endpoint);
    let bob = bob(&proxy.endpoint, &through_proxy, &public);
    let plan = |extra: &[&str]| {
        let args = [&["plan", "tiny.kdl", "--runtime", "sim"][..], extra].concat();
        let out = online(&bob, &args, SECRET_KEY);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        stdout(&out)
    };
    // Keys the bucket holds: their index names each sample's manifest and
    // signatures, so nothing more is asked to offer them.
    let offered = plan(&[]);
    assert!(
        offered.contains("substitutable: 7 runs from trusted caches"),
        "{offered}"
    );
    let asked = one_get_per_key(&proxy, 0);
    // Capped runs are other keys: the bucket holds none of them, but 7
    // other keys' samples, which are never listed or read.
    let missing = plan(&["--max-prompts", "3"]);
    assert!(
        missing.contains("7 runs: 0 cached, 0 failed, 7 missing"),
        "{missing}"
    );
    one_get_per_key(&proxy, asked);
}

/// `perfpipe ARGS` online, with `env`'s `config/` as the user's
/// configuration and `vars` in the environment (the `AWS_*` ones);
/// killed (failing the test) after 3 minutes.
fn online_with(env: &TestEnv, args: &[&str], vars: &[(&str, &str)]) -> Output {
    let mut command = env.cmd(args);
    command
        .env_remove("PERFPIPE_OFFLINE")
        .env("XDG_CONFIG_HOME", env.path("config"));
    for (name, value) in vars {
        command.env(name, value);
    }
    crate::common::output_within(&mut command, 180)
}

/// A session token: s3s-fs checks the signature over it, not the token.
const SESSION_TOKEN: &str = "perfpipe-test-session-token-FQoGZXIvYXdz/0123+=";

#[test]
fn the_aws_variables_supply_the_key_token_endpoint_and_region_of_a_bare_s3_url() {
    let Some(server) = s3_server::shared() else {
        return;
    };
    let proxy = CountingProxy::start(server);
    let (alice, public) = crate::cache::measured_with_key();
    let bucket = server.bucket();
    // No `?endpoint=` or `?region=`, and no `[credentials]` section.
    let bare = format!("s3://{bucket}/team/results");
    let vars = [
        ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
        ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
        ("AWS_SESSION_TOKEN", SESSION_TOKEN),
        ("AWS_ENDPOINT_URL_S3", proxy.endpoint.as_str()),
        ("AWS_ENDPOINT_URL", "http://127.0.0.1:9/not-this-one"),
        ("AWS_REGION", "eu-west-2"),
        ("AWS_DEFAULT_REGION", "ap-south-1"),
    ];
    let push = online_with(&alice, &crate::cache::push_args(&bare), &vars);
    assert_eq!(push.status.code(), Some(0), "{}", stderr(&push));
    assert!(
        stderr(&push).contains("pushed 7 samples"),
        "{}",
        stderr(&push)
    );
    // Every request carried the token, signed, and the server verified
    // the signature over it.
    let seen = proxy.seen();
    assert!(
        !seen.is_empty()
            && seen.iter().all(|s| s.signed_headers
                == "host;x-amz-content-sha256;x-amz-date;x-amz-security-token"
                && s.security_token.as_deref() == Some(SESSION_TOKEN)),
        "{seen:?}"
    );

    let bob = TestEnv::tiny();
    let lock = bob.run(&["lock", "tiny.kdl", "--offline"]);
    assert_eq!(lock.status.code(), Some(0), "{}", stderr(&lock));
    bob.write(
        "config/perfpipe/config.toml",
        &format!("[cache]\nsubstituters = [\"{bare}\"]\n[trust]\npublic-keys = [\"{public}\"]\n"),
    );
    let run = online_with(&bob, &["run", "tiny.kdl", "--runtime", "sim"], &vars);
    let err = stderr(&run);
    assert_eq!(run.status.code(), Some(0), "{err}");
    // The location names what the environment supplied.
    let resolved = format!("{bare}?endpoint={}&region=eu-west-2", proxy.endpoint);
    assert_eq!(
        err.matches(&format!(
            "substituted a sample signed by `alice` from `{resolved}`"
        ))
        .count(),
        7,
        "{err}"
    );
    assert!(err.contains("ran 0 (failed: 0)"), "nothing ran: {err}");
    assert_eq!(result_files(&bob), result_files(&alice));
    let files = [
        crate::common::files_under(&bob.path("store")),
        crate::common::files_under(&alice.path("store")),
    ]
    .concat();
    for secret in [SECRET_KEY, SESSION_TOKEN] {
        assert_secret_absent(&files, &[push.clone(), run.clone()], secret);
    }
}

#[test]
fn a_credentials_section_wins_over_the_aws_variables_and_a_refusal_names_the_source() {
    let Some(server) = s3_server::shared() else {
        return;
    };
    let (alice, _public) = crate::cache::measured_with_key();
    let bucket = server.bucket();
    let location = location(&server.endpoint, &bucket);
    let host = server.endpoint.trim_start_matches("http://");
    let wrong_secret = "not-the-secret-key-from-env-0123";
    let env_vars = [
        ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
        ("AWS_SECRET_ACCESS_KEY", wrong_secret),
    ];

    // The section's right secret, the environment's wrong one: the section wins.
    configure(&alice, &server.endpoint, ACCESS_KEY, "");
    let vars = [&env_vars[..], &[(SECRET_VAR, SECRET_KEY)]].concat();
    let push = online_with(&alice, &crate::cache::push_args(&location), &vars);
    assert_eq!(push.status.code(), Some(0), "{}", stderr(&push));
    assert!(
        stderr(&push).contains("pushed 7 samples"),
        "{}",
        stderr(&push)
    );

    // No section: the environment's wrong secret, named as such.
    alice.write("config/perfpipe/config.toml", "");
    let out = crate::common::exited(
        online_with(&alice, &crate::cache::push_args(&location), &env_vars),
        2,
    );
    let err = words(&out);
    assert!(err.contains("SignatureDoesNotMatch"), "{err}");
    assert!(
        err.contains("the secret access key (`AWS_SECRET_ACCESS_KEY`) is not this access key's"),
        "{err}"
    );
    assert!(err.contains("the access key from the environment"), "{err}");
    assert!(
        err.contains(&format!(
            "with no `[credentials.\"{host}\"]` in your config.toml"
        )),
        "{err}"
    );
    assert_secret_absent(&[], &[out], wrong_secret);

    // Half an access key in the environment is refused before any request.
    let out = crate::common::exited(
        online_with(
            &alice,
            &crate::cache::push_args(&location),
            &[("AWS_ACCESS_KEY_ID", ACCESS_KEY)],
        ),
        2,
    );
    let err = words(&out);
    assert!(
        err.contains("`AWS_SECRET_ACCESS_KEY` is not set")
            && err.contains("read from the environment"),
        "{err}"
    );
}

/// A section's session token (temporary credentials), distinct from the
/// environment's `AWS_SESSION_TOKEN`.
const SECTION_TOKEN: &str = "perfpipe-section-session-token-IQoJb3JpZ2lu/4567+=";

/// The variable the section names for its session token (a name that does
/// not say it holds a secret).
const TOKEN_VAR: &str = "TEAM_BUCKET_STS";

#[test]
fn a_sections_session_token_reaches_the_server_signed_and_is_never_shown() {
    let Some(server) = s3_server::shared() else {
        return;
    };
    let proxy = CountingProxy::start(server);
    let (alice, _public) = crate::cache::measured_with_key();
    let location = location(&proxy.endpoint, &server.bucket());
    let host = proxy.endpoint.trim_start_matches("http://");
    let section = |token: &str| {
        alice.write(
            "config/perfpipe/config.toml",
            &format!(
                "[credentials.\"{host}\"]\nusername = \"{ACCESS_KEY}\"\npassword-env = \"{SECRET_VAR}\"\n{token}\n"
            ),
        );
    };
    let vars = |secret| {
        [
            (SECRET_VAR, secret),
            (TOKEN_VAR, SECTION_TOKEN),
            // The section's own token wins over the environment's.
            ("AWS_SESSION_TOKEN", SESSION_TOKEN),
        ]
    };
    section(&format!("session-token-env = \"{TOKEN_VAR}\""));
    let push = online_with(
        &alice,
        &crate::cache::push_args(&location),
        &vars(SECRET_KEY),
    );
    assert_eq!(push.status.code(), Some(0), "{}", stderr(&push));
    assert!(
        stderr(&push).contains("pushed 7 samples"),
        "{}",
        stderr(&push)
    );
    // Every request carried the section's token, signed, and the server
    // verified the signature over it.
    let seen = proxy.seen();
    assert!(
        !seen.is_empty()
            && seen.iter().all(|s| s.signed_headers
                == "host;x-amz-content-sha256;x-amz-date;x-amz-security-token"
                && s.security_token.as_deref() == Some(SECTION_TOKEN)),
        "{seen:?}"
    );

    // Read from a file, with a wrong secret: refused, the token not shown.
    alice.write("sts-token", &format!("{SECTION_TOKEN}\n"));
    let file = alice.path("sts-token");
    section(&format!("session-token-file = \"{}\"", file.display()));
    let wrong_secret = "not-the-secret-key-0123456789";
    let refused = crate::common::exited(
        online_with(
            &alice,
            &crate::cache::push_args(&location),
            &vars(wrong_secret),
        ),
        2,
    );
    let err = words(&refused);
    assert!(err.contains("SignatureDoesNotMatch"), "{err}");
    assert!(
        err.contains("`session-token-env` or `session-token-file`"),
        "{err}"
    );
    assert_eq!(
        proxy
            .seen()
            .last()
            .and_then(|s| s.security_token.clone())
            .as_deref(),
        Some(SECTION_TOKEN)
    );

    // Nor in help, whatever the environment holds.
    let helps: Vec<Output> = [&["--help"][..], &["cache", "push", "--help"]]
        .iter()
        .map(|args| online_with(&alice, args, &vars(SECRET_KEY)))
        .collect();
    for help in &helps {
        assert_eq!(help.status.code(), Some(0), "{}", stderr(help));
    }
    let files: Vec<_> = crate::common::files_under(&alice.path("store"));
    let outputs = [&[push, refused][..], &helps].concat();
    for secret in [SECTION_TOKEN, SECRET_KEY, wrong_secret] {
        assert_secret_absent(&files, &outputs, secret);
    }
}

/// Two pushes of the same runs at the same moment, signed with two keys:
/// both read a key's index before either writes it (the proxy holds the
/// first write until the second comes). The write conditional on the
/// version read makes the later push read the index again and add to it,
/// so every index keeps both signatures.
#[test]
fn two_pushes_of_a_key_at_once_both_keep_their_entry() {
    let Some(server) = s3_server::shared() else {
        return;
    };
    let (alice, alice_public) = crate::cache::measured_with_key();
    let carol = alice.run(&["cache", "keygen", "carol", "--dir", "keys"]);
    assert_eq!(carol.status.code(), Some(0), "{}", stderr(&carol));
    let carol_public = stdout(&carol).trim().to_owned();
    let bucket = server.bucket();
    let proxy = CountingProxy::holding_the_first_index_write(server);
    let location = location(&proxy.endpoint, &bucket);
    configure(&alice, &proxy.endpoint, ACCESS_KEY, "");
    let push = |secret: &str| {
        let args = crate::cache::push_args(&location);
        let args = [&args[..7], &["--secret-key", secret]].concat();
        alice
            .cmd(&args)
            .env_remove("PERFPIPE_OFFLINE")
            .env("XDG_CONFIG_HOME", alice.path("config"))
            .env(SECRET_VAR, SECRET_KEY)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let pushes = [push("keys/alice.secret"), push("keys/carol.secret")];
    for pushed in pushes {
        let out = pushed.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let writes = proxy
        .seen()
        .iter()
        .filter(|s| s.method == "PUT" && s.target.contains("/keys/"))
        .count();
    // 7 indexes, each written by both; the later of the held pair again.
    assert!(
        writes > 14,
        "the push that found the index changed writes it again: {writes} writes"
    );
    let indexes: Vec<String> = server
        .objects(&bucket)
        .into_iter()
        .filter(|o| o.starts_with("team/results/keys/") && o.ends_with(".json"))
        .map(|o| server.read(&bucket, &o))
        .collect();
    assert_eq!(indexes.len(), 7);
    for index in &indexes {
        assert!(
            index.contains(&alice_public) && index.contains(&carol_public),
            "both signatures: {index}"
        );
    }
}
