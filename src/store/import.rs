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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing::{result, store};

    fn imported(key: &RunKey, tps: f64) -> RunResult {
        RunResult {
            outcome: Outcome::Imported {
                metrics: [("total_token_throughput".to_owned(), tps)].into(),
                block: format!("Total Token throughput (tok/s): {tps:.2}"),
                labels: Default::default(),
            },
            ..result(key)
        }
    }

    #[test]
    fn the_same_numbers_are_imported_once_and_other_ones_again() {
        let (_root, store) = store();
        let key = RunKey::of_canonical("{}");
        let Imported::Added(first) = store.import(&key, "{}", &imported(&key, 1.5)).unwrap() else {
            panic!("the first import adds a sample");
        };
        assert_eq!(
            store.import(&key, "{}", &imported(&key, 1.5)).unwrap(),
            Imported::AlreadyThere { id: first.id }
        );
        assert!(matches!(
            store.import(&key, "{}", &imported(&key, 2.5)).unwrap(),
            Imported::Added(_)
        ));
        // A failure is not an import: it never counts as the same numbers.
        assert!(matches!(
            store.import(&key, "{}", &result(&key)).unwrap(),
            Imported::Added(_)
        ));
        assert_eq!(store.samples(&key).unwrap().len(), 3);
    }
}
