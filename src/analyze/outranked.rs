//! Where a measured configuration ranks above the one the experiment
//! recommends (its conclusion's `optimized`), and by how much against the
//! noise: a report that names one configuration while the numbers put
//! another first must say so. (pure)

use super::{Analysis, Ranked, default_floor};
use crate::spec::{Objective, Spec};

/// On one workload, the measured leader over the recommended configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Outranked {
    pub workload: String,
    pub leader: Ranked,
    pub recommended: Ranked,
    /// How much better the leader is, in % of the recommended's number.
    pub gap_pct: f64,
    pub noise: Noise,
}

/// The noise the gap is judged against, in % of the recommended's number.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Noise {
    /// Both sides have several samples: the half-width of an approximate 95%
    /// interval of their difference, 2·√(sd²/n + sd²/n).
    Measured { pct: f64 },
    /// A side has one sample: its spread is unknown, and the metric's
    /// default noise floor stands for it (`docs/metrics.md`).
    Floor { pct: f64 },
}

impl Noise {
    pub fn pct(self) -> f64 {
        match self {
            Self::Measured { pct } | Self::Floor { pct } => pct,
        }
    }
}

impl Outranked {
    /// Whether the gap is larger than the noise.
    pub fn beyond_noise(&self) -> bool {
        self.gap_pct > self.noise.pct()
    }
}

/// Each workload, in the order of the comparisons, on which a configuration
/// other than the recommended one is measured best, with the recommended
/// one measured too.
pub fn outranked(spec: &Spec, analysis: &Analysis) -> Vec<Outranked> {
    let Some(recommended) = spec.conclusion.as_ref().map(|c| c.optimized.as_str()) else {
        return Vec::new();
    };
    let mut workloads: Vec<&str> = Vec::new();
    for c in &analysis.comparisons {
        if !workloads.contains(&c.workload.as_str()) {
            workloads.push(&c.workload);
        }
    }
    workloads
        .into_iter()
        .filter_map(|workload| {
            let ranked: Vec<&Ranked> = analysis
                .comparisons
                .iter()
                .filter(|c| c.workload == workload)
                .flat_map(|c| &c.ranking)
                .collect();
            let mine = ranked.iter().find(|r| r.step == recommended)?;
            let (mine_value, mine_sd) = objective(spec.objective, mine)?;
            let (leader, (value, sd)) = ranked
                .iter()
                .filter_map(|r| Some((*r, objective(spec.objective, r)?)))
                .reduce(|best, next| {
                    if better(spec.objective, next.1.0, best.1.0) {
                        next
                    } else {
                        best
                    }
                })?;
            if leader.step == recommended || !better(spec.objective, value, mine_value) {
                return None;
            }
            let pct = |x: f64| x / mine_value * 100.0;
            let noise = match (sd, mine_sd) {
                (Some(sd), Some(mine_sd)) if leader.n > 1 && mine.n > 1 => {
                    let var = |sd: f64, n: u32| sd * sd / f64::from(n);
                    Noise::Measured {
                        pct: pct(2.0 * (var(sd, leader.n) + var(mine_sd, mine.n)).sqrt()),
                    }
                }
                _ => Noise::Floor {
                    pct: default_floor(metric(spec.objective)),
                },
            };
            Some(Outranked {
                workload: workload.to_owned(),
                leader: leader.clone(),
                recommended: (*mine).clone(),
                gap_pct: pct((value - mine_value).abs()),
                noise,
            })
        })
        .collect()
}

/// The metric the objective ranks by, as `diff` names it.
pub fn metric(objective: Objective) -> &'static str {
    match objective {
        Objective::Throughput => "total_token_throughput",
        Objective::Latency => "mean_e2el_ms",
    }
}

/// The number ranked by and its spread, of all replicas; none when unknown.
fn objective(objective: Objective, r: &Ranked) -> Option<(f64, Option<f64>)> {
    match objective {
        Objective::Throughput => {
            Some((r.aggregate(), r.tps_sd.map(|sd| sd * f64::from(r.replicas))))
        }
        Objective::Latency => Some((r.latency_ms?, r.latency_sd)),
    }
}

fn better(objective: Objective, a: f64, b: f64) -> bool {
    match objective {
        Objective::Throughput => a > b,
        Objective::Latency => a < b,
    }
}
