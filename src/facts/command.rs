//! How each engine is started: its argv, with perfpipe's own arguments
//! (model, host, port) before the step's. (pure)

use crate::facts::EngineKind;

/// The engine's serve command, as a user would type it on the GPU box.
pub fn serve_argv(
    engine: EngineKind,
    model: &str,
    host: &str,
    port: u16,
    args: &[String],
) -> Vec<String> {
    let port = port.to_string();
    let mut argv: Vec<String> = match engine {
        EngineKind::Vllm | EngineKind::VllmAscend => {
            vec!["vllm", "serve", model, "--host", host, "--port", &port]
        }
        // perfpipe cannot start MindIE (`facts::startable`); this is the
        // vLLM-like form GPUStack's pages print, mapped to MindIE's JSON.
        EngineKind::Mindie => vec!["mindie", "serve", model, "--host", host, "--port", &port],
        EngineKind::Sglang => vec![
            "python3",
            "-m",
            "sglang.launch_server",
            "--model-path",
            model,
            "--host",
            host,
            "--port",
            &port,
        ],
        EngineKind::Trtllm => vec!["trtllm-serve", model, "--host", host, "--port", &port],
    }
    .into_iter()
    .map(str::to_owned)
    .collect();
    argv.extend(args.iter().cloned());
    argv
}

/// The arguments that make the engine load a pinned model commit (the
/// lockfile's). `trtllm-serve` takes no revision: it loads what the Hugging
/// Face cache holds for the model.
pub fn revision_args(engine: EngineKind, revision: &str) -> Vec<String> {
    match engine {
        EngineKind::Vllm | EngineKind::VllmAscend | EngineKind::Sglang
            if super::is_commit(revision) =>
        {
            vec!["--revision".into(), revision.into()]
        }
        _ => Vec::new(),
    }
}

/// The command a reader of a report would type: without host and port.
pub fn display_command(engine: EngineKind, model: &str, args: &[String]) -> String {
    let mut words: Vec<String> = match engine {
        EngineKind::Vllm | EngineKind::VllmAscend => {
            vec!["vllm".into(), "serve".into(), model.into()]
        }
        EngineKind::Mindie => vec!["mindie".into(), "serve".into(), model.into()],
        EngineKind::Sglang => vec![
            "python3".into(),
            "-m".into(),
            "sglang.launch_server".into(),
            "--model-path".into(),
            model.into(),
        ],
        EngineKind::Trtllm => vec!["trtllm-serve".into(), model.into()],
    };
    words.extend(args.iter().cloned());
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_engine_gets_its_own_host_and_port_flags() {
        let args = vec!["--tp-size".to_string(), "8".to_string()];
        assert_eq!(
            serve_argv(
                EngineKind::Sglang,
                "Qwen/Qwen3-14B",
                "127.0.0.1",
                8001,
                &args
            )
            .join(" "),
            "python3 -m sglang.launch_server --model-path Qwen/Qwen3-14B --host 127.0.0.1 --port 8001 --tp-size 8"
        );
        assert_eq!(
            display_command(
                EngineKind::Trtllm,
                "Qwen/Qwen3-14B",
                &["--max_seq_len=40960".into()]
            ),
            "trtllm-serve Qwen/Qwen3-14B --max_seq_len=40960"
        );
    }
}
