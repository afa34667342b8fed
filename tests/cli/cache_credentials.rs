//! Per-cache credentials from `[credentials."HOST"]` of the user's
//! config.toml: a registry with htpasswd logins and a web cache wanting a
//! bearer token take them, and say where they go when they are missing.

use std::process::Output;

use crate::common::web_cache::WebCache;
use crate::common::{TestEnv, stderr, stdout, words};

/// `perfpipe ARGS` online, with `env`'s `config/` as the user's configuration.
fn online(env: &TestEnv, args: &[&str], vars: &[(&str, &str)]) -> Output {
    env.cmd(args)
        .env_remove("PERFPIPE_OFFLINE")
        .env("XDG_CONFIG_HOME", env.path("config"))
        .envs(vars.iter().copied())
        .output()
        .unwrap()
}

fn push(alice: &TestEnv, location: &str, vars: &[(&str, &str)]) -> Output {
    online(alice, &crate::cache::push_args(location), vars)
}

/// Bob's project, trusting `public` and asking `location`; `credentials`
/// is the rest of his config.toml.
fn bob_with(location: &str, public: &str, credentials: &str) -> TestEnv {
    let bob = TestEnv::tiny();
    let lock = bob.run(&["lock", "tiny.kdl", "--offline"]);
    assert_eq!(lock.status.code(), Some(0), "{}", stderr(&lock));
    bob.write(
        "config/perfpipe/config.toml",
        &format!(
            "[cache]\nsubstituters = [\"{location}\"]\n[trust]\npublic-keys = [\"{public}\"]\n{credentials}"
        ),
    );
    bob
}

fn substitutable(out: &Output) -> usize {
    assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    stdout(out)
        .lines()
        .filter(|l| l.contains(" substitutable "))
        .count()
}

#[test]
fn a_registry_with_logins_takes_pushes_and_supplies_samples_with_credentials_only() {
    let (alice, public) = crate::cache::measured_with_key();
    let login = std::process::Command::new("htpasswd")
        .args(["-Bbn", "alice", "s3cret-pw"])
        .output()
        .expect("htpasswd (apache2-utils, scripts/test-deps.sh)");
    std::fs::write(alice.path("htpasswd"), &login.stdout).unwrap();
    let auth = format!(
        "auth:\n  htpasswd:\n    realm: perfpipe-test\n    path: {}\n",
        alice.path("htpasswd").display()
    );
    let (_registry, location) = crate::cache::registry(&alice, &auth);
    let host = location["oci://".len()..]
        .split('/')
        .next()
        .unwrap()
        .to_owned();

    // Without credentials: refused, naming the cache and where they go.
    let out = push(&alice, &location, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = words(&out);
    assert!(
        err.contains(&format!("cache `{location}` refused")),
        "{err}"
    );
    assert!(err.contains(&format!("[credentials.\"{host}\"]")), "{err}");

    alice.write(
        "config/perfpipe/config.toml",
        &format!(
            "[credentials.\"{host}\"]\nusername = \"alice\"\npassword-env = \"TEAM_REGISTRY_PASSWORD\"\n"
        ),
    );
    let wrong = push(
        &alice,
        &location,
        &[("TEAM_REGISTRY_PASSWORD", "not-the-pw")],
    );
    assert_eq!(wrong.status.code(), Some(2), "{}", stderr(&wrong));
    assert!(
        words(&wrong).contains("did not accept the credentials"),
        "{}",
        stderr(&wrong)
    );
    let unset = push(&alice, &location, &[]);
    assert_eq!(unset.status.code(), Some(2), "{}", stderr(&unset));
    assert!(
        words(&unset).contains("`TEAM_REGISTRY_PASSWORD` is not set"),
        "{}",
        stderr(&unset)
    );
    let pushed = push(
        &alice,
        &location,
        &[("TEAM_REGISTRY_PASSWORD", "s3cret-pw")],
    );
    assert_eq!(pushed.status.code(), Some(0), "{}", stderr(&pushed));
    assert!(
        stderr(&pushed).contains("pushed 7 samples"),
        "{}",
        stderr(&pushed)
    );

    // Bob reads with his password file; without credentials he is told where they go.
    let pw = alice.path("pw");
    std::fs::write(&pw, "s3cret-pw\n").unwrap();
    let bob = bob_with(
        &location,
        &public,
        &format!(
            "[credentials.\"{host}\"]\nusername = \"alice\"\npassword-file = \"{}\"\n",
            pw.display()
        ),
    );
    let plan = ["plan", "tiny.kdl", "--runtime", "sim"];
    assert_eq!(substitutable(&online(&bob, &plan, &[])), 7);
    let run = online(&bob, &["run", "tiny.kdl", "--runtime", "sim"], &[]);
    let err = stderr(&run);
    assert_eq!(
        err.matches("substituted a sample signed by `alice`")
            .count(),
        7,
        "{err}"
    );
    let stranger = bob_with(&location, &public, "");
    let out = online(&stranger, &plan, &[]);
    assert_eq!(substitutable(&out), 0);
    assert!(
        words(&out).contains(&format!(
            "wants credentials, which go under `[credentials.\"{host}\"]`"
        )),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_web_cache_wanting_a_token_is_shown_the_token_file() {
    let (alice, public) = crate::cache::measured_with_key();
    crate::cache::push(&alice, alice.path("site").to_str().unwrap());
    let cache = WebCache::start(alice.path("site"), Some("Bearer tok-0123456789".into()));
    let host = cache.url.trim_start_matches("http://").to_owned();
    let token = alice.path("token");
    std::fs::write(&token, "tok-0123456789\n").unwrap();
    let bob = bob_with(
        &cache.url,
        &public,
        &format!(
            "[credentials.\"{host}\"]\ntoken-file = \"{}\"\n",
            token.display()
        ),
    );
    let plan = ["plan", "tiny.kdl", "--runtime", "sim"];
    assert_eq!(substitutable(&online(&bob, &plan, &[])), 7);
    std::fs::write(&token, "tok-wrong-one\n").unwrap();
    let out = online(&bob, &plan, &[]);
    assert_eq!(substitutable(&out), 0);
    assert!(
        words(&out).contains("did not accept the credentials"),
        "{}",
        stderr(&out)
    );
}
