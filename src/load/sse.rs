//! Incremental Server-Sent Events parser: bytes in (split anywhere), `data:` payloads out.

#[derive(Debug, Default)]
pub struct SseParser {
    buf: Vec<u8>,
    data: Vec<String>,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed bytes; returns the payloads of the events completed by them (one string per event,
    /// multi-line `data:` joined with `\n`). Comments and other fields are ignored.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        let mut events = Vec::new();
        self.push_with(bytes, |e| events.push(e.to_string()));
        events
    }

    /// Like `push`, handing each event to `f` as it completes (no allocation for the common
    /// single-line event: this runs once per streamed token).
    pub fn push_with(&mut self, bytes: &[u8], mut f: impl FnMut(&str)) {
        self.buf.extend_from_slice(bytes);
        let mut start = 0;
        while let Some(rel) = self.buf[start..].iter().position(|&b| b == b'\n') {
            let end = start + rel;
            let mut line = &self.buf[start..end];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            if line.is_empty() {
                if !self.data.is_empty() {
                    f(&self.data.join("\n"));
                    self.data.clear();
                }
            } else if let Some(rest) = line.strip_prefix(b"data:") {
                let rest = rest.strip_prefix(b" ").unwrap_or(rest);
                // The usual event is one `data:` line then a blank line: hand it over in place.
                let next_blank = self.buf.get(end + 1) == Some(&b'\n')
                    || (self.buf.get(end + 1) == Some(&b'\r')
                        && self.buf.get(end + 2) == Some(&b'\n'));
                match (
                    self.data.is_empty() && next_blank,
                    std::str::from_utf8(rest),
                ) {
                    (true, Ok(text)) => {
                        f(text);
                        // Skip the blank line too.
                        start = end
                            + 1
                            + if self.buf.get(end + 1) == Some(&b'\r') {
                                2
                            } else {
                                1
                            };
                        continue;
                    }
                    _ => self.data.push(String::from_utf8_lossy(rest).into_owned()),
                }
            }
            start = end + 1;
        }
        self.buf.drain(..start);
    }

    /// At end of stream: an event that was not terminated by a blank line.
    pub fn finish(&mut self) -> Option<String> {
        if !self.buf.is_empty() {
            let rest = std::mem::take(&mut self.buf);
            let line = String::from_utf8_lossy(&rest);
            if let Some(d) = line.trim_end_matches('\r').strip_prefix("data:") {
                self.data.push(d.strip_prefix(' ').unwrap_or(d).to_string());
            }
        }
        (!self.data.is_empty()).then(|| {
            let s = self.data.join("\n");
            self.data.clear();
            s
        })
    }

    /// Bytes received but not yet forming a complete line.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_anywhere_and_handles_crlf_and_comments() {
        let stream = b": ping\r\n\r\ndata: {\"a\":1}\r\n\r\ndata: [DONE]\n\n";
        for cut in 0..stream.len() {
            let mut p = SseParser::new();
            let mut got = p.push(&stream[..cut]);
            got.extend(p.push(&stream[cut..]));
            assert_eq!(got, ["{\"a\":1}", "[DONE]"], "cut at {cut}");
        }
    }

    #[test]
    fn multi_line_data_and_unterminated_tail() {
        let mut p = SseParser::new();
        assert_eq!(p.push(b"data: a\ndata: b\n\ndata: c"), ["a\nb"]);
        assert_eq!(p.finish().as_deref(), Some("c"));
        assert_eq!(p.finish(), None);
    }
}
