//! The study's facts: its name, hardware, engines, harness and workloads.

use super::Builder;
use super::hardware;
use super::workloads::{self, Workload, slug};
use crate::page::cells::strip_bold;
use crate::page::command::engine_named;
use crate::page::model::Page;

impl Builder<'_> {
    pub(super) fn setup(&mut self) {
        let page = self.page;
        let d = &mut self.draft;
        d.title = page.title.value.clone();
        let hw_text = page
            .hardware
            .as_ref()
            .map(|h| h.value.clone())
            .unwrap_or_default();
        let hw_source = format!("{} {}", hw_text, page.title.value);
        d.gpu_type = hardware::gpu_type(&hw_source)
            .unwrap_or("nvidia-h100-sxm5-80gb")
            .to_owned();
        self.ascend = d.gpu_type.starts_with("huawei-ascend");
        if let Some(h) = &page.hardware {
            d.hardware_comments
                .push(format!("Hardware (line {}): \"{}\"", h.line, h.value));
        }
        if hardware::gpu_type(&hw_source).is_none() {
            d.hardware_comments.push(format!(
                "TODO: the page names no accelerator perfpipe knows (\"{hw_text}\"); an H100 is assumed"
            ));
        }
        let latency = page
            .objective
            .as_ref()
            .is_some_and(|o| o.value.to_lowercase().contains("latency"))
            || page.title.value.contains(" Latency");
        d.latency = latency;
        let study =
            hardware::study_model(&page.title.value).unwrap_or_else(|| slug(&page.title.value));
        let hw = hardware::short(&hw_source).unwrap_or("gpu");
        d.name = format!("{study}-{hw}{}", if latency { "-latency" } else { "" });
        for e in &page.engines {
            let (name, version) = &e.value;
            let Some(mut kind) = engine_named(name) else {
                d.engine_comments.push(format!(
                    "TODO: \"{name}: {version}\" (line {}) is no engine perfpipe knows",
                    e.line
                ));
                continue;
            };
            if kind == "vllm" && self.ascend {
                kind = "vllm-ascend";
            }
            if !d.engines.iter().any(|(k, _)| k == kind) {
                d.engines.push((kind.to_owned(), version.clone()));
            }
        }
        if self.guidellm {
            d.harness = r#"guidellm version="0.5.3""#.into();
            d.harness_comments.push(
                "GPUStack's benchmark-runner over guidellm 0.5.3 (its `constant` profile), as the page's \"Benchmark Method\" describes"
                    .into(),
            );
        } else {
            let chat = page.bench_commands.iter().any(|c| {
                c.value
                    .windows(2)
                    .any(|w| w[0] == "--backend" && w[1] == "openai-chat")
            });
            d.harness = if chat {
                r#"builtin backend="openai-chat""#.into()
            } else {
                "builtin".into()
            };
            d.harness_comments.push(
                "The page benchmarks with `vllm bench serve`; the built-in harness sends the same requests under the same definitions"
                    .into(),
            );
        }
        let cases = cases(page);
        d.workloads = workloads::from_page(page, &cases);
        if d.workloads.is_empty() {
            d.workloads.push(Workload {
                name: "sharegpt".into(),
                title: "ShareGPT".into(),
                sharegpt: true,
                comments: vec![
                    "TODO: the page states no benchmark command or profile; ShareGPT is assumed"
                        .into(),
                ],
                ..Workload::default()
            });
        }
    }

    /// The box: the GPUs the page states, else the most any step uses.
    pub(super) fn hardware_count(&mut self) {
        let need = self
            .draft
            .steps
            .iter()
            .map(|s| s.gpus * s.replicas)
            .max()
            .unwrap_or(1);
        let stated = self
            .page
            .hardware
            .as_ref()
            .and_then(|h| hardware::count(&h.value));
        self.draft.gpus = match stated {
            Some(n) if n >= need => n,
            Some(n) => {
                self.draft.hardware_comments.push(format!(
                    "TODO: the page states {n} GPUs, but a configuration needs {need}; {need} are declared"
                ));
                need
            }
            None => {
                self.draft.hardware_comments.push(format!(
                    "TODO: the page does not say how many; {need} (what its largest configuration uses) is assumed"
                ));
                need
            }
        };
    }
}

/// The conclusion's case names ("ShareGPT", "Short Prompt"), in order.
pub(super) fn cases(page: &Page) -> Vec<String> {
    page.conclusion
        .as_ref()
        .map(|t| {
            t.value
                .iter()
                .skip(1)
                .filter_map(|r| r.value.first().map(|c| strip_bold(c)))
                .collect()
        })
        .unwrap_or_default()
}
