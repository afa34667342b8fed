//! Store maintenance, the operations of `perfpipe store`: `gc` (with the
//! roots that decide what it keeps), `verify` and `path`.

use std::path::Path;

use crate::ops::Error;
use crate::store::Store;

pub mod gc;
pub mod gc_report;
pub mod paths;
pub mod roots;
pub mod verify;

/// The store at `path`, which must exist: a missing one is more likely a
/// wrong directory than an empty store.
pub fn existing(path: &Path) -> Result<Store, Error> {
    let store = Store::open(path).map_err(Error::Store)?;
    if !path.is_dir() {
        return Err(Error::Usage {
            message: format!("there is no store at `{}`", path.display()),
            hint: "run it in the project directory, or name the store with `--store DIR`".into(),
        });
    }
    Ok(store)
}
