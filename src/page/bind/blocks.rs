//! The blocks' own numbers, by instance (a step, or a sweep's point) and
//! workload: what the bindings weigh configurations by.

use super::workloads::slug;
use super::{Builder, ExpectKind, instances};
use crate::spec::CellMetric;

impl Builder<'_> {
    /// GPUs an instance of a step takes, all replicas.
    pub(super) fn gpus_of_instance(&self, instance: &str) -> Option<u32> {
        self.draft
            .steps
            .iter()
            .find(|s| instances(s).iter().any(|i| i == instance))
            .map(|s| s.gpus * s.replicas)
    }

    /// Whether configurations run on different GPU counts (where a gain
    /// may be weighed per GPU, TP2's "+26.8%").
    pub(super) fn counts_differ(&self, baseline: &str, candidates: &[String]) -> bool {
        let base = self.gpus_of_instance(baseline);
        !self.draft.latency
            && candidates.iter().any(|m| {
                let gpus = self.gpus_of_instance(m);
                base.is_some() && gpus.is_some() && gpus != base
            })
    }

    /// The best candidate's gain over `baseline` in %: of all replicas'
    /// throughput, per GPU where `per_gpu`.
    pub(super) fn gain_as(
        &self,
        baseline: &str,
        candidates: &[String],
        workload: &str,
        per_gpu: bool,
    ) -> Option<f64> {
        let total = |m: &str| {
            let step = self
                .draft
                .steps
                .iter()
                .find(|s| instances(s).iter().any(|i| i == m));
            let replicas = step.map_or(1, |s| s.replicas);
            let gpus = match step {
                Some(s) if per_gpu => s.gpus * s.replicas,
                _ => 1,
            };
            self.score(m, workload)
                .map(|v| v * f64::from(replicas) / f64::from(gpus.max(1)))
        };
        let b = total(baseline)?;
        let best = candidates
            .iter()
            .filter_map(|c| total(c))
            .fold(None, |acc: Option<f64>, v| {
                Some(acc.map_or(v, |a| a.max(v)))
            })?;
        Some((best / b - 1.0) * 100.0)
    }

    /// The best of `members` on `workload`: highest throughput, or lowest latency.
    /// Per GPU where they run on different GPU counts, as the lab weighs them.
    pub(super) fn best(&self, members: &[(String, String)], workload: &str) -> Option<String> {
        let on: Vec<&String> = members
            .iter()
            .filter(|(_, w)| w == workload)
            .map(|(m, _)| m)
            .collect();
        let per_gpu = on.split_first().is_some_and(|(first, rest)| {
            self.counts_differ(
                first,
                &rest.iter().map(|m| (*m).clone()).collect::<Vec<_>>(),
            )
        });
        let mut best: Option<(String, f64)> = None;
        for m in on {
            let gpus = match self.gpus_of_instance(m) {
                Some(g) if per_gpu => g,
                _ => 1,
            };
            let replicas = self
                .draft
                .steps
                .iter()
                .find(|s| instances(s).iter().any(|i| i == m))
                .map_or(1, |s| s.replicas);
            let Some(value) = self.score(m, workload) else {
                continue;
            };
            let value = if per_gpu {
                value * f64::from(replicas) / f64::from(gpus.max(1))
            } else {
                value
            };
            let better = match &best {
                None => true,
                Some((_, b)) if self.draft.latency => value < *b,
                Some((_, b)) => value > *b,
            };
            if better {
                best = Some((m.clone(), value));
            }
        }
        best.map(|(m, _)| m)
    }

    /// The numbers of `instance`'s block on `workload`, as printed there.
    pub(super) fn block_of(&self, instance: &str, workload: &str) -> Option<&[(String, String)]> {
        for s in &self.draft.steps {
            for e in &s.expects {
                let name = match &e.at {
                    Some(v) => format!("{}-{}", s.name, slug(v)),
                    None => s.name.clone(),
                };
                if name != instance || e.workload != workload {
                    continue;
                }
                let ExpectKind::Metrics(m) = &e.kind else {
                    return None;
                };
                return Some(m);
            }
        }
        None
    }

    /// What a study weighs configurations by: mean latency in seconds on a
    /// latency study, else total throughput.
    pub(super) fn score(&self, instance: &str, workload: &str) -> Option<f64> {
        let metric = if self.draft.latency {
            CellMetric::MeanLatency
        } else {
            CellMetric::TotalTps
        };
        self.block_number(instance, workload, metric)
    }

    /// `instance`'s number for `metric` on `workload`, from its block
    /// (mean latency in seconds).
    pub(super) fn block_number(
        &self,
        instance: &str,
        workload: &str,
        metric: CellMetric,
    ) -> Option<f64> {
        let m = self.block_of(instance, workload)?;
        let get = |k: &str| {
            m.iter()
                .find(|(n, _)| n == k)
                .and_then(|(_, v)| v.parse::<f64>().ok())
        };
        match metric {
            CellMetric::MeanLatency => get("request_latency_mean")
                .or_else(|| get("mean_e2el_ms").map(|v| v / 1000.0))
                .or_else(|| {
                    let ttft = get("mean_ttft_ms")?;
                    let tpot = get("mean_tpot_ms")?;
                    let out = get("total_output_tokens")?;
                    let n = get("completed")?;
                    Some((ttft + tpot * (out / n - 1.0)) / 1000.0)
                }),
            CellMetric::TotalTps => {
                get("total_token_throughput").or_else(|| get("tokens_per_second_mean"))
            }
            CellMetric::MeanTpot => {
                get("mean_tpot_ms").or_else(|| get("time_per_output_token_ms_mean"))
            }
        }
    }
}
