//! One module per subcommand.

pub mod bench;
pub mod bench_grammar;
pub mod bench_real;
pub mod generate;
pub mod grammar;
pub mod pull;
pub mod sample;
pub mod serve;
