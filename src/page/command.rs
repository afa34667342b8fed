//! A page's serving command → the engine, the model and the serve arguments.

/// What a serving command starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Serving {
    /// The engine as the experiment language names it (`vllm`, `sglang`, `trtllm`, `mindie`).
    pub engine: &'static str,
    pub model: String,
    pub args: Vec<String>,
    /// `NAME=value` words before the command (`VLLM_ATTENTION_BACKEND=FLASHINFER vllm serve …`).
    pub env: Vec<(String, String)>,
}

/// Reads `vllm serve M …`, `python3 -m sglang.launch_server --model-path M …`,
/// `trtllm-serve M …` and `mindie serve M …`; `None` for anything else.
pub fn serving(command: &str) -> Option<Serving> {
    // Words as the page writes them: `--speculative-config={"method":"mtp"}`
    // keeps its quotes (the JSON the authors meant), which bash would strip.
    let mut words: Vec<&str> = command.split_whitespace().collect();
    let mut env = Vec::new();
    while let Some((name, value)) = words.first().and_then(|w| w.split_once('=')) {
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            break;
        }
        env.push((name.to_owned(), value.to_owned()));
        words.remove(0);
    }
    let (engine, rest) = match words.as_slice() {
        ["vllm", "serve", rest @ ..] => ("vllm", rest),
        ["trtllm-serve", rest @ ..] => ("trtllm", rest),
        ["mindie", "serve", rest @ ..] => ("mindie", rest),
        [python, "-m", "sglang.launch_server", rest @ ..] if python.starts_with("python") => {
            ("sglang", rest)
        }
        _ => return None,
    };
    let mut args: Vec<String> = Vec::new();
    let mut model = None;
    let mut i = 0;
    while i < rest.len() {
        let w = rest[i];
        if engine == "sglang" && model.is_none() && (w == "--model-path" || w == "--model") {
            model = rest.get(i + 1).map(|m| (*m).to_owned());
            i += 2;
            continue;
        }
        if let Some(m) = w
            .strip_prefix("--model-path=")
            .or_else(|| w.strip_prefix("--model="))
            .filter(|_| engine == "sglang" && model.is_none())
        {
            model = Some(m.to_owned());
            i += 1;
            continue;
        }
        if engine != "sglang" && model.is_none() && i == 0 && !w.starts_with('-') {
            model = Some(w.to_owned());
            i += 1;
            continue;
        }
        args.push(w.to_owned());
        i += 1;
    }
    Some(Serving {
        engine,
        model: model?,
        args,
        env,
    })
}

/// The engine a label or a heading names ("vLLM", "SGLang", "TensorRT-LLM", "MindIE").
pub fn engine_named(text: &str) -> Option<&'static str> {
    let lower = text.to_lowercase();
    if lower.contains("tensorrt") || lower.contains("trt") {
        Some("trtllm")
    } else if lower.contains("sglang") {
        Some("sglang")
    } else if lower.contains("mindie") {
        Some("mindie")
    } else if lower.contains("vllm-ascend") {
        Some("vllm-ascend")
    } else if lower.contains("vllm") {
        Some("vllm")
    } else {
        None
    }
}

/// `--flag=value` and `--flag value` pairs of `args`, in order (a flag
/// without a value has none).
pub fn flags(args: &[String]) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if let Some((f, v)) = a.split_once('=').filter(|_| a.starts_with("--")) {
            out.push((f.to_owned(), Some(v.to_owned())));
        } else if a.starts_with('-') {
            match args.get(i + 1).filter(|n| !n.starts_with('-')) {
                Some(v) => {
                    out.push((a.clone(), Some(v.clone())));
                    i += 1;
                }
                None => out.push((a.clone(), None)),
            }
        } else {
            out.push((a.clone(), None));
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_engines_command() {
        let s = serving("vllm serve Qwen/Qwen3-14B -tp 8 --enable-expert-parallel").unwrap();
        assert_eq!((s.engine, s.model.as_str()), ("vllm", "Qwen/Qwen3-14B"));
        assert_eq!(s.args, ["-tp", "8", "--enable-expert-parallel"]);
        let s = serving("python3 -m sglang.launch_server --model-path Qwen/X --tp-size 8").unwrap();
        assert_eq!((s.engine, s.model.as_str()), ("sglang", "Qwen/X"));
        assert_eq!(s.args, ["--tp-size", "8"]);
        let s = serving("trtllm-serve Qwen/X --max_num_tokens=16384").unwrap();
        assert_eq!(s.args, ["--max_num_tokens=16384"]);
        let s = serving(r#"vllm serve M --speculative-config={"method":"mtp"}"#).unwrap();
        assert_eq!(s.args, [r#"--speculative-config={"method":"mtp"}"#]);
        assert_eq!(serving("echo hi"), None);
        let s = serving("VLLM_ATTENTION_BACKEND=XFORMERS vllm serve M -tp 4").unwrap();
        assert_eq!(
            s.env,
            [("VLLM_ATTENTION_BACKEND".into(), "XFORMERS".into())]
        );
        assert_eq!(s.args, ["-tp", "4"]);
    }

    #[test]
    fn flags_pair_values_in_both_spellings() {
        let args: Vec<String> = ["--a=1", "--b", "2", "--c", "-tp", "4"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            flags(&args),
            vec![
                ("--a".into(), Some("1".into())),
                ("--b".into(), Some("2".into())),
                ("--c".into(), None),
                ("-tp".into(), Some("4".into()))
            ]
        );
    }
}
