//! Sweeps: a `sweep` expands into one step per point of its flags' matrix.
//!
//! Each `vary "<flag>" <v>...` is an axis; several axes give their Cartesian
//! product (the first declared varies slowest). A `link { vary ...; vary ... }`
//! block is one axis whose flags move together: its `vary` nodes list equally
//! many values and are zipped, as `vllm bench sweep`'s `--link-vars` does.
//!
//! Names: a sweep of one `vary` names its points `<sweep>-<value>` (as it
//! always has, so no key or name moves); a matrix names them
//! `<sweep>@<flag>=<value>,<flag>=<value>` in declared order, flags without
//! their leading dashes, as a load axis names `chat@rate=4,c=8`.

use kdl::KdlNode;
use miette::SourceSpan;

use super::steps::placeholder_step;
use super::values::*;
use super::*;
use crate::facts::EngineKind;
use crate::spec::diag::{SpecDiagnostic, one_of};

/// The most points one sweep expands into: each is a configuration run on
/// every workload point, so a larger matrix is more likely a slip than a plan.
pub const MAX_SWEEP_POINTS: usize = 256;

/// One `vary`: a flag and its values.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Vary {
    pub flag: String,
    pub values: Vec<String>,
    /// `load=concurrency`: each point runs only the workload points whose
    /// `concurrency` is its value of this flag.
    pub follows_load: bool,
}

/// The flags a sweep varies so far, by canonical spelling (`-tp` is
/// `--tensor-parallel-size`), and whether one follows the load.
#[derive(Default)]
struct Varied {
    flags: Vec<String>,
    follows_load: bool,
}

/// The flags set at one point of a sweep, in declared order.
pub(super) type Settings = Vec<(String, String)>;

/// Every point of `axes` (each axis: `vary`s of equal length, moving
/// together), the first axis slowest. (pure)
pub(super) fn points(axes: &[Vec<Vary>]) -> Vec<Settings> {
    let mut points: Vec<Settings> = vec![Vec::new()];
    for axis in axes {
        let len = axis.first().map_or(0, |v| v.values.len());
        points = points
            .into_iter()
            .flat_map(|point| {
                (0..len).map(move |i| {
                    let mut point = point.clone();
                    point.extend(axis.iter().map(|v| (v.flag.clone(), v.values[i].clone())));
                    point
                })
            })
            .collect();
    }
    points
}

/// How many points `axes` has, saturating. (pure)
pub(super) fn point_count(axes: &[Vec<Vary>]) -> usize {
    axes.iter()
        .map(|axis| axis.first().map_or(0, |v| v.values.len()))
        .fold(1usize, usize::saturating_mul)
}

/// What names a point among its sweep's: the value for a sweep of one flag,
/// else `<flag>=<value>,...`. `expect ... at=` names it so. (pure)
pub(super) fn point_label(settings: &Settings) -> String {
    match settings.as_slice() {
        [(_, value)] => value.clone(),
        _ => settings
            .iter()
            .map(|(flag, value)| format!("{}={value}", flag.trim_start_matches('-')))
            .collect::<Vec<_>>()
            .join(","),
    }
}

/// The step name of a point of sweep `sweep`. (pure)
pub(super) fn point_name(sweep: &str, settings: &Settings) -> String {
    match settings.as_slice() {
        [(_, value)] => format!("{sweep}-{}", value.trim_start_matches('-')),
        _ => format!("{sweep}@{}", point_label(settings)),
    }
}

