//! [`Utf8Stream`]: turns token bytes into text without ever emitting part of a character.
//!
//! A token can end in the middle of a multi-byte UTF-8 character (byte-level BPE splits emoji
//! and CJK characters across tokens). Incomplete trailing bytes wait for the next token;
//! bytes that can never form a character become U+FFFD.

/// Incremental UTF-8 decoder.
#[derive(Clone, Debug, Default)]
pub struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// A decoder with nothing pending.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends the complete characters of `pending + bytes` to `out`, keeping an incomplete
    /// final character for later.
    pub fn push(&mut self, bytes: &[u8], out: &mut String) {
        self.pending.extend_from_slice(bytes);
        let mut start = 0;
        loop {
            match std::str::from_utf8(&self.pending[start..]) {
                Ok(s) => {
                    out.push_str(s);
                    start = self.pending.len();
                    break;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    // The first `valid` bytes are valid UTF-8 (that is what `valid_up_to` says).
                    out.push_str(std::str::from_utf8(&self.pending[start..start + valid]).unwrap_or_default());
                    start += valid;
                    match e.error_len() {
                        Some(n) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            start += n;
                        }
                        None => break, // incomplete character at the end: wait for more bytes
                    }
                }
            }
        }
        self.pending.drain(..start);
    }

    /// True when bytes of an unfinished character are waiting.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Ends the stream: an unfinished character becomes U+FFFD.
    pub fn finish(&mut self, out: &mut String) {
        if !self.pending.is_empty() {
            self.pending.clear();
            out.push(char::REPLACEMENT_CHARACTER);
        }
    }

    /// Forgets pending bytes.
    pub fn reset(&mut self) {
        self.pending.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(chunks: &[&[u8]]) -> Vec<String> {
        let mut d = Utf8Stream::new();
        chunks
            .iter()
            .map(|c| {
                let mut s = String::new();
                d.push(c, &mut s);
                s
            })
            .collect()
    }

    #[test]
    fn character_split_across_tokens_waits() {
        let crab = "🦀".as_bytes(); // 4 bytes
        assert_eq!(feed(&[b"a", &crab[..1], &crab[1..3], &crab[3..], b"b"]), vec!["a", "", "", "🦀", "b"]);
        let e = "é".as_bytes();
        assert_eq!(feed(&[&[b'x', e[0]], &[e[1], b'y']]), vec!["x", "éy"]);
    }

    #[test]
    fn invalid_bytes_become_replacement_characters() {
        assert_eq!(feed(&[b"a\xffb"]), vec!["a\u{fffd}b"]);
        // A lead byte followed by a non-continuation byte is invalid, not pending.
        assert_eq!(feed(&[b"\xe2(", b"z"]), vec!["\u{fffd}(", "z"]);
    }

    #[test]
    fn finish_flags_an_unfinished_character() {
        let mut d = Utf8Stream::new();
        let mut s = String::new();
        d.push(&"中".as_bytes()[..2], &mut s);
        assert!(s.is_empty() && d.has_pending());
        d.finish(&mut s);
        assert_eq!(s, "\u{fffd}");
        assert!(!d.has_pending());
    }
}
