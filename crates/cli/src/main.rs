//! `nucleus`: the command line of the Nucleus sampling engine.

mod commands;
mod logits_file;
mod sampling_args;

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
}

fn main() {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Sample(a) => commands::sample::run(a),
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
