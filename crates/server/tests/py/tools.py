"""Tool calling through the official client: required / named / auto / none choices, single
and parallel calls, arguments that always parse and match their schema, streamed
`delta.tool_calls` assembled by the SDK's stream helper (equal to the whole response), a tool
result round trip, `parse()` with a Pydantic tool, and the 400s. TOOL_FORMAT says which
template the server renders with (`generic`: SmolLM2's own; `hermes`: a Hermes-style one)."""

import json
import os

import openai
import pydantic
from openai.lib.streaming.chat import ChatCompletionStreamState

from common import MODEL, client, done, expect_api_error

FORMAT = os.environ.get("TOOL_FORMAT", "generic")
c = client()

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "minLength": 1, "maxLength": 20},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city", "unit"],
            "additionalProperties": False,
        },
        "strict": True,
    },
}
TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "The time now in a time zone.",
        "parameters": {
            "type": "object",
            "properties": {"zone": {"type": "string", "maxLength": 16}},
            "required": ["zone"],
            "additionalProperties": False,
        },
    },
}
TOOLS = [WEATHER, TIME]
ASK = [{"role": "user", "content": "What is the weather in Paris right now?"}]
TWO_ASK = [{"role": "user", "content": "What's the weather in Paris and the time in Tokyo?"}]


def check_call(call):
    """A call names a known tool and its arguments parse and match that tool's schema."""
    assert call.type == "function" and call.id, call
    args = json.loads(call.function.arguments)
    if call.function.name == "get_weather":
        assert set(args) == {"city", "unit"}, args
        assert isinstance(args["city"], str) and 1 <= len(args["city"]) <= 20, args
        assert args["unit"] in ("celsius", "fahrenheit"), args
    elif call.function.name == "get_time":
        assert set(args) == {"zone"} and isinstance(args["zone"], str) and len(args["zone"]) <= 16, args
    else:
        raise AssertionError(f"unknown tool {call.function.name}")
    return args


def complete_calls(ch):
    """A choice's calls less the last when the token limit cut it."""
    calls = ch.message.tool_calls or []
    return calls[:-1] if ch.finish_reason == "length" else calls


def ask(**kw):
    kw.setdefault("model", MODEL)
    kw.setdefault("messages", ASK)
    kw.setdefault("tools", TOOLS)
    kw.setdefault("max_tokens", 80)
    kw.setdefault("temperature", 0)
    return c.chat.completions.create(**kw)


# required: at least one call, constrained from the first token; seeded hot sampling too.
# With parallel calls allowed a small model may go on listing calls until max_tokens ("length";
# the last call is then cut, with its partial arguments); with one call allowed it always ends.
for seed, temp, parallel in [(7, 1.2, True), (1, 0.0, False), (8, 1.2, False)]:
    r = ask(tool_choice="required", seed=seed, temperature=temp, parallel_tool_calls=parallel)
    ch = r.choices[0]
    assert ch.finish_reason == "tool_calls" or (parallel and ch.finish_reason == "length"), r
    assert ch.message.tool_calls, r
    for call in complete_calls(ch):
        check_call(call)
done(f"{FORMAT}: required")

# a named function: exactly one call to it, then the answer ends (parallel_tool_calls, true by
# default, allows several calls only under auto and required).
for seed, parallel in [(3, None), (4, None), (1, True), (2, False)]:
    extra = {} if parallel is None else {"parallel_tool_calls": parallel}
    r = ask(tool_choice={"type": "function", "function": {"name": "get_weather"}}, seed=seed, temperature=1.0,
            messages=TWO_ASK, max_tokens=120, **extra)
    ch = r.choices[0]
    assert ch.finish_reason == "tool_calls", r
    assert [t.function.name for t in ch.message.tool_calls] == ["get_weather"], r
    check_call(ch.message.tool_calls[0])
done(f"{FORMAT}: named")

# parallel_tool_calls false: one call only; ids are unique when there are several.
for seed in (2, 3):
    r = ask(tool_choice="required", parallel_tool_calls=False, seed=seed, temperature=1.0)
    assert len(r.choices[0].message.tool_calls) == 1, r
    check_call(r.choices[0].message.tool_calls[0])
r = ask(tool_choice="required", seed=5, temperature=1.0, n=2, max_tokens=60)
for ch in r.choices:
    ids = [t.id for t in ch.message.tool_calls]
    assert len(set(ids)) == len(ids), ids
done(f"{FORMAT}: parallel_tool_calls")

