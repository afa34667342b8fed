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

/// Writes the file that `write` makes at `path` as [`write_file`] does,
/// unless the file there holds it already (a no-op `run` leaves a report as
/// it was). What `write` makes goes to the temp file and is compared with
/// the file a block at a time as it is made, so a large report is never
/// held whole.
pub fn write_unless_held(
    path: &Path,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<(), Error> {
    use std::io::Write;
    let io = |source| Error::Write {
        path: path.display().to_string(),
        source,
    };
    let mut pending = USER_FILE.begin(path).map_err(io)?;
    let mut held = crate::regular_file::Compare::new(path);
    {
        let mut both = std::io::BufWriter::with_capacity(
            64 << 10,
            Both {
                file: pending.file(),
                held: &mut held,
            },
        );
        write(&mut both).map_err(io)?;
        both.flush().map_err(io)?;
    }
    if !held.holds() {
        pending.commit().map_err(io)?;
    }
    Ok(())
}

/// Bytes written to a temp file and compared with the file in its place.
struct Both<'a> {
    file: &'a mut std::fs::File,
    held: &'a mut crate::regular_file::Compare,
}

impl std::io::Write for Both<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.file.write_all(bytes)?;
        self.held.write_all(bytes)?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// Temp files `.perfpipe-<pid>-<random>` beside the file, so that those
/// killed perfpipes leave do not linger beside a lockfile in `git status`.
const USER_FILE: AtomicWrite = AtomicWrite::new()
    .temp(Temp::Pid(".perfpipe-"))
    .mode(0o644)
    .synced();

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use super::*;

    #[test]
    fn a_file_made_again_as_it_was_is_left_as_it_was_and_a_changed_one_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.html");
        // Made in pieces, longer than a block: a page written as it is made.
        let page = |last: u8| {
            move |out: &mut dyn std::io::Write| {
                for n in 0..100_000u32 {
                    write!(out, "<tr><td>{n}</td></tr>")?;
                }
                out.write_all(&[last])
            }
        };
        write_unless_held(&path, page(b'a')).unwrap();
        let identity = || {
            let m = std::fs::metadata(&path).unwrap();
            (m.ino(), m.mtime(), m.mtime_nsec())
        };
        let written = identity();
        write_unless_held(&path, page(b'a')).unwrap();
        assert_eq!(identity(), written, "the same page was written again");
        write_unless_held(&path, page(b'b')).unwrap();
        assert_ne!(identity(), written);
        assert_eq!(std::fs::read(&path).unwrap().last(), Some(&b'b'));
        // No temp file is left beside it.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