impl Decoder {
    pub(super) fn sweep(&mut self, node: &KdlNode) -> Vec<Step> {
        let header = self.step_header(node, "the sweep's name");
        let mut base = header.clone().unwrap_or_else(placeholder_step);
        let expectations = self.step_body(node, &mut base, SWEEP_NODES);
        let axes = self.sweep_axes(node, base.engine);
        let (Some(base_header), Some(axes)) = (header, axes) else {
            return Vec::new();
        };
        let count = point_count(&axes);
        if count > MAX_SWEEP_POINTS {
            let sizes: Vec<String> = axes
                .iter()
                .map(|a| a.first().map_or(0, |v| v.values.len()).to_string())
                .collect();
            self.error(
                SpecDiagnostic::new(
                    base_header.name.span,
                    format!(
                        "the sweep has {} points ({}), more than the {MAX_SWEEP_POINTS} one sweep may have",
                        if count == usize::MAX { "too many".to_owned() } else { count.to_string() },
                        sizes.join(" × ")
                    ),
                    "too many points",
                )
                .with_help("split it into several sweeps, or `link { ... }` flags that move together so they count once"),
            );
            return Vec::new();
        }
        let follows_load = axes.iter().flatten().find(|v| v.follows_load);
        let linked_flag = follows_load.map(|v| v.flag.clone());
        let points = points(&axes);
        let labels: Vec<String> = points.iter().map(point_label).collect();
        for (at, _, span) in &expectations {
            match at {
                Some(v) if labels.contains(v) => {}
                Some(v) => self.error(
                    SpecDiagnostic::new(
                        *span,
                        format!("the sweep has no point `{v}`"),
                        "unknown sweep point",
                    )
                    .with_help(one_of(labels.iter().map(String::as_str))),
                ),
                None => self.error(
                    SpecDiagnostic::new(
                        *span,
                        "an expectation in a sweep needs `at=<point>`",
                        "which point?",
                    )
                    .with_help(one_of(labels.iter().map(String::as_str))),
                ),
            }
        }
        points
            .into_iter()
            .zip(labels)
            .map(|(settings, label)| {
                let mut step = base_header.clone();
                step.name.value = point_name(&base_header.name.value, &settings);
                step.args = base.args.clone();
                for (flag, value) in &settings {
                    step.args.push(flag.clone());
                    step.args.push(value.clone());
                }
                step.env = base.env.clone();
                step.workloads = base.workloads.clone();
                for (at, x, span) in &expectations {
                    if at.as_ref() == Some(&label) {
                        self.expect_refs.push(ExpectRef {
                            step: step.name.value.clone(),
                            workload: x.workload.clone(),
                            span: *span,
                        });
                        step.expectations.push(x.clone());
                    }
                }
                let concurrency = linked_flag.as_ref().and_then(|flag| {
                    let (_, value) = settings.iter().find(|(f, _)| f == flag)?;
                    value.parse().ok()
                });
                step.sweep = Some(SweepOrigin {
                    sweep: base_header.name.value.clone(),
                    settings,
                    concurrency,
                });
                step
            })
            .collect()
    }

    /// The sweep's axes in declared order: a `vary` each, or a `link`'s
    /// `vary`s together; `None` after an error.
    fn sweep_axes(&mut self, node: &KdlNode, engine: EngineKind) -> Option<Vec<Vec<Vary>>> {
        let errors = self.errors.len();
        let mut axes = Vec::new();
        let mut seen = Varied::default();
        let children = node.children().map(|d| d.nodes()).unwrap_or_default();
        for child in children {
            match child.name().value() {
                "vary" => axes.extend(self.vary(child, engine, &mut seen).map(|v| vec![v])),
                "link" => axes.extend(self.link(child, engine, &mut seen)),
                _ => {}
            }
        }
        if axes.is_empty() && self.errors.len() == errors {
            self.missing_node(node, "vary", "vary \"--max-num-seqs\" 256 512");
        }
        (self.errors.len() == errors && !axes.is_empty()).then_some(axes)
    }

