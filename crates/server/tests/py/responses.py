"""The Responses API (`/v1/responses`) through the official `openai` SDK in strict mode: plain
and streamed answers, a seeded answer equal to the chat endpoint's for the same conversation,
`max_output_tokens` cuts, function tools with a `function_call_output` turn, `text.format`
json_schema, `previous_response_id` chaining (equal to chat over the whole conversation),
retrieve / delete by id, 404s and 400s naming the Responses field."""

import json

import openai

from common import MODEL, client, done, expect_api_error, raw

c = client()
TOOLS = [{
    "type": "function", "name": "get_weather", "description": "Current weather in a city.", "strict": True,
    "parameters": {"type": "object", "additionalProperties": False, "required": ["city"],
                   "properties": {"city": {"type": "string", "maxLength": 20}}},
}]
SCHEMA = {"type": "object", "additionalProperties": False, "required": ["name", "age"],
          "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"type": "integer"}}}


def text_of(r):
    return "".join(p.text for o in r.output if o.type == "message" for p in o.content)


def final_of(s, events):
    """The assembled response: the SDK's (it assembles only completed streams), else the
    terminal event's."""
    if events[-1].type == "response.completed":
        return s.get_final_response()
    return events[-1].response


def chat_text(messages, **kw):
    r = c.chat.completions.create(model=MODEL, messages=messages, **kw)
    return r.choices[0].message.content


# Plain: the response object as the SDK types it.
r = c.responses.create(model=MODEL, input="Say hello.", max_output_tokens=12, temperature=0, extra_body={"seed": 1})
assert r.id.startswith("resp_") and r.object == "response", r
assert r.status in ("completed", "incomplete"), r.status
assert r.output and r.output[0].type == "message" and r.output[0].role == "assistant", r.output
assert r.output[0].content[0].type == "output_text" and r.output[0].content[0].annotations == []
assert r.usage.input_tokens > 0 and 0 < r.usage.output_tokens <= 12, r.usage
assert r.usage.total_tokens == r.usage.input_tokens + r.usage.output_tokens
assert r.usage.output_tokens_details.reasoning_tokens == 0
assert r.output_text == text_of(r)
assert r.tools == [] and r.tool_choice == "auto" and r.parallel_tool_calls is True
done("plain")

# The token limit cuts: incomplete, with the reason.
r = c.responses.create(model=MODEL, input="Write a long story about a dragon.", max_output_tokens=3)
assert r.status == "incomplete" and r.incomplete_details.reason == "max_output_tokens", r
assert r.usage.output_tokens == 3 and r.max_output_tokens == 3
done("max_output_tokens")

# A seeded answer is the chat endpoint's for the same conversation (same engine and chain).
for seed in (3, 77):
    kw = dict(temperature=1.0, top_p=0.9)
    conv = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Name a color."}]
    r = c.responses.create(model=MODEL, instructions="You are terse.", input="Name a color.",
                           max_output_tokens=16, extra_body={"seed": seed}, **kw)
    assert text_of(r) == chat_text(conv, max_tokens=16, seed=seed, **kw), (text_of(r), seed)
    # Sampling extensions are the chat endpoint's.
    ext = {"top_k": 5, "min_p": 0.1}
    r = c.responses.create(model=MODEL, input=conv, max_output_tokens=16, extra_body={"seed": seed, **ext}, **kw)
    assert text_of(r) == chat_text(conv, max_tokens=16, seed=seed, extra_body=ext, **kw)
done("seeded equals chat")

# Streaming: the typed events in order, numbered; the SDK's assembly equals the whole answer.
kw = dict(model=MODEL, input="Tell me about cats.", max_output_tokens=20, temperature=0.8, extra_body={"seed": 5})
with c.responses.stream(**kw) as s:
    events = list(s)
    final = final_of(s, events)
types = [e.type for e in events]
assert types[:4] == ["response.created", "response.in_progress", "response.output_item.added",
                     "response.content_part.added"], types
assert types[-4:] == ["response.output_text.done", "response.content_part.done", "response.output_item.done",
                      "response.incomplete" if final.status == "incomplete" else "response.completed"], types
assert [e.sequence_number for e in events] == list(range(len(events)))
deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
whole = c.responses.create(**kw)
assert deltas == text_of(final) == text_of(whole), (deltas, text_of(whole))
assert final.usage.output_tokens == whole.usage.output_tokens
done("stream")

# Function tools: a call, then its output in the next turn.
r = c.responses.create(model=MODEL, input="What's the weather in Paris?", tools=TOOLS, tool_choice="required",
                       max_output_tokens=60, temperature=0)
calls = [o for o in r.output if o.type == "function_call"]
assert r.status == "completed" and calls, r.output
call = calls[0]
assert call.name == "get_weather" and call.call_id and call.id.startswith("fc_") and call.status == "completed"
args = json.loads(call.arguments)
assert set(args) == {"city"} and len(args["city"]) <= 20, args
assert r.tools[0].name == "get_weather" and r.tool_choice == "required"
turn2 = [{"role": "user", "content": "What's the weather in Paris?"},
         {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments},
         {"type": "function_call_output", "call_id": call.call_id, "output": "sunny, 21 C"}]
r2 = c.responses.create(model=MODEL, input=turn2, tools=TOOLS, max_output_tokens=30, temperature=0)
assert r2.status in ("completed", "incomplete") and r2.output, r2
# The same turn as chat messages gives the same answer.
chat_tools = [{"type": "function", "function": {k: v for k, v in TOOLS[0].items() if k != "type"}}]
m = c.chat.completions.create(model=MODEL, tools=chat_tools, max_tokens=30, temperature=0, messages=[
    turn2[0],
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": call.call_id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}]},
    {"role": "tool", "tool_call_id": call.call_id, "content": "sunny, 21 C"}]).choices[0].message
r2_calls = [o for o in r2.output if o.type == "function_call"]
assert (m.content or "") == text_of(r2) and len(m.tool_calls or []) == len(r2_calls), (m, r2.output)
# Streamed calls: argument deltas and done.
named = {"type": "function", "name": "get_weather"}
with c.responses.stream(model=MODEL, input="Weather in Oslo?", tools=TOOLS, tool_choice=named,
                        max_output_tokens=60, temperature=0) as s:
    events = list(s)
    final = final_of(s, events)
types = [e.type for e in events]
assert "response.function_call_arguments.delta" in types and "response.function_call_arguments.done" in types
argd = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
fc = [o for o in final.output if o.type == "function_call"][0]
assert fc.arguments == argd and json.loads(argd)["city"], argd
assert [e for e in events if e.type == "response.function_call_arguments.done"][0].arguments == argd
done("tools")

# text.format json_schema: the output follows the schema.
r = c.responses.create(model=MODEL, input="Invent a person.", max_output_tokens=60, temperature=0,
                       text={"format": {"type": "json_schema", "name": "person", "schema": SCHEMA, "strict": True}})
obj = json.loads(r.output_text)
assert set(obj) == {"name", "age"} and isinstance(obj["age"], int), obj
assert r.text.format.type == "json_schema" and r.text.format.name == "person"
r = c.responses.create(model=MODEL, input="A JSON object please.", max_output_tokens=40, temperature=0,
                       text={"format": {"type": "json_object"}})
assert r.status == "incomplete" or isinstance(json.loads(r.output_text), dict), r.output_text
done("text.format")

# previous_response_id: the stored conversation plus the new input, exactly chat's prompt.
r1 = c.responses.create(model=MODEL, instructions="Be brief.", input="My name is Bob.", max_output_tokens=10,
                        temperature=0, metadata={"turn": "1"})
assert r1.metadata == {"turn": "1"}
r2 = c.responses.create(model=MODEL, instructions="Be brief.", previous_response_id=r1.id,
                        input="What is my name?", max_output_tokens=10, temperature=0)
assert r2.previous_response_id == r1.id
conv = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "My name is Bob."},
        {"role": "assistant", "content": text_of(r1)}, {"role": "user", "content": "What is my name?"}]
