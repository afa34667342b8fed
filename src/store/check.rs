//! What can be wrong with an entry: one inspection that readers use to skip
//! damage, commits to move it to quarantine, and `store verify` to report it.

use std::fmt;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use super::entry_stat::EntryStats;
use super::layout::{entries_dir, is_sample_id, parse_sample_id, shard};
use super::{Error, RunResult, Store};
use crate::key::RunKey;

/// One thing wrong in `entries/`, or in the launch material and inputs
/// beside them (`drv/`, `inputs/sha256/`). Nothing damaged is ever used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Damage {
    /// A directory under `entries/<shard>/` that is not named by a key.
    NotAKey,
    /// Named by a key, but under another shard than the key's.
    WrongShard,
    InputsMissing,
    InputsUnreadable(String),
    /// `inputs.json` hashes to another key: truncated, edited or copied.
    InputsMismatch(RunKey),
    ResultMissing,
    ResultUnreadable(String),
    /// `result.json` does not parse as a result (the parser's message).
    ResultInvalid(String),
    /// `result.json` is a result of another key.
    ResultOtherKey(String),
    /// Under `samples/`, something that is not a sample directory.
    NotASample,
    /// A sample that is, or holds, a symbolic link (this file of it; empty
    /// when the sample's directory is the link): never followed, even to a
    /// file inside the store.
    Link(String),
    /// `signature.json` of a substituted sample does not cover its files.
    SignatureBroken(String),
    /// A sample with the statement of an earlier one (this id): the same
    /// signed sample twice. A store holds a sample once.
    Duplicate(String),
    /// Launch material (`drv/<launch key>.json`) whose sha256 is this other key.
    LaunchMismatch(String),
    /// Launch material that does not parse (the parser's message).
    LaunchInvalid(String),
    /// An input (`inputs/sha256/<hex>`) whose sha256 is this other one.
    InputMismatch(String),
    /// Launch material or an input that is not a regular file (a FIFO, a
    /// device), never read: why.
    Unreadable(String),
}

impl Damage {
    /// The file the damage is in, when it is in one.
    pub fn file(&self) -> Option<&str> {
        match self {
            Self::Link(file) => (!file.is_empty()).then_some(file.as_str()),
            Self::InputsMissing | Self::InputsUnreadable(_) | Self::InputsMismatch(_) => {
                Some("inputs.json")
            }
            Self::ResultMissing
            | Self::ResultUnreadable(_)
            | Self::ResultInvalid(_)
            | Self::ResultOtherKey(_) => Some("result.json"),
            Self::SignatureBroken(_) => Some("signature.json"),
            Self::NotAKey
            | Self::WrongShard
            | Self::NotASample
            | Self::Duplicate(_)
            | Self::LaunchMismatch(_)
            | Self::LaunchInvalid(_)
            | Self::InputMismatch(_)
            | Self::Unreadable(_) => None,
        }
    }

    /// A directory no key names where it is: no run ever commits to it, so
    /// only `store gc` removes it (a run moves the damage of its own entry).
    pub fn is_stray(&self) -> bool {
        matches!(self, Self::NotAKey | Self::WrongShard)
    }

    /// Damage of a launch's material or of an input, outside `entries/`:
    /// `realise` refuses it, `store gc` removes it, `plan --write-launches`
    /// writes it again.
    pub fn is_launch_file(&self) -> bool {
        matches!(
            self,
            Self::LaunchMismatch(_)
                | Self::LaunchInvalid(_)
                | Self::InputMismatch(_)
                | Self::Unreadable(_)
        )
    }

