//! Constrained decoding with the real SmolLM2 (one thread): a GBNF grammar, a JSON Schema and
//! any-JSON-object constraints give output the grammar accepts, under hot seeded sampling too;
//! the grammar ends the sequence once complete; bad grammars and schemas are clear errors.

mod common;

use std::ops::ControlFlow;
use std::sync::Arc;

use common::{context, smollm2, N_CTX};
use nucleus_runtime::{
    generate_sequence, grammar_sampler, prompt_tokens, ChatMessage, ConstraintError, LlamaCppModel, Model,
    OutputConstraint, Prompt, Sequence, SequenceOptions, StopReason,
};
use nucleus_sampler::SamplingParams;
use serde_json::{json, Value};

/// Generates a chat answer to `question` under `c`; returns the text and why it stopped.
fn constrained(
    model: &LlamaCppModel,
    question: &str,
    c: &OutputConstraint,
    params: &SamplingParams,
    max: usize,
) -> (String, StopReason) {
    let prompt = prompt_tokens(model, &Prompt::Chat(vec![ChatMessage::user(question)])).expect("prompt");
    let mut seq =
        Sequence::new(model, params, SequenceOptions { max_tokens: Some(max), ..Default::default() }).unwrap();
    seq.set_grammar(grammar_sampler(model, c).expect("constraint builds"));
    let mut ctx = context(model, N_CTX);
    let mut text = String::new();
    let stats = generate_sequence(&mut ctx, &prompt, seq, None, &mut |ev| {
        text.push_str(ev.text);
        ControlFlow::Continue(())
    })
    .expect("generate");
    (text, stats.stop)
}

fn hot(seed: u32) -> SamplingParams {
    SamplingParams { seed, temp: 1.5, top_k: 0, top_p: 1.0, min_p: 0.0, ..Default::default() }
}

#[test]
fn gbnf_yes_or_no_under_hot_sampling_and_ignore_eos() {
    let model = smollm2();
    let g = OutputConstraint::Gbnf("root ::= (\"yes\" | \"no\")\n".into());
    for seed in 1..=4 {
        let (text, stop) = constrained(model, "Is the sky green?", &g, &hot(seed), 8);
        assert!(text == "yes" || text == "no", "seed {seed}: {text:?}");
        assert_eq!(stop, StopReason::EndOfGeneration);
    }
    // End-of-generation banned: the sequence still ends once the grammar is complete.
    let params = SamplingParams { ignore_eos: true, ..hot(7) };
    let (text, stop) = constrained(model, "Is the sky green?", &g, &params, 8);
    assert!(text == "yes" || text == "no", "{text:?}");
    assert_eq!(stop, StopReason::EndOfGeneration);
}

#[test]
fn json_schema_output_parses_and_validates() {
    let model = smollm2();
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 12},
            "age": {"type": "integer", "minimum": 0, "maximum": 120},
            "color": {"enum": ["red", "green", "blue"]}
        },
        "required": ["name", "age", "color"],
        "additionalProperties": false
    });
    let c = OutputConstraint::JsonSchema(schema);
    for (i, params) in [SamplingParams { temp: 0.0, ..Default::default() }, hot(3)].iter().enumerate() {
        let (text, stop) = constrained(model, "Describe a person as JSON.", &c, params, 96);
        assert_eq!(stop, StopReason::EndOfGeneration, "run {i}: {text:?}");
        let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("run {i}: {text:?}: {e}"));
        let o = v.as_object().expect("an object");
        assert_eq!(o.len(), 3, "{text}");
        let name = o["name"].as_str().expect("name is a string");
        assert!((1..=12).contains(&name.chars().count()), "{text}");
        assert!(o["age"].as_i64().is_some_and(|a| (0..=120).contains(&a)), "{text}");
        assert!(["red", "green", "blue"].contains(&o["color"].as_str().unwrap_or("")), "{text}");
    }
}

#[test]
fn json_object_is_any_json_object() {
    let model = smollm2();
    let (text, stop) = constrained(
        model,
        "What is the capital of France? Answer as JSON like {\"capital\": \"...\"}.",
        &OutputConstraint::JsonObject,
        &SamplingParams { temp: 0.0, ..Default::default() },
        64,
    );
    assert_eq!(stop, StopReason::EndOfGeneration, "{text:?}");
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    assert!(v.is_object(), "{text}");
}

#[test]
fn bad_constraints_are_errors_and_the_vocab_index_is_shared() {
    let model = smollm2();
    assert!(Arc::ptr_eq(&model.grammar_vocab(), &model.grammar_vocab()));
    let e = grammar_sampler(model, &OutputConstraint::Gbnf("root ::= \"a\"\nx ::= [b\n".into())).unwrap_err();
    assert!(matches!(e, ConstraintError::Grammar(_)) && e.to_string().contains("line 3, column 1"), "{e}");
    let e = grammar_sampler(model, &OutputConstraint::Gbnf("root ::= undefined-rule\n".into())).unwrap_err();
    assert!(e.to_string().contains("undefined-rule"), "{e}");
    let schema = json!({"type": "object", "properties": {"a": {"if": {"type": "string"}, "then": {"minLength": 2}}}});
    let e = grammar_sampler(model, &OutputConstraint::JsonSchema(schema)).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("if at") && msg.contains("/properties/a"), "{msg}");
}

#[test]
fn a_repeated_constraint_reuses_the_warm_automaton() {
    let model = smollm2();
    let c = OutputConstraint::JsonSchema(json!({"type": "object", "properties": {"cache-test": {"type": "integer"}}}));
    let first = grammar_sampler(model, &c).unwrap();
    let _ = first.mask();
    let built = first.automaton_states();
    assert!(built > 1);
    let again = grammar_sampler(model, &c).unwrap();
    assert_eq!(again.automaton_states(), built, "the second request starts from the built automaton");
    assert!(again.can_end() == first.can_end() && !again.is_complete(), "but from the start of the grammar");
    let other =
        OutputConstraint::JsonSchema(json!({"type": "object", "properties": {"cache-test-2": {"type": "integer"}}}));
    assert!(grammar_sampler(model, &other).unwrap().automaton_states() < built);
}
