//! Exact digit-range rules for integers with bounds (llama.cpp's converter algorithm, written
//! anew): e.g. `min 15 max 300` -> `[1] ([5-9]) | [2-9] [0-9] | ...`.

use super::frag::Frag;
use crate::rules::{Expr, RepeatForm};

/// Alternatives being written, the last one in progress (text's ` | ` starts the next).
struct W {
    alts: Vec<Frag>,
}

impl W {
    fn new() -> W {
        W { alts: vec![Frag::new()] }
    }

    fn cur(&mut self) -> &mut Frag {
        if self.alts.is_empty() {
            self.alts.push(Frag::new());
        }
        let n = self.alts.len();
        &mut self.alts[n - 1]
    }

    fn item(&mut self, e: Expr) {
        self.cur().push(e);
    }

    fn space(&mut self) {
        self.cur().space();
    }

    /// ` | `: the next alternative.
    fn bar(&mut self) {
        self.alts.push(Frag::new());
    }

    /// `( ... )` written by `f`.
    fn group(&mut self, f: impl FnOnce(&mut W)) {
        let mut inner = W::new();
        f(&mut inner);
        self.item(Frag::group(inner.alts));
    }
}

/// `[from-to]` (`[from]` for one digit).
fn digit_range(out: &mut W, from: u8, to: u8) {
    out.item(digits(from, to));
}

/// The class `[from-to]` of ASCII characters (`[from]` for one).
pub(super) fn digits(from: u8, to: u8) -> Expr {
    Expr::class(vec![(u32::from(from), u32::from(to))])
}

/// `[0-9]{min,max}` (`usize::MAX`: unbounded; `[0-9]` for exactly one).
fn more_digits(out: &mut W, min: usize, max: usize) {
    let digit = digits(b'0', b'9');
    if min == max && min == 1 {
        out.item(digit);
        return;
    }
    let n = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
    let (max, form) = match (min == max, max == usize::MAX) {
        (true, _) => (Some(n(max)), RepeatForm::Exact),
        (false, true) => (None, RepeatForm::AtLeast),
        (false, false) => (Some(n(max)), RepeatForm::Range),
    };
    out.item(Expr::repeat_as(digit, n(min), max, form));
}

fn text(b: &[u8]) -> &str {
    std::str::from_utf8(b).unwrap_or("")
}

/// Digit strings of equal length from `from` to `to` inclusive.
fn uniform_range(out: &mut W, from: &[u8], to: &[u8]) {
    let mut i = 0;
    while i < from.len() && i < to.len() && from[i] == to[i] {
        i += 1;
    }
    if i > 0 {
        out.item(Expr::lit(text(&from[..i])));
    }
    if i < from.len() && i < to.len() {
        if i > 0 {
            out.space();
        }
        let sub_len = from.len() - i - 1;
        if sub_len > 0 {
            let from_sub = &from[i + 1..];
            let to_sub = &to[i + 1..];
            let zeros = vec![b'0'; sub_len];
            let nines = vec![b'9'; sub_len];
            out.group(|out| {
                let mut to_reached = false;
                if from_sub == zeros.as_slice() {
                    digit_range(out, from[i], to[i] - 1);
                    out.space();
                    more_digits(out, sub_len, sub_len);
                } else {
                    digit_range(out, from[i], from[i]);
                    out.space();
                    out.group(|out| uniform_range(out, from_sub, &nines));
                    if from[i] < to[i] - 1 {
                        out.bar();
                        if to_sub == nines.as_slice() {
                            digit_range(out, from[i] + 1, to[i]);
                            to_reached = true;
                        } else {
                            digit_range(out, from[i] + 1, to[i] - 1);
                        }
                        out.space();
                        more_digits(out, sub_len, sub_len);
                    }
                }
                if !to_reached {
                    out.bar();
                    digit_range(out, to[i], to[i]);
                    out.space();
                    uniform_range(out, &zeros, to_sub);
                }
            });
        } else {
            digit_range(out, from[i], to[i]);
        }
    }
}

