//! Service-level objectives: which requests meet them (vLLM's `--goodput`
//! rule), the share that did (attainment) and how many did per second
//! (goodput). `perfpipe bench --goodput` and a workload's `slo` share it.

use super::compute::{Latency, RequestRecord};

/// Latency objectives in milliseconds; a request meets the SLO when it meets
/// every one.
#[derive(Debug, Clone, PartialEq)]
pub struct Slo {
    pub objectives: Vec<(Latency, f64)>,
}

impl Slo {
    /// The objectives as reports show them: `ttft_ms<=200 tpot_ms<=50`.
    pub fn describe(&self) -> String {
        self.objectives
            .iter()
            .map(|(latency, ms)| format!("{}_ms<={ms}", latency.name()))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// How a run's requests fared against an SLO.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Attainment {
    /// Requests that succeeded and met every objective.
    pub met: u64,
    /// Requests sent, failed ones included (they never meet an SLO).
    pub sent: u64,
    /// `met` / `sent`, in %.
    pub pct: f64,
    /// `met` per second of the benchmark: vLLM's `request_goodput`.
    pub goodput: f64,
}

/// The share a search probe must reach unless it states `attainment=`.
pub const DEFAULT_ATTAINMENT_PCT: f64 = 99.0;

impl Attainment {
    /// Whether at least `required_pct` % of the requests sent met the SLO: a
    /// search probe's pass. Compared on counts, not on the rounded `pct`, so
    /// 99 of 100 passes 99 exactly; a run that sent nothing never passes.
    pub fn passes(&self, required_pct: f64) -> bool {
        self.sent > 0 && self.met as f64 * 100.0 >= required_pct * self.sent as f64
    }
}

/// vLLM's goodput rule: a successful request meeting every objective (ms);
/// TPOT counts as 0 for one-token outputs, ITL is the request's largest gap.
pub fn meets(r: &RequestRecord, objectives: &[(Latency, f64)]) -> bool {
    r.success
        && objectives.iter().all(|(latency, slo_ms)| {
            let value_s = match latency {
                Latency::Ttft => r.ttft,
                Latency::Tpot if r.output_tokens > 1 => {
                    (r.latency - r.ttft) / (r.output_tokens - 1) as f64
                }
                Latency::Tpot => 0.0,
                Latency::Itl => r.itl.secs().fold(0.0, f64::max),
                Latency::E2el => r.latency,
            };
            value_s * 1000.0 <= *slo_ms
        })
}

/// How `records`, sent over `duration` seconds, fared against `slo`.
pub fn attainment(records: &[RequestRecord], duration: f64, slo: &Slo) -> Attainment {
    let met = records.iter().filter(|r| meets(r, &slo.objectives)).count() as u64;
    let sent = records.len() as u64;
    Attainment {
        met,
        sent,
        pct: if sent == 0 {
            0.0
        } else {
            met as f64 * 100.0 / sent as f64
        },
        goodput: if duration > 0.0 {
            met as f64 / duration
        } else {
            0.0
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(success: bool, ttft: f64, latency: f64, output_tokens: u64) -> RequestRecord {
        RequestRecord {
            success,
            ttft,
            latency,
            output_tokens,
            itl: crate::metrics::Gaps::from_secs(&[(latency - ttft) / output_tokens.max(2) as f64]),
            ..RequestRecord::default()
        }
    }

    #[test]
    fn attainment_counts_every_request_sent_and_failed_ones_never_meet() {
        let slo = Slo {
            objectives: vec![(Latency::Ttft, 100.0), (Latency::Tpot, 10.0)],
        };
        let records = [
            request(true, 0.05, 0.10, 11),  // TTFT 50 ms, TPOT 5 ms: meets
            request(true, 0.15, 0.20, 11),  // TTFT 150 ms: misses
            request(true, 0.05, 0.50, 11),  // TPOT 45 ms: misses
            request(false, 0.01, 0.02, 11), // failed: never meets
            request(true, 0.09, 0.09, 1),   // one token: TPOT counts 0
        ];
        let a = attainment(&records, 2.0, &slo);
        assert_eq!((a.met, a.sent), (2, 5));
        assert_eq!(a.pct, 40.0);
        assert_eq!(a.goodput, 1.0);
        assert_eq!(attainment(&[], 0.0, &slo).pct, 0.0);
    }

    #[test]
    fn a_probe_passes_at_exactly_its_attainment_and_never_on_nothing_sent() {
        let at = |met, sent| Attainment {
            met,
            sent,
            pct: 0.0,
            goodput: 0.0,
        };
        assert!(at(99, 100).passes(DEFAULT_ATTAINMENT_PCT));
        assert!(!at(98, 100).passes(DEFAULT_ATTAINMENT_PCT));
        assert!(at(7, 7).passes(100.0));
        assert!(!at(0, 0).passes(0.0));
    }
}
