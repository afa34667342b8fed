//! What the store holds of each run, as analysis reads it: plain data that
//! `ops` loads (analysis reads no file).

use std::collections::BTreeMap;

use crate::key::RunKey;
use crate::metrics::RequestRecord;
use crate::store::Sample;

/// One committed sample and what analysis reads beside its `result.json`.
#[derive(Debug, Clone)]
pub struct StoredSample {
    pub sample: Sample,
    /// Who signed it, when a result cache supplied it (the signer's name).
    pub signer: Option<String>,
    /// Its request journal (empty when it has none: imports, external
    /// harnesses); `None` until loaded, as only SLOs and charts read it.
    pub journal: Option<Vec<RequestRecord>>,
}

impl StoredSample {
    /// A sample with no signer and its journal not loaded.
    pub fn of(sample: Sample) -> Self {
        Self {
            sample,
            signer: None,
            journal: None,
        }
    }
}

/// The samples of each run key.
pub type Stored = BTreeMap<RunKey, Vec<StoredSample>>;

/// The samples `stored` holds of `key`.
pub fn samples_of<'a>(stored: &'a Stored, key: &RunKey) -> &'a [StoredSample] {
    stored.get(key).map(Vec::as_slice).unwrap_or(&[])
}
