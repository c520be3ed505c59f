"""What the reasoning tests share: one client, a question with a schema and a tool to constrain
its answer, and `ask` / `streamed` / `same` to send it whole and streamed and compare the two
(`reasoning_content` included)."""

import json

from openai.lib.streaming.chat import ChatCompletionStreamState

from common import MODEL, client

c = client()
ASK = [{"role": "user", "content": "Give me a name and a number."}]
SCHEMA = {"type": "object", "additionalProperties": False, "required": ["name", "n"],
          "properties": {"name": {"type": "string", "maxLength": 12}, "n": {"type": "integer"}}}
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "strict": True,
    "parameters": {"type": "object", "additionalProperties": False, "required": ["city"],
                   "properties": {"city": {"type": "string", "maxLength": 20}}}}}
EXTRA = ("reasoning_budget", "reasoning_format", "chat_template_kwargs")


def ask(**kw):
    extra = {k: kw.pop(k) for k in EXTRA if k in kw}
    if extra:
        kw["extra_body"] = extra
    kw.setdefault("model", MODEL)
    kw.setdefault("messages", ASK)
    kw.setdefault("max_tokens", 80)
    kw.setdefault("seed", 3)
    return c.chat.completions.create(**kw)


def thought(msg):
    return (msg.model_extra or {}).get("reasoning_content")


def streamed(**kw):
    state = ChatCompletionStreamState()
    for chunk in ask(**kw, stream=True, stream_options={"include_usage": True}):
        state.handle_chunk(chunk)
    return state.current_completion_snapshot


def same(whole, snap):
    for a, b in zip(whole.choices, snap.choices):
        assert thought(a.message) == thought(b.message), (a, b)
        assert a.message.content == b.message.content, (a, b)
        calls = lambda m: [(t.function.name, t.function.arguments) for t in m.tool_calls or []]  # noqa: E731
        assert calls(a.message) == calls(b.message) and a.finish_reason == b.finish_reason, (a, b)
    assert whole.usage.completion_tokens == snap.usage.completion_tokens, (whole.usage, snap.usage)


def required_tool_call_after_thinking():
    """With the budget spent, a required tool call follows the thinking: whole and streamed alike."""
    for seed in (1, 5):
        kw = dict(seed=seed, temperature=0.9, reasoning_budget=16, tools=[WEATHER], tool_choice="required",
                  parallel_tool_calls=False, messages=[{"role": "user", "content": "Weather in Oslo?"}])
        r = ask(**kw)
        ch = r.choices[0]
        assert thought(ch.message) and ch.message.tool_calls, ch
        assert ch.finish_reason == "tool_calls", ch
        assert set(json.loads(ch.message.tool_calls[0].function.arguments)) == {"city"}, ch
        same(r, streamed(**kw))
