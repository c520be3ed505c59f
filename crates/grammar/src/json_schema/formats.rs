//! The enforced formats as regular expressions, for the string automaton: a `format` beside
//! `pattern`, `minLength`/`maxLength` or `not` is one more language in the intersection
//! (`strings::string_language`), so every keyword holds at once. Each expression spells the
//! same language as the format's built-in rule (`primitives`): calendar dates with Gregorian
//! leap years, times with an optional millisecond part and a zone, RFC 3339 durations,
//! dotted quads without leading zeros, RFC 4291 IPv6 text forms, and the conservative email and URI subsets. The
//! unit test holds each expression to its rule on sample strings.

/// A two-digit day of a 31-, 30-day month and of February outside leap days.
const DAY31: &str = "(0[1-9]|[12][0-9]|3[01])";
const DAY30: &str = "(0[1-9]|[12][0-9]|30)";
const DAY28: &str = "(0[1-9]|1[0-9]|2[0-8])";
/// Gregorian leap years: divisible by 4, centuries only when divisible by 400.
const LEAP_YEAR: &str = "([0-9]{2}(0[48]|[2468][048]|[13579][26])|([02468][048]|[13579][26])00)";
const TIME: &str = "(([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{3})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9]))";
const OCTET: &str = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])";
const H16: &str = "[0-9a-fA-F]{1,4}";
const HOST_LABEL: &str = "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
const URI_PCHAR: &str = "([A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})";

/// RFC 3339 Appendix A: a date part (`Y`, `M`, `D` in order, none skipped between two present)
/// with an optional time part (`H`, `M`, `S` likewise), a time part alone, or weeks alone.
fn duration() -> String {
    let n = "[0-9]+";
    let hms = format!("T{n}(H({n}M({n}S)?)?|M({n}S)?|S)");
    format!("P({n}(W|(Y({n}M({n}D)?)?|M({n}D)?|D)({hms})?)|{hms})")
}

fn date() -> String {
    format!("([0-9]{{4}}-((0[13578]|1[02])-{DAY31}|(0[469]|11)-{DAY30}|02-{DAY28})|{LEAP_YEAR}-02-29)")
}

fn ipv4() -> String {
    format!("({OCTET}\\.{OCTET}\\.{OCTET}\\.{OCTET})")
}

fn ipv6() -> String {
    let h = H16;
    let ls32 = format!("({h}:{h}|{})", ipv4());
    let upto = |n: usize| format!("({h}(:{h}){{0,{n}}})?");
    let alts = [
        format!("({h}:){{6}}{ls32}"),
        format!("::({h}:){{5}}{ls32}"),
        format!("({h})?::({h}:){{4}}{ls32}"),
        format!("{}::({h}:){{3}}{ls32}", upto(1)),
        format!("{}::({h}:){{2}}{ls32}", upto(2)),
        format!("{}::{h}:{ls32}", upto(3)),
        format!("{}::{ls32}", upto(4)),
        format!("{}::{h}", upto(5)),
        format!("{}::", upto(6)),
    ];
    format!("({})", alts.join("|"))
}

/// The anchored regular expression of an enforced format (UUID variants included), or `None`
/// for a format without one.
pub(super) fn format_regex(name: &str) -> Option<String> {
    let body = match name {
        "date" => date(),
        "time" => TIME.to_string(),
        "date-time" => format!("{}T{TIME}", date()),
        "duration" => duration(),
        "ipv4" => ipv4(),
        "ipv6" => ipv6(),
        "email" => format!("[A-Za-z0-9_%+-]+(\\.[A-Za-z0-9_%+-]+)*@{HOST_LABEL}(\\.{HOST_LABEL})+"),
        "uri" => format!(
            "[a-zA-Z][a-zA-Z0-9+.-]*://{HOST_LABEL}(\\.{HOST_LABEL})*(:[0-9]{{1,5}})?(/{URI_PCHAR}*)*(\\?({URI_PCHAR}|[/?])*)?(#({URI_PCHAR}|[/?])*)?"
        ),
        n if n == "uuid" || (n.len() == 5 && n.starts_with("uuid") && matches!(n.as_bytes()[4], b'1'..=b'5')) => {
            "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}".to_string()
        }
        _ => return None,
    };
    Some(format!("^({body})$"))
}