    /// Damage of the whole entry: none of its samples is used.
    pub fn spoils_entry(&self) -> bool {
        matches!(
            self,
            Self::NotAKey
                | Self::WrongShard
                | Self::InputsMissing
                | Self::InputsUnreadable(_)
                | Self::InputsMismatch(_)
        )
    }
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotAKey => f.write_str("not named by a key; nothing reads it"),
            Self::WrongShard => f.write_str("not in its key's shard; nothing reads it"),
            Self::InputsMissing => f.write_str("missing; the entry's samples are not used"),
            Self::InputsUnreadable(e) => {
                write!(f, "cannot be read ({e}); the entry's samples are not used")
            }
            Self::InputsMismatch(hash) => write!(
                f,
                "hashes to `{hash}`, not to the entry's key; the entry's samples are not used"
            ),
            Self::ResultMissing => f.write_str("missing; the sample is not used"),
            Self::ResultUnreadable(e) => write!(f, "cannot be read ({e}); the sample is not used"),
            Self::ResultInvalid(e) => {
                write!(
                    f,
                    "does not parse as a result ({e}); the sample is not used"
                )
            }
            Self::ResultOtherKey(key) => write!(
                f,
                "is a result of `{key}`, not of the entry's key; the sample is not used"
            ),
            Self::NotASample => f.write_str("not a sample; nothing reads it"),
            Self::Link(_) => f.write_str(
                "a symbolic link, never followed: perfpipe reads only the store's own files; the sample is not used",
            ),
            Self::SignatureBroken(why) => {
                write!(
                    f,
                    "the sample's files are not the ones signed: {why}; the sample is not used"
                )
            }
            Self::Duplicate(first) => write!(
                f,
                "the same sample as `{first}` (its statement is that one's); a store holds a sample once, so this copy is not used"
            ),
            Self::LaunchMismatch(actual) => write!(
                f,
                "hashes to `{actual}`, not to its name; `perfpipe realise` refuses it"
            ),
            Self::LaunchInvalid(e) => {
                write!(
                    f,
                    "is not launch material ({e}); `perfpipe realise` refuses it"
                )
            }
            Self::Unreadable(e) => write!(f, "cannot be read ({e}); `perfpipe realise` refuses it"),
            Self::InputMismatch(actual) => write!(
                f,
                "its sha256 is `{actual}`, not its name; `perfpipe realise` refuses the launches that read it"
            ),
        }
    }
}

/// Damage and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub path: PathBuf,
    pub damage: Damage,
}

/// What `store verify` found.
#[derive(Debug, Clone, Default)]
pub struct Verification {
    /// Directories under `entries/<shard>/`.
    pub entries: usize,
    /// Directories under their `samples/`.
    pub samples: usize,
    /// Sound entries without a sample yet (a run killed before its first
    /// commit; harmless, the next commit adds one).
    pub empty: usize,
    /// Files under `drv/`, named by a launch key.
    pub launches: usize,
    /// Files under `inputs/sha256/`, named by a sha256.
    pub inputs: usize,
    pub findings: Vec<Finding>,
}

/// A directory under `entries/<shard>/`, with the key it is named by when it
/// is named by a key in the right shard (the only ones anything reads).
#[derive(Debug, Clone)]
pub struct EntryDir {
    pub path: PathBuf,
    pub key: Option<RunKey>,
    pub damage: Option<Damage>,
}

