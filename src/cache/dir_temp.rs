//! Temp files of a directory cache: each file a push writes is first a
//! `.perfpipe-tmp-<random>` beside its place, locked while its writer lives,
//! then renamed into place. A push killed meanwhile leaves one; the next
//! push to that directory removes those whose lock is free (their writer
//! is gone), and nothing else: a name perfpipe owns, proven dead, as with
//! the store's temp dirs.

use std::collections::BTreeSet;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// The prefix of every temp file perfpipe writes in a directory cache.
pub const PREFIX: &str = ".perfpipe-tmp-";

/// A temp file younger than this is never removed: its writer may not have
/// locked it yet.
const SETTLED: Duration = Duration::from_secs(10);

/// Writes `bytes` to `path`, whole or not at all (a reader never sees half
/// a file), through a locked temp file of perfpipe's own name. The first
/// write of this process into a directory removes that directory's dead
/// temp files first.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().map(PathBuf::from).unwrap_or_default();
    fs_err::create_dir_all(&dir)?;
    remove_dead_once(&dir);
    let mut file = tempfile::Builder::new().prefix(PREFIX).tempfile_in(&dir)?;
    file.as_file().lock()?;
    file.write_all(bytes)?;
    file.as_file().sync_all()?;
    // The lock goes with the file handle, after the rename.
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// [`remove_dead`] of `dir`, once per process (a push writes many files
/// into one directory; listing it once is enough).
fn remove_dead_once(dir: &Path) {
    static CLEANED: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
    let first = CLEANED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(dir.to_owned());
    if first {
        // Best effort: a leftover that cannot be removed only costs space.
        let _ = remove_dead(dir);
    }
}

/// Removes the temp files of `dir` whose writer is gone: perfpipe's name,
/// a regular file (not a link), settled, and its lock free. How many.
pub fn remove_dead(dir: &Path) -> std::io::Result<usize> {
    let mut removed = 0;
    for child in fs_err::read_dir(dir)? {
        let child = child?;
        let owned = child
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(PREFIX));
        if !owned || !child.file_type()?.is_file() {
            continue;
        }
        let path = child.path();
        let settled = child
            .metadata()?
            .modified()?
            .elapsed()
            .is_ok_and(|age| age >= SETTLED);
        if !settled {
            continue;
        }
        let file = match std::fs::OpenOptions::new().write(true).open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        // Held: its writer lives. Taken: the writer died; ours while removing.
        if file.try_lock().is_ok() {
            match fs_err::remove_file(&path) {
                Ok(()) => removed += 1,
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn age(path: &Path) {
        let old = std::time::UNIX_EPOCH + Duration::from_secs(crate::clock::unix_now() - 60);
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }

    fn create(path: &Path) {
        std::fs::File::options()
            .write(true)
            .create_new(true)
            .open(path)
            .and_then(|mut f| f.write_all(b"x"))
            .unwrap();
    }

    #[test]
    fn only_perfpipes_dead_settled_temp_files_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name);
        // A push killed while writing: its temp file, unlocked.
        for name in [
            ".perfpipe-tmp-dead",
            ".tmpAbC123",
            "blob",
            ".perfpipe-tmp-young",
        ] {
            create(&path(name));
        }
        for name in [".perfpipe-tmp-dead", ".tmpAbC123", "blob"] {
            age(&path(name));
        }
        // A live writer's, locked.
        create(&path(".perfpipe-tmp-alive"));
        age(&path(".perfpipe-tmp-alive"));
        let alive = std::fs::File::open(path(".perfpipe-tmp-alive")).unwrap();
        alive.lock().unwrap();
        // A link with perfpipe's name is not perfpipe's file.
        std::os::unix::fs::symlink(path("blob"), path(".perfpipe-tmp-link")).unwrap();

        assert_eq!(remove_dead(dir.path()).unwrap(), 1);
        let mut left: Vec<String> = fs_err::read_dir(dir.path())
            .unwrap()
            .map(|c| c.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                ".perfpipe-tmp-alive",
                ".perfpipe-tmp-link",
                ".perfpipe-tmp-young",
                ".tmpAbC123",
                "blob"
            ]
        );
        drop(alive);
        assert_eq!(
            remove_dead(dir.path()).unwrap(),
            1,
            "its writer is gone now"
        );
    }

    #[test]
    fn a_write_leaves_only_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("blobs/sha256/abc");
        write_atomic(&target, b"blob").unwrap();
        assert_eq!(fs_err::read(&target).unwrap(), b"blob");
        assert_eq!(
            fs_err::read_dir(target.parent().unwrap()).unwrap().count(),
            1
        );
    }
}
