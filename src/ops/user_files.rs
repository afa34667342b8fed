//! Files the user asked for (reports, charts, lockfiles): checked writable
//! before anything is measured, then written whole by one rename.

use std::path::Path;

use super::Error;
use crate::atomic_write::{AtomicWrite, Temp};

/// Fails, before anything is measured, where [`write_file`] would fail to
/// write `path` afterwards: a directory in its place, a parent that cannot be
/// made or written. Creates the parent, as the write would.
pub fn check_writable(path: &Path) -> Result<(), Error> {
    if path.is_dir() {
        return Err(Error::Write {
            path: path.display().to_string(),
            source: std::io::Error::new(std::io::ErrorKind::IsADirectory, "it is a directory"),
        });
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    check_writable_dir(dir).map_err(|e| match e {
        Error::Write { source, .. } => Error::Write {
            path: path.display().to_string(),
            source,
        },
        other => other,
    })
}

/// Fails where a file cannot be written into `dir` (made if missing).
pub fn check_writable_dir(dir: &Path) -> Result<(), Error> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let io = |source| Error::Write {
        path: dir.display().to_string(),
        source,
    };
    fs_err::create_dir_all(dir).map_err(io)?;
    // The probe is removed when dropped.
    tempfile::Builder::new()
        .prefix(".perfpipe-probe-")
        .tempfile_in(dir)
        .map_err(io)?;
    Ok(())
}

/// Writes a whole text file (reports), creating its directory.
pub fn write_text(path: &Path, text: &str) -> Result<(), Error> {
    write_file(path, text.as_bytes())
}

/// Writes a whole file the user asked for (a report, a chart, a lockfile),
/// creating its directory. The file is replaced by one rename, so a perfpipe
/// killed meanwhile leaves the old file or the new one, never half of one.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    USER_FILE.write(path, bytes).map_err(|source| Error::Write {
        path: path.display().to_string(),
        source,
    })
}

/// Temp files `.perfpipe-<pid>-<random>` beside the file, so that those
/// killed perfpipes leave do not linger beside a lockfile in `git status`.
const USER_FILE: AtomicWrite = AtomicWrite::new()
    .temp(Temp::Pid(".perfpipe-"))
    .mode(0o644)
    .synced();
