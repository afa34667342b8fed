//! `bench`'s and `run`'s command-line values: any of them, however extreme,
//! is refused by the parser with a message or passes the checks that come
//! before anything is measured; none panics, hangs or allocates without bound.

use std::time::{Duration, Instant};

use clap::Parser;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::cli::{Cli, check_values};

/// Numbers at and past every bound, and text that is no number.
const EXTREMES: &[&str] = &[
    "0",
    "-0",
    "1",
    "-1",
    "0.5",
    "0.999999",
    "1e-300",
    "-1e-300",
    "1e300",
    "1e400",
    "1e-6",
    "9.99e-7",
    "5e-324",
    "inf",
    "-inf",
    "infinity",
    "nan",
    "NaN",
    "-nan",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "-9223372036854775808",
    "4294967295",
    "4294967296",
    "65535",
    "65536",
    "1000000",
    "1000001",
    "1000000000",
    "604800",
    "604801",
    "1073741824",
    "0x10",
    "1_000",
    "",
    " 5",
    "5 ",
    "é",
    "ttft:nan",
    "ttft:-1",
    "ttft:1e400",
    "50,nan,100",
    "ttft,itl",
];

/// URLs and hosts, good and broken.
const PLACES: &[&str] = &[
    "notaurl",
    "http://",
    "http://:8000",
    "http://127.0.0.1:8000",
    "https://h/x/",
    "http://[::1]:8000",
    "ftp://h",
    "http://h?q=1",
    "http://h#f",
    "http://h:99999",
    "file:///etc/passwd",
    "a b",
    "a:b",
    "[::1]",
];

const BENCH_NUMBERS: &[&str] = &[
    "--request-rate",
    "--burstiness",
    "--max-concurrency",
    "--num-warmups",
    "--num-prompts",
    "--random-input-len",
    "--random-output-len",
    "--random-range-ratio",
    "--temperature",
    "--stall-timeout",
    "--seed",
    "--port",
    "--sharegpt-output-len",
    "--metric-percentiles",
    "--goodput",
    "--percentile-metrics",
];

const RUN_NUMBERS: &[&str] = &[
    "--startup-timeout",
    "--stall-timeout",
    "--jobs",
    "--samples",
    "--max-prompts",
];

/// A value: an extreme, or any number as Rust prints it.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(EXTREMES).prop_map(str::to_owned),
        1 => any::<f64>().prop_map(|f| f.to_string()),
        1 => any::<f64>().prop_map(|f| format!("{f:e}")),
        1 => any::<u64>().prop_map(|u| u.to_string()),
        1 => any::<i64>().prop_map(|i| i.to_string()),
        1 => (0u32..2_000_000).prop_map(|u| u.to_string()),
    ]
}

/// `--option=value` (so that `-1` is a value) or `--option value`.
fn option(names: &'static [&'static str]) -> impl Strategy<Value = Vec<String>> {
    (proptest::sample::select(names), value(), any::<bool>()).prop_map(|(name, value, joined)| {
        if joined {
            vec![format!("{name}={value}")]
        } else {
            vec![name.to_owned(), value]
        }
    })
}

fn bench_argv() -> impl Strategy<Value = Vec<String>> {
    let place = (
        proptest::sample::select(&["--base-url", "--host"][..]),
        proptest::sample::select(PLACES),
    )
        .prop_map(|(name, place)| vec![format!("{name}={place}")]);
    proptest::collection::vec(prop_oneof![6 => option(BENCH_NUMBERS), 1 => place], 1..6)
        .prop_map(|options| argv("bench", &[], options))
}

fn run_argv() -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(option(RUN_NUMBERS), 1..5)
        .prop_map(|options| argv("run", &["experiment.kdl"], options))
}

fn argv(command: &str, positional: &[&str], options: Vec<Vec<String>>) -> Vec<String> {
    ["perfpipe", command]
        .iter()
        .chain(positional)
        .map(|s| (*s).to_owned())
        .chain(options.into_iter().flatten())
        .collect()
}

proptest! {
    #![proptest_config(super::config())]

    #[test]
    fn bench_values_are_refused_or_checked_never_a_crash(argv in bench_argv()) {
        command_line(&argv)?;
    }

    #[test]
    fn run_values_are_refused_or_checked_never_a_crash(argv in run_argv()) {
        command_line(&argv)?;
    }
}

/// Parses `argv` as `perfpipe` does and checks what precedes any measurement.
fn command_line(argv: &[String]) -> Result<(), TestCaseError> {
    let started = Instant::now();
    match Cli::try_parse_from(argv) {
        Err(e) => {
            // Refused with a message and exit 2, as `cli::main` reports it.
            prop_assert!(e.use_stderr(), "{argv:?}: {e}");
            let text = e.render().to_string();
            prop_assert!(text.starts_with("error:"), "{argv:?}: {text}");
        }
        Ok(cli) => {
            if let Err(e) = check_values(&cli) {
                prop_assert_eq!(
                    crate::cli::exit_code_of(&e),
                    crate::exit_code::USAGE,
                    "{:?}: {}",
                    argv,
                    e
                );
                let rendered = format!("{:?}", miette::Report::new(e));
                prop_assert!(!rendered.is_empty());
            }
        }
    }
    // Far above the milliseconds a case takes: an unbounded count would show here.
    prop_assert!(
        started.elapsed() < Duration::from_secs(10),
        "{argv:?} took {:?}",
        started.elapsed()
    );
    Ok(())
}
