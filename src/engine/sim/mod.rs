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
pub mod timing;

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::gpu;
use crate::tokenizer::Tokenizer;

/// The environment variable naming the simulated GPU type.
pub const GPU_ENV: &str = "PERFPIPE_SIM_GPU";

/// Replaces the batching model with a fixed schedule per request, e.g.
/// `fixed:ttft_ms=200,itl_ms=20` (or `itl_ms=0`: as fast as possible), to
/// measure the load generator itself; `,probe=1` stamps every write with the
/// server's monotonic clock so the client can measure its own delay, and
/// `,coalesce=0` writes each event on its own (by default all events ready are
/// written at once, as a busy server does). `load:ttft_ms=5,ttft_ms_per_req=10,
/// itl_ms=1,itl_ms_per_req=0.5` makes the latencies a function of the requests
/// in flight ([`timing`]), for exact checks of sweeps and searches.
pub const TIMING_ENV: &str = "PERFPIPE_SIM_TIMING";

/// How long loading the weights takes, in milliseconds (300 by default, 0
/// under a fixed timing): a test of what a slow start shows sets it.
pub const LOAD_ENV: &str = "PERFPIPE_SIM_LOAD_MS";

/// Loading the weights also lasts until this path exists: a test of what
/// happens while an engine starts waits on it, not on a time.
pub const LOAD_UNTIL_ENV: &str = "PERFPIPE_SIM_LOAD_UNTIL";

fn parse_fixed_timing(spec: &str) -> Option<server::TokenSource> {
    let mut ttft = None;
    let mut itl = None;
    let mut probe = false;
    let mut one_per_write = false;
    for part in spec.strip_prefix("fixed:")?.split(',') {
        let (key, value) = part.split_once('=')?;
        let number = value.parse::<f64>().ok().filter(|v| *v >= 0.0)?;
        let ms = Duration::try_from_secs_f64(number / 1000.0).ok()?;
        match key {
            "ttft_ms" => ttft = Some(ms),
            "itl_ms" => itl = Some(ms),
            "probe" => probe = number > 0.0,
            "coalesce" => one_per_write = number == 0.0,
            _ => return None,
        }
    }
    Some(server::TokenSource::Fixed {
        ttft: ttft?,
        itl: itl?,
        probe,
        one_per_write,
    })
}

/// Runs the simulated engine until it is killed; returns an exit code when it cannot start.
pub fn main(argv: &[String]) -> i32 {
    let gpu_name = std::env::var(GPU_ENV).unwrap_or_default();
    let Some(gpu) = gpu::lookup(&gpu_name) else {
        eoutln!(
            "ERROR perfpipe-sim: `{GPU_ENV}` must name a known GPU type, one of {}; got `{gpu_name}`",
            gpu::NAMES.join(", ")
        );
        return 2;
    };
    let config = match config::parse_argv(argv, gpu.sm) {
        Ok(c) => c,
        Err(e) => {
            eoutln!("error: {e}");
            return 2;
        }
    };
    eoutln!(
        "INFO perfpipe-sim: simulating `{}` on {} × {} (tp={}, max_seqs={}, token_budget={})",
        argv.join(" "),
        config.tensor_parallel,
        gpu.marketing_name,
        config.tensor_parallel,
        config.max_seqs,
        config.token_budget
    );
    let fixed_timing = match std::env::var(TIMING_ENV) {
        Ok(spec) => match parse_fixed_timing(&spec).or_else(|| {
            timing::LoadTiming::parse(&spec).map(|timing| server::TokenSource::Load {
                timing,
                in_flight: Arc::new(AtomicU64::new(0)),
            })
        }) {
            Some(t) => Some(t),
            None => {
                eoutln!(
                    "ERROR perfpipe-sim: `{TIMING_ENV}` must read `fixed:ttft_ms=200,itl_ms=20[,probe=1]` or `load:ttft_ms=5,ttft_ms_per_req=10,itl_ms=1,itl_ms_per_req=0.5`, got `{spec}`"
                );
                return 2;
            }
        },
        Err(_) => None,
    };
    let info = support::model_info(&config.model);
    let speed = speed::Speed::new(&config, gpu, &info);
    let limits = scheduler::Limits {
        max_seqs: config.max_seqs as usize,
        token_budget: config.token_budget as usize,
    };
    // A process of its own (`perfpipe sim-engine`, started as an engine is):
    // its runtime is made here, where that program starts.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eoutln!("ERROR perfpipe-sim: cannot start runtime: {e}");
            return 1;
        }
    };
    runtime.block_on(async move {
        // Loading weights.
        let default_load = if fixed_timing.is_none() { 300 } else { 0 };
        let load = std::env::var(LOAD_ENV)
            .ok()
            .and_then(|ms| ms.parse().ok())
            .unwrap_or(default_load);
        if load > 0 {
            eoutln!("INFO perfpipe-sim: loading weights");
            tokio::time::sleep(Duration::from_millis(load)).await;
        }
        if let Some(until) = std::env::var_os(LOAD_UNTIL_ENV) {
            while !std::path::Path::new(&until).exists() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        if let Some(error) = support::startup_error(&config, gpu) {
            eoutln!("ERROR perfpipe-sim: engine failed to start");
            eoutln!("{error}");
            return 1;
        }
        let listener = match listen(&config.host, config.port).await {
            // As uvicorn does: without it, Nagle holds a token's chunk until
            // the client acknowledges the headers (a 40 ms delayed ACK).
            Ok(l) => axum::serve::ListenerExt::tap_io(l, |tcp| {
                let _ = tcp.set_nodelay(true);
            }),
            Err(e) => {
                eoutln!("ERROR perfpipe-sim: [Errno 98] error while attempting to bind on address ({}, {}): {e}", config.host, config.port);
                return 1;
            }
        };
        let stats = Arc::new(scheduler::Stats::default());
        let tokens = match fixed_timing {
            Some(fixed) => fixed,
            None => {
                let (tx, rx) = mpsc::unbounded_channel();
                tokio::spawn(scheduler::run(rx, limits, speed, stats.clone()));
                server::TokenSource::Scheduler(tx)
            }
        };
        let tokenizer = match Tokenizer::for_model(&config.model, "main") {
            Ok(t) => t,
            Err(e) => {
                eoutln!("ERROR perfpipe-sim: {e}");
                return 1;
            }
        };
        let state = Arc::new(server::AppState {
            engine: config.engine,
            stats,
            // A simulated cache of 4096 tokens per sequence slot.
            kv_capacity: u64::from(config.max_seqs) * 4096,
            model: config.model.clone(),
            tokenizer,
            max_model_len: config.max_model_len.unwrap_or(info.max_model_len),
            tokens,
            next_id: AtomicU64::new(0),
            created: crate::clock::unix_now(),
        });
        eoutln!("INFO perfpipe-sim: serving on http://{}:{}", config.host, config.port);
        match axum::serve(listener, server::router(state)).await {
            Ok(()) => 0,
            Err(e) => {
                eoutln!("ERROR perfpipe-sim: server failed: {e}");
                1
            }
        }
    })
}

