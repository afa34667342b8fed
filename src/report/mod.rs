//! Rendering an analysis for people (markdown). (pure)

mod markdown;

pub use markdown::markdown;
