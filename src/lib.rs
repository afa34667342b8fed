//! perfpipe: declared, reproducible, cached pipelines for LLM-serving
//! performance studies.
//!
//! ```text
//! command  (arguments, printing, exit codes)   cli         the terminal
//! operate  (one workflow per command)          ops         calls the stages below
//! parse    (KDL → typed spec, with spans)      spec        pure
//! draft    (published study page → experiment) page        pure (`init --from-page`)
//! lock     (pins → lockfile, keys per run)     lock        pure; lock::resolve asks
//!                                                          registries and the Hub
//! fetch    (pinned models and images → here)   fetch       HTTP (the Hub), files, docker
//! resolve  (dataset files → sha256)            inputs      reads files
//! plan     (runs, keys, store lookups)         key, plan   pure over a StoreIndex
//! launch   (one engine launch's material)      drv         pure; kept in the store's drv/
//! execute  (missing runs only)                 exec        processes, HTTP (engine, harness)
//! store    (atomic, per-key locks)             store       files
//! share    (signed samples: push, substitute)  cache       files, HTTP (directory, web
//!                                                          server, OCI registry)
//! analyze  (polars: deltas, rankings, diff)    analyze     pure
//! render   (markdown, JSON, CSV, chart, diff)  report      pure
//! ```
//!
//! Below them all, mechanisms written once that every layer uses: `digest`
//! (sha256 names), `atomic_write`, `regular_file`, `filelock`, `plural`,
//! `clock`, `stderr` (`eoutln!`), `tokio_runtime` (the one runtime, made in
//! `cli::main`), `error_kind` (what `cli` alone makes an exit code).

// First: its `eoutln!` is how every module writes to stderr.
#[macro_use]
pub mod stderr;
pub mod analyze;
pub mod atomic_write;
pub mod cache;
#[macro_use]
pub mod cli;
pub mod clock;
pub mod digest;
pub mod drv;
pub mod engine;
pub mod error_kind;
pub mod exec;
pub mod exit_code;
pub mod external;
pub mod fetch;
pub mod filelock;
#[cfg(test)]
mod fuzz;
pub mod gpu;
pub mod harness;
pub mod host;
pub mod inputs;
pub mod key;
pub mod lock;
pub mod metrics;
pub mod ops;
pub mod page;
pub mod plan;
pub mod plural;
pub mod progress;
pub mod project;
pub mod regular_file;
pub mod report;
pub mod rng;
pub mod secrets;
pub mod spec;
pub mod store;
pub mod tls;
pub mod tokenizer;
pub mod tokio_runtime;
