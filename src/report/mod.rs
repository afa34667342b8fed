//! Rendering an analysis: markdown for people, JSON and CSV for tools, and
//! the chart the markdown links. (pure)

pub mod chart;
mod charts;
mod csv;
pub mod diff;
pub mod figures;
mod html;
mod inline;
mod json;
mod markdown;
pub mod plot;
mod runs;
mod search;
mod slo;

pub use charts::{ChartFile, Charts};
pub use csv::csv;
pub use html::{html, write_html_page};
pub use json::json;
pub use markdown::markdown;
