//! The typed page → the experiment's KDL text, deterministic (the same page
//! gives the same bytes) and in the style of the hand-written experiments.
//!
//! [`super::bind`] makes every decision (names, workloads, steps,
//! comparisons); [`render`] only prints them.

mod render;

use super::model::Page;

/// What `init` writes: the experiment's text and its default file name.
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    /// `<model>-<hardware>[-latency]`: the experiment's name and file stem.
    pub name: String,
    pub kdl: String,
    /// How many result blocks became expectations, and failures `expect-failure`.
    pub blocks: usize,
    pub failures: usize,
    pub todos: usize,
}

impl Generated {
    /// `experiments/<name>.kdl`.
    pub fn default_path(&self) -> String {
        format!("experiments/{}.kdl", self.name)
    }
}

/// The experiment for `page`.
pub fn write(page: &Page) -> Generated {
    let draft = super::bind::draft(page);
    let kdl = render::render(&draft);
    Generated {
        name: draft.name.clone(),
        blocks: draft.blocks,
        failures: draft.failures,
        todos: kdl.matches("// TODO:").count(),
        kdl,
    }
}