/// The alternatives matching exactly the integers in `[min, max]` (`None` = unbounded),
/// written with at most 16 digits as the converter's integer rule allows.
pub(super) fn min_max_int(min: Option<i64>, max: Option<i64>) -> Vec<Frag> {
    let mut out = W::new();
    build(&mut out, min, max, 16, true);
    out.alts
}

fn build(out: &mut W, min: Option<i64>, max: Option<i64>, decimals_left: usize, top_level: bool) {
    match (min, max) {
        (Some(mut lo), Some(hi)) => {
            if lo < 0 && hi < 0 {
                out.item(Expr::lit("-"));
                out.space();
                out.group(|out| build(out, Some(-hi), Some(-lo), decimals_left, true));
                return;
            }
            if lo < 0 {
                out.item(Expr::lit("-"));
                out.space();
                out.group(|out| build(out, Some(0), Some(-lo), decimals_left, true));
                out.bar();
                lo = 0;
            }
            let mut min_s = lo.to_string().into_bytes();
            let max_s = hi.to_string().into_bytes();
            for digits in min_s.len()..max_s.len() {
                let nines = vec![b'9'; digits];
                uniform_range(out, &min_s, &nines);
                min_s = format!("1{}", "0".repeat(digits)).into_bytes();
                out.bar();
            }
            uniform_range(out, &min_s, &max_s);
        }
        (Some(lo), None) => {
            let less = decimals_left.saturating_sub(1).max(1);
            if lo < 0 {
                out.item(Expr::lit("-"));
                out.space();
                out.group(|out| build(out, None, Some(-lo), decimals_left, false));
                out.bar();
                digit_range(out, b'0', b'0');
                out.bar();
                digit_range(out, b'1', b'9');
                out.space();
                more_digits(out, 0, decimals_left - 1);
            } else if lo == 0 {
                if top_level {
                    digit_range(out, b'0', b'0');
                    out.bar();
                    digit_range(out, b'1', b'9');
                    out.space();
                    more_digits(out, 0, less);
                } else {
                    more_digits(out, 1, decimals_left);
                }
            } else if lo <= 9 {
                let c = b'0' + lo as u8;
                let start = if top_level { b'1' } else { b'0' };
                if c > start {
                    digit_range(out, start, c - 1);
                    out.space();
                    more_digits(out, 1, less);
                    out.bar();
                }
                digit_range(out, c, b'9');
                out.space();
                more_digits(out, 0, less);
            } else {
                let s = lo.to_string().into_bytes();
                let len = s.len();
                let c = s[0];
                if c > b'1' {
                    digit_range(out, if top_level { b'1' } else { b'0' }, c - 1);
                    out.space();
                    more_digits(out, len, less);
                    out.bar();
                }
                digit_range(out, c, c);
                out.space();
                let rest: i64 = std::str::from_utf8(&s[1..]).ok().and_then(|r| r.parse().ok()).unwrap_or(0);
                out.group(|out| build(out, Some(rest), None, less, false));
                if c < b'9' {
                    out.bar();
                    digit_range(out, c + 1, b'9');
                    out.space();
                    more_digits(out, len - 1, less);
                }
            }
        }
        (None, Some(hi)) => {
            let less = decimals_left.saturating_sub(1).max(1);
            if hi >= 0 {
                if top_level {
                    out.item(Expr::lit("-"));
                    out.space();
                    digit_range(out, b'1', b'9');
                    out.space();
                    more_digits(out, 0, less);
                    out.bar();
                }
                build(out, Some(0), Some(hi), decimals_left, true);
            } else {
                out.item(Expr::lit("-"));
                out.space();
                out.group(|out| build(out, Some(-hi), None, decimals_left, false));
            }
        }
        (None, None) => {}
    }
}
