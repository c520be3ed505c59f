//! A `POST /v1/responses` body, as bytes: the server's Responses parser — the typed body, the
//! conversion to the chat request it means, the chat parser over it with errors renamed to the
//! Responses fields — must return the checked request or a typed 4xx error, never panic. An
//! accepted body is then chained to itself (its conversation as the stored one of
//! `previous_response_id`), which must parse the same way.

use nucleus_server::request::{self, Endpoint};
use nucleus_server::responses::body::ResponsesBody;
use nucleus_server::responses::convert;

use crate::server_model::{check_error, check_request, defaults, model};

/// The check: panics on a violated invariant.
pub fn check(data: &[u8]) {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_slice(data) else { return };
    let Some(items) = turn(&map, Vec::new()) else { return };
    turn(&map, items);
}

/// One turn after `history`: the conversation so far when the body is accepted.
fn turn(
    map: &serde_json::Map<String, serde_json::Value>,
    history: Vec<nucleus_server::responses::body::Item>,
) -> Option<Vec<nucleus_server::responses::body::Item>> {
    let b: ResponsesBody = match nucleus_server::body::decode(map) {
        Ok(b) => b,
        Err(e) => return error(e),
    };
    let t = match convert::convert(map, b, history) {
        Ok(t) => t,
        Err(e) => return error(e),
    };
    match request::parse(Endpoint::Chat, &t.chat, &defaults(), model())
        .map_err(|e| convert::rename_error(e, &t.tool_paths))
    {
        Ok(req) => check_request(&req),
        Err(e) => return error(e),
    }
    Some(t.items)
}

fn error<T>(e: nucleus_server::ApiError) -> Option<T> {
    check_error(&e);
    None
}
