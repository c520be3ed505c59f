//! The converter's built-in rules: llama.cpp's primitives (compat) and their exact variants
//! (strict: no lone-surrogate escapes, calendar-aware dates, IPv4).

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::rules::{self, Body, RuleSet};

/// The whitespace rule that follows every value and punctuation.
pub const SPACE_RULE: &str = "| \" \" | \"\\n\"{1,2} [ \\t]{0,20}";

/// An unescaped character of a canonical JSON string (strict object keys).
pub(super) const KEY_RAW: &str = "[^\"\\\\\\x7F\\x00-\\x1F]";

/// The canonical escapes of strict object keys (see `objects::canonical_unit`).
pub(super) const KEY_ESCAPE: &str = "[\\\\] ([\"\\\\bfnrt] | \"u00\" (\"0\" [0-7bef] | \"1\" [0-9a-f] | \"7f\"))";

/// A built-in rule body and the built-ins it refers to.
pub struct Builtin {
    /// Rule body.
    pub body: &'static str,
    /// Other built-ins it references.
    pub deps: &'static [&'static str],
}

/// Looks up a primitive by name in compat or strict flavour.
pub fn primitive(name: &str, strict: bool) -> Option<Builtin> {
    let b = |body, deps| Some(Builtin { body, deps });
    match (name, strict) {
        ("boolean", _) => b("(\"true\" | \"false\") space", &[]),
        ("decimal-part", _) => b("[0-9]{1,16}", &[]),
        ("integral-part", _) => b("[0] | [1-9] [0-9]{0,15}", &[]),
        ("number", _) => b("(\"-\"? integral-part) (\".\" decimal-part)? ([eE] [-+]? integral-part)? space", &["integral-part", "decimal-part"]),
        ("integer", _) => b("(\"-\"? integral-part) space", &["integral-part"]),
        ("value", _) => b("object | array | string | number | boolean | null", &["object", "array", "string", "number", "boolean", "null"]),
        ("object", _) => b("\"{\" space ( string \":\" space value (\",\" space string \":\" space value)* )? \"}\" space", &["string", "value"]),
        ("array", _) => b("\"[\" space ( value (\",\" space value)* )? \"]\" space", &["value"]),
        ("uuid", _) => b("\"\\\"\" [0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{12} \"\\\"\" space", &[]),
        ("char", false) => b("[^\"\\\\\\x7F\\x00-\\x1F] | [\\\\] ([\"\\\\bfnrt] | \"u\" [0-9a-fA-F]{4})", &[]),
        // Strict: `\/` allowed; `\u` escapes of surrogates excluded (a lone surrogate is not a
        // character, and a pair would count twice against minLength/maxLength).
        ("char", true) => b("[^\"\\\\\\x7F\\x00-\\x1F] | [\\\\] ([\"\\\\/bfnrt] | \"u\" ([0-9a-cA-C] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2} | [e-fE-F] [0-9a-fA-F]{3}))", &[]),
        ("string", _) => b("\"\\\"\" char* \"\\\"\" space", &["char"]),
        ("null", _) => b("\"null\" space", &[]),
        ("date", false) => b("[0-9]{4} \"-\" ( \"0\" [1-9] | \"1\" [0-2] ) \"-\" ( \"0\" [1-9] | [1-2] [0-9] | \"3\" [0-1] )", &[]),
        ("date", true) => b("[0-9]{4} \"-\" ( ( \"0\" [13578] | \"1\" [02] ) \"-\" ( \"0\" [1-9] | [1-2] [0-9] | \"3\" [0-1] ) | ( \"0\" [469] | \"11\" ) \"-\" ( \"0\" [1-9] | [1-2] [0-9] | \"30\" ) | \"02-\" ( \"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8] ) ) | date-leap-year \"-02-29\"", &["date-leap-year"]),
        // Gregorian leap years: divisible by 4, centuries only when divisible by 400.
        ("date-leap-year", true) => b("[0-9]{2} ( [0] [48] | [2468] [048] | [13579] [26] ) | ( [02468] [048] | [13579] [26] ) \"00\"", &[]),
        ("time", _) => b("([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] ( \".\" [0-9]{3} )? ( \"Z\" | ( \"+\" | \"-\" ) ( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] )", &[]),
        ("date-time", _) => b("date \"T\" time", &["date", "time"]),
        ("date-string", _) => b("\"\\\"\" date \"\\\"\" space", &["date"]),
        ("time-string", _) => b("\"\\\"\" time \"\\\"\" space", &["time"]),
        ("date-time-string", _) => b("\"\\\"\" date-time \"\\\"\" space", &["date-time"]),
        ("ipv4-string", true) => b("\"\\\"\" ipv4-octet \".\" ipv4-octet \".\" ipv4-octet \".\" ipv4-octet \"\\\"\" space", &["ipv4-octet"]),
        ("ipv4-octet", true) => b("\"25\" [0-5] | \"2\" [0-4] [0-9] | \"1\" [0-9] [0-9] | [1-9] [0-9] | [0-9]", &[]),
        // RFC 4291 section 2.2 text forms (RFC 3986's IPv6address): eight groups of 1-4 hex
        // digits, the last two optionally an IPv4 dotted quad, one `::` standing for one or more
        // zero groups. No zone index.
        ("ipv6-string", true) => b("\"\\\"\" ipv6-address \"\\\"\" space", &["ipv6-address"]),
        ("ipv6-address", true) => b("(ipv6-h16 \":\"){6} ipv6-ls32 | \"::\" (ipv6-h16 \":\"){5} ipv6-ls32 | ipv6-h16? \"::\" (ipv6-h16 \":\"){4} ipv6-ls32 | (ipv6-h16 (\":\" ipv6-h16){0,1})? \"::\" (ipv6-h16 \":\"){3} ipv6-ls32 | (ipv6-h16 (\":\" ipv6-h16){0,2})? \"::\" (ipv6-h16 \":\"){2} ipv6-ls32 | (ipv6-h16 (\":\" ipv6-h16){0,3})? \"::\" ipv6-h16 \":\" ipv6-ls32 | (ipv6-h16 (\":\" ipv6-h16){0,4})? \"::\" ipv6-ls32 | (ipv6-h16 (\":\" ipv6-h16){0,5})? \"::\" ipv6-h16 | (ipv6-h16 (\":\" ipv6-h16){0,6})? \"::\"", &["ipv6-h16", "ipv6-ls32"]),
        ("ipv6-h16", true) => b("[0-9a-fA-F]{1,4}", &[]),
        ("ipv6-ls32", true) => b("ipv6-h16 \":\" ipv6-h16 | ipv4-octet \".\" ipv4-octet \".\" ipv4-octet \".\" ipv4-octet", &["ipv6-h16", "ipv4-octet"]),
        // RFC 3339 Appendix A durations: `P` then a date part (years, months, days, each unit at
        // most once, in that order, none skipped between two present: `P1Y1D` is not one) with an
        // optional time part (hours, minutes, seconds likewise), a time part alone, or weeks
        // alone. Every number is one or more ASCII digits.
        ("duration-string", true) => b("\"\\\"\" \"P\" ( [0-9]+ ( \"W\" | duration-ymd duration-hms? ) | duration-hms ) \"\\\"\" space", &["duration-ymd", "duration-hms"]),
        ("duration-ymd", true) => b("\"Y\" ( [0-9]+ \"M\" ( [0-9]+ \"D\" )? )? | \"M\" ( [0-9]+ \"D\" )? | \"D\"", &[]),
        ("duration-hms", true) => b("\"T\" [0-9]+ ( \"H\" ( [0-9]+ \"M\" ( [0-9]+ \"S\" )? )? | \"M\" ( [0-9]+ \"S\" )? | \"S\" )", &[]),
        // Conservative subsets: every output is a valid address/URI for any validator.
        ("email-string", true) => b("\"\\\"\" email-atom (\".\" email-atom)* \"@\" host-label (\".\" host-label)+ \"\\\"\" space", &["email-atom", "host-label"]),
        ("email-atom", true) => b("[A-Za-z0-9_%+-]+", &[]),
        ("host-label", true) => b("[A-Za-z0-9] ([A-Za-z0-9-]{0,61} [A-Za-z0-9])?", &[]),
        ("uri-string", true) => b("\"\\\"\" [a-zA-Z] [a-zA-Z0-9+.-]* \"://\" host-label (\".\" host-label)* (\":\" [0-9]{1,5})? (\"/\" uri-pchar*)* (\"?\" (uri-pchar | [/?])*)? (\"#\" (uri-pchar | [/?])*)? \"\\\"\" space", &["host-label", "uri-pchar"]),
        ("uri-pchar", true) => b("[A-Za-z0-9._~!$&'()*+,;=:@-] | \"%\" [0-9A-Fa-f]{2}", &[]),
        _ => None,
    }
}

