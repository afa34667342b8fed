//! The Hugging Face hub cache, laid out as `huggingface_hub` lays it out, so
//! engines (and `huggingface_hub` itself) find what perfpipe fetched:
//!
//! ```text
//! <hub>/models--{org}--{name}/blobs/<sha256, or git blob id>
//!                            /snapshots/<commit>/<file> → ../../blobs/<blob>  (relative symlink)
//!                            /refs/                                           (untouched)
//! <hub>/.locks/models--{org}--{name}/<blob>.lock                              (flock, as huggingface_hub's)
//! ```
//!
//! A download goes to `blobs/<blob>.incomplete` and is renamed into place
//! once verified; an interrupted one leaves only that file, which the next
//! download of the blob overwrites.

use std::io;
use std::path::{Path, PathBuf};

use super::RemoteFile;

/// One model repository's part of the cache.
#[derive(Debug, Clone)]
pub struct RepoCache {
    dir: PathBuf,
    locks: PathBuf,
}

/// What the cache holds of one file of a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileStatus {
    /// In the snapshot, at its listed size.
    Present,
    /// Its blob is there (another revision has the same file); only the link is missing.
    BlobOnly,
    Missing,
}

impl RepoCache {
    /// `repo` is `org/name` (checked by [`check_repo`]).
    pub fn new(hub: &Path, repo: &str) -> Self {
        let folder = format!("models--{}", repo.replace('/', "--"));
        Self {
            dir: hub.join(&folder),
            locks: hub.join(".locks").join(folder),
        }
    }

    /// `<hub>/models--{org}--{name}`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn snapshot(&self, commit: &str) -> PathBuf {
        self.dir.join("snapshots").join(commit)
    }

    pub fn blob(&self, blob: &str) -> PathBuf {
        self.dir.join("blobs").join(blob)
    }

    /// Where a blob is downloaded before it is verified.
    pub fn temp(&self, blob: &str) -> PathBuf {
        self.dir.join("blobs").join(format!("{blob}.incomplete"))
    }

    pub fn status(&self, commit: &str, file: &RemoteFile) -> FileStatus {
        let has_size = |path: &Path| {
            // Follows the snapshot's symlink; a dangling one is missing.
            fs_err::metadata(path).is_ok_and(|m| m.is_file() && m.len() == file.size)
        };
        if has_size(&self.snapshot(commit).join(&file.name)) {
            FileStatus::Present
        } else if has_size(&self.blob(&file.blob)) {
            FileStatus::BlobOnly
        } else {
            FileStatus::Missing
        }
    }

    /// Blocks until this process holds the blob's lock (the file
    /// `huggingface_hub` locks too, so the two never download it at once).
    pub fn lock(&self, blob: &str) -> io::Result<std::fs::File> {
        let file = crate::filelock::open(&self.locks.join(format!("{blob}.lock")))?;
        file.lock()?;
        Ok(file)
    }

    /// Removes the temp files of interrupted downloads that no process is
    /// downloading now (whose blob's lock is free).
    pub fn remove_abandoned_temps(&self) -> io::Result<()> {
        let Ok(entries) = fs_err::read_dir(self.dir.join("blobs")) else {
            return Ok(());
        };
        for entry in entries {
            let path = entry?.path();
            let Some(blob) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".incomplete"))
            else {
                continue;
            };
            if check_blob_name(blob).is_err() {
                continue;
            }
            let lock = crate::filelock::open(&self.locks.join(format!("{blob}.lock")))?;
            if lock.try_lock().is_ok() {
                fs_err::remove_file(&path)?;
            }
        }
        Ok(())
    }

    /// Makes `snapshots/<commit>/<file>` a relative symlink to its blob,
    /// replacing whatever was there.
    pub fn link(&self, commit: &str, file: &RemoteFile) -> io::Result<()> {
        let path = self.snapshot(commit).join(&file.name);
        let parent = path.parent().expect("a snapshot file has a directory");
        fs_err::create_dir_all(parent)?;
        let depth = file.name.split('/').count() + 1;
        let target = format!("{}blobs/{}", "../".repeat(depth), file.blob);
        let name = path.file_name().expect("checked names have one");
        let temp = parent.join(format!(
            ".{}.perfpipe-link-{}",
            name.to_string_lossy(),
            std::process::id()
        ));
        let _ = fs_err::remove_file(&temp);
        std::os::unix::fs::symlink(&target, &temp)?;
        fs_err::rename(&temp, &path)
    }
}

