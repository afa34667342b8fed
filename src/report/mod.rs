//! Rendering an analysis: markdown for people, JSON and CSV for tools, and
//! the chart the markdown links. (pure)

pub mod chart;
mod csv;
pub mod diff;
mod json;
mod markdown;
mod runs;
mod slo;

pub use csv::csv;
pub use json::json;
pub use markdown::markdown;
