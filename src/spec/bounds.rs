//! The bounds of a benchmark's load values, shared by the experiment language
//! and the options of `perfpipe run` and `perfpipe bench`. Past them a value
//! cannot be measured: a send schedule longer than any clock, a deadline past
//! any instant, prompts no memory holds, a generator that never returns.
//! They are checked where a value enters, before any engine starts. (pure)

use thiserror::Error;

use super::RequestRate;

/// The slowest request rate, in requests per second (one request every 11.6
/// days on average): even `u32::MAX` requests at it leave within a `Duration`.
pub const MIN_REQUEST_RATE: f64 = 1e-6;

/// The longest startup and stall timeout, in seconds: a week.
pub const MAX_TIMEOUT_SECS: u64 = 7 * 24 * 3600;

/// The most prompts, and the most warm-up requests, of one `perfpipe bench`.
pub const MAX_PROMPTS: u32 = 1_000_000;

/// The most prompt tokens `perfpipe bench`'s random dataset builds: they are
/// held in memory as text (about 4 GiB at this bound).
pub const MAX_PROMPT_TOKENS: u64 = 1 << 30;

#[derive(Debug, Clone, PartialEq, Error)]
pub enum BoundError {
    #[error(
        "the request rate must be `inf` or a number of requests per second of at least {MIN_REQUEST_RATE:e}, found `{0:?}`"
    )]
    Rate(f64),
    #[error("the burstiness must be a finite number above 0, found `{0:?}`")]
    Burstiness(f64),
    #[error("the range ratio must be in [0, 1) (as vLLM requires), found `{0:?}`")]
    RangeRatio(f64),
    #[error("the temperature must be a finite number of at least 0, found `{0:?}`")]
    Temperature(f64),
    #[error(
        "{prompts} prompts of up to {longest} tokens each are more than the {MAX_PROMPT_TOKENS} prompt tokens one benchmark builds"
    )]
    PromptTokens { prompts: u32, longest: u64 },
}

/// A request rate: `inf`, or a finite rate of at least [`MIN_REQUEST_RATE`].
pub fn request_rate(rate: f64) -> Result<RequestRate, BoundError> {
    if rate == f64::INFINITY {
        Ok(RequestRate::Infinite)
    } else if rate.is_finite() && rate >= MIN_REQUEST_RATE {
        Ok(RequestRate::PerSecond(rate))
    } else {
        Err(BoundError::Rate(rate))
    }
}

/// The gamma shape of the gaps between requests: finite and above 0.
pub fn burstiness(shape: f64) -> Result<f64, BoundError> {
    if shape.is_finite() && shape > 0.0 {
        Ok(shape)
    } else {
        Err(BoundError::Burstiness(shape))
    }
}

/// vLLM's `random_range_ratio`: lengths are drawn from `[L(1-r), L(1+r)]`.
pub fn range_ratio(ratio: f64) -> Result<f64, BoundError> {
    if (0.0..1.0).contains(&ratio) {
        Ok(ratio)
    } else {
        Err(BoundError::RangeRatio(ratio))
    }
}

pub fn temperature(t: f64) -> Result<f64, BoundError> {
    if t.is_finite() && t >= 0.0 {
        Ok(t)
    } else {
        Err(BoundError::Temperature(t))
    }
}

/// The longest prompt the random dataset draws for `input_len` and `ratio`
/// (a ratio already within [`range_ratio`]).
pub fn longest_random_prompt(input_len: u32, ratio: f64) -> u64 {
    (f64::from(input_len) * (1.0 + ratio)).ceil() as u64
}

/// `prompts` random prompts of at most `input_len × (1 + ratio)` tokens fit
/// [`MAX_PROMPT_TOKENS`].
pub fn random_prompt_tokens(prompts: u32, input_len: u32, ratio: f64) -> Result<(), BoundError> {
    let longest = longest_random_prompt(input_len, ratio);
    if u64::from(prompts).saturating_mul(longest) <= MAX_PROMPT_TOKENS {
        Ok(())
    } else {
        Err(BoundError::PromptTokens { prompts, longest })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_below_the_minimum_or_not_finite_are_refused() {
        assert_eq!(request_rate(f64::INFINITY), Ok(RequestRate::Infinite));
        assert_eq!(request_rate(5.0), Ok(RequestRate::PerSecond(5.0)));
        assert_eq!(
            request_rate(MIN_REQUEST_RATE),
            Ok(RequestRate::PerSecond(MIN_REQUEST_RATE))
        );
        for bad in [0.0, -1.0, 1e-300, f64::NAN, f64::NEG_INFINITY, 9e-7] {
            assert!(request_rate(bad).is_err(), "{bad}");
        }
        // The longest schedule a valid rate can give is a representable Duration.
        let longest = f64::from(u32::MAX) / MIN_REQUEST_RATE;
        assert!(std::time::Duration::try_from_secs_f64(longest).is_ok());
    }

    #[test]
    fn burstiness_range_ratio_and_temperature() {
        assert!(burstiness(1e-300).is_ok() && burstiness(1e300).is_ok());
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(burstiness(bad).is_err(), "{bad}");
        }
        assert!(range_ratio(0.0).is_ok() && range_ratio(0.99).is_ok());
        for bad in [1.0, 5.0, -0.1, f64::NAN, f64::INFINITY] {
            assert!(range_ratio(bad).is_err(), "{bad}");
        }
        assert!(temperature(0.0).is_ok() && temperature(2.0).is_ok());
        for bad in [-0.5, f64::NAN, f64::INFINITY] {
            assert!(temperature(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn prompt_tokens_are_bounded_in_all() {
        assert!(random_prompt_tokens(1000, 1024, 0.0).is_ok());
        assert!(random_prompt_tokens(1024, 1 << 20, 0.0).is_ok());
        assert!(random_prompt_tokens(1025, 1 << 20, 0.0).is_err());
        assert!(random_prompt_tokens(1, u32::MAX, 0.5).is_err());
        assert!(random_prompt_tokens(MAX_PROMPTS, u32::MAX, 0.99).is_err());
    }
}
