//! `perfpipe store path EXPERIMENT [STEP [WORKLOAD]]`: where each run's
//! files are (`ops::store::paths`), one per line in tab-separated columns
//! (step, workload, kind, path), for scripts and for reading a failure's log.

use super::args::StorePathArgs;
use crate::exit_code;
use crate::ops::Error;

pub fn path(args: &StorePathArgs) -> Result<u8, Error> {
    let found = crate::ops::store::paths::run_files(
        &args.selection(),
        args.step.as_deref(),
        args.workload.as_deref(),
    )?;
    for f in &found.files {
        outln!(
            "{}\t{}\t{}\t{}",
            f.step,
            f.workload,
            f.kind,
            f.path.display()
        );
    }
    if !found.unstored.is_empty() {
        eoutln!(
            "perfpipe: nothing stored under `{}` for {} (`perfpipe run` measures them; `--runtime` selects another runtime's runs)",
            found.runtime.name(),
            found.unstored.join(", "),
        );
    }
    Ok(exit_code::OK)
}
