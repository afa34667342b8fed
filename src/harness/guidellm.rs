//! guidellm as the harness, through the CLI of the declared version, every
//! behaviour-changing setting explicit (seed, sampling, request count,
//! profile, cap), its JSON report written inside the run's log directory and
//! read back under guidellm's own names. (pure)
//!
//! Two CLIs, checked against guidellm's sources:
//! - before 0.7 (checked on 0.5.3, the version GPUStack's benchmark-runner
//!   ran the guidellm-era pages with): `guidellm benchmark run` with flat
//!   options (`--profile constant --rate R --max-requests N ...`). It has no
//!   option for the cap of a rate profile: guidellm caps requests in flight at
//!   its setting `max_concurrency` (512 by default), so the cap goes in the
//!   environment as `GUIDELLM__MAX_CONCURRENCY`. Met a real guidellm 0.5.3
//!   against a real vLLM (tests/cli/real_vllm.rs).
//! - 0.7 and later: `guidellm run` with `kind=...` specifications, the cap as
//!   the profile's `max_concurrency` (its setting's default is 10240 there).
//!
//! The workload maps as follows; `spec` refuses what guidellm cannot express.
//! - random input/output lengths → synthetic data of those token counts;
//!   ShareGPT (`conversion="benchmark-runner"`) → the JSONL file perfpipe
//!   converts as benchmark-runner does (`text`, `output_tokens_count`);
//! - `prompts` → the max-requests constraint;
//! - rate `inf` → the `throughput` profile; with `concurrency N` → `concurrent`
//!   with N streams; a finite rate → `constant` or `poisson` (the declared
//!   arrival); throughput and rate profiles capped at `concurrency`, else at
//!   the number of requests (unlimited, as declared: see `cap`);
//! - `seed` → guidellm's random seed.

use std::collections::BTreeMap;
use std::path::Path;

use crate::spec::{Arrival, Backend, Dataset, HarnessDecl, HarnessKind, RequestRate, Workload};

/// The report's name inside the run's log directory.
pub const RESULT_FILE: &str = "guidellm-benchmarks.json";

/// The ShareGPT file converted as benchmark-runner converts it, inside the
/// run's log directory (kept with the sample).
pub const CONVERTED_SHAREGPT_FILE: &str = "sharegpt-benchmark-runner.jsonl";

/// How one run calls guidellm: its argv and what its environment adds.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    pub argv: Vec<String>,
    pub env: BTreeMap<String, String>,
}

/// Whether `version` has the `guidellm run` CLI of 0.7 and later.
fn has_run_cli(version: &str) -> bool {
    let mut parts = version.split('.').map(|p| {
        p.chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse::<u64>()
            .unwrap_or(0)
    });
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (0, 7)
}

/// guidellm's call for one run. `result_dir` is the sample's log directory,
/// which holds the converted ShareGPT file for such a workload.
pub fn invocation(
    harness: &HarnessDecl,
    base_url: &str,
    model: &str,
    workload: &Workload,
    result_dir: &Path,
) -> Invocation {
    let version = match &harness.kind {
        HarnessKind::Guidellm { version } => version.as_str(),
        _ => unreachable!("only `harness guidellm` runs guidellm"),
    };
    if has_run_cli(version) {
        run_cli(harness, base_url, model, workload, result_dir)
    } else {
        benchmark_cli(harness, base_url, model, workload, result_dir)
    }
}

/// What guidellm sends unless told otherwise: the body says the sampling.
fn body(harness: &HarnessDecl) -> serde_json::Value {
    let mut body = serde_json::json!({ "temperature": harness.temperature });
    if harness.ignore_eos {
        body["ignore_eos"] = true.into();
    }
    body
}

