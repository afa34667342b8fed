//! The experiment's own nodes: hardware, model, runtime, engines, harness, workloads.

use std::time::Duration;

use kdl::{KdlEntry, KdlNode, KdlValue};
use miette::SourceSpan;

use super::values::*;
use super::*;
use crate::facts::{EngineKind, Runtime};
use crate::metrics::Latency;
use crate::metrics::slo::Slo;
use crate::spec::bounds;
use crate::spec::diag::{SpecDiagnostic, did_you_mean, one_of};
use crate::spec::model::*;

pub(super) const MODEL_HELP: &str =
    "a Hugging Face model id such as `Qwen/Qwen3-14B`, or the absolute path of a model directory";
const VERSION_HELP: &str =
    "the exact version, as the engine prints it and its image is tagged: e.g. `version=\"0.11.0\"`";

impl Decoder {
    pub(super) fn hardware(&mut self, node: &KdlNode) -> Option<Hardware> {
        if arg(node, 0).and_then(|e| e.value().as_string()) == Some(CPU_HARDWARE) {
            return self.cpu_hardware(node);
        }
        self.props(node, &["gpus"]);
        self.no_children(node);
        let gpu = self.required_string_arg(node, 0, "the GPU type")?;
        let span = arg(node, 0).map(|e| e.span()).unwrap_or(node.span());
        if gpu::lookup(&gpu).is_none() {
            let names = gpu::NAMES.iter().copied().chain([CPU_HARDWARE]);
            let help = did_you_mean(&gpu, names.clone()).unwrap_or_else(|| one_of(names));
            self.error(
                SpecDiagnostic::new(span, format!("unknown GPU type `{gpu}`"), "unknown GPU")
                    .with_help(help),
            );
            return None;
        }
        let gpus = self.required_count_prop(node, "gpus", "hardware \"...\" gpus=8")?;
        Some(Hardware {
            gpu,
            gpus,
            cpu: None,
        })
    }

    /// `hardware "cpu" model="..." cores=N [memory-gib=N] [isa="avx2 ..."]`:
    /// a machine without GPUs, as `/proc/cpuinfo` describes it.
    fn cpu_hardware(&mut self, node: &KdlNode) -> Option<Hardware> {
        const EXAMPLE: &str = "hardware \"cpu\" model=\"AMD EPYC 9654 96-Core Processor\" cores=16 isa=\"avx2 avx512f\"";
        self.props(node, &["model", "cores", "memory-gib", "isa"]);
        self.no_children(node);
        let model = match prop(node, "model") {
            Some(e) => self.string(e, "model"),
            None => {
                self.missing_prop(node, "model", EXAMPLE);
                None
            }
        };
        let cores = self.required_count_prop(node, "cores", EXAMPLE);
        let memory_gib = match prop(node, "memory-gib") {
            Some(e) => Some(self.count(e, "memory-gib")?),
            None => None,
        };
        let mut isa = Vec::new();
        if let Some(e) = prop(node, "isa") {
            for feature in self.string(e, "isa")?.split_whitespace() {
                if !crate::cpu::ENGINE_FEATURES.contains(&feature) {
                    self.error(
                        SpecDiagnostic::new(
                            e.span(),
                            format!(
                                "`{feature}` is not an instruction-set feature perfpipe keys on"
                            ),
                            "unknown feature",
                        )
                        .with_help(one_of(crate::cpu::ENGINE_FEATURES.iter().copied())),
                    );
                    return None;
                }
                isa.push(feature.to_owned());
            }
        }
        // In the order `/proc/cpuinfo` is read in, so the same CPU written
        // in another order is the same key.
        isa.sort_by_key(|f| crate::cpu::ENGINE_FEATURES.iter().position(|k| k == f));
        isa.dedup();
        Some(Hardware {
            gpu: CPU_HARDWARE.to_owned(),
            gpus: 0,
            cpu: Some(CpuDecl {
                model: model?,
                cores: cores?,
                memory_gib,
                isa,
            }),
        })
    }

