//! What one streamed chunk means for timing, read without decoding the whole
//! JSON: the client must keep up with 10^6 chunks a second. Each key is
//! looked for with a searcher built once: `memmem::find` builds one per
//! call, which took 40% of the client's time at 256 streams.
//!
//! vLLM v0.11's rule: a chunk whose `choices` is non-empty is a token event
//! (even when its delta is empty, a role only, or `reasoning_content`); the
//! final chunk with empty `choices` carries `usage`.

use std::borrow::Cow;
use std::sync::LazyLock;

use memchr::memmem::Finder;
use serde::Deserialize;

/// The quoted JSON keys read, each with its searcher, built on first use.
type Key = LazyLock<Finder<'static>>;
static CHOICES: Key = LazyLock::new(|| Finder::new("\"choices\""));
static USAGE: Key = LazyLock::new(|| Finder::new("\"usage\""));
static COMPLETION_TOKENS: Key = LazyLock::new(|| Finder::new("\"completion_tokens\""));
static PROMPT_TOKENS: Key = LazyLock::new(|| Finder::new("\"prompt_tokens\""));
static ERROR: Key = LazyLock::new(|| Finder::new("\"error\""));
static CONTENT: Key = LazyLock::new(|| Finder::new("\"content\""));
static TEXT: Key = LazyLock::new(|| Finder::new("\"text\""));

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunk {
    /// `[DONE]`: the stream is complete.
    Done,
    /// A chunk with choices; `completion_tokens` when it also carries usage.
    Choices { completion_tokens: Option<u64> },
    /// A usage-only chunk (or one with neither).
    Usage { completion_tokens: Option<u64> },
    /// An error object the server sent in the stream.
    Error,
}

/// Classifies one SSE data payload; `None` when it is not JSON.
pub fn classify(data: &[u8]) -> Option<Chunk> {
    let data = data.trim_ascii();
    if data == b"[DONE]" {
        return Some(Chunk::Done);
    }
    if data.first() != Some(&b'{') || data.last() != Some(&b'}') {
        return None;
    }
    let completion_tokens = usage_tokens(data);
    if has_choices(data) {
        return Some(Chunk::Choices { completion_tokens });
    }
    if field(data, &ERROR).is_some() && completion_tokens.is_none() {
        return Some(Chunk::Error);
    }
    Some(Chunk::Usage { completion_tokens })
}

/// The bytes after `"name":` and whitespace, at the chunk's top level or in
/// `usage`; the key includes its quotes. Content strings are JSON-escaped,
/// so a quoted key cannot appear inside them unescaped.
fn field<'a>(data: &'a [u8], key: &Finder) -> Option<&'a [u8]> {
    let at = key.find(data)?;
    let rest = data[at + key.needle().len()..].trim_ascii_start();
    Some(rest.strip_prefix(b":")?.trim_ascii_start())
}

fn has_choices(data: &[u8]) -> bool {
    field(data, &CHOICES)
        .and_then(|v| v.strip_prefix(b"["))
        .is_some_and(|v| v.trim_ascii_start().first() != Some(&b']'))
}

fn usage_tokens(data: &[u8]) -> Option<u64> {
    usage_count(data, &COMPLETION_TOKENS)
}

/// The server's count of the prompt's tokens (`usage.prompt_tokens`), which
/// vLLM 0.32's client reports as the request's input tokens over its own.
pub fn prompt_tokens(data: &[u8]) -> Option<u64> {
    usage_count(data, &PROMPT_TOKENS)
}

/// A count in the chunk's `usage` object.
fn usage_count(data: &[u8], name: &Finder) -> Option<u64> {
    let usage = field(data, &USAGE)?;
    if !usage.starts_with(b"{") {
        return None;
    }
    let value = field(usage, name)?;
    let digits = value.iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(&value[..digits]).ok()?.parse().ok()
}

