//! OS file locks (std's `File::lock`), released when the file is closed,
//! also when the process dies: per-key, per-GPU and per-blob locks.

use std::io;
use std::path::Path;

/// Opens (creating it and its directory) the file whose lock is taken;
/// never truncates, as another process may hold it.
pub fn open(path: &Path) -> io::Result<std::fs::File> {
    if let Some(dir) = path.parent() {
        fs_err::create_dir_all(dir)?;
    }
    Ok(fs_err::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)?
        .into_parts()
        .0)
}