# auto: either an answer or valid calls, with the matching finish reason.
kinds = set()
for seed in range(1, 4):
    r = ask(tool_choice="auto", seed=seed, temperature=1.0, max_tokens=40)
    ch = r.choices[0]
    if ch.message.tool_calls:
        assert ch.finish_reason in ("tool_calls", "length"), r
        for call in complete_calls(ch):
            check_call(call)
        kinds.add("call")
    else:
        assert ch.finish_reason in ("stop", "length") and isinstance(ch.message.content, str), r
        kinds.add("text")
r = ask(seed=1, max_tokens=40)  # tool_choice defaults to auto
assert r.choices[0].finish_reason in ("stop", "length", "tool_calls"), r
print(f"auto gave: {sorted(kinds)}")
done(f"{FORMAT}: auto")

# none: plain text, never calls.
r = ask(tool_choice="none", max_tokens=16)
ch = r.choices[0]
assert not ch.message.tool_calls and isinstance(ch.message.content, str), r
assert ch.finish_reason in ("stop", "length"), r
done(f"{FORMAT}: none")

# Streaming: the first piece of a call has index, id, type and name; later pieces carry only
# arguments; the SDK's stream helper assembles exactly the whole response's calls.
whole = ask(tool_choice="required", seed=11, temperature=0.9, parallel_tool_calls=False)
chunks = list(ask(tool_choice="required", seed=11, temperature=0.9, parallel_tool_calls=False, stream=True))
seen = {}
finish = None
for chunk in chunks:
    for choice in chunk.choices:
        finish = choice.finish_reason or finish
        for tc in choice.delta.tool_calls or []:
            if tc.index not in seen:
                assert tc.id and tc.type == "function" and tc.function.name, tc
                assert tc.function.arguments == "", tc
                seen[tc.index] = [tc.id, tc.function.name, ""]
            else:
                assert tc.id is None and tc.function.name is None, tc
                seen[tc.index][2] += tc.function.arguments
assert finish == "tool_calls", chunks[-1]
want = [(t.function.name, t.function.arguments) for t in whole.choices[0].message.tool_calls]
assert [(v[1], v[2]) for _, v in sorted(seen.items())] == want, (seen, want)
with c.chat.completions.stream(model=MODEL, messages=ASK, tools=TOOLS, tool_choice="required", seed=11,
                               temperature=0.9, max_tokens=80, parallel_tool_calls=False) as s:
    events = [e.type for e in s]
    final = s.get_final_completion()
assert "tool_calls.function.arguments.done" in events, events
got = [(t.function.name, t.function.arguments) for t in final.choices[0].message.tool_calls]
assert got == want, (got, want)
assert final.choices[0].finish_reason == "tool_calls", final
done(f"{FORMAT}: streamed tool calls")



def streamed(**kw):
    """The streamed answer as the SDK assembles it (the state behind its stream helper, which
    itself refuses to parse strict tools' arguments of an answer cut by max_tokens)."""
    state = ChatCompletionStreamState()
    for chunk in ask(**kw, stream=True):
        state.handle_chunk(chunk)
    return state.current_completion_snapshot


def calls_of(message):
    return [(t.function.name, t.function.arguments) for t in message.tool_calls or []]


# Several calls, streamed: every call arrives as delta.tool_calls (none as content), as in the
# unstreamed answer.
for seed in (1, 2, 3):
    kw = dict(tool_choice="required", seed=seed, temperature=1.0, messages=TWO_ASK, max_tokens=120)
    w = ask(**kw).choices[0]
    chunks = list(ask(**kw, stream=True))
    content = "".join(ch.delta.content or "" for chunk in chunks for ch in chunk.choices)
    assert w.message.content is None and content == "", (w, content)
    snap = streamed(**kw).choices[0]
    assert calls_of(snap.message) == calls_of(w.message) and calls_of(w.message), (snap, w)
    assert snap.finish_reason == w.finish_reason, (snap, w)
    for call in complete_calls(w):
        check_call(call)
done(f"{FORMAT}: several calls streamed = unstreamed")

