//! A JSON Schema (the input, as JSON): every converter mode must answer without panicking; a
//! strict grammar that is emitted must build; and the built grammar's mask must equal the
//! token-by-token check along a walk chosen by the input's bytes.

use nucleus_grammar::json_schema::{schema_to_gbnf, SchemaOptions};
use nucleus_grammar::GrammarSampler;

/// The check: panics on a violated invariant.
pub fn check(data: &[u8]) {
    let Ok(schema) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    let modes = [
        SchemaOptions::default(),
        SchemaOptions { closed_objects: true, ..SchemaOptions::default() },
        SchemaOptions { lenient: true, ..SchemaOptions::default() },
        SchemaOptions::llama_cpp(),
    ];
    let mut walked = false;
    for opts in &modes {
        let Ok(compiled) = schema_to_gbnf(&schema, opts) else { continue };
        let grammar = match compiled.grammar() {
            Ok(g) => g,
            // llama.cpp's converter output is reproduced as is, buildable or not.
            Err(_) if !opts.strict => continue,
            Err(e) => panic!("strict converter emitted a grammar that does not build: {e}\n{}", compiled.gbnf),
        };
        if !walked {
            walked = true;
            let mut s = GrammarSampler::from_grammar(crate::common::vocab(), grammar);
            let choices: Vec<u8> = data.iter().rev().take(10).copied().collect();
            crate::common::walk_checking_masks(&mut s, &choices);
        }
    }
}
