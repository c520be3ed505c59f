//! Prompts to tokens, as llama.cpp does it: plain text is tokenized with the model's automatic
//! BOS and special-token parsing; a chat is rendered with the chat template first, and a BOS
//! the template already wrote is not added twice.

use nucleus_sampler::Token;

use crate::chat::{ChatMessage, ChatTemplate};
use crate::error::{Result, RuntimeError};
use crate::model::Model;

/// What to generate from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prompt {
    /// Raw text, continued as is.
    Text(String),
    /// A conversation, rendered with the chat template and ending with the assistant's turn.
    Chat(Vec<ChatMessage>),
    /// Token ids, used as they are.
    Tokens(Vec<Token>),
}

/// The prompt's tokens for `model`.
pub fn prompt_tokens(model: &dyn Model, prompt: &Prompt) -> Result<Vec<Token>> {
    let tok = model.tokenizer();
    let tokens = match prompt {
        Prompt::Text(text) => tok.encode(text, true, true)?,
        Prompt::Chat(messages) => return chat_prompt_tokens(model, &ChatTemplate::for_model(model), messages, None),
        Prompt::Tokens(t) => {
            let n_vocab = model.n_vocab();
            if let Some(&bad) = t.iter().find(|&&x| x < 0 || x as usize >= n_vocab) {
                return Err(RuntimeError::BadToken { token: bad, n_vocab });
            }
            t.clone()
        }
    };
    if tokens.is_empty() {
        return Err(RuntimeError::EmptyPrompt);
    }
    Ok(tokens)
}

/// A conversation's tokens through `template` (the model's, or one given on the command
/// line), with `tools` handed to the template when given; ends with the assistant's turn.
pub fn chat_prompt_tokens(
    model: &dyn Model,
    template: &ChatTemplate,
    messages: &[ChatMessage],
    tools: Option<&serde_json::Value>,
) -> Result<Vec<Token>> {
    let text = template.render_with_tools(messages, true, tools)?;
    rendered_chat_tokens(model, template, &text)
}

/// The tokens of a chat prompt `template` rendered as `text`: tokenized with the model's
/// automatic tokens and special-token parsing, a BOS the template wrote not doubled. (The
/// server's `/apply-template` answers `text`; its generation routes run these tokens.)
pub fn rendered_chat_tokens(model: &dyn Model, template: &ChatTemplate, text: &str) -> Result<Vec<Token>> {
    let tok = model.tokenizer();
    let tokens = tok.encode(strip_bos(text, template.bos_token(), tok.special().add_bos), true, true)?;
    if tokens.is_empty() {
        return Err(RuntimeError::EmptyPrompt);
    }
    Ok(tokens)
}

/// `text` without a leading BOS when the tokenizer will add one anyway.
fn strip_bos<'a>(text: &'a str, bos: &str, tokenizer_adds_bos: bool) -> &'a str {
    if tokenizer_adds_bos && !bos.is_empty() {
        text.strip_prefix(bos).unwrap_or(text)
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::strip_bos;

    #[test]
    fn bos_is_stripped_only_when_the_tokenizer_adds_it() {
        assert_eq!(strip_bos("<bos>hi", "<bos>", true), "hi");
        assert_eq!(strip_bos("<bos>hi", "<bos>", false), "<bos>hi");
        assert_eq!(strip_bos("hi", "<bos>", true), "hi");
        assert_eq!(strip_bos("hi", "", true), "hi");
    }
}
