//! Which directories perfpipe may treat as its store. perfpipe deletes and
//! moves things only inside a store it made, so a directory given as the
//! store (`--store`, `PERFPIPE_STORE`, `store =` in `perfpipe.toml`) must be
//! one of:
//!
//! - missing or empty: the first command that writes creates it and marks it;
//! - marked: it holds [`MARKER`], written when perfpipe first wrote to it;
//! - an unmarked store of an earlier perfpipe: its top level holds only the
//!   layout's names (`entries/`, `drv/`, `inputs/`, `quarantine/`, `tmp/`,
//!   `locks/`, `cache/`, `logs/`), besides a README and git's placeholder
//!   files (a project may commit `store/README.md`), and `entries/` nothing
//!   but key shards (two hex digits); it is marked on the first write
//!   (adopted). Adopting a
//!   directory that only looks like a store costs nothing of its own: what
//!   perfpipe deletes it recognizes by its own names and lock files, never
//!   by where it is.
//!
//! Anything else holds files perfpipe did not make and is refused (as git
//! refuses to make a repository where another one's files are). A layout
//! directory that is a symbolic link is refused too: perfpipe never follows
//! a link out of its store.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use super::Error;
use super::layout;

/// The file that marks a directory as a perfpipe store.
pub const MARKER: &str = "perfpipe-store";

/// What the marker says, for people who find it.
const MARKER_TEXT: &str = "This directory is a perfpipe store (see `perfpipe store --help`).\n\
perfpipe deletes here only what it made: key entries, its own temp dirs, quarantine.\n";

/// The top-level names a store's layout has (besides [`MARKER`]).
const LAYOUT: [&str; 9] = [
    "entries",
    // Launch material (`layout::launches_dir`): on-disk name kept.
    "drv",
    "inputs",
    "quarantine",
    "tmp",
    "locks",
    "cache",
    // Slurm jobs' output (`logs/slurm/`).
    "logs",
    // The index of results (`results_index`).
    "index",
];

/// What the directory given as a store is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// Missing, or an empty directory.
    New,
    Marked,
    /// An unmarked store of an earlier perfpipe.
    Earlier,
}

/// Whether `root` is a store perfpipe marked (the marker is a regular file,
/// not a link). Caches kept in the store are written only into one.
pub fn is_marked(root: &Path) -> bool {
    std::fs::symlink_metadata(root.join(MARKER)).is_ok_and(|m| m.is_file())
}

/// What `root` is as a store, refusing a directory that holds things
/// perfpipe did not make and a layout directory that is a link or a file.
pub(super) fn classify(root: &Path) -> Result<Kind, Error> {
    let names = match fs_err::read_dir(root) {
        Ok(children) => children
            .map(|c| c.map(|c| c.file_name().to_string_lossy().into_owned()))
            .collect::<std::io::Result<Vec<String>>>()?,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Kind::New),
        Err(e) if e.kind() == ErrorKind::NotADirectory => {
            return Err(Error::NotADirectory {
                root: root.to_owned(),
                path: super::first_non_directory(root),
            });
        }
        Err(e) => return Err(e.into()),
    };
    check_layout_dirs(root)?;
    if is_marked(root) {
        return Ok(Kind::Marked);
    }
    if names.is_empty() {
        return Ok(Kind::New);
    }
    let mut foreign: Vec<String> = names
        .iter()
        .filter(|n| !LAYOUT.contains(&n.as_str()) && !is_project_note(n))
        .cloned()
        .collect();
    foreign.extend(foreign_shards(root)?);
    if foreign.is_empty() {
        return Ok(Kind::Earlier);
    }
    foreign.sort();
    Err(Error::NotAStore {
        root: root.to_owned(),
        foreign,
    })
}

/// A file a project keeps in its store directory to explain or keep it
/// (`README.md`, `.gitignore`, `.gitkeep`): perfpipe never touches a file
/// at the store's top level, so these do not make it another's directory.
fn is_project_note(name: &str) -> bool {
    name.to_ascii_lowercase().starts_with("readme")
        || [".gitignore", ".gitkeep", ".keep"].contains(&name)
}

/// The names under `entries/` that are not key shards, as `entries/<name>`.
fn foreign_shards(root: &Path) -> Result<Vec<String>, Error> {
    let entries = layout::entries_dir(root);
    let children = match fs_err::read_dir(&entries) {
        Ok(children) => children,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let mut out = Vec::new();
    for child in children {
        let name = child?.file_name().to_string_lossy().into_owned();
        let is_shard = name.len() == 2
            && name
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !is_shard {
            out.push(format!("entries/{name}"));
        }
    }
    Ok(out)
}

/// Every directory of the layout that perfpipe deletes in or moves into.
fn layout_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = LAYOUT.iter().map(|n| root.join(n)).collect();
    dirs.push(layout::inputs_dir(root));
    dirs.push(root.join("cache").join("lacks"));
    dirs.push(root.join("logs").join("slurm"));
    dirs
}

