//! `perfpipe report`: the report from the store or the published numbers.

use super::args::{ReportArgs, ReportFormat};
use crate::exit_code;
use crate::ops::Error;
use crate::ops::report::{Format, MadeFrom, Rendered};
use crate::ops::user_files::write_text;

pub fn report(args: &ReportArgs) -> Result<u8, Error> {
    let format = match args.format {
        ReportFormat::Md => Format::Md,
        ReportFormat::Html => Format::Html,
        ReportFormat::Json => Format::Json,
        ReportFormat::Csv => Format::Csv,
    };
    let Rendered {
        text,
        to_write,
        made_from,
    } = crate::ops::report::report(
        &args.selection(),
        args.published,
        format,
        args.out.as_deref(),
        &super::Stderr,
    )?;
    out!("{text}");
    if let Some(path) = to_write {
        write_text(&path, &text)?;
    }
    let MadeFrom {
        loaded,
        plan,
        stored,
        analysis,
    } = made_from;
    super::left_to_exit((plan, stored, analysis));
    super::left_to_exit_loaded(loaded);
    Ok(exit_code::OK)
}
