//! `perfpipe init --from-page`: reads the page, writes the experiment the
//! library makes of it (never over an existing file without `force`).

use std::path::{Path, PathBuf};

use super::user_files::write_file;
use super::{Error, PageReport};
use crate::page::{self, Generated};

/// What `init` is asked to do.
#[derive(Debug, Clone)]
pub struct InitOptions {
    /// The study page (markdown).
    pub from_page: PathBuf,
    /// Where to write the experiment (default: `experiments/<name>.kdl`).
    pub output: Option<PathBuf>,
    /// Replace an existing file.
    pub force: bool,
}

/// Writes the experiment of `options.from_page`; returns where, and what it holds.
pub fn init(options: &InitOptions) -> Result<(PathBuf, Generated), Error> {
    let path = options.from_page.display().to_string();
    let text = read_page(&options.from_page)?;
    let generated = page::init(&text).map_err(|e| {
        let span = line_span(&text, e.line());
        Error::Page(Box::new(PageReport {
            path: path.clone(),
            message: e.to_string(),
            src: miette::NamedSource::new(path.clone(), text.clone()),
            span,
        }))
    })?;
    let out = options
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(generated.default_path()));
    if out.exists() && !options.force {
        return Err(Error::Usage {
            message: format!("`{}` exists", out.display()),
            hint: "pass `--force` to replace it, or `-o FILE` to write elsewhere".into(),
        });
    }
    write_file(&out, generated.kdl.as_bytes())?;
    Ok((out, generated))
}

/// The page's text, refused past [`page::MAX_PAGE_BYTES`] before it is read whole.
fn read_page(path: &Path) -> Result<String, Error> {
    let refused = |message: String| Error::Usage {
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
