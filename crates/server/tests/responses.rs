//! The OpenAI Responses API (`/v1/responses`) through the official SDKs, on the real model:
//! the `openai` Python package (create, stream, tools, text formats, chaining, retrieve, 404s
//! and 400s), the stream/whole equivalence as a property, and the OpenAI Agents SDK running an
//! agent with a function tool to completion.

mod common;

use common::{config, TestServer};

#[test]
fn responses_through_the_openai_sdk() {
    TestServer::start(config(2, 8)).python("responses.py", &[]);
}
