//! `perfpipe init --from-page`: reads the page, writes the experiment the
//! library makes of it (never over an existing file without `--force`).

use std::path::{Path, PathBuf};

use super::args::InitArgs;
use super::{CliError, write_file};
use crate::exit_code;
use crate::ops::PageReport;
use crate::page;
use crate::plural::count;

pub fn init(args: &InitArgs) -> Result<u8, CliError> {
    let path = args.from_page.display().to_string();
    let text = read_page(&args.from_page)?;
    let generated = page::init(&text).map_err(|e| {
        let span = line_span(&text, e.line());
        CliError::Page(Box::new(PageReport {
            path: path.clone(),
            message: e.to_string(),
            src: miette::NamedSource::new(path.clone(), text.clone()),
            span,
        }))
    })?;
    let out = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(generated.default_path()));
    if out.exists() && !args.force {
        return Err(CliError::Usage {
            message: format!("`{}` exists", out.display()),
            hint: "pass `--force` to replace it, or `-o FILE` to write elsewhere".into(),
        });
    }
    write_file(&out, generated.kdl.as_bytes())?;
    outln!(
        "wrote {}: {} as expectations, {}, {} to review",
        out.display(),
        count(generated.blocks, "result block", "result blocks"),
        count(generated.failures, "failure", "failures"),
        count(generated.todos, "TODO comment", "TODO comments")
    );
    outln!("next: perfpipe plan {} --runtime sim", out.display());
    Ok(exit_code::OK)
}

/// The page's text, refused past [`page::MAX_PAGE_BYTES`] before it is read whole.
fn read_page(path: &Path) -> Result<String, CliError> {
    let refused = |message: String| CliError::Usage {
        message,
        hint: "`--from-page` names the page's markdown file".into(),
    };
    let bytes = crate::regular_file::read_at_most(path, page::MAX_PAGE_BYTES).map_err(|e| {
        refused(match e.kind() {
            std::io::ErrorKind::FileTooLarge => format!(
                "`{}` is larger than {} MiB, the most a page may be",
                path.display(),
                page::MAX_PAGE_BYTES >> 20
            ),
            _ => format!("cannot read `{}`: {e}", path.display()),
        })
    })?;
    String::from_utf8(bytes)
        .map_err(|e| refused(format!("`{}` is not UTF-8 text: {e}", path.display())))
}

/// The byte span of line `line` (from 1) of `text`.
fn line_span(text: &str, line: usize) -> miette::SourceSpan {
    let start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    let len = text[start.min(text.len())..]
        .find('\n')
        .unwrap_or(text.len() - start.min(text.len()));
    (start.min(text.len()), len).into()
}
