//! One module per subcommand.

pub mod bench;
pub mod generate;
pub mod pull;
pub mod sample;
pub mod serve;
