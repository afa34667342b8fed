//! Files the user asked for (reports, charts, lockfiles): checked writable
//! before anything is measured, then written whole by one rename.

use std::path::Path;

use super::Error;

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
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let io = |source| Error::Write {
        path: path.display().to_string(),
        source,
    };
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs_err::create_dir_all(dir).map_err(io)?;
    remove_dead_temp_files(dir);
    let mut file = tempfile::Builder::new()
        .prefix(&format!("{TEMP_PREFIX}{}-", std::process::id()))
        .permissions(std::fs::Permissions::from_mode(0o644))
        .tempfile_in(dir)
        .map_err(io)?;
    file.write_all(bytes).map_err(io)?;
    file.as_file().sync_all().map_err(io)?;
    file.persist(path).map_err(|e| io(e.error))?;
    Ok(())
}

/// Temp files of [`write_file`]: `.perfpipe-<pid>-<random>` beside the file.
const TEMP_PREFIX: &str = ".perfpipe-";

/// Removes the temp files that killed perfpipes left in `dir` (their pid is
/// gone), so that none lingers beside a lockfile in `git status`. A reused
/// pid only keeps one longer; a live writer's file is never touched.
fn remove_dead_temp_files(dir: &Path) {
    let Ok(entries) = fs_err::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(|e| e.ok()) {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(TEMP_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: signal 0 only asks whether the process exists.
        let gone = pid > 0
            && unsafe { libc::kill(pid, 0) } == -1
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone {
            let _ = fs_err::remove_file(entry.path());
        }
    }
}