/// The 0.7 CLI: `guidellm run --profile kind=...`.
fn run_cli(
    harness: &HarnessDecl,
    base_url: &str,
    model: &str,
    workload: &Workload,
    result_dir: &Path,
) -> Invocation {
    let backend = serde_json::json!({
        "kind": "openai_http",
        "target": base_url,
        "model": model,
        "request_format": harness.endpoint,
        "extras": { "body": body(harness) },
    });
    let data = match &workload.dataset {
        Dataset::Random {
            input_len,
            output_len,
            ..
        } => format!("kind=synthetic_text,prompt_tokens={input_len},output_tokens={output_len}"),
        Dataset::ShareGpt { .. } => serde_json::json!({
            "kind": "json_file",
            "path": result_dir.join(CONVERTED_SHAREGPT_FILE),
            // One file loads as a DatasetDict without a split.
            "load_kwargs": { "split": "train" },
        })
        .to_string(),
    };
    let cap = cap(workload);
    let profile = match (workload.rate, workload.concurrency) {
        (RequestRate::Infinite, None) => format!("kind=throughput,max_concurrency={cap}"),
        (RequestRate::Infinite, Some(n)) => format!("kind=concurrent,streams={n}"),
        (RequestRate::PerSecond(r), _) => format!(
            "kind={},rate={r},max_concurrency={cap}",
            workload.arrival.name()
        ),
    };
    let argv = [
        "guidellm".to_owned(),
        "run".into(),
        "--backend".into(),
        backend.to_string(),
        "--data".into(),
        data,
        "--profile".into(),
        profile,
        "--constraint".into(),
        format!("kind=max_requests,count={}", workload.prompts),
        "--seed".into(),
        format!("kind=static,value={}", seed(workload)),
        "--output".into(),
        format!("kind=json,path={}", result_dir.join(RESULT_FILE).display()),
        "--disable-console-interactive".into(),
    ]
    .to_vec();
    Invocation {
        argv,
        env: BTreeMap::new(),
    }
}

/// The CLI before 0.7 (0.5.3): `guidellm benchmark run --profile ... --rate ...`.
fn benchmark_cli(
    harness: &HarnessDecl,
    base_url: &str,
    model: &str,
    workload: &Workload,
    result_dir: &Path,
) -> Invocation {
    let request_type = match harness.backend {
        Backend::OpenaiChat => "chat_completions",
        Backend::Openai => "text_completions",
    };
    let data = match &workload.dataset {
        Dataset::Random {
            input_len,
            output_len,
            ..
        } => format!("prompt_tokens={input_len},output_tokens={output_len}"),
        Dataset::ShareGpt { .. } => result_dir
            .join(CONVERTED_SHAREGPT_FILE)
            .display()
            .to_string(),
    };
    let (profile, rate) = match (workload.rate, workload.concurrency) {
        (RequestRate::Infinite, None) => ("throughput", None),
        (RequestRate::Infinite, Some(n)) => ("concurrent", Some(n.to_string())),
        (RequestRate::PerSecond(r), _) => (
            match workload.arrival {
                Arrival::Constant => "constant",
                Arrival::Poisson => "poisson",
            },
            Some(r.to_string()),
        ),
    };
    let mut argv: Vec<String> = ["guidellm", "benchmark", "run"].map(String::from).to_vec();
    let mut put = |flag: &str, value: String| {
        argv.push(flag.into());
        argv.push(value);
    };
    put("--target", base_url.into());
    put("--model", model.into());
    put("--backend", "openai_http".into());
    put("--request-type", request_type.into());
    put(
        "--request-formatter-kwargs",
        serde_json::json!({ "extras": { "body": body(harness) } }).to_string(),
    );
    put("--processor", model.into());
    put("--data", data);
    put("--profile", profile.into());
    if let Some(rate) = rate {
        put("--rate", rate);
    }
    put("--max-requests", workload.prompts.to_string());
    // Every request's record in the report, not guidellm's default sample of
    // 10 (its help says all are kept by default; its code keeps 10): the
    // records are what its aggregates can be checked against.
    put("--sample-requests", workload.prompts.to_string());
    put("--random-seed", seed(workload).to_string());
    put(
        "--output-path",
        result_dir.join(RESULT_FILE).display().to_string(),
    );
    argv.push("--disable-console-interactive".into());
    // No option caps these profiles here: guidellm's setting does.
    let env = match (workload.rate, workload.concurrency) {
        (RequestRate::Infinite, Some(_)) => BTreeMap::new(),
        _ => BTreeMap::from([(
            "GUIDELLM__MAX_CONCURRENCY".to_owned(),
            cap(workload).to_string(),
        )]),
    };
    Invocation { argv, env }
}

