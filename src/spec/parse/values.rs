//! Reading nodes, properties and typed values, with an error for each misuse.

use kdl::{KdlEntry, KdlNode, KdlValue};

use super::*;
use crate::spec::diag::{SpecDiagnostic, closest, did_you_mean, one_of};
use crate::spec::model::*;

impl Decoder {
    /// A name of a declared engine, workload or step, checked once the whole file is read.
    pub(super) fn reference(&mut self, entry: &KdlEntry, kind: RefKind) -> Option<String> {
        let article = if kind == RefKind::Engine { "an" } else { "a" };
        let name = self.string(entry, &format!("{article} {} name", kind.noun()))?;
        self.refs.push(Reference {
            kind,
            name: name.clone(),
            span: entry.span(),
            whole_axis: false,
        });
        Some(name)
    }

    pub(super) fn children<'a>(&mut self, node: &'a KdlNode, allowed: &[&str]) -> Vec<&'a KdlNode> {
        let Some(doc) = node.children() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for child in doc.nodes() {
            if allowed.contains(&child.name().value()) {
                self.check_arity(node.name().value(), child);
                out.push(child);
            } else {
                let context = format!("in `{}`", node.name().value());
                self.unknown_node(child, allowed, &context);
            }
        }
        out
    }

    pub(super) fn unknown_node(&mut self, node: &KdlNode, allowed: &[&str], context: &str) {
        let name = node.name().value();
        let suggestion = closest(name, allowed.iter().copied());
        self.suggested.extend(suggestion.map(str::to_owned));
        let help = suggestion
            .map(|k| format!("did you mean `{k}`?"))
            .unwrap_or_else(|| one_of(allowed.iter().copied()));
        self.error(
            SpecDiagnostic::new(
                node.name().span(),
                format!("unknown node `{name}` {context}"),
                "unknown node",
            )
            .with_help(help),
        );
    }

    pub(super) fn props(&mut self, node: &KdlNode, allowed: &[&str]) {
        for e in node.entries() {
            let Some(name) = e.name() else { continue };
            if !allowed.contains(&name.value()) {
                let help =
                    did_you_mean(name.value(), allowed.iter().copied()).unwrap_or_else(|| {
                        if allowed.is_empty() {
                            format!("`{}` takes no properties", node.name().value())
                        } else {
                            one_of(allowed.iter().copied())
                        }
                    });
                self.error(
                    SpecDiagnostic::new(
                        e.span(),
                        format!(
                            "unknown property `{}` on `{}`",
                            name.value(),
                            node.name().value()
                        ),
                        "unknown property",
                    )
                    .with_help(help),
                );
            }
        }
    }

    pub(super) fn no_props(&mut self, node: &KdlNode) {
        self.props(node, &[]);
    }

    pub(super) fn no_children(&mut self, node: &KdlNode) {
        if let Some(doc) = node.children()
            && !doc.nodes().is_empty()
        {
            self.error(
                SpecDiagnostic::new(
                    doc.span(),
                    format!("`{}` takes no block", node.name().value()),
                    "unexpected block",
                )
                .with_help("remove the `{ ... }`"),
            );
        }
    }

    pub(super) fn missing_node(&mut self, parent: &KdlNode, name: &str, example: &str) {
        if self.suggested.iter().any(|s| s == name) {
            return;
        }
        self.error(
            SpecDiagnostic::new(
                parent.name().span(),
                format!("`{}` has no `{name}`", parent.name().value()),
                format!("missing `{name}`"),
            )
            .with_help(format!("add e.g. `{example}`")),
        );
    }

    pub(super) fn missing_prop(&mut self, node: &KdlNode, name: &str, example: &str) {
        self.error(
            SpecDiagnostic::new(
                node.name().span(),
                format!("`{}` needs `{name}=`", node.name().value()),
                format!("missing `{name}`"),
            )
            .with_help(format!("e.g. `{example}`")),
        );
    }

    pub(super) fn missing_arg(&mut self, node: &KdlNode, what: &str) {
        self.error(SpecDiagnostic::new(
            node.span(),
            format!("`{}` needs {what}", node.name().value()),
            "missing value",
        ));
    }

    pub(super) fn required_string_arg(
        &mut self,
        node: &KdlNode,
        index: usize,
        what: &str,
    ) -> Option<String> {
        match arg(node, index) {
            Some(e) => self.string(e, what),
            None => {
                self.missing_arg(node, what);
                None
            }
        }
    }

    pub(super) fn required_name(
        &mut self,
        node: &KdlNode,
        what: &str,
        kind: RefKind,
    ) -> Option<Spanned<String>> {
        let entry = arg(node, 0);
        let value = self.required_string_arg(node, 0, what)?;
        self.declared.push((kind, value.clone()));
        Some(Spanned {
            value,
            span: entry.map(|e| e.span()).unwrap_or(node.span()),
        })
    }

    /// The node's first argument, one of `names`.
    pub(super) fn named<T>(
        &mut self,
        node: &KdlNode,
        what: &str,
        names: &[&str],
        from_name: fn(&str) -> Option<T>,
    ) -> Option<Spanned<T>> {
        match arg(node, 0) {
            Some(e) => self.named_entry(e, what, names, from_name),
            None => {
                self.missing_arg(
                    node,
                    &format!("the {what} ({})", one_of(names.iter().copied())),
                );
                None
            }
        }
    }

    /// A value that must be one of `names`.
    pub(super) fn named_entry<T>(
        &mut self,
        entry: &KdlEntry,
        what: &str,
        names: &[&str],
        from_name: fn(&str) -> Option<T>,
    ) -> Option<Spanned<T>> {
        let text = self.string(entry, what)?;
        match from_name(&text) {
            Some(value) => Some(Spanned {
                value,
                span: entry.span(),
            }),
            None => {
                let help = did_you_mean(&text, names.iter().copied())
                    .unwrap_or_else(|| one_of(names.iter().copied()));
                self.error(
                    SpecDiagnostic::new(entry.span(), format!("unknown {what} `{text}`"), "here")
                        .with_help(help),
                );
                None
            }
        }
    }

    pub(super) fn optional_string_prop(&mut self, node: &KdlNode, name: &str) -> Option<String> {
        prop(node, name).and_then(|e| self.string(e, name))
    }

    pub(super) fn required_count_prop(
        &mut self,
        node: &KdlNode,
        name: &str,
        example: &str,
    ) -> Option<u32> {
        match prop(node, name) {
            Some(e) => self.count(e, name),
            None => {
                self.missing_prop(node, name, example);
                None
            }
        }
    }

    pub(super) fn single_count(&mut self, node: &KdlNode, what: &str) -> Option<u32> {
        self.no_props(node);
        self.no_children(node);
        match arg(node, 0) {
            Some(e) => self.count(e, what),
            None => {
                self.missing_arg(node, what);
                None
            }
        }
    }

    pub(super) fn wrong_type(&mut self, entry: &KdlEntry, expected: &str, what: &str) {
        self.error(
            SpecDiagnostic::new(
                entry.span(),
                format!(
                    "{what} must be {expected}, found {}",
                    describe(entry.value())
                ),
                format!("expected {expected}"),
            )
            .with_help(match entry.value() {
                KdlValue::String(s) if s.parse::<f64>().is_ok() => {
                    format!("write the number without quotes: `{s}`")
                }
                _ => format!("write {expected} here"),
            }),
        );
    }

    pub(super) fn string(&mut self, entry: &KdlEntry, what: &str) -> Option<String> {
        match entry.value() {
            KdlValue::String(s) => Some(s.clone()),
            _ => {
                self.wrong_type(entry, "a string", what);
                None
            }
        }
    }

    /// A string or number as text, the way an engine's argv would carry it.
    pub(super) fn scalar_text(&mut self, entry: &KdlEntry, what: &str) -> Option<String> {
        match entry.value() {
            KdlValue::String(s) => Some(s.clone()),
            KdlValue::Integer(i) => Some(i.to_string()),
            KdlValue::Float(_) => Some(
                entry
                    .format()
                    .map(|f| f.value_repr.trim().to_owned())
                    .unwrap_or_else(|| entry.value().to_string()),
            ),
            _ => {
                self.wrong_type(entry, "a string or a number", what);
                None
            }
        }
    }

    pub(super) fn integer(&mut self, entry: &KdlEntry, what: &str) -> Option<i128> {
        match entry.value() {
            KdlValue::Integer(i) => Some(*i),
            _ => {
                self.wrong_type(entry, "an integer", what);
                None
            }
        }
    }

    /// A positive integer that fits a `u32`.
    pub(super) fn count(&mut self, entry: &KdlEntry, what: &str) -> Option<u32> {
        let i = self.integer(entry, what)?;
        match u32::try_from(i) {
            Ok(n) if n > 0 => Some(n),
            _ => {
                self.error(SpecDiagnostic::new(
                    entry.span(),
                    format!("{what} must be between 1 and {}, found {i}", u32::MAX),
                    "out of range",
                ));
                None
            }
        }
    }

    /// Seconds from 1 to [`bounds::MAX_TIMEOUT_SECS`] (a week).
    pub(super) fn timeout_secs(&mut self, entry: &KdlEntry, what: &str) -> Option<u64> {
        let i = self.integer(entry, what)?;
        match u64::try_from(i) {
            Ok(n) if (1..=crate::spec::bounds::MAX_TIMEOUT_SECS).contains(&n) => Some(n),
            _ => {
                self.error(SpecDiagnostic::new(
                    entry.span(),
                    format!(
                        "{what} must be between 1 and {} (a week), found {i}",
                        crate::spec::bounds::MAX_TIMEOUT_SECS
                    ),
                    "out of range",
                ));
                None
            }
        }
    }

    pub(super) fn number(&mut self, entry: &KdlEntry, what: &str) -> Option<f64> {
        match entry.value() {
            KdlValue::Integer(i) => Some(*i as f64),
            KdlValue::Float(f) if f.is_finite() => Some(*f),
            // `1e400` reads as infinity.
            KdlValue::Float(_) if !is_keyword(entry) => {
                self.error(SpecDiagnostic::new(
                    entry.span(),
                    format!("{what} must be a finite number, found `{}`", literal(entry)),
                    "out of range",
                ));
                None
            }
            _ => {
                self.wrong_type(entry, "a number", what);
                None
            }
        }
    }

    pub(super) fn boolean(&mut self, entry: &KdlEntry, what: &str) -> Option<bool> {
        match entry.value() {
            KdlValue::Bool(b) => Some(*b),
            _ => {
                self.wrong_type(entry, "`#true` or `#false`", what);
                None
            }
        }
    }
}

