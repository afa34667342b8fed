//! How an error is printed: miette's own rendering, except that a related
//! diagnostic (one error of a file with several) is printed as an error of
//! its own. miette writes each as `Error: ` and then, with no error code
//! to follow it, its message on the next line: every related error began
//! with a line that said nothing.

use std::fmt;

use miette::{Diagnostic, LabeledSpan, ReportHandler, Severity, SourceCode};

/// Installs the handler once for the process; later calls do nothing.
pub fn install() {
    let _ = miette::set_hook(Box::new(|_| {
        Box::new(Handler(miette::MietteHandlerOpts::new().build()))
    }));
}

/// miette's handler, which renders related diagnostics one by one.
struct Handler(miette::MietteHandler);

impl ReportHandler for Handler {
    fn debug(&self, diagnostic: &dyn Diagnostic, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.render(diagnostic, None, f)
    }
}

impl Handler {
    /// `diagnostic` without its related ones, then each of them after an
    /// empty line (where miette writes its `Error: ` line), in the source
    /// of `diagnostic` when they have none of their own, as miette does.
    fn render(
        &self,
        diagnostic: &dyn Diagnostic,
        parent_src: Option<&dyn SourceCode>,
        f: &mut fmt::Formatter<'_>,
    ) -> fmt::Result {
        let alone = Alone {
            inner: diagnostic,
            src: diagnostic.source_code().or(parent_src),
        };
        self.0.debug(&alone, f)?;
        for related in diagnostic.related().into_iter().flatten() {
            writeln!(f)?;
            self.render(related, alone.src, f)?;
        }
        Ok(())
    }
}

/// A diagnostic without its related diagnostics, in a given source.
struct Alone<'a> {
    inner: &'a dyn Diagnostic,
    src: Option<&'a dyn SourceCode>,
}

impl fmt::Debug for Alone<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.inner, f)
    }
}

impl fmt::Display for Alone<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.inner, f)
    }
}

impl std::error::Error for Alone<'_> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner.source()
    }
}

impl Diagnostic for Alone<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.inner.code()
    }
    fn severity(&self) -> Option<Severity> {
        self.inner.severity()
    }
    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.inner.help()
    }
    fn url<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.inner.url()
    }
    fn source_code(&self) -> Option<&dyn SourceCode> {
        self.src
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        self.inner.labels()
    }
    fn diagnostic_source(&self) -> Option<&dyn Diagnostic> {
        self.inner.diagnostic_source()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error, Diagnostic)]
    #[error("`e.kdl` has 2 errors")]
    struct Several {
        #[related]
        errors: Vec<One>,
    }

    #[derive(Debug, thiserror::Error, Diagnostic)]
    #[error("error number {0}")]
    #[diagnostic(help("fix number {0}"))]
    struct One(u32);

    /// Each related error begins with its message, after an empty line:
    /// no `Error: ` line of its own.
    #[test]
    fn related_errors_begin_with_their_message() {
        let handler = Handler(
            miette::MietteHandlerOpts::new()
                .force_graphical(true)
                .color(false)
                .unicode(true)
                .terminal_links(false)
                .width(80)
                .build(),
        );
        struct Shown<'a>(&'a Handler, &'a dyn Diagnostic);
        impl fmt::Display for Shown<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.debug(self.1, f)
            }
        }
        let error = Several {
            errors: vec![One(1), One(2)],
        };
        let text = Shown(&handler, &error).to_string();
        assert!(!text.contains("Error:"), "{text}");
        let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
        assert_eq!(
            lines,
            [
                "  × `e.kdl` has 2 errors",
                "",
                "  × error number 1",
                "  help: fix number 1",
                "",
                "  × error number 2",
                "  help: fix number 2",
            ],
            "{text}"
        );
    }
}