/// Every built-in's name (both flavours are looked up for each).
const NAMES: &[&str] = &[
    "boolean",
    "decimal-part",
    "integral-part",
    "number",
    "integer",
    "value",
    "object",
    "array",
    "uuid",
    "char",
    "string",
    "null",
    "date",
    "date-leap-year",
    "time",
    "date-time",
    "date-string",
    "time-string",
    "date-time-string",
    "ipv4-string",
    "ipv4-octet",
    "ipv6-string",
    "ipv6-address",
    "ipv6-h16",
    "ipv6-ls32",
    "duration-string",
    "duration-ymd",
    "duration-hms",
    "email-string",
    "email-atom",
    "host-label",
    "uri-string",
    "uri-pchar",
];

/// The built-in bodies as rule IR, by their text, with the rule set their references are
/// named in. The bodies are written above as GBNF because people read and review them; they
/// are parsed once per process, here, never per conversion.
fn table() -> HashMap<&'static str, (RuleSet, Body)> {
    let mut out = HashMap::new();
    let texts = NAMES
        .iter()
        .flat_map(|n| [primitive(n, false), primitive(n, true)])
        .flatten()
        .map(|b| b.body)
        .chain([SPACE_RULE, KEY_RAW, KEY_ESCAPE]);
    for text in texts {
        let mut set = RuleSet::new();
        // The built-in texts are fixed and parse (the builtins tests build every one).
        if let Ok(mut body) = crate::parse::parse_body(text, &mut set) {
            rules::canonicalize(&mut body);
            out.insert(text, (set, body));
        }
    }
    out
}

/// The rule IR of the fixed body `text` (a built-in's, [`SPACE_RULE`], [`KEY_RAW`] or
/// [`KEY_ESCAPE`]), with the set naming its references; `None` for any other text.
pub(super) fn fixed_body(text: &str) -> Option<&'static (RuleSet, Body)> {
    static TABLE: OnceLock<HashMap<&'static str, (RuleSet, Body)>> = OnceLock::new();
    TABLE.get_or_init(table).get(text)
}

/// Names a schema-derived rule may not take (a `-` is appended).
pub fn is_reserved(name: &str) -> bool {
    matches!(
        name,
        "root"
            | "boolean"
            | "decimal-part"
            | "integral-part"
            | "number"
            | "integer"
            | "value"
            | "object"
            | "array"
            | "uuid"
            | "char"
            | "string"
            | "null"
            | "date"
            | "date-leap-year"
            | "time"
            | "date-time"
            | "date-string"
            | "time-string"
            | "date-time-string"
    )
}
