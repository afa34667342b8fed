//! A sample's per-request journal (`logs/requests.jsonl`), read back for
//! the report's distributions.

use super::{Error, Sample};
use crate::metrics::RequestRecord;

/// One line of the journal, as the executor writes it.
#[derive(serde::Deserialize)]
struct Line {
    record: RequestRecord,
}

impl Sample {
    /// Where its journal is (when it has one).
    pub fn journal_path(&self) -> std::path::PathBuf {
        self.dir.join("logs").join("requests.jsonl")
    }

    /// The requests its journal holds, in the order they ended; none when it
    /// has no journal (imports, external harnesses). A line that does not
    /// parse (the last one of a killed process, cut short) is skipped.
    pub fn journal(&self) -> Result<Vec<RequestRecord>, Error> {
        let bytes = match super::files::read(&self.journal_path()) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        // Server text quoted in an error may not be UTF-8; the times are.
        Ok(String::from_utf8_lossy(&bytes)
            .lines()
            .filter_map(|line| serde_json::from_str::<Line>(line).ok())
            .map(|line| line.record)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing::*;

    #[test]
    #[expect(
        clippy::disallowed_methods,
        reason = "the test writes the journal a harness would have written"
    )]
    fn a_journal_reads_back_its_records_and_a_missing_one_is_empty() {
        let (_root, store) = store();
        let (key, _) = commit(&store, r#"{"journal":1}"#);
        let sample = store.samples(&key).unwrap().remove(0);
        assert_eq!(sample.journal().unwrap(), []);
        let record = RequestRecord {
            success: true,
            ttft: 0.25,
            itl: crate::metrics::Gaps::from_secs(&[0.01, 0.02]),
            ..RequestRecord::default()
        };
        let line = serde_json::json!({"index": 3, "record": record});
        std::fs::write(
            sample.dir.join("logs/requests.jsonl"),
            format!("{line}\n{{\"index\": 4, \"rec"),
        )
        .unwrap();
        assert_eq!(sample.journal().unwrap(), [record]);
    }
}
