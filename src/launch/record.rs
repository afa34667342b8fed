//! What a run records of the engine launch that served it. (pure)

use serde::{Deserialize, Serialize};

/// Where a run's numbers came from, engine-wise (in `result.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchRecord {
    /// The launch, named after the first run it served.
    pub id: String,
    /// 1 for the first run on this engine, 2 for the next, ...
    pub position: usize,
    /// `fresh` (first run), `reset` (prefix cache reset before this run) or
    /// `warm` (the engine offers no way to reset it).
    pub prefix_cache: String,
}
