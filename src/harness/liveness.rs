//! When a request has waited too long: when neither it nor any other request
//! to the same engine instance has received an event for the stall timeout.
//! A busy engine keeps a queued request waiting for its first token for
//! minutes (published 32K-prompt runs: P99 TTFT 766 s) while it streams to
//! the others; a wedged engine, or a stream it forgot, hears from none.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

/// The last event from each engine instance, shared by a benchmark's requests.
#[derive(Debug)]
pub struct Liveness {
    t0: Instant,
    stall: Duration,
    /// Per instance: nanoseconds after `t0` of its last event.
    last: Vec<AtomicU64>,
}

impl Liveness {
    pub fn new(instances: usize, stall: Duration) -> Self {
        Self {
            t0: Instant::now(),
            stall,
            last: (0..instances.max(1)).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    pub fn stall(&self) -> Duration {
        self.stall
    }

    /// `instance` sent an event at `at` (a moment already read: a read of
    /// the clock per network read is not free at 10^6 reads a second).
    pub fn heard_at(&self, instance: usize, at: Instant) {
        let ns = at.saturating_duration_since(self.t0).as_nanos() as u64;
        self.last[instance].fetch_max(ns, Ordering::Relaxed);
    }

    /// When a request to `instance` whose own last sign of life was at `own`
    /// stalls, if nothing arrives before.
    pub fn deadline(&self, instance: usize, own: Instant) -> Instant {
        let heard = crate::clock::deadline(
            self.t0,
            Duration::from_nanos(self.last[instance].load(Ordering::Relaxed)),
        );
        crate::clock::deadline(own.max(heard), self.stall)
    }

    /// Awaits `fut`, or `None` once the request (last alive at `own`) stalls.
    pub async fn within<F: Future>(
        &self,
        instance: usize,
        own: Instant,
        fut: F,
    ) -> Option<F::Output> {
        let mut fut = std::pin::pin!(fut);
        loop {
            let deadline = self.deadline(instance, own);
            match tokio::time::timeout_at(deadline, &mut fut).await {
                Ok(out) => return Some(out),
                // Another request heard from the engine meanwhile: wait on.
                Err(_) if self.deadline(instance, own) > Instant::now() => {}
                Err(_) => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_stalls_only_when_its_engine_instance_is_silent_too() {
        let live = Liveness::new(2, Duration::from_secs(10));
        let t0 = live.t0;
        let s = Duration::from_secs;
        assert_eq!(live.deadline(0, t0), t0 + s(10));
        // Instance 0 streams to another request at 4 s: a request waiting on it waits on.
        live.heard_at(0, t0 + s(4));
        assert_eq!(live.deadline(0, t0), t0 + s(14));
        assert_eq!(live.deadline(1, t0), t0 + s(10), "not on another instance");
        // A request's own later event counts from then.
        assert_eq!(live.deadline(0, t0 + s(6)), t0 + s(16));
        // An older event never moves the clock back.
        live.heard_at(0, t0 + s(2));
        assert_eq!(live.deadline(0, t0), t0 + s(14));
    }
}
