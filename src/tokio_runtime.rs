//! The one tokio runtime of a perfpipe process: made where the program
//! starts (`cli::main`) and passed down, as an [`Io`], to whatever asks the
//! network, runs engines or measures. It starts on the first ask, so a
//! command that does none of that (`report`, `verify`, `store gc`, an
//! offline `lock`, …) never starts its threads.
//!
//! Code that runs on it never blocks on it again: it `.await`s. Library
//! functions that are not async take the [`Io`] and `block_on` its handle
//! from the command's own thread. The simulated engine (`perfpipe
//! sim-engine`) is a process of its own and keeps its own runtime.

use std::sync::{Arc, OnceLock};

use tokio::runtime::{Builder, Handle, Runtime};

/// The process's runtime, started on the first [`Io::handle`]; a clone is
/// the same runtime (the last clone, `cli::main`'s, stops it).
#[derive(Debug, Clone, Default)]
pub struct Io {
    runtime: Arc<OnceLock<Runtime>>,
}

impl Io {
    pub fn new() -> Self {
        Self::default()
    }

    /// The runtime's handle, starting it if this is the first ask.
    pub fn handle(&self) -> std::io::Result<Handle> {
        if let Some(runtime) = self.runtime.get() {
            return Ok(runtime.handle().clone());
        }
        let runtime = build()?;
        Ok(self.runtime.get_or_init(|| runtime).handle().clone())
    }
}

/// One worker per core this process may use (`taskset` narrows it): `bench`
/// sends from every core; engines and caches need far fewer.
fn build() -> std::io::Result<Runtime> {
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runtime_starts_on_the_first_ask_and_clones_share_it() {
        let io = Io::new();
        assert!(io.runtime.get().is_none(), "made before any ask");
        io.handle().unwrap();
        let made: *const Runtime = io.runtime.get().unwrap();
        let passed_down = io.clone();
        passed_down.handle().unwrap();
        assert_eq!(made, passed_down.runtime.get().unwrap() as *const Runtime);
    }
}
