"""Reasoning through the official client, with SmolLM2 under a template whose generation prompt
opens a <think> block (testdata/templates/think-chatml.jinja) and a thinking budget: the block
goes to `reasoning_content` (and `reasoning`), the budget forces its end, constraints start when
it ends (a `{` while thinking does not start them), the same answer streamed and whole, and
what the fields and /metrics report."""

import json

import openai

from common import done, expect_api_error, raw
from reasoning_common import SCHEMA, ask, required_tool_call_after_thinking, same, streamed, thought


def metric(name):
    _, _, body = raw("GET", "/metrics")
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


# The budget holds: 12 tokens of thinking, then the end is forced; both names carry the text.
forced_before = metric("nucleus_reasoning_forced_ends_total")
r = ask(reasoning_budget=12, temperature=0.8)
m = r.choices[0].message
assert thought(m) and m.model_extra.get("reasoning") == thought(m), m
assert "<think>" not in (m.content or "") and "</think>" not in (m.content or ""), m
details = r.usage.completion_tokens_details
assert details is not None and details.reasoning_tokens >= 12, r.usage
assert details.reasoning_tokens < r.usage.completion_tokens or r.choices[0].finish_reason == "length", r.usage
assert metric("nucleus_reasoning_forced_ends_total") >= forced_before + 1
same(r, streamed(reasoning_budget=12, temperature=0.8))
done("budget forces the end")

# Constraints start when thinking ends: json_schema gives valid JSON in content after free
# thinking, also with '{' made likely while thinking (it must not start the grammar).
for seed, bias in [(1, {}), (2, {}), (4, "brace")]:
    kw = dict(seed=seed, temperature=0.9, reasoning_budget=24,
              response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": SCHEMA, "strict": True}})
    if bias:
        kw["logit_bias"] = {"{": 12}  # llama-server's form: a text key
    r = ask(**kw)
    m = r.choices[0].message
    assert thought(m), m
    if bias:
        assert "{" in thought(m), thought(m)
    if r.choices[0].finish_reason == "stop":
        assert m.content.strip().startswith("{"), (m.content, thought(m))
        v = json.loads(m.content)
        assert set(v) == {"name", "n"} and isinstance(v["n"], int), v
    same(r, streamed(**kw))
done("json_schema after thinking")

# A required tool call after thinking.
required_tool_call_after_thinking()
done("tool call after thinking")

# Budget 0: the block is closed at once; reasoning_effort maps to a budget.
r = ask(reasoning_budget=0)
assert not thought(r.choices[0].message), r
assert r.usage.completion_tokens_details.reasoning_tokens > 0, r.usage  # the forced end's tokens
r = ask(reasoning_effort="none")
assert not thought(r.choices[0].message), r
done("budget 0 and reasoning_effort")

# Template switches: enable_thinking false closes the block in the prompt.
r = ask(chat_template_kwargs={"enable_thinking": False}, temperature=0)
assert not thought(r.choices[0].message) and r.choices[0].message.content, r
assert r.usage.completion_tokens_details.reasoning_tokens == 0, r.usage
done("chat_template_kwargs")

# reasoning_format none: everything is content and nothing is forced, as before.
r = ask(reasoning_format="none", reasoning_budget=8)
assert not thought(r.choices[0].message) and r.choices[0].message.content, r
assert r.usage.completion_tokens_details is None and r.usage.completion_tokens > 8, r.usage
done("reasoning_format none")

# Determinism: the same seeded request gives the same thinking and answer (cache warm).
a, b = ask(reasoning_budget=20, temperature=1.0, seed=9), ask(reasoning_budget=20, temperature=1.0, seed=9)
assert thought(a.choices[0].message) == thought(b.choices[0].message), (a, b)
assert a.choices[0].message.content == b.choices[0].message.content, (a, b)
done("seeded reasoning is reproducible")

# Bad fields are 400s naming them.
for kw, param in [({"reasoning_format": "r1"}, "reasoning_format"), ({"reasoning_budget": -2}, "reasoning_budget"),
                  ({"reasoning_effort": "most"}, "reasoning_effort"), ({"chat_template_kwargs": 3}, "chat_template_kwargs")]:
    expect_api_error(openai.BadRequestError, 400, lambda: ask(**kw), param=param)
done("reasoning errors")
