//! `nucleus grammar print`: the GBNF a JSON Schema compiles to, printed for people. The
//! grammar `generate` and `serve` enforce is built from the converter's rules directly; this
//! prints those rules (strict mode, the default), or llama.cpp's converter output byte for
//! byte (`--compat`), to read, diff against llama.cpp's, or hand to `--grammar`.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use nucleus_grammar::json_schema::{schema_to_gbnf, SchemaOptions};

/// Arguments of `nucleus grammar print`.
#[derive(Args, Debug)]
pub struct PrintArgs {
    /// JSON Schema file (`-` for stdin)
    #[arg(long, value_name = "FILE")]
    pub json_schema: PathBuf,
    /// llama.cpp's converter (its `json_schema_to_grammar` output, rules sorted by name)
    /// instead of the strict one
    #[arg(long)]
    pub compat: bool,
    /// Strict mode: ignore keywords that cannot be enforced (each is reported on stderr)
    /// instead of refusing the schema
    #[arg(long, conflicts_with = "compat")]
    pub lenient: bool,
    /// Strict mode: close objects without `additionalProperties` (as llama.cpp and OpenAI's
    /// structured outputs do) instead of leaving them open (JSON Schema's default)
    #[arg(long, conflicts_with = "compat")]
    pub closed_objects: bool,
}

/// The GBNF of `a`'s schema, and the keywords the conversion ignored; `Err` is an exit-2
/// error (unreadable file, not JSON, refused schema).
pub fn print(a: &PrintArgs) -> Result<(String, Vec<String>), String> {
    let shown = a.json_schema.display();
    let text = if a.json_schema.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin()).map_err(|e| format!("cannot read the schema from stdin: {e}"))?
    } else {
        std::fs::read_to_string(&a.json_schema).map_err(|e| format!("cannot read schema file {shown}: {e}"))?
    };
    let schema: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{shown}: the schema is not JSON: {e}"))?;
    let opts = if a.compat {
        SchemaOptions::llama_cpp()
    } else {
        SchemaOptions { lenient: a.lenient, closed_objects: a.closed_objects, ..SchemaOptions::default() }
    };
    let compiled = schema_to_gbnf(&schema, &opts).map_err(|e| format!("{shown}: schema refused: {e}"))?;
    if !a.compat {
        // Strict mode prints only what builds: the grammar enforced is the one shown.
        compiled.grammar().map_err(|e| format!("{shown}: {e}"))?;
    }
    Ok((compiled.gbnf, compiled.ignored))
}

/// Runs the command: the GBNF on stdout, ignored keywords on stderr; returns the exit status.
pub fn run(a: &PrintArgs) -> i32 {
    match print(a) {
        Ok((gbnf, ignored)) => {
            for k in &ignored {
                let _ = writeln!(std::io::stderr(), "warning: ignored (not enforced by the grammar): {k}");
            }
            let mut out = std::io::stdout().lock();
            // A closed stdout (`| head`) must not turn into a panic.
            let _ = out.write_all(gbnf.as_bytes());
            let _ = out.flush();
            super::grammar::EXIT_MATCH
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e}");
            super::grammar::EXIT_ERROR
        }
    }
}