/// A repository id the cache can name: `org/name`, plain characters.
pub fn check_repo(repo: &str) -> Result<(), String> {
    let ok = |part: &str| {
        !part.is_empty()
            && part != "."
            && part != ".."
            && part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    };
    match repo.split_once('/') {
        Some((org, name)) if ok(org) && ok(name) => Ok(()),
        _ => Err(format!(
            "`{repo}` is not a Hub model id such as `Qwen/Qwen3-14B`"
        )),
    }
}

/// A file name from the Hub's listing that stays inside the snapshot.
pub fn check_file_name(name: &str) -> Result<(), String> {
    let safe = !name.is_empty()
        && !name.starts_with('/')
        && !name.contains(['\\', '\0'])
        && name
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..");
    if safe {
        Ok(())
    } else {
        Err(format!(
            "the Hub listed a file name that would leave the snapshot: `{}`",
            name.escape_debug()
        ))
    }
}

/// A blob name from the Hub's listing: a hex digest, nothing else.
pub fn check_blob_name(blob: &str) -> Result<(), String> {
    if (40..=64).contains(&blob.len()) && blob.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(())
    } else {
        Err(format!(
            "the Hub listed a blob id that is not a hex digest: `{}`",
            blob.escape_debug()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fetch::Check;

    fn file(name: &str, blob: &str, size: u64) -> RemoteFile {
        RemoteFile {
            name: name.into(),
            size,
            blob: blob.into(),
            check: Check::GitBlob(blob.into()),
        }
    }

    #[test]
    #[expect(clippy::disallowed_methods, reason = "writes a blob into a test cache")]
    fn snapshot_files_are_relative_symlinks_to_blobs() {
        let hub = tempfile::tempdir().unwrap();
        let cache = RepoCache::new(hub.path(), "Qwen/Qwen3-14B");
        assert_eq!(cache.dir(), hub.path().join("models--Qwen--Qwen3-14B"));
        let commit = "c".repeat(40);
        let blob = "b".repeat(40);
        let nested = file("sub/dir/config.json", &blob, 2);
        assert_eq!(cache.status(&commit, &nested), FileStatus::Missing);
        fs_err::create_dir_all(cache.blob(&blob).parent().unwrap()).unwrap();
        std::fs::write(cache.blob(&blob), "{}").unwrap();
        assert_eq!(cache.status(&commit, &nested), FileStatus::BlobOnly);
        cache.link(&commit, &nested).unwrap();
        cache.link(&commit, &nested).unwrap();
        let link = cache.snapshot(&commit).join("sub/dir/config.json");
        assert_eq!(
            fs_err::read_link(&link).unwrap(),
            PathBuf::from(format!("../../../../blobs/{blob}"))
        );
        assert_eq!(fs_err::read_to_string(&link).unwrap(), "{}");
        assert_eq!(cache.status(&commit, &nested), FileStatus::Present);
        assert_eq!(
            cache.status(&commit, &file("sub/dir/config.json", &blob, 3)),
            FileStatus::Missing,
            "a file of another size is not the listed one"
        );
        let top = file("config.json", &blob, 2);
        cache.link(&commit, &top).unwrap();
        assert_eq!(
            fs_err::read_link(cache.snapshot(&commit).join("config.json")).unwrap(),
            PathBuf::from(format!("../../blobs/{blob}"))
        );
    }

    #[test]
    fn names_from_the_hub_stay_inside_the_cache() {
        for good in ["config.json", "original/params.json", ".gitattributes"] {
            assert!(check_file_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            "a//b",
            "a/./b",
            "a\\b",
        ] {
            assert!(check_file_name(bad).is_err(), "{bad}");
        }
        assert!(check_repo("Qwen/Qwen3-14B").is_ok());
        for bad in ["Qwen", "../x", "a/b/c", "a/..", "a/b c"] {
            assert!(check_repo(bad).is_err(), "{bad}");
        }
        assert!(check_blob_name(&"a".repeat(64)).is_ok());
        assert!(check_blob_name("../../etc").is_err());
    }
}
