//! Built-in chat templates for models whose GGUF has none.

/// Gemma's turn format: `<start_of_turn>user|model`, a system prompt folded into the first
/// turn, contents trimmed, `<bos>` first.
pub const GEMMA_TEMPLATE: &str = r#"{{- bos_token -}}
{%- set has_system = messages and messages[0].role == "system" -%}
{%- set system = (messages[0].content | trim) ~ "\n\n" if has_system else "" -%}
{%- set turns = messages[1:] if has_system else messages -%}
{%- for m in turns -%}
{{- "<start_of_turn>" ~ ("model" if m.role == "assistant" else m.role) ~ "\n" -}}
{{- (system if loop.first else "") ~ (m.content | trim) ~ "<end_of_turn>\n" -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- "<start_of_turn>model\n" -}}{%- endif -%}
"#;

/// ChatML (`<|im_start|>role\n...<|im_end|>\n`), llama.cpp's fallback.
pub const CHATML_TEMPLATE: &str = r#"{%- for m in messages -%}
{{- "<|im_start|>" ~ m.role ~ "\n" ~ m.content ~ "<|im_end|>\n" -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- "<|im_start|>assistant\n" -}}{%- endif -%}
"#;
