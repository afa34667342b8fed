//! Serve arguments → their canonical form, so one configuration has one key.
//!
//! - `--flag=value` is split into `--flag value`;
//! - an engine's known aliases are folded into one spelling (table below);
//! - vLLM accepts `--max_num_seqs` for `--max-num-seqs`, so its underscores become dashes;
//! - flags are ordered by name (engines parse them order-free); a flag given twice
//!   keeps its two occurrences in their declared order, since the last one wins.
//!
//! A token that does not start with `-` (or is a negative number) is the value
//! of the flag before it; tokens before the first flag keep their place.

use crate::facts::EngineKind;

/// `(alias, canonical)` per engine, from each engine's argument parser.
const ALIASES: &[(EngineKind, &str, &str)] = &[
    (EngineKind::Vllm, "-tp", "--tensor-parallel-size"),
    (EngineKind::Vllm, "-pp", "--pipeline-parallel-size"),
    (EngineKind::Vllm, "-dp", "--data-parallel-size"),
    (EngineKind::Vllm, "-q", "--quantization"),
    (EngineKind::Sglang, "--tp", "--tp-size"),
    (EngineKind::Sglang, "--tensor-parallel-size", "--tp-size"),
    (EngineKind::Sglang, "--dp", "--dp-size"),
    (EngineKind::Sglang, "--data-parallel-size", "--dp-size"),
    (EngineKind::Sglang, "--ep", "--ep-size"),
    (EngineKind::Sglang, "--expert-parallel-size", "--ep-size"),
    (EngineKind::Trtllm, "--tp", "--tp_size"),
    (EngineKind::Trtllm, "--pp", "--pp_size"),
    (EngineKind::Trtllm, "--ep", "--ep_size"),
];

/// One flag and the values that follow it.
#[derive(Debug, Clone, PartialEq)]
pub struct Flag {
    pub name: String,
    pub values: Vec<String>,
}

/// Splits argv into leading positionals and flags, with aliases folded.
pub fn parse_flags(engine: EngineKind, args: &[String]) -> (Vec<String>, Vec<Flag>) {
    let mut positionals = Vec::new();
    let mut flags: Vec<Flag> = Vec::new();
    for arg in args {
        if is_flag(arg) {
            let (name, value) = match arg.split_once('=') {
                Some((n, v)) if n.starts_with("--") => (n, Some(v.to_owned())),
                _ => (arg.as_str(), None),
            };
            flags.push(Flag {
                name: canonical_name(engine, name),
                values: value.into_iter().collect(),
            });
        } else if let Some(last) = flags.last_mut() {
            last.values.push(arg.clone());
        } else {
            positionals.push(arg.clone());
        }
    }
    (positionals, flags)
}

/// The canonical argv: leading positionals, then flags sorted by name.
pub fn canonical_args(engine: EngineKind, args: &[String]) -> Vec<String> {
    let (mut out, mut flags) = parse_flags(engine, args);
    flags.sort_by(|a, b| a.name.cmp(&b.name));
    for flag in flags {
        out.push(flag.name);
        out.extend(flag.values);
    }
    out
}

fn is_flag(arg: &str) -> bool {
    arg.starts_with('-') && arg.len() > 1 && arg.parse::<f64>().is_err()
}

fn canonical_name(engine: EngineKind, name: &str) -> String {
    // vLLM-Ascend takes vLLM's flags.
    let engine = if engine.is_vllm() {
        EngineKind::Vllm
    } else {
        engine
    };
    if let Some((_, _, canonical)) = ALIASES
        .iter()
        .find(|(e, alias, _)| *e == engine && *alias == name)
    {
        return (*canonical).to_owned();
    }
    if engine == EngineKind::Vllm && name.starts_with("--") {
        return name.replace('_', "-");
    }
    name.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(engine: EngineKind, args: &[&str]) -> Vec<String> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        canonical_args(engine, &args)
    }

    #[test]
    fn equals_form_aliases_and_order_do_not_matter() {
        let a = canon(
            EngineKind::Vllm,
            &["-tp", "4", "--max-num-batched-tokens=4096"],
        );
        let b = canon(
            EngineKind::Vllm,
            &[
                "--max_num_batched_tokens",
                "4096",
                "--tensor-parallel-size",
                "4",
            ],
        );
        assert_eq!(a, b);
        assert_eq!(
            a,
            [
                "--max-num-batched-tokens",
                "4096",
                "--tensor-parallel-size",
                "4"
            ]
        );
    }

    #[test]
    fn boolean_flags_and_negative_values_survive() {
        assert_eq!(
            canon(
                EngineKind::Vllm,
                &["--enable-expert-parallel", "-tp", "8", "--seed", "-1"]
            ),
            [
                "--enable-expert-parallel",
                "--seed",
                "-1",
                "--tensor-parallel-size",
                "8"
            ]
        );
    }

    #[test]
    fn aliases_are_per_engine() {
        assert_eq!(
            canon(EngineKind::Sglang, &["--tp", "8"]),
            ["--tp-size", "8"]
        );
        assert_eq!(
            canon(EngineKind::Trtllm, &["--max_num_tokens=8192"]),
            ["--max_num_tokens", "8192"]
        );
    }

    #[test]
    fn a_repeated_flag_keeps_its_order() {
        assert_eq!(
            canon(EngineKind::Vllm, &["--x", "2", "--a", "--x", "1"]),
            ["--a", "--x", "2", "--x", "1"]
        );
    }
}
