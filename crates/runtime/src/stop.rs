//! [`StopMatcher`]: cuts the output at the first user stop string, even one that spans several
//! tokens, without ever emitting any of its text.
//!
//! Text is released only when it can no longer be the start of a stop string: the longest
//! suffix that is a prefix of some stop string is held back until the next token decides.

/// Holds back text that might begin a stop string.
#[derive(Clone, Debug, Default)]
pub struct StopMatcher {
    stops: Vec<String>,
    held: String,
}

impl StopMatcher {
    /// A matcher for `stops` (empty strings are ignored).
    pub fn new(stops: &[String]) -> Self {
        StopMatcher { stops: stops.iter().filter(|s| !s.is_empty()).cloned().collect(), held: String::new() }
    }

    /// The stop strings in use.
    pub fn stops(&self) -> &[String] {
        &self.stops
    }

    /// Adds `text`. Appends what is safe to show to `out`. If a stop string now occurs, appends
    /// only the text before it, drops the rest, and returns the index of that stop string (the
    /// earliest occurrence wins; at the same position, the first in the list).
    pub fn push(&mut self, text: &str, out: &mut String) -> Option<usize> {
        self.held.push_str(text);
        let found =
            self.stops.iter().enumerate().filter_map(|(i, s)| self.held.find(s.as_str()).map(|pos| (pos, i))).min();
        if let Some((pos, i)) = found {
            out.push_str(&self.held[..pos]);
            self.held.clear();
            return Some(i);
        }
        let keep = self.stops.iter().map(|s| partial_suffix(&self.held, s)).max().unwrap_or(0);
        let cut = self.held.len() - keep;
        out.push_str(&self.held[..cut]);
        self.held.drain(..cut);
        None
    }

    /// Ends the stream: held text was not a stop string after all, so it is released.
    pub fn finish(&mut self, out: &mut String) {
        out.push_str(&self.held);
        self.held.clear();
    }

    /// Text currently held back.
    pub fn held(&self) -> &str {
        &self.held
    }
}

/// Length of the longest proper prefix of `stop` that `text` ends with: how much of `text` to
/// hold back because it could still become `stop` (stop strings, and the tags answers are read
/// for: `</think>`, `<tool_call>`).
pub fn partial_suffix(text: &str, stop: &str) -> usize {
    let max = stop.len().saturating_sub(1).min(text.len());
    (1..=max)
        .rev()
        .find(|&k| text.is_char_boundary(text.len() - k) && stop.is_char_boundary(k) && text.ends_with(&stop[..k]))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `chunks`, returning (released text per chunk, stop index).
    fn run(stops: &[&str], chunks: &[&str]) -> (Vec<String>, Option<usize>) {
        let mut m = StopMatcher::new(&stops.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        let mut outs = Vec::new();
        for c in chunks {
            let mut out = String::new();
            let hit = m.push(c, &mut out);
            outs.push(out);
            if hit.is_some() {
                return (outs, hit);
            }
        }
        let mut out = String::new();
        m.finish(&mut out);
        outs.push(out);
        (outs, None)
    }

    #[test]
    fn stop_split_across_tokens_is_never_emitted() {
        let (out, hit) = run(&["STOP"], &["Hello S", "T", "OP and more"]);
        assert_eq!(out, vec!["Hello ", "", ""]);
        assert_eq!(hit, Some(0));
    }

    #[test]
    fn false_start_is_released() {
        let (out, hit) = run(&["STOP"], &["a ST", "ORM", "!"]);
        assert_eq!(out.concat(), "a STORM!");
        assert_eq!(out[0], "a ");
        assert_eq!(hit, None);
    }

    #[test]
    fn earliest_stop_wins() {
        let (out, hit) = run(&["world", "lo w"], &["hello world"]);
        assert_eq!(out, vec!["hel"]);
        assert_eq!(hit, Some(1));
    }

    #[test]
    fn stop_inside_one_token_and_multibyte_prefixes() {
        let (out, hit) = run(&["\n\n"], &["line one\n\nline two"]);
        assert_eq!((out, hit), (vec!["line one".to_string()], Some(0)));
        let (out, hit) = run(&["éé"], &["caf", "é", "!"]);
        assert_eq!(out.concat(), "café!");
        assert_eq!(out[1], "");
        assert_eq!(hit, None);
    }

    #[test]
    fn no_stops_passes_everything_through() {
        let (out, _) = run(&[""], &["a", "b"]);
        assert_eq!(out, vec!["a", "b", ""]);
    }
}
