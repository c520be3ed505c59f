//! Malformed input never panics: mutated grammars, schemas and descriptors give errors.

mod common;

use nucleus_grammar::continuations::ContinuationSet;
use nucleus_grammar::json_schema::{schema_to_gbnf, SchemaOptions};
use nucleus_grammar::{AcceptError, Grammar, Matcher};

#[test]
fn mutated_grammars_do_not_panic() {
    let v = common::vectors();
    let mut texts: Vec<String> = v["grammar_integration"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["grammar"].as_str().unwrap().to_string())
        .collect();
    texts.extend(nucleus_grammar::builtin::BUILTINS.iter().map(|(_, t)| t.to_string()));
    let inserts =
        ["\"", "[", "]", "(", ")", "{", "}", "\\", "|", "*", "{2001}", "<", "!", "::=", "\n", "é", "\\x", "{3,1}", "#"];
    let mut n = 0;
    for t in &texts {
        let chars: Vec<char> = t.chars().collect();
        for i in (0..chars.len()).step_by(3) {
            let mut del = chars.clone();
            del.remove(i);
            let del: String = del.into_iter().collect();
            if let Ok(g) = Grammar::parse(&del, "root") {
                let mut m = Matcher::new(g);
                let _ = m.accept_bytes(b"{\"a\": [1, 2]} x + 3");
            }
            let ins = inserts[i % inserts.len()];
            let mut s: String = chars[..i].iter().collect();
            s.push_str(ins);
            s.extend(chars[i..].iter());
            let _ = Grammar::parse(&s, "root");
            n += 2;
        }
    }
    assert!(n > 1000);
}

#[test]
fn odd_schemas_do_not_panic() {
    let schemas = [
        serde_json::json!({"type": "array", "items": null}),
        serde_json::json!({"type": "integer", "minimum": -1e300, "maximum": 1e300}),
        serde_json::json!({"type": "integer", "minimum": 10, "maximum": 1}),
        serde_json::json!({"$ref": "#/nope"}),
        serde_json::json!({"$ref": "http://example.com/x"}),
        serde_json::json!({"$ref": "#"}),
        serde_json::json!({"properties": {"a": {"$ref": "#"}}}),
        serde_json::json!({"anyOf": [{"$ref": "#"}, {"type": "null"}]}),
        serde_json::json!({"oneOf": [{"$ref": "#"}, {"allOf": [{"$ref": "#"}]}]}),
        serde_json::json!({"allOf": [{"$ref": "#"}]}),
        serde_json::json!({"pattern": "^(a$"}),
        serde_json::json!({"type": "string", "pattern": "(?=a)b"}),
        serde_json::json!({"type": "string", "pattern": "^a{3,1}$"}),
        serde_json::json!({"oneOf": "x"}),
        serde_json::json!({"enum": []}),
        serde_json::json!({"type": ["string", 3]}),
        serde_json::json!({"type": "string", "minLength": 5, "maxLength": 2}),
        serde_json::json!({"allOf": [true, {"enum": [1]}]}),
        serde_json::json!(true),
        serde_json::json!(false),
        serde_json::json!([1, 2]),
    ];
    for s in &schemas {
        for opts in [
            SchemaOptions::default(),
            SchemaOptions::llama_cpp(),
            SchemaOptions { lenient: true, ..Default::default() },
        ] {
            if let Ok(g) = schema_to_gbnf(s, &opts) {
                let _ = g.grammar();
            }
        }
    }
}

#[test]
fn odd_descriptors_do_not_panic() {
    for d in [
        serde_json::json!(null),
        serde_json::json!({"modelId": 3}),
        serde_json::json!({"modelId": "m", "descriptors": [1, {"path": 2}]}),
    ] {
        assert!(ContinuationSet::from_descriptor(&d, "m", 10).is_err());
    }
}

