//! `GET /openapi.json`: the HTTP API as an OpenAPI 3.1 document, generated at start-up from
//! the types the server reads and writes — the request bodies of [`crate::body`] (the types
//! requests are parsed into), the responses of [`crate::openai_types`], [`ErrorResponse`] —
//! through `schemars` (JSON Schema 2020-12, the dialect of OpenAPI 3.1). Only the list of
//! operations (which route takes which body and answers which statuses) is written here, and
//! it covers every route of [`crate::routes::served`] (a test checks that).

use std::sync::OnceLock;

use axum::http::Method;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::JsonSchema;
use serde_json::{json, Map, Value};

use crate::anthropic::body::{CountBody, MessagesBody};
use crate::anthropic::errors::AnthropicErrorResponse;
use crate::anthropic::events::{Message, StreamEvent};
use crate::anthropic::TokenCount;
use crate::body::{ChatBody, CompletionBody};
use crate::errors::ErrorResponse;
use crate::openai_types::{ChatChunk, ChatCompletion, ModelList, TextCompletion};
use crate::responses::body::ResponsesBody;
use crate::responses::types::{ResponseObject, Sequenced};
use crate::routes::health::HealthStatus;
use crate::utility::body::{ApplyTemplateResponse, DetokenizeBody, DetokenizeResponse, TokenizeBody, TokenizeResponse};
use crate::utility::props::Props;

/// The document, built once.
pub fn document() -> &'static str {
    static DOC: OnceLock<String> = OnceLock::new();
    DOC.get_or_init(|| serde_json::to_string(&build()).unwrap_or_else(|_| "{}".into()))
}

/// Schemas are referenced from `#/components/schemas`; requests are described as they are
/// read, responses as they are written.
fn generator(serialize: bool) -> SchemaGenerator {
    let s = SchemaSettings::draft2020_12().with(|s| {
        s.definitions_path = "/components/schemas".into();
        s.meta_schema = None;
    });
    if serialize { s.for_serialize() } else { s.for_deserialize() }.into_generator()
}

/// The schemas every operation refers to, by role.
struct Schemas {
    chat_request: Value,
    completion_request: Value,
    chat_response: Value,
    chat_chunk: Value,
    completion_response: Value,
    models: Value,
    health: Value,
    error: Value,
    responses_request: Value,
    response: Value,
    response_event: Value,
    messages_request: Value,
    count_request: Value,
    message: Value,
    message_event: Value,
    token_count: Value,
    anthropic_error: Value,
    tokenize_request: Value,
    tokenize_response: Value,
    detokenize_request: Value,
    detokenize_response: Value,
    apply_template_response: Value,
    props: Value,
    components: Map<String, Value>,
}

fn schemas() -> Schemas {
    let mut de = generator(false);
    let mut ser = generator(true);
    fn sub<T: JsonSchema>(g: &mut SchemaGenerator) -> Value {
        g.subschema_for::<T>().to_value()
    }
    let mut s = Schemas {
        chat_request: sub::<ChatBody>(&mut de),
        completion_request: sub::<CompletionBody>(&mut de),
        chat_response: sub::<ChatCompletion>(&mut ser),
        chat_chunk: sub::<ChatChunk>(&mut ser),
        completion_response: sub::<TextCompletion>(&mut ser),
        models: sub::<ModelList>(&mut ser),
        health: sub::<HealthStatus>(&mut ser),
        error: sub::<ErrorResponse>(&mut ser),
        responses_request: sub::<ResponsesBody>(&mut de),
        response: sub::<ResponseObject>(&mut ser),
        response_event: sub::<Sequenced<'static>>(&mut ser),
        messages_request: sub::<MessagesBody>(&mut de),
        count_request: sub::<CountBody>(&mut de),
        message: sub::<Message>(&mut ser),
        message_event: sub::<StreamEvent>(&mut ser),
        token_count: sub::<TokenCount>(&mut ser),
        anthropic_error: sub::<AnthropicErrorResponse>(&mut ser),
        tokenize_request: sub::<TokenizeBody>(&mut de),
        tokenize_response: sub::<TokenizeResponse>(&mut ser),
        detokenize_request: sub::<DetokenizeBody>(&mut de),
        detokenize_response: sub::<DetokenizeResponse>(&mut ser),
        apply_template_response: sub::<ApplyTemplateResponse>(&mut ser),
        props: sub::<Props>(&mut ser),
        components: Map::new(),
    };
    s.components = de.take_definitions(true);
    for (name, schema) in ser.take_definitions(true) {
        // Request and response types have distinct names (a unit test checks it).
        s.components.entry(name).or_insert(schema);
    }
    s
}

