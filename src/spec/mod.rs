//! The experiment language: KDL v2 text → typed [`Spec`]. (pure)
//!
//! The language is documented in `docs/experiment-language.md`.

pub mod bounds;
mod diag;
mod excerpt;
mod model;
mod parse;
mod printed;
mod search;

pub use diag::{SpecDiagnostic, SpecErrors};
pub use model::*;
pub use parse::{SourceFile, dataset_file_span, names, parse};
pub use search::{SearchAxis, SearchDecl};