/// Deeply nested groups and long leftmost rule chains are refused with an error (not a stack
/// overflow), and grammars just inside the limits parse, build and match on a 2 MiB stack
/// (the size of a server worker thread's).
#[test]
fn deep_grammars_are_refused_or_handled_on_a_small_stack() {
    use nucleus_grammar::compile::MAX_LEFTMOST_DEPTH;
    use nucleus_grammar::parse::MAX_GROUP_NESTING;
    use nucleus_grammar::{BuildError, Grammar, Matcher};
    let nested = |n: usize| format!("root ::= {}\"a\"{}", "(".repeat(n), ")".repeat(n));
    let chain = |n: usize| {
        let mut g = String::from("root ::= r0\n");
        for i in 0..n {
            g.push_str(&format!("r{i} ::= r{}\n", i + 1));
        }
        g.push_str(&format!("r{n} ::= \"a\"\n"));
        g
    };
    let worker = std::thread::Builder::new().stack_size(2 << 20);
    worker
        .spawn(move || {
            match Grammar::parse(&nested(MAX_GROUP_NESTING + 1), "root") {
                Err(BuildError::Parse(e)) => assert!(e.reason.contains("nested deeper"), "{e}"),
                other => panic!("expected a nesting error, got {other:?}"),
            }
            let mut m = Matcher::from_gbnf(&nested(MAX_GROUP_NESTING)).unwrap();
            m.accept_bytes(b"a").unwrap();
            assert!(m.can_end());
            assert!(matches!(Grammar::parse(&chain(MAX_LEFTMOST_DEPTH + 5), "root"), Err(BuildError::TooDeep { .. })));
            let mut m = Matcher::from_gbnf(&chain(MAX_LEFTMOST_DEPTH - 5)).unwrap();
            m.accept_bytes(b"a").unwrap();
            assert!(m.can_end());
        })
        .unwrap()
        .join()
        .unwrap();
}

/// Nested repetitions (`[a-z]+++…`) multiply the live parse stacks at every character, as in
/// llama.cpp, whose stacks grow until memory runs out (a fuzz run found this). Past the work
/// budget the matcher refuses with [`AcceptError::TooAmbiguous`], keeps its state and allows
/// nothing more.
#[test]
fn nested_repetitions_past_the_work_budget_are_refused_with_a_clear_error() {
    let text = format!("root ::= [a-z]{} \"!\"", "+".repeat(100));
    let mut m = Matcher::from_gbnf(&text).unwrap();
    let mut accepted = 0;
    let err = loop {
        let before = m.state_id();
        match m.accept_bytes(b"a") {
            Ok(()) => accepted += 1,
            Err(e) => {
                assert_eq!(m.state_id(), before, "a refused byte must leave the state unchanged");
                break e;
            }
        }
        assert!(accepted < 64, "the stacks of 100 nested repetitions should pass the budget within 64 bytes");
    };
    assert_eq!(err, AcceptError::TooAmbiguous);
    assert!(accepted >= 2, "the first characters fit the budget ({accepted} accepted)");
    assert!(err.to_string().contains("too ambiguous"), "{err}");
    // From then on nothing is allowed, and every accept says why.
    assert!(!m.allows_bytes(b"a") && !m.eog_allowed());
    assert_eq!(m.accept_bytes(b"0"), Err(AcceptError::TooAmbiguous));
    assert_eq!(m.accept_eog(7), Err(AcceptError::TooAmbiguous));
    // Three levels of nesting are ordinary: a long input goes through.
    let mut m = Matcher::from_gbnf("root ::= [a-z]+++ \"!\"").unwrap();
    m.accept_bytes("a".repeat(2000).as_bytes()).unwrap();
    m.accept_bytes(b"!").unwrap();
    assert!(m.can_end());
}

/// A start rule whose expansion alone passes the work budget (each of 40 levels doubles the
/// stacks: `x_i ::= x_{i+1} "p" | x_{i+1} "q"`) is refused when the grammar is built.
#[test]
fn a_start_rule_too_ambiguous_to_expand_is_refused_at_build() {
    let mut text = String::from("root ::= x0\n");
    for i in 0..40 {
        text += &format!("x{i} ::= x{} \"p\" | x{} \"q\"\n", i + 1, i + 1);
    }
    text += "x40 ::= \"z\"\n";
    match Grammar::parse(&text, "root") {
        Err(e @ nucleus_grammar::BuildError::TooAmbiguous(_)) => assert!(e.to_string().contains("'root'"), "{e}"),
        other => panic!("expected TooAmbiguous, got {other:?}"),
    }
    // Ten levels (1,024 stacks) are fine.
    let mut text = String::from("root ::= x0\n");
    for i in 0..10 {
        text += &format!("x{i} ::= x{} \"p\" | x{} \"q\"\n", i + 1, i + 1);
    }
    text += "x10 ::= \"z\"\n";
    let mut m = Matcher::new(Grammar::parse(&text, "root").unwrap());
    m.accept_bytes(b"zpqppqqppqp").unwrap();
    assert!(m.can_end());
}