assert text_of(r2) == chat_text(conv, max_tokens=10, temperature=0), (text_of(r2), conv)
# The chained turn starts from the cached prefix.
assert r2.usage.input_tokens_details.cached_tokens > 0, r2.usage
r3 = c.responses.create(model=MODEL, previous_response_id=r2.id, input=[{"role": "user", "content": "And again?"}],
                        max_output_tokens=5, temperature=0)
assert r3.status in ("completed", "incomplete")
# Retrieve: the response as answered.
got = c.responses.retrieve(r1.id)
assert got.model_dump() == r1.model_dump(), (got, r1)
done("previous_response_id")

# store: false keeps nothing; delete forgets; unknown ids are 404 in OpenAI's shape.
r = c.responses.create(model=MODEL, input="hi", max_output_tokens=2, store=False)
assert r.store is False
expect_api_error(openai.NotFoundError, 404, lambda: c.responses.retrieve(r.id), code="not_found")
expect_api_error(openai.NotFoundError, 404, lambda: c.responses.retrieve("resp_unknown"), code="not_found")
expect_api_error(openai.NotFoundError, 404, lambda: c.responses.create(
    model=MODEL, input="hi", previous_response_id="resp_unknown"), param="previous_response_id")
c.responses.delete(r1.id)
expect_api_error(openai.NotFoundError, 404, lambda: c.responses.retrieve(r1.id))
status, _, _ = raw("DELETE", f"/v1/responses/{r1.id}")
assert status == 404
done("store, delete, 404")

# Bad input: 400 naming the Responses field.
bad = c.with_options(max_retries=0)
cases = [
    # A hosted tool the request forces (one the model may leave unused is left out).
    (dict(input="x", tools=[{"type": "web_search"}], tool_choice="required"), "tools[0].type"),
    (dict(input="x", tools=[{"type": "local_shell"}]), "tools[0].type"),
    (dict(input=[{"role": "user", "content": [{"type": "input_image", "image_url": "http://x/y.png"}]}]),
     "input[0].content[0].type"),
    (dict(input=[{"type": "item_reference", "id": "x"}]), "input[0].type"),
    (dict(input=[{"type": "function_call_output", "output": "x"}]), "input[0].call_id"),
    (dict(input="x", temperature=5), "temperature"),
    (dict(input="x", max_output_tokens=0), "max_output_tokens"),
    (dict(input="x", text={"format": {"type": "json_schema", "name": "n", "schema": {"type": "nope"}}}),
     "text.format"),
    (dict(input="x", tools=[dict(TOOLS[0], parameters={"type": "object", "properties": 3})]), "tools[0].parameters"),
    (dict(input="x", tool_choice={"type": "function", "name": "nope"}, tools=TOOLS), "tool_choice"),
    (dict(input="x", include=["file_search_call.results"]), "include[0]"),
    (dict(input="x", background=True), "background"),
    (dict(), "input"),
    (dict(input="x", extra_body={"messages": []}), "messages"),
    (dict(input="x", extra_body={"max_tokens": 3}), "max_tokens"),
    (dict(input="x", extra_body={"min_p": 7}), "min_p"),
]
for kw, param in cases:
    expect_api_error(openai.BadRequestError, 400, lambda: bad.responses.create(model=MODEL, **kw), param=param)
expect_api_error(openai.NotFoundError, 404, lambda: c.responses.create(model="nope", input="x"), param="model")
done("400s")
