//! How `plan` shows each search of the largest load within an SLO: the
//! probes stored with their pass or fail, the next one, and that the rest
//! is unknown until it ends.

use std::fmt::Write;

use crate::analyze::search::SearchResult;
use crate::plural::count;
use crate::spec::SearchAxis;

/// The search lines of `plan`; empty without searches.
pub fn render(searches: &[SearchResult]) -> String {
    let mut out = String::new();
    if searches.is_empty() {
        return out;
    }
    let _ = writeln!(out, "\nsearches of the largest load within the SLO:");
    for s in searches {
        let unit = match s.axis {
            SearchAxis::Concurrency => "c",
            SearchAxis::Rate => "rate",
        };
        let precision = s
            .precision
            .map(|p| format!(" (precision {p} req/s)"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  {} × {}: {} {}..={}{precision}, passing at {}% of requests within {}",
            s.step,
            s.workload,
            s.axis.name(),
            s.from,
            s.to,
            s.attainment_pct,
            s.slo
        );
        let probes: Vec<String> = s
            .probes
            .iter()
            .map(|p| {
                let verdict = if p.passed { "pass" } else { "fail" };
                format!("{unit}={} {verdict}", p.load)
            })
            .collect();
        let stored = if probes.is_empty() {
            "no probe stored".to_owned()
        } else {
            format!("stored {}", probes.join(", "))
        };
        let state = match (&s.next, &s.bracket) {
            (Some(next), _) => {
                format!(
                    "next {unit}={next} (missing); the probes after it are unknown until it ends"
                )
            }
            (None, Some(b)) => format!(
                "done: largest passing {}, smallest failing {}, {}",
                b.largest_passing.map_or("none".into(), |l| l.to_string()),
                b.smallest_failing.map_or("none".into(), |l| l.to_string()),
                count(b.probes, "probe", "probes"),
            ),
            (None, None) => "done".to_owned(),
        };
        let _ = writeln!(out, "    {stored}; {state}");
    }
    out
}
