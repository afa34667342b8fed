//! The `--save-result` JSON of `vllm bench serve` v0.11: its keys, in its order,
//! so tools that read vLLM's files read perfpipe's. perfpipe's own numbers
//! follow under their own names.

use serde_json::{Map, Value, json};

use super::ramp::RampUp;
use crate::metrics::{Latency, RequestRecord, ServingMetrics, percentile_key};

/// What the result file says about the benchmark besides its numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultMeta {
    /// `YYYYMMDD-HHMMSS`, as vLLM writes it.
    pub date: String,
    pub backend: String,
    pub label: Option<String>,
    pub model_id: String,
    pub tokenizer_id: String,
    pub num_prompts: usize,
    /// `None` for `inf`.
    pub request_rate: Option<f64>,
    pub burstiness: f64,
    pub max_concurrency: Option<u32>,
    /// `--metadata KEY=VALUE` pairs, written after `num_prompts` (a key vLLM
    /// writes later replaces one of the same name).
    pub metadata: Vec<(String, String)>,
    pub ramp_up: Option<RampUp>,
    /// With a ramp: each whole rate reached, and when.
    pub rps_change_events: Vec<(u32, String)>,
}

pub fn save_result_json(
    meta: &ResultMeta,
    m: &ServingMetrics,
    records: &[RequestRecord],
    percentile_metrics: &[Latency],
    percentiles: &[f64],
    detailed: bool,
) -> Value {
    let mut out = Map::new();
    let mut put = |k: &str, v: Value| {
        out.insert(k.to_owned(), v);
    };
    put("date", json!(meta.date));
    put("endpoint_type", json!(meta.backend));
    put("backend", json!(meta.backend));
    put("label", json!(meta.label));
    put("model_id", json!(meta.model_id));
    put("tokenizer_id", json!(meta.tokenizer_id));
    put("num_prompts", json!(meta.num_prompts));
    for (key, value) in &meta.metadata {
        put(key, json!(value));
    }
    put(
        "request_rate",
        meta.request_rate.map_or(json!("inf"), |r| json!(r)),
    );
    put("burstiness", json!(meta.burstiness));
    put("max_concurrency", json!(meta.max_concurrency));
    if let Some(ramp) = &meta.ramp_up {
        put("ramp_up_strategy", json!(ramp.strategy.name()));
        put("ramp_up_start_rps", json!(ramp.start));
        put("ramp_up_end_rps", json!(ramp.end));
    }
    put("duration", json!(m.duration));
    put("completed", json!(m.completed));
    put("total_input_tokens", json!(m.total_input_tokens));
    put("total_output_tokens", json!(m.total_output_tokens));
    put("request_throughput", json!(m.request_throughput));
    put("request_goodput", json!(m.request_goodput));
    put("output_throughput", json!(m.output_throughput));
    put("total_token_throughput", json!(m.total_token_throughput));
    if detailed {
        let ok = |f: fn(&RequestRecord) -> Value| -> Value { records.iter().map(f).collect() };
        put("input_lens", ok(|r| json!(r.prompt_len)));
        put(
            "output_lens",
            ok(|r| json!(if r.success { r.output_tokens } else { 0 })),
        );
        put("ttfts", ok(|r| json!(if r.success { r.ttft } else { 0.0 })));
        put("itls", ok(|r| json!(r.itl)));
        // perfpipe does not keep generated text (it would slow the client); the list keeps vLLM's shape.
        put("generated_texts", ok(|_| json!("")));
        put("errors", ok(|r| json!(r.error.clone().unwrap_or_default())));
    }
    put("max_output_tokens_per_s", json!(m.max_output_tokens_per_s));
    put("max_concurrent_requests", json!(m.max_concurrent_requests));
    if !meta.rps_change_events.is_empty() {
        let events: Vec<Value> = meta
            .rps_change_events
            .iter()
            .map(|(rps, timestamp)| json!({"rps": rps, "timestamp": timestamp}))
            .collect();
        put("rps_change_events", json!(events));
    }
    for latency in Latency::ALL
        .into_iter()
        .filter(|l| percentile_metrics.contains(l))
    {
        let name = latency.name();
        for stat in ["mean", "median", "std"] {
            let key = format!("{stat}_{name}_ms");
            put(&key, json!(m.get(&key)));
        }
        for &p in percentiles {
            let key = percentile_key(p, latency);
            put(&key, json!(m.get(&key)));
        }
    }
    put("failed", json!(m.failed));
    put(
        "exact_max_output_tokens_per_s",
        json!(m.exact_max_output_tokens_per_s),
    );
    put(
        "exact_max_concurrent_requests",
        json!(m.exact_max_concurrent_requests),
    );
    if let Some(source) = m.output_tokens_source {
        put("output_tokens_source", json!(source));
    }
    Value::Object(out)
}

