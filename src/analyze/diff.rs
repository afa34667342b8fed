//! Before and after of the same runs (two lockfiles): the change of each
//! metric, computed with polars, and whether it is more than noise. (pure)

use polars::prelude::*;

use super::RunRecord;
use super::within_noise;

/// One metric of one run under two lockfiles.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Delta {
    pub step: String,
    pub workload: String,
    pub metric: String,
    pub before: f64,
    /// Sample standard deviation, with several samples.
    pub before_sd: Option<f64>,
    pub before_n: usize,
    pub after: f64,
    pub after_sd: Option<f64>,
    pub after_n: usize,
    /// (after − before) / before, in %.
    pub delta_pct: f64,
    pub verdict: DeltaVerdict,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeltaVerdict {
    Better,
    Worse,
    /// The difference is within run-to-run noise (both sides have a spread).
    WithinNoise,
    Unchanged,
}

impl DeltaVerdict {
    pub fn label(self) -> &'static str {
        match self {
            Self::Better => "better",
            Self::Worse => "worse",
            Self::WithinNoise => "within noise",
            Self::Unchanged => "unchanged",
        }
    }
}

impl Delta {
    /// A change for the worse by more than `threshold_pct` and more than noise.
    pub fn regresses_beyond(&self, threshold_pct: f64) -> bool {
        self.verdict == DeltaVerdict::Worse && self.delta_pct.abs() > threshold_pct
    }
}

/// Throughputs are better higher; times (`_ms`) lower.
pub fn higher_is_better(metric: &str) -> bool {
    metric.contains("throughput") || metric.contains("per_second") || metric.contains("goodput")
}

/// The change of each of `metrics` for each (before, after) pair of the same
/// run; a metric either side lacks is left out.
pub fn deltas(pairs: &[(RunRecord, RunRecord)], metrics: &[String]) -> PolarsResult<Vec<Delta>> {
    let mut rows: Vec<(&RunRecord, &RunRecord, &str, f64, f64)> = Vec::new();
    for (before, after) in pairs {
        for metric in metrics {
            if let (Some(b), Some(a)) = (before.metrics.get(metric), after.metrics.get(metric)) {
                rows.push((before, after, metric, *b, *a));
            }
        }
    }
    let frame = df!(
        "before" => rows.iter().map(|r| r.3).collect::<Vec<_>>(),
        "after" => rows.iter().map(|r| r.4).collect::<Vec<_>>(),
    )?
    .lazy()
    .with_column(((col("after") - col("before")) / col("before") * lit(100.0)).alias("delta_pct"))
    .collect()?;
    let pct = frame.column("delta_pct")?.f64()?;
    Ok(rows
        .iter()
        .zip(pct.iter())
        .map(|(&(before, after, metric, b, a), pct)| {
            let sd = |r: &RunRecord| r.sd.get(metric).copied();
            let noise = match (sd(before), sd(after)) {
                (Some(sd_b), Some(sd_a)) => within_noise(
                    b,
                    sd_b,
                    before.samples as u32,
                    a,
                    sd_a,
                    after.samples as u32,
                ),
                _ => None,
            };
            let verdict = if a == b {
                DeltaVerdict::Unchanged
            } else if noise == Some(true) {
                DeltaVerdict::WithinNoise
            } else if (a > b) == higher_is_better(metric) {
                DeltaVerdict::Better
            } else {
                DeltaVerdict::Worse
            };
            Delta {
                step: after.step.clone(),
                workload: after.workload.clone(),
                metric: metric.to_owned(),
                before: b,
                before_sd: sd(before),
                before_n: before.samples,
                after: a,
                after_sd: sd(after),
                after_n: after.samples,
                delta_pct: pct.unwrap_or(f64::NAN),
                verdict,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn record(tps: f64, tpot: f64, sd: Option<(f64, f64)>, n: usize) -> RunRecord {
        RunRecord {
            step: "vllm".into(),
            workload: "chat".into(),
            key: None,
            source: None,
            metrics: BTreeMap::from([
                ("total_token_throughput".into(), tps),
                ("mean_tpot_ms".into(), tpot),
            ]),
            sd: sd
                .map(|(a, b)| {
                    BTreeMap::from([
                        ("total_token_throughput".into(), a),
                        ("mean_tpot_ms".into(), b),
                    ])
                })
                .unwrap_or_default(),
            samples: n,
            environment: None,
            failure: None,
            warnings: vec![],
            telemetry: None,
        }
    }

    #[test]
    fn each_metric_is_judged_in_its_own_direction_and_against_noise() {
        let metrics = [
            "total_token_throughput".to_owned(),
            "mean_tpot_ms".into(),
            "mean_ttft_ms".into(),
        ];
        let one = deltas(
            &[(record(1000.0, 20.0, None, 1), record(1100.0, 22.0, None, 1))],
            &metrics,
        )
        .unwrap();
        assert_eq!(one.len(), 2, "a metric neither side has is left out");
        assert!((one[0].delta_pct - 10.0).abs() < 1e-9);
        assert_eq!(
            one[0].verdict,
            DeltaVerdict::Better,
            "more tokens/s is better"
        );
        assert_eq!(
            one[1].verdict,
            DeltaVerdict::Worse,
            "a longer TPOT is worse"
        );
        assert!(one[1].regresses_beyond(5.0) && !one[1].regresses_beyond(10.0));

        // 3 samples each with sd 40: 2·√(40²/3·2) ≈ 65 > 50, so +5% is noise.
        let noisy = deltas(
            &[(
                record(1000.0, 20.0, Some((40.0, 0.1)), 3),
                record(1050.0, 20.0, Some((40.0, 0.1)), 3),
            )],
            &metrics,
        )
        .unwrap();
        assert_eq!(noisy[0].verdict, DeltaVerdict::WithinNoise);
        assert_eq!(noisy[0].before_sd, Some(40.0));
        assert_eq!(noisy[1].verdict, DeltaVerdict::Unchanged);
        assert!(!noisy[0].regresses_beyond(0.0));
    }
}
