//! Published numbers as a sample of their run, once: importing the same
//! block again adds nothing.

use super::write::Committed;
use super::{Error, Outcome, RunResult, Store};
use crate::key::RunKey;

/// What [`Store::import`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Imported {
    /// A new sample holds the numbers.
    Added(Committed),
    /// The sample `id` already holds the same numbers; nothing was written.
    AlreadyThere { id: String },
}

impl Store {
    /// Stores `result` (an [`Outcome::Imported`]) as a new sample of `key`,
    /// unless one of the key's samples already holds the same numbers.
    pub fn import(
        &self,
        key: &RunKey,
        canonical: &str,
        result: &RunResult,
    ) -> Result<Imported, Error> {
        let lock = self.lock(key)?;
        let numbers = imported_numbers(result);
        if numbers.is_some() {
            let samples = self.samples(key)?;
            if let Some(same) = samples
                .iter()
                .find(|s| imported_numbers(&s.result) == numbers)
            {
                return Ok(Imported::AlreadyThere {
                    id: same.id.clone(),
                });
            }
        }
        let pending = self.begin_sample()?;
        Ok(Imported::Added(
            pending.commit(self, key, canonical, result, &lock)?,
        ))
    }
}

fn imported_numbers(result: &RunResult) -> Option<&std::collections::BTreeMap<String, f64>> {
    match &result.outcome {
        Outcome::Imported { metrics, .. } => Some(metrics),
        Outcome::Success { .. } | Outcome::Failure { .. } => None,
    }
}
