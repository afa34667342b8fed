//! Secrets given in the environment (`HF_TOKEN`, registry passwords, API
//! keys) or named by the user's configuration (a cache's password or token,
//! see [`add_configured`]) never reach the store, a lockfile, a report or a
//! message: [`env()`] knows them all, and is the one place that redacts.
//!
//! Text that comes from outside perfpipe (engine logs, a server's error body,
//! an error in a stream, an external client's files) is redacted where it
//! enters, before anything serializes it: a value JSON escapes (a quote, a
//! backslash) would slip past a replace on the serialized bytes. Key material
//! and lockfiles are never rewritten (a key is the hash of its exact text): a
//! secret inside them is refused before anything runs.

use std::borrow::Cow;
use std::path::Path;
use std::sync::{Arc, OnceLock, RwLock};

/// Secrets shorter than this are refused: redacting `abc` would rewrite
/// ordinary text, and keeping it would leak it.
pub const MIN_LEN: usize = 4;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "`{name}` holds a secret of {len} characters; perfpipe redacts secrets of {MIN_LEN} or more and refuses shorter ones"
    )]
    TooShort { name: String, len: usize },
    #[error("{what} holds the value of `{name}`, a secret")]
    InKeyMaterial { what: String, name: String },
}

/// Whether an environment variable's name says its value is a secret:
/// `HF_TOKEN`, `*_TOKEN`, `TOKEN_*`, `*_API_KEY`, `*PASSWORD*`, `*SECRET*`.
/// Counts such as `MAX_TOKENS` and settings such as `TOKENIZERS_PARALLELISM`
/// are not.
pub fn is_secret_name(name: &str) -> bool {
    let name = name.to_ascii_uppercase();
    name.ends_with("_TOKEN")
        || name.starts_with("TOKEN_")
        || name.ends_with("_API_KEY")
        || name.contains("PASSWORD")
        || name.contains("SECRET")
}

/// One secret: its variable's name and the forms its value takes in text.
#[derive(Debug, Clone)]
struct Secret {
    name: String,
    value: String,
    /// As JSON writes it inside a string, when that differs (a quote, a
    /// backslash, a control character).
    json_escaped: Option<String>,
}

/// The secrets of an environment, longest first (so a secret containing
/// another is replaced whole).
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    secrets: Vec<Secret>,
}

impl Secrets {
    /// The secrets among `vars`; a secret-named variable with a non-empty
    /// value shorter than [`MIN_LEN`] is an error.
    pub fn from_vars(vars: impl IntoIterator<Item = (String, String)>) -> Result<Self, Error> {
        let mut secrets = Vec::new();
        for (name, value) in vars {
            if !is_secret_name(&name) || value.is_empty() {
                continue;
            }
            let len = value.chars().count();
            if len < MIN_LEN {
                return Err(Error::TooShort { name, len });
            }
            secrets.push(Secret::new(name, value));
        }
        let mut out = Self { secrets };
        out.sort();
        Ok(out)
    }

    /// Longest first, so a secret containing another is replaced whole.
    fn sort(&mut self) {
        self.secrets
            .sort_by_key(|s| std::cmp::Reverse(s.value.len()));
    }

    /// These secrets and `value`, called `name` in the marker that replaces
    /// it. Values shorter than [`MIN_LEN`] are not added: redacting them
    /// would rewrite ordinary text (the caller refuses them).
    fn with(mut self, name: &str, value: &str) -> Self {
        if value.chars().count() >= MIN_LEN && !self.secrets.iter().any(|s| s.value == value) {
            self.secrets
                .push(Secret::new(name.to_owned(), value.to_owned()));
            self.sort();
        }
        self
    }

