//! `perfpipe init --from-page`: reads the page, writes the experiment the
//! library makes of it (never over an existing file without `--force`).

use std::path::PathBuf;

use super::args::InitArgs;
use super::{CliError, write_file};
use crate::exit_code;
use crate::ops::PageReport;
use crate::page;
use crate::plural::count;

pub fn init(args: &InitArgs) -> Result<u8, CliError> {
    let path = args.from_page.display().to_string();
    let text = fs_err::read_to_string(&args.from_page).map_err(|e| CliError::Usage {
        message: e.to_string(),
        hint: "`--from-page` names the page's markdown file".into(),
    })?;
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
