//! What the simulated engine reads from its argv: the engine, the model, and
//! the batching and parallelism flags each real engine has.
//!
//! | engine | batch limit (default) | token budget per step (default) | tensor parallel | other |
//! |---|---|---|---|---|
//! | vLLM   | `--max-num-seqs` (256; 1024 on H100/H200) | `--max-num-batched-tokens` (2048; 8192 on H100/H200) | `--tensor-parallel-size`/`-tp` | `--enable-expert-parallel`, `--max-model-len` |
//! | SGLang | `--max-running-requests` (1024) | `--chunked-prefill-size` (8192) | `--tp-size`/`--tp` | `--context-length` |
//! | TensorRT-LLM | `--max_batch_size` (2048) | `--max_num_tokens` (8192) | `--tp_size` | `--ep_size`, `--max_seq_len` |
//!
//! Defaults follow the engines' documented defaults for an OpenAI server on
//! the given GPU (vLLM picks smaller ones on A100s).

use crate::facts::EngineKind;
use crate::facts::flags::parse_flags;

/// The simulated engine's configuration, parsed from the real engine's argv.
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    pub engine: EngineKind,
    pub model: String,
    pub host: String,
    pub port: u16,
    pub max_seqs: u32,
    pub token_budget: u32,
    pub tensor_parallel: u32,
    pub expert_parallel: bool,
    pub max_model_len: Option<u32>,
}

/// Parses `vllm serve MODEL ...`, `python3 -m sglang.launch_server ...` or `trtllm-serve MODEL ...`.
pub fn parse_argv(argv: &[String], gpu_sm: u32) -> Result<SimConfig, String> {
    let words: Vec<&str> = argv.iter().map(String::as_str).collect();
    let (engine, rest) = match words.as_slice() {
        ["vllm", "serve", ..] => (EngineKind::Vllm, &argv[2..]),
        ["python3" | "python", "-m", "sglang.launch_server", ..] => {
            (EngineKind::Sglang, &argv[3..])
        }
        ["trtllm-serve", ..] => (EngineKind::Trtllm, &argv[1..]),
        _ => {
            return Err(format!(
                "not an engine command the simulator knows: `{}`",
                argv.join(" ")
            ));
        }
    };
    let (positionals, flags) = parse_flags(engine, rest);
    let value = |name: &str| {
        flags
            .iter()
            .rev()
            .find(|f| f.name == name)
            .and_then(|f| f.values.first().cloned())
    };
    let has = |name: &str| flags.iter().any(|f| f.name == name);
    let number = |name: &str| -> Result<Option<u32>, String> {
        value(name)
            .map(|v| {
                v.parse::<u32>()
                    .map_err(|_| format!("argument {name}: invalid int value: '{v}'"))
            })
            .transpose()
    };
    let model = match engine {
        EngineKind::Sglang => value("--model-path"),
        _ => positionals.first().cloned(),
    }
    .ok_or("no model given")?;
    let big_gpu = gpu_sm >= 90;
    let (seqs_flag, budget_flag, tp_flag, len_flag, seqs_default, budget_default) = match engine {
        EngineKind::Vllm => (
            "--max-num-seqs",
            "--max-num-batched-tokens",
            "--tensor-parallel-size",
            "--max-model-len",
            if big_gpu { 1024 } else { 256 },
            if big_gpu { 8192 } else { 2048 },
        ),
        EngineKind::Sglang => (
            "--max-running-requests",
            "--chunked-prefill-size",
            "--tp-size",
            "--context-length",
            1024,
            8192,
        ),
        EngineKind::Trtllm => (
            "--max_batch_size",
            "--max_num_tokens",
            "--tp_size",
            "--max_seq_len",
            2048,
            8192,
        ),
        // Not named by an argv above: vLLM-Ascend serves as `vllm serve`,
        // and MindIE is not simulated.
        EngineKind::VllmAscend | EngineKind::Mindie => {
            return Err(format!(
                "the simulator does not model {}",
                engine.display_name()
            ));
        }
    };
    Ok(SimConfig {
        engine,
        model,
        host: value("--host").unwrap_or_else(|| "127.0.0.1".into()),
        port: number("--port")?.unwrap_or(8000) as u16,
        max_seqs: number(seqs_flag)?.unwrap_or(seqs_default),
        token_budget: number(budget_flag)?.unwrap_or(budget_default),
        tensor_parallel: number(tp_flag)?.unwrap_or(1).max(1),
        expert_parallel: has("--enable-expert-parallel") || number("--ep_size")?.unwrap_or(1) > 1,
        max_model_len: number(len_flag)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn reads_each_engines_own_flags() {
        let v = parse_argv(
            &argv("vllm serve M --port 9 -tp 4 --max-num-batched-tokens=4096"),
            80,
        )
        .unwrap();
        assert_eq!(
            (v.engine, v.model.as_str(), v.port),
            (EngineKind::Vllm, "M", 9)
        );
        assert_eq!(
            (v.tensor_parallel, v.token_budget, v.max_seqs),
            (4, 4096, 256)
        );

        let s = parse_argv(
            &argv(
                "python3 -m sglang.launch_server --model-path M --tp 8 --max-running-requests 64",
            ),
            80,
        )
        .unwrap();
        assert_eq!(
            (s.model.as_str(), s.tensor_parallel, s.max_seqs),
            ("M", 8, 64)
        );

        let t = parse_argv(
            &argv("trtllm-serve M --max_num_tokens 16384 --max_batch_size=512"),
            80,
        )
        .unwrap();
        assert_eq!((t.token_budget, t.max_seqs), (16384, 512));
    }

    #[test]
    fn vllm_defaults_depend_on_the_gpu() {
        let h100 = parse_argv(&argv("vllm serve M"), 90).unwrap();
        assert_eq!((h100.max_seqs, h100.token_budget), (1024, 8192));
    }

    #[test]
    fn a_bad_number_fails_like_argparse() {
        let err = parse_argv(&argv("vllm serve M --max-num-seqs lots"), 80).unwrap_err();
        assert_eq!(err, "argument --max-num-seqs: invalid int value: 'lots'");
    }
}
