//! A checked request to engine work: prompts tokenized (chat template for messages), context
//! limits checked (a prompt that does not fit is a 400, never a failure later), and one
//! [`Sequence`] per choice with its own seed, built here so the engine thread only decodes.

use std::borrow::Cow;
use std::sync::Arc;

use nucleus_runtime::{
    grammar_sampler, prompt_tokens, token_trie, ChatTemplate, Model, Prompt, ReasoningOptions, RuntimeError, Sequence,
    SequenceOptions, ThinkSplitter,
};
use nucleus_sampler::{Token, DEFAULT_SEED};

use crate::constraint;
use crate::engine::SeqJob;
use crate::errors::ApiError;
use crate::reasoning::ReasoningSettings;
use crate::request::{Endpoint, GenerationRequest};
use crate::sampling_fields::param_error;
use crate::tools::{self, ToolFormat};

/// What the response needs to know about one choice besides its events.
#[derive(Clone, Debug)]
pub struct ChoiceInfo {
    /// The prompt's tokens.
    pub prompt: Arc<[Token]>,
    /// Completions with echo: the prompt text put in front of the output.
    pub echo_text: Option<String>,
}

/// A request made ready for the engine.
pub struct Prepared {
    /// One per choice, in choice order.
    pub seqs: Vec<SeqJob>,
    /// One per choice, in choice order.
    pub choices: Vec<ChoiceInfo>,
    /// Prompt tokens for `usage` (each prompt once).
    pub prompt_tokens: usize,
    /// With tools in use: the format the answers are read in.
    pub tool_format: Option<ToolFormat>,
    /// Answers are read for a reasoning block: the reader for the start of each answer (in the
    /// block's style, inside it when the prompt opened it).
    pub reasoning: Option<ThinkSplitter>,
}

/// The seed of choice `j`: the request's seed plus `j` (choice 0 equals the same request with
/// `n = 1`); random stays random.
pub fn choice_seed(base: u32, j: usize) -> u32 {
    if base == DEFAULT_SEED {
        return DEFAULT_SEED;
    }
    let s = base.wrapping_add(j as u32);
    if s == DEFAULT_SEED {
        0
    } else {
        s
    }
}

