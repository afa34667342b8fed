//! A model given as a local directory, as the engine reads it: every file
//! under it (config, weights, tokenizer, chat template), hashed like a
//! dataset, so one changed byte of the weights changes every run's key.
//! Each file's hash is cached as a dataset's is; the directory's sha256 is
//! that of its manifest, one `<path>\0<sha256>\n` line per file in path order.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::hash_cache::{HashCache, Stamp};
use super::{Error, Hashing};

/// What [`HashCache`] records a model file's hash under.
const CHECK: &str = "model-file";

/// A model directory as found on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedModel {
    pub path: PathBuf,
    /// The sha256 of the manifest of its files.
    pub sha256: String,
    pub files: usize,
}

/// Whether `id` names a local model directory rather than a Hub repository.
pub fn is_local(id: &str) -> bool {
    id.starts_with('/')
}

/// Whether nothing is at `dir` (a link to nothing included): the directory
/// is on another machine. Anything else there is read, and refused if it is
/// not a readable directory.
pub fn is_absent(dir: &Path) -> bool {
    matches!(std::fs::metadata(dir), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
}

/// Hashes every file under the model directory `dir`. Names starting with
/// `.` (a `.cache`, an editor's or a tool's marker) are not the model's and
/// are skipped; links are followed, as the engine follows them.
pub fn resolve(dir: &Path, cache: &mut HashCache) -> Result<ResolvedModel, Error> {
    let read_err = |path: &Path| {
        let path = path.display().to_string();
        move |source| Error::ModelRead { path, source }
    };
    let meta = std::fs::metadata(dir).map_err(read_err(dir))?;
    if !meta.is_dir() {
        return Err(Error::ModelNotADirectory {
            path: dir.display().to_string(),
        });
    }
    let mut files = Vec::new();
    collect(dir, Path::new(""), &mut files)?;
    files.sort();
    let mut manifest = Sha256::new();
    for relative in &files {
        let path = dir.join(relative);
        let meta = std::fs::metadata(&path).map_err(read_err(&path))?;
        let stamp = Stamp::of(&meta);
        let sha256 = match cache.passed(&path, &stamp, CHECK) {
            Some(known) => known.to_owned(),
            None => {
                let hashed_at = crate::clock::file_time_ns();
                let sha256 = sha256_file(&path).map_err(read_err(&path))?;
                cache.record(&path, stamp, hashed_at, &sha256, CHECK);
                sha256
            }
        };
        manifest.update(relative.to_string_lossy().as_bytes());
        manifest.update([0]);
        manifest.update(sha256.as_bytes());
        manifest.update(b"\n");
    }
    if files.is_empty() {
        return Err(Error::ModelEmpty {
            path: dir.display().to_string(),
        });
    }
    Ok(ResolvedModel {
        path: dir.to_path_buf(),
        sha256: hex::encode(manifest.finalize()),
        files: files.len(),
    })
}

/// The regular files under `dir/relative`, as paths relative to `dir`.
fn collect(root: &Path, relative: &Path, out: &mut Vec<PathBuf>) -> Result<(), Error> {
    let dir = root.join(relative);
    let entries = std::fs::read_dir(&dir).map_err(|source| Error::ModelRead {
        path: dir.display().to_string(),
        source,
    })?;
    for entry in entries {
        let entry = entry.map_err(|source| Error::ModelRead {
            path: dir.display().to_string(),
            source,
        })?;
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let path = entry.path();
        let meta = std::fs::metadata(&path).map_err(|source| Error::ModelRead {
            path: path.display().to_string(),
            source,
        })?;
        if meta.is_dir() {
            collect(root, &relative.join(&name), out)?;
        } else if meta.is_file() {
            out.push(relative.join(&name));
        }
    }
    Ok(())
}

fn sha256_file(path: &Path) -> std::io::Result<String> {
    let file = crate::regular_file::open(path)?;
    let mut hashing = Hashing {
        inner: file,
        hasher: Sha256::new(),
    };
    std::io::copy(&mut hashing, &mut std::io::sink())?;
    Ok(hex::encode(hashing.hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[expect(
        clippy::disallowed_methods,
        reason = "the test makes what a machine could have at the path"
    )]
    fn only_nothing_at_the_path_is_absent() {
        let dir = tempfile::tempdir().unwrap();
        assert!(is_absent(&dir.path().join("DeepSeek-R1")));
        std::os::unix::fs::symlink(dir.path().join("gone"), dir.path().join("link")).unwrap();
        assert!(is_absent(&dir.path().join("link")), "a link to nothing");
        assert!(!is_absent(dir.path()));
        std::fs::write(dir.path().join("file"), "x").unwrap();
        assert!(
            !is_absent(&dir.path().join("file")),
            "a file is there, and refused as a model directory"
        );
    }

    #[test]
    #[expect(
        clippy::disallowed_methods,
        reason = "the test writes the model directory a user would have"
    )]
    fn one_changed_byte_of_the_weights_changes_the_directory_s_hash() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.json"), "{}").unwrap();
        std::fs::write(dir.path().join("model.safetensors"), [0u8; 64]).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/tokenizer.json"), "t").unwrap();
        std::fs::write(dir.path().join(".perfpipe-made"), "a marker").unwrap();
        let mut cache = HashCache::in_memory();
        let first = resolve(dir.path(), &mut cache).unwrap();
        assert_eq!(first.files, 3, "the dot-file is not the model's");
        std::fs::write(dir.path().join(".perfpipe-made"), "another").unwrap();
        assert_eq!(
            resolve(dir.path(), &mut cache).unwrap().sha256,
            first.sha256
        );
        let mut weights = [0u8; 64];
        weights[63] = 1;
        std::fs::write(dir.path().join("model.safetensors"), weights).unwrap();
        // A fresh cache: the same size and (maybe) the same mtime must not hide it.
        let changed = resolve(dir.path(), &mut HashCache::in_memory()).unwrap();
        assert_ne!(changed.sha256, first.sha256);
        assert!(matches!(
            resolve(&dir.path().join("config.json"), &mut cache),
            Err(Error::ModelNotADirectory { .. })
        ));
    }
}
