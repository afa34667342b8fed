//! What a written report was rendered from, kept beside it as
//! `.<report>.inputs`: the digest of its inputs (perfpipe's version, the
//! experiment, the analysis, the journals its charts show) and the files it
//! was written as. When neither changed, the report is read back instead of
//! rendered again, so a no-op `run` reads no journal and draws no chart.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use sha2::Digest as _;

use crate::digest::Sha256Writer;

use crate::ops::Error;
use crate::ops::user_files::write_file;

/// The record beside a report.
#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Record {
    digest: String,
    /// Each file written, by path, as it was when recorded.
    files: BTreeMap<PathBuf, Stamp>,
}

/// What tells a file's versions apart without reading it (as `git`'s index
/// does): its size, modification time and inode.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Stamp {
    len: u64,
    mtime_ns: i128,
    ino: u64,
}

impl Stamp {
    fn of(path: &Path) -> Option<Self> {
        let m = std::fs::symlink_metadata(path).ok()?;
        Some(Self {
            len: m.len(),
            mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
            ino: m.ino(),
        })
    }
}

/// The digest of a report's inputs: perfpipe's version and executable (its
/// rendering and drawing code: a build of the same version counts as
/// another), `shown` (what the report shows, as rendered by `Debug`) and
/// each of `journals` by its stamp, as a journal's bytes are read only to draw.
/// `shown` is hashed as it is formatted: the `Debug` text of 10,000 runs'
/// analysis is tens of MB, which `run`'s report would otherwise hold while
/// it renders.
pub fn digest(shown: std::fmt::Arguments<'_>, journals: &[PathBuf]) -> String {
    use std::fmt::Write as _;
    let mut hash = Sha256Writer::default();
    let exe = std::env::current_exe().ok().and_then(|p| Stamp::of(&p));
    // Writing into a hash cannot fail.
    let _ = writeln!(hash, "perfpipe {} {exe:?}", env!("CARGO_PKG_VERSION"));
    let _ = hash.write_fmt(shown);
    for path in journals {
        let _ = write!(hash, "\n{} {:?}", path.display(), Stamp::of(path));
    }
    hex::encode(hash.0.finalize())
}

/// Where the record of the report at `report` is.
fn record_path(report: &Path) -> PathBuf {
    let name = report.file_name().unwrap_or_default().to_string_lossy();
    report.with_file_name(format!(".{name}.inputs"))
}

/// The report at `report`, when its record holds `digest` and every file it
/// was written as is as it was recorded; `None` otherwise.
pub fn unchanged(report: &Path, digest: &str) -> Option<String> {
    let bytes = crate::regular_file::read(&record_path(report)).ok()?;
    let record: Record = serde_json::from_slice(&bytes).ok()?;
    let intact = record.digest == digest
        && record.files.contains_key(report)
        && record
            .files
            .iter()
            .all(|(path, stamp)| Stamp::of(path).as_ref() == Some(stamp));
    intact
        .then(|| crate::regular_file::read_to_string(report).ok())
        .flatten()
}

/// Records that the report at `report` and `files` beside it were written
/// from inputs of `digest`.
pub fn record(report: &Path, files: &[PathBuf], digest: &str) -> Result<(), Error> {
    let files = std::iter::once(report)
        .chain(files.iter().map(PathBuf::as_path))
        .map(|p| Some((p.to_owned(), Stamp::of(p)?)))
        .collect::<Option<BTreeMap<_, _>>>();
    // A file gone already: nothing to record, and the next run renders.
    let Some(files) = files else { return Ok(()) };
    let record = Record {
        digest: digest.to_owned(),
        files,
    };
    // A path that is not UTF-8 has no JSON: nothing recorded.
    let Ok(json) = serde_json::to_vec(&record) else {
        return Ok(());
    };
    write_file(&record_path(report), &json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[expect(
        clippy::disallowed_methods,
        reason = "the test writes the files a report would have written"
    )]
    fn a_report_is_read_back_only_while_its_inputs_and_files_are_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let (report, chart) = (dir.path().join("r.md"), dir.path().join("r.c.png"));
        let journal = dir.path().join("requests.jsonl");
        std::fs::write(&report, "# report\n").unwrap();
        std::fs::write(&chart, "png").unwrap();
        std::fs::write(&journal, "{}\n").unwrap();
        let d = digest(format_args!("analysis"), std::slice::from_ref(&journal));
        assert_eq!(unchanged(&report, &d), None, "nothing recorded yet");
        record(&report, std::slice::from_ref(&chart), &d).unwrap();
        assert_eq!(unchanged(&report, &d).as_deref(), Some("# report\n"));
        // Other inputs: rendered again.
        assert_eq!(
            unchanged(
                &report,
                &digest(format_args!("other"), std::slice::from_ref(&journal))
            ),
            None
        );
        // A journal that changed changes the digest.
        std::fs::write(&journal, "{}\n{}\n").unwrap();
        assert_ne!(
            digest(format_args!("analysis"), std::slice::from_ref(&journal)),
            d
        );
        // A chart removed (or rewritten) is drawn again.
        std::fs::remove_file(&chart).unwrap();
        assert_eq!(unchanged(&report, &d), None);
    }
}
