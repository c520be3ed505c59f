//! One module per subcommand.

pub mod sample;
