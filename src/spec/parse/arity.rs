//! How many values (arguments without a name) each node takes: the one table
//! every node is checked against as it is read, so that no node keeps its
//! first value and drops the others (`prompts 64 128` once became `64`).

use kdl::KdlNode;

use super::Decoder;
use super::values::args;
use crate::spec::diag::SpecDiagnostic;

/// What a node's values are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Takes {
    /// Properties or a block only.
    Nothing,
    /// One text (a name, a title, a kind).
    Text,
    /// One number.
    Number,
    /// A workload and a text (`expect-failure <workload> "<error>"`).
    TextPair,
    /// Any number of values, each kept (`args`, `workloads`, `vary`).
    List,
    /// Several numbers, each a run of its own: a load axis.
    Axis,
}

/// Every node, by the node it is written in (`""` for the file itself, `*`
/// for any name, as `expect`'s metrics are).
pub(crate) const NODES: &[(&str, &str, Takes)] = &[
    ("", "experiment", Takes::Text),
    ("experiment", "title", Takes::Text),
    ("experiment", "hardware", Takes::Text),
    ("experiment", "model", Takes::Text),
    ("experiment", "runtime", Takes::Text),
    ("experiment", "engine", Takes::Text),
    ("experiment", "harness", Takes::Text),
    ("experiment", "workload", Takes::Text),
    ("experiment", "step", Takes::Text),
    ("experiment", "sweep", Takes::Text),
    ("experiment", "compare", Takes::Text),
    ("experiment", "conclusion", Takes::Nothing),
    ("experiment", "objective", Takes::Text),
    ("experiment", "report", Takes::Nothing),
    ("experiment", "slo", Takes::Nothing),
    ("workload", "title", Takes::Text),
    ("workload", "dataset", Takes::Text),
    ("workload", "prompts", Takes::Number),
    ("workload", "rate", Takes::Axis),
    ("workload", "arrival", Takes::Text),
    ("workload", "concurrency", Takes::Axis),
    ("workload", "slo", Takes::Nothing),
    ("workload", "search", Takes::Text),
    ("step", "args", Takes::List),
    ("step", "env", Takes::Nothing),
    ("step", "workloads", Takes::List),
    ("step", "expect", Takes::Text),
    ("step", "expect-failure", Takes::TextPair),
    ("sweep", "args", Takes::List),
    ("sweep", "env", Takes::Nothing),
    ("sweep", "workloads", Takes::List),
    ("sweep", "expect", Takes::Text),
    ("sweep", "expect-failure", Takes::TextPair),
    ("sweep", "vary", Takes::List),
    ("sweep", "link", Takes::Nothing),
    ("link", "vary", Takes::List),
    ("expect", "*", Takes::Number),
    ("compare", "candidate", Takes::List),
    ("compare", "result", Takes::Text),
    ("compare", "summary", Takes::Text),
    ("compare", "delta", Takes::Text),
    ("conclusion", "command", Takes::List),
    ("conclusion", "table", Takes::List),
    ("conclusion", "case", Takes::Text),
    ("case", "baseline", Takes::List),
    ("case", "optimized", Takes::List),
    ("report", "sections", Takes::List),
    ("report", "summary", Takes::Text),
    ("report", "summary-table", Takes::List),
    ("summary", "cell", Takes::List),
];

/// What `node`, written in `parent`, takes.
pub(crate) fn of(parent: &str, node: &str) -> Option<Takes> {
    NODES
        .iter()
        .find(|(p, n, _)| *p == parent && (*n == node || *n == "*"))
        .map(|(_, _, takes)| *takes)
}

impl Decoder {
    /// An error at the first value `node` has no place for.
    pub(super) fn check_arity(&mut self, parent: &str, node: &KdlNode) {
        self.check_repeated_properties(node);
        let name = node.name().value();
        let takes = of(parent, name);
        debug_assert!(
            takes.is_some(),
            "`{name}` in `{parent}` is missing from arity::NODES"
        );
        let Some(takes) = takes else {
            return;
        };
        let most = match takes {
            Takes::Nothing => 0,
            Takes::Text | Takes::Number => 1,
            Takes::TextPair => 2,
            Takes::List | Takes::Axis => return,
        };
        let Some(extra) = args(node).nth(most) else {
            return;
        };
        let (message, help) = match takes {
            Takes::Nothing => (
                format!("`{name}` takes no value"),
                "write its settings as properties (`name=value`) or in its block".to_owned(),
            ),
            Takes::Number if parent == "workload" => (
                format!("`{name}` takes one value"),
                "only `concurrency` and `rate` take several values (a load axis, a run each); declare another workload for another value".to_owned(),
            ),
            Takes::Number => (
                format!("`{name}` takes one value"),
                "remove the others".to_owned(),
            ),
            Takes::Text if name == "expect" => (
                "`expect` takes one workload; metrics go in its block".to_owned(),
                "e.g. `expect sharegpt { total_token_throughput 3792.50 }`".to_owned(),
            ),
            Takes::TextPair => (
                format!("`{name}` takes a workload and an error"),
                format!("e.g. `{name} sharegpt \"CUDA out of memory\"`"),
            ),
            _ => (
                format!("`{name}` takes one value"),
                "remove the others, or quote a text with spaces as one string".to_owned(),
            ),
        };
        self.error(
            SpecDiagnostic::new(extra.span(), message, "no place for this value").with_help(help),
        );
    }
}

