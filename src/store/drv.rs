//! Launch material (`drv/<launch key>.json`) and the content-addressed input
//! area (`inputs/sha256/<hex>`): what a node that sees the store needs to
//! execute a launch, but the model weights and images.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::layout::{drv_dir, inputs_dir};
use super::write::{sync_dir, write_synced};
use super::{Error, Store};
use crate::drv::{LaunchKey, LaunchMaterial};

impl Store {
    /// Where the material of `key` is kept.
    pub fn launch_path(&self, key: &LaunchKey) -> PathBuf {
        drv_dir(&self.root).join(format!("{key}.json"))
    }

    /// Where the input of this sha256 is kept.
    pub fn input_path(&self, sha256: &str) -> PathBuf {
        inputs_dir(&self.root).join(sha256)
    }

    /// Writes `material` in its canonical form under its key, unless the
    /// store has it; returns the key.
    pub fn put_launch(&self, material: &LaunchMaterial) -> Result<LaunchKey, Error> {
        let canonical = material.canonical();
        let key = LaunchKey::of_bytes(canonical.as_bytes());
        let path = self.launch_path(&key);
        if !path.is_file() {
            let tmp = self.tmp_file("drv-")?;
            write_synced(&tmp, canonical.as_bytes())?;
            self.place(&tmp, &path)?;
        }
        Ok(key)
    }

    /// Copies `file`, whose sha256 is `sha256`, into the input area unless
    /// it holds it. A copy, not a link: editing the file later must not
    /// change what its hash names. A file that no longer hashes to `sha256`
    /// (changed since it was hashed) is refused.
    pub fn put_input(&self, sha256: &str, file: &Path) -> Result<(), Error> {
        let path = self.input_path(sha256);
        if path.is_file() {
            return Ok(());
        }
        let tmp = self.tmp_file("input-")?;
        let copied = copy_hashing(file, &tmp)?;
        if copied != sha256 {
            return Err(Error::Io(std::io::Error::other(format!(
                "`{}` changed while perfpipe read it (its sha256 is now {copied}, not {sha256}); run again",
                file.display()
            ))));
        }
        self.place(&tmp, &path)
    }

    /// A path in this process's temp dir, for a file to rename into place.
    fn tmp_file(&self, prefix: &str) -> Result<PathBuf, Error> {
        let file = tempfile::Builder::new()
            .prefix(prefix)
            .tempfile_in(self.process_dir()?.path())?;
        Ok(file.into_temp_path().keep().map_err(|e| e.error)?)
    }

    /// Renames `tmp` to `path` (read-only: content-addressed files never change).
    fn place(&self, tmp: &Path, path: &Path) -> Result<(), Error> {
        use std::os::unix::fs::PermissionsExt;
        fs_err::set_permissions(tmp, std::fs::Permissions::from_mode(0o444))?;
        let dir = path.parent().expect("store paths have a parent");
        fs_err::create_dir_all(dir)?;
        fs_err::rename(tmp, path)?;
        sync_dir(dir)?;
        Ok(())
    }
}

/// Copies `from` to `to` (fsynced) and returns the sha256 of what was copied.
#[expect(
    clippy::disallowed_methods,
    reason = "the store's input area: a copy into the store's temp dir, fsynced, then renamed"
)]
fn copy_hashing(from: &Path, to: &Path) -> std::io::Result<String> {
    let mut source = fs_err::File::open(from)?;
    let mut target = fs_err::File::create(to)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = source.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        target.write_all(&buf[..n])?;
    }
    target.sync_all()?;
    Ok(hex::encode(hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing::{overwrite, store};

    #[test]
    fn inputs_are_copied_once_under_their_sha256_and_a_changed_file_is_refused() {
        let (root, store) = store();
        let file = root.path().join("data.json");
        overwrite(&file, b"[]");
        let sha = hex::encode(Sha256::digest(b"[]"));
        store.put_input(&sha, &file).unwrap();
        assert_eq!(std::fs::read(store.input_path(&sha)).unwrap(), b"[]");
        // Present: not read again.
        overwrite(&file, b"[1]");
        store.put_input(&sha, &file).unwrap();
        assert_eq!(std::fs::read(store.input_path(&sha)).unwrap(), b"[]");
        let other = "0".repeat(64);
        let err = store.put_input(&other, &file).unwrap_err().to_string();
        assert!(!store.input_path(&other).exists(), "{err}");
    }
}