/// A JSON response.
fn json_content(schema: &Value) -> Value {
    json!({ "application/json": { "schema": schema } })
}

/// One server-sent event of a stream (OpenAPI before 3.2 describes each event with `schema`):
/// its `data` is a chunk, JSON of the `chunk` schema, or `[DONE]` at the end.
fn event(chunk: &Value) -> Value {
    json!({
        "type": "object",
        "properties": {
            "data": {
                "anyOf": [
                    { "const": "[DONE]" },
                    { "type": "string", "contentMediaType": "application/json", "contentSchema": chunk }
                ]
            }
        },
        "required": ["data"]
    })
}

/// One server-sent event of a Responses stream: `event: <type>` and `data: <event>` (no
/// `[DONE]`: `response.completed`, `.incomplete` or `.failed` ends it).
fn typed_event(schema: &Value) -> Value {
    json!({
        "type": "object",
        "properties": {
            "event": { "type": "string" },
            "data": {
                "anyOf": [
                    { "type": "string", "contentMediaType": "application/json", "contentSchema": schema }
                ]
            }
        },
        "required": ["event", "data"]
    })
}

/// An error response.
fn error(s: &Schemas, why: &str) -> Value {
    json!({ "description": why, "content": json_content(&s.error) })
}

/// The operation of `method path`, `None` for a route this document does not know.
fn operation(s: &Schemas, method: &Method, path: &str) -> Option<Value> {
    let alias = |canonical: &str| {
        if path == canonical {
            String::new()
        } else {
            format!(" (an alias of `{canonical}`)")
        }
    };
    let unauthorized = error(s, "The server has an API key and the request did not send it.");
    let loading = error(s, "The model is still loading, or the server is shutting down (with `Retry-After`).");
    let generation = |request: &Value,
                      response: &Value,
                      chunk: &str,
                      chunk_schema: &Value,
                      canonical: &str,
                      summary: &str| {
        json!({
            "summary": format!("{summary}{}", alias(canonical)),
            "operationId": format!("{}{}", if canonical.contains("chat") { "createChatCompletion" } else { "createCompletion" }, op_suffix(path, canonical)),
            "requestBody": { "required": true, "content": json_content(request) },
            "responses": {
                "200": {
                    "description": format!("The completion; with `stream: true`, server-sent events: one `data: {{json}}` line per `{chunk}` chunk (schema `{chunk_schema}`), then `data: [DONE]`.",
                        chunk_schema = if chunk == "chat.completion.chunk" { "CompletionOfChunkChoice" } else { "CompletionOfTextChoice" }),
                    "content": {
                        "application/json": { "schema": response },
                        "text/event-stream": { "schema": event(chunk_schema) }
                    }
                },
                "400": error(s, "A field is missing, of the wrong type or out of range (`param` names it), the body is not a JSON object, or the prompt does not fit the context."),
                "401": unauthorized,
                "404": error(s, "The model asked for is not the one served (`model_not_found`)."),
                "413": error(s, "The body is larger than `--max-body`."),
                "429": error(s, "Every slot is busy and the queue is full (with `Retry-After`)."),
                "500": error(s, "A fault of the server itself (never bad input)."),
                "503": loading
            }
        })
    };
    let op = match (method.as_str(), path) {
        ("POST", "/v1/chat/completions" | "/chat/completions") => generation(
            &s.chat_request,
            &s.chat_response,
            "chat.completion.chunk",
            &s.chat_chunk,
            "/v1/chat/completions",
            "Chat completion",
        ),
        ("POST", "/v1/completions" | "/completions") => generation(
            &s.completion_request,
            &s.completion_response,
            "text_completion",
            &s.completion_response,
            "/v1/completions",
            "Text completion",
        ),
        ("POST", "/v1/responses" | "/responses") => json!({
            "summary": format!("Create a response (OpenAI's Responses API){}", alias("/v1/responses")),
            "operationId": format!("createResponse{}", op_suffix(path, "/v1/responses")),
            "requestBody": { "required": true, "content": json_content(&s.responses_request) },
            "responses": {
                "200": {
                    "description": "The response; with `stream: true`, server-sent events (`event: <type>`, `data: <event>` with its `sequence_number`), ending with `response.completed`, `response.incomplete` or `response.failed`.",
                    "content": {
                        "application/json": { "schema": s.response },
                        "text/event-stream": { "schema": typed_event(&s.response_event) }
                    }
                },
                "400": error(s, "A field is missing, of the wrong type or out of range (`param` names it by its Responses name), a feature is not supported, or the prompt does not fit the context."),
                "401": unauthorized,
                "404": error(s, "The model asked for is not the one served, or `previous_response_id` is not kept."),
                "413": error(s, "The body is larger than `--max-body`."),
                "429": error(s, "Every slot is busy and the queue is full (with `Retry-After`)."),
                "500": error(s, "A fault of the server itself (never bad input)."),
                "503": loading
            }
        }),
        ("GET", "/v1/responses/{id}") => json!({
            "summary": "A kept response",
            "operationId": "getResponse",
            "parameters": [{ "name": "id", "in": "path", "required": true, "schema": { "type": "string" } }],
            "responses": {
                "200": { "description": "The response as it was answered.", "content": json_content(&s.response) },
                "401": unauthorized,
                "404": error(s, "No response with this id is kept (not stored, `store: false`, or dropped).")
            }
        }),
        ("DELETE", "/v1/responses/{id}") => json!({
            "summary": "Forget a kept response",
            "operationId": "deleteResponse",
            "parameters": [{ "name": "id", "in": "path", "required": true, "schema": { "type": "string" } }],
            "responses": {
                "200": {
                    "description": "It is forgotten.",
                    "content": { "application/json": { "schema": {
                        "type": "object",
                        "properties": {
                            "id": { "type": "string" },
                            "object": { "const": "response.deleted" },
                            "deleted": { "const": true }
                        },
                        "required": ["id", "object", "deleted"]
                    } } }
                },
                "401": unauthorized,
                "404": error(s, "No response with this id is kept.")
            }
        }),
        ("POST", "/tokenize") => utility_operation(
            s,
            "Tokenize a text (llama-server's)",
            "tokenize",
            &s.tokenize_request,
            &s.tokenize_response,
            "The token ids, or with `with_pieces` each id with its piece (a string, or the byte values when the piece is not valid UTF-8).",
            "A field has the wrong type, `content` is missing, or a token id of a mixed `content` is not in the vocabulary (`param` names it).",
        ),
        ("POST", "/detokenize") => utility_operation(
            s,
            "Turn token ids back into text (llama-server's)",
            "detokenize",
            &s.detokenize_request,
            &s.detokenize_response,
            "The tokens' text.",
            "`tokens` is missing or not an array of integers, or an id is not in the vocabulary (`param` names it, e.g. `tokens[2]`).",
        ),
        ("POST", "/apply-template") => utility_operation(
            s,
            "Render a chat request's prompt without generating (llama-server's)",
            "applyTemplate",
            &s.chat_request,
            &s.apply_template_response,
            "The prompt `/v1/chat/completions` would render for this body (template, template variables, tools).",
            "A field is missing, of the wrong type or out of range, as `/v1/chat/completions` checks it (`param` names it), or the template cannot render the messages.",
        ),
        ("GET", "/props") => json!({
            "summary": "The server's properties (llama-server's)",
            "operationId": "props",
            "responses": {
                "200": { "description": "Sampling defaults, each slot's context, slots, model, chat template.", "content": json_content(&s.props) },
                "401": unauthorized,
                "503": loading
            }
        }),
        ("POST", "/v1/messages") => messages_operation(s),
        ("POST", "/v1/messages/count_tokens") => count_operation(s),
        ("GET", "/v1/models" | "/models") => json!({
            "summary": format!("The model served{}", alias("/v1/models")),
            "operationId": format!("listModels{}", op_suffix(path, "/v1/models")),
            "responses": {
                "200": { "description": "The one model served.", "content": json_content(&s.models) },
                "401": unauthorized,
                "503": loading
            }
        }),
        ("GET", "/health" | "/v1/health") => json!({
            "summary": format!("Readiness{}", alias("/health")),
            "operationId": format!("health{}", op_suffix(path, "/health")),
            "security": [],
            "responses": {
                "200": { "description": "The model is loaded.", "content": json_content(&s.health) },
                "503": error(s, "The model is still loading (or failed to load), or the server is shutting down.")
            }
        }),
        ("GET", "/metrics") => json!({
            "summary": "Prometheus metrics",
            "operationId": "metrics",
            "responses": {
                "200": {
                    "description": "Counters and gauges in the Prometheus text format 0.0.4.",
                    "content": { "text/plain": { "schema": { "type": "string" } } }
                },
                "401": unauthorized
            }
        }),
        ("GET", "/openapi.json") => json!({
            "summary": "This document",
            "operationId": "openapi",
            "responses": {
                "200": {
                    "description": "The OpenAPI 3.1 description of this API.",
                    "content": { "application/json": { "schema": { "type": "object" } } }
                },
                "401": unauthorized
            }
        }),
        ("GET", "/" | "/playground" | "/playground.js" | "/playground.css") => {
            let (what, media) = match path {
                "/playground.js" => ("The playground page's script", "text/javascript"),
                "/playground.css" => ("The playground page's style sheet", "text/css"),
                _ => ("The playground page (open without the API key)", "text/html"),
            };
            json!({
                "summary": what,
                "operationId": format!("playground{}", match path { "/" => "", "/playground" => "Page", "/playground.js" => "Script", _ => "Style" }),
                "security": [],
                "responses": {
                    "200": { "description": what, "content": { media: { "schema": { "type": "string" } } } }
                }
            })
        }
        _ => return None,
    };
    Some(op)
}