    /// `text` with every secret's value replaced by `[redacted NAME]`, as
    /// is or JSON-escaped (text from a server is often JSON).
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for s in &self.secrets {
            for form in s.forms() {
                if out.contains(form) {
                    out = Cow::Owned(out.replace(form, &s.marker()));
                }
            }
        }
        out
    }

    /// Bytes written by another program (a log, a client's JSON), valid
    /// UTF-8 or not, with every secret replaced, raw or JSON-escaped.
    pub fn redact_bytes<'a>(&self, bytes: &'a [u8]) -> Cow<'a, [u8]> {
        let mut out = Cow::Borrowed(bytes);
        for s in &self.secrets {
            for form in s.forms() {
                if let Some(replaced) = replace_bytes(&out, form.as_bytes(), s.marker().as_bytes())
                {
                    out = Cow::Owned(replaced);
                }
            }
        }
        out
    }

    /// The name of a secret whose value `text` holds, if any.
    pub fn found_in(&self, text: &str) -> Option<&str> {
        self.secrets
            .iter()
            .find(|s| s.forms().any(|form| text.contains(form)))
            .map(|s| s.name.as_str())
    }

    /// Refuses `text` (key material, a lockfile: never rewritten) when it
    /// holds a secret; `what` names it in the error.
    pub fn refuse_in(&self, what: &str, text: &str) -> Result<(), Error> {
        match self.found_in(text) {
            Some(name) => Err(Error::InKeyMaterial {
                what: what.to_owned(),
                name: name.to_owned(),
            }),
            None => Ok(()),
        }
    }
}

impl Secret {
    fn new(name: String, value: String) -> Self {
        let escaped = serde_json::to_string(&value).expect("a string serializes");
        let escaped = &escaped[1..escaped.len() - 1];
        Self {
            json_escaped: (escaped != value).then(|| escaped.to_owned()),
            name,
            value,
        }
    }

    fn forms(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.value.as_str()).chain(self.json_escaped.as_deref())
    }

    fn marker(&self) -> String {
        format!("[redacted {}]", self.name)
    }
}

/// `haystack` with every `needle` replaced, or `None` when it holds none.
fn replace_bytes(haystack: &[u8], needle: &[u8], with: &[u8]) -> Option<Vec<u8>> {
    let finder = memchr::memmem::Finder::new(needle);
    let mut found = finder.find_iter(haystack).peekable();
    found.peek()?;
    let mut out = Vec::with_capacity(haystack.len());
    let mut at = 0;
    for start in found {
        if start < at {
            continue; // overlaps the previous match
        }
        out.extend_from_slice(&haystack[at..start]);
        out.extend_from_slice(with);
        at = start + needle.len();
    }
    out.extend_from_slice(&haystack[at..]);
    Some(out)
}

fn env_vars() -> impl Iterator<Item = (String, String)> {
    std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
}

/// Refuses an environment holding a secret too short to redact (the CLI
/// checks this before any command runs).
pub fn check_env() -> Result<(), Error> {
    Secrets::from_vars(env_vars()).map(|_| ())
}

/// This process's secrets: its environment's, read once (it does not
/// change), and those its configuration named since ([`add_configured`]).
pub fn env() -> Arc<Secrets> {
    process()
        .read()
        .expect("no panic holds the secrets")
        .clone()
}

fn process() -> &'static RwLock<Arc<Secrets>> {
    static SECRETS: OnceLock<RwLock<Arc<Secrets>>> = OnceLock::new();
    SECRETS.get_or_init(|| {
        // Short values were refused at start; a library caller that skipped
        // `check_env` still gets every value that can be redacted.
        let secrets = Secrets::from_vars(env_vars().filter(|(_, v)| v.chars().count() >= MIN_LEN))
            .expect("short values are filtered out");
        RwLock::new(Arc::new(secrets))
    })
}

/// Adds a secret read from the user's configuration (a cache's password or
/// token, which no variable's name marks as one), called `name` where it is
/// replaced, so that every later redaction covers it. Values shorter than
/// [`MIN_LEN`] are not added: the caller refuses them.
pub fn add_configured(name: &str, value: &str) {
    let mut secrets = process().write().expect("no panic holds the secrets");
    *secrets = Arc::new((**secrets).clone().with(name, value));
}

/// `text` without this process's secrets: for text from outside perfpipe,
/// where it enters.
pub fn redact(text: &str) -> Cow<'_, str> {
    env().redact(text)
}

