//! How much one request may receive. A server that ignores `max_tokens`,
//! sends one endless line, or trickles bytes of an event that never ends must
//! neither hold a request forever nor grow perfpipe's memory without end:
//! the request is cut off and fails, saying which bound it exceeded.

/// Events a response may carry beyond the tokens asked: a role chunk, a
/// finish chunk and the usage chunk come on top of one chunk per token.
pub const EXTRA_EVENTS: u64 = 16;

/// Bytes of one SSE event, its lines together (a chunk is a few hundred bytes).
pub const MAX_EVENT_BYTES: usize = 1 << 20;

/// Bytes of one response, keep-alive comments included.
pub const MAX_RESPONSE_BYTES: u64 = 64 << 20;

/// Bytes of an error response's body read for its message.
pub const MAX_ERROR_BODY_BYTES: usize = 64 << 10;

/// Bytes of text from a server quoted in an error message.
pub const QUOTED_BYTES: usize = 200;

/// The most events a response to a request for `asked` tokens may carry.
pub fn max_events(asked: u64) -> u64 {
    asked + EXTRA_EVENTS
}

/// Text a server sent, for an error message: without the environment's
/// secrets, and cut to its first [`QUOTED_BYTES`] bytes with its length when
/// longer (a malformed 100 MB event must not become a 100 MB message).
pub fn quote(bytes: &[u8]) -> String {
    excerpt(bytes, true)
}

/// The first bytes of a text of which only these were read.
pub fn quote_partial(bytes: &[u8]) -> String {
    excerpt(bytes, false)
}

fn excerpt(bytes: &[u8], whole: bool) -> String {
    // Redacted whole before it is cut: a cut could split a secret.
    let text = String::from_utf8_lossy(bytes);
    let text = crate::secrets::redact(&text);
    if whole && text.len() <= QUOTED_BYTES {
        return text.into_owned();
    }
    let size = match whole {
        true => bytes.len().to_string(),
        false => format!("more than {}", bytes.len()),
    };
    let mut end = QUOTED_BYTES.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{} … ({size} bytes)", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_is_cut_with_its_length_and_short_text_kept() {
        assert_eq!(quote(b"{\"a\""), "{\"a\"");
        let long = "é".repeat(150); // 300 bytes; byte 200 is a char boundary
        assert_eq!(
            quote(long.as_bytes()),
            format!("{} … (300 bytes)", "é".repeat(100))
        );
        let odd = format!("x{long}"); // byte 200 falls inside a char
        assert_eq!(
            quote(odd.as_bytes()),
            format!("x{} … (301 bytes)", "é".repeat(99))
        );
        assert_eq!(quote_partial(b"ab"), "ab … (more than 2 bytes)");
    }
}
