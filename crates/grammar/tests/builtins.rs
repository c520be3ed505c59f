//! The built-in grammars parse and accept/reject typical inputs.

use nucleus_grammar::builtin::{grammar, BUILTINS};
use nucleus_grammar::Matcher;

fn accepts(name: &str, text: &str) -> bool {
    let mut m = Matcher::new(grammar(name).unwrap().unwrap());
    m.accept_bytes(text.as_bytes()).is_ok() && m.can_end()
}

#[test]
fn all_builtins_build() {
    for (name, _) in BUILTINS {
        grammar(name).unwrap().unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn builtin_languages() {
    let cases: &[(&str, &str, bool)] = &[
        ("json", r#"{"a": [1, 2.5, -3e10, true, null], "b": {"c": "d\n\u00e9"}}"#, true),
        ("json", r#"{"a": 01}"#, false),
        ("json", "[1]", false),
        ("json", r#"{"a": "x"#, false),
        ("json_arr", "[\n{\"a\": 1},\n{\"b\": [true]}]", true),
        ("json_arr", "{\"a\": 1}", false),
        ("list", "- apples\n- pears\n", true),
        ("list", "- apples", false),
        ("list", "* apples\n", false),
        ("arithmetic", "1+2*x=3\n", true),
        ("arithmetic", "(a + b)*c = 42\n", true),
        ("arithmetic", "1+=2\n", false),
        ("c", "int main(){int x=1;return x;}", true),
        ("c", "int f(int a){while(a<10){a=a+1;}return a;}", true),
        ("c", "int main(){x==1}", false),
        ("chess", "1. e4 e5\n2. Nf3 Nc6\n3. Bb5 a6\n", true),
        ("chess", "1. e4 e5\n2. O-O Qxf7#\n", true),
        ("chess", "1. e9 e5\n2. Nf3 Nc6\n", false),
        ("english", "Hello, world! It's 42.", true),
        ("english", "Grüße", false),
        ("japanese", "こんにちは、世界。カタカナ", true),
        ("japanese", "hello", false),
    ];
    for (name, text, want) in cases {
        assert_eq!(accepts(name, text), *want, "{name}: {text:?}");
    }
}
