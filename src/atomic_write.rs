//! The one atomic write: a whole file written through a temp file beside
//! it, then renamed into place, so that a reader, or a perfpipe killed
//! meanwhile, finds the old file or the new one, never half of one.
//!
//! What differs between the places that write is chosen on [`AtomicWrite`]:
//! whether the bytes are fsynced before the rename (a report, a cache's
//! blob) or not (a memory that only saves work), the file's mode, whether
//! its directory is made, and how the temp file is named ([`Temp`]), which
//! decides who may remove what a killed writer left: perfpipe removes only
//! a file it can prove it made and whose writer is gone.

use std::collections::BTreeSet;
use std::io::{self, ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// How a write names its temp file, and so what becomes of a killed
/// writer's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Temp {
    /// tempfile's `.tmp<random>`: a killed writer's stays (in a directory
    /// of perfpipe's own that nothing lists as content).
    Anonymous,
    /// `<prefix><random>`: recognisable, and nothing removes it here (its
    /// directory goes as a whole).
    Prefixed(&'static str),
    /// `<prefix><pid>-<random>`: each write into the directory first
    /// removes the ones whose process is gone (files in the user's tree,
    /// written on one machine). A reused pid only keeps one longer.
    Pid(&'static str),
    /// `<prefix><random>`, locked while written: the first write of this
    /// process into a directory removes the ones whose lock is free (a
    /// directory shared between machines, where a pid proves nothing).
    Locked(&'static str),
}

/// How to write a file atomically; [`AtomicWrite::write`] writes it.
#[derive(Debug, Clone, Copy)]
pub struct AtomicWrite {
    temp: Temp,
    synced: bool,
    mode: Option<u32>,
    make_dir: bool,
}

impl Default for AtomicWrite {
    fn default() -> Self {
        Self::new()
    }
}

impl AtomicWrite {
    /// An anonymous temp file, not fsynced, tempfile's mode (0600), the
    /// directory made when missing.
    pub const fn new() -> Self {
        Self {
            temp: Temp::Anonymous,
            synced: false,
            mode: None,
            make_dir: true,
        }
    }

    /// Names the temp file (and so its cleaning) as `temp` says.
    pub const fn temp(self, temp: Temp) -> Self {
        Self { temp, ..self }
    }

    /// Fsyncs the bytes before the rename: after a power loss the file is
    /// the old one or the whole new one.
    pub const fn synced(self) -> Self {
        Self {
            synced: true,
            ..self
        }
    }

    /// The written file's permission bits.
    pub const fn mode(self, mode: u32) -> Self {
        Self {
            mode: Some(mode),
            ..self
        }
    }

    /// Writes only into a directory that exists (one owned by something
    /// else, which must not be made again once gone).
    pub const fn in_existing_dir(self) -> Self {
        Self {
            make_dir: false,
            ..self
        }
    }

    /// Writes `bytes` to `path`, whole or not at all.
    pub fn write(self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let mut pending = self.begin(path)?;
        pending.file().write_all(bytes)?;
        pending.commit()
    }

    /// Starts writing `path` through a temp file beside it: what is written
    /// to [`Pending::file`] (streamed, hashed on the way) becomes `path` at
    /// [`Pending::commit`]; dropped uncommitted, the temp file is removed.
    pub fn begin(self, path: &Path) -> io::Result<Pending> {
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if self.make_dir {
            fs_err::create_dir_all(dir)?;
        }
        self.begin_in(path, dir)
    }

    /// [`AtomicWrite::begin`] with the temp file in `temp_dir` (on the same
    /// file system), for a directory whose every entry must be whole (a
    /// store's content, named by its hash).
    pub fn begin_in(self, path: &Path, temp_dir: &Path) -> io::Result<Pending> {
        let pid_prefix;
        let mut builder = tempfile::Builder::new();
        match self.temp {
            Temp::Anonymous => {}
            Temp::Prefixed(prefix) => {
                builder.prefix(prefix);
            }
            Temp::Pid(prefix) => {
                remove_dead_by_pid(temp_dir, prefix);
                pid_prefix = format!("{prefix}{}-", std::process::id());
                builder.prefix(&pid_prefix);
            }
            Temp::Locked(prefix) => {
                remove_dead_by_lock_once(temp_dir, prefix);
                builder.prefix(prefix);
            }
        }
        if let Some(mode) = self.mode {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(mode));
        }
        let file = builder.tempfile_in(temp_dir)?;
        if matches!(self.temp, Temp::Locked(_)) {
            file.as_file().lock()?;
        }
        Ok(Pending {
            file,
            path: path.to_owned(),
            synced: self.synced,
        })
    }
}

/// A file being written atomically ([`AtomicWrite::begin`]).
#[derive(Debug)]
pub struct Pending {
    file: tempfile::NamedTempFile,
    path: PathBuf,
    synced: bool,
}

impl Pending {
    /// The temp file, to write the content to.
    pub fn file(&mut self) -> &mut std::fs::File {
        self.file.as_file_mut()
    }

    /// Renames the temp file into place (fsynced first, if asked).
    pub fn commit(self) -> io::Result<()> {
        if self.synced {
            self.file.as_file().sync_all()?;
        }
        // A lock goes with the file handle, after the rename.
        self.file.persist(&self.path).map_err(|e| e.error)?;
        Ok(())
    }
}

/// Removes the [`Temp::Pid`] files that killed perfpipes left in `dir`
/// (their pid is gone). A live writer's file is never touched.
fn remove_dead_by_pid(dir: &Path, prefix: &str) {
    let Ok(entries) = fs_err::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(|e| e.ok()) {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: signal 0 only asks whether the process exists.
        let gone = pid > 0
            && unsafe { libc::kill(pid, 0) } == -1
            && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone {
            let _ = fs_err::remove_file(entry.path());
        }
    }
}

/// A [`Temp::Locked`] file younger than this is never removed: its writer
/// may not have locked it yet.
const SETTLED: Duration = Duration::from_secs(10);

/// [`remove_dead_by_lock`] of `dir`, once per process (a push writes many
/// files into one directory; listing it once is enough).
fn remove_dead_by_lock_once(dir: &Path, prefix: &str) {
    static CLEANED: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
    let first = CLEANED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(dir.to_owned());
    if first {
        // Best effort: a leftover that cannot be removed only costs space.
        let _ = remove_dead_by_lock(dir, prefix);
    }
}

/// Removes the [`Temp::Locked`] files of `dir` whose writer is gone:
/// perfpipe's name, a regular file (not a link), settled, and its lock
/// free. How many.
fn remove_dead_by_lock(dir: &Path, prefix: &str) -> io::Result<usize> {
    let mut removed = 0;
    for child in fs_err::read_dir(dir)? {
        let child = child?;
        let owned = child
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(prefix));
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

    const LOCKED: &str = ".perfpipe-tmp-";

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

        assert_eq!(remove_dead_by_lock(dir.path(), LOCKED).unwrap(), 1);
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
            remove_dead_by_lock(dir.path(), LOCKED).unwrap(),
            1,
            "its writer is gone now"
        );
    }

    #[test]
    fn a_write_leaves_only_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("blobs/sha256/abc");
        AtomicWrite::new()
            .temp(Temp::Locked(LOCKED))
            .synced()
            .write(&target, b"blob")
            .unwrap();
        assert_eq!(fs_err::read(&target).unwrap(), b"blob");
        assert_eq!(
            fs_err::read_dir(target.parent().unwrap()).unwrap().count(),
            1
        );
    }

    #[test]
    fn a_write_begun_elsewhere_is_placed_on_commit_and_leaves_nothing_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let (temps, content) = (dir.path().join("tmp"), dir.path().join("inputs"));
        fs_err::create_dir_all(&temps).unwrap();
        fs_err::create_dir_all(&content).unwrap();
        let begin = |name: &str| {
            AtomicWrite::new()
                .temp(Temp::Prefixed("input-"))
                .mode(0o444)
                .begin_in(&content.join(name), &temps)
                .unwrap()
        };
        let mut dropped = begin("half");
        dropped.file().write_all(b"half").unwrap();
        drop(dropped);
        let mut whole = begin("whole");
        whole.file().write_all(b"whole").unwrap();
        whole.commit().unwrap();
        let names = |dir: &Path| -> Vec<String> {
            fs_err::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(names(&content), ["whole"]);
        assert!(names(&temps).is_empty(), "{:?}", names(&temps));
        let placed = fs_err::metadata(content.join("whole")).unwrap();
        assert!(placed.permissions().readonly());
    }
}
