//! `nucleus`: the command line of the Nucleus sampling engine.

mod commands;
mod logits_file;
mod progress;
mod sampling_args;
mod spec_args;

use clap::{Parser, Subcommand};

/// Nucleus: LLM token sampling with llama.cpp's exact semantics.
#[derive(Parser, Debug)]
#[command(name = "nucleus", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Sample tokens from a logits file with llama.cpp's sampler chain
    Sample(commands::sample::SampleArgs),
    /// Generate text with a real model (llama.cpp forward pass, Nucleus sampling)
    Generate(Box<commands::generate::GenerateArgs>),
    /// Measure nucleus against llama.cpp on the same logits, side by side
    #[cfg(feature = "bench")]
    Bench(commands::bench::BenchArgs),
    /// `bench` in a build without the `bench` feature: says how to get it.
    #[cfg(not(feature = "bench"))]
    #[command(hide = true, disable_help_flag = true)]
    Bench {
        /// Whatever was given (read by nothing: the answer is the same).
        #[allow(dead_code)]
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Download, assemble and verify a known model into the models directory
    Pull(commands::pull::PullArgs),
    /// Serve the OpenAI API (chat, completions, streaming) with continuous batching
    Serve(Box<commands::serve::ServeArgs>),
    /// Check text against a GBNF grammar or a JSON Schema (the grammars constrained decoding uses)
    Grammar(commands::grammar::GrammarArgs),
}

/// What `nucleus bench` says in a build without it.
#[cfg(not(feature = "bench"))]
const NO_BENCH: &str = "`nucleus bench` measures against llama.cpp (the nucleus-parity oracle) and is not in \
    this build; build the command line with its `bench` feature: cargo run --release -p nucleus --features bench -- bench";

fn main() {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Sample(a) => commands::sample::run(a),
        Command::Generate(a) => commands::generate::run(a),
        Command::Pull(a) => commands::pull::run(a),
        #[cfg(feature = "bench")]
        Command::Bench(a) => commands::bench::run(a),
        #[cfg(not(feature = "bench"))]
        Command::Bench { .. } => Err(NO_BENCH.to_string()),
        Command::Serve(a) => commands::serve::run(a),
        Command::Grammar(a) => std::process::exit(commands::grammar::run(a)),
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
