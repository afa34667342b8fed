//! Noise floors: with one sample on a side, `diff` has no spread to judge a
//! change by, so a change within its metric's floor counts as noise. The
//! defaults and why: `docs/metrics.md`, "Noise floors". (pure)

use std::collections::BTreeMap;

/// The floor of each metric, in %: the defaults unless set.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NoiseFloors {
    set: BTreeMap<String, f64>,
}

impl NoiseFloors {
    /// `--noise-floor METRIC=PCT`: the floor of `metric` is `pct`.
    pub fn set(&mut self, metric: &str, pct: f64) {
        self.set.insert(metric.to_owned(), pct);
    }

    /// The floor of `metric`, in %.
    pub fn of(&self, metric: &str) -> f64 {
        self.set
            .get(metric)
            .copied()
            .unwrap_or_else(|| default_floor(metric))
    }
}

/// The default floor of a metric by what it measures: a first token waits
/// in the queue (20%); throughputs and the means and medians of per-token
/// and end-to-end times average over every request (5%); tails and anything
/// else, 10%.
pub fn default_floor(metric: &str) -> f64 {
    let percentile = metric
        .strip_prefix('p')
        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
    if metric.contains("ttft") {
        20.0
    } else if percentile {
        10.0
    } else if crate::analyze::higher_is_better(metric)
        || ["tpot", "itl", "e2el"].iter().any(|m| metric.contains(m))
    {
        5.0
    } else {
        10.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_metric_has_the_floor_of_its_kind_unless_set() {
        let mut floors = NoiseFloors::default();
        assert_eq!(floors.of("mean_ttft_ms"), 20.0);
        assert_eq!(floors.of("p99_ttft_ms"), 20.0);
        assert_eq!(floors.of("total_token_throughput"), 5.0);
        assert_eq!(floors.of("mean_tpot_ms"), 5.0);
        assert_eq!(floors.of("median_e2el_ms"), 5.0);
        assert_eq!(floors.of("p99_itl_ms"), 10.0);
        assert_eq!(floors.of("max_concurrent_requests"), 10.0);
        floors.set("mean_ttft_ms", 30.0);
        assert_eq!(floors.of("mean_ttft_ms"), 30.0);
    }
}
