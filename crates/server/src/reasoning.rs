//! Reasoning models on the server: the request fields and server flags that say how answers are
//! read for reasoning (a `<think>` block, or gpt-oss's harmony channels) and how long the model
//! may think (nucleus-runtime's `reasoning` does the reading and the forcing).
//!
//! * `reasoning_format` (`none` | `deepseek` | `harmony` | `auto`; `--reasoning-format`, default
//!   `auto`: the style the chat template writes, harmony's `<|channel|>` or `<think>`);
//! * `reasoning_budget` (tokens of thinking, -1 for no limit, 0 for none; `--reasoning-budget`),
//!   or `reasoning_effort` (OpenAI's: [`effort_budget`]); when the budget is spent the block's end
//!   is forced (after `--reasoning-budget-message`, if set);
//! * `chat_template_kwargs` (over `--chat-template-kwargs`): extra template variables, e.g.
//!   `{"enable_thinking": false}`.

use nucleus_runtime::ReasoningFormat;
use serde_json::{Map, Value};

use crate::body::scalars::Integer;
use crate::errors::ApiError;
use crate::fields::int_in;

/// The server's reasoning settings (flags).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReasoningDefaults {
    /// `--reasoning-format`.
    pub format: ReasoningFormat,
    /// `--reasoning-budget` (`None`: no limit).
    pub budget: Option<usize>,
    /// `--reasoning-budget-message`.
    pub budget_message: String,
    /// `--chat-template-kwargs`.
    pub template_kwargs: Map<String, Value>,
}

/// A chat request's reasoning fields, checked (`None`: the server's setting).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReasoningFields {
    /// `reasoning_format`.
    pub format: Option<ReasoningFormat>,
    /// `reasoning_budget` or `reasoning_effort`: `Some(None)` means no limit.
    pub budget: Option<Option<usize>>,
    /// `chat_template_kwargs`.
    pub template_kwargs: Map<String, Value>,
}

/// What one request runs with: its fields over the server's settings.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReasoningSettings {
    /// How answers are read.
    pub format: ReasoningFormat,
    /// Most tokens of thinking (`None`: no limit).
    pub budget: Option<usize>,
    /// Forced before the block's end when the budget is spent.
    pub budget_message: String,
    /// Template variables: the server's, then the request's.
    pub template_kwargs: Map<String, Value>,
}

impl ReasoningFields {
    /// The fields over `d`.
    pub fn over(&self, d: &ReasoningDefaults) -> ReasoningSettings {
        let mut template_kwargs = d.template_kwargs.clone();
        template_kwargs.extend(self.template_kwargs.iter().map(|(k, v)| (k.clone(), v.clone())));
        ReasoningSettings {
            format: self.format.unwrap_or(d.format),
            budget: self.budget.unwrap_or(d.budget),
            budget_message: d.budget_message.clone(),
            template_kwargs,
        }
    }
}

/// The thinking budget of an OpenAI reasoning effort (`Some(None)`: no limit; `None`: not an
/// effort): `none` and `minimal` 0 (no thinking), `low` 512, `medium` 2048, `high` 8192,
/// `xhigh` 16384 tokens, `max` no limit.
pub fn effort_budget(effort: &str) -> Option<Option<usize>> {
    match effort {
        "none" | "minimal" => Some(Some(0)),
        "low" => Some(Some(512)),
        "medium" => Some(Some(2048)),
        "high" => Some(Some(8192)),
        "xhigh" => Some(Some(16384)),
        "max" => Some(None),
        _ => None,
    }
}

/// The efforts [`effort_budget`] knows, for error messages.
pub const EFFORTS: &str = "'none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'";

/// Reads `reasoning_format`, `reasoning_budget`, `reasoning_effort` and `chat_template_kwargs`.
pub fn parse(
    format: Option<&str>,
    budget: Option<&Integer>,
    effort: Option<&str>,
    template_kwargs: Option<&Map<String, Value>>,
) -> Result<ReasoningFields, ApiError> {
    let format = format
        .map(|f| f.parse::<ReasoningFormat>().map_err(|e| ApiError::invalid_value("reasoning_format", e)))
        .transpose()?;
    let budget = match int_in("reasoning_budget", budget, -1, i32::MAX as i64)? {
        Some(-1) => Some(None),
        Some(n) => Some(Some(n as usize)),
        None => match effort {
            None => None,
            Some(e) => Some(effort_budget(e).ok_or_else(|| {
                ApiError::invalid_value("reasoning_effort", format!("'{e}' is not one of {EFFORTS}"))
            })?),
        },
    };
    Ok(ReasoningFields { format, budget, template_kwargs: template_kwargs.cloned().unwrap_or_default() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_over_defaults() {
        let d = ReasoningDefaults {
            budget: Some(100),
            template_kwargs: serde_json::json!({"a": 1, "b": 2}).as_object().cloned().unwrap(),
            ..Default::default()
        };
        let kw = serde_json::json!({"b": 3}).as_object().cloned().unwrap();
        let f = parse(Some("none"), None, Some("low"), Some(&kw)).unwrap();
        let s = f.over(&d);
        assert_eq!(s.format, ReasoningFormat::None);
        assert_eq!(s.budget, Some(512));
        assert_eq!(s.template_kwargs, serde_json::json!({"a": 1, "b": 3}).as_object().cloned().unwrap());
        assert_eq!(parse(None, None, None, None).unwrap().over(&d).budget, Some(100));
        let unlimited = Integer(serde_json::Number::from(-1));
        assert_eq!(parse(None, Some(&unlimited), Some("high"), None).unwrap().over(&d).budget, None);
        assert_eq!(parse(Some("r1"), None, None, None).unwrap_err().param.as_deref(), Some("reasoning_format"));
        assert_eq!(parse(None, None, Some("max"), None).unwrap().over(&d).budget, None);
        assert_eq!(parse(None, None, Some("xhigh"), None).unwrap().over(&d).budget, Some(16384));
        assert_eq!(parse(None, None, Some("most"), None).unwrap_err().param.as_deref(), Some("reasoning_effort"));
    }
}
