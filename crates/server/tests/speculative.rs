//! Speculative decoding through the real server (`tests/py/speculative.py`, the official
//! `openai` SDK): seeded requests of several chains, with and without a json_schema or tools
//! constraint, give the same tokens and logprobs with n-gram speculation on and off, alone and
//! all at once on four slots (drafts verified in decode calls shared with other slots);
//! `usage.speculative` and the `/metrics` counters report the drafts; bad `speculative` fields
//! are 400s naming them. A server started with `--spec-type ngram` speculates by default.

mod common;

use common::{config, TestServer};
use nucleus_runtime::{SpecOptions, SpecType};
use nucleus_server::speculative::SpecDefaults;

#[test]
fn speculation_never_changes_an_answer_alone_or_under_load() {
    TestServer::start(config(4, 64)).python("speculative.py", &[]);
}

#[test]
fn the_server_flag_is_the_default() {
    let mut c = config(2, 8);
    c.speculative = SpecDefaults { kind: SpecType::Ngram, opts: SpecOptions::default() };
    TestServer::start(c).python("speculative.py", &[("SPEC_DEFAULT", "ngram")]);
}