    /// `link { vary ...; vary ... }`: flags whose values move together.
    fn link(&mut self, node: &KdlNode, engine: EngineKind, seen: &mut Varied) -> Option<Vec<Vary>> {
        self.no_props(node);
        let children = self.children(node, &["vary"]);
        let mut linked: Vec<(Vary, SourceSpan)> = Vec::new();
        for child in &children {
            if let Some(v) = self.vary(child, engine, seen) {
                linked.push((v, child.span()));
            }
        }
        if children.len() < 2 {
            self.error(
                SpecDiagnostic::new(
                    node.name().span(),
                    "a `link` joins two `vary` or more",
                    "nothing to link",
                )
                .with_help("put the flags whose values move together in it, e.g. `link { vary \"--max-num-seqs\" 64 128; vary \"--max-num-batched-tokens\" 4096 8192 }`; a lone flag is a `vary` of its own"),
            );
            return None;
        }
        let (first, _) = linked.first()?;
        let (flag, len) = (first.flag.clone(), first.values.len());
        for (v, span) in &linked[1..] {
            if v.values.len() != len {
                self.error(
                    SpecDiagnostic::new(
                        *span,
                        format!(
                            "`{}` lists {} values where `{flag}`, linked to it, lists {len}",
                            v.flag,
                            v.values.len()
                        ),
                        "unequal length",
                    )
                    .with_help("linked flags move together: give each `vary` in a `link` as many values, the n-th of each making one point"),
                );
            }
        }
        (linked.len() == children.len()).then(|| linked.into_iter().map(|(v, _)| v).collect())
    }

    /// `vary "<flag>" <value>...`: each value at most once, and a flag no
    /// other `vary` of the sweep sets.
    fn vary(&mut self, node: &KdlNode, engine: EngineKind, seen: &mut Varied) -> Option<Vary> {
        self.props(node, &["load"]);
        self.no_children(node);
        let errors = self.errors.len();
        let flag = self.required_string_arg(node, 0, "the flag to vary");
        let mut values: Vec<String> = Vec::new();
        let mut listed = std::collections::BTreeSet::new();
        for e in args(node).skip(1) {
            let Some(value) = self.scalar_text(e, "a value") else {
                continue;
            };
            if !listed.insert(value.clone()) {
                self.error(
                    SpecDiagnostic::new(e.span(), format!("`{value}` is listed twice"), "again")
                        .with_help("each value is a point of its own; remove the repeat"),
                );
            }
            values.push(value);
        }
        if flag.is_some() && values.is_empty() {
            self.missing_arg(node, "the values to sweep over");
        }
        let flag = flag?;
        let canonical = crate::facts::flags::parse_flags(engine, std::slice::from_ref(&flag))
            .1
            .first()
            .map_or_else(|| flag.clone(), |f| f.name.clone());
        if seen.flags.contains(&canonical) {
            let span = arg(node, 0).map_or(node.span(), |e| e.span());
            self.error(
                SpecDiagnostic::new(
                    span,
                    format!("`{flag}` is varied twice in this sweep"),
                    "varied again",
                )
                .with_help("a point sets each flag once: list all of its values in one `vary`"),
            );
        }
        seen.flags.push(canonical);
        let follows_load = self.follows_load(node, &flag, &values, seen);
        (self.errors.len() == errors).then_some(Vary {
            flag,
            values,
            follows_load,
        })
    }

    /// `load=concurrency` on a `vary`: its values are concurrencies, and no
    /// other `vary` of the sweep follows the load.
    fn follows_load(
        &mut self,
        node: &KdlNode,
        flag: &str,
        values: &[String],
        seen: &mut Varied,
    ) -> bool {
        let Some(entry) = prop(node, "load") else {
            return false;
        };
        match self.string(entry, "the load the flag follows").as_deref() {
            Some("concurrency") => {}
            Some(other) => {
                self.error(
                    SpecDiagnostic::new(entry.span(), format!("a flag cannot follow `{other}`"), "not a load a flag follows")
                        .with_help("`load=concurrency` runs each point at the concurrency equal to its value (as `--link-vars max_num_seqs=max_concurrency`); a rate is no count of requests a flag could hold"),
                );
                return false;
            }
            None => return false,
        }
        if seen.follows_load {
            self.error(
                SpecDiagnostic::new(
                    entry.span(),
                    "another `vary` of this sweep already follows the load",
                    "second `load=`",
                )
                .with_help("one flag follows the load; `link` the others to it"),
            );
        }
        seen.follows_load = true;
        for (value, e) in values.iter().zip(args(node).skip(1)) {
            if !value.parse::<u32>().is_ok_and(|c| c > 0) {
                self.error(
                    SpecDiagnostic::new(e.span(), format!("`{value}` is no concurrency"), "not a count")
                        .with_help(format!("`{flag}` follows the load, so each of its values is a concurrency: a whole number of at least 1")),
                );
            }
        }
        true
    }