# A call cut by max_tokens: a tool call with its partial arguments and finish_reason "length",
# streamed and not. The cut falls a few tokens before the end of the whole call (and, in the
# generic format, at the 20 tokens of the report).
for seed in (1, 2):
    kw = dict(tool_choice="required", seed=seed, temperature=1.0, messages=TWO_ASK, parallel_tool_calls=False)
    full = ask(**kw, max_tokens=120)
    assert full.choices[0].finish_reason == "tool_calls", full
    cuts = [full.usage.completion_tokens - 4] + ([20] if FORMAT == "generic" else [])
    for cut in cuts:
        w = ask(**kw, max_tokens=cut).choices[0]
        snap = streamed(**kw, max_tokens=cut).choices[0]
        assert w.finish_reason == "length" and w.message.tool_calls, (cut, w)
        assert w.message.content is None, w
        args = w.message.tool_calls[0].function.arguments
        assert full.choices[0].message.tool_calls[0].function.arguments.startswith(args), (args, full)
        assert calls_of(snap.message) == calls_of(w.message), (snap, w)
        assert snap.finish_reason == "length" and snap.message.content is None, snap
done(f"{FORMAT}: a call cut by max_tokens")

# A tool result round trip: the assistant's call and the tool's answer go back into the
# prompt (rendered through the template) and the model answers.
call = whole.choices[0].message.tool_calls[0]
history = ASK + [
    {"role": "assistant", "content": None,
     "tool_calls": [{"id": call.id, "type": "function",
                     "function": {"name": call.function.name, "arguments": call.function.arguments}}]},
    {"role": "tool", "tool_call_id": call.id, "content": "Sunny, 21 degrees."},
]
r = ask(messages=history, tool_choice="none", max_tokens=24)
assert isinstance(r.choices[0].message.content, str) and r.choices[0].message.content, r
assert r.usage.prompt_tokens > 40, r.usage
r2 = ask(messages=history, tool_choice="auto", max_tokens=40, seed=2, temperature=0.8)
assert r2.choices[0].finish_reason in ("stop", "length", "tool_calls"), r2
for tc in complete_calls(r2.choices[0]):
    check_call(tc)
done(f"{FORMAT}: tool result round trip")


# parse() with a Pydantic tool: strict schema, arguments parsed into the model.
class Lookup(pydantic.BaseModel):
    city: str = pydantic.Field(max_length=20)
    days: int = pydantic.Field(ge=1, le=7)


r = c.chat.completions.parse(model=MODEL, messages=ASK, tools=[openai.pydantic_function_tool(Lookup)],
                             tool_choice="required", parallel_tool_calls=False, max_tokens=80,
                             temperature=0)
tc = r.choices[0].message.tool_calls[0]
assert isinstance(tc.function.parsed_arguments, Lookup), tc
assert 1 <= tc.function.parsed_arguments.days <= 7, tc
done(f"{FORMAT}: parse() with pydantic_function_tool")

# Errors: 400 with the field.
bad = lambda **kw: (lambda: ask(**kw))  # noqa: E731
expect_api_error(openai.BadRequestError, 400, bad(tools=[]), param="tools")
expect_api_error(openai.BadRequestError, 400,
                 lambda: c.chat.completions.create(model=MODEL, messages=ASK, tool_choice="required"),
                 param="tool_choice")
expect_api_error(openai.BadRequestError, 400,
                 bad(tool_choice={"type": "function", "function": {"name": "nope"}}), param="tool_choice")
if_schema = {"type": "object", "properties": {"a": {"type": "string"}},
             "if": {"properties": {"a": {"const": "x"}}}, "then": {"required": ["a"]}}
e = expect_api_error(openai.BadRequestError, 400,
                     bad(tools=[{"type": "function", "function": {"name": "f", "parameters": if_schema}}]),
                     param="tools[0].function.parameters")
assert "'if'" in e["message"] or " if " in e["message"] or "if" in e["message"].split(), e
e = expect_api_error(openai.BadRequestError, 400,
                     bad(tools=[{"type": "function", "function": {"name": "f", "parameters": {"type": "frog"}}}]),
                     param="tools[0].function.parameters")
expect_api_error(openai.BadRequestError, 400,
                 bad(tools=[{"type": "function", "function": {"name": "bad name!"}}]),
                 param="tools[0].function.name")
expect_api_error(openai.BadRequestError, 400, bad(tools=[WEATHER, WEATHER]), param="tools[1].function.name")
expect_api_error(openai.BadRequestError, 400, bad(tools=[{"type": "retrieval"}]), param="tools[0].type")
expect_api_error(openai.BadRequestError, 400, bad(tool_choice="required", response_format={"type": "json_object"}),
                 param="response_format")
expect_api_error(openai.BadRequestError, 400, bad(tool_choice="sometimes"), param="tool_choice")
expect_api_error(openai.BadRequestError, 400,
                 bad(messages=ASK + [{"role": "tool", "content": "x"}]), param="messages[1].tool_call_id")
done(f"{FORMAT}: errors")
