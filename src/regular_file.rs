//! Reading a file that must be a regular one. A FIFO, a device or a socket
//! put where perfpipe expects a file (in the store, or named as an input)
//! would block a plain `read` forever or never end it (`/dev/zero`), so the
//! file is opened without blocking and its type checked before any byte is
//! read.

use std::io::{self, ErrorKind, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The bytes of the regular file at `path` (symlinks followed); any other
/// kind of file is an `InvalidInput` error saying what it is (as `std`'s
/// errors, without the path: the caller names it).
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open(path)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// As [`read`], for a file that may hold at most `limit` bytes: a larger
/// one is a `FileTooLarge` error, and no more than `limit + 1` of its bytes
/// are read (it may grow while it is read).
pub fn read_at_most(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    read_opened_at_most(open(path)?, limit)
}

/// As [`read_at_most`], for a file [`open`] or [`open_beneath`] opened.
pub fn read_opened_at_most(file: std::fs::File, limit: u64) -> io::Result<Vec<u8>> {
    let too_large = || {
        io::Error::new(
            ErrorKind::FileTooLarge,
            format!("larger than {limit} bytes"),
        )
    };
    if file.metadata()?.len() > limit {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(bytes)
}

/// A sink that compares the bytes written to it with those of the regular
/// file at a path, a block at a time as they come, so that neither is ever
/// held whole; [`Compare::holds`] says whether they were the same.
#[derive(Debug)]
pub struct Compare {
    /// The file, while all it held so far was what was written.
    file: Option<std::fs::File>,
    block: Vec<u8>,
}

impl Compare {
    /// Compares with the file at `path`; with none (or not a regular
    /// one), nothing written is the same.
    pub fn new(path: &Path) -> Self {
        Self {
            file: open(path).ok(),
            block: Vec::new(),
        }
    }

    /// Whether the file holds exactly what was written: no byte more.
    pub fn holds(mut self) -> bool {
        let Some(file) = &mut self.file else {
            return false;
        };
        let mut byte = [0u8];
        loop {
            match file.read(&mut byte) {
                Ok(n) => return n == 0,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
    }
}

impl io::Write for Compare {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        const BLOCK: usize = 64 << 10;
        if let Some(file) = &mut self.file {
            self.block.resize(BLOCK.min(bytes.len()), 0);
            for part in bytes.chunks(BLOCK) {
                let held = &mut self.block[..part.len()];
                if file.read_exact(held).is_err() || held != part {
                    self.file = None;
                    break;
                }
            }
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The regular file at `path`, opened for reading (symlinks followed); its
/// type is checked before any byte is read, for a caller that streams it.
pub fn open(path: &Path) -> io::Result<std::fs::File> {
    // O_NONBLOCK: opening a FIFO with no writer returns at once.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    regular(file)
}

/// As [`open`], for a file of a directory perfpipe owns (its store): no
/// component of `path` below `root` may be a symbolic link, the last one
/// included, so what a link points to is never opened, even inside `root`
/// (`root` itself may be one: the user named it). A link is an
/// `InvalidInput` error naming it; `path` must lie below `root`.
pub fn open_beneath(root: &Path, path: &Path) -> io::Result<std::fs::File> {
    let below = path.strip_prefix(root).map_err(|_| {
        io::Error::new(
            ErrorKind::InvalidInput,
            format!("`{}` is not in `{}`", path.display(), root.display()),
        )
    })?;
    regular(beneath::open(root, below)?)
}

/// As [`read`], through [`open_beneath`].
pub fn read_beneath(root: &Path, path: &Path) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open_beneath(root, path)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// `file` when it is a regular file; what it is otherwise.
fn regular(file: std::fs::File) -> io::Result<std::fs::File> {
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        return Err(io::Error::new(
            ErrorKind::InvalidInput,
            format!("{}, not a regular file", describe(kind)),
        ));
    }
    Ok(file)
}

/// The text of the regular file at `path`, which must be UTF-8.
pub fn read_to_string(path: &Path) -> io::Result<String> {
    text(read(path)?)
}

/// As [`read_to_string`], through [`open_beneath`].
pub fn read_beneath_to_string(root: &Path, path: &Path) -> io::Result<String> {
    text(read_beneath(root, path)?)
}

fn text(bytes: Vec<u8>) -> io::Result<String> {
    String::from_utf8(bytes).map_err(|e| io::Error::new(ErrorKind::InvalidData, e))
}

/// Opening a path below a directory without following any link: one
/// `openat2` (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) where the kernel has it
/// (Linux 5.6), else one `openat` per component with `O_NOFOLLOW`. Either
/// way, a link is refused where it is met, and never read through.
mod beneath {
    use std::ffi::{CString, OsStr};
    use std::fs::File;
    use std::io::{self, ErrorKind};
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    use std::path::{Component, Path};

    /// `below` (relative, plain names only) under `root`, opened for reading
    /// without blocking; the caller checks what kind of file it is.
    pub(super) fn open(root: &Path, below: &Path) -> io::Result<File> {
        let names = names(below)?;
        let root_dir = open_dir_at(None, root_or_dot(root), false)?;
        #[cfg(target_os = "linux")]
        match openat2(&root_dir, below) {
            Ok(file) => return Ok(file),
            // No openat2 (an older kernel, or a sandbox that filters it):
            // the walk below does the same. A link met: the walk names it.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ENOSYS | libc::EPERM | libc::ELOOP)
                ) => {}
            Err(e) => return Err(e),
        }
        walk(root, root_dir, &names)
    }

    fn root_or_dot(root: &Path) -> &Path {
        if root.as_os_str().is_empty() {
            Path::new(".")
        } else {
            root
        }
    }

    /// The names `below` is made of; `..`, `.` or an absolute path would
    /// leave the directory, or name it, and are refused.
    fn names(below: &Path) -> io::Result<Vec<&OsStr>> {
        let names: Vec<&OsStr> = below
            .components()
            .map(|c| match c {
                Component::Normal(name) => Ok(name),
                _ => Err(io::Error::new(
                    ErrorKind::InvalidInput,
                    format!("`{}` is not a plain relative path", below.display()),
                )),
            })
            .collect::<io::Result<_>>()?;
        if names.is_empty() {
            return Err(io::Error::new(ErrorKind::InvalidInput, "no file named"));
        }
        Ok(names)
    }

    fn c_path(path: &OsStr) -> io::Result<CString> {
        CString::new(path.as_bytes()).map_err(|e| io::Error::new(ErrorKind::InvalidInput, e))
    }

    #[cfg(target_os = "linux")]
    fn openat2(root: &OwnedFd, below: &Path) -> io::Result<File> {
        let path = c_path(below.as_os_str())?;
        /// `struct open_how` of linux/openat2.h (libc's cannot be built).
        #[repr(C)]
        struct OpenHow {
            flags: u64,
            mode: u64,
            resolve: u64,
        }
        let how = OpenHow {
            flags: (libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY) as u64,
            mode: 0,
            resolve: libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS,
        };
        // SAFETY: a valid directory descriptor, NUL-terminated path and
        // `open_how` of the size passed.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                root.as_raw_fd(),
                path.as_ptr(),
                &how as *const OpenHow,
                std::mem::size_of::<OpenHow>(),
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a descriptor the call just opened, owned by nothing else.
        Ok(unsafe { File::from_raw_fd(fd as i32) })
    }

    /// One component at a time, none followed: each directory with
    /// `O_DIRECTORY | O_NOFOLLOW`, the file with `O_NOFOLLOW`.
    fn walk(root: &Path, root_dir: OwnedFd, names: &[&OsStr]) -> io::Result<File> {
        let mut dir = root_dir;
        let mut walked = root.to_path_buf();
        for (i, name) in names.iter().enumerate() {
            walked.push(name);
            let last = i + 1 == names.len();
            let opened = if last {
                open_file_at(&dir, name)
            } else {
                open_dir_at(Some(&dir), Path::new(name), true)
            };
            match opened {
                Ok(fd) if last => return Ok(File::from(fd)),
                Ok(fd) => dir = fd,
                Err(_) if is_link_at(&dir, name) => return Err(link(&walked)),
                Err(e) => return Err(e),
            }
        }
        unreachable!("`names` is not empty")
    }

    /// [`open`] without `openat2`: what a kernel without it does.
    #[cfg(test)]
    pub(super) fn open_walking(root: &Path, below: &Path) -> io::Result<File> {
        walk(
            root,
            open_dir_at(None, root_or_dot(root), false)?,
            &names(below)?,
        )
    }

    /// The error for a link met at `path`.
    fn link(path: &Path) -> io::Error {
        io::Error::new(
            ErrorKind::InvalidInput,
            format!("`{}` is a symbolic link, never followed", path.display()),
        )
    }

    /// A directory to look names up in: `path` under `dir` (or the current
    /// directory), the last component not followed when `no_follow`.
    fn open_dir_at(dir: Option<&OwnedFd>, path: &Path, no_follow: bool) -> io::Result<OwnedFd> {
        #[cfg(target_os = "linux")]
        let search = libc::O_PATH;
        #[cfg(not(target_os = "linux"))]
        let search = libc::O_RDONLY;
        let nofollow = if no_follow { libc::O_NOFOLLOW } else { 0 };
        open_at(
            dir,
            path.as_os_str(),
            search | libc::O_DIRECTORY | libc::O_CLOEXEC | nofollow,
        )
    }

    fn open_file_at(dir: &OwnedFd, name: &OsStr) -> io::Result<OwnedFd> {
        let flags =
            libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY | libc::O_NOFOLLOW;
        open_at(Some(dir), name, flags)
    }

    fn open_at(dir: Option<&OwnedFd>, path: &OsStr, flags: libc::c_int) -> io::Result<OwnedFd> {
        let path = c_path(path)?;
        let dir = dir.map_or(libc::AT_FDCWD, AsRawFd::as_raw_fd);
        // SAFETY: a valid descriptor (or AT_FDCWD) and NUL-terminated path.
        let fd = unsafe { libc::openat(dir, path.as_ptr(), flags) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a descriptor the call just opened, owned by nothing else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// Whether `name` in `dir` is a symbolic link (not followed).
    fn is_link_at(dir: &OwnedFd, name: &OsStr) -> bool {
        let Ok(path) = c_path(name) else {
            return false;
        };
        let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: a valid descriptor, NUL-terminated path, and room for a stat.
        let rc = unsafe {
            libc::fstatat(
                dir.as_raw_fd(),
                path.as_ptr(),
                stat.as_mut_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        // SAFETY: fstatat filled it when it returned 0.
        rc == 0 && unsafe { stat.assume_init() }.st_mode & libc::S_IFMT == libc::S_IFLNK
    }
}

/// What a file that is not a regular one is, for messages.
pub fn describe(kind: std::fs::FileType) -> &'static str {
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        "a special file"
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    /// Whether the file at `path` holds `bytes`, written to a [`Compare`]
    /// in pieces of odd sizes.
    fn holds(path: &Path, bytes: &[u8]) -> bool {
        let mut compare = Compare::new(path);
        for piece in bytes.chunks(70_001) {
            compare.write_all(piece).unwrap();
        }
        compare.holds()
    }

    #[test]
    fn a_file_holds_its_bytes_and_nothing_shorter_longer_or_different() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("page.html");
        // Longer than one block, so the comparison goes on past the first.
        let text: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        crate::atomic_write::AtomicWrite::default()
            .write(&path, &text)
            .unwrap();
        assert!(holds(&path, &text));
        assert!(!holds(&path, &text[..text.len() - 1]), "shorter");
        let mut longer = text.clone();
        longer.push(0);
        assert!(!holds(&path, &longer), "longer");
        let mut changed = text.clone();
        changed[150_000] ^= 1;
        assert!(!holds(&path, &changed), "a byte past the first block");
        assert!(!holds(&dir.path().join("none"), b""), "no file");
        assert!(!holds(dir.path(), b""), "a directory");
    }

    /// A store-like tree: `root/entries/a/result.json` (a file),
    /// `root/entries/linked -> a` (a link to a directory inside),
    /// `root/entries/a/inner -> result.json` (a link to a file inside),
    /// `root/entries/a/outer -> ../../../outside.json` and
    /// `root/entries/out -> ../..` (links out), `root/entries/a/fifo`.
    #[expect(clippy::disallowed_methods, reason = "a test tree, not a store")]
    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("root/entries/a");
        fs_err::create_dir_all(&a).unwrap();
        fs_err::write(a.join("result.json"), b"{}").unwrap();
        fs_err::write(dir.path().join("outside.json"), b"outside").unwrap();
        let link = |to: &str, at: &Path| std::os::unix::fs::symlink(to, at).unwrap();
        link("a", &dir.path().join("root/entries/linked"));
        link("../..", &dir.path().join("root/entries/out"));
        link("result.json", &a.join("inner"));
        link("../../../outside.json", &a.join("outer"));
        let c_path = std::ffi::CString::new(a.join("fifo").as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        dir
    }

    #[test]
    fn beneath_a_root_a_plain_file_is_read_and_no_link_is_followed() {
        let dir = tree();
        let root = dir.path().join("root");
        // Both ways of opening: `openat2` where the kernel has it, and the
        // walk a kernel without it gets.
        type Open = fn(&Path, &Path) -> io::Result<std::fs::File>;
        let ways: [(&str, Open); 2] = [
            ("open_beneath", |root, path| open_beneath(root, path)),
            ("walk", |root, path| {
                super::regular(beneath::open_walking(
                    root,
                    path.strip_prefix(root).unwrap(),
                )?)
            }),
        ];
        for (way, open) in ways {
            let read = |rel: &str| -> io::Result<Vec<u8>> {
                let mut bytes = Vec::new();
                open(&root, &root.join(rel))?.read_to_end(&mut bytes)?;
                Ok(bytes)
            };
            assert_eq!(read("entries/a/result.json").unwrap(), b"{}", "{way}");
            for (rel, link) in [
                ("entries/a/inner", "entries/a/inner"),
                ("entries/a/outer", "entries/a/outer"),
                ("entries/linked/result.json", "entries/linked"),
                ("entries/out/outside.json", "entries/out"),
                ("entries/out/root/entries/a/result.json", "entries/out"),
            ] {
                let err = read(rel).unwrap_err();
                assert_eq!(err.kind(), ErrorKind::InvalidInput, "{way} {rel}: {err}");
                let named = format!("`{}` is a symbolic link", root.join(link).display());
                assert!(err.to_string().contains(&named), "{way} {rel}: {err}");
            }
            let err = read("entries/a/fifo").unwrap_err();
            assert!(err.to_string().contains("a FIFO"), "{way}: {err}");
            let err = read("entries/a/none").unwrap_err();
            assert_eq!(err.kind(), ErrorKind::NotFound, "{way}: {err}");
        }
        // The root itself may be a link: the user named it.
        let linked_root = dir.path().join("linked-root");
        std::os::unix::fs::symlink("root", &linked_root).unwrap();
        let path = linked_root.join("entries/a/result.json");
        assert_eq!(read_beneath(&linked_root, &path).unwrap(), b"{}");
        assert_eq!(read_beneath_to_string(&linked_root, &path).unwrap(), "{}");
        // Nothing outside the root, nor the way out of it, is opened.
        for path in [
            dir.path().join("outside.json"),
            root.join("entries/../../outside.json"),
        ] {
            let err = open_beneath(&root, &path).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "{path:?}: {err}");
        }
    }

    #[test]
    fn only_regular_files_are_read_and_nothing_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("result.json");
        fs_err::File::options()
            .create_new(true)
            .write(true)
            .open(&file)
            .and_then(|mut f| io::Write::write_all(&mut f, b"{}"))
            .unwrap();
        assert_eq!(read(&file).unwrap(), b"{}");

        let fifo = dir.path().join("fifo");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        assert_eq!(read_at_most(&file, 2).unwrap(), b"{}");
        let err = read_at_most(&file, 1).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::FileTooLarge);
        for (path, what) in [
            (fifo.as_path(), "a FIFO"),
            (dir.path(), "a directory"),
            (Path::new("/dev/zero"), "a device"),
        ] {
            let err = read(path).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "{path:?}");
            assert!(err.to_string().contains(what), "{err}");
        }
    }
}
