//! Server-sent events from network reads of any size: a read may end inside
//! a line, or carry several events. Only `data:` fields matter here.

/// Splits a byte stream into the `data` payloads of its events.
#[derive(Debug)]
pub struct SseParser {
    /// Bytes of a line not yet ended.
    partial: Vec<u8>,
    /// `data:` lines of the event being read, joined with `\n`.
    data: Vec<u8>,
    has_data: bool,
    /// The last `: t=<ns> recv=<ns>` comment, sent by perfpipe's test server.
    probe: Option<Probe>,
    /// The most bytes an event (or any line) may hold while it is read.
    max_event_bytes: usize,
    /// The unended line in `partial` was handed on already (see
    /// [`SseParser::whole_before_its_end`]): the rest of it is dropped.
    handed_on: bool,
}

/// An event, or a line, longer than the parser's bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventTooLarge {
    pub limit: usize,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::new(super::bounds::MAX_EVENT_BYTES)
    }
}

/// A test server's monotonic timestamps: when it wrote, and when it received the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    pub written_ns: u64,
    pub received_ns: u64,
}

impl SseParser {
    pub fn new(max_event_bytes: usize) -> Self {
        Self {
            partial: Vec::new(),
            data: Vec::new(),
            has_data: false,
            probe: None,
            max_event_bytes,
            handed_on: false,
        }
    }

    /// Feeds one network read; calls `on_event` with each completed event's
    /// data. Fails, keeping nothing more, once an unfinished event or line
    /// exceeds the bound.
    pub fn feed(
        &mut self,
        bytes: &[u8],
        mut on_event: impl FnMut(&[u8]),
    ) -> Result<(), EventTooLarge> {
        let mut rest = bytes;
        // An event of one data line, whole in this read (the usual chunk),
        // is handed on from the read itself, not copied first.
        let mut one_line: Option<&[u8]> = None;
        while let Some(end) = memchr::memchr(b'\n', rest) {
            let (line, tail) = rest.split_at(end);
            rest = &tail[1..];
            if std::mem::take(&mut self.handed_on) {
                self.partial.clear();
                continue;
            }
            if !self.partial.is_empty() {
                let mut whole = std::mem::take(&mut self.partial);
                whole.extend_from_slice(line);
                self.line(&whole, &mut on_event)?;
                continue;
            }
            let bare = line.strip_suffix(b"\r").unwrap_or(line);
            match (one_line, bare.strip_prefix(b"data:")) {
                (Some(data), _) if bare.is_empty() => {
                    on_event(data);
                    one_line = None;
                    continue;
                }
                (None, Some(value)) if !self.has_data => {
                    self.bound(bare.len())?;
                    one_line = Some(value.strip_prefix(b" ").unwrap_or(value));
                    continue;
                }
                _ => {}
            }
            // Anything else between: the event's data is kept as it is read.
            if let Some(data) = one_line.take() {
                self.keep_data(data);
            }
            self.line(line, &mut on_event)?;
        }
        if let Some(data) = one_line {
            self.keep_data(data);
        }
        self.bound(self.pending_bytes() + rest.len())?;
        self.partial.extend_from_slice(rest);
        self.whole_before_its_end(&mut on_event);
        Ok(())
    }

    /// Hands on an event whose blank line has not come yet when all it
    /// holds is one `data:` line of whole JSON or `[DONE]`, ended or not,
    /// as vLLM's client does (`StreamedResponseHandler` in `vllm bench
    /// serve`): a server that writes an event's end with the next one
    /// would otherwise have every token timed a token late, its first
    /// token (the TTFT) included. A `data:` line after it begins another
    /// event, again as vLLM reads it.
    fn whole_before_its_end(&mut self, on_event: &mut impl FnMut(&[u8])) {
        if self.handed_on {
            return;
        }
        if self.has_data {
            let one_line = memchr::memchr(b'\n', &self.data).is_none();
            if one_line && self.partial.is_empty() && is_whole(&self.data) {
                on_event(&self.data);
                self.data.clear();
                self.has_data = false;
            }
            return;
        }
        let line = self.partial.strip_suffix(b"\r").unwrap_or(&self.partial);
        if let Some(value) = line.strip_prefix(b"data:") {
            let value = value.strip_prefix(b" ").unwrap_or(value);
            if is_whole(value) {
                on_event(value);
                self.handed_on = true;
            }
        }
    }

    fn bound(&self, bytes: usize) -> Result<(), EventTooLarge> {
        match bytes > self.max_event_bytes {
            true => Err(EventTooLarge {
                limit: self.max_event_bytes,
            }),
            false => Ok(()),
        }
    }

    /// The first data line of the event being read.
    fn keep_data(&mut self, value: &[u8]) {
        self.data.extend_from_slice(value);
        self.has_data = true;
    }

    fn line(&mut self, line: &[u8], on_event: &mut impl FnMut(&[u8])) -> Result<(), EventTooLarge> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            if self.has_data {
                on_event(&self.data);
                self.data.clear();
                self.has_data = false;
            }
            return Ok(());
        }
        self.bound(self.data.len() + line.len())?;
        if let Some(value) = line.strip_prefix(b"data:") {
            let value = value.strip_prefix(b" ").unwrap_or(value);
            if self.has_data {
                self.data.push(b'\n');
            }
            self.data.extend_from_slice(value);
            self.has_data = true;
        }
        if let Some(comment) = line.strip_prefix(b": t=") {
            self.probe = parse_probe(comment);
        }
        // Other comments, `event:`, `id:` and `retry:` carry nothing we measure.
        Ok(())
    }

    /// Bytes of the event (or line) being read and not yet complete.
    pub fn pending_bytes(&self) -> usize {
        self.partial.len() + self.data.len()
    }

    /// The probe read since the last call, if any.
    pub fn take_probe(&mut self) -> Option<Probe> {
        self.probe.take()
    }

    /// True when the stream ended in the middle of an event or a line.
    pub fn is_truncated(&self) -> bool {
        self.has_data || (!self.partial.is_empty() && !self.handed_on)
    }
}