/// The text a chunk with choices carries, as vLLM's client reads it: the
/// first choice's `delta.content` (chat) or `text` (completions). `None`
/// when it has none, or `null`.
pub fn text(data: &[u8]) -> Option<Cow<'_, str>> {
    let value = text_value(data)?;
    if let Some(plain) = unescaped(value) {
        return Some(Cow::Borrowed(plain));
    }
    // One JSON string, and whatever follows it left unread.
    serde_json::Deserializer::from_slice(value)
        .into_iter::<Option<String>>()
        .next()?
        .ok()?
        .map(Cow::Owned)
}

/// The JSON value of the first choice's text, and what follows it.
fn text_value(data: &[u8]) -> Option<&[u8]> {
    field(data, &CONTENT).or_else(|| field(data, &TEXT))
}

/// Reads the chunks of one stream. They differ, token after token, in their
/// text only, so a chunk whose bytes before and after a plain text (no
/// quote, escape or control character) are those of the last token chunk
/// read in full is what that chunk was, with this text: the key searches
/// of [`classify`] and [`text`] (about 50 ns a chunk, 40% of the client's
/// CPU against a fast server) run once a stream, not once a token. Exact:
/// a key is quoted, and the plain text holds no quote, so the keys and
/// their values lie in the same bytes as in the chunk read in full, unless
/// the text is a key's name and makes a quoted key with the quotes around
/// it (read in full then).
#[derive(Debug, Default)]
pub struct Reader {
    /// The last token chunk read in full, before its plain text and after it.
    before: Vec<u8>,
    after: Vec<u8>,
    /// What that chunk was; `None` until a token chunk with plain text.
    chunk: Option<Chunk>,
}

/// The names of the keys read: a plain text that is one of them, between
/// its string's quotes, is a quoted key to the searches.
const KEY_NAMES: [&[u8]; 7] = [
    b"choices",
    b"usage",
    b"completion_tokens",
    b"prompt_tokens",
    b"error",
    b"content",
    b"text",
];

impl Reader {
    /// What `data` is ([`classify`]) and, for a chunk with choices, its
    /// text ([`text`]).
    pub fn read<'a>(&mut self, data: &'a [u8]) -> (Option<Chunk>, Option<Cow<'a, str>>) {
        if let Some(chunk) = self.chunk
            && let Some(plain) = self.between(data)
        {
            return (Some(chunk), Some(Cow::Borrowed(plain)));
        }
        let chunk = classify(data);
        if !matches!(chunk, Some(Chunk::Choices { .. })) {
            return (chunk, None);
        }
        let Some(value) = text_value(data) else {
            return (chunk, None);
        };
        match unescaped(value) {
            // A text that is a key's name read the chunk around it otherwise.
            Some(plain) if KEY_NAMES.contains(&plain.as_bytes()) => {
                (chunk, Some(Cow::Borrowed(plain)))
            }
            Some(plain) => {
                // The plain text's place in `data`: it lies inside `value`.
                let start = data.len() - value.len() + 1;
                let end = start + plain.len();
                self.before.clear();
                self.before.extend_from_slice(&data[..start]);
                self.after.clear();
                self.after.extend_from_slice(&data[end..]);
                self.chunk = chunk;
                (chunk, Some(Cow::Borrowed(plain)))
            }
            None => (chunk, text(data)),
        }
    }

    /// The plain text between the last full chunk's bytes before and after it.
    fn between<'a>(&self, data: &'a [u8]) -> Option<&'a str> {
        let middle = data
            .strip_prefix(self.before.as_slice())?
            .strip_suffix(self.after.as_slice())?;
        if memchr::memchr2(b'"', b'\\', middle).is_some()
            || middle.iter().any(|b| *b < 0x20)
            || KEY_NAMES.contains(&middle)
        {
            return None;
        }
        std::str::from_utf8(middle).ok()
    }
}

