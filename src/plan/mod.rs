//! Keyed runs (`key::keyed_runs`) against what the store already holds. (pure)

mod estimate;
mod launches;
pub mod search;

pub use estimate::{
    EarlierBuilder, EarlierDurations, Estimate, estimate, typical_start, workload_of,
};
pub use launches::launches;

use crate::facts::Runtime;
use crate::key::{KeyMaterial, KeyedRun, RunKey};
use crate::metrics::slo::Slo;
use crate::store::{StoreIndex, StoredSample};

/// Every run of an experiment, in declared order.
#[derive(Debug, Clone)]
pub struct Plan {
    pub runs: Vec<PlannedRun>,
    pub options: PlanOptions,
}

#[derive(Debug, Clone)]
pub struct PlannedRun {
    pub step: String,
    pub workload: String,
    pub key: RunKey,
    pub material: KeyMaterial,
    /// The exact text `key` is the sha256 of.
    pub canonical: String,
    pub status: RunStatus,
    /// The workload's SLO: analysis of the stored requests, not key material.
    pub slo: Option<Slo>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum RunStatus {
    /// Enough successful samples are stored.
    Cached {
        samples: usize,
    },
    /// A deterministic failure is stored; it is not retried unless asked.
    Failed {
        error: String,
    },
    Missing {
        reason: String,
    },
}

impl RunStatus {
    pub fn label(&self) -> &'static str {
        match self {
            Self::Cached { .. } => "cached",
            Self::Failed { .. } => "failed",
            Self::Missing { .. } => "missing",
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct PlanOptions {
    pub runtime: Runtime,
    /// Successful samples each key should hold (`run --samples N`).
    pub samples: usize,
    /// Whether a stored failure is run again (`--retry-failed`).
    pub retry_failed: bool,
}

/// The plan: each run's status against what `index` holds for its key.
pub fn build<S: StoredSample>(
    runs: Vec<KeyedRun>,
    index: &StoreIndex<S>,
    options: PlanOptions,
) -> Plan {
    let runs = runs
        .into_iter()
        .map(|r| PlannedRun {
            status: status(index.samples(&r.key), options),
            step: r.step,
            workload: r.workload,
            key: r.key,
            material: r.material,
            canonical: r.canonical,
            slo: r.slo,
        })
        .collect();
    Plan { runs, options }
}

/// What a key's stored samples mean for a run: the one rule `plan` shows and
/// the executor re-checks once it holds the key's lock.
pub fn status<S: StoredSample>(samples: &[S], options: PlanOptions) -> RunStatus {
    let ok = samples.iter().filter(|s| s.measured()).count();
    let failure = samples
        .iter()
        .rev()
        .find_map(|s| s.failure().map(str::to_owned));
    status_of(ok, failure, options)
}

/// [`status`] of a key holding `ok` samples with numbers and, when it holds
/// a failure, the latest one's error (also what `plan` expects once a
/// cache's samples are substituted).
pub fn status_of(ok: usize, failure: Option<String>, options: PlanOptions) -> RunStatus {
    match failure {
        Some(error) if ok == 0 && !options.retry_failed => return RunStatus::Failed { error },
        _ => {}
    }
    if ok >= options.samples {
        RunStatus::Cached { samples: ok }
    } else if ok > 0 {
        RunStatus::Missing {
            reason: format!(
                "{ok} of {} stored",
                crate::plural::count(options.samples, "sample", "samples")
            ),
        }
    } else if failure.is_some() {
        RunStatus::Missing {
            reason: "stored failure, retried (--retry-failed)".into(),
        }
    } else {
        RunStatus::Missing {
            reason: "no result for this key".into(),
        }
    }
}

impl Plan {
    /// The missing runs grouped by engine launch: a step's runs share one
    /// engine, in declared order, unless every run gets its own (`fresh`).
    pub fn launches(&self, fresh: bool) -> Vec<Vec<&PlannedRun>> {
        let mut groups: Vec<Vec<&PlannedRun>> = Vec::new();
        for run in self.missing() {
            match groups.last_mut() {
                Some(group) if !fresh && group[0].step == run.step => group.push(run),
                _ => groups.push(vec![run]),
            }
        }
        groups
    }

    /// Runs to execute, one per key (two steps may share a configuration).
    pub fn missing(&self) -> Vec<&PlannedRun> {
        let mut seen = std::collections::HashSet::new();
        self.runs
            .iter()
            .filter(|r| matches!(r.status, RunStatus::Missing { .. }))
            .filter(|r| seen.insert(r.key.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::inputs::{ResolvedDataset, ResolvedInputs};
    use crate::key::keyed_runs;
    use crate::spec::{SourceFile, parse};

    const STUDY: &str = include_str!("../../experiments/qwen3-235b-a100.kdl");

    fn inputs() -> ResolvedInputs {
        let dataset = ResolvedDataset {
            path: "sharegpt.json".into(),
            sha256: "0".repeat(64),
            is_sample: false,
        };
        ResolvedInputs {
            datasets: BTreeMap::from([("sharegpt".to_owned(), dataset)]),
            tokenizers: BTreeMap::new(),
            models: BTreeMap::new(),
            absent_models: Default::default(),
        }
    }

    /// `(step, workload) → key` of every run of `text`.
    fn keys(text: &str) -> BTreeMap<(String, String), RunKey> {
        let spec = parse(&SourceFile {
            name: "study.kdl".into(),
            text: text.into(),
        })
        .unwrap_or_else(|e| panic!("{:?}", miette::Report::new(e)));
        keyed_runs(&spec, Runtime::Sim, &inputs())
            .into_iter()
            .map(|r| ((r.step, r.workload), r.key))
            .collect()
    }

    fn changed(before: &str, after: &str) -> Vec<(String, String)> {
        let (a, b) = (keys(before), keys(after));
        assert_eq!(a.len(), b.len());
        a.iter()
            .filter(|(run, key)| b.get(*run) != Some(key))
            .map(|(run, _)| run.clone())
            .collect()
    }

    #[test]
    fn golden_key_of_the_235b_baseline() {
        let keys = keys(STUDY);
        let run = |s: &str, w: &str| keys[&(s.to_owned(), w.to_owned())].to_string();
        // Changing these on purpose means bumping KEY_SCHEMA_VERSION (see its history).
        insta::assert_snapshot!(run("vllm-tp8", "sharegpt"), @"a6f6a764b192cb96f789839eee92b22709434a02908e5dff60aed48d4778a444");
        insta::assert_snapshot!(run("vllm-tp8", "long"), @"4ffe0abcfbab12c1349b5d2949aefcff70a53ab685db46376f35386cfd9eae2e");
    }

    #[test]
    fn arrival_process_cap_and_conversion_enter_the_key_and_their_defaults_do_not() {
        let long = "dataset random input=4000 output=200 seed=42\n        prompts 500\n";
        let with = |extra: &str| STUDY.replace(long, &format!("{long}{extra}\n"));
        let run = |text: &str| keys(text)[&("vllm-tp8".to_owned(), "long".to_owned())].clone();
        let poisson = run(&with("rate 8"));
        let constant = run(&with("rate 8; arrival constant"));
        assert_ne!(poisson, run(STUDY), "a rate is part of the key");
        assert_ne!(constant, poisson, "constant and Poisson arrivals differ");
        assert_eq!(
            run(&with("rate 8; arrival poisson")),
            poisson,
            "Poisson is the arrival every key before `arrival` meant"
        );
        let capped = run(&with("rate 8; arrival constant; concurrency 512"));
        assert_ne!(capped, constant, "the cap is part of the key");
        assert_ne!(
            run(&with("rate 8; arrival constant; concurrency 256")),
            capped
        );
        // Golden, as `golden_key_of_the_235b_baseline`: the keys of existing
        // experiments did not move when arrivals and conversions entered.
        insta::assert_snapshot!(run(STUDY).to_string(), @"4ffe0abcfbab12c1349b5d2949aefcff70a53ab685db46376f35386cfd9eae2e");

        let sharegpt = |conversion: &str| {
            keys(&STUDY.replace(
                r#"sample="datasets/sharegpt-sample.json""#,
                &format!(r#"sample="datasets/sharegpt-sample.json"{conversion}"#),
            ))[&("vllm-tp8".to_owned(), "sharegpt".to_owned())]
                .clone()
        };
        assert_eq!(sharegpt(r#" conversion="vllm""#), sharegpt(""));
        assert_ne!(sharegpt(r#" conversion="benchmark-runner""#), sharegpt(""));
    }

    #[test]
    fn golden_canonical_material() {
        let spec = parse(&SourceFile {
            name: "s".into(),
            text: STUDY.into(),
        })
        .unwrap();
        let run = keyed_runs(&spec, Runtime::Sim, &inputs())
            .into_iter()
            .find(|r| r.step == "vllm-fp8-tp4-mbt-4096")
            .unwrap();
        insta::assert_snapshot!(run.canonical, @r#"{"engine":{"name":"vllm","version":"0.11.0"},"env":{},"hardware":{"gpu":"nvidia-a100-sxm4-80gb","gpus_per_instance":4},"harness":{"backend":"openai-chat","endpoint":"/v1/chat/completions","ignore_eos":false,"metric_percentiles":"99","name":"builtin","percentile_metrics":"ttft,tpot,itl,e2el","temperature":0.0,"tokenizer":"whitespace-v1","version":"5"},"model":{"id":"Qwen/Qwen3-235B-A22B-Instruct-2507-FP8","revision":"main"},"runtime":{"name":"sim","sim_engine_version":"1"},"schema":1,"serve_args":["--max-num-batched-tokens","4096","--tensor-parallel-size","4"],"workload":{"dataset":{"kind":"sharegpt","output_len":null,"seed":0,"sha256":"0000000000000000000000000000000000000000000000000000000000000000"},"max_concurrency":null,"num_prompts":1000,"request_rate":"inf"}}"#);
        assert_eq!(RunKey::of_canonical(&run.canonical), run.key);
    }

    #[test]
    fn renaming_reordering_reformatting_and_comments_keep_every_key() {
        let renamed = STUDY
            .replace("vllm-tp8", "baseline")
            .replace("sglang-tp8", "sglang");
        let baseline = keys(STUDY);
        let after = keys(&renamed);
        for ((step, workload), key) in &baseline {
            let step = step
                .replace("vllm-tp8", "baseline")
                .replace("sglang-tp8", "sglang");
            assert_eq!(after[&(step, workload.clone())], *key);
        }

        let reordered = STUDY.replace(
            "    engine vllm version=\"0.11.0\"\n    engine sglang version=\"0.5.5.post1\"",
            "    engine sglang version=\"0.5.5.post1\"\n    // comment\n    engine   vllm    version=\"0.11.0\"",
        );
        assert_ne!(reordered, STUDY);
        assert_eq!(changed(STUDY, &reordered), Vec::<(String, String)>::new());

        let flag_spelling =
            STUDY.replace("args \"-tp\" \"4\"", "args \"--tensor-parallel-size=4\"");
        assert_ne!(flag_spelling, STUDY);
        assert_eq!(
            changed(STUDY, &flag_spelling),
            Vec::<(String, String)>::new()
        );
    }

    #[test]
    fn one_flag_changes_exactly_the_runs_that_use_it() {
        let edited = STUDY
            .replace(
                "vary \"--max-num-batched-tokens\" 4096 8192",
                "vary \"--max-num-batched-tokens\" 4096 16384",
            )
            .replace("at=8192", "at=16384")
            .replace(
                "candidate vllm-fp8-tp4-mbt-8192",
                "candidate vllm-fp8-tp4-mbt-16384",
            );
        // The sweep's second step is renamed too (its name carries the value).
        let before: Vec<_> = keys(STUDY)
            .into_iter()
            .filter(|((s, _), _)| s != "vllm-fp8-tp4-mbt-8192")
            .collect();
        let after = keys(&edited);
        assert!(before.iter().all(|(run, key)| after[run] == *key));
        assert_ne!(
            after[&("vllm-fp8-tp4-mbt-16384".to_owned(), "sharegpt".to_owned())],
            keys(STUDY)[&("vllm-fp8-tp4-mbt-8192".to_owned(), "sharegpt".to_owned())]
        );

        let with_ep = STUDY.replacen(
            "args \"-tp\" \"8\"",
            "args \"-tp\" \"8\" \"--enable-expert-parallel\"",
            1,
        );
        let workloads = ["long", "medium", "sharegpt", "short", "very-long"];
        let expected: Vec<(String, String)> = workloads
            .iter()
            .map(|w| ("vllm-tp8".to_owned(), w.to_string()))
            .collect();
        assert_eq!(changed(STUDY, &with_ep), expected);
    }
}
