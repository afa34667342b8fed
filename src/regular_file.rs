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
    let file = open(path)?;
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
    String::from_utf8(read(path)?).map_err(|e| io::Error::new(ErrorKind::InvalidData, e))
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
