//! Experiments built from a small grammar: the declared shape, with each
//! value drawn from edge cases (huge, negative, non-finite, wrong type,
//! unicode) or from ordinary ones, so that many parse and reach the checks
//! and stages behind the parser; and free-form trees of the declared names.

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;

const EDGE_VALUES: &[&str] = &[
    "0",
    "-0",
    "-1",
    "1.5",
    "1e400",
    "-1e400",
    "#inf",
    "#-inf",
    "#nan",
    "#true",
    "#null",
    "\"8\"",
    "\"\"",
    "\"日本🦀\"",
    "65536",
    "2147483648",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "99999999999999999999",
    "-9223372036854775809",
    "0x7fffffff",
    "1_000",
    "0.0",
    "1e-300",
    "-1e-300",
    "1e300",
    "-1e300",
    "4.9e-324",
    "1.7976931348623157e308",
    "170141183460469231731687303715884105727",
    "-170141183460469231731687303715884105728",
    "9223372036854775807",
    "-2147483649",
];

/// Text that reaches other programs, at the edges of its grammar.
const EDGE_TEXTS: &[&str] = &[
    "\"\"",
    "\"--privileged\"",
    "\"-v\"",
    "\"A=B\"",
    "\"../../../etc/passwd\"",
    "\"/models/m\"",
    "\"o/m\"",
    "\"vllm/vllm-openai:v0.11.0\"",
    "\"x@sha256:ab\"",
    "\"a b\"",
    "\"\\u{202e}\"",
    "\"\\u{0}\"",
    "\"日本🦀\"",
];

/// An edge value or, more often, a small positive integer (so that many
/// experiments of many numbers parse and reach the stages behind the parser).
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        1 => select(EDGE_VALUES).prop_map(str::to_owned),
        2 => (1u32..10).prop_map(|n| n.to_string()),
    ]
}

/// Nothing, mostly; sometimes a run of blanks that puts what follows past
/// column 65,535 (where miette's padding once panicked).
fn indent() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => Just(" ".to_owned()),
        1 => (65_530usize..70_000, select(&[" ", "\t"][..])).prop_map(|(n, c)| c.repeat(n)),
    ]
}

/// A name, sometimes one that is declared elsewhere in the file.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        select(&["a", "b", "vllm", "sglang", "trtllm", "x-y", "ステップ", "é"][..])
            .prop_map(str::to_owned),
        select(EDGE_VALUES).prop_map(str::to_owned),
    ]
}

/// One experiment in the declared shape, values drawn from [`number`] and [`name`].
pub fn experiment() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => shaped(),
        1 => vec(node(3), 0..12).prop_map(|nodes| format!(
            "experiment \"g\" {{\n{}\n}}\n",
            nodes.join("\n")
        )),
    ]
}

/// `ordinary` mostly, now and then an edge value: with some thirty values
/// to an experiment, a good share of experiments parse whole and reach
/// planning, each with an edge value or two where it does not.
fn or_edge(ordinary: impl Strategy<Value = String>) -> impl Strategy<Value = String> {
    prop_oneof![
        40 => ordinary,
        1 => select(EDGE_VALUES).prop_map(str::to_owned),
        1 => select(EDGE_TEXTS).prop_map(str::to_owned),
    ]
}

fn int(range: std::ops::Range<u32>) -> impl Strategy<Value = String> {
    or_edge(range.prop_map(|n| n.to_string()))
}

fn quoted(ordinary: &'static str) -> impl Strategy<Value = String> {
    or_edge(Just(ordinary.to_owned()))
}

