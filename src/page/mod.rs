//! A published study page (markdown, as the GPUStack performance lab
//! publishes it) → the experiment a careful user writes. (pure)
//!
//! A pipeline, each stage pure:
//!
//! ```text
//! markdown  page → elements with lines (pulldown-cmark)          markdown.rs
//! read      elements → typed page                                read.rs, results.rs, command.rs, model.rs
//! cells     the page's printed numbers: table cells, deltas     cells.rs (spec::printed keeps them in the experiment)
//! bind      numbers → the configurations, workloads, sections    bind/
//!           and cases that printed them (every decision)
//! write     the bound page → experiment KDL, deterministic       write/
//! check     every printed number computed again from the blocks  analyze::page (report --published)
//! ```
//!
//! `perfpipe init --from-page` is [`init`]; the CLI only writes the file.

mod bind;
mod cells;
mod command;
#[cfg(test)]
mod fidelity;
mod markdown;
mod model;
#[cfg(test)]
mod mutate;
mod read;
mod results;
mod write;

use thiserror::Error;

pub use model::*;
pub use read::read;
pub use write::{Generated, write};

/// The largest page `init --from-page` reads: the published pages are tens
/// of kilobytes, and reading one takes some tens of times its size.
pub const MAX_PAGE_BYTES: u64 = 2 << 20;

/// A page that cannot be read: what and where.
#[derive(Debug, Error, PartialEq)]
pub enum PageError {
    #[error("line {line}: {message}")]
    Block { line: usize, message: String },
    #[error("line {line}: {what}")]
    Unexpected { line: usize, what: String },
    #[error("the page has no {what}")]
    Missing { what: &'static str },
}

impl PageError {
    /// The page line the error is about (1 when it is about the whole page).
    pub fn line(&self) -> usize {
        match self {
            Self::Block { line, .. } | Self::Unexpected { line, .. } => *line,
            Self::Missing { .. } => 1,
        }
    }
}

/// The experiment for a page: its KDL text and where `init` writes it by default.
pub fn init(page: &str) -> Result<Generated, PageError> {
    let page = read(page)?;
    Ok(write(&page))
}