/// The entry's value as written.
pub(super) fn literal(entry: &KdlEntry) -> String {
    entry
        .format()
        .map(|f| f.value_repr.trim().to_owned())
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| entry.value().to_string())
}

/// Written `#inf`, `#-inf` or `#nan`, rather than as a number too large for a float.
pub(super) fn is_keyword(entry: &KdlEntry) -> bool {
    literal(entry).starts_with('#')
}

pub(super) fn describe(value: &KdlValue) -> String {
    match value {
        KdlValue::String(s) => format!("the string \"{s}\""),
        KdlValue::Integer(i) => format!("the integer {i}"),
        KdlValue::Float(f) => format!("the number {f}"),
        KdlValue::Bool(b) => format!("#{b}"),
        KdlValue::Null => "#null".into(),
    }
}

pub(super) fn args(node: &KdlNode) -> impl Iterator<Item = &KdlEntry> {
    node.entries().iter().filter(|e| e.name().is_none())
}

pub(super) fn arg(node: &KdlNode, index: usize) -> Option<&KdlEntry> {
    args(node).nth(index)
}

pub(super) fn prop<'a>(node: &'a KdlNode, name: &str) -> Option<&'a KdlEntry> {
    node.entries()
        .iter()
        .rev()
        .find(|e| e.name().is_some_and(|n| n.value() == name))
}

pub(super) fn node_has_child(node: &KdlNode, name: &str) -> bool {
    node.children()
        .is_some_and(|d| d.nodes().iter().any(|n| n.name().value() == name))
}
