//! Free disk space where the cache is (or will be), from `statvfs`.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Bytes an unprivileged process may still write on the filesystem holding
/// `dir`, measured at `dir` or, while it does not exist yet, at its nearest
/// existing ancestor (returned with the number).
pub fn free_bytes(dir: &Path) -> io::Result<(PathBuf, u64)> {
    let mut at = dir;
    while !at.exists() {
        match at.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => at = parent,
            _ => {
                at = Path::new(".");
                break;
            }
        }
    }
    let path = CString::new(at.as_os_str().as_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    // SAFETY: a valid NUL-terminated path and a zeroed struct statvfs fills.
    let stat = unsafe {
        let mut stat: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(path.as_ptr(), &mut stat) != 0 {
            return Err(io::Error::last_os_error());
        }
        stat
    };
    #[allow(
        clippy::unnecessary_cast,
        reason = "the fields' types differ between targets"
    )]
    let free = (stat.f_bavail as u64).saturating_mul(stat.f_frsize as u64);
    Ok((at.to_path_buf(), free))
}

#[cfg(test)]
mod tests {
    #[test]
    fn measures_the_nearest_existing_directory() {
        let dir = tempfile::tempdir().unwrap();
        let (at, free) = super::free_bytes(&dir.path().join("not/yet")).unwrap();
        assert_eq!(at, dir.path());
        assert!(free > 0);
    }
}