    pub(super) fn model(&mut self, node: &KdlNode) -> Option<ModelRef> {
        self.props(node, &["revision"]);
        self.no_children(node);
        let id = self.required_string_arg(node, 0, "the model id")?;
        let span = arg(node, 0).map_or(node.span(), |e| e.span());
        let id = self.in_grammar(span, id, names::model_id, MODEL_HELP)?;
        let revision = self
            .optional_string_prop(node, "revision")
            .unwrap_or_else(|| "main".into());
        Some(ModelRef { id, revision })
    }

    pub(super) fn objective(&mut self, node: &KdlNode) -> Option<Objective> {
        self.no_props(node);
        self.no_children(node);
        let name = self.required_string_arg(node, 0, "the objective")?;
        let objective = Objective::from_name(&name);
        if objective.is_none() {
            let span = arg(node, 0).map(|e| e.span()).unwrap_or(node.span());
            let names = Objective::NAMES.iter().copied();
            let help = did_you_mean(&name, names.clone()).unwrap_or_else(|| one_of(names));
            self.error(
                SpecDiagnostic::new(span, format!("unknown objective `{name}`"), "here")
                    .with_help(help),
            );
        }
        objective
    }

    pub(super) fn runtime(&mut self, node: &KdlNode) -> Option<Runtime> {
        self.no_props(node);
        self.no_children(node);
        let name = self.required_string_arg(node, 0, "the runtime")?;
        let runtime = Runtime::from_name(&name);
        if runtime.is_none() {
            let span = arg(node, 0).map(|e| e.span()).unwrap_or(node.span());
            self.error(
                SpecDiagnostic::new(span, format!("unknown runtime `{name}`"), "unknown runtime")
                    .with_help(one_of(Runtime::NAMES.iter().copied())),
            );
        }
        runtime
    }

    pub(super) fn engine(&mut self, node: &KdlNode) -> Option<EngineDecl> {
        self.props(node, &["version", "image", "startup-timeout"]);
        self.no_children(node);
        let name = self.required_string_arg(node, 0, "the engine")?;
        let kind = EngineKind::from_name(&name);
        if kind.is_none() {
            let span = arg(node, 0).map(|e| e.span()).unwrap_or(node.span());
            let help = did_you_mean(&name, EngineKind::NAMES.iter().copied())
                .unwrap_or_else(|| one_of(EngineKind::NAMES.iter().copied()));
            self.error(
                SpecDiagnostic::new(span, format!("unknown engine `{name}`"), "unknown engine")
                    .with_help(help),
            );
        }
        let version = match prop(node, "version") {
            Some(e) => self
                .string(e, "the engine version")
                .and_then(|v| self.in_grammar(e.span(), v, names::version, VERSION_HELP)),
            None => {
                self.error(
                    SpecDiagnostic::new(
                        node.span(),
                        format!("engine `{name}` has no version"),
                        "missing `version`",
                    )
                    .with_help(format!(
                        "pin the exact version: `engine {name} version=\"0.11.0\"`"
                    )),
                );
                None
            }
        };
        let image = prop(node, "image").and_then(|e| {
            let image = self.string(e, "image")?;
            self.in_grammar(e.span(), image, names::image_reference, "an image reference such as `vllm/vllm-openai:v0.11.0` or `nvcr.io/nvidia/tensorrt-llm/release@sha256:…`; it is given to `docker run` as the image")
        });
        let startup_timeout = prop(node, "startup-timeout")
            .and_then(|e| self.timeout_secs(e, "the startup timeout in seconds"))
            .map(Duration::from_secs);
        Some(EngineDecl {
            kind: kind?,
            version: version?,
            image,
            startup_timeout,
        })
    }