/// A llama-server utility route taking `request` and answering `response` (no generation).
fn utility_operation(
    s: &Schemas,
    summary: &str,
    id: &str,
    request: &Value,
    response: &Value,
    ok: &str,
    bad: &str,
) -> Value {
    json!({
        "summary": summary,
        "operationId": id,
        "requestBody": { "required": true, "content": json_content(request) },
        "responses": {
            "200": { "description": ok, "content": json_content(response) },
            "400": error(s, bad),
            "401": error(s, "The server has an API key and the request did not send it."),
            "404": error(s, "The model asked for is not the one served (`model_not_found`)."),
            "413": error(s, "The body is larger than `--max-body`."),
            "503": error(s, "The model is still loading, or the server is shutting down (with `Retry-After`).")
        }
    })
}

/// The errors of the Messages routes (Anthropic's shape), by status.
fn anthropic_errors(s: &Schemas) -> Value {
    let e = |why: &str| json!({ "description": why, "content": json_content(&s.anthropic_error) });
    json!({
        "400": e("A field is missing, of the wrong type or out of range (the message names it), a block type is not supported (`image`, `document`), or the prompt does not fit the context (`invalid_request_error`)."),
        "401": e("The server has an API key and the request sent neither `x-api-key` nor `Authorization: Bearer` with it (`authentication_error`)."),
        "404": e("The model asked for is not the one served (`not_found_error`)."),
        "413": e("The body is larger than `--max-body` (`request_too_large`)."),
        "429": e("Every slot is busy and the queue is full, with `Retry-After` (`rate_limit_error`)."),
        "500": e("A fault of the server itself, never bad input (`api_error`)."),
        "503": e("The model is still loading, or the server is shutting down, with `Retry-After` (`overloaded_error`).")
    })
}

