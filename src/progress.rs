//! How far a benchmark has gone: the counters a progress display shows
//! (requests done and failed, output tokens per second, time left), apart
//! from any drawing, so that a terminal, a CI log, a Slurm job or a server
//! can each show them their own way. (pure)

use std::time::Duration;

use crate::metrics::RequestRecord;

/// The measured requests of one benchmark so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BenchProgress {
    pub total: usize,
    pub done: usize,
    pub failed: usize,
    pub output_tokens: u64,
    /// From the start of the measured window to the latest request's end, as
    /// the records tell it (no clock is read: the same records give the
    /// same progress).
    pub elapsed: Duration,
}

impl BenchProgress {
    pub fn new(total: usize) -> Self {
        Self {
            total,
            ..Self::default()
        }
    }

    /// Counts a request that ended.
    pub fn record(&mut self, record: &RequestRecord) {
        self.done += 1;
        self.failed += usize::from(!record.success);
        self.output_tokens += record.output_tokens;
        let end = record.start + record.latency.max(0.0);
        if let Ok(end) = Duration::try_from_secs_f64(end)
            && end > self.elapsed
        {
            self.elapsed = end;
        }
    }

    /// Output tokens per second over the elapsed time; 0 before any ended.
    pub fn output_tokens_per_s(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            self.output_tokens as f64 / secs
        } else {
            0.0
        }
    }

    /// The time left if the requests left end at the pace of those done;
    /// unknown before the first.
    pub fn eta(&self) -> Option<Duration> {
        if self.done == 0 {
            return None;
        }
        let left = self.total.saturating_sub(self.done) as f64;
        Duration::try_from_secs_f64(self.elapsed.as_secs_f64() * left / self.done as f64).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(success: bool, tokens: u64, start: f64, latency: f64) -> RequestRecord {
        RequestRecord {
            success,
            output_tokens: tokens,
            start,
            latency,
            ..RequestRecord::default()
        }
    }

    #[test]
    fn counts_rates_and_time_left_from_the_records() {
        let mut p = BenchProgress::new(4);
        assert_eq!((p.output_tokens_per_s(), p.eta()), (0.0, None));
        p.record(&ended(true, 100, 0.0, 2.0));
        // A request that ended earlier does not move the clock back.
        p.record(&ended(false, 0, 0.5, 0.5));
        assert_eq!((p.done, p.failed, p.output_tokens), (2, 1, 100));
        assert_eq!(p.elapsed, Duration::from_secs(2));
        assert_eq!(p.output_tokens_per_s(), 50.0);
        assert_eq!(p.eta(), Some(Duration::from_secs(2)));
        p.record(&ended(true, 100, 1.0, 3.0));
        p.record(&ended(true, 100, 1.0, 1.0));
        assert_eq!(p.eta(), Some(Duration::ZERO));
        assert_eq!(p.output_tokens_per_s(), 75.0);
    }
}
