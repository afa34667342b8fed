//! `PERFPIPE_SIM_TIMING=load:…`: latencies that are a stated function of the
//! load, so that searches and sweeps on the simulated engine can be checked
//! exactly, and fast: no batching model runs, each request only waits.
//!
//! A request that arrives while k requests are in flight (itself included)
//! gets its first token after `ttft_ms + ttft_ms_per_req × k` and each next
//! one after `itl_ms + itl_ms_per_req × k`. Under a concurrency cap c with
//! every request sent at once (`rate #inf`), the first c requests see k = 1 …
//! c and every later one k = c (one leaves before the client sends the next),
//! whatever the machine's speed.

use std::time::Duration;

/// The four constants of a `load:` timing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadTiming {
    ttft_ms: f64,
    ttft_ms_per_req: f64,
    itl_ms: f64,
    itl_ms_per_req: f64,
}

/// The largest delay a `load:` timing may give, so no product overflows a `Duration`.
const MAX_MS: f64 = 3_600_000.0;

impl LoadTiming {
    /// `load:ttft_ms=A,ttft_ms_per_req=B,itl_ms=C,itl_ms_per_req=D`; the
    /// per-request terms default to 0.
    pub fn parse(spec: &str) -> Option<Self> {
        let mut t = Self {
            ttft_ms: f64::NAN,
            ttft_ms_per_req: 0.0,
            itl_ms: f64::NAN,
            itl_ms_per_req: 0.0,
        };
        for part in spec.strip_prefix("load:")?.split(',') {
            let (key, value) = part.split_once('=')?;
            let ms = value
                .parse::<f64>()
                .ok()
                .filter(|v| (0.0..=MAX_MS).contains(v))?;
            match key {
                "ttft_ms" => t.ttft_ms = ms,
                "ttft_ms_per_req" => t.ttft_ms_per_req = ms,
                "itl_ms" => t.itl_ms = ms,
                "itl_ms_per_req" => t.itl_ms_per_req = ms,
                _ => return None,
            }
        }
        (!t.ttft_ms.is_nan() && !t.itl_ms.is_nan()).then_some(t)
    }

    /// The time to first token and between tokens of a request that arrived
    /// with `in_flight` requests in flight, itself included.
    pub fn at(&self, in_flight: u64) -> (Duration, Duration) {
        let k = in_flight.min(1 << 20) as f64;
        let ms =
            |base: f64, per: f64| Duration::from_secs_f64((base + per * k).min(MAX_MS) / 1000.0);
        (
            ms(self.ttft_ms, self.ttft_ms_per_req),
            ms(self.itl_ms, self.itl_ms_per_req),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_grow_linearly_with_the_requests_in_flight() {
        let t = LoadTiming::parse("load:ttft_ms=5,ttft_ms_per_req=10,itl_ms=1,itl_ms_per_req=0.5")
            .unwrap();
        assert_eq!(
            t.at(1),
            (Duration::from_millis(15), Duration::from_micros(1500))
        );
        assert_eq!(
            t.at(8),
            (Duration::from_millis(85), Duration::from_millis(5))
        );
        let flat = LoadTiming::parse("load:ttft_ms=3,itl_ms=2").unwrap();
        assert_eq!(
            flat.at(100),
            (Duration::from_millis(3), Duration::from_millis(2))
        );
    }

    #[test]
    fn a_timing_without_its_base_terms_or_out_of_range_is_refused() {
        for bad in [
            "load:ttft_ms=1",
            "load:itl_ms=1",
            "load:ttft_ms=-1,itl_ms=1",
            "load:ttft_ms=nan,itl_ms=1",
            "load:ttft_ms=1e300,itl_ms=1",
            "load:ttft_ms=1,itl_ms=1,speed=2",
            "fixed:ttft_ms=1,itl_ms=1",
        ] {
            assert!(LoadTiming::parse(bad).is_none(), "{bad}");
        }
    }
}