/// Refuses a layout directory that is a symbolic link (perfpipe would
/// delete in, or move into, what it points to) or not a directory.
pub(super) fn check_layout_dirs(root: &Path) -> Result<(), Error> {
    for path in layout_dirs(root) {
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(Error::Link {
                    root: root.to_owned(),
                    path,
                });
            }
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(Error::NotADirectory {
                    root: root.to_owned(),
                    path,
                });
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) if e.kind() == ErrorKind::NotADirectory => {
                return Err(Error::NotADirectory {
                    root: root.to_owned(),
                    path: super::first_non_directory(&path),
                });
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Refuses `path`, a directory of the store perfpipe is about to move
/// something into, when it is a link.
pub(super) fn refuse_link(root: &Path, path: &Path) -> Result<(), Error> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_symlink()) {
        return Err(Error::Link {
            root: root.to_owned(),
            path: path.to_owned(),
        });
    }
    Ok(())
}

/// Makes `root` a marked store before the first write into it: creates it
/// when missing, and writes [`MARKER`] into a new, empty or earlier store.
/// What it holds is classified again here, so a directory that filled with
/// other things since the store was opened is refused, not marked.
pub(super) fn mark(root: &Path) -> Result<(), Error> {
    if is_marked(root) {
        return check_layout_dirs(root);
    }
    classify(root)?;
    fs_err::create_dir_all(root)?;
    let marker = root.join(MARKER);
    // `create_new`: never write through a link someone put there.
    match fs_err::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&marker)
    {
        Ok(mut file) => {
            std::io::Write::write_all(&mut file, MARKER_TEXT.as_bytes())?;
            file.sync_all()?;
            super::write::sync_dir(root)?;
        }
        // Another perfpipe marked it meanwhile.
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e.into()),
    }
    // Another process put something else there meanwhile.
    if !is_marked(root) {
        return Err(Error::NotAStore {
            root: root.to_owned(),
            foreign: vec![MARKER.to_owned()],
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    #[test]
    fn missing_empty_marked_and_earlier_stores_are_stores_and_others_are_refused() {
        let top = dir();
        let root = top.path().join("store");
        assert_eq!(classify(&root).unwrap(), Kind::New);
        fs_err::create_dir(&root).unwrap();
        assert_eq!(classify(&root).unwrap(), Kind::New);

        fs_err::create_dir_all(root.join("entries/ab")).unwrap();
        fs_err::create_dir_all(root.join("tmp/proc-1-x")).unwrap();
        crate::store::testing::overwrite(&root.join("README.md"), b"# store/");
        assert_eq!(classify(&root).unwrap(), Kind::Earlier);
        mark(&root).unwrap();
        assert_eq!(classify(&root).unwrap(), Kind::Marked);

        let foreign = top.path().join("home");
        fs_err::create_dir_all(foreign.join("tmp")).unwrap();
        fs_err::create_dir_all(foreign.join("thesis")).unwrap();
        let err = classify(&foreign).unwrap_err();
        assert!(
            matches!(&err, Error::NotAStore { foreign, .. } if foreign == &["thesis"]),
            "{err:?}"
        );
        assert!(mark(&foreign).is_err());
        assert!(
            !foreign.join(MARKER).exists(),
            "a foreign directory is never marked"
        );

        // A killed earlier perfpipe's temp dir alone.
        let only_tmp = top.path().join("only-tmp");
        fs_err::create_dir_all(only_tmp.join("tmp/proc-2-y")).unwrap();
        assert_eq!(classify(&only_tmp).unwrap(), Kind::Earlier);
        // Layout names with foreign things in `entries/`.
        let odd = top.path().join("odd");
        fs_err::create_dir_all(odd.join("entries/photos")).unwrap();
        let err = classify(&odd).unwrap_err();
        assert!(
            matches!(&err, Error::NotAStore { foreign, .. } if foreign == &["entries/photos"]),
            "{err:?}"
        );
    }

    #[test]
    fn a_layout_directory_that_is_a_link_is_refused_even_in_a_marked_store() {
        let top = dir();
        let root = top.path().join("store");
        mark(&root).unwrap();
        let elsewhere = top.path().join("elsewhere");
        fs_err::create_dir(&elsewhere).unwrap();
        for name in ["quarantine", "tmp", "inputs/sha256", "cache"] {
            let link = root.join(name);
            fs_err::create_dir_all(link.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
            let err = classify(&root).unwrap_err();
            assert!(
                matches!(&err, Error::Link { path, .. } if *path == link),
                "{name}: {err:?}"
            );
            assert!(mark(&root).is_err(), "{name}");
            fs_err::remove_file(&link).unwrap();
        }
        assert_eq!(classify(&root).unwrap(), Kind::Marked);
    }
}
