//! perfpipe: declared, reproducible, cached pipelines for LLM-serving
//! performance studies.
//!
//! The modules form layers, listed highest first: a module uses its own
//! layer and the layers below, never one above, and no modules form a
//! cycle. `tests/layers.rs` checks it; docs/architecture.md describes it.
//!
//! ```text
//! commands    cli       arguments, printing, exit codes
//!             exit_code the exit codes; only cli turns an ErrorKind into one
//! operations  ops       one workflow per command; calls the layers below
//! effects     exec      executes missing runs (processes, HTTP); Slurm
//!             engine    starts, watches, stops engines; sim
//!             harness   benchmark clients: built-in, vllm bench, guidellm
//!             fetch     pinned models and images → this machine
//!             cache     signed samples shared: push, substitute (directory,
//!                       web server, OCI registry)
//!             project   the project root, perfpipe.toml, config.toml
//!             progress  a benchmark's progress counters
//! analysis    analyze   rankings, deltas, curves, distributions  (pure)
//!             report    markdown, HTML, JSON, CSV, charts        (pure)
//!             page      published study page → experiment        (pure)
//! plan        plan      keyed runs against the store; launches   (pure)
//! store       store     entries, samples, launch material, gc,   (files)
//!                       the index of results
//! material    launch    one engine launch's material; kept in
//!                       the store's drv/                         (pure)
//!             signing   ed25519 keys, the signed statement       (pure)
//! lockfile    lock      pins → lockfile; lock::resolve asks registries
//! keys        key       key material, run keys, keyed runs       (pure)
//! inputs      inputs    dataset files and tokenizers → sha256    (reads files)
//! experiment  spec      KDL → typed experiment, with spans       (pure)
//! facts       facts     engines, runtimes, serve commands, flags,
//!                       versions                                 (pure)
//!             cpu       CPU types: declared, read from /proc     (pure)
//!             metrics   the metrics model, result blocks         (pure)
//!             dataset   dataset files and sampled prompts        (pure)
//! mechanisms  digest, atomic_write, regular_file, filelock, plural,
//!             clock, rng, numpy_random (numpy's default_rng, as
//!             vLLM's random prompts draw), secrets, error_kind (what a script tells
//!             apart), tokio_runtime (the one runtime), tls, host, gpu,
//!             external, tokenizer, stderr (`eoutln!`), kdl_string
//!             (the one KDL string writer), pyenv (a Python package's
//!             version from its metadata), oci (the one
//!             client of the OCI distribution API: references, media
//!             types, the token handshake), parallel (items
//!             worked on over threads)
//! ```
//!
//! `fuzz` (proptest over the KDL front end and the importer) is built for
//! tests only.

// First: its `eoutln!` is how every module writes to stderr.
#[macro_use]
pub mod stderr;
pub mod analyze;
pub mod atomic_write;
pub mod cache;
#[macro_use]
pub mod cli;
pub mod clock;
pub mod cpu;
pub mod dataset;
pub mod digest;
pub mod engine;
pub mod error_kind;
pub mod exec;
pub mod exit_code;
pub mod external;
pub mod facts;
pub mod fetch;
pub mod filelock;
#[cfg(test)]
mod fuzz;
pub mod gpu;
pub mod harness;
pub mod host;
pub mod inputs;
pub mod kdl_string;
pub mod key;
pub mod launch;
pub mod lock;
pub mod metrics;
pub mod numpy_random;
pub mod oci;
pub mod ops;
pub mod page;
pub mod parallel;
pub mod plan;
pub mod plural;
pub mod progress;
pub mod project;
pub mod pyenv;
pub mod regular_file;
pub mod report;
pub mod rng;
pub mod secrets;
pub mod signing;
pub mod spec;
pub mod store;
pub mod tls;
pub mod tokenizer;
pub mod tokio_runtime;