/// `POST /v1/messages`.
fn messages_operation(s: &Schemas) -> Value {
    let mut responses = anthropic_errors(s);
    responses["200"] = json!({
        "description": "The message; with `stream: true`, server-sent events: `event: <type>` and `data: {json}` lines per event (schema `AnthropicStreamEvent`: `message_start`, `ping`, `content_block_start`, `content_block_delta`, `content_block_stop`, `message_delta`, `message_stop`), or `event: error` with the error body.",
        "content": {
            "application/json": { "schema": s.message },
            "text/event-stream": { "schema": typed_event(&s.message_event) }
        }
    });
    json!({
        "summary": "Anthropic Messages (also sent as `/v1/messages?beta=true`)",
        "operationId": "createMessage",
        "security": [ {}, { "bearerAuth": [] }, { "apiKeyHeader": [] } ],
        "requestBody": { "required": true, "content": json_content(&s.messages_request) },
        "responses": responses
    })
}

/// `POST /v1/messages/count_tokens`.
fn count_operation(s: &Schemas) -> Value {
    let mut responses = anthropic_errors(s);
    responses["200"] =
        json!({ "description": "The rendered prompt's tokens.", "content": json_content(&s.token_count) });
    json!({
        "summary": "Count the tokens of a Messages prompt",
        "operationId": "countMessageTokens",
        "security": [ {}, { "bearerAuth": [] }, { "apiKeyHeader": [] } ],
        "requestBody": { "required": true, "content": json_content(&s.count_request) },
        "responses": responses
    })
}

