//! Each run's SLO attainment and goodput, when its workload declares an SLO. (pure)

use std::fmt::Write;

use super::inline::cell_code;
use crate::analyze::RunRecord;

pub(super) fn attainment(out: &mut String, runs: &[RunRecord]) {
    let with: Vec<_> = runs
        .iter()
        .filter_map(|r| Some((r, r.slo.as_ref()?)))
        .collect();
    if with.is_empty() {
        return;
    }
    out.push_str(
        "\nSLO attainment (a request meets its SLO when it succeeded and met every objective, \
         vLLM's `--goodput` rule; goodput is those requests per second):\n\n",
    );
    out.push_str("| Step | Workload | SLO | Met | Attainment | Goodput (req/s) |\n");
    out.push_str("|---|---|---|---:|---:|---:|\n");
    for (r, slo) in with {
        let a = &slo.attainment;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {}/{} | {:.1}% | {:.2} |",
            cell_code(&r.step),
            cell_code(&r.workload),
            cell_code(&slo.objectives.to_string()),
            a.met,
            a.sent,
            a.pct,
            a.goodput
        );
    }
}
