//! `vllm bench serve`'s ramp-up (v0.10 and later): the request rate moves
//! from a start to an end rate over the benchmark, linearly or
//! exponentially in the request's index, and each gap is drawn at the rate
//! of the request it precedes. Unlike a fixed rate, the times are not
//! rescaled.                                                           (pure)

use std::time::Duration;

use super::arrivals::{ScheduleError, gamma};
use crate::rng::Rng;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    Linear,
    Exponential,
}

impl Strategy {
    pub fn name(self) -> &'static str {
        match self {
            Self::Linear => "linear",
            Self::Exponential => "exponential",
        }
    }
}

/// A ramp from `start` to `end` requests per second (integers, as vLLM takes them).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RampUp {
    pub strategy: Strategy,
    pub start: u32,
    pub end: u32,
}

impl RampUp {
    /// The rate request `index` of `n` is sent at: vLLM's
    /// `_get_current_request_rate`.
    pub fn rate(&self, index: usize, n: usize) -> f64 {
        let progress = index as f64 / n.saturating_sub(1).max(1) as f64;
        let (start, end) = (f64::from(self.start), f64::from(self.end));
        match self.strategy {
            Strategy::Linear => start + (end - start) * progress,
            Strategy::Exponential => start * (end / start).powf(progress),
        }
    }

    /// When each of `n` requests leaves: the sum of the gaps before it and
    /// its own, each gamma(burstiness) at the request's rate, seeded.
    pub fn delays(
        &self,
        n: usize,
        burstiness: f64,
        seed: u64,
    ) -> Result<Vec<Duration>, ScheduleError> {
        let error = || ScheduleError {
            n,
            rate: f64::from(self.start),
            burstiness,
        };
        if !(burstiness.is_finite() && burstiness > 0.0) {
            return Err(error());
        }
        let mut rng = Rng::new(seed);
        let mut t = 0.0;
        (0..n)
            .map(|i| {
                let rate = self.rate(i, n);
                if !(rate.is_finite() && rate > 0.0) {
                    return Err(error());
                }
                t += gamma(&mut rng, burstiness) / (burstiness * rate);
                Duration::try_from_secs_f64(t).map_err(|_| error())
            })
            .collect()
    }

    /// vLLM's `rps_change_events`: the start rate at the start, then each
    /// whole rate the ramp reaches, at the send time of the first request
    /// sent at it (several at once when the rate jumps past more than one).
    pub fn change_events(&self, delays: &[Duration]) -> Vec<(u32, Duration)> {
        let n = delays.len();
        let mut last = self.start;
        let mut events = vec![(last, Duration::ZERO)];
        for (i, &at) in delays.iter().enumerate() {
            let now = self.rate(i, n) as u32;
            if now > last {
                events.extend((last + 1..=now).map(|rps| (rps, at)));
                last = now;
            }
        }
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_move_from_start_to_end_in_the_requests_index() {
        let linear = RampUp {
            strategy: Strategy::Linear,
            start: 1,
            end: 5,
        };
        let rates: Vec<f64> = (0..5).map(|i| linear.rate(i, 5)).collect();
        assert_eq!(rates, [1.0, 2.0, 3.0, 4.0, 5.0]);
        let exponential = RampUp {
            strategy: Strategy::Exponential,
            ..linear
        };
        let rates: Vec<f64> = (0..3).map(|i| exponential.rate(i, 3)).collect();
        assert!((rates[1] - 5f64.sqrt()).abs() < 1e-12, "{rates:?}");
        assert_eq!((rates[0], rates[2]), (1.0, 5.0));
        // One request: vLLM divides by max(n - 1, 1).
        assert_eq!(linear.rate(0, 1), 1.0);
    }

    #[test]
    fn gaps_are_drawn_at_each_requests_rate_and_not_rescaled() {
        let ramp = RampUp {
            strategy: Strategy::Linear,
            start: 10,
            end: 10,
        };
        // At a constant 10 req/s the mean gap is 0.1 s; the last request
        // is not moved to n / rate as a fixed rate's is.
        let d = ramp.delays(4000, 1.0, 3).unwrap();
        let last = d[3999].as_secs_f64();
        assert!(
            (last - 400.0).abs() < 20.0 && (last - 400.0).abs() > 1e-6,
            "{last}"
        );
        assert_eq!(d, ramp.delays(4000, 1.0, 3).unwrap(), "seeded");
        // Ramping 1 → 100 req/s: the second half is sent far faster.
        let ramp = RampUp {
            strategy: Strategy::Linear,
            start: 1,
            end: 100,
        };
        let d = ramp.delays(1000, 1.0, 3).unwrap();
        let first = d[499].as_secs_f64();
        let second = d[999].as_secs_f64() - first;
        assert!(first > 3.0 * second, "{first} {second}");
        assert!(
            RampUp { start: 0, ..ramp }.delays(3, 1.0, 3).is_err(),
            "a rate of 0 never sends"
        );
    }

    #[test]
    fn change_events_name_each_whole_rate_reached() {
        let ramp = RampUp {
            strategy: Strategy::Linear,
            start: 1,
            end: 4,
        };
        let at = |s: u64| Duration::from_secs(s);
        let delays = [at(1), at(2), at(3)];
        // Rates 1, 2.5, 4.
        assert_eq!(
            ramp.change_events(&delays),
            [(1, at(0)), (2, at(2)), (3, at(3)), (4, at(3))]
        );
    }
}
