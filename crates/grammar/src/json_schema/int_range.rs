//! Exact digit-range rules for integers with bounds (llama.cpp's converter algorithm, written
//! anew): e.g. `min 15 max 300` -> `[1] ([5-9]) | [2-9] [0-9] | ...`.

use std::fmt::Write;

fn digit_range(out: &mut String, from: u8, to: u8) {
    out.push('[');
    out.push(from as char);
    if from != to {
        out.push('-');
        out.push(to as char);
    }
    out.push(']');
}

fn more_digits(out: &mut String, min: usize, max: usize) {
    out.push_str("[0-9]");
    if min == max && min == 1 {
        return;
    }
    let _ = write!(out, "{{{min}");
    if max != min {
        out.push(',');
        if max != usize::MAX {
            let _ = write!(out, "{max}");
        }
    }
    out.push('}');
}

/// Digit strings of equal length from `from` to `to` inclusive.
fn uniform_range(out: &mut String, from: &[u8], to: &[u8]) {
    let mut i = 0;
    while i < from.len() && i < to.len() && from[i] == to[i] {
        i += 1;
    }
    if i > 0 {
        out.push('"');
        out.push_str(std::str::from_utf8(&from[..i]).unwrap_or(""));
        out.push('"');
    }
    if i < from.len() && i < to.len() {
        if i > 0 {
            out.push(' ');
        }
        let sub_len = from.len() - i - 1;
        if sub_len > 0 {
            let from_sub = &from[i + 1..];
            let to_sub = &to[i + 1..];
            let zeros = vec![b'0'; sub_len];
            let nines = vec![b'9'; sub_len];
            let mut to_reached = false;
            out.push('(');
            if from_sub == zeros.as_slice() {
                digit_range(out, from[i], to[i] - 1);
                out.push(' ');
                more_digits(out, sub_len, sub_len);
            } else {
                let _ = write!(out, "[{}] (", from[i] as char);
                uniform_range(out, from_sub, &nines);
                out.push(')');
                if from[i] < to[i] - 1 {
                    out.push_str(" | ");
                    if to_sub == nines.as_slice() {
                        digit_range(out, from[i] + 1, to[i]);
                        to_reached = true;
                    } else {
                        digit_range(out, from[i] + 1, to[i] - 1);
                    }
                    out.push(' ');
                    more_digits(out, sub_len, sub_len);
                }
            }
            if !to_reached {
                out.push_str(" | ");
                digit_range(out, to[i], to[i]);
                out.push(' ');
                uniform_range(out, &zeros, to_sub);
            }
            out.push(')');
        } else {
            let _ = write!(out, "[{}-{}]", from[i] as char, to[i] as char);
        }
    }
}

/// Appends alternatives matching exactly the integers in `[min, max]` (`None` = unbounded),
/// written with at most 16 digits as the converter's integer rule allows.
pub fn min_max_int(out: &mut String, min: Option<i64>, max: Option<i64>) {
    build(out, min, max, 16, true)
}

fn build(out: &mut String, min: Option<i64>, max: Option<i64>, decimals_left: usize, top_level: bool) {
    match (min, max) {
        (Some(mut lo), Some(hi)) => {
            if lo < 0 && hi < 0 {
                out.push_str("\"-\" (");
                build(out, Some(-hi), Some(-lo), decimals_left, true);
                out.push(')');
                return;
            }
            if lo < 0 {
                out.push_str("\"-\" (");
                build(out, Some(0), Some(-lo), decimals_left, true);
                out.push_str(") | ");
                lo = 0;
            }
            let mut min_s = lo.to_string().into_bytes();
            let max_s = hi.to_string().into_bytes();
            for digits in min_s.len()..max_s.len() {
                let nines = vec![b'9'; digits];
                uniform_range(out, &min_s, &nines);
                min_s = format!("1{}", "0".repeat(digits)).into_bytes();
                out.push_str(" | ");
            }
            uniform_range(out, &min_s, &max_s);
        }
        (Some(lo), None) => {
            let less = decimals_left.saturating_sub(1).max(1);
            if lo < 0 {
                out.push_str("\"-\" (");
                build(out, None, Some(-lo), decimals_left, false);
                out.push_str(") | [0] | [1-9] ");
                more_digits(out, 0, decimals_left - 1);
            } else if lo == 0 {
                if top_level {
                    out.push_str("[0] | [1-9] ");
                    more_digits(out, 0, less);
                } else {
                    more_digits(out, 1, decimals_left);
                }
            } else if lo <= 9 {
                let c = b'0' + lo as u8;
                let start = if top_level { b'1' } else { b'0' };
                if c > start {
                    digit_range(out, start, c - 1);
                    out.push(' ');
                    more_digits(out, 1, less);
                    out.push_str(" | ");
                }
                digit_range(out, c, b'9');
                out.push(' ');
                more_digits(out, 0, less);
            } else {
                let s = lo.to_string().into_bytes();
                let len = s.len();
                let c = s[0];
                if c > b'1' {
                    digit_range(out, if top_level { b'1' } else { b'0' }, c - 1);
                    out.push(' ');
                    more_digits(out, len, less);
                    out.push_str(" | ");
                }
                digit_range(out, c, c);
                out.push_str(" (");
                let rest: i64 = std::str::from_utf8(&s[1..]).ok().and_then(|r| r.parse().ok()).unwrap_or(0);
                build(out, Some(rest), None, less, false);
                out.push(')');
                if c < b'9' {
                    out.push_str(" | ");
                    digit_range(out, c + 1, b'9');
                    out.push(' ');
                    more_digits(out, len - 1, less);
                }
            }
        }
        (None, Some(hi)) => {
            let less = decimals_left.saturating_sub(1).max(1);
            if hi >= 0 {
                if top_level {
                    out.push_str("\"-\" [1-9] ");
                    more_digits(out, 0, less);
                    out.push_str(" | ");
                }
                build(out, Some(0), Some(hi), decimals_left, true);
            } else {
                out.push_str("\"-\" (");
                build(out, Some(-hi), None, decimals_left, false);
                out.push(')');
            }
        }
        (None, None) => {}
    }
}
