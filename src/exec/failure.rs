//! Why an engine failed, read from its exit and its log: deterministic failures
//! (the same inputs fail again: unsupported kernel or SM version, out of
//! memory at load, a flag the engine does not know) are cached as results;
//! transient ones (a port taken, the network, a download) are retried.  (pure)

use crate::store::FailureKind;

/// Log signatures of failures that another attempt may not meet.
const TRANSIENT: &[&str] = &[
    "Address already in use",
    "Errno 98",
    "Temporary failure in name resolution",
    "Connection reset by peer",
    "Connection refused",
    "Max retries exceeded",
    "ReadTimeout",
    "LocalEntryNotFoundError",
    "HTTP Error 5",
    "503 Service Unavailable",
    // A container of this name is still there: a leftover of a killed
    // perfpipe, stopped before the next attempt, never the configuration's.
    "is already in use by container",
];

/// Log signatures of failures that will happen again with the same inputs.
const DETERMINISTIC: &[&str] = &[
    "Unsupported SM version",
    "is not supported",
    "OutOfMemoryError",
    "CUDA out of memory",
    "unrecognized arguments",
    "error: argument",
    "No such option",
    "KeyError",
    "ValueError",
    "NotImplementedError",
    "illegal memory access",
];

/// The kind of a failure, and the line of the log that says what it was.
pub fn classify(log: &str) -> (FailureKind, Option<String>) {
    let lines: Vec<&str> = log
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let find = |signatures: &[&str]| {
        lines
            .iter()
            .rev()
            .find(|l| signatures.iter().any(|s| l.contains(s)))
            .map(|l| (*l).to_owned())
    };
    if let Some(line) = find(TRANSIENT) {
        return (FailureKind::Transient, Some(line));
    }
    if let Some(line) = find(DETERMINISTIC) {
        return (FailureKind::Deterministic, Some(line));
    }
    // Unknown: kept as a result, so it is seen; `--retry-failed` runs it again.
    let last_error = lines
        .iter()
        .rev()
        .find(|l| l.contains("Error") && !l.starts_with("ERROR"))
        .or(lines.last())
        .map(|l| (*l).to_owned());
    (FailureKind::Deterministic, last_error)
}

/// Whether a failure's line says the GPU ran out of memory.
pub fn is_out_of_memory(line: &str) -> bool {
    line.contains("OutOfMemoryError") || line.to_ascii_lowercase().contains("out of memory")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_decide_the_kind_and_name_the_line() {
        let fp8 = "INFO loading\nERROR engine failed to start\nRuntimeError: Unsupported SM version for FP8 block scaling GEMM\n";
        assert_eq!(
            classify(fp8),
            (
                FailureKind::Deterministic,
                Some("RuntimeError: Unsupported SM version for FP8 block scaling GEMM".into())
            )
        );
        let port = "ERROR: [Errno 98] error while attempting to bind on address ('127.0.0.1', 8000): address already in use";
        assert_eq!(classify(port).0, FailureKind::Transient);
        let args = "vllm serve: error: unrecognized arguments: --max-num-seq 8";
        assert_eq!(
            classify(args),
            (FailureKind::Deterministic, Some(args.into()))
        );
        let oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB";
        assert_eq!(classify(oom).0, FailureKind::Deterministic);
        assert!(is_out_of_memory(oom));
        assert!(!is_out_of_memory(fp8));
        let download = "requests.exceptions.ConnectionError: Max retries exceeded with url: /Qwen/Qwen3-14B/resolve/main/config.json";
        assert_eq!(classify(download).0, FailureKind::Transient);
        let conflict = r#"docker: Error response from daemon: Conflict. The container name "/perfpipe-1234" is already in use by container "8f3e". You have to remove (or rename) that container to be able to reuse that name."#;
        assert_eq!(classify(conflict).0, FailureKind::Transient);
        assert_eq!(
            classify("Segmentation fault").1.as_deref(),
            Some("Segmentation fault")
        );
    }
}
