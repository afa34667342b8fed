//! When each request leaves: all at once for `inf`; at a finite rate either
//! gamma-distributed gaps (shape = burstiness; 1 is Poisson), seeded, and
//! rescaled as vLLM does so that the last request leaves at `n / rate`, or
//! evenly spaced, request k (from 1) at `k / rate`, as guidellm's `constant`
//! profile schedules them.

use std::time::Duration;

use thiserror::Error;

use crate::rng::Rng;
use crate::spec::{Arrival, RequestRate};

/// A rate or burstiness that gives no schedule; the experiment's and
/// `bench`'s bounds (`spec::bounds`) refuse them before any request.
#[derive(Debug, Clone, PartialEq, Error)]
#[error(
    "{n} requests at a request rate of {rate:?} with burstiness {burstiness:?} have no schedule this clock can represent"
)]
pub struct ScheduleError {
    pub n: usize,
    pub rate: f64,
    pub burstiness: f64,
}

/// When each of `n` requests leaves, after the start.
pub fn delays(
    n: usize,
    rate: RequestRate,
    arrival: Arrival,
    burstiness: f64,
    seed: u64,
) -> Result<Vec<Duration>, ScheduleError> {
    let RequestRate::PerSecond(rate) = rate else {
        return Ok(vec![Duration::ZERO; n]);
    };
    let error = || ScheduleError {
        n,
        rate,
        burstiness,
    };
    // A shape that is not finite and positive would never leave `gamma`.
    if !(rate.is_finite() && rate > 0.0 && burstiness.is_finite() && burstiness > 0.0) {
        return Err(error());
    }
    let to_duration = |secs: f64| Duration::try_from_secs_f64(secs).map_err(|_| error());
    if arrival == Arrival::Constant {
        return (1..=n).map(|k| to_duration(k as f64 / rate)).collect();
    }
    let mut rng = Rng::new(seed);
    // Gaps of mean 1 (gamma(k) / k), rescaled below: no product of the rate
    // and the shape can overflow.
    let mut t = 0.0;
    let mut times: Vec<f64> = (0..n)
        .map(|_| {
            t += gamma(&mut rng, burstiness) / burstiness;
            t
        })
        .collect();
    if let Some(&last) = times.last()
        && last > 0.0
    {
        let target = n as f64 / rate;
        times.iter_mut().for_each(|x| *x *= target / last);
    }
    times.into_iter().map(to_duration).collect()
}

/// Gamma(shape, 1) by Marsaglia and Tsang; shapes below 1 are boosted.
pub(crate) fn gamma(rng: &mut Rng, shape: f64) -> f64 {
    if shape < 1.0 {
        let u = 1.0 - rng.next_f64();
        return gamma(rng, shape + 1.0) * u.powf(1.0 / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = normal(rng);
        let v = (1.0 + c * x).powi(3);
        if v <= 0.0 {
            continue;
        }
        let u = 1.0 - rng.next_f64();
        if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
            return d * v;
        }
    }
}

/// Standard normal by Box-Muller.
fn normal(rng: &mut Rng) -> f64 {
    let u1 = 1.0 - rng.next_f64();
    let u2 = rng.next_f64();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gaps(burstiness: f64, seed: u64) -> Vec<f64> {
        let d = delays(
            4000,
            RequestRate::PerSecond(10.0),
            Arrival::Poisson,
            burstiness,
            seed,
        )
        .unwrap();
        d.windows(2).map(|w| (w[1] - w[0]).as_secs_f64()).collect()
    }

    fn cv(v: &[f64]) -> f64 {
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64;
        var.sqrt() / mean
    }

    #[test]
    fn seeded_rescaled_and_burstier_below_one() {
        assert_eq!(gaps(1.0, 7), gaps(1.0, 7));
        assert_ne!(gaps(1.0, 7), gaps(1.0, 8));
        let d = delays(4000, RequestRate::PerSecond(10.0), Arrival::Poisson, 1.0, 7).unwrap();
        assert!((d[3999].as_secs_f64() - 400.0).abs() < 1e-6);
        // Poisson gaps have CV 1; gamma(k) gaps have CV 1/sqrt(k).
        assert!((cv(&gaps(1.0, 1)) - 1.0).abs() < 0.1);
        assert!((cv(&gaps(0.25, 1)) - 2.0).abs() < 0.25);
        assert!((cv(&gaps(4.0, 1)) - 0.5).abs() < 0.06);
        assert!(
            delays(3, RequestRate::Infinite, Arrival::Constant, 1.0, 0)
                .unwrap()
                .iter()
                .all(|d| d.is_zero())
        );
    }

    #[test]
    fn extreme_rates_and_shapes_give_a_schedule_or_an_error_never_a_panic() {
        use crate::spec::bounds::MIN_REQUEST_RATE;
        let rate = RequestRate::PerSecond;
        for (r, b) in [
            (1e-300, 1.0),
            (5.0, 0.0),
            (5.0, f64::NAN),
            (5.0, f64::INFINITY),
            (f64::NAN, 1.0),
            (-1.0, 1.0),
        ] {
            assert!(
                delays(10, rate(r), Arrival::Poisson, b, 1).is_err(),
                "{r} {b}"
            );
        }
        for (r, b) in [
            (MIN_REQUEST_RATE, 1.0),
            (1e300, 1.0),
            (5.0, 1e-300),
            (5.0, 1e300),
            (f64::MAX, f64::MAX),
            (5.0, f64::MIN_POSITIVE),
        ] {
            let d = delays(100, rate(r), Arrival::Poisson, b, 1).unwrap();
            assert!(d.windows(2).all(|w| w[0] <= w[1]), "{r} {b}");
        }
        let slowest = delays(3, rate(MIN_REQUEST_RATE), Arrival::Poisson, 1.0, 1).unwrap();
        assert!((slowest[2].as_secs_f64() - 3e6).abs() < 1.0);
    }

    #[test]
    fn constant_arrivals_are_evenly_spaced_from_one_gap_in() {
        let d = delays(4, RequestRate::PerSecond(8.0), Arrival::Constant, 1.0, 7).unwrap();
        let secs: Vec<f64> = d.iter().map(Duration::as_secs_f64).collect();
        assert_eq!(secs, [0.125, 0.25, 0.375, 0.5]);
        assert_eq!(
            d,
            delays(4, RequestRate::PerSecond(8.0), Arrival::Constant, 1.0, 8).unwrap(),
            "no randomness"
        );
    }
}
