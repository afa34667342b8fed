//! Launch material (`drv/<launch key>.json`) and the content-addressed input
//! area (`inputs/sha256/<hex>`): what a node that sees the store needs to
//! execute a launch, but the model weights and images.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::check::Damage;
use super::layout::{inputs_dir, launches_dir};
use super::write::sync_dir;
use super::{Error, Store};
use crate::atomic_write::{AtomicWrite, Temp};
use crate::launch::{LaunchKey, LaunchMaterial};

/// A file of `drv/` named by a launch key, read and checked.
#[derive(Debug, Clone)]
pub struct LaunchFile {
    pub key: LaunchKey,
    pub path: PathBuf,
    pub bytes: u64,
    /// When it was last written or asked for (Unix seconds).
    pub written: u64,
    /// The material, or why it cannot be used.
    pub material: Result<LaunchMaterial, Damage>,
}

/// A file of `inputs/sha256/` named by a sha256 (not re-hashed).
#[derive(Debug, Clone)]
pub struct InputFile {
    pub sha256: String,
    pub path: PathBuf,
    pub bytes: u64,
    /// When it was last written or asked for (Unix seconds).
    pub written: u64,
}

impl Store {
    /// Where the material of `key` is kept.
    pub fn launch_path(&self, key: &LaunchKey) -> PathBuf {
        launches_dir(&self.root).join(format!("{key}.json"))
    }

    /// Every launch material file the store holds, by key, sorted.
    pub fn launches(&self) -> Result<Vec<(LaunchKey, PathBuf)>, Error> {
        let mut out = Vec::new();
        for path in paths_in(&launches_dir(&self.root))? {
            let key = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".json"))
                .and_then(LaunchKey::parse);
            if let Some(key) = key {
                out.push((key, path));
            }
        }
        out.sort();
        Ok(out)
    }

    /// Every launch material file, by key, each read and re-hashed against
    /// its name.
    pub fn launch_files(&self) -> Result<Vec<LaunchFile>, Error> {
        let mut out = Vec::new();
        for (key, path) in self.launches()? {
            let bytes = match crate::regular_file::read_beneath(&self.root, &path) {
                Ok(bytes) => bytes,
                // Removed meanwhile (by `store gc`).
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    out.push(LaunchFile {
                        written: written(&path),
                        bytes: super::disk_usage(&path),
                        key,
                        path,
                        material: Err(Damage::Unreadable(e.to_string())),
                    });
                    continue;
                }
            };
            let actual = LaunchKey::of_bytes(&bytes);
            let material = if actual != key {
                Err(Damage::LaunchMismatch(actual.to_string()))
            } else {
                serde_json::from_slice::<LaunchMaterial>(&bytes)
                    .map_err(|e| Damage::LaunchInvalid(e.to_string()))
            };
            out.push(LaunchFile {
                written: written(&path),
                bytes: bytes.len() as u64,
                key,
                path,
                material,
            });
        }
        Ok(out)
    }

    /// Every file of the input area named by a sha256, sorted.
    pub fn input_files(&self) -> Result<Vec<InputFile>, Error> {
        let mut out = Vec::new();
        for path in paths_in(&inputs_dir(&self.root))? {
            let Some(sha256) = path
                .file_name()
                .and_then(|n| n.to_str())
                .filter(|n| crate::key::RunKey::parse(n).is_some())
            else {
                continue;
            };
            out.push(InputFile {
                sha256: sha256.to_owned(),
                bytes: super::disk_usage(&path),
                written: written(&path),
                path,
            });
        }
        out.sort_by(|a, b| a.sha256.cmp(&b.sha256));
        Ok(out)
    }

    /// Whether the input of `sha256` hashes to its name (read in full);
    /// `None` when it does. A missing input is an error (`NotFound`).
    pub fn check_input(&self, sha256: &str) -> Result<Option<Damage>, Error> {
        let path = self.input_path(sha256);
        let mut file = match crate::regular_file::open_beneath(&self.root, &path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let named = format!("{}: {e}", path.display());
                return Err(std::io::Error::new(e.kind(), named).into());
            }
            // A FIFO or a device where an input should be: damage, never read.
            Err(e) => return Ok(Some(Damage::Unreadable(e.to_string()))),
        };
        let actual = hash(&mut file, &mut std::io::sink())?;
        Ok((actual != sha256).then_some(Damage::InputMismatch(actual)))
    }

    /// Where the input of this sha256 is kept.
    pub fn input_path(&self, sha256: &str) -> PathBuf {
        inputs_dir(&self.root).join(sha256)
    }

    /// Writes `material` in its canonical form under its key, unless the
    /// store has it whole (then marks it as asked for now, for `store gc`);
    /// damaged material is written again. Returns the key.
    pub fn put_launch(&self, material: &LaunchMaterial) -> Result<LaunchKey, Error> {
        let canonical = material.canonical();
        let key = LaunchKey::of_bytes(canonical.as_bytes());
        let path = self.launch_path(&key);
        let whole = crate::regular_file::read_beneath(&self.root, &path)
            .is_ok_and(|b| b == canonical.as_bytes());
        if whole {
            asked_for(&path);
        } else {
            self.place(&path, "drv-", |file| {
                Ok(file.write_all(canonical.as_bytes())?)
            })?;
        }
        Ok(key)
    }

    /// Copies `file`, whose sha256 is `sha256`, into the input area unless
    /// it holds it. A copy, not a link: editing the file later must not
    /// change what its hash names. A file that no longer hashes to `sha256`
    /// (changed since it was hashed) is refused.
    pub fn put_input(&self, sha256: &str, file: &Path) -> Result<(), Error> {
        let path = self.input_path(sha256);
        // Not followed: a link there is not the store's input.
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            asked_for(&path);
            return Ok(());
        }
        self.place(&path, "input-", |copy| {
            let copied = hash(&mut fs_err::File::open(file)?, copy)?;
            if copied != sha256 {
                return Err(Error::Io(std::io::Error::other(format!(
                    "`{}` changed while perfpipe read it (its sha256 is now {copied}, not {sha256}); run again",
                    file.display()
                ))));
            }
            Ok(())
        })
    }

    /// Writes `path` with what `fill` writes, atomically: read-only
    /// (content-addressed files never change), fsynced, its temp file
    /// (`<prefix><random>`) in this process's temp dir, so that `drv/` and
    /// `inputs/` hold only whole files. Nothing is placed when `fill` fails.
    fn place(
        &self,
        path: &Path,
        prefix: &'static str,
        fill: impl FnOnce(&mut std::fs::File) -> Result<(), Error>,
    ) -> Result<(), Error> {
        // First: a store that cannot be written says so at its marker.
        let process = self.process_dir()?;
        let dir = path.parent().expect("store paths have a parent");
        super::root::check_layout_dirs(&self.root)?;
        fs_err::create_dir_all(dir)?;
        let mut pending = AtomicWrite::new()
            .temp(Temp::Prefixed(prefix))
            .mode(0o444)
            .synced()
            .in_existing_dir()
            .begin_in(path, process.path())?;
        fill(pending.file())?;
        pending.commit()?;
        sync_dir(dir)?;
        Ok(())
    }
}

