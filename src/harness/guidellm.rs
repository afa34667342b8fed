//! guidellm as the harness, through its v0.7 CLI (`guidellm run` with
//! `kind=...` specifications): every behaviour-changing setting explicit
//! (seed, sampling, request count, profile), its JSON report written inside
//! the run's log directory and read back under guidellm's own names. (pure)
//!
//! The workload maps as follows; `spec` refuses what guidellm cannot express.
//! - random input/output lengths → `--data kind=synthetic_text,prompt_tokens=..,output_tokens=..`
//! - `prompts` → `--constraint kind=max_requests,count=..`
//! - rate `inf` → `--profile kind=throughput`; with `concurrency N` →
//!   `kind=concurrent,streams=N`; a finite rate → `kind=poisson,rate=..`
//!   (vLLM's default burstiness 1 is a Poisson process).

use std::path::Path;

use crate::spec::{Dataset, HarnessDecl, RequestRate, Workload};

/// The report's name inside the run's log directory.
pub const RESULT_FILE: &str = "guidellm-benchmarks.json";

/// `guidellm run ...` for one run.
pub fn argv(
    harness: &HarnessDecl,
    base_url: &str,
    model: &str,
    workload: &Workload,
    result_dir: &Path,
) -> Vec<String> {
    // guidellm sends no sampling parameters unless told: the body says them.
    let mut body = serde_json::json!({ "temperature": harness.temperature });
    if harness.ignore_eos {
        body["ignore_eos"] = true.into();
    }
    let backend = serde_json::json!({
        "kind": "openai_http",
        "target": base_url,
        "model": model,
        "request_format": harness.endpoint,
        "extras": { "body": body },
    });
    let Dataset::Random {
        input_len,
        output_len,
        seed,
        ..
    } = &workload.dataset
    else {
        unreachable!("spec refuses ShareGPT workloads under guidellm")
    };
    let profile = match (workload.rate, workload.concurrency) {
        (RequestRate::Infinite, None) => "kind=throughput".to_owned(),
        (RequestRate::Infinite, Some(n)) => format!("kind=concurrent,streams={n}"),
        (RequestRate::PerSecond(r), _) => format!("kind=poisson,rate={r}"),
    };
    [
        "guidellm".to_owned(),
        "run".into(),
        "--backend".into(),
        backend.to_string(),
        "--data".into(),
        format!("kind=synthetic_text,prompt_tokens={input_len},output_tokens={output_len}"),
        "--profile".into(),
        profile,
        "--constraint".into(),
        format!("kind=max_requests,count={}", workload.prompts),
        "--seed".into(),
        format!("kind=static,value={seed}"),
        "--output".into(),
        format!("kind=json,path={}", result_dir.join(RESULT_FILE).display()),
        "--disable-console-interactive".into(),
    ]
    .to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::HarnessKind;

    #[test]
    fn every_setting_is_explicit() {
        let harness = HarnessDecl {
            kind: HarnessKind::Guidellm {
                version: "0.7.2".into(),
            },
            ignore_eos: true,
            ..HarnessDecl::default()
        };
        let a = argv(
            &harness,
            "http://127.0.0.1:8000",
            "Qwen/Qwen3-14B",
            &crate::harness::long_workload(RequestRate::Infinite, None),
            Path::new("/s/logs"),
        );
        insta::assert_snapshot!(a.join(" "), @r#"guidellm run --backend {"kind":"openai_http","target":"http://127.0.0.1:8000","model":"Qwen/Qwen3-14B","request_format":"/v1/chat/completions","extras":{"body":{"temperature":0.0,"ignore_eos":true}}} --data kind=synthetic_text,prompt_tokens=4000,output_tokens=200 --profile kind=throughput --constraint kind=max_requests,count=500 --seed kind=static,value=42 --output kind=json,path=/s/logs/guidellm-benchmarks.json --disable-console-interactive"#);
    }

    #[test]
    fn profiles_follow_rate_and_concurrency() {
        let harness = HarnessDecl::default();
        let profile = |rate, concurrency| {
            argv(
                &harness,
                "u",
                "m",
                &crate::harness::long_workload(rate, concurrency),
                Path::new("/"),
            )[7]
            .clone()
        };
        assert_eq!(
            profile(RequestRate::Infinite, Some(16)),
            "kind=concurrent,streams=16"
        );
        assert_eq!(
            profile(RequestRate::PerSecond(2.5), None),
            "kind=poisson,rate=2.5"
        );
    }
}
