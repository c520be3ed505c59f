//! llama-server's utility routes (`/tokenize`, `/detokenize`, `/apply-template`, `/props`) on
//! the real model, through `tests/py/utility.py`: the tokenize/detokenize round trip, pieces
//! as strings or byte lists, `add_special` / `parse_special` / mixed content, the prompt
//! `/apply-template` renders against the prompt tokens the chat route reports (with and without
//! tools), the `/props` defaults, the 400s naming their field, and the 404's list of routes.

mod common;

use common::{config, model_path, TestServer};

#[test]
fn llama_server_utility_routes() {
    let path = model_path().display().to_string();
    let mut c = config(2, 8);
    c.model_path = Some(path.clone());
    TestServer::start(c).python("utility.py", &[("NUCLEUS_MODEL_PATH", &path)]);
}
