//! The KDL front end on any text: it returns a spec or errors, never panics,
//! each error points inside the text on character boundaries, the report
//! renders, and a spec it accepts goes through planning and the lockfile.

use std::sync::LazyLock;
use std::time::{Duration, Instant};

use miette::{GraphicalReportHandler, GraphicalTheme};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use super::grammar;
use super::mutate::mutated;
use crate::facts::Runtime;
use crate::inputs::ResolvedInputs;
use crate::spec::{SourceFile, Spec, parse};

static SEEDS: LazyLock<Vec<String>> = LazyLock::new(|| super::corpus("kdl"));

/// What KDL and experiments are made of, and values that have broken parsers.
const TOKENS: &[&str] = &[
    "{",
    "}",
    "\"",
    "=",
    ";",
    "\n",
    "\r\n",
    "\r",
    " ",
    "\t",
    "\\",
    "/-",
    "/*",
    "*/",
    "//",
    "#",
    "(",
    ")",
    "(u8)",
    "\"\"\"\n",
    "#\"",
    "\"#",
    "#true",
    "#false",
    "#null",
    "#inf",
    "#-inf",
    "#nan",
    "true",
    "null",
    "0",
    "-0",
    "-1",
    "1.5",
    "1e400",
    "-1e400",
    "1e-400",
    "4294967295",
    "4294967296",
    "18446744073709551616",
    "99999999999999999999",
    "-9223372036854775809",
    "0x",
    "0xffffffffffffffffffffffffffffffff",
    "0b2",
    "1_000",
    ".5",
    "é",
    "日本",
    "🦀",
    "\u{200b}",
    "\u{feff}",
    "\u{2028}",
    "\u{85}",
    "\u{202e}",
    "\u{0}",
    "experiment",
    "hardware",
    "model",
    "engine",
    "harness",
    "workload",
    "step",
    "sweep",
    "compare",
    "conclusion",
    "report",
    "dataset",
    "prompts",
    "rate",
    "arrival",
    "constant",
    "poisson",
    "concurrency",
    "args",
    "env",
    "workloads",
    "expect",
    "expect-failure",
    "vary",
    "link",
    "load=",
    "candidate",
    "summary",
    "sections",
    "random",
    "sharegpt",
    "conversion=",
    "benchmark-runner",
    "vllm",
    "sglang",
    "trtllm",
    "builtin",
    "guidellm",
    "vllm-bench",
    "gpus=",
    "replicas=",
    "engine=",
    "model=",
    "input=",
    "output=",
    "seed=",
    "path=",
    "range-ratio=",
    "version=",
    "at=",
    "baseline=",
    "measure=",
    "delta-decimals=",
    "tolerance=",
];

proptest! {
    #![proptest_config(super::config())]

    #[test]
    fn mutated_seeds_never_crash_the_front_end(text in mutated(&SEEDS, TOKENS)) {
        front_end(&text)?;
    }

    #[test]
    fn generated_experiments_never_crash_the_front_end(text in grammar::experiment()) {
        front_end(&text)?;
    }
}

/// Parses `text` and checks what the front end promises about the outcome.
fn front_end(text: &str) -> Result<(), TestCaseError> {
    let started = Instant::now();
    let source = SourceFile {
        name: "fuzz.kdl".into(),
        text: text.to_owned(),
    };
    match parse(&source) {
        Ok(spec) => downstream(&spec),
        Err(errors) => {
            prop_assert!(!errors.errors.is_empty());
            prop_assert!(errors.errors.len() <= crate::spec::SpecErrors::SHOWN);
            prop_assert!(errors.total() >= errors.errors.len());
            for diag in &errors.errors {
                let (start, end) = (diag.span.offset(), diag.span.offset() + diag.span.len());
                prop_assert!(end <= text.len(), "{diag:?} is past the end");
                prop_assert!(
                    text.is_char_boundary(start) && text.is_char_boundary(end),
                    "{diag:?} splits a character"
                );
            }
            let mut out = String::new();
            GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor())
                .render_report(&mut out, &errors)
                .map_err(|e| TestCaseError::fail(format!("rendering failed: {e}")))?;
            prop_assert!(out.contains("fuzz.kdl"), "{out}");
        }
    }
    // Far above the milliseconds a case takes: catches super-linear parsing.
    prop_assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
    Ok(())
}

/// The pure stages after parsing, on whatever the parser accepted.
fn downstream(spec: &Spec) {
    let inputs = ResolvedInputs::default();
    let runs = crate::key::keyed_runs(spec, Runtime::Sim, &inputs);
    let plan = crate::plan::build(
        runs,
        &<crate::store::StoreIndex>::default(),
        crate::plan::PlanOptions {
            runtime: Runtime::Sim,
            samples: 1,
            retry_failed: false,
        },
    );
    crate::plan::estimate(spec, &plan, false, &|_| Some(1.0));
    let lock = crate::lock::build(spec, spec, Vec::new(), &inputs);
    let text = crate::lock::render(&lock);
    if let Err(e) = crate::lock::parse("fuzz.lock", &text) {
        panic!("the lockfile written for an accepted spec does not read back: {e}\n{text}");
    }
}

/// The grammar's experiments reach the stages behind the parser often
/// enough to test them: a grammar whose every experiment is refused would
/// fuzz only the errors.
#[test]
fn many_generated_experiments_parse() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = grammar::experiment();
    let (mut parsed, mut long_lines) = (0, 0);
    let n = 100;
    for _ in 0..n {
        let text = strategy.new_tree(&mut runner).unwrap().current();
        long_lines += usize::from(text.lines().any(|l| l.len() > 65_535));
        let source = SourceFile {
            name: "g.kdl".into(),
            text,
        };
        parsed += usize::from(parse(&source).is_ok());
    }
    assert!(parsed * 10 >= n, "{parsed} of {n} parse");
    assert!(long_lines > 0, "no line past column 65,535");
}