/// The cap of a throughput or rate profile: the declared `concurrency`, else
/// the number of requests, which no run can exceed, so "unlimited" stays
/// unlimited (guidellm always caps: at its default of 512 before 0.7, 10240
/// from 0.7, and 0.7's throughput profile requires a cap).
fn cap(workload: &Workload) -> u32 {
    workload.concurrency.unwrap_or(workload.prompts)
}

fn seed(workload: &Workload) -> u64 {
    match &workload.dataset {
        Dataset::Random { seed, .. } | Dataset::ShareGpt { seed, .. } => *seed,
    }
}

/// The JSONL benchmark-runner writes for guidellm: one `{"text",
/// "output_tokens_count"}` object a line, non-ASCII kept as is.
pub fn converted_sharegpt(records: &[crate::dataset::BenchRequest]) -> String {
    records
        .iter()
        .map(|r| {
            serde_json::json!({ "text": r.prompt, "output_tokens_count": r.output_len }).to_string()
                + "\n"
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{HarnessKind, SharegptConversion};

    fn guidellm(version: &str) -> HarnessDecl {
        HarnessDecl {
            kind: HarnessKind::Guidellm {
                version: version.into(),
            },
            ..HarnessDecl::default()
        }
    }

    /// GPUStack's ShareGPT profile: 8 req/s, 1000 requests, capped at 512.
    fn lab_profile() -> Workload {
        Workload {
            dataset: Dataset::ShareGpt {
                path: "ShareGPT_V3_unfiltered_cleaned_split.json".into(),
                sample: None,
                output_len: None,
                seed: 0,
                conversion: SharegptConversion::BenchmarkRunner,
            },
            prompts: 1000,
            rate: RequestRate::PerSecond(8.0),
            arrival: Arrival::Constant,
            concurrency: Some(512),
            ..crate::harness::long_workload(RequestRate::Infinite, None)
        }
    }

    #[test]
    fn every_setting_is_explicit() {
        let harness = HarnessDecl {
            ignore_eos: true,
            ..guidellm("0.7.2")
        };
        let a = invocation(
            &harness,
            "http://127.0.0.1:8000",
            "Qwen/Qwen3-14B",
            &crate::harness::long_workload(RequestRate::Infinite, None),
            Path::new("/s/logs"),
        );
        assert!(a.env.is_empty());
        insta::assert_snapshot!(a.argv.join(" "), @r#"guidellm run --backend {"kind":"openai_http","target":"http://127.0.0.1:8000","model":"Qwen/Qwen3-14B","request_format":"/v1/chat/completions","extras":{"body":{"temperature":0.0,"ignore_eos":true}}} --data kind=synthetic_text,prompt_tokens=4000,output_tokens=200 --profile kind=throughput,max_concurrency=500 --constraint kind=max_requests,count=500 --seed kind=static,value=42 --output kind=json,path=/s/logs/guidellm-benchmarks.json --disable-console-interactive"#);
    }

    #[test]
    fn the_lab_profile_on_guidellm_0_5_caps_through_its_setting() {
        let a = invocation(
            &guidellm("0.5.3"),
            "http://127.0.0.1:8000",
            "Qwen/Qwen3.5-9B",
            &lab_profile(),
            Path::new("/s/logs"),
        );
        insta::assert_snapshot!(a.argv.join(" "), @r#"guidellm benchmark run --target http://127.0.0.1:8000 --model Qwen/Qwen3.5-9B --backend openai_http --request-type chat_completions --request-formatter-kwargs {"extras":{"body":{"temperature":0.0}}} --processor Qwen/Qwen3.5-9B --data /s/logs/sharegpt-benchmark-runner.jsonl --profile constant --rate 8 --max-requests 1000 --sample-requests 1000 --random-seed 0 --output-path /s/logs/guidellm-benchmarks.json --disable-console-interactive"#);
        assert_eq!(
            a.env,
            BTreeMap::from([("GUIDELLM__MAX_CONCURRENCY".into(), "512".into())])
        );
    }

    #[test]
    fn the_lab_profile_on_guidellm_0_7_caps_in_the_profile() {
        let a = invocation(
            &guidellm("0.7.2"),
            "u",
            "m",
            &lab_profile(),
            Path::new("/s/logs"),
        );
        assert_eq!(
            a.argv[5],
            r#"{"kind":"json_file","path":"/s/logs/sharegpt-benchmark-runner.jsonl","load_kwargs":{"split":"train"}}"#
        );
        assert_eq!(a.argv[7], "kind=constant,rate=8,max_concurrency=512");
        assert!(a.env.is_empty());
    }

    #[test]
    fn profiles_follow_rate_arrival_and_concurrency() {
        let profile = |version: &str, rate, arrival, concurrency| {
            let w = Workload {
                arrival,
                ..crate::harness::long_workload(rate, concurrency)
            };
            let a = invocation(&guidellm(version), "u", "m", &w, Path::new("/")).argv;
            let at = |flag: &str| a.iter().position(|x| x == flag).map(|i| a[i + 1].clone());
            (at("--profile").unwrap(), at("--rate"))
        };
        let v7 = |rate, arrival, c| profile("0.7.2", rate, arrival, c).0;
        assert_eq!(
            v7(RequestRate::Infinite, Arrival::Poisson, Some(16)),
            "kind=concurrent,streams=16"
        );
        assert_eq!(
            v7(RequestRate::PerSecond(2.5), Arrival::Poisson, Some(4)),
            "kind=poisson,rate=2.5,max_concurrency=4"
        );
        assert_eq!(
            profile(
                "0.5.3",
                RequestRate::PerSecond(2.5),
                Arrival::Poisson,
                Some(4)
            ),
            ("poisson".into(), Some("2.5".into()))
        );
        assert_eq!(
            profile("0.6.0", RequestRate::Infinite, Arrival::Poisson, Some(16)),
            ("concurrent".into(), Some("16".into()))
        );
        assert_eq!(
            profile("0.5.3", RequestRate::Infinite, Arrival::Poisson, None),
            ("throughput".into(), None)
        );
        // Without `concurrency`, the cap is the request count: unlimited.
        assert_eq!(
            v7(RequestRate::PerSecond(2.5), Arrival::Constant, None),
            "kind=constant,rate=2.5,max_concurrency=500"
        );
        let uncapped = Workload {
            arrival: Arrival::Constant,
            ..crate::harness::long_workload(RequestRate::PerSecond(2.5), None)
        };
        assert_eq!(
            invocation(&guidellm("0.5.3"), "u", "m", &uncapped, Path::new("/")).env,
            BTreeMap::from([("GUIDELLM__MAX_CONCURRENCY".into(), "500".into())])
        );
        let streams = crate::harness::long_workload(RequestRate::Infinite, Some(16));
        assert!(
            invocation(&guidellm("0.5.3"), "u", "m", &streams, Path::new("/"))
                .env
                .is_empty(),
            "streams bound the concurrent profile"
        );
    }

    #[test]
    fn the_converted_file_is_benchmark_runners_jsonl() {
        let records = [crate::dataset::BenchRequest {
            prompt: "Wie geht's? \"quoted\"".into(),
            prompt_len: 3,
            output_len: 17,
            exact_output: true,
        }];
        assert_eq!(
            converted_sharegpt(&records),
            "{\"text\":\"Wie geht's? \\\"quoted\\\"\",\"output_tokens_count\":17}\n"
        );
    }
}
