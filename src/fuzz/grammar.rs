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
];

/// An edge value or, as often, a small positive integer.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        select(EDGE_VALUES).prop_map(str::to_owned),
        (1u32..10).prop_map(|n| n.to_string()),
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

fn shaped() -> impl Strategy<Value = String> {
    let workload = (name(), number(), number(), number(), number(), number(), number())
        .prop_map(|(n, input, output, seed, prompts, rate, conc)| {
            format!(
                "workload {n} {{\n dataset random input={input} output={output} seed={seed}\n prompts {prompts}\n rate {rate}\n concurrency {conc}\n }}"
            )
        });
    let step = (name(), name(), number(), number(), vec(number(), 0..4)).prop_map(
        |(n, engine, gpus, replicas, args)| {
            format!(
                "step {n} engine={engine} gpus={gpus} replicas={replicas} {{ args {} }}",
                args.join(" ")
            )
        },
    );
    let sweep = (name(), number(), vec(number(), 0..4)).prop_map(|(n, gpus, values)| {
        format!(
            "sweep {n} engine=vllm gpus={gpus} {{ vary \"--x\" {}\n expect a at={} {{ mean_tpot_ms {} }} }}",
            values.join(" "),
            values.first().map_or("1", String::as_str),
            values.last().map_or("1", String::as_str),
        )
    });
    (
        number(),
        vec(name(), 1..3),
        vec(workload, 1..3),
        vec(step, 1..4),
        vec(sweep, 0..2),
        (name(), name(), number(), number()),
    )
        .prop_map(|(gpus, engines, workloads, steps, sweeps, (base, cand, decimals, tolerance))| {
            let engines: Vec<String> = engines
                .iter()
                .map(|e| format!("engine {e} version=\"1\" startup-timeout={gpus}"))
                .collect();
            format!(
                "experiment \"g\" {{\n hardware \"nvidia-a100-sxm4-80gb\" gpus={gpus}\n model \"m\"\n {}\n {}\n {}\n {}\n compare \"c\" baseline={base} {{ candidate {cand} }}\n conclusion baseline={base} optimized={cand}\n report delta-decimals={decimals} tolerance={tolerance} {{ summary \"c\" threshold={tolerance} }}\n}}\n",
                engines.join("\n "),
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
