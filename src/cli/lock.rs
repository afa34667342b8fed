//! `perfpipe lock`: pin every input and write the lockfile.

use super::Stderr;
use super::args::LockArgs;
use crate::exit_code;
use crate::lock::Update;
use crate::ops::Error;
use crate::tokio_runtime::Io;

pub fn lock(args: &LockArgs, io: &Io) -> Result<u8, Error> {
    let update = match &args.update {
        None => Update::Nothing,
        Some(names) if names.is_empty() => Update::All,
        Some(names) => Update::Only(names.iter().cloned().collect()),
    };
    let state = crate::ops::lock::lock(&args.selection(), args.offline, update, io, &Stderr)?;
    Ok(if state.problems.is_empty() {
        exit_code::OK
    } else {
        exit_code::RUNS_FAILED
    })
}