/// The text of a JSON string at the start of `value` when it holds no
/// escape: what decoding it gives, without a decoder (most tokens' text).
/// `None` when it has an escape, or is not such a string, for the decoder.
fn unescaped(value: &[u8]) -> Option<&str> {
    let rest = value.strip_prefix(b"\"")?;
    let end = memchr::memchr2(b'"', b'\\', rest)?;
    let inner = &rest[..end];
    // A raw control character is no JSON: the decoder refuses it.
    if rest[end] != b'"' || inner.iter().any(|b| *b < 0x20) {
        return None;
    }
    std::str::from_utf8(inner).ok()
}

/// The message of an error chunk, for the failure reason.
pub fn error_message(data: &[u8]) -> String {
    #[derive(Deserialize)]
    struct Wrapper {
        error: serde_json::Value,
    }
    serde_json::from_slice::<Wrapper>(data)
        .map(|w| match w.error.get("message").and_then(|m| m.as_str()) {
            Some(m) => m.to_owned(),
            None => w.error.to_string(),
        })
        .unwrap_or_else(|_| String::from_utf8_lossy(data).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(s: &str) -> Option<Chunk> {
        classify(s.as_bytes())
    }

    #[test]
    fn vllm_chat_stream() {
        // Role-only first delta, content, reasoning, finish, then usage only.
        let role = r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}"#;
        assert_eq!(
            c(role),
            Some(Chunk::Choices {
                completion_tokens: None
            })
        );
        let reasoning = r#"{"id":"x","choices":[{"index":0,"delta":{"reasoning_content":"Hmm"}}]}"#;
        assert_eq!(
            c(reasoning),
            Some(Chunk::Choices {
                completion_tokens: None
            })
        );
        let usage = r#"{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":12,"total_tokens":212,"completion_tokens":200}}"#;
        assert_eq!(
            c(usage),
            Some(Chunk::Usage {
                completion_tokens: Some(200)
            })
        );
        assert_eq!(c("[DONE]"), Some(Chunk::Done));
    }

    #[test]
    fn prompt_tokens_are_the_usage_objects() {
        let usage = br#"{"choices":[],"usage":{"prompt_tokens":12,"total_tokens":212,"completion_tokens":200}}"#;
        assert_eq!(prompt_tokens(usage), Some(12));
        let spaced = br#"{"id": "1", "choices": [ ], "usage": {"completion_tokens": 7, "prompt_tokens": 3}}"#;
        assert_eq!(prompt_tokens(spaced), Some(3));
        let without = br#"{"choices":[],"usage":{"completion_tokens":4}}"#;
        assert_eq!(prompt_tokens(without), None);
        let null = br#"{"choices":[{"text":"prompt_tokens"}],"usage":null}"#;
        assert_eq!(prompt_tokens(null), None);
    }

    #[test]
    fn sglang_and_trtllm_shapes_with_spaces_and_usage_on_the_last_choice() {
        // Python's json.dumps puts spaces after separators.
        let spaced = r#"{"id": "1", "choices": [ {"index": 0, "delta": {"content": " hi"}} ], "usage": null}"#;
        assert_eq!(
            c(spaced),
            Some(Chunk::Choices {
                completion_tokens: None
            })
        );
        let empty =
            r#"{"id": "1", "choices": [ ], "usage": {"prompt_tokens": 3, "completion_tokens": 7}}"#;
        assert_eq!(
            c(empty),
            Some(Chunk::Usage {
                completion_tokens: Some(7)
            })
        );
        let both = r#"{"choices":[{"index":0,"text":"!","finish_reason":"length"}],"usage":{"completion_tokens":4}}"#;
        assert_eq!(
            c(both),
            Some(Chunk::Choices {
                completion_tokens: Some(4)
            })
        );
    }

    #[test]
    fn keys_inside_content_are_escaped_and_not_mistaken() {
        let tricky = r#"{"choices":[{"delta":{"content":"say \"usage\": {\"completion_tokens\": 9}"}}],"usage":null}"#;
        assert_eq!(
            c(tricky),
            Some(Chunk::Choices {
                completion_tokens: None
            })
        );
    }

    #[test]
    fn text_of_chat_and_completion_chunks() {
        let chat =
            r#"{"choices":[{"index":0,"delta":{"content":" \"hi\"\u00e9"},"logprobs":null}]}"#;
        assert_eq!(text(chat.as_bytes()).as_deref(), Some(" \"hi\"é"));
        let completion = r#"{"choices": [{"index": 0, "text": " there", "logprobs": null}]}"#;
        assert_eq!(text(completion.as_bytes()).as_deref(), Some(" there"));
        let role = r#"{"choices":[{"delta":{"role":"assistant","content":null}}]}"#;
        assert_eq!(text(role.as_bytes()), None);
        let reasoning = r#"{"choices":[{"delta":{"reasoning_content":"Hmm"}}]}"#;
        assert_eq!(text(reasoning.as_bytes()), None, "vLLM counts content only");
        // Text without escapes is taken as it is; with a raw control
        // character or broken UTF-8 it is no JSON string, as the decoder says.
        let plain = r#"{"choices":[{"text":"café ok","logprobs":null}]}"#;
        assert_eq!(text(plain.as_bytes()).as_deref(), Some("café ok"));
        assert_eq!(text(b"{\"choices\":[{\"text\":\"a\tb\"}]}"), None);
        assert_eq!(text(b"{\"choices\":[{\"text\":\"a\xffb\"}]}"), None);
        assert_eq!(text(b"{\"choices\":[{\"text\":\"unended"), None);
    }

    #[test]
    fn a_streams_reader_reads_each_chunk_as_classify_and_text_do() {
        let completion = |text: &str| {
            format!(
                r#"{{"id":"cmpl-0","object":"text_completion","choices":[{{"index":0,"text":"{text}","logprobs":null}}],"usage":{{"prompt_tokens":3,"completion_tokens":7}}}}"#
            )
        };
        let chat = |text: &str| {
            format!(r#"{{"id":"c","choices":[{{"index":0,"delta":{{"content":"{text}"}}}}]}}"#)
        };
        // Plain texts (read from the last full chunk's bytes), a key's name
        // that is a quoted key to the searches, escapes, a control
        // character, another shape, usage and `[DONE]`.
        let mut stream: Vec<String> = [" hi", "a", "", "usage", " there", "prompt_tokens", "x"]
            .iter()
            .map(|t| completion(t))
            .collect();
        stream.extend([
            completion(r#"say \"usage\""#),
            completion("a\tb"),
            completion("café"),
            chat(" hi"),
            chat("text"),
            chat(" more"),
            r#"{"choices":[{"text":" hi"}],"usage":null}"#.to_owned(),
            r#"{"choices":[],"usage":{"completion_tokens":9}}"#.to_owned(),
            "[DONE]".to_owned(),
        ]);
        let mut reader = Reader::default();
        for data in &stream {
            let (chunk, read_text) = reader.read(data.as_bytes());
            assert_eq!(chunk, classify(data.as_bytes()), "{data}");
            let full = match chunk {
                Some(Chunk::Choices { .. }) => text(data.as_bytes()),
                _ => None,
            };
            assert_eq!(read_text, full, "{data}");
        }
        // The text that is a key's name hides the usage after it, as the
        // full read does: the reader must not take it from the chunk before.
        let hidden = completion("usage");
        assert_eq!(
            classify(hidden.as_bytes()),
            Some(Chunk::Choices {
                completion_tokens: None
            })
        );
    }

    #[test]
    fn errors_and_garbage() {
        let err = r#"{"error":{"message":"overloaded","type":"ServiceUnavailable","code":503}}"#;
        assert_eq!(c(err), Some(Chunk::Error));
        assert_eq!(error_message(err.as_bytes()), "overloaded");
        assert_eq!(c("{\"choices\":[{\"delta\""), None);
        assert_eq!(c("not json"), None);
    }
}
