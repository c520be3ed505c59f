"""The Messages API through the official `anthropic` SDK (pinned): plain, streamed
(`messages.stream` and its final message), `beta.messages` (`?beta=true`), tools with a
tool_result turn, count_tokens, the typed errors and their shape, and a seeded answer equal
token for token to the chat endpoint's for the same conversation. ANTHROPIC_CASE=auth runs
against a server with an API key instead."""

import json
import os

import anthropic

from anthropic_common import MODEL, TIME, TOOLS, WEATHER, client, view
from common import client as openai_client, raw

c = client()
USER = [{"role": "user", "content": "Name three colors."}]


def expect(exc, status, kind, fn):
    try:
        fn()
    except exc as e:
        assert e.status_code == status, e
        body = e.body
        assert body["type"] == "error" and body["error"]["type"] == kind, body
        assert isinstance(body["error"]["message"], str) and body["error"]["message"], body
        return body["error"]["message"]
    raise AssertionError(f"no {exc.__name__}")


if os.environ.get("ANTHROPIC_CASE") == "auth":
    msg = expect(anthropic.AuthenticationError, 401, "authentication_error",
                 lambda: client(api_key="wrong").messages.create(model=MODEL, max_tokens=4, messages=USER))
    assert "x-api-key" in msg, msg
    # The right key in x-api-key (the SDK's way) and as a bearer token both pass.
    assert client().messages.create(model=MODEL, max_tokens=2, messages=USER).type == "message"
    s, _, data = raw("POST", "/v1/messages", {"max_tokens": 2, "messages": USER},
                     {"Authorization": f"Bearer {os.environ['NUCLEUS_API_KEY_FOR_TEST']}"})
    assert s == 200, data
    print("ok")
    raise SystemExit(0)

# Plain.
m = c.messages.create(model=MODEL, max_tokens=12, messages=USER, system="Answer briefly.", extra_body={"seed": 7})
assert m.type == "message" and m.role == "assistant" and m.id.startswith("msg_"), m
assert m.model == MODEL and m.stop_reason in ("end_turn", "max_tokens"), m
assert len(m.content) == 1 and m.content[0].type == "text" and m.content[0].text, m
assert 0 < m.usage.output_tokens <= 12 and m.usage.input_tokens + m.usage.cache_read_input_tokens > 0, m.usage

# The same request on the chat endpoint gives the same tokens.
chat = openai_client().chat.completions.create(
    model=MODEL, max_tokens=12, seed=7,
    messages=[{"role": "system", "content": "Answer briefly."}] + USER)
assert chat.choices[0].message.content == m.content[0].text, (chat, m)
assert chat.usage.completion_tokens == m.usage.output_tokens, (chat.usage, m.usage)

# Streamed: the SDK's assembled final message equals the unstreamed one.
# (This SDK release no longer has temperature / top_k / top_p arguments: they go in the body.)
kw = dict(model=MODEL, max_tokens=16, messages=USER, stop_sequences=["."], metadata={"user_id": "u1"},
          extra_body={"seed": 11, "min_p": 0.05, "temperature": 0.9, "top_k": 40, "top_p": 0.95})
whole = c.messages.create(**kw)
texts = []
with c.messages.stream(**kw) as s:
    for t in s.text_stream:
        texts.append(t)
    final = s.get_final_message()
assert view(final) == view(whole), (final, whole)
assert "".join(texts) == (whole.content[0].text if whole.content else "")
if whole.stop_reason == "stop_sequence":
    assert whole.stop_sequence == ".", whole

# The raw stream: Anthropic's events in order, with event: lines.
status, headers, data = raw("POST", "/v1/messages?beta=true", {"max_tokens": 4, "messages": USER, "stream": True})
assert status == 200 and headers["content-type"].startswith("text/event-stream"), (status, headers)
events = []
for frame in data.decode().strip().split("\n\n"):
    name, payload = frame.split("\n", 1)
    assert name.startswith("event: ") and payload.startswith("data: "), frame
    body = json.loads(payload[6:])
    assert body["type"] == name[7:], frame
    events.append(body["type"])
assert events[:2] == ["message_start", "ping"] and events[-2:] == ["message_delta", "message_stop"], events

# ?beta=true is the same route.
b = c.beta.messages.create(model=MODEL, max_tokens=4, messages=USER, betas=["interleaved-thinking-2025-05-14"],
                           thinking={"type": "enabled", "budget_tokens": 1024})
assert b.type == "message" and all(x.type == "text" for x in b.content), b

