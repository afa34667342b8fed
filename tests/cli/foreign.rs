//! perfpipe touches only what it made: foreign files in and around its
//! store survive every command, a directory that is not a store is refused,
//! a link out of the store is never followed, commands that only read write
//! nothing, and launch material is checked as an experiment is.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::{TestEnv, render, stderr, stdout, words};

const SIM: &[&str] = &["--runtime", "sim", "--max-prompts", "3"];

fn with<'a>(args: &[&'a str], rest: &[&'a str]) -> Vec<&'a str> {
    let mut out = args.to_vec();
    out.extend_from_slice(rest);
    out
}

/// Every path under `dir` (links not followed) with what it is: a file's
/// bytes and modification time, a link's target, or `dir`.
fn snapshot(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let Ok(children) = std::fs::read_dir(dir) else {
        return out;
    };
    for child in children {
        let path = child.unwrap().path();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let what = if meta.is_symlink() {
            format!("link {:?}", std::fs::read_link(&path).unwrap())
        } else if meta.is_dir() {
            out.extend(snapshot(&path));
            "dir".to_owned()
        } else {
            format!(
                "{:?} {:?}",
                std::fs::read(&path).unwrap(),
                meta.modified().unwrap()
            )
        };
        out.push((path, what));
    }
    out.sort();
    out
}

fn ran(env: &TestEnv, args: &[&str]) -> Output {
    let out = env.run(args);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", render(&out));
    out
}

fn mkfifo(path: &Path) {
    let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
}

#[test]
fn foreign_files_under_store_tmp_survive_run_and_gc() {
    let env = TestEnv::tiny();
    env.write("store/tmp/mydata/sub/thesis.tex", "chapter 1");
    env.write("store/tmp/notes.txt", "mine");
    env.write(
        "store/tmp/proc-12-notmine/work.txt",
        "no lock: not perfpipe's",
    );
    // What a killed perfpipe leaves: its lock file in its own name.
    env.write("store/tmp/proc-4242-dead/owner.lock", "");
    env.write(
        "store/tmp/proc-4242-dead/sample-x/logs/engine.log",
        "loading",
    );
    let run = ran(&env, &with(&["run", "tiny.kdl"], SIM));
    assert!(
        words(&run).contains("removed 1 temp dir left in `store/tmp` by killed runs"),
        "{}",
        render(&run)
    );
    assert!(!env.path("store/tmp/proc-4242-dead").exists());
    env.write("store/tmp/proc-4243-dead/owner.lock", "");
    let verify = ran(&env, &["store", "verify"]);
    assert!(!stdout(&verify).contains("mydata"), "{}", render(&verify));
    assert!(!stdout(&verify).contains("notes"), "{}", render(&verify));
    assert!(
        stdout(&verify).contains("proc-4243-dead"),
        "{}",
        render(&verify)
    );
    ran(&env, &["store", "gc", "--all", "tiny.kdl"]);
    assert!(!env.path("store/tmp/proc-4243-dead").exists());
    assert_eq!(env.read("store/tmp/mydata/sub/thesis.tex"), "chapter 1");
    assert_eq!(env.read("store/tmp/notes.txt"), "mine");
    assert!(env.path("store/tmp/proc-12-notmine/work.txt").exists());
    assert!(env.path("store").join(perfpipe::store::MARKER).is_file());
}

#[test]
fn a_directory_that_is_not_a_store_is_refused_by_every_command() {
    let env = TestEnv::tiny();
    env.write("home/thesis.tex", "chapter 1");
    env.write("home/tmp/scratch/data.bin", "data");
    let before = snapshot(&env.path("home"));
    let store = ["--store", "home"];
    for args in [
        with(&with(&["run", "tiny.kdl"], SIM), &store),
        with(&with(&["plan", "tiny.kdl"], SIM), &store),
        with(&["store", "gc", "tiny.kdl"], &store),
        with(&["store", "gc", "--dry-run", "tiny.kdl"], &store),
        with(&["store", "verify"], &store),
        with(&["store", "path", "tiny.kdl", "--runtime", "sim"], &store),
    ] {
        let out = env.run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", render(&out));
        let err = words(&out);
        assert!(
            err.contains("`home` is not a perfpipe store: it holds `thesis.tex`"),
            "{args:?}: {err}"
        );
        assert!(err.contains("--store DIR"), "{err}");
        assert_eq!(snapshot(&env.path("home")), before, "{args:?}");
    }
}

#[test]
fn a_linked_quarantine_or_tmp_is_refused_and_what_it_points_to_untouched() {
    let env = TestEnv::tiny();
    ran(&env, &with(&["run", "tiny.kdl"], SIM));
    env.write("outside/keep/thesis.tex", "chapter 1");
    env.write("outside/proc-1-x/owner.lock", "");
    let before = snapshot(&env.path("outside"));
    for dir in ["quarantine", "tmp"] {
        let link = env.path("store").join(dir);
        if link.exists() {
            std::fs::rename(&link, env.path("moved")).unwrap();
        }
        std::os::unix::fs::symlink(env.path("outside"), &link).unwrap();
        for args in [
            vec!["store", "gc", "--all", "tiny.kdl"],
            with(&["run", "tiny.kdl", "--samples", "2"], SIM),
            vec!["store", "verify"],
        ] {
            let out = env.run(&args);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {}", render(&out));
            let err = words(&out);
            assert!(
                err.contains(&format!(
                    "`store/{dir}` is a symbolic link: perfpipe never follows a link out of its store"
                )),
                "{args:?}: {err}"
            );
            assert_eq!(snapshot(&env.path("outside")), before, "{dir} {args:?}");
        }
        std::fs::remove_file(&link).unwrap();
        if env.path("moved").exists() {
            std::fs::rename(env.path("moved"), &link).unwrap();
        }
    }
}

#[test]
fn plan_and_other_reading_commands_write_nothing() {
    let env = TestEnv::tiny();
    let reading = |env: &TestEnv| {
        for args in [
            with(&["plan", "tiny.kdl"], SIM),
            vec!["store", "gc", "--dry-run", "--all", "tiny.kdl"],
            with(&["store", "path", "tiny.kdl"], SIM),
            with(&["explain", "tiny.kdl"], SIM),
        ] {
            let out = env.run(&args);
            // Exit codes differ (no store, runs not measured); none crashed.
            assert!(
                out.status.code().is_some_and(|c| c != 101),
                "{args:?}: {}",
                render(&out)
            );
        }
    };
    // No store: none is made.
    reading(&env);
    assert!(!env.path("store").exists(), "a missing store stays missing");
    // A store: nothing in it changes.
    ran(
        &env,
        &with(
            &["run", "tiny.kdl", "--runtime", "sim"],
            &["--max-prompts", "2"],
        ),
    );
    let before = snapshot(&env.path("store"));
    reading(&env);
    ran(&env, &["store", "verify"]);
    assert_eq!(snapshot(&env.path("store")), before);
}

/// A file named as launch material (`<64 hex>.json`) that is not one.
fn material_path(env: &TestEnv, hex: char) -> PathBuf {
    env.path(&format!("{}.json", hex.to_string().repeat(64)))
}

#[test]
fn realise_of_a_fifo_or_a_device_is_refused_at_once() {
    let env = TestEnv::tiny();
    let fifo = material_path(&env, 'a');
    mkfifo(&fifo);
    let device = material_path(&env, 'b');
    std::os::unix::fs::symlink("/dev/zero", &device).unwrap();
    for (path, what) in [(&fifo, "a FIFO"), (&device, "a device")] {
        let out = env.run_within(30, &["realise", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{}", render(&out));
        assert!(words(&out).contains(what), "{}", render(&out));
    }
}

#[test]
fn a_fifo_in_store_drv_is_listed_as_damage() {
    let env = TestEnv::tiny();
    ran(&env, &with(&["run", "tiny.kdl"], SIM));
    let fifo = env.path(&format!("store/drv/{}.json", "c".repeat(64)));
    mkfifo(&fifo);
    let out = env.run_within(30, &["store", "verify"]);
    assert_eq!(out.status.code(), Some(4), "{}", render(&out));
    assert!(
        stdout(&out).contains(&format!(
            "damaged      store/drv/{}.json: cannot be read (a FIFO, not a regular file)",
            "c".repeat(64)
        )),
        "{}",
        render(&out)
    );
    let gc = ran(&env, &["store", "gc", "tiny.kdl"]);
    assert!(!fifo.exists(), "{}", render(&gc));
}

#[test]
fn realise_refuses_material_the_experiment_parser_would_refuse() {
    use perfpipe::launch::LaunchMaterial;
    let env = TestEnv::tiny();
    ran(&env, &with(&["plan", "tiny.kdl", "--write-launches"], SIM));
    let material = crate::common::files_under(&env.path("store/drv")).remove(0);
    let launch: LaunchMaterial =
        serde_json::from_slice(&std::fs::read(&material).unwrap()).unwrap();
    type Edit = fn(&mut LaunchMaterial);
    let edits: [(&str, Edit); 3] = [
        ("`X=Y` is not an environment variable's name", |l| {
            l.engine.env.insert("X=Y".into(), "1".into());
        }),
        ("`../../../../etc` is not a Hugging Face model id", |l| {
            l.engine.model.id = "../../../../etc".into();
        }),
        ("`--help` is not a Hugging Face model id", |l| {
            l.engine.model.id = "--help".into();
        }),
    ];
    for (why, edit) in edits {
        let mut hostile = launch.clone();
        edit(&mut hostile);
        let path = env.path(&format!("{}.json", hostile.key()));
        std::fs::write(&path, hostile.canonical()).unwrap();
        let out = env.run(&["realise", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{}", render(&out));
        let err = words(&out);
        assert!(
            err.contains("refused, as an experiment's would be"),
            "{err}"
        );
        assert!(err.contains(why), "{err}");
        assert!(!err.contains("engine ready"), "{err}");
    }
    assert!(stderr(&env.run(&["store", "verify"])).contains("no damage"));
}

#[test]
fn a_killed_pushs_temp_file_is_removed_by_the_next_push_and_nothing_else() {
    let (env, _public) = crate::cache::measured_with_key();
    let blobs = env.path("team-cache/blobs/sha256");
    std::fs::create_dir_all(&blobs).unwrap();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for name in [".perfpipe-tmp-killed", ".tmpforeign", "notes.txt"] {
        std::fs::write(blobs.join(name), "half a blob").unwrap();
        std::fs::File::options()
            .write(true)
            .open(blobs.join(name))
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
    crate::cache::push(&env, env.path("team-cache").to_str().unwrap());
    assert!(!blobs.join(".perfpipe-tmp-killed").exists());
    assert!(blobs.join(".tmpforeign").exists());
    assert!(blobs.join("notes.txt").exists());
    let temps: Vec<_> = crate::common::files_under(&env.path("team-cache"))
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(".perfpipe-tmp-"))
        .collect();
    assert_eq!(temps, Vec::<PathBuf>::new(), "a push leaves no temp file");
}

/// A copy of the directory `from` at `to` (files and directories only).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for child in std::fs::read_dir(from).unwrap() {
        let child = child.unwrap();
        let target = to.join(child.file_name());
        if child.file_type().unwrap().is_dir() {
            copy_dir(&child.path(), &target);
        } else {
            std::fs::copy(child.path(), &target).unwrap();
        }
    }
}

/// What the planted links point to holds this: were a command to read
/// through a link, it would show, or push it.
const OUTSIDE: &str = "OUTSIDE-THE-STORE";

#[test]
fn a_link_in_a_sample_is_damage_and_what_it_points_to_never_read() {
    let env = TestEnv::tiny();
    ran(&env, &with(&["run", "tiny.kdl"], SIM));
    let mut samples: Vec<PathBuf> = crate::common::files_under(&env.path("store/entries"))
        .into_iter()
        .filter(|p| p.ends_with("samples/0001/result.json"))
        .map(|p| p.parent().unwrap().to_owned())
        .collect();
    samples.sort();
    let outside = env.path("outside");
    let link = |to: &Path, at: &Path| std::os::unix::fs::symlink(to, at).unwrap();
    let remove = |path: &Path| match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path).unwrap(),
        Ok(_) => std::fs::remove_file(path).unwrap(),
        Err(_) => {}
    };
    // Each link points to a copy of what it replaces, so that read through
    // it, each sample would look sound; the copied logs hold OUTSIDE. The
    // last points to a FIFO, which a read would block on (kept out of
    // `outside`, which the test reads).
    let planted = [
        "result.json",
        "logs/telemetry.jsonl",
        "logs",
        "", // the sample's directory
        "logs/requests.jsonl",
    ];
    assert!(samples.len() >= planted.len(), "{samples:?}");
    for (i, (sample, file)) in samples.iter().zip(planted).enumerate() {
        let at = if file.is_empty() {
            sample.clone()
        } else {
            sample.join(file)
        };
        let copy = outside.join(i.to_string());
        let to = match file {
            "logs/requests.jsonl" => {
                let fifo = env.path("fifo");
                std::fs::create_dir_all(&fifo).unwrap();
                mkfifo(&fifo.join("requests.jsonl"));
                fifo.join("requests.jsonl")
            }
            "logs/telemetry.jsonl" => {
                std::fs::create_dir_all(&copy).unwrap();
                std::fs::write(copy.join("telemetry.jsonl"), format!("{OUTSIDE}\n")).unwrap();
                copy.join("telemetry.jsonl")
            }
            "result.json" => {
                std::fs::create_dir_all(&copy).unwrap();
                std::fs::copy(&at, copy.join("result.json")).unwrap();
                copy.join("result.json")
            }
            _ => {
                copy_dir(&at, &copy);
                let logs = match copy.join("logs") {
                    logs if logs.is_dir() => logs,
                    _ => copy.clone(),
                };
                std::fs::write(logs.join("engine.log"), OUTSIDE).unwrap();
                copy
            }
        };
        remove(&at);
        link(&to, &at);
    }
    let outside_before = snapshot(&outside);
    let relative = |path: &Path| {
        path.strip_prefix(env.path(""))
            .unwrap()
            .display()
            .to_string()
    };

    // `store verify` names each link as damage.
    let verify = env.run_within(60, &["store", "verify"]);
    assert_eq!(verify.status.code(), Some(4), "{}", render(&verify));
    for (sample, file) in samples.iter().zip(planted) {
        let at = if file.is_empty() {
            sample.clone()
        } else {
            sample.join(file)
        };
        let said = format!("{}: a symbolic link, never followed", relative(&at));
        assert!(
            stdout(&verify).contains(&said),
            "{said}\n{}",
            render(&verify)
        );
    }
    // `report` reads none of their files (the index of results, recorded
    // by the run before the links were planted, still gives the samples
    // whose `result.json` is unchanged: reading their logs fails).
    let report = env.run_within(60, &with(&["report", "tiny.kdl"], SIM));
    assert!(!render(&report).contains(OUTSIDE), "{}", render(&report));
    // With the index rewritten from the entries, `plan` counts them
    // missing, not done.
    env.run_within(60, &["store", "verify", "--repair"]);
    let plan = env.run_within(60, &with(&["plan", "tiny.kdl"], SIM));
    assert_eq!(plan.status.code(), Some(0), "{}", render(&plan));
    assert!(stdout(&plan).contains(", 5 missing;"), "{}", render(&plan));
    let report = env.run_within(60, &with(&["report", "tiny.kdl"], SIM));
    assert!(!render(&report).contains(OUTSIDE), "{}", render(&report));
    // `cache push` pushes none of them.
    ran(&env, &["cache", "keygen", "alice", "--dir", "keys"]);
    let push = env.run_within(
        60,
        &[
            "cache",
            "push",
            "--all",
            "--to",
            "pushed",
            "--secret-key",
            "keys/alice.secret",
        ],
    );
    assert_eq!(push.status.code(), Some(0), "{}", render(&push));
    for file in crate::common::files_under(&env.path("pushed")) {
        let bytes = std::fs::read(&file).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(OUTSIDE),
            "{} was pushed from outside the store",
            file.display()
        );
    }
    // A run measures them again, moving the links (not what they point
    // to) to quarantine.
    ran(&env, &with(&["run", "tiny.kdl"], SIM));
    let quarantined: Vec<_> = snapshot(&env.path("store/quarantine"))
        .into_iter()
        .filter(|(_, what)| what.starts_with("link"))
        .collect();
    assert_eq!(quarantined.len(), planted.len(), "{quarantined:?}");
    assert_eq!(snapshot(&outside), outside_before);
    ran(&env, &["store", "verify"]);
}

#[test]
fn realise_of_launch_material_that_is_a_link_in_the_store_is_refused() {
    let env = TestEnv::tiny();
    ran(&env, &with(&["plan", "tiny.kdl", "--write-launches"], SIM));
    let material = crate::common::files_under(&env.path("store/drv")).remove(0);
    let key = material.file_stem().unwrap().to_str().unwrap().to_owned();
    // A copy outside, as sound as the file it replaces.
    let outside = env.path("outside.json");
    std::fs::copy(&material, &outside).unwrap();
    std::fs::remove_file(&material).unwrap();
    std::os::unix::fs::symlink(&outside, &material).unwrap();
    let out = env.run_within(60, &["realise", &key]);
    assert_eq!(out.status.code(), Some(2), "{}", render(&out));
    assert!(
        words(&out).contains("is a symbolic link, never followed"),
        "{}",
        render(&out)
    );
}
