//! The project root and `perfpipe.toml`: perfpipe works from any directory
//! of a project, and no setting enters a key.

use crate::common::{TestEnv, stderr, stdout, words};

/// The tiny study as a project: `experiments/tiny.kdl`, its dataset at the root.
fn project() -> TestEnv {
    let env = TestEnv::tiny();
    std::fs::create_dir_all(env.path("experiments")).unwrap();
    std::fs::rename(env.path("tiny.kdl"), env.path("experiments/tiny.kdl")).unwrap();
    env
}

#[test]
fn a_subdirectory_works_at_the_root_with_paths_relative_to_itself() {
    let env = project();
    let run = env.run(&["run", "experiments/tiny.kdl", "--runtime", "sim"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let at_root = env.run(&["plan", "experiments/tiny.kdl", "--runtime", "sim"]);

    std::fs::create_dir_all(env.path("experiments/notes")).unwrap();
    for (dir, experiment) in [
        ("experiments", "tiny.kdl"),
        ("experiments/notes", "../tiny.kdl"),
    ] {
        let plan = env
            .cmd(&["plan", experiment, "--runtime", "sim"])
            .current_dir(env.path(dir))
            .output()
            .unwrap();
        assert_eq!(plan.status.code(), Some(0), "{dir}: {}", stderr(&plan));
        assert!(
            stdout(&plan).contains("7 runs: 6 cached, 1 failed, 0 missing"),
            "{dir}: {}",
            stdout(&plan)
        );
        assert!(
            stdout(&plan).contains("lockfile `lockfiles/tiny.lock`"),
            "{}",
            stdout(&plan)
        );
        // The same runs and keys as at the root; only the path differs.
        assert_eq!(
            stdout(&plan).lines().skip(1).collect::<Vec<_>>(),
            stdout(&at_root).lines().skip(1).collect::<Vec<_>>()
        );
    }
    assert!(!env.path("experiments/store").exists());
    assert!(!env.path("experiments/lockfiles").exists());
}

#[test]
fn perfpipe_toml_sets_store_and_runtime_below_the_environment_and_enters_no_key() {
    let env = project();
    let explicit = [
        "plan",
        "experiments/tiny.kdl",
        "--runtime",
        "sim",
        "--store",
        "results",
    ];
    let run = env.run(&[
        "run",
        "experiments/tiny.kdl",
        "--runtime",
        "sim",
        "--store",
        "results",
    ]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let without = env.run(&explicit);

    env.write(
        "perfpipe.toml",
        "# shared by the project\nstore = \"results\"\nruntime = \"sim\"\n",
    );
    let with = env.run(&["plan", "experiments/tiny.kdl"]);
    assert_eq!(with.status.code(), Some(0), "{}", stderr(&with));
    assert_eq!(
        stdout(&with),
        stdout(&without),
        "the same runs, keys and store"
    );
    assert!(stdout(&with).contains("0 missing"), "{}", stdout(&with));
    assert_eq!(
        env.run(&explicit).stdout,
        without.stdout,
        "the file enters no key"
    );

    // The environment, then the command line, rank above the file.
    let from_env = env
        .cmd(&["plan", "experiments/tiny.kdl"])
        .env("PERFPIPE_STORE", "elsewhere")
        .env("PERFPIPE_RUNTIME", "local")
        .output()
        .unwrap();
    assert!(
        stdout(&from_env).starts_with("experiment `tiny` · runtime `local` · store `elsewhere`"),
        "{}",
        stdout(&from_env)
    );
    let from_args = env
        .cmd(&[
            "plan",
            "experiments/tiny.kdl",
            "--store",
            "mine",
            "--runtime",
            "docker",
        ])
        .env("PERFPIPE_STORE", "elsewhere")
        .output()
        .unwrap();
    assert!(
        stdout(&from_args).starts_with("experiment `tiny` · runtime `docker` · store `mine`"),
        "{}",
        stdout(&from_args)
    );
}

#[test]
fn an_unknown_key_is_an_error_naming_the_file_and_line() {
    let env = project();
    env.write("perfpipe.toml", "store = \"results\"\nstroe = \"typo\"\n");
    let out = env
        .cmd(&["plan", "tiny.kdl", "--runtime", "sim"])
        .current_dir(env.path("experiments"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let toml = env.path("perfpipe.toml");
    assert!(
        words(&out).contains(&format!("{}:2: unknown field `stroe`", toml.display())),
        "{}",
        stderr(&out)
    );

    std::fs::remove_file(&toml).unwrap();
    env.write(
        "config/perfpipe/config.toml",
        "[credentials.\"r.example\"]\nhf_token = \"x\"\n",
    );
    let out = env
        .cmd(&["plan", "experiments/tiny.kdl", "--runtime", "sim"])
        .env("XDG_CONFIG_HOME", env.path("config"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let user = env.path("config/perfpipe/config.toml");
    assert!(
        words(&out).contains(&format!("{}:2: unknown field `hf_token`", user.display())),
        "{}",
        stderr(&out)
    );
}