    /// A point whose flag follows the load runs only its workloads' points
    /// at its concurrency; one left with none is an error at its sweep.
    pub(super) fn follow_load(&mut self, step: &mut Step, workloads: &[Workload]) {
        let Some((origin, concurrency)) =
            step.sweep.as_ref().and_then(|o| Some((o, o.concurrency?)))
        else {
            return;
        };
        step.workloads.retain(|name| {
            workloads
                .iter()
                .any(|w| &w.name.value == name && w.concurrency == Some(concurrency))
        });
        if step.workloads.is_empty() {
            let flag = origin
                .settings
                .iter()
                .find(|(_, v)| v.parse() == Ok(concurrency))
                .map_or("", |(f, _)| f.as_str());
            self.error(
                SpecDiagnostic::new(
                    step.name.span,
                    format!("`{}` runs no workload at concurrency {concurrency}", step.name.value),
                    "nothing to run",
                )
                .with_help(format!("its `{flag}` follows the load (`load=concurrency`): list {concurrency} in the `concurrency` of a workload it runs")),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vary(flag: &str, values: &[&str]) -> Vary {
        Vary {
            flag: flag.to_owned(),
            values: values.iter().map(|v| v.to_string()).collect(),
            follows_load: false,
        }
    }

    #[test]
    fn axes_multiply_and_links_zip() {
        let axes = vec![
            vec![vary("--a", &["1", "2"])],
            vec![vary("--b", &["x", "y"]), vary("--c", &["p", "q"])],
        ];
        assert_eq!(point_count(&axes), 4);
        let names: Vec<String> = points(&axes).iter().map(|p| point_name("s", p)).collect();
        assert_eq!(
            names,
            [
                "s@a=1,b=x,c=p",
                "s@a=1,b=y,c=q",
                "s@a=2,b=x,c=p",
                "s@a=2,b=y,c=q"
            ]
        );
    }

    #[test]
    fn one_flag_keeps_its_names() {
        let axes = vec![vec![vary("--max-num-seqs", &["8", "-1"])]];
        let points = points(&axes);
        let names: Vec<String> = points.iter().map(|p| point_name("s", p)).collect();
        assert_eq!(names, ["s-8", "s-1"]);
        assert_eq!(point_label(&points[1]), "-1");
    }

    #[test]
    fn the_count_saturates() {
        let big = vary("--a", &["1"; 0]);
        assert_eq!(point_count(&[vec![big]]), 0);
        let wide: Vec<String> = (0..1 << 16).map(|i| i.to_string()).collect();
        let axis = Vary {
            flag: "--a".into(),
            values: wide,
            follows_load: false,
        };
        let axes: Vec<Vec<Vary>> = (0..5).map(|_| vec![axis.clone()]).collect();
        assert_eq!(point_count(&axes), usize::MAX);
    }

    /// Pairs of texts: (step name, args), or (error message, text at its place).
    type Pairs = Vec<(String, String)>;

    /// The steps a sweep with `body` expands into, or its errors.
    fn expand(body: &str) -> Result<Pairs, Pairs> {
        let text = format!(
            r#"experiment "e" {{
                hardware "nvidia-a100-sxm4-80gb" gpus=1
                model "o/m"
                engine vllm version="0.11.0"
                workload w {{ dataset random input=8 output=8; prompts 1 }}
                sweep s engine=vllm gpus=1 {{
                    args "-tp" 1
                    {body}
                }}
            }}"#
        );
        match crate::spec::parse(&crate::spec::SourceFile {
            name: "e.kdl".into(),
            text: text.clone(),
        }) {
            Ok(spec) => Ok(spec
                .steps
                .iter()
                .map(|s| (s.name.value.clone(), s.args.join(" ")))
                .collect()),
            Err(e) => Err(e
                .errors
                .iter()
                .map(|d| {
                    let at = &text[d.span.offset()..d.span.offset() + d.span.len()];
                    (d.message.clone(), at.to_owned())
                })
                .collect()),
        }
    }

    #[test]
    fn sweeps_expand_into_their_points() {
        let table: &[(&str, &[(&str, &str)])] = &[
            // One flag: today's names and args, exactly.
            (
                r#"vary "--max-num-seqs" 8 64"#,
                &[
                    ("s-8", "-tp 1 --max-num-seqs 8"),
                    ("s-64", "-tp 1 --max-num-seqs 64"),
                ],
            ),
            // Two flags: their product, the first slowest.
            (
                r#"vary "--max-num-batched-tokens" 4096 8192
                   vary "--max-num-seqs" 128 256"#,
                &[
                    (
                        "s@max-num-batched-tokens=4096,max-num-seqs=128",
                        "-tp 1 --max-num-batched-tokens 4096 --max-num-seqs 128",
                    ),
                    (
                        "s@max-num-batched-tokens=4096,max-num-seqs=256",
                        "-tp 1 --max-num-batched-tokens 4096 --max-num-seqs 256",
                    ),
                    (
                        "s@max-num-batched-tokens=8192,max-num-seqs=128",
                        "-tp 1 --max-num-batched-tokens 8192 --max-num-seqs 128",
                    ),
                    (
                        "s@max-num-batched-tokens=8192,max-num-seqs=256",
                        "-tp 1 --max-num-batched-tokens 8192 --max-num-seqs 256",
                    ),
                ],
            ),
            // A link zips; with another axis, the product of the two.
            (
                r#"link {
                       vary "--max-num-seqs" 128 256
                       vary "--max-num-batched-tokens" 4096 8192
                   }
                   vary "--kv-cache-dtype" auto fp8"#,
                &[
                    (
                        "s@max-num-seqs=128,max-num-batched-tokens=4096,kv-cache-dtype=auto",
                        "-tp 1 --max-num-seqs 128 --max-num-batched-tokens 4096 --kv-cache-dtype auto",
                    ),
                    (
                        "s@max-num-seqs=128,max-num-batched-tokens=4096,kv-cache-dtype=fp8",
                        "-tp 1 --max-num-seqs 128 --max-num-batched-tokens 4096 --kv-cache-dtype fp8",
                    ),
                    (
                        "s@max-num-seqs=256,max-num-batched-tokens=8192,kv-cache-dtype=auto",
                        "-tp 1 --max-num-seqs 256 --max-num-batched-tokens 8192 --kv-cache-dtype auto",
                    ),
                    (
                        "s@max-num-seqs=256,max-num-batched-tokens=8192,kv-cache-dtype=fp8",
                        "-tp 1 --max-num-seqs 256 --max-num-batched-tokens 8192 --kv-cache-dtype fp8",
                    ),
                ],
            ),
        ];
        for (body, expected) in table {
            let expected: Vec<(String, String)> = expected
                .iter()
                .map(|(n, a)| (n.to_string(), a.to_string()))
                .collect();
            assert_eq!(expand(body), Ok(expected), "{body}");
        }
    }

