//! `perfpipe store gc [--dry-run] [--all] [FILE...]`: removes the entries
//! no experiment and no lockfile reaches (once 7 days old, or all), the
//! launch material and inputs no kept run needs, damage,
//! quarantine and the temp dirs of killed runs, saying what each was and why
//! it goes; `--dry-run` also says why each entry stays.

use super::args::StoreGcArgs;
use crate::exit_code;
use crate::ops::Error;
use crate::ops::store::gc::GcOptions;
use crate::ops::store::gc_report::removal_lines;

pub fn gc(args: &StoreGcArgs) -> Result<u8, Error> {
    let collected = crate::ops::store::gc::gc(
        &GcOptions {
            store: args.store.path().to_owned(),
            roots: args.roots.clone(),
            dry_run: args.dry_run,
            all: args.all,
        },
        &mut |item, removal, roots| outln!("{}", removal_lines(item, removal, roots)),
    )?;
    for lines in collected.listing() {
        outln!("{lines}");
    }
    for line in collected.summary() {
        eoutln!("{line}");
    }
    Ok(exit_code::OK)
}