/// Scrubs every file directly under `dir` (an external client's logs and
/// result files, in a pending sample) in place, byte for byte.
pub fn redact_dir(dir: &Path) -> std::io::Result<()> {
    let secrets = env();
    if secrets.secrets.is_empty() {
        return Ok(());
    }
    for entry in fs_err::read_dir(dir)?.filter_map(|e| e.ok()) {
        let path = entry.path();
        if !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let bytes = fs_err::read(&path)?;
        if let Cow::Owned(clean) = secrets.redact_bytes(&bytes) {
            replace(&path, &clean)?;
        }
    }
    Ok(())
}

#[expect(
    clippy::disallowed_methods,
    reason = "rewrites a log of a pending sample before it is committed"
)]
fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(path, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets(vars: &[(&str, &str)]) -> Result<Secrets, Error> {
        Secrets::from_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())))
    }

    #[test]
    fn names_that_say_secret_and_none_that_count_or_configure() {
        for name in [
            "HF_TOKEN",
            "HUGGING_FACE_HUB_TOKEN",
            "TOKEN_FILE_KEY",
            "OPENAI_API_KEY",
            "PERFPIPE_REGISTRY_PASSWORD",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "my_api_key",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in [
            "HF_HOME",
            "MAX_TOKENS",
            "VLLM_MAX_NUM_BATCHED_TOKENS",
            "TOKENIZERS_PARALLELISM",
            "PERFPIPE_REGISTRY_USERNAME",
        ] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn values_are_replaced_and_nothing_else() {
        let s = secrets(&[
            ("HF_TOKEN", "hf_abcdefgh1234"),
            ("MY_API_KEY", "key-555"),
            ("MAX_TOKENS", "512"),
            ("TOKENIZERS_PARALLELISM", "false"),
            ("EMPTY_TOKEN", ""),
        ])
        .unwrap();
        assert_eq!(
            s.redact("HF_TOKEN=hf_abcdefgh1234 key=key-555 max=512 false"),
            "HF_TOKEN=[redacted HF_TOKEN] key=[redacted MY_API_KEY] max=512 false"
        );
        assert!(matches!(s.redact("nothing here"), Cow::Borrowed(_)));
        let quoted = secrets(&[("HF_TOKEN", r#"hf_"q"#)]).unwrap();
        assert_eq!(
            quoted.redact(r#"{"message":"hf_\"q"} hf_"q"#),
            r#"{"message":"[redacted HF_TOKEN]"} [redacted HF_TOKEN]"#
        );
    }

    #[test]
    fn configured_secrets_are_redacted_with_the_environments() {
        let s = secrets(&[("HF_TOKEN", "hf_abcdefgh1234")])
            .unwrap()
            .with("[credentials.\"r.example\"]", "pw-1234")
            .with("short", "abc");
        assert_eq!(
            s.redact("hf_abcdefgh1234 alice:pw-1234 abc"),
            "[redacted HF_TOKEN] alice:[redacted [credentials.\"r.example\"]] abc"
        );
        add_configured("[credentials.\"test.example\"]", "configured-s3cret");
        assert_eq!(
            redact("failed for configured-s3cret"),
            "failed for [redacted [credentials.\"test.example\"]]"
        );
    }

    #[test]
    fn short_secrets_are_refused_by_name() {
        let err = secrets(&[("MY_API_KEY", "abc")]).unwrap_err();
        assert!(matches!(&err, Error::TooShort { name, len: 3 } if name == "MY_API_KEY"));
        assert!(secrets(&[("MAX_TOKENS", "1")]).is_ok());
    }

    #[test]
    fn bytes_lose_raw_and_json_escaped_values_and_keep_the_rest() {
        let s = secrets(&[("HF_TOKEN", r#"hf_"q\b"#)]).unwrap();
        let log = b"\xff raw hf_\"q\\b json \"hf_\\\"q\\\\b\" \xfe";
        assert_eq!(
            s.redact_bytes(log).as_ref(),
            b"\xff raw [redacted HF_TOKEN] json \"[redacted HF_TOKEN]\" \xfe"
        );
        assert_eq!(s.found_in(r#"{"a":"hf_\"q\\b"}"#), Some("HF_TOKEN"));
        assert!(s.refuse_in("key", "clean").is_ok());
    }
}
