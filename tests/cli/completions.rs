//! `perfpipe completions SHELL` and `perfpipe man [DIR]`, generated from the
//! clap definitions.

use crate::common::{TestEnv, stderr, stdout};

/// What bash completes after `perfpipe WORDS…` (the last word partial).
fn bash_completes(script: &str, words: &[&str]) -> Vec<String> {
    let env = TestEnv::new();
    env.write("perfpipe.bash", script);
    let words = words
        .iter()
        .map(|w| format!("'{w}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source perfpipe.bash; COMP_WORDS=(perfpipe {words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
             COMP_LINE=\"${{COMP_WORDS[*]}}\"; COMP_POINT=${{#COMP_LINE}}; \
             _perfpipe perfpipe \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\""
        ))
        .current_dir(env.dir.path())
        .output()
        .expect("bash runs");
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out).lines().map(str::to_owned).collect()
}

#[test]
fn bash_completes_subcommands_and_their_own_options() {
    let env = TestEnv::new();
    let out = env.run(&["completions", "bash"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let script = stdout(&out);
    assert_eq!(bash_completes(&script, &["st"]), ["store"]);
    let store = bash_completes(&script, &["store", ""]);
    for sub in ["verify", "gc"] {
        assert!(store.contains(&sub.to_owned()), "{store:?}");
    }
    assert_eq!(
        bash_completes(&script, &["run", "--max-p"]),
        ["--max-prompts"]
    );
    let report = bash_completes(&script, &["report", "--"]);
    assert!(report.contains(&"--max-prompts".to_owned()), "{report:?}");
    assert!(
        !report.contains(&"--retry-failed".to_owned()),
        "report takes no --retry-failed: {report:?}"
    );
}

#[test]
fn zsh_and_fish_get_scripts_of_their_own() {
    let env = TestEnv::new();
    let zsh = env.run(&["completions", "zsh"]);
    assert!(
        stdout(&zsh).starts_with("#compdef perfpipe"),
        "{}",
        stdout(&zsh)
    );
    let fish = env.run(&["completions", "fish"]);
    assert!(
        stdout(&fish).contains("complete -c perfpipe"),
        "{}",
        stdout(&fish)
    );
}

#[test]
fn man_prints_the_main_page_or_writes_one_per_subcommand() {
    let env = TestEnv::new();
    let out = env.run(&["man"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let page = stdout(&out);
    for section in [
        ".TH perfpipe 1",
        ".SH NAME",
        ".SH SYNOPSIS",
        ".SH SUBCOMMANDS",
    ] {
        assert!(page.contains(section), "no `{section}` in\n{page}");
    }

    let out = env.run(&["man", "pages"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let written = stdout(&out);
    let written: Vec<&str> = written.lines().collect();
    for page in [
        "pages/perfpipe.1",
        "pages/perfpipe-run.1",
        "pages/perfpipe-store-gc.1",
    ] {
        assert!(written.contains(&page), "{written:?}");
    }
    assert!(
        !env.path("pages/perfpipe-sim-engine.1").exists(),
        "internal, so no page"
    );
    let run = env.read("pages/perfpipe-run.1");
    assert!(run.contains(".SH NAME\nperfpipe\\-run"), "{run}");
    assert!(run.contains("\\-\\-max\\-prompts"), "{run}");
}
