"""gpt-oss's harmony format through the official clients, with SmolLM2 under a template in its
style whose generation prompt opens the analysis channel (testdata/templates/harmony-chatml.jinja,
recognised as harmony from the template): the analysis channel goes to `reasoning_content` (and
the Responses API's reasoning item), the budget forces the end of analysis and the final
channel's header, constraints start in the final channel (a `{` in analysis does not start
them), the same answer streamed and whole, and earlier thinking reaches the template as
`message.thinking`."""

import json

from common import MODEL, done
from reasoning_common import ASK, SCHEMA, ask, c, required_tool_call_after_thinking, same, streamed, thought

MARKERS = ("<|channel|>", "<|message|>", "<|end|>", "<|start|>")


def no_markers(text):
    assert not any(m in (text or "") for m in MARKERS[:2]), text


# The budget forces the end of analysis and opens the final channel; no marker reaches content.
r = ask(reasoning_budget=12, temperature=0.8)
m = r.choices[0].message
assert thought(m) and m.model_extra.get("reasoning") == thought(m), m
no_markers(m.content)
no_markers(thought(m))
assert r.usage.completion_tokens_details.reasoning_tokens >= 12, r.usage
same(r, streamed(reasoning_budget=12, temperature=0.8))
done("harmony: budget forces the final channel")

# json_schema in the final channel after free analysis, also with '{' made likely in analysis.
# (Under this prompt SmolLM2 does not write its end-of-turn token, so the answer ends when the
# grammar is complete, after the whitespace it allows past the object: room for that is given,
# an answer that ended is parsed, and at least one must.)
parsed = 0
for seed, bias in [(1, False), (2, False), (4, True), (5, False)]:
    kw = dict(seed=seed, temperature=0.9, reasoning_budget=24, max_tokens=160,
              response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": SCHEMA, "strict": True}})
    if bias:
        kw["logit_bias"] = {"{": 12}
    r = ask(**kw)
    m = r.choices[0].message
    assert thought(m), m
    if bias:
        assert "{" in thought(m), thought(m)
    no_markers(m.content)
    assert m.content.lstrip().startswith("{"), (m.content, thought(m))
    if r.choices[0].finish_reason == "stop":
        v = json.loads(m.content)
        assert set(v) == {"name", "n"} and isinstance(v["n"], int), v
        parsed += 1
    same(r, streamed(**kw))
assert parsed >= 1, parsed
done("harmony: json_schema in the final channel")

# A required tool call in the final channel after analysis.
required_tool_call_after_thinking()
done("harmony: tool call after analysis")

# Budget 0: the closed analysis is forced at once; enable_thinking false opens the final channel.
# (SmolLM2 spells the forced markers in about 20 plain-text tokens; they count as reasoning tokens.)
r = ask(reasoning_budget=0, max_tokens=48)
assert not thought(r.choices[0].message) and r.choices[0].message.content, r
assert r.usage.completion_tokens_details.reasoning_tokens > 0, r.usage
no_markers(r.choices[0].message.content)
r = ask(chat_template_kwargs={"enable_thinking": False}, temperature=0, max_tokens=20)
assert not thought(r.choices[0].message) and r.choices[0].message.content, r
assert r.usage.completion_tokens_details.reasoning_tokens == 0, r.usage
done("harmony: budget 0 and enable_thinking false")

# The format by name; none leaves the channel markers in content, as before.
r = ask(reasoning_format="harmony", reasoning_budget=8)
assert thought(r.choices[0].message), r
r = ask(reasoning_format="none", reasoning_budget=8)
assert not thought(r.choices[0].message) and r.usage.completion_tokens_details is None, r
done("harmony: reasoning_format")

# Responses: a reasoning item before the message, streamed equal to whole.
kw = dict(model=MODEL, input="Give me a name and a number.", max_output_tokens=60,
          extra_body={"reasoning_budget": 10, "seed": 3})
whole = c.responses.create(**kw)
kinds = [o.type for o in whole.output]
assert kinds[0] == "reasoning" and "message" in kinds, kinds
# (SmolLM2 rarely ends its turn under this prompt: the response is usually cut by the limit, so
# the terminal event is response.incomplete, whose response is compared.)
with c.responses.stream(**kw) as s:
    events = list(s)
final = events[-1].response
assert events[-1].type in ("response.completed", "response.incomplete"), events[-1].type
assert any(e.type == "response.reasoning_text.delta" for e in events), [e.type for e in events]
assert [o.model_dump(exclude={"id"}) for o in final.output] == [o.model_dump(exclude={"id"}) for o in whole.output]
done("harmony: responses reasoning item")

# Earlier thinking reaches the template as message.thinking (measured by the prompt's tokens).
THOUGHT = "The user wants a name and a number, so I pick Ada and 7."


def prompt_tokens(assistant):
    msgs = ASK + [dict(role="assistant", **assistant), {"role": "user", "content": "Another?"}]
    return ask(messages=msgs, max_tokens=1).usage.prompt_tokens


plain, named = prompt_tokens({"content": "Ada 7"}), prompt_tokens({"content": "Ada 7", "reasoning_content": THOUGHT})
assert named > plain + 10, (plain, named)
done("harmony: earlier thinking as message.thinking")
