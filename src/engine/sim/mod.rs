//! The simulated engine: a real OpenAI-compatible server process, started by
//! the executor exactly as vLLM, SGLang or TensorRT-LLM would be (with their
//! argv), so `--runtime sim` exercises the whole pipeline without a GPU.
//!
//! It reads the GPU it "runs on" from `PERFPIPE_SIM_GPU` (a GPU type name),
//! fails at start where the real engine would ([`support`]), and answers at
//! the speed of a small batching model ([`speed`]).

pub mod config;
mod scheduler;
mod server;
pub mod speed;
pub mod support;

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::gpu;

/// The environment variable naming the simulated GPU type.
pub const GPU_ENV: &str = "PERFPIPE_SIM_GPU";

/// Runs the simulated engine until it is killed; returns an exit code when it cannot start.
pub fn main(argv: &[String]) -> i32 {
    let gpu_name = std::env::var(GPU_ENV).unwrap_or_default();
    let Some(gpu) = gpu::lookup(&gpu_name) else {
        eprintln!("ERROR perfpipe-sim: `{GPU_ENV}` must name a known GPU type, got `{gpu_name}`");
        return 2;
    };
    let config = match config::parse_argv(argv, gpu.sm) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    eprintln!(
        "INFO perfpipe-sim: simulating `{}` on {} × {} (tp={}, max_seqs={}, token_budget={})",
        argv.join(" "),
        config.tensor_parallel,
        gpu.marketing_name,
        config.tensor_parallel,
        config.max_seqs,
        config.token_budget
    );
    let info = support::model_info(&config.model);
    let speed = speed::Speed::new(&config, gpu, &info);
    let limits = scheduler::Limits {
        max_seqs: config.max_seqs as usize,
        token_budget: config.token_budget as usize,
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ERROR perfpipe-sim: cannot start runtime: {e}");
            return 1;
        }
    };
    runtime.block_on(async move {
        // Loading weights.
        tokio::time::sleep(Duration::from_millis(300)).await;
        if let Some(error) = support::startup_error(&config, gpu) {
            eprintln!("ERROR perfpipe-sim: engine failed to start");
            eprintln!("{error}");
            return 1;
        }
        let listener = match tokio::net::TcpListener::bind((config.host.as_str(), config.port)).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("ERROR perfpipe-sim: [Errno 98] error while attempting to bind on address ({}, {}): {e}", config.host, config.port);
                return 1;
            }
        };
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(scheduler::run(rx, limits, speed));
        let state = Arc::new(server::AppState {
            model: config.model.clone(),
            max_model_len: config.max_model_len.unwrap_or(info.max_model_len),
            scheduler: tx,
            next_id: AtomicU64::new(0),
            created: crate::clock::unix_now(),
        });
        eprintln!("INFO perfpipe-sim: serving on http://{}:{}", config.host, config.port);
        match axum::serve(listener, server::router(state)).await {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("ERROR perfpipe-sim: server failed: {e}");
                1
            }
        }
    })
}
