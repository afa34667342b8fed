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
/// process; no clock and no pid checks. Removed when dropped.
#[derive(Debug)]
pub struct OwnedDir {
    // Dropped first: the directory goes while its lock is still held.
    dir: tempfile::TempDir,
    _owner: std::fs::File,
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
            .tempdir_in(parent)?;
        let owner = open(&dir.path().join(OWNER))?;
        owner.lock()?;
        Ok(Self { dir, _owner: owner })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
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