    #[test]
    fn a_broken_matrix_is_an_error_at_its_place() {
        let many: String = (0..17).map(|i| format!(" {i}")).collect();
        let too_many = format!("vary \"--a\"{many}\nvary \"--b\"{many}");
        let table: &[(&str, &str, &str)] = &[
            (
                r#"vary "--a""#,
                "`vary` needs the values to sweep over",
                r#"vary "--a""#,
            ),
            ("", "`sweep` has no `vary`", "sweep"),
            (r#"vary "--a" 1 2 1"#, "`1` is listed twice", "1"),
            (
                r#"vary "--max-num-seqs" 1 2; vary "--max_num_seqs" 3"#,
                "`--max_num_seqs` is varied twice in this sweep",
                r#""--max_num_seqs""#,
            ),
            (
                r#"vary "--tensor-parallel-size" 1 2; link { vary "-tp" 3 4; vary "--b" 5 6; }"#,
                "`-tp` is varied twice in this sweep",
                r#""-tp""#,
            ),
            (
                r#"link { vary "--a" 1 2; vary "--b" 3 4 5; }"#,
                "`--b` lists 3 values where `--a`, linked to it, lists 2",
                r#"vary "--b" 3 4 5"#,
            ),
            (
                r#"link { vary "--a" 1 2; }"#,
                "a `link` joins two `vary` or more",
                "link",
            ),
            (
                r#"link { args "--a"; vary "--a" 1; vary "--b" 2; }"#,
                "unknown node `args` in `link`",
                "args",
            ),
            (
                r#"vary "--a" 1 2; expect w at=3 { completed 1; }"#,
                "the sweep has no point `3`",
                "w",
            ),
            (
                r#"vary "--a" 1 2; vary "--b" 3; expect w at=1 { completed 1; }"#,
                "the sweep has no point `1`",
                "w",
            ),
            (
                r#"vary "--max-num-seqs" 8 x load=concurrency"#,
                "`x` is no concurrency",
                "x",
            ),
            (
                r#"vary "--max-num-seqs" 8 load=rate"#,
                "a flag cannot follow `rate`",
                "load=rate",
            ),
            (
                r#"vary "--a" 1 load=concurrency; vary "--b" 2 load=concurrency"#,
                "another `vary` of this sweep already follows the load",
                "load=concurrency",
            ),
            (
                r#"vary "--max-num-seqs" 8 load=concurrency"#,
                "`s-8` runs no workload at concurrency 8",
                "s",
            ),
            (
                &too_many,
                "the sweep has 289 points (17 × 17), more than the 256 one sweep may have",
                "s",
            ),
        ];
        for (body, message, at) in table {
            let errors = expand(body).expect_err(body);
            assert!(
                errors.contains(&(message.to_string(), at.to_string())),
                "{body}: {errors:?}"
            );
        }
    }

    #[test]
    fn a_matrix_expectation_names_its_point() {
        let text = r#"vary "--a" 1 2; vary "--b" 3 4
            expect w at="a=2,b=3" { completed 1; }"#;
        let names = expand(text).unwrap();
        assert_eq!(names.len(), 4);
    }

    #[test]
    fn a_flag_following_the_load_runs_each_point_at_its_own_concurrency() {
        let text = r#"experiment "e" {
            hardware "nvidia-a100-sxm4-80gb" gpus=1
            model "o/m"
            engine vllm version="0.11.0"
            workload chat { dataset random input=8 output=8; prompts 1; concurrency 8 16 64; }
            workload one { dataset random input=8 output=8; prompts 1; concurrency 64; }
            sweep s engine=vllm gpus=1 {
                link {
                    vary "--max-num-seqs" 8 64 load=concurrency
                    vary "--max-num-batched-tokens" 1024 8192
                }
                vary "--kv-cache-dtype" auto fp8
            }
        }"#;
        let spec = crate::spec::parse(&crate::spec::SourceFile {
            name: "e.kdl".into(),
            text: text.into(),
        })
        .unwrap_or_else(|e| panic!("{:?}", e.errors));
        let runs: Vec<(&str, Vec<&str>)> = spec
            .steps
            .iter()
            .map(|s| {
                (
                    s.name.value.as_str(),
                    s.workloads.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        let small = vec!["chat@c=8"];
        let large = vec!["chat@c=64", "one"];
        assert_eq!(
            runs,
            [
                (
                    "s@max-num-seqs=8,max-num-batched-tokens=1024,kv-cache-dtype=auto",
                    small.clone()
                ),
                (
                    "s@max-num-seqs=8,max-num-batched-tokens=1024,kv-cache-dtype=fp8",
                    small
                ),
                (
                    "s@max-num-seqs=64,max-num-batched-tokens=8192,kv-cache-dtype=auto",
                    large.clone()
                ),
                (
                    "s@max-num-seqs=64,max-num-batched-tokens=8192,kv-cache-dtype=fp8",
                    large
                ),
            ]
        );
    }
}