/// The queue of connections a listener holds before they are accepted, as
/// uvicorn's (`--backlog`, 2048) under vLLM and SGLang: a wave of 512 cold
/// connections overflowed tokio's 128 and the dropped SYNs were sent again
/// a second later, inside those requests' TTFTs (capped by the kernel's
/// `net.core.somaxconn`).
pub const LISTEN_BACKLOG: u32 = 2048;

/// Listens on the first address `host` names, with [`LISTEN_BACKLOG`]
/// (tokio's `TcpListener::bind` has no backlog to set); the
/// benchmark's fast server (`examples/fast_server.rs`) listens through it too.
pub async fn listen(host: &str, port: u16) -> std::io::Result<tokio::net::TcpListener> {
    let mut last = None;
    for address in tokio::net::lookup_host((host, port)).await? {
        let socket = match address {
            std::net::SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
            std::net::SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
        };
        // As std and tokio bind: a port in TIME_WAIT is free again.
        socket.set_reuseaddr(true)?;
        match socket
            .bind(address)
            .and_then(|()| socket.listen(LISTEN_BACKLOG))
        {
            Ok(listener) => return Ok(listener),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("`{host}` names no address"),
        )
    }))
}

#[cfg(test)]
mod tests {
    /// A wave of 520 connections, none accepted yet, all established: with
    /// tokio's backlog of 128 the SYNs past the queue were dropped, and in
    /// a benchmark each connect waited a second for its retry.
    #[test]
    fn a_wave_of_connections_waits_in_the_listen_queue_not_in_syn_retries() {
        const WAVE: usize = 520;
        let somaxconn = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok());
        if somaxconn.is_some_and(|max| max < WAVE) {
            return; // the kernel caps every backlog below the wave
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime.block_on(super::listen("127.0.0.1", 0)).unwrap();
        let address = listener.local_addr().unwrap();
        // Nothing accepts: past a full queue every SYN, and every retry of
        // it, is dropped, and the connect never ends. The bound is how long
        // to wait for never, not a speed.
        let never = std::time::Duration::from_secs(5);
        let connected: Vec<_> = (0..WAVE)
            .map(|n| {
                std::net::TcpStream::connect_timeout(&address, never)
                    .unwrap_or_else(|e| panic!("connection {n} of {WAVE}: {e}"))
            })
            .collect();
        assert_eq!(connected.len(), WAVE);
    }

    #[test]
    fn a_timing_no_duration_holds_is_refused_not_a_panic() {
        assert!(super::parse_fixed_timing("fixed:ttft_ms=1,itl_ms=1").is_some());
        for bad in ["inf", "1e300", "nan", "-1"] {
            let spec = format!("fixed:ttft_ms={bad},itl_ms=1");
            assert!(super::parse_fixed_timing(&spec).is_none(), "{bad}");
        }
    }
}
