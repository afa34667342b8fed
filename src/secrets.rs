//! Secrets given in the environment (`HF_TOKEN`, registry passwords, API
//! keys) never reach the store, a lockfile or a report: engines and clients
//! may print their environment, so every log perfpipe keeps is scrubbed of
//! their values.

use std::borrow::Cow;
use std::path::Path;

/// Values shorter than this are not treated as secrets (`1`, `true`).
const MIN_LEN: usize = 8;

/// Whether an environment variable's name says its value is a secret.
pub fn is_secret_name(name: &str) -> bool {
    let name = name.to_ascii_uppercase();
    [
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "API_KEY",
        "ACCESS_KEY",
    ]
    .iter()
    .any(|word| name.contains(word))
}

/// The secrets of this process's environment, by name, longest first (so a
/// secret containing another is replaced whole).
pub fn from_env() -> Vec<(String, String)> {
    let mut secrets: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, v)| is_secret_name(k) && v.len() >= MIN_LEN)
        .collect();
    secrets.sort_by_key(|(_, v)| std::cmp::Reverse(v.len()));
    secrets
}

/// `text` with every secret's value replaced by `[redacted NAME]`.
pub fn redact<'a>(text: &'a str, secrets: &[(String, String)]) -> Cow<'a, str> {
    let mut out = Cow::Borrowed(text);
    for (name, value) in secrets {
        if out.contains(value.as_str()) {
            out = Cow::Owned(out.replace(value.as_str(), &format!("[redacted {name}]")));
        }
    }
    out
}

/// Scrubs every file directly under `dir` (a sample's logs) in place.
pub fn redact_dir(dir: &Path) -> std::io::Result<()> {
    let secrets = from_env();
    if secrets.is_empty() {
        return Ok(());
    }
    for entry in fs_err::read_dir(dir)?.filter_map(|e| e.ok()) {
        let path = entry.path();
        let Ok(text) = fs_err::read_to_string(&path) else {
            continue;
        };
        if let Cow::Owned(clean) = redact(&text, &secrets) {
            replace(&path, &clean)?;
        }
    }
    Ok(())
}

#[expect(
    clippy::disallowed_methods,
    reason = "rewrites a log of a pending sample before it is committed"
)]
fn replace(path: &Path, text: &str) -> std::io::Result<()> {
    std::fs::write(path, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_of_secret_names_are_replaced_and_nothing_else() {
        assert!(is_secret_name("HF_TOKEN"));
        assert!(is_secret_name("PERFPIPE_REGISTRY_PASSWORD"));
        assert!(is_secret_name("OPENAI_API_KEY"));
        assert!(!is_secret_name("HF_HOME"));
        let secrets = vec![("HF_TOKEN".to_owned(), "hf_abcdefgh1234".to_owned())];
        assert_eq!(
            redact("HF_TOKEN=hf_abcdefgh1234 HOME=/root", &secrets),
            "HF_TOKEN=[redacted HF_TOKEN] HOME=/root"
        );
        assert!(matches!(redact("nothing here", &secrets), Cow::Borrowed(_)));
    }
}