# Tools: a forced call, then its result.
ask = [{"role": "user", "content": "What is the weather in Paris right now?"}]
call = c.messages.create(model=MODEL, max_tokens=120, messages=ask, tools=TOOLS,
                         tool_choice={"type": "any", "disable_parallel_tool_use": True}, extra_body={"seed": 3})
assert call.stop_reason == "tool_use", call
uses = [x for x in call.content if x.type == "tool_use"]
assert len(uses) == 1 and uses[0].id.startswith("toolu_"), call
u = uses[0]
assert u.name in ("get_weather", "get_time") and isinstance(u.input, dict), u
if u.name == "get_weather":
    assert set(u.input) == {"city", "unit"} and u.input["unit"] in ("celsius", "fahrenheit"), u.input
named = c.messages.create(model=MODEL, max_tokens=120, messages=ask, tools=TOOLS,
                          tool_choice={"type": "tool", "name": "get_time"})
assert [x.name for x in named.content if x.type == "tool_use"] == ["get_time"], named
assert set(named.content[-1].input) == {"zone"}, named
turn = ask + [
    {"role": "assistant", "content": [x.model_dump(exclude_none=True) for x in call.content]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": u.id, "content": [{"type": "text", "text": "18 C, sunny"}],
         "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "Thanks. Summarize."}]},
]
answer = c.messages.create(model=MODEL, max_tokens=24, messages=turn, tools=TOOLS, tool_choice={"type": "none"})
assert answer.stop_reason in ("end_turn", "max_tokens") and answer.content[0].type == "text", answer
failed = c.messages.create(model=MODEL, max_tokens=4, messages=ask + turn[1:2] + [
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": u.id, "content": "timeout", "is_error": True}]}])
assert failed.type == "message", failed

# count_tokens: the rendered prompt, as /v1/messages counts it.
n = c.messages.count_tokens(model=MODEL, messages=USER, system="Answer briefly.")
again = c.messages.create(model=MODEL, max_tokens=1, messages=USER, system="Answer briefly.")
assert n.input_tokens == again.usage.input_tokens + again.usage.cache_read_input_tokens > 0, (n, again.usage)
with_tools = c.messages.count_tokens(model=MODEL, messages=ask, tools=TOOLS)
assert with_tools.input_tokens > c.messages.count_tokens(model=MODEL, messages=ask).input_tokens

# Typed errors, in Anthropic's shape, naming the field.
msg = expect(anthropic.BadRequestError, 400, "invalid_request_error", lambda: c.messages.create(
    model=MODEL, max_tokens=4, messages=[{"role": "user", "content": [
        {"type": "text", "text": "what is this?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}]}]))
assert "messages[0].content[1].type" in msg and "image" in msg, msg
msg = expect(anthropic.BadRequestError, 400, "invalid_request_error",
             lambda: c.messages.create(model=MODEL, max_tokens=4, messages=USER, extra_body={"temperature": 7}))
assert "temperature" in msg, msg
msg = expect(anthropic.BadRequestError, 400, "invalid_request_error", lambda: c.messages.create(
    model=MODEL, max_tokens=4, messages=USER, tools=[{"type": "web_search_20250305", "name": "web_search"}]))
assert "tools[0].type" in msg, msg
msg = expect(anthropic.BadRequestError, 400, "invalid_request_error", lambda: c.messages.create(
    model=MODEL, max_tokens=4, messages=USER, tools=[{**WEATHER, "input_schema": {"type": "object", "properties": {"a": {"$ref": "#/definitions/missing"}}}}]))
assert "tools[0].input_schema" in msg, msg
msg = expect(anthropic.BadRequestError, 400, "invalid_request_error", lambda: c.messages.create(
    model=MODEL, max_tokens=100000, messages=USER))
assert "max_tokens" in msg, msg
expect(anthropic.NotFoundError, 404, "not_found_error",
       lambda: c.messages.create(model="claude-opus-4-1", max_tokens=4, messages=USER))
expect(anthropic.NotFoundError, 404, "not_found_error",
       lambda: c.messages.count_tokens(model="claude-opus-4-1", messages=USER))
s, _, data = raw("POST", "/v1/messages", {"messages": USER})
body = json.loads(data)
assert s == 400 and body["type"] == "error" and "max_tokens" in body["error"]["message"], body
s, _, data = raw("POST", "/v1/messages", "[1]")
assert s == 400 and json.loads(data)["error"]["type"] == "invalid_request_error", data
# Unknown routes stay OpenAI-shaped.
s, _, data = raw("POST", "/v1/messages/nope", {})
assert s == 404 and set(json.loads(data)) == {"error"}, data
print("ok")