/// vLLM's default file name:
/// `{label or backend}-{rate}qps[-concurrency{N}]-{model basename}-{date}.json`,
/// or with a ramp `{label or backend}-ramp-up-{strategy}-{start}qps-{end}qps[…]`.
pub fn default_file_name(meta: &ResultMeta) -> String {
    let rate = meta
        .request_rate
        .map_or("inf".to_owned(), |r| format!("{r:?}"));
    let concurrency = meta
        .max_concurrency
        .map_or(String::new(), |c| format!("-concurrency{c}"));
    let model = meta.model_id.rsplit('/').next().unwrap_or(&meta.model_id);
    let prefix = meta.label.as_deref().unwrap_or(&meta.backend);
    if let Some(ramp) = &meta.ramp_up {
        return format!(
            "{prefix}-ramp-up-{}-{}qps-{}qps{concurrency}-{model}-{}.json",
            ramp.strategy.name(),
            ramp.start,
            ramp.end,
            meta.date
        );
    }
    format!("{prefix}-{rate}qps{concurrency}-{model}-{}.json", meta.date)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{MetricOptions, compute};

    #[test]
    fn keys_in_vllm_order_and_vllm_file_name() {
        let m = compute(&[], 1.0, &MetricOptions::default());
        let meta = ResultMeta {
            date: "20261121-204244".into(),
            backend: "openai-chat".into(),
            label: None,
            model_id: "Qwen/Qwen3-14B".into(),
            tokenizer_id: "Qwen/Qwen3-14B".into(),
            num_prompts: 0,
            request_rate: Some(4.0),
            burstiness: 1.0,
            max_concurrency: Some(64),
            metadata: Vec::new(),
            ramp_up: None,
            rps_change_events: Vec::new(),
        };
        let v = save_result_json(
            &meta,
            &m,
            &[],
            &[Latency::Ttft, Latency::Itl],
            &[99.0],
            true,
        );
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        insta::assert_snapshot!(keys.join(","), @"date,endpoint_type,backend,label,model_id,tokenizer_id,num_prompts,request_rate,burstiness,max_concurrency,duration,completed,total_input_tokens,total_output_tokens,request_throughput,request_goodput,output_throughput,total_token_throughput,input_lens,output_lens,ttfts,itls,generated_texts,errors,max_output_tokens_per_s,max_concurrent_requests,mean_ttft_ms,median_ttft_ms,std_ttft_ms,p99_ttft_ms,mean_itl_ms,median_itl_ms,std_itl_ms,p99_itl_ms,failed,exact_max_output_tokens_per_s,exact_max_concurrent_requests");
        assert_eq!(
            default_file_name(&meta),
            "openai-chat-4.0qps-concurrency64-Qwen3-14B-20261121-204244.json"
        );
    }

    #[test]
    fn metadata_and_a_ramp_go_where_vllm_writes_them() {
        use crate::harness::ramp::Strategy;
        let m = compute(&[], 1.0, &MetricOptions::default());
        let meta = ResultMeta {
            date: "20261121-204244".into(),
            backend: "openai".into(),
            label: None,
            model_id: "Qwen/Qwen3-14B".into(),
            tokenizer_id: "Qwen/Qwen3-14B".into(),
            num_prompts: 0,
            request_rate: None,
            burstiness: 1.0,
            max_concurrency: None,
            metadata: vec![("tp".into(), "1".into()), ("date".into(), "mine".into())],
            ramp_up: Some(RampUp {
                strategy: Strategy::Exponential,
                start: 1,
                end: 8,
            }),
            rps_change_events: vec![(1, "2026-11-21T20:42:44Z".into())],
        };
        let v = save_result_json(&meta, &m, &[], &[Latency::Ttft], &[99.0], false);
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        insta::assert_snapshot!(keys[..16].join(","), @"date,endpoint_type,backend,label,model_id,tokenizer_id,num_prompts,tp,request_rate,burstiness,max_concurrency,ramp_up_strategy,ramp_up_start_rps,ramp_up_end_rps,duration,completed");
        // A metadata key vLLM writes first keeps its place and takes the value.
        assert_eq!((&v["date"], &v["tp"]), (&json!("mine"), &json!("1")));
        assert_eq!(v["ramp_up_strategy"], "exponential");
        assert_eq!(
            v["rps_change_events"],
            json!([{"rps": 1, "timestamp": "2026-11-21T20:42:44Z"}])
        );
        let after = keys.iter().position(|k| *k == "rps_change_events").unwrap();
        assert_eq!(keys[after - 1], "max_concurrent_requests");
        assert_eq!(
            default_file_name(&meta),
            "openai-ramp-up-exponential-1qps-8qps-Qwen3-14B-20261121-204244.json"
        );
    }
}