/// An experiment in the declared shape whose names agree (steps `s0`...,
/// workloads `w0`..., one vLLM engine), its values drawn by [`or_edge`].
fn shaped() -> impl Strategy<Value = String> {
    let workload = (
        (
            int(1..5000),
            int(1..500),
            int(0..100),
            or_edge(select(&["0", "0.5", "0.99"][..]).prop_map(str::to_owned)),
        ),
        int(1..2000),
        or_edge(select(&["1", "2.5", "#inf", "100"][..]).prop_map(str::to_owned)),
        int(1..512),
        indent(),
    );
    let step = (
        (int(1..8), int(1..4)),
        vec(
            or_edge(
                select(&["\"--max-num-seqs\"", "\"64\"", "\"-tp\"", "\"2\""][..])
                    .prop_map(str::to_owned),
            ),
            0..4,
        ),
        (quoted("\"o/m\""), quoted("\"VLLM_X\""), quoted("\"1\"")),
        indent(),
    );
    let sweep = (int(1..8), vec(int(1..1024), 1..4));
    (
        (int(32..128), quoted("\"o/m\"")),
        (quoted("\"0.11.0\""), quoted("\"vllm/vllm-openai:v0.11.0\""), int(1..3600)),
        vec(workload, 1..3),
        vec(step, 1..4),
        vec(sweep, 0..2),
        (int(1..4), or_edge(select(&["5", "0.5", "50"][..]).prop_map(str::to_owned))),
    )
        .prop_map(|((gpus, model), (version, image, timeout), workloads, steps, sweeps, (decimals, tolerance))| {
            let workloads: Vec<String> = workloads
                .into_iter()
                .enumerate()
                .map(|(i, ((input, output, seed, ratio), prompts, rate, conc, pad))| format!(
                    "workload w{i} {{\n dataset random input={input} output={output} seed={seed} range-ratio={ratio}\n{pad}prompts {prompts}\n rate {rate}\n concurrency {conc}\n }}"
                ))
                .collect();
            let last = steps.len() - 1;
            let steps: Vec<String> = steps
                .into_iter()
                .enumerate()
                .map(|(i, ((gpus, replicas), args, (model, env_name, env_value), pad))| format!(
                    "step s{i} engine=vllm gpus={gpus} replicas={replicas} model={model} {{\n{pad}args {}\n env {env_name}={env_value}\n }}",
                    args.join(" ")
                ))
                .collect();
            let sweeps: Vec<String> = sweeps
                .into_iter()
                .enumerate()
                .map(|(i, (gpus, values))| format!(
                    "sweep sw{i} engine=vllm gpus={gpus} {{ vary \"--x\" {}\n expect w0 at={} {{ mean_tpot_ms {} }} }}",
                    values.join(" "),
                    values[0],
                    values[values.len() - 1],
                ))
                .collect();
            format!(
                "experiment \"g\" {{\n hardware \"nvidia-a100-sxm4-80gb\" gpus={gpus}\n model {model}\n engine vllm version={version} image={image} startup-timeout={timeout}\n {}\n {}\n {}\n compare \"c\" baseline=s0 {{ candidate s{last} }}\n conclusion baseline=s0 optimized=s{last}\n report delta-decimals={decimals} tolerance={tolerance} {{ summary \"c\" threshold={tolerance} }}\n}}\n",
                workloads.join("\n "),
                steps.join("\n "),
                sweeps.join("\n "),
            )
        })
}

/// A free-form node of the declared names, `depth` levels deep at most.
fn node(depth: u32) -> BoxedStrategy<String> {
    let names = select(
        &[
            "hardware", "model", "engine", "workload", "step", "sweep", "dataset", "prompts",
            "rate", "args", "expect", "vary", "report", "summary", "title", "x",
        ][..],
    );
    let entry = prop_oneof![
        number(),
        name(),
        (
            select(&["gpus", "engine", "input", "output", "seed", "at", "version"][..]),
            number()
        )
            .prop_map(|(k, v)| format!("{k}={v}")),
    ];
    let leaf = (names.clone(), vec(entry.clone(), 0..4))
        .prop_map(|(n, entries)| format!("{n} {}", entries.join(" ")));
    if depth == 0 {
        return leaf.boxed();
    }
    prop_oneof![
        leaf,
        (names, vec(entry, 0..3), vec(node(depth - 1), 0..4)).prop_map(|(n, entries, children)| {
            format!("{n} {} {{\n{}\n}}", entries.join(" "), children.join("\n"))
        }),
    ]
    .boxed()
}