    pub(super) fn harness(&mut self, node: &KdlNode) -> Option<HarnessDecl> {
        const HARNESSES: [&str; 3] = ["builtin", "vllm-bench", "guidellm"];
        self.props(
            node,
            &[
                "version",
                "backend",
                "endpoint",
                "temperature",
                "ignore-eos",
            ],
        );
        self.no_children(node);
        let name = self.required_string_arg(node, 0, "the harness")?;
        let span = arg(node, 0).map(|e| e.span()).unwrap_or(node.span());
        let version = prop(node, "version").and_then(|e| {
            let v = self.string(e, "the harness version")?;
            self.in_grammar(e.span(), v, names::version, VERSION_HELP)
        });
        let kind = match (name.as_str(), version) {
            ("builtin", None) => HarnessKind::Builtin,
            ("builtin", Some(_)) => {
                self.error(
                    SpecDiagnostic::new(span, "the built-in harness has no `version=`", "built-in")
                        .with_help("its version is perfpipe's own, recorded in every key; remove `version=`"),
                );
                return None;
            }
            ("vllm-bench", Some(version)) => HarnessKind::VllmBench { version },
            ("guidellm", Some(version)) => HarnessKind::Guidellm { version },
            (client @ ("vllm-bench" | "guidellm"), None) => {
                let example = if client == "guidellm" {
                    "0.7.2"
                } else {
                    "0.11.0"
                };
                self.error(
                    SpecDiagnostic::new(span, format!("`{client}` needs the client's exact version"), "missing `version=`")
                        .with_help(format!("e.g. `harness {client} version=\"{example}\"`: the client's version is part of every key")),
                );
                return None;
            }
            (other, _) => {
                let help = did_you_mean(other, HARNESSES).unwrap_or_else(|| one_of(HARNESSES));
                self.error(
                    SpecDiagnostic::new(
                        span,
                        format!("unknown harness `{other}`"),
                        "unknown harness",
                    )
                    .with_help(help),
                );
                return None;
            }
        };
        let mut harness = HarnessDecl {
            kind,
            ..HarnessDecl::default()
        };
        if let Some(e) = prop(node, "backend") {
            match self.string(e, "the backend").as_deref() {
                Some("openai") => harness.backend = Backend::Openai,
                Some("openai-chat") => harness.backend = Backend::OpenaiChat,
                Some(other) => self.error(
                    SpecDiagnostic::new(e.span(), format!("unknown backend `{other}`"), "here")
                        .with_help("expected `openai` or `openai-chat`"),
                ),
                None => {}
            }
        }
        harness.endpoint = match prop(node, "endpoint") {
            Some(e) => self.string(e, "the endpoint")?,
            None => harness.backend.default_endpoint().into(),
        };
        if let Some(e) = prop(node, "temperature") {
            let t = self.number(e, "the temperature")?;
            harness.temperature = match bounds::temperature(t) {
                Ok(t) => t,
                Err(error) => {
                    self.error(SpecDiagnostic::new(
                        e.span(),
                        error.to_string(),
                        "out of range",
                    ));
                    return None;
                }
            };
        }
        if let Some(e) = prop(node, "ignore-eos") {
            harness.ignore_eos = self.boolean(e, "ignore-eos")?;
        }
        Some(harness)
    }

