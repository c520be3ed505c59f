//! The prompt cache never changes an answer: the same seeded request gives the same tokens and
//! log-probabilities cold, warm after a different request sharing its prefix, warm from its
//! own earlier prompt, with `cache_prompt: false`, and beside concurrent requests; `/metrics`
//! and `usage.prompt_tokens_details` count the cached tokens (so the cache was really used).

mod common;

use common::{config, TestServer};

#[test]
fn cached_prompts_give_identical_answers() {
    let mut c = config(2, 8);
    // Small chunks: the shared system prompt is several whole chunks.
    c.prefill_chunk = 16;
    TestServer::start(c).python("prompt_cache.py", &[]);
}
