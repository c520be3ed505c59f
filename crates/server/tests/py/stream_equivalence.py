"""The stream/whole invariant as a property: for a seeded request of a random shape, the
streamed chunks, assembled as the official SDK assembles them (`ChatCompletionStreamState`, the
state behind `client.chat.completions.stream`), equal the unstreamed response — content, tool
calls (ids aside), logprobs, finish reasons, usage. Completions streams (which the SDK does not
assemble) are joined the plain way: texts concatenated, logprob arrays appended.

Shapes: plain text, n > 1, stop strings, logprobs / top_logprobs, response_format json_object
and json_schema, tools under auto / required / named / none with parallel_tool_calls true,
false or unset, calls cut by a small max_tokens, /v1/completions with echo and logprobs; under a
reasoning template, the thinking too (`reasoning_content`). About half the cases speculate
(`speculative: {"type": "ngram"}` with random draft settings, `usage.speculative` compared too).
EQUIV_SEED fixes the draw (printed on every run, and with each failing case), EQUIV_CASES
says how many cases are drawn."""

import json
import os
import random

from openai.lib.streaming.chat import ChatCompletionStreamState

from common import MODEL, client, done

c = client()
# The SDK's strict validation refuses what OpenAI's own legacy completions send: stream chunks
# (typed as a whole `Completion`, whose finish_reason may not be null) and echoed logprobs (the
# first prompt token's are null). Completions are read unvalidated, as completions.py does.
loose = client(strict=False)
master = int(os.environ.get("EQUIV_SEED") or random.SystemRandom().randrange(1 << 30))
cases = int(os.environ.get("EQUIV_CASES", "40"))
print(f"EQUIV_SEED={master} EQUIV_CASES={cases}", flush=True)
rng = random.Random(master)