    pub(super) fn workload(&mut self, node: &KdlNode) -> Option<Vec<Workload>> {
        self.no_props(node);
        let name = self.required_name(node, "the workload's name", RefKind::Workload);
        let mut dataset = None;
        let mut prompts = None;
        let mut rates: Vec<(RequestRate, String)> = Vec::new();
        let mut concurrencies: Vec<(u32, String)> = Vec::new();
        let mut arrival: Option<Spanned<Arrival>> = None;
        let mut title = None;
        let mut slo = None;
        let mut search = None;
        // Where each load value is written, for a search's checks.
        let (mut rate_spans, mut concurrency_spans) = (Vec::new(), Vec::new());
        let mut prompts_span = node.span();
        for child in self.children(node, WORKLOAD_NODES) {
            match child.name().value() {
                "title" => {
                    self.no_props(child);
                    self.no_children(child);
                    title = self.required_string_arg(child, 0, "the workload's title");
                }
                "dataset" => dataset = self.dataset(child),
                "slo" => slo = self.slo(child),
                "search" => search = self.search(child),
                "prompts" => {
                    prompts_span = child.span();
                    prompts = self.single_count(child, "the number of prompts");
                }
                "rate" => {
                    self.no_props(child);
                    self.no_children(child);
                    for e in args(child) {
                        rate_spans.push(e.span());
                        if let Some(rate) = self.request_rate(e) {
                            let text = match rate {
                                RequestRate::Infinite => "inf".to_owned(),
                                RequestRate::PerSecond(_) => literal(e),
                            };
                            self.axis_value(&mut rates, rate, text, e.span(), "rate");
                        }
                    }
                    if arg(child, 0).is_none() {
                        self.missing_arg(child, "the request rate (`inf` or req/s)");
                    }
                }
                "arrival" => {
                    self.no_props(child);
                    self.no_children(child);
                    arrival =
                        self.named(child, "arrival process", Arrival::NAMES, Arrival::from_name);
                }
                "concurrency" => {
                    self.no_props(child);
                    self.no_children(child);
                    for e in args(child) {
                        concurrency_spans.push(e.span());
                        if let Some(n) = self.count(e, "the max concurrency") {
                            self.axis_value(
                                &mut concurrencies,
                                n,
                                n.to_string(),
                                e.span(),
                                "concurrency",
                            );
                        }
                    }
                    if arg(child, 0).is_none() {
                        self.missing_arg(child, "the max concurrency");
                    }
                }
                _ => {}
            }
        }
        if let Some(a) = &arrival
            && rates.iter().all(|(r, _)| *r == RequestRate::Infinite)
        {
            self.error(
                SpecDiagnostic::new(
                    a.span,
                    format!("`arrival {}` needs a finite `rate`", a.value.name()),
                    "without a rate",
                )
                .with_help("at `rate inf` every request leaves at once; declare e.g. `rate 8`"),
            );
        }
        if let Some(search) = &search {
            self.check_search_loads(search, &rate_spans, &concurrency_spans);
        }
        if dataset.is_none() && !node_has_child(node, "dataset") {
            self.missing_node(node, "dataset", "dataset random input=128 output=4 seed=42");
        }
        if prompts.is_none() && !node_has_child(node, "prompts") {
            self.missing_node(node, "prompts", "prompts 1000");
        }
        // What the harness would build in memory: bounded as `bench`'s options are.
        let too_many = match (prompts, &dataset) {
            (Some(n), _) if n > bounds::MAX_PROMPTS => Some(format!(
                "a workload has at most {} prompts, found {n}",
                bounds::MAX_PROMPTS
            )),
            (
                Some(n),
                Some(Dataset::Random {
                    input_len,
                    range_ratio,
                    ..
                }),
            ) => bounds::random_prompt_tokens(n, *input_len, *range_ratio)
                .err()
                .map(|e| e.to_string()),
            _ => None,
        };
        if let Some(message) = too_many {
            self.error(SpecDiagnostic::new(prompts_span, message, "out of range"));
        }
        let declared = Workload {
            name: name?,
            title,
            dataset: dataset?,
            prompts: prompts?,
            rate: RequestRate::Infinite,
            arrival: arrival.map(|a| a.value).unwrap_or_default(),
            concurrency: None,
            axis: None,
            slo,
            search,
        };
        let points = load_points(&declared, &rates, &concurrencies);
        if points.len() > 1 {
            let names = points.iter().map(|p| p.name.value.clone()).collect();
            self.axes.push((declared.name.value.clone(), names));
        }
        Some(points)
    }

