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

/// A directory owned by this process for its life: it holds `owner.lock`
/// inside, locked. The OS releases the lock when the process dies (kill -9,
/// power loss), so a directory whose lock can be taken belongs to a dead
/// process; no clock and no pid checks. Removed when dropped, by
/// [`remove_owned`], while its lock is still held.
#[derive(Debug)]
pub struct OwnedDir {
    dir: std::path::PathBuf,
    _owner: std::fs::File,
}

impl Drop for OwnedDir {
    fn drop(&mut self) {
        // Runs before the fields drop: the lock is held throughout.
        let _ = remove_owned(&self.dir);
    }
}

/// Deletes an owned directory, its `owner.lock` last and then the directory:
/// a deletion cut short (kill -9 of the owner on its way out, or of a
/// cleaner) leaves the lock file, so the next cleaner still knows the
/// directory for perfpipe's and finishes it. (A directory without its lock
/// file is one only ever empty: see [`owner`].) What is already gone is fine.
pub fn remove_owned(dir: &Path) -> io::Result<()> {
    let gone = |result: io::Result<()>| match result {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    };
    let entries = match std::fs::read_dir(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        entries => entries?,
    };
    for entry in entries {
        let entry = entry?;
        if entry.file_name() == OWNER {
            continue;
        }
        let path = entry.path();
        // Not followed: a link inside is removed as a link.
        gone(if entry.file_type()?.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        })?;
    }
    gone(std::fs::remove_file(dir.join(OWNER)))?;
    gone(std::fs::remove_dir(dir))
}

/// The lock file inside an [`OwnedDir`].
const OWNER: &str = "owner.lock";

/// Who owns a directory under the [`OwnedDir`] scheme.
#[derive(Debug)]
pub enum Owner {
    Alive,
    /// Its process is gone; the lock, if there was one, is held now, so no
    /// other cleaner works on the directory at the same time.
    Dead(Option<std::fs::File>),
}

impl OwnedDir {
    /// Creates `parent/<prefix><pid>-<random>/` and locks it. `order` is
    /// held meanwhile (and by [`owner`]'s callers while they pick dead
    /// directories), so a directory is never taken for dead in the moment
    /// between its creation and its lock.
    pub fn create(parent: &Path, order: &Path, prefix: &str) -> io::Result<Self> {
        fs_err::create_dir_all(parent)?;
        let order = open(order)?;
        order.lock()?;
        let dir = tempfile::Builder::new()
            .prefix(&format!("{prefix}{}-", std::process::id()))
            .tempdir_in(parent)?
            // Deleted by `Drop for OwnedDir`, its lock file last.
            .keep();
        let owner = open(&dir.join(OWNER))?;
        owner.lock()?;
        Ok(Self { dir, _owner: owner })
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }
}

/// Whether the process owning `dir` lives. Call it holding the `order` lock
/// the directory was created under: a directory without its lock file then
/// died before locking it.
pub fn owner(dir: &Path) -> io::Result<Owner> {
    let file = match fs_err::File::open(dir.join(OWNER)) {
        Ok(file) => file.into_parts().0,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Owner::Dead(None)),
        Err(e) => return Err(e),
    };
    match file.try_lock() {
        Ok(()) => Ok(Owner::Dead(Some(file))),
        Err(std::fs::TryLockError::WouldBlock) => Ok(Owner::Alive),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deletion cut short keeps the lock file: simulated by removing the
    /// rest as `remove_owned` does first, the directory is still claimable
    /// as a dead owner's, and a second call finishes it.
    #[test]
    #[expect(
        clippy::disallowed_methods,
        reason = "the test lays out what a dead process left"
    )]
    fn an_owned_dir_loses_its_lock_file_last() {
        let parent = tempfile::tempdir().unwrap();
        let made = OwnedDir::create(parent.path(), &parent.path().join("order"), "proc-").unwrap();
        let dir = made.path().to_owned();
        std::fs::create_dir_all(dir.join("sample-x/logs")).unwrap();
        std::fs::write(dir.join("sample-x/logs/engine.log"), "loading").unwrap();
        assert!(matches!(owner(&dir).unwrap(), Owner::Alive));
        drop(made);
        assert!(!dir.exists(), "dropped, it is gone");

        // A dead owner's directory, half deleted: its lock file is there.
        std::fs::create_dir_all(dir.join("sample-y")).unwrap();
        std::fs::write(dir.join(OWNER), "").unwrap();
        assert!(matches!(owner(&dir).unwrap(), Owner::Dead(Some(_))));
        remove_owned(&dir).unwrap();
        assert!(!dir.exists());
        remove_owned(&dir).unwrap();
    }
}