PROMPTS = [
    "What's the weather in Paris and the time in Tokyo?",
    "Name three colors.",
    "Write a haiku about rain.",
    "List two fruits, comma separated.",
    "Count from one to ten.",
    "Say this twice: the cat sat on the mat, the cat sat on the mat.",
]
TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather in a city.", "strict": True,
        "parameters": {"type": "object", "additionalProperties": False, "required": ["city", "unit"],
                       "properties": {"city": {"type": "string", "maxLength": 20},
                                      "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}}}},
    {"type": "function", "function": {
        "name": "get_time", "description": "The time now in a time zone.",
        "parameters": {"type": "object", "required": ["tz"], "properties": {"tz": {"type": "string"}}}}},
]
SCHEMA = {"type": "object", "additionalProperties": False, "required": ["name", "n"],
          "properties": {"name": {"type": "string", "maxLength": 12}, "n": {"type": "integer"}}}
STOPS = ["\n", ".", ",", " the", "}"]


def draw_speculative(kw):
    """About half the cases speculate, with random draft settings."""
    if rng.random() < 0.5:
        kw["extra_body"] = {"speculative": {"type": "ngram", "draft_max": rng.choice([2, 5, 16]),
                                            "ngram_size_n": rng.choice([1, 2, 3])}}
    return kw


def draw_chat():
    kw = {"model": MODEL, "messages": [{"role": "user", "content": rng.choice(PROMPTS)}],
          "max_tokens": rng.choice([1, 3, 8, 20, 40]), "seed": rng.randrange(1 << 31),
          "temperature": rng.choice([0, 0.7, 1.2])}
    if rng.random() < 0.3:
        kw["n"] = 2
    if rng.random() < 0.3:
        kw["stop"] = rng.sample(STOPS, rng.randint(1, 2))
    if rng.random() < 0.4:
        kw["logprobs"] = True
        kw["top_logprobs"] = rng.randint(0, 3)
    shape = rng.choice(["text", "text", "json_object", "json_schema", "tools", "tools", "tools"])
    if shape == "json_object":
        kw["response_format"] = {"type": "json_object"}
    elif shape == "json_schema":
        kw["response_format"] = {"type": "json_schema",
                                 "json_schema": {"name": "thing", "schema": SCHEMA, "strict": True}}
    elif shape == "tools":
        kw["tools"] = TOOLS
        choice = rng.choice(["auto", "required", "named", "none", None])
        if choice == "named":
            kw["tool_choice"] = {"type": "function", "function": {"name": rng.choice(["get_weather", "get_time"])}}
        elif choice is not None:
            kw["tool_choice"] = choice
        parallel = rng.choice([True, False, None])
        if parallel is not None:
            kw["parallel_tool_calls"] = parallel
        kw["max_tokens"] = rng.choice([5, 12, 20, 30, 60, 90])
    return draw_speculative(kw)


def draw_completion():
    kw = {"model": MODEL, "prompt": rng.choice(PROMPTS), "max_tokens": rng.choice([1, 4, 12, 24]),
          "seed": rng.randrange(1 << 31), "temperature": rng.choice([0, 0.8, 1.3])}
    if rng.random() < 0.5:
        kw["echo"] = True
    if rng.random() < 0.5:
        kw["logprobs"] = rng.randint(0, 3)
    if rng.random() < 0.3:
        kw["n"] = 2
    if rng.random() < 0.3:
        kw["stop"] = rng.sample(STOPS, 1)
    return draw_speculative(kw)


def usage_of(u):
    """Usage less the cached-prompt count, which the prompt cache changes between the two runs."""
    assert u is not None
    return (u.prompt_tokens, u.completion_tokens, u.total_tokens, (u.model_extra or {}).get("speculative"))


def logprobs_of(lp):
    if lp is None:
        return None
    return [e.model_dump() for e in (lp.content or [])]


def chat_view(r):
    out = []
    for ch in r.choices:
        calls = ch.message.tool_calls or []
        ids = [t.id for t in calls]
        assert all(ids) and len(set(ids)) == len(ids), ids
        out.append({
            "index": ch.index, "finish_reason": ch.finish_reason, "content": ch.message.content,
            "reasoning": [(ch.message.model_extra or {}).get(k) for k in ("reasoning_content", "reasoning")],
            "tool_calls": [(t.type, t.function.name, t.function.arguments) for t in calls] or None,
            "logprobs": logprobs_of(ch.logprobs),
        })
    return {"object": r.object, "model": r.model, "system_fingerprint": r.system_fingerprint,
            "choices": out, "usage": usage_of(r.usage)}


def completion_view(choices, usage):
    return {"choices": [{"index": i, **v} for i, v in sorted(choices.items())], "usage": usage_of(usage)}


def check_chat(kw):
    whole = c.chat.completions.create(**kw)
    state = ChatCompletionStreamState()
    for chunk in c.chat.completions.create(**kw, stream=True, stream_options={"include_usage": True}):
        state.handle_chunk(chunk)
    streamed = state.current_completion_snapshot
    return chat_view(whole), chat_view(streamed)


def check_completion(kw):
    whole = loose.completions.create(**kw)
    want = {ch.index: {"text": ch.text, "finish_reason": ch.finish_reason,
                       "logprobs": ch.logprobs.model_dump() if ch.logprobs else None} for ch in whole.choices}
    got, usage = {}, None
    for chunk in loose.completions.create(**kw, stream=True, stream_options={"include_usage": True}):
        usage = chunk.usage or usage
        for ch in chunk.choices:
            g = got.setdefault(ch.index, {"text": "", "finish_reason": None, "logprobs": None})
            g["text"] += ch.text
            g["finish_reason"] = ch.finish_reason or g["finish_reason"]
            if ch.logprobs is not None:
                lp = ch.logprobs.model_dump()
                if g["logprobs"] is None:
                    g["logprobs"] = lp
                else:
                    for k in ("tokens", "token_logprobs", "top_logprobs", "text_offset"):
                        g["logprobs"][k] = (g["logprobs"][k] or []) + (lp[k] or [])
    return completion_view(want, whole.usage), completion_view(got, usage)


shapes = set()
for case in range(cases):
    chat = rng.random() < 0.8
    kw = draw_chat() if chat else draw_completion()
    want, got = (check_chat if chat else check_completion)(kw)
    if want != got:
        raise AssertionError(
            f"case {case} (EQUIV_SEED={master}): the stream assembles to another answer\n"
            f"request: {json.dumps(kw)}\nwhole:    {json.dumps(want)}\nstreamed: {json.dumps(got)}")
    kinds = [ch.get("finish_reason") for ch in want["choices"]]
    calls = sum(len(ch.get("tool_calls") or []) for ch in want["choices"])
    shapes.add(("chat" if chat else "completions", "tools" in kw, calls > 1, tuple(sorted(set(kinds)))))
print(f"{cases} cases, {len(shapes)} distinct outcomes: {sorted(shapes)}")
done("streamed answers assemble to the unstreamed ones")