    /// `slo ttft_ms=… tpot_ms=… itl_ms=… e2el_ms=…`: at least one objective,
    /// each a positive number of milliseconds.
    pub(super) fn slo(&mut self, node: &KdlNode) -> Option<Slo> {
        const NAMES: [&str; 4] = ["ttft_ms", "tpot_ms", "itl_ms", "e2el_ms"];
        // `p99_ttft_ms=300`: a percentile is the share of requests that must
        // meet an objective, which `attainment=` states.
        let mut allowed = NAMES.to_vec();
        for e in node.entries() {
            let Some(name) = e.name().map(|n| n.value()) else {
                continue;
            };
            let Some(objective) = percentile_objective(name).filter(|o| NAMES.contains(o)) else {
                continue;
            };
            allowed.push(name);
            self.error(
                SpecDiagnostic::new(
                    e.span(),
                    format!("`{name}` is a percentile, not an objective"),
                    "here",
                )
                .with_help(format!(
                    "an SLO bounds each request: write `{objective}=…`; the share of requests that must meet it (99 for a p99) is `attainment=` of the workload's `search` (99 by default), and reports give each run's attainment"
                )),
            );
        }
        self.props(node, &allowed);
        self.no_children(node);
        let mut objectives = Vec::new();
        for (name, latency) in NAMES.iter().zip(Latency::ALL) {
            let Some(e) = prop(node, name) else { continue };
            match self.number(e, name) {
                Some(ms) if ms > 0.0 => objectives.push((latency, ms)),
                Some(_) => self.error(
                    SpecDiagnostic::new(e.span(), format!("`{name}` must be positive"), "here")
                        .with_help("an objective is a latency in milliseconds a request must meet, e.g. `ttft_ms=500`"),
                ),
                None => {}
            }
        }
        if objectives.is_empty() && !node.entries().iter().any(|e| e.name().is_some()) {
            self.error(
                SpecDiagnostic::new(node.span(), "`slo` states no objective", "empty")
                    .with_help("e.g. `slo ttft_ms=500 tpot_ms=50`; a request meets the SLO when it meets every objective"),
            );
        }
        Some(Slo { objectives })
    }

    /// One value of a load axis, refused when listed twice (it would be one run twice).
    fn axis_value<T: PartialEq>(
        &mut self,
        values: &mut Vec<(T, String)>,
        value: T,
        text: String,
        span: SourceSpan,
        node: &str,
    ) {
        if values.iter().any(|(v, _)| *v == value) {
            self.error(
                SpecDiagnostic::new(span, format!("`{node}` lists {text} twice"), "listed again")
                    .with_help("each value of a load axis is one run; list it once"),
            );
        } else {
            values.push((value, text));
        }
    }

    /// A request rate: `inf`, or requests per second within bounds.
    fn request_rate(&mut self, e: &KdlEntry) -> Option<RequestRate> {
        match e.value() {
            KdlValue::String(s) if s == "inf" => Some(RequestRate::Infinite),
            KdlValue::Float(f) if *f == f64::INFINITY && is_keyword(e) => {
                Some(RequestRate::Infinite)
            }
            _ => {
                let r = self.number(e, "the request rate")?;
                match bounds::request_rate(r) {
                    Ok(r) => Some(r),
                    Err(error) => {
                        self.error(
                            SpecDiagnostic::new(e.span(), error.to_string(), "out of range")
                                .with_help(format!(
                                    "a rate from {:e} requests per second, or `inf` to send all at once",
                                    bounds::MIN_REQUEST_RATE
                                )),
                        );
                        None
                    }
                }
            }
        }
    }