/// The sha256 of what `source` holds, written on to `sink` as it is read.
fn hash(source: &mut impl Read, sink: &mut impl Write) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = source.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        sink.write_all(&buf[..n])?;
    }
    Ok(hex::encode(hasher.finalize()))
}

/// When `path` was last written or asked for (Unix seconds; 0 unknown).
/// The paths of `dir`'s entries; none when `dir` does not exist (yet).
fn paths_in(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    match fs_err::read_dir(dir) {
        Ok(entries) => Ok(entries
            .map(|e| e.map(|e| e.path()))
            .collect::<std::io::Result<_>>()?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

fn written(path: &Path) -> u64 {
    fs_err::symlink_metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs())
}

/// Marks a content-addressed file as asked for now (its modification time),
/// so that `store gc` keeps it as young: a queued job may be about to read
/// it. Best effort: on a store another user owns, the time stays.
fn asked_for(path: &Path) {
    use std::os::unix::fs::OpenOptionsExt;
    // O_NOFOLLOW: a link's target is not the store's to touch.
    let opened = std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    if let Ok(file) = opened {
        let now = std::time::Duration::from_nanos(crate::clock::file_time_ns() as u64);
        let _ = file.set_modified(std::time::UNIX_EPOCH + now);
    }
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
        let sha = crate::digest::sha256_hex(b"[]");
        store.put_input(&sha, &file).unwrap();
        assert_eq!(std::fs::read(store.input_path(&sha)).unwrap(), b"[]");
        // Present: not read again.
        overwrite(&file, b"[1]");
        store.put_input(&sha, &file).unwrap();
        assert_eq!(std::fs::read(store.input_path(&sha)).unwrap(), b"[]");
        let other = "0".repeat(64);
        let err = store.put_input(&other, &file).unwrap_err().to_string();
        assert!(!store.input_path(&other).exists(), "{err}");
        let process = store.process_dir().unwrap();
        let temps = fs_err::read_dir(process.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with("input-")
            })
            .count();
        assert_eq!(temps, 0, "a refused copy leaves no temp file");
        assert_eq!(store.check_input(&sha).unwrap(), None);
        overwrite(&store.input_path(&sha), b"[2]");
        let actual = crate::digest::sha256_hex(b"[2]");
        assert_eq!(
            store.check_input(&sha).unwrap(),
            Some(Damage::InputMismatch(actual))
        );
    }

    /// `drv/<key>.json` (written for `material`) and an input, each made
    /// a link to an outside copy of itself (which read through the link
    /// would look sound), an old file: both are damage, and writing them
    /// again replaces the link, never reading nor touching its target.
    fn a_link_in_drv_or_inputs_is_damage_and_its_target_untouched(
        store: &Store,
        material: &LaunchMaterial,
        launch: &Path,
    ) {
        let outside = store.root().parent().unwrap().join("outside");
        fs_err::create_dir_all(&outside).unwrap();
        let data = outside.join("data.json");
        overwrite(&data, b"[]");
        let sha = crate::digest::sha256_hex(b"[]");
        store.put_input(&sha, &data).unwrap();
        let input = store.input_path(&sha);
        let mut targets = Vec::new();
        for (path, name) in [(launch, "launch.json"), (input.as_path(), "input")] {
            let target = outside.join(name);
            overwrite(&target, &fs_err::read(path).unwrap());
            let old = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
            fs_err::File::open(&target)
                .unwrap()
                .set_modified(old)
                .unwrap();
            fs_err::remove_file(path).unwrap();
            std::os::unix::fs::symlink(&target, path).unwrap();
            targets.push((target.clone(), fs_err::read(&target).unwrap(), old));
        }
        let found: Vec<_> = store
            .verify()
            .unwrap()
            .findings
            .into_iter()
            .map(|f| (f.path, f.damage.to_string()))
            .collect();
        assert_eq!(found.len(), 2, "{found:?}");
        for ((path, damage), at) in found.iter().zip([launch, input.as_path()]) {
            assert_eq!(path, at);
            assert!(
                damage.contains("is a symbolic link, never followed"),
                "{damage}"
            );
        }
        store.put_launch(material).unwrap();
        store.put_input(&sha, &data).unwrap();
        for path in [launch, input.as_path()] {
            assert!(
                fs_err::symlink_metadata(path).unwrap().is_file(),
                "{path:?}"
            );
        }
        assert_eq!(store.verify().unwrap().findings, []);
        for (target, bytes, old) in targets {
            assert_eq!(fs_err::read(&target).unwrap(), bytes);
            let modified = fs_err::metadata(&target).unwrap().modified().unwrap();
            assert_eq!(modified, old, "{target:?} was touched");
        }
    }

    fn mkfifo(path: &Path) {
        let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn a_fifo_in_drv_or_inputs_is_listed_as_damage_and_never_blocks() {
        let (_root, store) = store();
        let launch = store.launch_path(&LaunchKey::of_bytes(b"x"));
        let input = store.input_path(&"a".repeat(64));
        for path in [&launch, &input] {
            fs_err::create_dir_all(path.parent().unwrap()).unwrap();
            mkfifo(path);
        }
        let verified = store.verify().unwrap();
        let found: Vec<_> = verified
            .findings
            .iter()
            .map(|f| (f.path.clone(), f.damage.clone()))
            .collect();
        let unreadable = Damage::Unreadable("a FIFO, not a regular file".into());
        assert_eq!(
            found,
            [(launch.clone(), unreadable.clone()), (input, unreadable)]
        );
        assert!(found.iter().all(|(_, d)| d.is_launch_file()));
        let garbage = store
            .launch_garbage(&Default::default(), &|_| false)
            .unwrap();
        assert_eq!(garbage.garbage.len(), 2);
    }

    #[test]
    fn damaged_launch_material_is_found_and_written_again() {
        use crate::launch::*;
        let (_root, store) = store();
        let material = LaunchMaterial {
            schema: LAUNCH_SCHEMA_VERSION,
            runtime: "sim".into(),
            engine: EnginePart {
                engine: "vllm".into(),
                version: "0.11.0".into(),
                image: None,
                model: ModelPart {
                    id: "m".into(),
                    revision: "main".into(),
                },
                args: vec![],
                env: Default::default(),
                gpus_per_instance: 1,
                instances: 1,
            },
            hardware: HardwarePart {
                gpu: "g".into(),
                gpus: 1,
                cpu: None,
            },
            harness: HarnessPart {
                name: "builtin".into(),
                version: None,
                backend: "openai".into(),
                endpoint: "/v1/completions".into(),
                temperature: 0.0,
                ignore_eos: false,
            },
            runs: vec![],
            samples: 1,
            retry_failed: false,
            timeouts: Timeouts {
                startup_s: 1,
                stall_s: 1,
            },
        };
        let key = store.put_launch(&material).unwrap();
        let path = store.launch_path(&key);
        a_link_in_drv_or_inputs_is_damage_and_its_target_untouched(&store, &material, &path);
        let [file] = &store.launch_files().unwrap()[..] else {
            panic!("one launch")
        };
        assert_eq!(file.material.as_ref().ok(), Some(&material));
        overwrite(&path, b"{}");
        let [file] = &store.launch_files().unwrap()[..] else {
            panic!("one launch")
        };
        let actual = LaunchKey::of_bytes(b"{}").to_string();
        assert_eq!(file.material, Err(Damage::LaunchMismatch(actual)));
        assert_eq!(store.put_launch(&material).unwrap(), key);
        assert_eq!(
            std::fs::read(&path).unwrap(),
            material.canonical().as_bytes()
        );
    }
}