/// A language holding every string valid for a format, as validators check it: the format's
/// own expression where its grammar is the whole language (date, ipv4, uuid, duration), else a
/// wider one every valid string matches (an email has an `@`, a URI a scheme and a colon, a
/// date-time a date and a `T`, a time `hh:mm:ss`, an IPv6 address hex digits, colons and dots).
/// The grammar's strings lie inside it too, so the `oneOf` prover may intersect it: two
/// alternatives whose languages do not meet share no instance.
pub(super) fn format_cover_regex(name: &str) -> Option<String> {
    match name {
        "date" | "ipv4" | "uuid" | "duration" => format_regex(name),
        "email" => Some("@".to_string()),
        "uri" => Some("^[a-zA-Z][a-zA-Z0-9+.-]*:".to_string()),
        "date-time" => Some("^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt]".to_string()),
        "time" => Some("^[0-9]{2}:[0-9]{2}:[0-9]{2}".to_string()),
        "ipv6" => Some("^[0-9a-fA-F:.]+$".to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::format_regex;
    use crate::json_schema::automaton::Dfa;
    use crate::json_schema::test_util::{accepts, compile};

    /// Sample strings for a format: the valid ones given, and each of them cut short, grown
    /// by a character and with one character replaced.
    fn samples(valid: &[&str]) -> Vec<String> {
        let mut out: Vec<String> = valid.iter().map(|s| s.to_string()).collect();
        for s in valid {
            let chars: Vec<char> = s.chars().collect();
            for i in 0..chars.len() {
                out.push(chars[..i].iter().collect());
                out.push(chars[i + 1..].iter().collect());
                for r in ['0', '9', 'a', 'F', ':', '.', '-', 'Z', '/', '@', '%'] {
                    let mut c = chars.clone();
                    c[i] = r;
                    out.push(c.iter().collect());
                }
            }
            for r in ['0', ':', '.', 'a'] {
                out.push(format!("{s}{r}"));
                out.push(format!("{r}{s}"));
            }
        }
        out
    }

    fn agrees(format: &str, valid: &[&str]) {
        let rule = compile(&json!({"type": "string", "format": format})).unwrap();
        let dfa = Dfa::from_pattern(&format_regex(format).unwrap()).unwrap();
        for s in samples(valid) {
            let text = Value::from(s.as_str()).to_string();
            assert_eq!(dfa.accepts(&s), accepts(&rule, &text), "format {format}: {text}");
        }
        for v in valid {
            assert!(dfa.accepts(v), "format {format}: {v}");
        }
    }

    #[test]
    fn dates_and_times_spell_their_rules() {
        let mut dates = vec!["2023-01-31", "2023-04-30", "2023-02-28", "2024-02-29", "2000-02-29", "1999-12-31"];
        dates.extend(["1900-02-28", "2100-02-28", "0000-02-29", "0004-02-29", "2023-11-30", "2023-10-31"]);
        agrees("date", &dates);
        // Every day of four years: common, leap, common century, leap century.
        let rule = compile(&json!({"type": "string", "format": "date"})).unwrap();
        let dfa = Dfa::from_pattern(&format_regex("date").unwrap()).unwrap();
        for y in ["2023", "2024", "1900", "2000"] {
            for m in 0..=13 {
                for d in 0..=32 {
                    let s = format!("{y}-{m:02}-{d:02}");
                    assert_eq!(dfa.accepts(&s), accepts(&rule, &format!("\"{s}\"")), "{s}");
                }
            }
        }
        agrees("time", &["23:59:59Z", "00:00:00.123+05:30", "12:30:45-23:59"]);
        agrees("date-time", &["2024-02-29T23:59:59Z", "1999-12-31T00:00:00.000-01:00"]);
        agrees("duration", &["P1Y2M3DT4H5M6S", "PT1M", "P3W", "P0D", "P1MT1S", "P12Y", "PT1H2M"]);
    }

    #[test]
    fn addresses_spell_their_rules() {
        agrees("ipv4", &["0.0.0.0", "255.255.255.255", "192.168.1.10", "10.249.99.9"]);
        agrees("ipv6", &["::", "::1", "1::", "fe80::1", "2001:db8::8a2e:370:7334", "::ffff:192.0.2.128"]);
        agrees("ipv6", &["2001:0db8:85a3:0000:0000:8a2e:0370:7334", "1:2:3:4:5:6:7::", "1:2:3:4:5:6:1.2.3.4"]);
        agrees("uuid", &["123e4567-e89b-12d3-a456-426614174000", "ABCDEF01-2345-6789-abcd-ef0123456789"]);
        agrees("email", &["a.b+c@example.com", "x_%1@a-b.c.d"]);
        agrees("uri", &["https://example.com/a/b?c=d&e#f", "ftp://h.x:21/%20/", "a+b://h?/?#/?"]);
    }
}
