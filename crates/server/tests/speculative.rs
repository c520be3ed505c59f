//! Speculative decoding through the real server (`tests/py/speculative.py`, the official
//! `openai` SDK): seeded requests of several chains, with and without a json_schema or tools
//! constraint, give the same tokens and logprobs with n-gram speculation on and off, alone and
//! all at once on four slots (drafts verified in decode calls shared with other slots);
//! `usage.speculative` and the `/metrics` counters report the drafts; bad `speculative` fields
//! are 400s naming them. A server started with `--spec-type ngram` speculates by default.
//! With a draft model (SmolLM2 as its own draft: no larger model of its vocabulary ships on the
//! registries) answers are the same too and greedy requests accept (nearly) every draft; a
//! draft model of another vocabulary stops the server from starting, saying why.

mod common;

use common::{config, loader, loader_of, pulled, TestServer};
use nucleus_runtime::{SpecOptions, SpecType};
use nucleus_server::speculative::SpecDefaults;
use nucleus_server::Server;

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

#[test]
fn the_ngram_cache_drafts_a_repeated_answer() {
    let mut c = config(1, 4);
    c.spec_ngram_cache = 8192;
    TestServer::start(c).python("speculative.py", &[("SPEC_CACHE", "1")]);
}

#[test]
fn a_draft_model_changes_no_answer() {
    let s = TestServer::start_with_draft(config(4, 64), loader());
    s.python("speculative.py", &[("SPEC_DRAFT", "1")]);
}

#[test]
fn a_draft_model_of_another_vocabulary_is_refused() {
    let server = Server::start_with_draft(config(1, 1), loader(), Some(loader_of(pulled("gemma3")))).expect("start");
    let e = server.wait_ready().expect_err("the vocabularies differ");
    assert!(e.contains("draft model") && e.contains("vocabulary"), "{e}");
    server.shutdown();
    let _ = server.wait();
}
