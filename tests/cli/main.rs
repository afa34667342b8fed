//! Integration tests: the real binary, real processes, real HTTP over loopback.
#![expect(
    clippy::disallowed_methods,
    reason = "tests start the real binary and write their own fixtures"
)]
#![expect(
    clippy::disallowed_macros,
    reason = "a test's notes go to the harness's captured stderr"
)]

mod bad_values;
mod bench;
mod bench_options;
mod bench_timing;
mod browser;
mod cache;
mod cache_credentials;
mod cache_lacks;
mod cache_remote;
mod cache_s3;
mod cache_trust;
mod charts;
mod closed_pipe;
mod common;
mod completions;
mod crash;
mod diagnostics;
mod diff;
mod fetch;
mod foreign;
mod help;
mod load;
mod lock;
mod matrix;
mod objectives;
mod pages;
mod progress;
mod project;
mod published;
mod real_vllm;
mod realise;
mod reliability;
mod reports;
mod run;
mod runtimes;
mod search;
mod slurm;
mod speed;
mod store;
mod studies;
mod tokenizer;
mod unstartable;
