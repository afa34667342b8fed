//! A workload's `search concurrency|rate from=… to=… [attainment=99]
//! [precision=…]`, and the rules that tie it to the workload's loads and SLO.

use kdl::{KdlEntry, KdlNode};
use miette::SourceSpan;

use super::Decoder;
use super::values::prop;
use crate::metrics::slo::DEFAULT_ATTAINMENT_PCT;
use crate::spec::bounds;
use crate::spec::diag::SpecDiagnostic;
use crate::spec::{SearchAxis, SearchDecl, Spec};

const PROPS: &[&str] = &["from", "to", "attainment", "precision"];
const EXAMPLE: &str = "search concurrency from=1 to=64";

impl Decoder {
    /// `search …` in a workload.
    pub(super) fn search(&mut self, node: &KdlNode) -> Option<SearchDecl> {
        self.props(node, PROPS);
        self.no_children(node);
        let axis = self
            .named(
                node,
                "searched load",
                SearchAxis::NAMES,
                SearchAxis::from_name,
            )
            .map(|a| a.value);
        let bound = |d: &mut Self, name: &str| match prop(node, name) {
            Some(e) => axis.and_then(|axis| d.search_load(e, axis, name)),
            None => {
                d.missing_prop(node, name, EXAMPLE);
                None
            }
        };
        let from = bound(self, "from");
        let to = bound(self, "to");
        if let (Some(from), Some(to)) = (from, to)
            && from > to
        {
            let at = prop(node, "from").map_or(node.span(), |e| e.span());
            self.error(
                SpecDiagnostic::new(at, format!("`from={from}` is above `to={to}`"), "here")
                    .with_help("a search probes loads from `from` up to `to`; swap them"),
            );
        }
        let attainment = match prop(node, "attainment") {
            None => Some(DEFAULT_ATTAINMENT_PCT),
            Some(e) => match self.number(e, "`attainment`") {
                Some(pct) if pct > 0.0 && pct <= 100.0 => Some(pct),
                Some(pct) => {
                    self.error(
                        SpecDiagnostic::new(
                            e.span(),
                            format!("`attainment` must be above 0 and at most 100, found {pct}"),
                            "out of range",
                        )
                        .with_help("the percentage of the requests sent that must meet the SLO for a load to pass, e.g. `attainment=99`"),
                    );
                    None
                }
                None => None,
            },
        };
        let precision = match (prop(node, "precision"), axis) {
            (None, _) => None,
            (Some(e), Some(SearchAxis::Concurrency)) => {
                self.error(
                    SpecDiagnostic::new(
                        e.span(),
                        "`precision` ends a rate search",
                        "on a concurrency search",
                    )
                    .with_help(
                        "a concurrency search ends at adjacent whole numbers; remove `precision=`",
                    ),
                );
                return None;
            }
            (Some(e), _) => match self.number(e, "`precision`") {
                Some(p) if p > 0.0 => Some(p),
                Some(p) => {
                    self.error(
                        SpecDiagnostic::new(e.span(), format!("`precision` must be above 0, found {p}"), "out of range")
                            .with_help("how narrow the bracket of a rate search ends, in requests per second, e.g. `precision=0.5`"),
                    );
                    return None;
                }
                None => return None,
            },
        };
        Some(SearchDecl {
            axis: axis?,
            from: from?,
            to: to?,
            attainment_pct: attainment?,
            precision,
            span: node.name().span(),
        })
    }

    /// One end of a search: a concurrency (whole, from 1) or a finite rate.
    fn search_load(&mut self, e: &KdlEntry, axis: SearchAxis, name: &str) -> Option<f64> {
        let what = format!("`{name}`");
        match axis {
            SearchAxis::Concurrency => self.count(e, &what).map(f64::from),
            SearchAxis::Rate => {
                let rate = self.number(e, &what)?;
                match bounds::request_rate(rate) {
                    Ok(crate::spec::RequestRate::PerSecond(r)) => Some(r),
                    _ => {
                        self.error(
                            SpecDiagnostic::new(e.span(), format!("{what} must be a finite request rate of at least {:e} per second, found {rate}", bounds::MIN_REQUEST_RATE), "out of range")
                                .with_help("a rate search probes finite rates; `rate inf` is one load, declare it in a workload of its own"),
                        );
                        None
                    }
                }
            }
        }
    }

    /// A searched workload finds one load: the same load declared, or a
    /// list of either load, would be dropped or contradicted.
    pub(super) fn check_search_loads(
        &mut self,
        search: &SearchDecl,
        rates: &[SourceSpan],
        concurrencies: &[SourceSpan],
    ) {
        let (same, other) = match search.axis {
            SearchAxis::Concurrency => (concurrencies, rates),
            SearchAxis::Rate => (rates, concurrencies),
        };
        let name = search.axis.name();
        if let Some(at) = same.first() {
            self.error(
                SpecDiagnostic::new(*at, format!("`{name}` is what the workload's `search` finds"), "declared as well")
                    .with_help(format!("remove `{name}` (the search probes its own loads), or the `search` to measure the loads listed")),
            );
        }
        if let Some(at) = other.get(1) {
            self.error(
                SpecDiagnostic::new(
                    *at,
                    "a searched workload takes one value of its other load",
                    "a second value",
                )
                .with_help(
                    "a search and a load axis do not combine; declare a workload for each value",
                ),
            );
        }
    }