/// Tokenizes, checks and builds the sequences. `slot_ctx` is the context each sequence may
/// fill; `parallel` the slots (a request needs one per choice).
pub fn prepare(
    req: &GenerationRequest,
    reasoning: &ReasoningSettings,
    model: &dyn Model,
    template: &ChatTemplate,
    model_id: &str,
    slot_ctx: usize,
    parallel: usize,
) -> Result<Prepared, ApiError> {
    let prompt_param = if req.endpoint == Endpoint::Chat { "messages" } else { "prompt" };
    let total = req.prompts.len() * req.n;
    if total > parallel {
        let param = if req.prompts.len() > 1 { "prompt" } else { "n" };
        return Err(ApiError::above_max(param, parallel, total, true).param(param).with_message(format!(
            "Invalid '{param}': this request needs {total} sequences ({} prompt(s) × n = {}), but the server runs at most {parallel} at once (--parallel).",
            req.prompts.len(),
            req.n
        )));
    }
    let template = &*request_template(template, reasoning);
    let style = if req.endpoint == Endpoint::Chat { reasoning.format.style(template.source()) } else { None };
    let format = ToolFormat::for_template(template);
    let active_tools = req.tools.as_ref().filter(|t| t.active());
    let tool_grammar = match active_tools.and_then(|t| tools::grammar::constraint(t, format)) {
        Some(c) => Some(grammar_sampler(model, &c).map_err(|e| ApiError::invalid_value("tools", e.to_string()))?),
        None => None,
    };
    let trie = match &req.token_trie {
        Some(t) => Some((
            token_trie(&t.descriptor, model_id, model.n_vocab(), &t.path, t.greedy)
                .map_err(|e| ApiError::invalid_value("token_trie", e.to_string()))?,
            t.greedy,
        )),
        None => None,
    };
    let mut out = Prepared {
        seqs: Vec::with_capacity(total),
        choices: Vec::with_capacity(total),
        prompt_tokens: 0,
        tool_format: active_tools.map(|_| format),
        reasoning: None,
    };
    for (pi, prompt) in req.prompts.iter().enumerate() {
        let tokens = match prompt {
            Prompt::Chat(msgs) => tools::prompt::chat_tokens(model, template, msgs, req.tools.as_ref(), format),
            other => prompt_tokens(model, other),
        };
        let tokens: Arc<[Token]> = tokens.map_err(|e| prompt_error(e, prompt_param))?.into();
        let len = tokens.len();
        if len >= slot_ctx {
            return Err(ApiError::context_exceeded(
                prompt_param,
                format!("This model's maximum context length is {slot_ctx} tokens per request, but the prompt is {len} tokens. Shorten the prompt (or start the server with a larger --ctx-size)."),
            ));
        }
        let max_tokens = match req.max_tokens {
            Some(m) if len + m > slot_ctx => {
                return Err(ApiError::context_exceeded(
                    req.max_tokens_param,
                    format!("This model's maximum context length is {slot_ctx} tokens per request. However, you requested {} tokens ({len} in the prompt, {m} for the completion). Reduce the prompt or '{}'.", len + m, req.max_tokens_param),
                ));
            }
            Some(m) => m,
            None => slot_ctx - len,
        };
        out.prompt_tokens += len;
        let block = style.map(|style| ReasoningOptions {
            style,
            starts_inside: style.prompt_opens(&tail_text(model, &tokens)),
            budget: reasoning.budget,
            budget_message: reasoning.budget_message.clone(),
        });
        out.reasoning = block.as_ref().map(|b| ThinkSplitter::with_style(b.style, b.starts_inside));
        let echo_text = (req.echo).then(|| match prompt {
            Prompt::Text(s) => s.clone(),
            _ => detokenize(model, &tokens),
        });
        for j in 0..req.n {
            let mut params = req.params.clone();
            params.seed = choice_seed(req.params.seed, j);
            let opts = SequenceOptions {
                max_tokens: Some(max_tokens.max(1)),
                stop: req.stop.clone(),
                n_probs: req.logprobs,
                render_special: false,
                post_sampling_probs: req.post_sampling_probs,
                stop_tokens: req.stop_tokens.clone(),
                min_tokens: req.min_tokens,
            };
            let mut sequence = Sequence::new(model, &params, opts).map_err(|e| match e {
                RuntimeError::Param(p) => param_error(p),
                other => ApiError::invalid_value("sampling", other.to_string()),
            })?;
            constraint::enforce(req.constraint.as_ref(), model, &mut sequence)?;
            if let Some(g) = &tool_grammar {
                sequence.set_grammar(g.clone());
            }
            if let Some((t, greedy)) = &trie {
                sequence.set_token_trie(t.clone(), *greedy);
            }
            if let Some(b) = &block {
                sequence
                    .set_reasoning(b.clone())
                    .map_err(|e| ApiError::invalid_value("reasoning_budget", e.to_string()))?;
            }
            sequence.accept_prompt(&tokens);
            out.seqs.push(SeqJob {
                choice: pi * req.n + j,
                prompt: tokens.clone(),
                sequence,
                max_tokens,
                prompt_logprobs: if req.echo { req.logprobs } else { None },
                cache_prompt: req.cache_prompt,
            });
            out.choices.push(ChoiceInfo { prompt: tokens.clone(), echo_text: echo_text.clone() });
        }
    }
    Ok(out)
}

/// The chat template a request renders with: the server's, with the request's template
/// variables (over `--chat-template-kwargs`) when there are any.
pub fn request_template<'a>(template: &'a ChatTemplate, reasoning: &ReasoningSettings) -> Cow<'a, ChatTemplate> {
    if reasoning.template_kwargs.is_empty() {
        Cow::Borrowed(template)
    } else {
        Cow::Owned(template.clone().with_kwargs(&reasoning.template_kwargs))
    }
}

/// The text of a prompt's last tokens, control tokens included (where a generation prompt
/// shows whether it opened a reasoning block).
fn tail_text(model: &dyn Model, tokens: &[Token]) -> String {
    let tok = model.tokenizer();
    let mut bytes = Vec::new();
    // 32 tokens: a harmony header spelled in plain text (not control tokens) takes a dozen.
    for &t in &tokens[tokens.len().saturating_sub(32)..] {
        tok.append_piece(t, true, &mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The text of `tokens` (control tokens as nothing).
pub fn detokenize(model: &dyn Model, tokens: &[Token]) -> String {
    let tok = model.tokenizer();
    let mut bytes = Vec::new();
    for &t in tokens {
        tok.append_piece(t, false, &mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

pub(crate) fn prompt_error(e: RuntimeError, param: &str) -> ApiError {
    match e {
        RuntimeError::EmptyPrompt => ApiError::invalid_value(param, "the prompt is empty (it tokenized to no tokens)"),
        RuntimeError::BadToken { .. } => ApiError::invalid_value(param, e.to_string()),
        RuntimeError::Template(m) => {
            ApiError::invalid_value(param, format!("the chat template could not render these messages: {m}"))
        }
        other => ApiError::invalid_value(param, other.to_string()),
    }
}
