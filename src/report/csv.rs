//! The report's numbers as CSV in long form (one number per line), so a
//! spreadsheet or pandas can pivot them as it likes. (pure)

use std::fmt::Write;

use crate::analyze::{Analysis, Source};

const HEADER: &str = "section,title,step,workload,metric,value,published,n,sd,source,verdict";

pub fn csv(analysis: &Analysis) -> String {
    let mut out = String::from(HEADER);
    out.push('\n');
    let mut line = |fields: [&str; 11]| {
        let quoted: Vec<String> = fields.iter().map(|f| quote(f)).collect();
        let _ = writeln!(out, "{}", quoted.join(","));
    };
    let num = |v: f64| {
        if v.is_nan() {
            String::new()
        } else {
            format!("{v}")
        }
    };
    if let Some(t) = &analysis.conclusion {
        for r in &t.rows {
            let latency = [
                (&t.baseline, r.base_latency_ms, r.base_n),
                (&t.optimized, r.opt_latency_ms, r.opt_n),
            ]
            .into_iter()
            .filter_map(|(step, v, n)| Some((step, "mean_latency_ms", v?, n)));
            for (step, metric, v, n) in [
                (&t.baseline, "total_tps", r.base_tps, r.base_n),
                (&t.baseline, "mean_tpot_ms", r.base_tpot_ms, r.base_n),
                (&t.optimized, "total_tps", r.opt_tps, r.opt_n),
                (&t.optimized, "mean_tpot_ms", r.opt_tpot_ms, r.opt_n),
                (&t.optimized, "delta_pct", r.delta_pct, r.opt_n),
            ]
            .into_iter()
            .chain(latency)
            {
                line([
                    "conclusion",
                    "",
                    step,
                    &r.workload,
                    metric,
                    &num(v),
                    "",
                    &n.to_string(),
                    "",
                    "",
                    "",
                ]);
            }
        }
    }
    for c in &analysis.comparisons {
        for r in &c.ranking {
            let sd = r.tps_sd.map(num).unwrap_or_default();
            let latency_sd = r.latency_sd.map(num).unwrap_or_default();
            let n = r.n.to_string();
            let latency = r
                .latency_ms
                .map(|v| ("mean_latency_ms", v, latency_sd.as_str()));
            for (metric, v, sd) in [
                ("total_tps", r.tps, sd.as_str()),
                ("aggregate_tps", r.aggregate(), ""),
                ("tps_per_gpu", r.per_gpu(), ""),
                ("mean_tpot_ms", r.tpot_ms, ""),
            ]
            .into_iter()
            .chain(latency)
            {
                line([
                    "comparison",
                    &c.title,
                    &r.step,
                    &c.workload,
                    metric,
                    &num(v),
                    "",
                    &n,
                    sd,
                    "",
                    "",
                ]);
            }
        }
        for (step, error) in &c.failed {
            line([
                "comparison",
                &c.title,
                step,
                &c.workload,
                "failure",
                error,
                "",
                "",
                "",
                "",
                "",
            ]);
        }
    }
    for r in &analysis.summary {
        let v = r.shown.map(num).unwrap_or_default();
        line([
            "summary",
            &r.title,
            "",
            "",
            "improvement_pct",
            &v,
            "",
            "",
            "",
            "",
            "",
        ]);
    }
    for c in &analysis.checks {
        line([
            "published",
            "",
            &c.step,
            &c.workload,
            &c.metric,
            c.measured.as_deref().unwrap_or(""),
            &c.published,
            "",
            "",
            c.source.map_or("", Source::label),
            c.verdict.label(),
        ]);
    }
    for r in &analysis.runs {
        let source = r.source.map_or("", Source::label);
        let n = r.samples.to_string();
        for (metric, v) in &r.metrics {
            let sd = r.sd.get(metric).copied().map(num).unwrap_or_default();
            line([
                "run",
                "",
                &r.step,
                &r.workload,
                metric,
                &num(*v),
                "",
                &n,
                &sd,
                source,
                "",
            ]);
        }
        if let Some(error) = &r.failure {
            line([
                "run",
                "",
                &r.step,
                &r.workload,
                "failure",
                error,
                "",
                &n,
                "",
                source,
                "",
            ]);
        }
    }
    out
}

/// RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled.
fn quote(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_quoted_as_rfc_4180_says() {
        assert_eq!(quote("plain"), "plain");
        assert_eq!(quote("KeyError: 'weight', x"), "\"KeyError: 'weight', x\"");
        assert_eq!(quote("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
