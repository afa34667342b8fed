//! `perfpipe verify`: every stored result against its published expectation
//! (`ops::verify`); exit 4 when one is outside the tolerance or missing, or
//! nothing was measured.

use super::args::VerifyArgs;
use crate::exit_code;
use crate::ops::Error;
use crate::ops::verify::{Verdicts, VerifyOptions};

pub fn verify(args: &VerifyArgs) -> Result<u8, Error> {
    let verified = crate::ops::verify::verify(
        &args.selection(),
        &VerifyOptions {
            tolerance: args.tolerance,
            metrics: args.metrics.clone(),
        },
    )?;
    out!("{}", verified.table());
    for line in verified.summary() {
        eoutln!("{line}");
    }
    let Verdicts {
        outside, missing, ..
    } = verified.verdicts();
    Ok(if outside + missing > 0 || verified.nothing_measured() {
        exit_code::VERIFY_FAILED
    } else {
        exit_code::OK
    })
}
