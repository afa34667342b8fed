//! The result-block importer on any text: a block of finite numbers or an
//! error that names a line of the text, never a panic.

use std::sync::LazyLock;

use proptest::prelude::*;

use super::mutate::mutated;
use crate::metrics::{BlockError, parse_block};

static SEEDS: LazyLock<Vec<String>> = LazyLock::new(|| super::corpus("result-block"));

/// What result blocks are made of, and values that have broken parsers.
const TOKENS: &[&str] = &[
    "\n",
    "\r\n",
    ":",
    " ",
    "N/A",
    "==================================================",
    "============ Serving Benchmark Result ============\n",
    "---------------Time to First Token----------------\n",
    "----------------End-to-end Latency----------------\n",
    "----------------------Latency---------------------\n",
    "Mean Latency(s):                          2.62\n",
    "P95 Latency(s):                           N/A\n",
    "Maximum request concurrency:             512\n",
    "Successful requests:                     10\n",
    "Failed requests:                         2\n",
    "Total Token throughput (tok/s):          720.00\n",
    "Total token throughput (tok/s):          720.00\n",
    "Mean TTFT (ms):                          1.00\n",
    "P99.9 ITL (ms):                          1.00\n",
    "P (ms)",
    "Pé TTFT (ms)",
    "P-1 TPOT (ms)",
    "PNaN E2EL (ms)",
    "Mean",
    "(ms)",
    "#",
    "```",
    "-",
    "=",
    "0",
    "-0",
    "1e400",
    "NaN",
    "inf",
    "-inf",
    "99999999999999999999999",
    "0x10",
    "١٢٣",
    "é",
    "🦀",
    "\u{feff}",
    "\u{2028}",
    "\u{85}",
];

proptest! {
    #![proptest_config(super::config())]

    #[test]
    fn mutated_blocks_import_or_name_a_line(text in mutated(&SEEDS, TOKENS)) {
        match parse_block(&text) {
            Ok(block) => {
                for (key, value) in block.metrics.iter().chain(&block.settings) {
                    prop_assert!(value.is_finite(), "{key} = {value}");
                }
            }
            Err(BlockError::NoHeader) => {}
            Err(e) => {
                let line = e.line();
                prop_assert!(
                    line.is_some_and(|l| (1..=text.lines().count()).contains(&l)),
                    "{e}: line {line:?} of {}",
                    text.lines().count()
                );
                prop_assert!(e.to_string().starts_with("line "), "{e}");
            }
        }
    }
}
