//! A `POST /v1/messages` (and `/v1/messages/count_tokens`) body, as bytes: the server's
//! Messages parser — the typed body, the Anthropic fields checked and written as a chat
//! request, the chat parser over it — must return the checked request or a typed 4xx error
//! (in Anthropic's shape, too), never panic.

use nucleus_server::anthropic::{convert, errors};

use crate::server_model::{check_error, check_request, defaults, model};

/// The check: panics on a violated invariant.
pub fn check(data: &[u8]) {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_slice(data) else { return };
    let d = defaults();
    for r in [convert::parse(&map, &d, model()), convert::parse_count(&map, &d, model())] {
        match r {
            Ok(req) => check_request(&req),
            Err(e) => {
                check_error(&e);
                let resp = errors::response(e.clone());
                assert_eq!(resp.status(), e.status, "the Anthropic error keeps the status");
            }
        }
    }
}
