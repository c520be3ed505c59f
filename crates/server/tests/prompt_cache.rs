//! The prompt cache never changes an answer: the same seeded request gives the same tokens and
//! log-probabilities cold, warm after a different request sharing its prefix, warm from its
//! own earlier prompt, with `cache_prompt: false`, and beside concurrent requests; `/metrics`
//! and `usage.prompt_tokens_details` count the cached tokens (so the cache was really used).

mod common;

use common::{config, TestServer};

#[test]
fn cached_prompts_give_identical_answers() {
    // The default 64-token chunks: the shared system prompt is a few whole chunks.
    TestServer::start(config(2, 8)).python("prompt_cache.py", &[]);
}
