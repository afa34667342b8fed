//! `perfpipe store verify`: every entry's key material re-hashed against its
//! name, every result parsed, every launch material and input re-hashed
//! against its name; damage listed with its path (`ops::store::verify`).
//! Exit 4 on damage.

use super::args::StoreVerifyArgs;
use crate::exit_code;
use crate::ops::Error;

pub fn verify(args: &StoreVerifyArgs) -> Result<u8, Error> {
    let check = crate::ops::store::verify::verify_store(args.store.path(), args.repair)?;
    for line in check.listing() {
        outln!("{line}");
    }
    for line in check.summary() {
        eoutln!("{line}");
    }
    Ok(if check.damaged() > 0 {
        exit_code::VERIFY_FAILED
    } else {
        exit_code::OK
    })
}
