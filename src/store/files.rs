//! A run's files in the store, for people and scripts to read (`perfpipe
//! store path`, and the failures `run` reports), and how perfpipe reads
//! them: [`open`], which never follows a link below the store's root.

use std::path::{Path, PathBuf};

use super::{Error, Sample, Store, layout};
use crate::key::RunKey;

/// An entry and its sound samples (damage is never listed).
#[derive(Debug, Clone, PartialEq)]
pub struct EntryFiles {
    pub dir: PathBuf,
    pub samples: Vec<SampleFiles>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SampleFiles {
    pub dir: PathBuf,
    pub result: PathBuf,
    /// `logs/*` (engine, harness, per-request journal), by name.
    pub logs: Vec<PathBuf>,
}

impl Store {
    /// The files of `key`'s entry, or `None` when it holds no sound sample.
    pub fn files(&self, key: &RunKey) -> Result<Option<EntryFiles>, Error> {
        let samples = self.samples(key)?;
        if samples.is_empty() {
            return Ok(None);
        }
        Ok(Some(EntryFiles {
            dir: layout::entry_dir(self.root(), key),
            samples: samples.iter().map(sample_files).collect::<Result<_, _>>()?,
        }))
    }
}

/// The regular file at `path`, a file of an entry (`inputs.json`, a
/// sample's `result.json`, `signature.json`, `logs/*`), opened for reading
/// without following a link anywhere below the store's root: perfpipe never
/// follows a link out of its store, and a link inside it is damage (see
/// `check::find_link`), never read through. A link is an `InvalidInput`
/// error naming it.
pub fn open(path: &Path) -> std::io::Result<std::fs::File> {
    crate::regular_file::open_beneath(root_of(path)?, path)
}

/// The bytes of the file of an entry at `path`, as [`open`] opens it.
pub fn read(path: &Path) -> std::io::Result<Vec<u8>> {
    crate::regular_file::read_beneath(root_of(path)?, path)
}

/// The text (UTF-8) of the file of an entry at `path`, as [`open`] opens it.
pub fn read_to_string(path: &Path) -> std::io::Result<String> {
    crate::regular_file::read_beneath_to_string(root_of(path)?, path)
}

fn root_of(path: &Path) -> std::io::Result<&Path> {
    layout::root_of_entry_path(path).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("`{}` is not in a store's entry", path.display()),
        )
    })
}

fn sample_files(sample: &Sample) -> Result<SampleFiles, Error> {
    let mut logs: Vec<PathBuf> = match fs_err::read_dir(sample.dir.join("logs")) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.path())
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    logs.sort();
    Ok(SampleFiles {
        dir: sample.dir.clone(),
        result: sample.dir.join("result.json"),
        logs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing::*;

    #[test]
    fn an_entry_lists_its_samples_result_and_logs_and_a_missing_one_nothing() {
        let (_root, store) = store();
        let (key, _) = commit(&store, r#"{"files":1}"#);
        let other = RunKey::of_canonical(r#"{"files":2}"#);
        assert_eq!(store.files(&other).unwrap(), None);
        let files = store.files(&key).unwrap().unwrap();
        assert_eq!(files.dir, layout::entry_dir(store.root(), &key));
        assert_eq!(files.samples.len(), 1);
        let sample = &files.samples[0];
        assert_eq!(sample.dir, files.dir.join("samples/0001"));
        assert!(sample.result.is_file());
        assert_eq!(sample.logs, [sample.dir.join("logs/engine.log")]);
    }
}