/// A `data:` value complete in itself: `[DONE]` or a whole JSON value.
fn is_whole(value: &[u8]) -> bool {
    value == b"[DONE]" || serde_json::from_slice::<serde::de::IgnoredAny>(value).is_ok()
}

fn parse_probe(comment: &[u8]) -> Option<Probe> {
    let text = std::str::from_utf8(comment).ok()?;
    let (written, received) = text.split_once(" recv=")?;
    Some(Probe {
        written_ns: written.parse().ok()?,
        received_ns: received.trim().parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(reads: &[&[u8]]) -> Vec<String> {
        let mut parser = SseParser::default();
        let mut out = Vec::new();
        for read in reads {
            parser
                .feed(read, |d| out.push(String::from_utf8_lossy(d).into_owned()))
                .unwrap();
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
        // Every split point: an event ends in the read, in the next, or is
        // handed on from the read itself.
        for at in 0..stream.len() {
            let (a, b) = stream.split_at(at);
            assert_eq!(events(&[a, b]), expected, "split at {at}");
        }
        // Comments and other fields between an event's lines.
        let mixed = b"data: a\n: note\ndata: b\nid: 7\n\ndata: c\n\n";
        assert_eq!(events(&[mixed]), ["a\nb", "c"]);
    }

    /// Each read's events, as they are handed on after it.
    fn events_per_read(reads: &[&[u8]]) -> Vec<Vec<String>> {
        let mut parser = SseParser::default();
        reads
            .iter()
            .map(|read| {
                let mut out = Vec::new();
                parser
                    .feed(read, |d| out.push(String::from_utf8_lossy(d).into_owned()))
                    .unwrap();
                out
            })
            .collect()
    }

    #[test]
    fn an_event_of_whole_json_is_handed_on_before_its_blank_line_comes() {
        // A server that writes each event's end with the next event: every
        // token would be timed a write late.
        let reads: [&[u8]; 3] = [
            b"data: {\"a\":1}\n",
            b"\ndata: {\"b\":2}",
            b"\r\n\r\ndata: [DONE]",
        ];
        assert_eq!(
            events_per_read(&reads),
            [vec!["{\"a\":1}"], vec!["{\"b\":2}"], vec!["[DONE]"]]
        );
        // Once each: the blank line that comes later ends nothing more.
        let mut parser = SseParser::default();
        let mut count = 0;
        for read in [
            &b"data: {\"a\":1}"[..],
            b"\n",
            b"\n",
            b"data: [DONE]",
            b"\n\n",
        ] {
            parser.feed(read, |_| count += 1).unwrap();
        }
        assert_eq!(count, 2);
        assert!(!parser.is_truncated());
        // JSON not yet whole, or a value that is not JSON, waits for its end.
        assert_eq!(
            events_per_read(&[b"data: {\"a\":", b"1}\n", b"\n"]),
            [vec![], vec!["{\"a\":1}"], vec![]]
        );
        assert_eq!(
            events_per_read(&[b"data: text\n", b"\n"]),
            [Vec::<String>::new(), vec!["text".to_owned()]]
        );
        // An event of several data lines, read whole, is one event.
        assert_eq!(
            events_per_read(&[b"data: {}\ndata: {}\n\n"]),
            [vec!["{}\n{}"]]
        );
    }

    #[test]
    fn probe_comments_are_read_and_not_events() {
        let mut parser = SseParser::default();
        let mut n = 0;
        parser
            .feed(b": t=200 recv=100\ndata: x\n\n", |_| n += 1)
            .unwrap();
        assert_eq!(n, 1);
        assert_eq!(
            parser.take_probe(),
            Some(Probe {
                written_ns: 200,
                received_ns: 100
            })
        );
        assert_eq!(parser.take_probe(), None);
    }

    #[test]
    fn multi_line_data_joins_with_newlines_and_truncation_shows() {
        assert_eq!(events(&[b"data: a\ndata: b\n\n"]), ["a\nb"]);
        let mut parser = SseParser::default();
        parser
            .feed(b"data: {\"cut", |_| panic!("no event yet"))
            .unwrap();
        assert!(parser.is_truncated());
    }

    #[test]
    fn an_event_or_line_over_the_bound_fails_however_it_arrives() {
        let too_large = Err(EventTooLarge { limit: 8 });
        // One endless line, in one read or byte by byte.
        let mut parser = SseParser::new(8);
        assert_eq!(parser.feed(b"data: 123456789", |_| {}), too_large);
        let mut parser = SseParser::new(8);
        let fed: Vec<_> = b"data: 123456789\n"
            .iter()
            .map(|b| parser.feed(&[*b], |_| {}))
            .collect();
        assert!(fed.contains(&too_large));
        // Many short data lines of one event that never ends.
        let mut parser = SseParser::new(8);
        assert_eq!(
            parser.feed(b"data:12\ndata:34\ndata:56\n", |_| {}),
            too_large
        );
        // A long comment line.
        let mut parser = SseParser::new(8);
        assert_eq!(parser.feed(b": keep-alive-and-more\n", |_| {}), too_large);
        // Events within the bound pass.
        let mut parser = SseParser::new(16);
        let mut n = 0;
        parser
            .feed(b"data: 12345678\n\ndata: 12345678\n\n", |_| n += 1)
            .unwrap();
        assert_eq!(n, 2);
    }
}
