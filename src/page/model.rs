//! What a published page says, typed; every element keeps its source line.

use crate::metrics::ParsedBlock;

/// A value and the page line it was read from.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct At<T> {
    pub line: usize,
    pub value: T,
}

impl<T> At<T> {
    pub fn new(line: usize, value: T) -> Self {
        Self { line, value }
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Page {
    /// The H1 ("Optimizing Qwen3-14B Throughput on NVIDIA A100 GPUs").
    pub title: At<String>,
    /// "Optimization Objective" text, where the page has one.
    pub objective: Option<At<String>>,
    /// "Model" as printed.
    pub model: Option<At<String>>,
    /// "Hardware" as printed.
    pub hardware: Option<At<String>>,
    /// "Engine Version": (engine as printed, version without its `v`).
    pub engines: Vec<At<(String, String)>>,
    /// The older pages' `vllm bench serve` commands ("Benchmark Script").
    pub bench_commands: Vec<At<Vec<String>>>,
    /// The older pages' "Benchmark Dataset" items, as printed.
    pub datasets: Vec<At<String>>,
    /// The newer pages' "Benchmark Profiles": name and `key: value` lines.
    pub profiles: Vec<At<Profile>>,
    /// "Experiment Results", section by section (with "Other Benchmark Cases").
    pub sections: Vec<Section>,
    /// "Summary of Optimization Options": header and rows of cells, as printed.
    pub summary: Option<At<Vec<At<Vec<String>>>>>,
    /// The conclusion's comparison table: header and rows, as printed.
    pub conclusion: Option<At<Vec<At<Vec<String>>>>>,
    /// The conclusion's "Serving Command", comment lines dropped, continuation joined.
    pub recommended: Option<At<String>>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Profile {
    pub name: String,
    pub fields: Vec<(String, String)>,
}

impl Profile {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Section {
    pub title: At<String>,
    /// "Other Benchmark Cases": the baseline and optimized configurations on every workload.
    pub other_cases: bool,
    pub configs: Vec<Config>,
    /// The section's own sentences: "Result: …", "- Summary: …", other remarks.
    pub notes: Vec<At<String>>,
    /// The bodies of its warning admonitions (`!!! warning`), one a string.
    pub warnings: Vec<At<String>>,
    /// Lines of its result blocks that are neither a block nor a caption.
    pub unplaced: Vec<At<String>>,
}

/// One measured configuration of a section.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Config {
    pub line: usize,
    /// The words before it ("vLLM", "TP+DP Attention", "#### SGLang").
    pub label: Option<String>,
    /// In "Other Benchmark Cases": which side it is.
    pub role: Option<Role>,
    /// The newer pages' "Profile: `ShareGPT`".
    pub profile: Option<String>,
    /// The serving script, as one command line (comments dropped).
    pub command: Option<At<String>>,
    /// The newer pages' "Backend Parameters", one a line.
    pub params: Option<At<Vec<String>>>,
    pub results: Vec<Outcome>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Baseline,
    Optimized,
}

/// One result of a configuration: a block, or a failure the page prints instead.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Block {
        line: usize,
        /// The `# …` comment above it (`# random 32K input`, `# --max-num-batched-tokens 4096`).
        label: Option<String>,
        block: ParsedBlock,
    },
    Failure {
        line: usize,
        label: Option<String>,
        error: String,
    },
}

impl Outcome {
    pub fn label(&self) -> Option<&str> {
        match self {
            Self::Block { label, .. } | Self::Failure { label, .. } => label.as_deref(),
        }
    }
    pub fn line(&self) -> usize {
        match self {
            Self::Block { line, .. } | Self::Failure { line, .. } => *line,
        }
    }
}
