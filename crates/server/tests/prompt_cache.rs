//! The prompt cache never changes an answer: the same seeded request gives the same tokens and
//! log-probabilities cold, warm after a different request sharing its prefix, warm from its
//! own earlier prompt, with `cache_prompt: false`, on a conversation's next turns (which start
//! inside the previous answer's generated tokens), beside concurrent requests and back from the
//! memory cache; `/metrics` and `usage.prompt_tokens_details` count the cached tokens (so the
//! cache was really used). With flash attention on, the warm answers differ (checked by hand).

mod common;

use common::{config, TestServer};

#[test]
fn cached_prompts_give_identical_answers() {
    TestServer::start(config(2, 8)).python("prompt_cache.py", &[]);
}
