//! `perfpipe realise LAUNCH`: one engine launch from its material alone.

use super::CliError;
use super::args::RealiseArgs;
use crate::exit_code;
use crate::ops::realise::{self, Realised};
use crate::store::Store;

pub fn realise(args: &RealiseArgs) -> Result<u8, CliError> {
    let store = Store::open(args.store.path()).map_err(CliError::Store)?;
    let material = realise::read(&args.launch, &store)?;
    let exec = super::run::exec_defaults()?;
    eoutln!(
        "perfpipe: realising launch {} (`{}` {} on `{}`, {} run{}, runtime `{}`)",
        material.key.short(),
        material.launch.engine.engine,
        material.launch.engine.version,
        material.launch.engine.model.id,
        material.launch.runs.len(),
        if material.launch.runs.len() == 1 {
            ""
        } else {
            "s"
        },
        material.launch.runtime,
    );
    let mut display = super::progress::Display::new("      ");
    let realised = realise::execute(
        std::slice::from_ref(&material.launch),
        &store,
        &exec,
        None,
        &mut |spec, event| super::run::progress(spec, &mut display, event),
    );
    // The bars go before anything else is written.
    drop(display);
    let Realised { summary, plan } = realised?;
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
