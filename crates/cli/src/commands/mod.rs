//! One module per subcommand.

pub mod generate;
pub mod pull;
pub mod bench;
pub mod sample;
pub mod serve;