/// Distinguishes an alias's operation id from the canonical route's.
fn op_suffix(path: &str, canonical: &str) -> &'static str {
    if path == canonical {
        ""
    } else {
        "Alias"
    }
}

/// The whole document.
pub fn build() -> Value {
    let s = schemas();
    let mut paths = Map::new();
    for (path, method) in crate::routes::served() {
        let Some(op) = operation(&s, &method, path) else { continue };
        let entry = paths.entry(path.to_string()).or_insert_with(|| json!({}));
        entry[method.as_str().to_ascii_lowercase()] = op;
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Nucleus",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "An OpenAI-compatible server (chat and legacy completions, the Responses API, with llama-server's and vLLM's sampling extras), Anthropic's Messages API, and llama-server's utility routes (/tokenize, /detokenize, /apply-template, /props), whose every token is sampled by Nucleus. Errors are OpenAI's error object (Anthropic's on the Messages routes). With --api-key, every route but /health needs `Authorization: Bearer <key>` (or `x-api-key`).",
            "license": { "name": "MIT OR Apache-2.0", "identifier": "MIT OR Apache-2.0" }
        },
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "security": [ {}, { "bearerAuth": [] } ],
        "paths": paths,
        "components": {
            "schemas": s.components,
            "securitySchemes": {
                "bearerAuth": { "type": "http", "scheme": "bearer", "description": "The key given to --api-key / NUCLEUS_API_KEY." },
                "apiKeyHeader": { "type": "apiKey", "in": "header", "name": "x-api-key", "description": "The key given to --api-key / NUCLEUS_API_KEY (the Messages routes)." }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Request and response schemas are generated separately; a name used by both would hide
    /// one of them.
    #[test]
    fn request_and_response_schema_names_are_distinct() {
        let mut de = generator(false);
        let mut ser = generator(true);
        de.subschema_for::<ChatBody>();
        de.subschema_for::<CompletionBody>();
        de.subschema_for::<ResponsesBody>();
        de.subschema_for::<MessagesBody>();
        de.subschema_for::<CountBody>();
        de.subschema_for::<TokenizeBody>();
        de.subschema_for::<DetokenizeBody>();
        for f in [
            SchemaGenerator::subschema_for::<ChatCompletion>,
            SchemaGenerator::subschema_for::<ChatChunk>,
            SchemaGenerator::subschema_for::<TextCompletion>,
            SchemaGenerator::subschema_for::<ModelList>,
            SchemaGenerator::subschema_for::<HealthStatus>,
            SchemaGenerator::subschema_for::<ErrorResponse>,
            SchemaGenerator::subschema_for::<ResponseObject>,
            SchemaGenerator::subschema_for::<Sequenced<'static>>,
            SchemaGenerator::subschema_for::<Message>,
            SchemaGenerator::subschema_for::<StreamEvent>,
            SchemaGenerator::subschema_for::<TokenCount>,
            SchemaGenerator::subschema_for::<AnthropicErrorResponse>,
            SchemaGenerator::subschema_for::<TokenizeResponse>,
            SchemaGenerator::subschema_for::<DetokenizeResponse>,
            SchemaGenerator::subschema_for::<ApplyTemplateResponse>,
            SchemaGenerator::subschema_for::<Props>,
        ] {
            f(&mut ser);
        }
        let a = de.take_definitions(true);
        let b = ser.take_definitions(true);
        let shared: Vec<_> = a.keys().filter(|k| b.contains_key(*k)).collect();
        assert!(shared.is_empty(), "schema names used by a request and a response type: {shared:?}");
    }

    /// Every route the router serves has an operation.
    #[test]
    fn every_served_route_is_described() {
        let doc = build();
        for (path, method) in crate::routes::served() {
            let m = method.as_str().to_ascii_lowercase();
            assert!(doc["paths"][path][&m].is_object(), "{method} {path} is not in the document");
        }
    }
}
