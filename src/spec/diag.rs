//! Diagnostics for experiment files: every problem in a file, each pointing into it.

use miette::{Diagnostic, SourceSpan};
use thiserror::Error;

use super::excerpt::Excerpt;

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
#[error("{}", summary(&self.src, self.total()))]
#[diagnostic()]
pub struct SpecErrors {
    #[source_code]
    src: std::sync::Arc<Excerpt>,
    /// The first [`SpecErrors::SHOWN`] errors, their spans in the file.
    pub errors: Vec<SpecDiagnostic>,
    /// The same, their spans in `src`'s clipped text.
    #[related]
    shown: Vec<SpecDiagnostic>,
    #[help]
    pub not_shown: Option<NotShown>,
}

/// How many errors past [`SpecErrors::SHOWN`] are not shown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NotShown(pub usize);

impl std::fmt::Display for NotShown {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(
            f,
            "the first {} are shown; fix them and run again to see the other {}",
            SpecErrors::SHOWN,
            self.0
        )
    }
}

impl SpecErrors {
    /// Each error prints its line: a broken file of many errors on one long
    /// line would otherwise print gigabytes.
    pub const SHOWN: usize = 50;

    pub fn new(name: &str, text: String, mut errors: Vec<SpecDiagnostic>) -> Self {
        let hidden = errors.len().saturating_sub(Self::SHOWN);
        errors.truncate(Self::SHOWN);
        let spans: Vec<SourceSpan> = errors.iter().map(|e| e.span).collect();
        let src = std::sync::Arc::new(Excerpt::new(name, text, &spans));
        let shown = errors
            .iter()
            .map(|e| SpecDiagnostic {
                span: src.to_view(e.span),
                ..e.clone()
            })
            .collect();
        Self {
            src,
            errors,
            shown,
            not_shown: (hidden > 0).then_some(NotShown(hidden)),
        }
    }

    /// Every error found, shown or not.
    pub fn total(&self) -> usize {
        self.errors.len() + self.not_shown.map_or(0, |n| n.0)
    }
}

fn summary(src: &Excerpt, n: usize) -> String {
    format!(
        "`{}` has {}",
        src.name(),
        crate::plural::count(n, "error", "errors")
    )
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

    #[test]
    fn past_fifty_errors_the_rest_are_counted_not_shown() {
        let text = "x\n".repeat(60);
        let errors: Vec<SpecDiagnostic> = (0..60)
            .map(|i| SpecDiagnostic::new(SourceSpan::from(2 * i..2 * i + 1), "bad", "here"))
            .collect();
        let report = SpecErrors::new("f.kdl", text, errors);
        assert_eq!((report.errors.len(), report.total()), (50, 60));
        assert_eq!(report.to_string(), "`f.kdl` has 60 errors");
        assert_eq!(
            report.not_shown.unwrap().to_string(),
            "the first 50 are shown; fix them and run again to see the other 10"
        );
        let few = SpecErrors::new("f.kdl", "x".into(), Vec::new());
        assert!(few.not_shown.is_none());
    }
}
