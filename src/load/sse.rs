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

    /// Like `push`, handing each event to `f` as it completes (no allocation and no copy for
    /// the common single-line event: this runs once per streamed token).
    pub fn push_with(&mut self, bytes: &[u8], mut f: impl FnMut(&str)) {
        if self.buf.is_empty() {
            // Nothing held back: parse straight from the input, keep only its unfinished tail.
            let used = scan(bytes, &mut self.data, &mut f);
            self.buf.extend_from_slice(&bytes[used..]);
        } else {
            self.buf.extend_from_slice(bytes);
            let buf = std::mem::take(&mut self.buf);
            let used = scan(&buf, &mut self.data, &mut f);
            self.buf = buf;
            self.buf.drain(..used);
        }
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

/// Hand over the events completed in `buf`; returns how many bytes were consumed (whole
/// lines). `data` holds the `data:` lines of an event still open.
fn scan(buf: &[u8], data: &mut Vec<String>, f: &mut impl FnMut(&str)) -> usize {
    let mut start = 0;
    while let Some(rel) = memchr::memchr(b'\n', &buf[start..]) {
        let end = start + rel;
        let mut line = &buf[start..end];
        if line.last() == Some(&b'\r') {
            line = &line[..line.len() - 1];
        }
        if line.is_empty() {
            if !data.is_empty() {
                f(&data.join("\n"));
                data.clear();
            }
        } else if let Some(rest) = line.strip_prefix(b"data:") {
            let rest = rest.strip_prefix(b" ").unwrap_or(rest);
            // The usual event is one `data:` line then a blank line: hand it over in place.
            let blank = match (buf.get(end + 1), buf.get(end + 2)) {
                (Some(b'\n'), _) => Some(1),
                (Some(b'\r'), Some(b'\n')) => Some(2),
                _ => None,
            };
            if let (true, Some(skip), Ok(text)) =
                (data.is_empty(), blank, std::str::from_utf8(rest))
            {
                f(text);
                start = end + 1 + skip;
                continue;
            }
            data.push(String::from_utf8_lossy(rest).into_owned());
        }
        start = end + 1;
    }
    start
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
