//! `perfpipe explain`: why each run is cached, failed or missing; for a
//! missing run, the nearest stored run and the fields that differ
//! (`ops::explain`).

use super::args::ExplainArgs;
use super::{CliError, Stderr};
use crate::exit_code;

pub fn explain(args: &ExplainArgs) -> Result<u8, CliError> {
    let text = crate::ops::explain::explain(&args.common(), args.step.as_deref(), &Stderr)?;
    out!("{text}");
    Ok(exit_code::OK)
}
