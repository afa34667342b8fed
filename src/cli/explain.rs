//! `perfpipe explain`: why each run is cached, failed or missing; for a
//! missing run, the nearest stored run and the fields that differ
//! (`ops::explain`).

use super::Stderr;
use super::args::ExplainArgs;
use crate::exit_code;
use crate::ops::Error;

pub fn explain(args: &ExplainArgs) -> Result<u8, Error> {
    let text = crate::ops::explain::explain(&args.selection(), args.step.as_deref(), &Stderr)?;
    out!("{text}");
    Ok(exit_code::OK)
}
