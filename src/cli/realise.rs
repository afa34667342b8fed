//! `perfpipe realise LAUNCH`: one engine launch from its material alone.

use super::args::RealiseArgs;
use crate::exit_code;
use crate::ops::Error;
use crate::ops::Stderr;
use crate::ops::realise::{self, Realised};
use crate::tokio_runtime::Io;

pub fn realise(args: &RealiseArgs, io: &Io) -> Result<u8, Error> {
    let mut display = super::progress::Display::new("      ");
    let realised = realise::realise(
        &args.launch,
        args.store.path(),
        args.engine_here,
        io,
        &Stderr,
        &mut |spec, event| super::run::progress(spec, &mut display, event),
    );
    // The bars go before anything else is written.
    drop(display);
    let (Realised { summary, plan }, store) = realised?;
    let stored = plan.runs.len() - plan.missing().len();
    eoutln!(
        "perfpipe: ran {} (failed: {}), {stored} already in the store; committed to `{}`",
        summary.succeeded + summary.failed,
        summary.failed,
        store.root().display()
    );
    for f in &summary.unstored {
        eoutln!(
            "perfpipe: `{}` × `{}` failed on every attempt for a cause that may pass, so nothing is stored: {}",
            f.step,
            f.workload,
            f.error
        );
    }
    Ok(if summary.failed + summary.unstored.len() > 0 {
        exit_code::RUNS_FAILED
    } else {
        exit_code::OK
    })
}
