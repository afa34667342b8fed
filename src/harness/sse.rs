//! Server-sent events from network reads of any size: a read may end inside
//! a line, or carry several events. Only `data:` fields matter here.

/// Splits a byte stream into the `data` payloads of its events.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of a line not yet ended.
    partial: Vec<u8>,
    /// `data:` lines of the event being read, joined with `\n`.
    data: Vec<u8>,
    has_data: bool,
}

impl SseParser {
    /// Feeds one network read; calls `on_event` with each completed event's data.
    pub fn feed(&mut self, bytes: &[u8], mut on_event: impl FnMut(&[u8])) {
        let mut rest = bytes;
        while let Some(end) = memchr::memchr(b'\n', rest) {
            let (line, tail) = rest.split_at(end);
            rest = &tail[1..];
            if self.partial.is_empty() {
                self.line(line, &mut on_event);
            } else {
                let mut whole = std::mem::take(&mut self.partial);
                whole.extend_from_slice(line);
                self.line(&whole, &mut on_event);
            }
        }
        self.partial.extend_from_slice(rest);
    }

    fn line(&mut self, line: &[u8], on_event: &mut impl FnMut(&[u8])) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            if self.has_data {
                on_event(&self.data);
                self.data.clear();
                self.has_data = false;
            }
            return;
        }
        if let Some(value) = line.strip_prefix(b"data:") {
            let value = value.strip_prefix(b" ").unwrap_or(value);
            if self.has_data {
                self.data.push(b'\n');
            }
            self.data.extend_from_slice(value);
            self.has_data = true;
        }
        // Comments (`:`), `event:`, `id:` and `retry:` carry nothing we measure.
    }

    /// True when the stream ended in the middle of an event or a line.
    pub fn is_truncated(&self) -> bool {
        self.has_data || !self.partial.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(reads: &[&[u8]]) -> Vec<String> {
        let mut parser = SseParser::default();
        let mut out = Vec::new();
        for read in reads {
            parser.feed(read, |d| out.push(String::from_utf8_lossy(d).into_owned()));
        }
        out
    }

    #[test]
    fn whole_split_and_coalesced_reads_give_the_same_events() {
        let stream = b"data: {\"a\":1}\n\ndata: {\"b\":2}\r\n\r\n: keep-alive\n\ndata: [DONE]\n\n";
        let expected = ["{\"a\":1}", "{\"b\":2}", "[DONE]"];
        assert_eq!(events(&[stream]), expected);
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(events(&bytes), expected);
        let (a, b) = stream.split_at(9);
        assert_eq!(events(&[a, b]), expected);
    }

    #[test]
    fn multi_line_data_joins_with_newlines_and_truncation_shows() {
        assert_eq!(events(&[b"data: a\ndata: b\n\n"]), ["a\nb"]);
        let mut parser = SseParser::default();
        parser.feed(b"data: {\"cut", |_| panic!("no event yet"));
        assert!(parser.is_truncated());
    }
}
