//! `perfpipe fetch`: the pinned models and images onto this machine.

use super::args::FetchArgs;
use super::{Stderr, runtime_of};
use crate::exit_code;
use crate::ops::Error;
use crate::ops::Selection;
use crate::tokio_runtime::Io;

pub fn fetch(args: &FetchArgs, io: &Io) -> Result<u8, Error> {
    let common = Selection {
        experiment: args.experiment.clone(),
        runtime: runtime_of(args.runtime),
        store: "store".into(),
        samples: 1,
        retry_failed: false,
        fresh_engine: false,
        max_prompts: None,
        lockfile: args.lockfile.clone(),
        steps: Vec::new(),
    };
    crate::ops::fetch::fetch(&common, io, &Stderr)?;
    Ok(exit_code::OK)
}