    /// A search needs an SLO to hold probes to: the workload's or the experiment's.
    pub(super) fn check_searches(&mut self, spec: &Spec) {
        for w in &spec.workloads {
            if let Some(search) = &w.search
                && w.slo.is_none()
            {
                self.error(
                    SpecDiagnostic::new(
                        search.span,
                        format!(
                            "workload `{}` searches the largest load within an SLO but has none",
                            w.name.value
                        ),
                        "no `slo` to hold probes to",
                    )
                    .with_help("add e.g. `slo ttft_ms=500` to the workload or the experiment"),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::spec::{SearchAxis, SourceFile, parse};

    fn experiment(workload: &str, top: &str) -> String {
        format!(
            "experiment e {{\n hardware \"nvidia-a100-sxm4-80gb\" gpus=1\n model \"m/m\"\n \
             engine vllm version=\"0.11.0\"\n {top}\n workload chat {{\n dataset random input=8 output=8\n \
             prompts 4\n {workload}\n }}\n step s engine=vllm gpus=1\n}}\n"
        )
    }

    /// The errors of an experiment with `workload`'s lines: (message, help, offset).
    fn errors(workload: &str, top: &str) -> Vec<(String, Option<String>, usize)> {
        let text = experiment(workload, top);
        let errors = parse(&SourceFile {
            name: "e.kdl".into(),
            text: text.clone(),
        })
        .expect_err(&text);
        errors
            .errors
            .iter()
            .map(|d| (d.message.clone(), d.help.clone(), d.span.offset()))
            .collect()
    }

    #[test]
    fn a_search_reads_its_range_attainment_and_precision() {
        let text = experiment(
            "search rate from=0.5 to=8 attainment=95 precision=0.25\n slo ttft_ms=100",
            "",
        );
        let spec = parse(&SourceFile {
            name: "e.kdl".into(),
            text,
        })
        .unwrap();
        let w = &spec.workloads[0];
        let s = w.search.as_ref().unwrap();
        assert_eq!(
            (s.axis, s.from, s.to, s.attainment_pct, s.precision),
            (SearchAxis::Rate, 0.5, 8.0, 95.0, Some(0.25))
        );
        assert_eq!(spec.steps[0].workloads, ["chat"]);
        let probe = w.probe(2.5).unwrap();
        assert_eq!(probe.name.value, "chat@rate=2.5");
        assert_eq!(probe.declared_name(), "chat");
        assert!(probe.search.is_none());

        // The experiment's SLO holds for it; attainment defaults to 99.
        let text = experiment("search concurrency from=1 to=8", "slo e2el_ms=100");
        let spec = parse(&SourceFile {
            name: "e.kdl".into(),
            text,
        })
        .unwrap();
        let s = spec.workloads[0].search.as_ref().unwrap();
        assert_eq!((s.attainment_pct, s.precision), (99.0, None));
        assert_eq!(spec.workloads[0].probe(4.0).unwrap().concurrency, Some(4));
    }

    #[test]
    fn each_misuse_of_search_is_an_error_at_its_place_with_a_hint() {
        let cases: &[(&str, &str, &str, &str)] = &[
            (
                "search concurrency from=1 to=8",
                "",
                "search concurrency",
                "has none",
            ),
            (
                "search concurrency from=9 to=8\n slo ttft_ms=1",
                "",
                "from=9",
                "is above `to=8`",
            ),
            (
                "search concurrency from=1 to=8 precision=1\n slo ttft_ms=1",
                "",
                "precision=1",
                "ends a rate search",
            ),
            (
                "search concurrency from=1 to=8\n concurrency 4\n slo ttft_ms=1",
                "",
                "concurrency ^4",
                "is what the workload's `search` finds",
            ),
            (
                "search concurrency from=1 to=8\n rate 1 2\n slo ttft_ms=1",
                "",
                "rate 1 ^2",
                "one value of its other load",
            ),
            (
                "search rate from=1 to=8 attainment=0\n slo ttft_ms=1",
                "",
                "attainment=0",
                "above 0 and at most 100",
            ),
            (
                "search concurrency to=8\n slo ttft_ms=1",
                "",
                "search concurrency",
                "needs `from=`",
            ),
            (
                "search latency from=1 to=8\n slo ttft_ms=1",
                "",
                "latency",
                "unknown searched load",
            ),
        ];
        for (workload, top, at, message) in cases {
            let text = experiment(workload, top);
            // `^` marks the offset within `at`.
            let mark = at.find('^').unwrap_or(0);
            let offset = text.find(&at.replace('^', "")).unwrap() + mark;
            let found = errors(workload, top);
            assert!(
                found
                    .iter()
                    .any(|(m, help, o)| m.contains(message) && help.is_some() && *o == offset),
                "{workload}: want `{message}` at {offset}, got {found:?}"
            );
        }
    }
}