impl Store {
    /// Every directory under `entries/<shard>/`, sorted by path.
    pub fn entry_dirs(&self) -> Result<Vec<EntryDir>, Error> {
        let mut out = Vec::new();
        let shards = match fs_err::read_dir(entries_dir(&self.root)) {
            Ok(shards) => shards,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(e.into()),
        };
        for shard_dir in shards {
            let shard_dir = shard_dir?;
            if !shard_dir.file_type()?.is_dir() {
                continue;
            }
            let shard_name = shard_dir.file_name();
            for entry in fs_err::read_dir(shard_dir.path())? {
                let entry = entry?;
                let key = entry.file_name().to_str().and_then(RunKey::parse);
                let (key, damage) = match key {
                    None => (None, Some(Damage::NotAKey)),
                    Some(key) if shard_name.to_str() != Some(shard(&key)) => {
                        (None, Some(Damage::WrongShard))
                    }
                    Some(key) => (Some(key), None),
                };
                out.push(EntryDir {
                    path: entry.path(),
                    key,
                    damage,
                });
            }
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    /// Re-hashes every entry's `inputs.json` against its name and parses every
    /// sample's result; re-hashes every launch material and input against
    /// its name; reads only.
    pub fn verify(&self) -> Result<Verification, Error> {
        let mut out = Verification::default();
        for dir in self.entry_dirs()? {
            out.entries += 1;
            let Some(key) = &dir.key else {
                out.findings.push(Finding {
                    path: dir.path,
                    damage: dir.damage.expect("an entry dir without a key is damaged"),
                });
                continue;
            };
            if let Some(damage) = check_inputs(&dir.path, key) {
                out.findings.push(Finding {
                    path: dir.path.join("inputs.json"),
                    damage,
                });
            }
            let samples = inspect_samples(&dir.path, key)?;
            out.samples += samples.len();
            if samples.is_empty() {
                out.empty += 1;
            }
            for sample in samples {
                if let Err(damage) = sample.state {
                    out.findings.push(Finding {
                        path: damage
                            .file()
                            .map_or(sample.path.clone(), |f| sample.path.join(f)),
                        damage,
                    });
                }
            }
        }
        for file in self.launch_files()? {
            out.launches += 1;
            if let Err(damage) = &file.material {
                out.findings.push(Finding {
                    path: file.path,
                    damage: damage.clone(),
                });
            }
        }
        for file in self.input_files()? {
            out.inputs += 1;
            if let Some(damage) = self.check_input(&file.sha256)? {
                out.findings.push(Finding {
                    path: file.path,
                    damage,
                });
            }
        }
        Ok(out)
    }
}

/// Whether `entry/inputs.json` is exactly the key material `key` hashes.
pub(super) fn check_inputs(entry: &Path, key: &RunKey) -> Option<Damage> {
    match super::files::read(&entry.join("inputs.json")) {
        Ok(bytes) => {
            let hash = RunKey::of_bytes(&bytes);
            (hash != *key).then_some(Damage::InputsMismatch(hash))
        }
        Err(e) if e.kind() == ErrorKind::NotFound => Some(Damage::InputsMissing),
        Err(e) => Some(Damage::InputsUnreadable(e.to_string())),
    }
}

/// A sample's result, or why it cannot be used as `key`'s.
pub(super) fn read_result(sample: &Path, key: &RunKey) -> Result<RunResult, Damage> {
    let text = match super::files::read_to_string(&sample.join("result.json")) {
        Ok(text) => text,
        Err(e) if e.kind() == ErrorKind::NotFound => return Err(Damage::ResultMissing),
        Err(e) => return Err(Damage::ResultUnreadable(e.to_string())),
    };
    read_result_bytes(text.as_bytes(), key)
}

/// The result `bytes` (a `result.json`) hold, or why they cannot be `key`'s.
pub(super) fn read_result_bytes(bytes: &[u8], key: &RunKey) -> Result<RunResult, Damage> {
    let result: RunResult =
        serde_json::from_slice(bytes).map_err(|e| Damage::ResultInvalid(e.to_string()))?;
    if result.key != key.as_str() {
        return Err(Damage::ResultOtherKey(result.key));
    }
    Ok(result)
}

/// An item under an entry's `samples/`, and whether it may be used.
pub(super) struct Inspected {
    pub name: String,
    pub path: PathBuf,
    pub state: Result<RunResult, Damage>,
}

/// Everything under `entry/samples/` (as [`sample_dirs`] orders it), each a
/// sound sample of `key` or its damage: the one inspection that readers,
/// commits (quarantine) and `store verify` share, so damage is never used.
/// A sample is sound when its result is `key`'s, its signature (when it was
/// substituted) covers its files, and no earlier sample has its statement:
/// a sample is what was signed, so a second copy is damage. Statements are
/// compared only in an entry holding a signed sample (duplicates come in by
/// substitution), and a measured sample's statement is only computed there.
pub(super) fn inspect_samples(entry: &Path, key: &RunKey) -> Result<Vec<Inspected>, Error> {
    let mut inspected = Vec::new();
    let mut statements = Vec::new();
    for (name, path) in sample_dirs(entry)? {
        let read = if is_sample_id(&name) {
            find_link(&path)
                .and_then(|()| read_result(&path, key))
                .and_then(|result| {
                    let signed = super::signed::check_signature(&path, key)?;
                    Ok((result, signed.map(|s| s.statement)))
                })
        } else {
            Err(Damage::NotASample)
        };
        let (state, statement) = match read {
            Ok((result, statement)) => (Ok(result), statement),
            Err(damage) => (Err(damage), None),
        };
        statements.push(statement);
        inspected.push(Inspected { name, path, state });
    }
    if statements.iter().all(Option::is_none) {
        return Ok(inspected);
    }
    let mut first: std::collections::BTreeMap<String, String> = Default::default();
    for (sample, statement) in inspected.iter_mut().zip(statements) {
        if sample.state.is_err() {
            continue;
        }
        let statement = statement.or_else(|| {
            super::signed::read_digests(&sample.path, key)
                .ok()?
                .statement()
                .ok()
        });
        let Some(statement) = statement else { continue };
        match first.get(&statement) {
            Some(id) => sample.state = Err(Damage::Duplicate(id.clone())),
            None => {
                first.insert(statement, sample.name.clone());
            }
        }
    }
    Ok(inspected)
}

/// Whether the sample at `path` (`<entry>/samples/<id>`) is damage, as
/// [`inspect_samples`] sees it.
pub(super) fn is_damaged_sample(path: &Path, key: &RunKey) -> Result<bool, Error> {
    let Some(entry) = path.parent().and_then(Path::parent) else {
        return Ok(false);
    };
    Ok(inspect_samples(entry, key)?
        .iter()
        .any(|sample| sample.path == path && sample.state.is_err()))
}

/// A link the sample at `path` is or holds (in it, or in its `logs/`), as
/// damage: a file of a sample is never read through a link, and a sample
/// whose file is one is not the sample that was measured or signed.
/// Nothing is followed: `path` is checked to be no link before it is
/// listed, each child's type is its own (a link lists as a link), and
/// `logs/` is listed only when it is no link itself.
fn find_link(path: &Path) -> Result<(), Damage> {
    let is_link = |path: &Path| std::fs::symlink_metadata(path).is_ok_and(|m| m.is_symlink());
    if is_link(path) {
        return Err(Damage::Link(String::new()));
    }
    let links = |dir: &Path, prefix: &str| -> Result<(), Damage> {
        let Ok(children) = std::fs::read_dir(dir) else {
            return Ok(());
        };
        // The first by name, whatever order the directory lists them in.
        let first = children
            .filter_map(Result::ok)
            .filter(|child| child.file_type().is_ok_and(|t| t.is_symlink()))
            .map(|child| child.file_name().to_string_lossy().into_owned())
            .min();
        match first {
            Some(name) => Err(Damage::Link(format!("{prefix}{name}"))),
            None => Ok(()),
        }
    };
    links(path, "")?;
    links(&path.join("logs"), "logs/")
}

/// `(name, path)` of everything under `entry/samples/`, samples first in the
/// order of their ids (oldest first), then stray items by name; none
/// when the directory is absent (an entry whose first sample never came).
/// A `samples` that is not a directory is listed as itself, so that, not
/// being a sample, it is reported and moved aside like any stray item; so
/// is a `samples` that is a link (never followed: what it points to is not
/// the store's), and an entry that is a link has none.
/// Whether [`sample_dirs`] would list anything under `entry`, in as few
/// calls as can tell: one `stat` for an entry that is not there (most keys
/// a presence test asks of), two for one whose `samples/` holds a directory
/// (its link count says so: each subdirectory's `..` is a link to it; a
/// file system that does not count them says 1), a listing only otherwise.
pub(super) fn has_sample_dirs(stats: &EntryStats, key: &RunKey) -> bool {
    if !stats.stat(key, &[]).is_ok_and(|s| s.is_dir()) {
        return false;
    }
    match stats.stat(key, &["samples"]) {
        Err(_) => false,
        Ok(s) if !s.is_dir() => true,
        Ok(s) if s.links() > 2 => true,
        Ok(_) => std::fs::read_dir(super::layout::samples_dir(stats.root(), key))
            .is_ok_and(|mut d| d.any(|c| c.is_ok())),
    }
}

pub(super) fn sample_dirs(entry: &Path) -> Result<Vec<(String, PathBuf)>, Error> {
    let dir = entry.join("samples");
    let is_link = |path: &Path| std::fs::symlink_metadata(path).is_ok_and(|m| m.is_symlink());
    if is_link(entry) {
        return Ok(Vec::new());
    }
    if is_link(&dir) {
        return Ok(vec![("samples".into(), dir)]);
    }
    let mut out: Vec<(String, PathBuf)> = match fs_err::read_dir(&dir) {
        Ok(children) => children
            .filter_map(|c| c.ok())
            .map(|c| (c.file_name().to_string_lossy().into_owned(), c.path()))
            .collect(),
        Err(e) if e.kind() == ErrorKind::NotFound => Vec::new(),
        Err(e) if e.kind() == ErrorKind::NotADirectory && entry.is_dir() => {
            vec![("samples".into(), dir)]
        }
        Err(e) if e.kind() == ErrorKind::NotADirectory => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    out.sort_by_cached_key(|(name, _)| {
        let id = parse_sample_id(name);
        (id.is_none(), id, name.clone())
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::layout::{entry_dir, samples_dir};
    use crate::store::testing::{commit, overwrite, relative, result, store};

    #[test]
    fn the_presence_test_agrees_with_the_listing_whatever_an_entry_holds() {
        let root = tempfile::tempdir().unwrap();
        let elsewhere = root.path().join("elsewhere");
        fs_err::create_dir_all(elsewhere.join("samples/0001")).unwrap();
        // Each entry as `make` leaves it (a link to `elsewhere` where it
        // makes one), and whether it has samples.
        type Make = fn(&Path, &Path);
        let shapes: [(&str, Make, bool); 9] = [
            ("missing", |_, _| {}, false),
            ("a file", |e, _| overwrite(e, b""), false),
            (
                "a link",
                |e, to| std::os::unix::fs::symlink(to, e).unwrap(),
                false,
            ),
            ("no samples/", |e, _| fs_err::create_dir(e).unwrap(), false),
            (
                "an empty samples/",
                |e, _| fs_err::create_dir_all(e.join("samples")).unwrap(),
                false,
            ),
            (
                "a sample",
                |e, _| fs_err::create_dir_all(e.join("samples/0001")).unwrap(),
                true,
            ),
            (
                "a file in samples/",
                |e, _| {
                    fs_err::create_dir_all(e.join("samples")).unwrap();
                    overwrite(&e.join("samples/stray"), b"");
                },
                true,
            ),
            (
                "samples/ a link",
                |e, to| {
                    fs_err::create_dir(e).unwrap();
                    std::os::unix::fs::symlink(to.join("samples"), e.join("samples")).unwrap();
                },
                true,
            ),
            (
                "samples/ a file",
                |e, _| {
                    fs_err::create_dir(e).unwrap();
                    overwrite(&e.join("samples"), b"");
                },
                true,
            ),
        ];
        let stats = EntryStats::new(root.path());
        for (i, (what, make, has)) in shapes.into_iter().enumerate() {
            let key = RunKey::of_canonical(&i.to_string());
            let entry = entry_dir(root.path(), &key);
            fs_err::create_dir_all(entry.parent().unwrap()).unwrap();
            make(&entry, &elsewhere);
            let listed = sample_dirs(&entry).is_ok_and(|d| !d.is_empty());
            assert_eq!(
                (listed, has_sample_dirs(&stats, &key)),
                (has, has),
                "{what}"
            );
        }
    }

    #[test]
    fn a_sample_that_is_or_holds_a_link_is_damage_even_to_a_file_of_the_store() {
        let (_root, store) = store();
        let (key, _) = commit(&store, "{}");
        for _ in 0..4 {
            commit(&store, "{}");
        }
        let samples = samples_dir(store.root(), &key);
        let link = |to: &str, at: &str| {
            let at = samples.join(at);
            crate::store::tmp::remove_all(&at).unwrap();
            std::os::unix::fs::symlink(to, at).unwrap();
        };
        // Each points to a sound sample's file of the same entry, which
        // read through the link would make the sample look sound.
        link("../0001/result.json", "0002/result.json");
        link("../../0001/logs/engine.log", "0003/logs/engine.log");
        link("../0001/logs", "0004/logs");
        link("0001", "0005");
        let found = store.verify().unwrap();
        let report: Vec<String> = found
            .findings
            .iter()
            .map(|f| format!("{}: {}", relative(&store, [&f.path])[0], f.damage))
            .collect();
        let entry = format!("entries/{}/{key}/samples", &key.as_str()[..2]);
        let said = |at: &str| {
            format!(
                "{entry}/{at}: a symbolic link, never followed: perfpipe reads only the store's own files; the sample is not used"
            )
        };
        assert_eq!(
            report,
            [
                said("0002/result.json"),
                said("0003/logs/engine.log"),
                said("0004/logs"),
                said("0005"),
            ]
        );
        let used: Vec<String> = store
            .samples(&key)
            .unwrap()
            .into_iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(used, ["0001"]);
    }

    #[test]
    fn verify_reports_every_kind_of_damage_where_it_is() {
        let (_root, store) = store();
        let (sound, _) = commit(&store, "{}");
        let (edited, _) = commit(&store, "[]");
        let (results, _) = commit(&store, "1");
        commit(&store, "1");
        commit(&store, "1");
        let entry = entry_dir(store.root(), &edited);
        overwrite(&entry.join("inputs.json"), b"[ ]");
        let samples = samples_dir(store.root(), &results);
        overwrite(&samples.join("0001/result.json"), b"{\"key\": \"");
        let foreign = serde_json::to_string(&result(&sound)).unwrap();
        overwrite(&samples.join("0002/result.json"), foreign.as_bytes());
        fs_err::remove_file(samples.join("0003/result.json")).unwrap();
        fs_err::create_dir(samples.join("0004.partial")).unwrap();
        let shards = store.root().join("entries");
        fs_err::create_dir_all(shards.join("zz").join(sound.as_str())).unwrap();
        fs_err::create_dir_all(shards.join("ab").join("not-a-key")).unwrap();

        let found = store.verify().unwrap();
        assert_eq!((found.entries, found.samples, found.empty), (5, 6, 0));
        let report = found
            .findings
            .iter()
            .map(|f| format!("{}: {}", relative(&store, [&f.path])[0], f.damage))
            .collect::<Vec<_>>()
            .join("\n")
            .replace(sound.as_str(), "SOUND")
            .replace(edited.as_str(), "EDITED")
            .replace(results.as_str(), "RESULTS")
            .replace(RunKey::of_canonical("[ ]").as_str(), "HASH");
        insta::assert_snapshot!(report, @r"
        entries/4f/EDITED/inputs.json: hashes to `HASH`, not to the entry's key; the entry's samples are not used
        entries/6b/RESULTS/samples/0001/result.json: does not parse as a result (EOF while parsing a string at line 1 column 9); the sample is not used
        entries/6b/RESULTS/samples/0002/result.json: is a result of `SOUND`, not of the entry's key; the sample is not used
        entries/6b/RESULTS/samples/0003/result.json: missing; the sample is not used
        entries/6b/RESULTS/samples/0004.partial: not a sample; nothing reads it
        entries/ab/not-a-key: not named by a key; nothing reads it
        entries/zz/SOUND: not in its key's shard; nothing reads it
        ");
        assert!(
            store.samples(&edited).unwrap().is_empty(),
            "damage is never used"
        );
        assert!(store.samples(&results).unwrap().is_empty());
    }
}
