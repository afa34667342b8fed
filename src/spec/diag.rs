//! Diagnostics for experiment files: every problem in a file, each pointing into it.

use miette::{Diagnostic, NamedSource, SourceSpan};
use thiserror::Error;

/// One problem at one place in the file.
#[derive(Debug, Error, Diagnostic, Clone, PartialEq)]
#[error("{message}")]
#[diagnostic()]
pub struct SpecDiagnostic {
    pub message: String,
    #[label("{label}")]
    pub span: SourceSpan,
    pub label: String,
    #[help]
    pub help: Option<String>,
}

impl SpecDiagnostic {
    pub fn new(span: SourceSpan, message: impl Into<String>, label: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            span,
            label: label.into(),
            help: None,
        }
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

/// All problems found in one experiment file, reported together.
#[derive(Debug, Error, Diagnostic)]
#[error("{}", summary(&self.src, self.total))]
#[diagnostic()]
pub struct SpecErrors {
    #[source_code]
    pub src: NamedSource<String>,
    /// The first [`SpecErrors::SHOWN`] errors.
    #[related]
    pub errors: Vec<SpecDiagnostic>,
    pub total: usize,
    /// Says how many errors are not shown, if any are not.
    #[help]
    pub not_shown: Option<String>,
}

impl SpecErrors {
    /// Each error prints its line: a broken file of many errors on one long
    /// line would otherwise print gigabytes.
    pub const SHOWN: usize = 50;

    pub fn new(name: &str, text: String, mut errors: Vec<SpecDiagnostic>) -> Self {
        let total = errors.len();
        errors.truncate(Self::SHOWN);
        Self {
            src: NamedSource::new(name, text),
            errors,
            total,
            not_shown: (total > Self::SHOWN).then(|| {
                format!(
                    "the first {} are shown; fix them and run again to see the others",
                    Self::SHOWN
                )
            }),
        }
    }
}

fn summary(src: &NamedSource<String>, n: usize) -> String {
    let plural = if n == 1 { "" } else { "s" };
    format!("`{}` has {n} error{plural}", src.name())
}

/// The known name closest to `got`, if it is close enough to be a typo.
pub fn closest<'a>(got: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    known
        .into_iter()
        .map(|k| (strsim::jaro_winkler(got, k), k))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k)
}

/// `Some("did you mean `x`?")` when `got` is close to one of `known`.
pub fn did_you_mean<'a>(got: &str, known: impl IntoIterator<Item = &'a str>) -> Option<String> {
    closest(got, known).map(|k| format!("did you mean `{k}`?"))
}

/// The names a reader can pick from, as a hint.
pub fn one_of<'a>(known: impl IntoIterator<Item = &'a str>) -> String {
    let names: Vec<String> = known.into_iter().map(|k| format!("`{k}`")).collect();
    if names.is_empty() {
        "none is declared".to_owned()
    } else {
        format!("expected one of {}", names.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        assert_eq!(
            did_you_mean("worklaod", ["workload", "step", "sweep"]).as_deref(),
            Some("did you mean `workload`?")
        );
        assert_eq!(did_you_mean("zzz", ["workload", "step"]), None);
    }
}
