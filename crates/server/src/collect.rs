//! Whole (non-streamed) responses: gather a job's events until every choice has finished,
//! then build one `chat.completion` or `text_completion`.

use axum::http::StatusCode;
use axum::response::Response;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::engine::{Event, TokenOut};
use crate::errors::ApiError;
use crate::openai_types::{
    json_response, AssistantMessage, ChatChoice, ChatLogprobs, FunctionCall, LegacyLogprobs, StepEntry, TextChoice,
    ToolCall, Usage,
};
use crate::render::{finish_reason, ResponseMeta};
use crate::request::Endpoint;
use crate::tools::output::ToolParser;
use crate::tools::ToolFormat;

#[derive(Default)]
struct Choice {
    text: String,
    prompt_scores: Vec<TokenOut>,
    tokens: Vec<TokenOut>,
    finish: Option<&'static str>,
    /// With `trace_steps`: each token's step.
    steps: Vec<StepEntry>,
}

/// The error for an engine failure event.
pub fn failure(message: String, bad_input: bool, shutting_down: bool) -> ApiError {
    if bad_input {
        ApiError::invalid_value("sampling", message)
    } else if shutting_down {
        ApiError::unavailable(message)
    } else {
        ApiError::internal(message)
    }
}

/// A whole answer read for tool calls: its content, its complete calls, and the finish
/// reason (`tool_calls` when the answer ended normally with calls).
fn read_tool_answer(
    format: ToolFormat,
    text: &str,
    finish: &'static str,
) -> (Option<String>, Option<Vec<ToolCall>>, &'static str) {
    let mut p = ToolParser::new(format);
    let mut sink = Vec::new();
    p.push(text, &mut sink);
    p.finish(&mut sink);
    let calls: Vec<ToolCall> = p
        .calls()
        .iter()
        .map(|c| ToolCall {
            id: c.id.clone(),
            kind: "function",
            function: FunctionCall { name: c.name.clone(), arguments: c.arguments.clone() },
        })
        .collect();
    if calls.is_empty() {
        return (Some(p.content().unwrap_or_default()), None, finish);
    }
    (p.content(), Some(calls), if finish == "stop" { "tool_calls" } else { finish })
}

/// Waits for every choice, then answers.
pub async fn collect(meta: ResponseMeta, mut rx: UnboundedReceiver<Event>) -> Result<Response, ApiError> {
    let n = meta.choices.len();
    let mut choices: Vec<Choice> = (0..n).map(|_| Choice::default()).collect();
    let mut done = 0;
    let mut completion_tokens = 0;
    let mut cached = vec![0; n];
    while done < n {
        match rx.recv().await {
            None => return Err(ApiError::internal("the engine stopped before the generation finished")),
            Some(Event::Started) => {}
            Some(Event::PromptToken { choice, token }) => choices[choice].prompt_scores.push(token),
            Some(Event::Token { choice, token }) => {
                let c = &mut choices[choice];
                if let Some(e) = meta.steps.as_ref().and_then(|q| q.entry(choice, &token, &meta.renderer)) {
                    c.steps.push(e);
                }
                c.text.push_str(&token.text);
                if meta.logprobs {
                    c.tokens.push(token);
                }
            }
            Some(Event::Finished { choice, reason, completion_tokens: k, cached_tokens, .. }) => {
                if choices[choice].finish.is_none() {
                    cached[choice] = cached_tokens;
                    choices[choice].finish = Some(finish_reason(&reason));
                    completion_tokens += k;
                    done += 1;
                }
            }
            Some(Event::Failed { message, bad_input, shutting_down }) => {
                return Err(failure(message, bad_input, shutting_down))
            }
        }
    }
    let usage = Usage::with_cached(meta.prompt_tokens, completion_tokens, meta.cached_tokens(&cached));
    let r = &meta.renderer;
    let body = match meta.endpoint {
        Endpoint::Chat => json_response(
            StatusCode::OK,
            &meta.completion(
                "chat.completion",
                choices
                    .into_iter()
                    .enumerate()
                    .map(|(index, c)| {
                        let finish = c.finish.unwrap_or("stop");
                        let (content, tool_calls, finish_reason) = match meta.tool_format {
                            Some(format) => read_tool_answer(format, &c.text, finish),
                            None => (Some(c.text), None, finish),
                        };
                        ChatChoice {
                            index,
                            logprobs: meta.logprobs.then(|| ChatLogprobs {
                                content: c.tokens.iter().filter_map(|t| r.chat_entry(t)).collect(),
                                refusal: None,
                            }),
                            message: AssistantMessage {
                                role: "assistant",
                                content,
                                refusal: None,
                                annotations: Vec::new(),
                                tool_calls,
                            },
                            finish_reason,
                            steps: meta.steps.is_some().then_some(c.steps),
                        }
                    })
                    .collect::<Vec<ChatChoice>>(),
                usage,
            ),
        ),
        Endpoint::Completions => json_response(
            StatusCode::OK,
            &meta.completion(
                "text_completion",
                choices
                    .into_iter()
                    .enumerate()
                    .map(|(index, c)| {
                        let echo = meta.choices[index].echo_text.clone().unwrap_or_default();
                        let logprobs = meta.logprobs.then(|| {
                            let mut lp = LegacyLogprobs::default();
                            let offset = r.legacy(&c.prompt_scores, 0, &mut lp);
                            let start = if c.prompt_scores.is_empty() { echo.chars().count() } else { offset };
                            r.legacy(&c.tokens, start, &mut lp);
                            lp
                        });
                        TextChoice {
                            index,
                            text: echo + &c.text,
                            logprobs,
                            finish_reason: Some(c.finish.unwrap_or("stop")),
                            steps: meta.steps.is_some().then_some(c.steps),
                        }
                    })
                    .collect::<Vec<TextChoice>>(),
                Some(Some(usage)),
            ),
        ),
    };
    Ok(body)
}
