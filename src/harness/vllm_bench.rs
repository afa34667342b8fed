//! `vllm bench serve` as the harness: driven with every option that changes
//! its behaviour made explicit (seed, temperature, EOS, metrics, percentiles,
//! detailed results), so a run does not depend on the client's defaults; its
//! `--save-result` JSON is read back under vLLM's names.             (pure)

use std::path::Path;

use serde_json::Value;

use crate::metrics::ServingMetrics;
use crate::spec::{Dataset, HarnessDecl, RequestRate, Workload};

/// The result file's name inside the run's log directory.
pub const RESULT_FILE: &str = "vllm-bench-result.json";

/// `vllm bench serve ...` for one run.
pub fn argv(
    harness: &HarnessDecl,
    base_url: &str,
    model: &str,
    workload: &Workload,
    dataset_path: Option<&Path>,
    result_dir: &Path,
) -> Vec<String> {
    let mut a: Vec<String> = ["vllm", "bench", "serve"].map(String::from).to_vec();
    let mut put = |flag: &str, value: String| {
        a.push(flag.into());
        a.push(value);
    };
    put("--backend", harness.backend.name().into());
    put("--base-url", base_url.into());
    put("--endpoint", harness.endpoint.clone());
    put("--model", model.into());
    match &workload.dataset {
        Dataset::ShareGpt {
            output_len, seed, ..
        } => {
            put("--dataset-name", "sharegpt".into());
            put(
                "--dataset-path",
                dataset_path
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
            );
            if let Some(len) = output_len {
                put("--sharegpt-output-len", len.to_string());
            }
            put("--seed", seed.to_string());
        }
        Dataset::Random {
            input_len,
            output_len,
            range_ratio,
            seed,
        } => {
            put("--dataset-name", "random".into());
            put("--random-input-len", input_len.to_string());
            put("--random-output-len", output_len.to_string());
            put("--random-range-ratio", range_ratio.to_string());
            put("--seed", seed.to_string());
        }
    }
    put("--num-prompts", workload.prompts.to_string());
    put(
        "--request-rate",
        match workload.rate {
            RequestRate::Infinite => "inf".into(),
            RequestRate::PerSecond(r) => r.to_string(),
        },
    );
    if let Some(c) = workload.concurrency {
        put("--max-concurrency", c.to_string());
    }
    put("--temperature", harness.temperature.to_string());
    put("--percentile-metrics", "ttft,tpot,itl,e2el".into());
    put("--metric-percentiles", "99".into());
    put("--result-dir", result_dir.display().to_string());
    put("--result-filename", RESULT_FILE.into());
    if harness.ignore_eos {
        a.push("--ignore-eos".into());
    }
    a.push("--save-result".into());
    a.push("--save-detailed".into());
    a
}

/// The metrics of a `--save-result` file. The exact peaks are perfpipe's own
/// and not in vLLM's file; `failed` is derived where the client (v0.11) omits it.
pub fn read_result(json: &str) -> Result<ServingMetrics, String> {
    let v: Value =
        serde_json::from_str(json).map_err(|e| format!("the result file is not JSON: {e}"))?;
    let num = |key: &str| -> Result<f64, String> {
        v.get(key)
            .and_then(Value::as_f64)
            .ok_or_else(|| format!("the result file has no number `{key}`"))
    };
    let completed = num("completed")? as u64;
    let failed = match v.get("failed").and_then(Value::as_u64) {
        Some(f) => f,
        None => (num("num_prompts")? as u64).saturating_sub(completed),
    };
    Ok(ServingMetrics {
        output_tokens_source: None,
        completed,
        failed,
        duration: num("duration")?,
        total_input_tokens: num("total_input_tokens")? as u64,
        total_output_tokens: num("total_output_tokens")? as u64,
        request_throughput: num("request_throughput")?,
        request_goodput: v.get("request_goodput").and_then(Value::as_f64),
        output_throughput: num("output_throughput")?,
        total_token_throughput: num("total_token_throughput")?,
        max_output_tokens_per_s: num("max_output_tokens_per_s")?,
        max_concurrent_requests: num("max_concurrent_requests")?,
        exact_max_output_tokens_per_s: None,
        exact_max_concurrent_requests: None,
        mean_ttft_ms: num("mean_ttft_ms")?,
        median_ttft_ms: num("median_ttft_ms")?,
        std_ttft_ms: num("std_ttft_ms")?,
        p99_ttft_ms: num("p99_ttft_ms")?,
        mean_tpot_ms: num("mean_tpot_ms")?,
        median_tpot_ms: num("median_tpot_ms")?,
        std_tpot_ms: num("std_tpot_ms")?,
        p99_tpot_ms: num("p99_tpot_ms")?,
        mean_itl_ms: num("mean_itl_ms")?,
        median_itl_ms: num("median_itl_ms")?,
        std_itl_ms: num("std_itl_ms")?,
        p99_itl_ms: num("p99_itl_ms")?,
        mean_e2el_ms: num("mean_e2el_ms")?,
        median_e2el_ms: num("median_e2el_ms")?,
        std_e2el_ms: num("std_e2el_ms")?,
        p99_e2el_ms: num("p99_e2el_ms")?,
        percentiles: Default::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::HarnessKind;

    #[test]
    fn every_behaviour_changing_option_is_explicit() {
        let harness = HarnessDecl {
            kind: HarnessKind::VllmBench {
                version: "0.11.0".into(),
            },
            ..HarnessDecl::default()
        };
        let workload = crate::harness::long_workload(RequestRate::Infinite, None);
        let a = argv(
            &harness,
            "http://127.0.0.1:8000",
            "Qwen/Qwen3-14B",
            &workload,
            None,
            Path::new("/s/logs"),
        );
        insta::assert_snapshot!(a.join(" "), @"vllm bench serve --backend openai-chat --base-url http://127.0.0.1:8000 --endpoint /v1/chat/completions --model Qwen/Qwen3-14B --dataset-name random --random-input-len 4000 --random-output-len 200 --random-range-ratio 0 --seed 42 --num-prompts 500 --request-rate inf --temperature 0 --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 99 --result-dir /s/logs --result-filename vllm-bench-result.json --save-result --save-detailed");
    }

    #[test]
    fn reads_a_v0_11_result_file_and_derives_failed() {
        let mut v = serde_json::json!({"num_prompts": 10, "completed": 9});
        for key in [
            "duration",
            "total_input_tokens",
            "total_output_tokens",
            "request_throughput",
            "output_throughput",
            "total_token_throughput",
            "max_output_tokens_per_s",
            "max_concurrent_requests",
        ] {
            v[key] = serde_json::json!(1.5);
        }
        for m in ["ttft", "tpot", "itl", "e2el"] {
            for s in ["mean", "median", "std", "p99"] {
                v[format!("{s}_{m}_ms")] = serde_json::json!(2.0);
            }
        }
        v["request_goodput"] = serde_json::Value::Null;
        let m = read_result(&v.to_string()).unwrap();
        assert_eq!((m.completed, m.failed), (9, 1));
        assert_eq!(m.request_goodput, None);
        assert_eq!(m.exact_max_output_tokens_per_s, None);
        v.as_object_mut().unwrap().remove("p99_itl_ms");
        assert_eq!(
            read_result(&v.to_string()).unwrap_err(),
            "the result file has no number `p99_itl_ms`"
        );
    }
}