    pub(super) fn dataset(&mut self, node: &KdlNode) -> Option<Dataset> {
        self.no_children(node);
        let kind = self.required_string_arg(node, 0, "the dataset kind")?;
        // A bad seed is reported with the dataset's other errors.
        let seed = match prop(node, "seed") {
            Some(e) => self
                .integer(e, "the seed")
                .and_then(|i| match u64::try_from(i) {
                    Ok(seed) => Some(seed),
                    Err(_) => {
                        self.error(SpecDiagnostic::new(
                            e.span(),
                            format!("the seed must be between 0 and {}, found {i}", u64::MAX),
                            "out of range",
                        ));
                        None
                    }
                }),
            None => Some(0),
        };
        match kind.as_str() {
            "sharegpt" => {
                self.props(
                    node,
                    &["path", "sample", "output-len", "seed", "conversion"],
                );
                let path = match prop(node, "path") {
                    Some(e) => self.string(e, "the dataset path"),
                    None => {
                        self.error(
                            SpecDiagnostic::new(
                                node.span(),
                                "a `sharegpt` dataset needs a `path`",
                                "missing `path`",
                            )
                            .with_help("e.g. `dataset sharegpt path=\"datasets/ShareGPT_V3_unfiltered_cleaned_split.json\"`"),
                        );
                        None
                    }
                };
                let sample = self.optional_string_prop(node, "sample");
                let output_len = prop(node, "output-len").and_then(|e| self.count(e, "output-len"));
                let conversion = match prop(node, "conversion") {
                    Some(e) => {
                        self.named_entry(
                            e,
                            "ShareGPT conversion",
                            SharegptConversion::NAMES,
                            SharegptConversion::from_name,
                        )?
                        .value
                    }
                    None => SharegptConversion::default(),
                };
                Some(Dataset::ShareGpt {
                    path: path?,
                    sample,
                    output_len,
                    seed: seed?,
                    conversion,
                })
            }
            "random" => {
                self.props(node, &["input", "output", "seed", "range-ratio"]);
                let input_len =
                    self.required_count_prop(node, "input", "dataset random input=4000 output=200");
                let output_len = self.required_count_prop(
                    node,
                    "output",
                    "dataset random input=4000 output=200",
                );
                let range_ratio = match prop(node, "range-ratio") {
                    Some(e) => {
                        let r = self.number(e, "the range ratio")?;
                        if !(0.0..1.0).contains(&r) {
                            self.error(SpecDiagnostic::new(
                                e.span(),
                                "the range ratio must be in [0, 1)",
                                "out of range",
                            ));
                        }
                        r
                    }
                    None => 0.0,
                };
                Some(Dataset::Random {
                    input_len: input_len?,
                    output_len: output_len?,
                    range_ratio,
                    seed: seed?,
                })
            }
            other => {
                let span = arg(node, 0).map(|e| e.span()).unwrap_or(node.span());
                let help = did_you_mean(other, ["sharegpt", "random"])
                    .unwrap_or_else(|| one_of(["sharegpt", "random"]));
                self.error(
                    SpecDiagnostic::new(
                        span,
                        format!("unknown dataset `{other}`"),
                        "unknown dataset",
                    )
                    .with_help(help),
                );
                None
            }
        }
    }
}

/// The runs a workload declares: itself when it lists one load, else one
/// workload per point of its axes (rates × concurrencies), named
/// `<workload>@rate=<r>,c=<n>` by the axes it has.
fn load_points(
    declared: &Workload,
    rates: &[(RequestRate, String)],
    concurrencies: &[(u32, String)],
) -> Vec<Workload> {
    let rates: Vec<Option<&(RequestRate, String)>> = match rates {
        [] => vec![None],
        _ => rates.iter().map(Some).collect(),
    };
    let concurrencies: Vec<Option<&(u32, String)>> = match concurrencies {
        [] => vec![None],
        _ => concurrencies.iter().map(Some).collect(),
    };
    let is_axis = rates.len() > 1 || concurrencies.len() > 1;
    let mut points = Vec::new();
    for rate in &rates {
        for concurrency in &concurrencies {
            let mut point = declared.clone();
            point.rate = rate.map_or(RequestRate::Infinite, |(r, _)| *r);
            point.concurrency = concurrency.map(|(c, _)| *c);
            if is_axis {
                let mut parts = Vec::new();
                if rates.len() > 1 {
                    parts.extend(rate.map(|(_, text)| format!("rate={text}")));
                }
                if concurrencies.len() > 1 {
                    parts.extend(concurrency.map(|(_, text)| format!("c={text}")));
                }
                point.name.value = format!("{}@{}", declared.name.value, parts.join(","));
                point.axis = Some(declared.name.value.clone());
            }
            points.push(point);
        }
    }
    points
}

