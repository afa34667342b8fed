//! Which runtime's results a report shows when none is named: the one the
//! store has results under, measured runtimes before the simulation. (pure)

use crate::facts::Runtime;

/// What the store's results say about the runtime to report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredRuntime {
    /// The one runtime to report (measured if any has results, else `sim`).
    One(Runtime),
    /// Results under both measured runtimes: the user must choose.
    Ambiguous(Vec<Runtime>),
    /// No result under any runtime.
    None,
}

/// `with_results`: the runtimes under which the store holds a result of
/// some run of the experiment.
pub fn stored_runtime(with_results: &[Runtime]) -> StoredRuntime {
    let measured: Vec<Runtime> = [Runtime::Docker, Runtime::Local]
        .into_iter()
        .filter(|r| with_results.contains(r))
        .collect();
    match measured[..] {
        [one] => StoredRuntime::One(one),
        [] if with_results.contains(&Runtime::Sim) => StoredRuntime::One(Runtime::Sim),
        [] => StoredRuntime::None,
        _ => StoredRuntime::Ambiguous(measured),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Runtime::{Docker, Local, Sim};

    #[test]
    fn measured_results_come_before_simulated_and_two_measured_runtimes_are_ambiguous() {
        assert_eq!(stored_runtime(&[Sim]), StoredRuntime::One(Sim));
        assert_eq!(stored_runtime(&[Sim, Local]), StoredRuntime::One(Local));
        assert_eq!(stored_runtime(&[Docker, Sim]), StoredRuntime::One(Docker));
        assert_eq!(
            stored_runtime(&[Docker, Local, Sim]),
            StoredRuntime::Ambiguous(vec![Docker, Local])
        );
        assert_eq!(stored_runtime(&[]), StoredRuntime::None);
    }
}
