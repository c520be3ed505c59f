//! One module per subcommand.

#[cfg(feature = "bench")]
pub mod bench;
#[cfg(feature = "bench")]
pub mod bench_grammar;
#[cfg(feature = "bench")]
pub mod bench_real;
pub mod generate;
pub mod grammar;
pub mod grammar_print;
pub mod pull;
pub mod sample;
pub mod serve;
