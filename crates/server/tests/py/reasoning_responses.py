"""Reasoning on /v1/responses through the official client, with SmolLM2 under the thinking
template (testdata/templates/think-chatml.jinja): the thinking is a `reasoning` output item
(one `reasoning_text` part) before the message or calls, streamed as
response.reasoning_text.delta / .done inside content_part events; usage counts reasoning
tokens; `reasoning.effort` is the budget; a reasoning item in a later turn's input is taken
(and dropped by this template, as DeepSeek-R1's drop earlier thinking)."""

import json

import openai

from common import MODEL, client, done, expect_api_error

c = client()
SCHEMA = {"type": "object", "additionalProperties": False, "required": ["name", "n"],
          "properties": {"name": {"type": "string", "maxLength": 12}, "n": {"type": "integer"}}}
WEATHER = {"type": "function", "name": "get_weather", "strict": True,
           "parameters": {"type": "object", "additionalProperties": False, "required": ["city"],
                          "properties": {"city": {"type": "string", "maxLength": 20}}}}


def ask(budget=12, **kw):
    kw.setdefault("model", MODEL)
    kw.setdefault("input", "Give me a name and a number.")
    kw.setdefault("max_output_tokens", 80)
    extra = kw.setdefault("extra_body", {})
    extra.setdefault("seed", 3)
    if budget is not None:
        extra.setdefault("reasoning_budget", budget)
    return c.responses.create(**kw)


def kinds(r):
    return [o.type for o in r.output]


def thinking(r):
    items = [o for o in r.output if o.type == "reasoning"]
    assert len(items) <= 1, r.output
    if not items:
        return None
    item = items[0]
    assert item.summary == [] and len(item.content) == 1 and item.content[0].type == "reasoning_text", item
    assert item.id.startswith("rs_"), item
    return item.content[0].text


# The thinking is a reasoning item before the message; the budget forced its end.
r = ask(temperature=0.8)
assert kinds(r) == ["reasoning", "message"], r.output
assert thinking(r) and "<think>" not in r.output_text and "</think>" not in r.output_text, r
assert r.output[0].status == "completed", r.output[0]
u = r.usage
assert u.output_tokens_details.reasoning_tokens >= 12 and u.output_tokens_details.reasoning_tokens < u.output_tokens, u
done("reasoning item before the message")

# Streamed: the events OpenAI sends for reasoning text, in order, and the same response.
with c.responses.stream(model=MODEL, input="Give me a name and a number.", max_output_tokens=80, temperature=0.8,
                        extra_body={"seed": 3, "reasoning_budget": 12}) as s:
    events = list(s)
    final = s.get_final_response()
types = [e.type for e in events]
first = types.index("response.output_item.added")
assert types[first:first + 3] == ["response.output_item.added", "response.content_part.added",
                                  "response.reasoning_text.delta"], types
assert events[first].item.type == "reasoning" and events[first + 1].part.type == "reasoning_text", events[first:first + 2]
deltas = "".join(e.delta for e in events if e.type == "response.reasoning_text.delta")
done_ev = next(e for e in events if e.type == "response.reasoning_text.done")
assert deltas == done_ev.text == thinking(r), (deltas, done_ev.text, thinking(r))
assert types.index("response.reasoning_text.done") < types.index("response.output_text.delta"), types
assert [e.sequence_number for e in events] == list(range(len(events)))
assert thinking(final) == thinking(r) and final.output_text == r.output_text, (final, r)
assert final.usage.output_tokens_details.reasoning_tokens == u.output_tokens_details.reasoning_tokens
done("reasoning streamed")

# A structured answer after thinking: valid JSON in the message, thinking in the reasoning item.
for seed in (1, 2):
    kw = dict(temperature=0.9, extra_body={"seed": seed, "reasoning_budget": 24},
              text={"format": {"type": "json_schema", "name": "x", "schema": SCHEMA, "strict": True}})
    r = ask(**kw)
    assert kinds(r) == ["reasoning", "message"] and thinking(r), r.output
    if r.status == "completed":
        v = json.loads(r.output_text)
        assert set(v) == {"name", "n"}, v
done("json_schema after thinking")

# A required call after thinking: reasoning item, then the function_call.
r = ask(input="Weather in Oslo?", tools=[WEATHER], tool_choice="required", parallel_tool_calls=False,
        temperature=0.9, extra_body={"seed": 5, "reasoning_budget": 16})
assert kinds(r) == ["reasoning", "function_call"], r.output
assert set(json.loads(r.output[1].arguments)) == {"city"}, r.output[1]
call = r.output[1]
done("call after thinking")

# The thinking of a turn goes back as a reasoning input item: chained by id, or sent back as
# the SDK's own output items (with the call's output). This template drops earlier thinking,
# so the prompt is the same with or without it.
r2 = ask(previous_response_id=r.id,
         input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}])
assert r2.status in ("completed", "incomplete") and kinds(r2)[0] == "reasoning", r2.output
manual = [{"role": "user", "content": "Weather in Oslo?"}] + [o.model_dump(exclude_none=True) for o in r.output] \
    + [{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}]
r3 = ask(input=manual, tools=[WEATHER])
without = [m for m in manual if m.get("type") != "reasoning"]
r4 = ask(input=without, tools=[WEATHER])
assert r3.usage.input_tokens == r4.usage.input_tokens, (r3.usage, r4.usage)
assert r3.output_text == r4.output_text and thinking(r3) == thinking(r4), (r3.output, r4.output)
done("reasoning input items")

# reasoning.effort is the budget: none means no thinking (no reasoning item).
r = ask(budget=None, reasoning={"effort": "none"})
assert kinds(r) == ["message"], r.output
assert r.reasoning and r.reasoning.effort == "none", r.reasoning
r = ask(budget=None, reasoning={"effort": "low", "summary": "auto"}, max_output_tokens=16)
assert kinds(r)[0] == "reasoning" and 0 < r.usage.output_tokens_details.reasoning_tokens <= 16, r
if kinds(r) == ["reasoning"] and r.status == "incomplete":  # cut while thinking
    assert r.output[0].status == "incomplete" and r.incomplete_details.reason == "max_output_tokens", r
done("reasoning.effort")

# reasoning_format none: no reasoning item; the block is message text.
r = ask(budget=None, extra_body={"reasoning_format": "none", "seed": 3}, max_output_tokens=12)
assert kinds(r) == ["message"] and r.usage.output_tokens_details.reasoning_tokens == 0, r
done("reasoning_format none")

for kw, param in [({"reasoning": {"effort": "huge"}}, "reasoning.effort"),
                  ({"reasoning": {"effort": 3}}, "reasoning.effort"),
                  ({"input": [{"type": "reasoning", "summary": [], "content": [{"type": "input_image"}]},
                              {"role": "user", "content": "hi"}]}, "input[0].content[0].type")]:
    expect_api_error(openai.BadRequestError, 400, lambda: ask(**kw), param=param)
done("reasoning errors")