impl Decoder {
    /// KDL keeps the last of a repeated property; an error at each earlier
    /// one, as it would be dropped.
    fn check_repeated_properties(&mut self, node: &KdlNode) {
        let entries = node.entries();
        for (i, e) in entries.iter().enumerate() {
            let Some(name) = e.name() else { continue };
            if entries[i + 1..]
                .iter()
                .any(|later| later.name().is_some_and(|n| n.value() == name.value()))
            {
                self.error(
                    SpecDiagnostic::new(
                        e.span(),
                        format!("`{}=` is given again later on `{}`", name.value(), node.name().value()),
                        "would be dropped",
                    )
                    .with_help("a property takes one value; keep one (only `concurrency` and `rate` in a workload take several, as a load axis)"),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse::{SourceFile, parse};

    /// An experiment with `node` (two values) written in `parent`, and the
    /// offset of its second value; a parent without a template fails.
    fn experiment_with(parent: &str, node: &str) -> (String, usize) {
        let line = format!("{node} 2 3");
        let (workload, step) = match parent {
            "workload" => (line.clone(), String::new()),
            "expect" => (String::new(), format!("expect w {{ {line} }}")),
            _ => panic!("no template for a number in `{parent}`: add one"),
        };
        let text = format!(
            "experiment e {{\n hardware \"nvidia-a100-sxm4-80gb\" gpus=1\n model \"m/m\"\n \
             engine vllm version=\"0.11.0\"\n workload w {{\n dataset random input=8 output=8\n \
             prompts 1\n {workload}\n }}\n step s engine=vllm gpus=1 {{ {step} }}\n}}\n"
        );
        let text = if node == "prompts" {
            text.replacen(" prompts 1\n", "", 1)
        } else {
            text
        };
        let second = text.find(&line).unwrap() + line.len() - 1;
        (text, second)
    }

    #[test]
    fn every_node_that_takes_a_number_makes_several_an_axis_or_an_error_at_the_value() {
        let numeric: Vec<_> = NODES
            .iter()
            .filter(|(_, _, t)| matches!(t, Takes::Number | Takes::Axis))
            .collect();
        assert!(numeric.len() >= 4, "{numeric:?}");
        for (parent, node, takes) in numeric {
            let node = if *node == "*" {
                "total_token_throughput"
            } else {
                node
            };
            let (text, second) = experiment_with(parent, node);
            let parsed = parse(&SourceFile {
                name: "e.kdl".into(),
                text: text.clone(),
            });
            match takes {
                Takes::Axis => {
                    let spec = parsed.unwrap_or_else(|e| panic!("{node}: {e:?}\n{text}"));
                    let names: Vec<_> = spec
                        .workloads
                        .iter()
                        .map(|w| w.name.value.clone())
                        .collect();
                    assert_eq!(names.len(), 2, "{node}: {names:?}");
                    assert_eq!(spec.steps[0].workloads, names, "{node}");
                }
                _ => {
                    let errors = parsed.expect_err(node);
                    let at: Vec<_> = errors.errors.iter().map(|d| d.span.offset()).collect();
                    assert_eq!(at, [second], "{node} in {parent}: {errors:?}");
                }
            }
        }
    }

    #[test]
    fn a_repeated_property_is_an_error_at_the_value_it_would_drop() {
        let text = "experiment e {\n hardware \"nvidia-a100-sxm4-80gb\" gpus=1 gpus=2\n}\n";
        let errors = parse(&SourceFile {
            name: "e.kdl".into(),
            text: text.into(),
        })
        .unwrap_err();
        let first = &errors.errors[0];
        assert_eq!(first.message, "`gpus=` is given again later on `hardware`");
        assert_eq!(first.span.offset(), text.find("gpus=1").unwrap());
    }

    #[test]
    fn every_node_of_the_schema_lists_has_an_arity() {
        use crate::spec::parse::{STEP_NODES, SWEEP_NODES, TOP_NODES, WORKLOAD_NODES};
        for (parent, nodes) in [
            ("experiment", TOP_NODES),
            ("workload", WORKLOAD_NODES),
            ("step", STEP_NODES),
            ("sweep", SWEEP_NODES),
            ("link", &["vary"]),
        ] {
            for node in nodes {
                assert!(of(parent, node).is_some(), "`{node}` in `{parent}`");
            }
        }
    }
}
