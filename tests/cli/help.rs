//! Every subcommand's `--help`: only the options that mean something for it,
//! each with help text, and an example.

use crate::common::{TestEnv, stderr, stdout};

const SUBCOMMANDS: &[&[&str]] = &[
    &["run"],
    &["plan"],
    &["report"],
    &["verify"],
    &["lock"],
    &["fetch"],
    &["explain"],
    &["diff"],
    &["import"],
    &["init"],
    &["bench"],
    &["store"],
    &["store", "verify"],
    &["store", "gc"],
    &["store", "path"],
    &["realise"],
    &["cache"],
    &["cache", "keygen"],
    &["cache", "push"],
    &["cache", "sign"],
    &["completions"],
    &["man"],
];

fn help(env: &TestEnv, subcommand: &[&str]) -> String {
    let mut args = subcommand.to_vec();
    args.push("--help");
    let out = env.run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    stdout(&out)
}

#[test]
fn every_subcommand_has_its_help_snapshotted() {
    let env = TestEnv::new();
    // The list covers every subcommand `perfpipe --help` shows.
    let top = help(&env, &[]);
    let listed = top
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help");
    for name in listed {
        assert!(
            SUBCOMMANDS.contains(&&[name][..]),
            "`{name}` has no help snapshot"
        );
    }
    for subcommand in SUBCOMMANDS {
        let name = format!("help_{}", subcommand.join("_"));
        insta::assert_snapshot!(name, help(&env, subcommand));
    }
}

#[test]
fn run_options_appear_only_where_they_mean_something() {
    let env = TestEnv::new();
    let run_only = ["--retry-failed", "--fresh-engine", "--samples"];
    for subcommand in [
        &["report"][..],
        &["verify"],
        &["lock"],
        &["explain"],
        &["import"],
    ] {
        let text = help(&env, subcommand);
        for option in run_only {
            assert!(
                !text.contains(option),
                "`{subcommand:?} --help` lists {option}"
            );
        }
    }
    for subcommand in [&["run"][..], &["plan"]] {
        let text = help(&env, subcommand);
        for option in run_only {
            assert!(
                text.contains(option),
                "`{subcommand:?} --help` lacks {option}"
            );
        }
    }
    let lock = help(&env, &["lock"]);
    for option in ["--runtime", "--max-prompts", "--store"] {
        assert!(!lock.contains(option), "`lock --help` lists {option}");
    }
}

#[test]
fn every_option_has_help_text_and_every_subcommand_an_example() {
    let env = TestEnv::new();
    for subcommand in SUBCOMMANDS {
        let text = help(&env, subcommand);
        assert!(
            text.contains("\nExamples:\n"),
            "`{subcommand:?} --help` has no example"
        );
        // In long help an option's text follows on the lines below it; an
        // option line followed directly by another option has none.
        let options = text.split("\nExamples:\n").next().unwrap();
        let lines: Vec<&str> = options.lines().collect();
        for pair in lines.windows(2) {
            let is_option =
                |l: &str| l.trim_start().starts_with("--") || l.trim_start().starts_with("-h,");
            if is_option(pair[0]) {
                assert!(
                    !is_option(pair[1])
                        && !pair[1].trim().is_empty()
                        && !pair[1].trim().starts_with('['),
                    "`{subcommand:?} --help`: `{}` has no help text",
                    pair[0].trim()
                );
            }
        }
    }
}