/// The objective a percentile name qualifies (`p99_ttft_ms`, `p99.9_itl_ms`):
/// what follows `p`, a number and `_`.
fn percentile_objective(name: &str) -> Option<&str> {
    let rest = name.strip_prefix('p')?;
    let (number, objective) = rest.split_once('_')?;
    let is_number = !number.is_empty()
        && number.chars().all(|c| c.is_ascii_digit() || c == '.')
        && number.starts_with(|c: char| c.is_ascii_digit());
    is_number.then_some(objective)
}

#[cfg(test)]
mod tests {
    use super::percentile_objective;
    use crate::spec::{Objective, SourceFile, parse};

    fn parsed(objective: &str) -> Result<Objective, Vec<(String, Option<String>)>> {
        let text = format!(
            r#"experiment "e" {{
                hardware "nvidia-h100-sxm5-80gb" gpus=1
                model "o/m"
                engine vllm version="0.11.0"
                {objective}
                workload w {{ dataset random input=8 output=8; prompts 1 }}
                step s engine=vllm gpus=1
            }}"#
        );
        parse(&SourceFile {
            name: "e.kdl".into(),
            text,
        })
        .map(|spec| spec.objective)
        .map_err(|e| {
            e.errors
                .iter()
                .map(|e| (e.message.clone(), e.help.clone()))
                .collect()
        })
    }

    #[test]
    fn a_study_optimizes_throughput_unless_it_declares_latency() {
        assert_eq!(parsed(""), Ok(Objective::Throughput));
        assert_eq!(parsed("objective latency"), Ok(Objective::Latency));
        assert_eq!(parsed("objective throughput"), Ok(Objective::Throughput));
        assert_eq!(
            parsed("objective latensy"),
            Err(vec![(
                "unknown objective `latensy`".to_owned(),
                Some("did you mean `latency`?".to_owned())
            )])
        );
    }

    fn cpu_study(hardware: &str, step: &str) -> Result<crate::spec::Spec, Vec<String>> {
        parse(&SourceFile {
            name: "e.kdl".into(),
            text: format!(
                "experiment e {{\n {step}\n model \"/models/tiny\"\n engine vllm version=\"0.32.0+cpu\"\n \
                 workload w {{ dataset random input=8 output=8; prompts 1 }}\n {hardware}\n}}\n"
            ),
        })
        .map_err(|e| e.errors.iter().map(|e| e.message.clone()).collect())
    }

    #[test]
    fn cpu_hardware_declares_the_cpu_and_its_steps_no_gpus() {
        // The hardware after the steps: the steps still know it is a CPU.
        let spec = cpu_study(
            r#"hardware "cpu" model="AMD EPYC" cores=2 memory-gib=23 isa="avx512f avx2""#,
            "step s engine=vllm",
        )
        .unwrap();
        let cpu = spec.hardware.cpu.clone().unwrap();
        assert_eq!(
            (cpu.model.as_str(), cpu.cores, cpu.memory_gib),
            ("AMD EPYC", 2, Some(23))
        );
        assert_eq!(cpu.isa, ["avx2", "avx512f"], "in /proc/cpuinfo's order");
        assert_eq!((spec.hardware.gpus, spec.steps[0].gpus), (0, 0));
        assert_eq!(
            cpu_study(
                r#"hardware "cpu" model="x" cores=2"#,
                "step s engine=vllm gpus=1"
            )
            .unwrap_err(),
            ["the hardware is `\"cpu\"`: steps use no GPUs"]
        );
        assert_eq!(
            cpu_study(r#"hardware "cpu" cores=2 isa="avx9""#, "step s engine=vllm").unwrap_err(),
            [
                "`hardware` needs `model=`",
                "`avx9` is not an instruction-set feature perfpipe keys on"
            ]
        );
        // A GPU study still needs its steps' GPUs.
        assert_eq!(
            cpu_study(
                r#"hardware "nvidia-h100-sxm5-80gb" gpus=1"#,
                "step s engine=vllm"
            )
            .unwrap_err(),
            ["`step` needs `gpus=`"]
        );
    }

    #[test]
    fn a_percentile_in_an_slo_points_to_attainment() {
        let errors = parse(&SourceFile {
            name: "e.kdl".into(),
            text: "experiment e {\n hardware \"nvidia-a100-sxm4-80gb\" gpus=1\n model \"m/m\"\n \
                   engine vllm version=\"0.11.0\"\n slo p99_ttft_ms=300\n \
                   workload a { dataset random input=8 output=8; prompts 1 }\n \
                   step s engine=vllm gpus=1\n}\n"
                .into(),
        })
        .unwrap_err();
        let said: Vec<(&str, Option<&str>)> = errors
            .errors
            .iter()
            .map(|e| (e.message.as_str(), e.help.as_deref()))
            .collect();
        assert_eq!(said.len(), 1, "{said:?}");
        assert_eq!(said[0].0, "`p99_ttft_ms` is a percentile, not an objective");
        assert!(
            said[0].1.unwrap().contains("`ttft_ms=…`")
                && said[0].1.unwrap().contains("`attainment=`")
        );
        assert_eq!(percentile_objective("p99.9_itl_ms"), Some("itl_ms"));
        assert_eq!(percentile_objective("pX_itl_ms"), None);
    }

    #[test]
    fn a_workload_holds_its_own_slo_else_the_experiment_s() {
        use crate::metrics::Latency;
        let spec = crate::spec::parse(&crate::spec::SourceFile {
            name: "e.kdl".into(),
            text: "experiment e {\n hardware \"nvidia-a100-sxm4-80gb\" gpus=1\n model \"m/m\"\n \
                   engine vllm version=\"0.11.0\"\n slo ttft_ms=500\n \
                   workload a { dataset random input=8 output=8; prompts 1 }\n \
                   workload b { dataset random input=8 output=8; prompts 1; slo tpot_ms=20 e2el_ms=900 }\n \
                   step s engine=vllm gpus=1\n}\n"
                .into(),
        })
        .unwrap();
        let objectives = |w: &str| spec.workload(w).unwrap().slo.clone().unwrap().objectives;
        assert_eq!(objectives("a"), [(Latency::Ttft, 500.0)]);
        assert_eq!(
            objectives("b"),
            [(Latency::Tpot, 20.0), (Latency::E2el, 900.0)]
        );
    }

    #[test]
    fn two_load_axes_are_a_run_per_pair_named_by_both() {
        let spec = crate::spec::parse(&crate::spec::SourceFile {
            name: "e.kdl".into(),
            text: "experiment e {\n hardware \"nvidia-a100-sxm4-80gb\" gpus=1\n model \"m/m\"\n \
                   engine vllm version=\"0.11.0\"\n \
                   workload w { dataset random input=8 output=8; prompts 1; rate 0.5 \"inf\"; concurrency 2 4 }\n \
                   step s engine=vllm gpus=1\n}\n"
                .into(),
        })
        .unwrap();
        let points: Vec<_> = spec
            .workloads
            .iter()
            .map(|w| {
                (
                    w.name.value.as_str(),
                    w.rate,
                    w.concurrency,
                    w.declared_name(),
                )
            })
            .collect();
        assert_eq!(
            points,
            [
                (
                    "w@rate=0.5,c=2",
                    crate::spec::RequestRate::PerSecond(0.5),
                    Some(2),
                    "w"
                ),
                (
                    "w@rate=0.5,c=4",
                    crate::spec::RequestRate::PerSecond(0.5),
                    Some(4),
                    "w"
                ),
                (
                    "w@rate=inf,c=2",
                    crate::spec::RequestRate::Infinite,
                    Some(2),
                    "w"
                ),
                (
                    "w@rate=inf,c=4",
                    crate::spec::RequestRate::Infinite,
                    Some(4),
                    "w"
                ),
            ]
        );
    }
}
