"""The stream/whole invariant of /v1/responses as a property: for a seeded request of a random
shape, the streamed events assembled by the official SDK (`responses.stream(...)`, its
`get_final_response()`; the terminal event's response when the stream ends incomplete, which
the SDK does not assemble) equal the unstreamed response — output items (ids aside), status,
incomplete_details, usage (cached tokens aside). Shapes: plain text, instructions, function tools under auto /
required / named / none with parallel_tool_calls true, false or unset, text.format json_object
and json_schema, small max_output_tokens that cut calls and text; with THINK=1 (a server under a
thinking template) also thinking budgets and `reasoning.effort`, so reasoning items (whole, cut
or absent) come before the message or calls. EQUIV_SEED fixes the draw (printed on every run
and with each failing case), EQUIV_CASES says how many are drawn."""

import os
import random

from common import MODEL, client, done

c = client()
master = int(os.environ.get("EQUIV_SEED") or random.SystemRandom().randrange(1 << 30))
cases = int(os.environ.get("EQUIV_CASES", "16"))
print(f"EQUIV_SEED={master} EQUIV_CASES={cases}", flush=True)
rng = random.Random(master)
think = os.environ.get("THINK") == "1"

PROMPTS = ["What's the weather in Paris?", "Name three colors.", "Write a haiku about rain.", "Count to ten."]
TOOLS = [
    {"type": "function", "name": "get_weather", "description": "Current weather in a city.", "strict": True,
     "parameters": {"type": "object", "additionalProperties": False, "required": ["city"],
                    "properties": {"city": {"type": "string", "maxLength": 20}}}},
    {"type": "function", "name": "get_time", "description": "The time in a time zone.",
     "parameters": {"type": "object", "required": ["tz"], "properties": {"tz": {"type": "string"}}}},
]
SCHEMA = {"type": "object", "additionalProperties": False, "required": ["name"],
          "properties": {"name": {"type": "string", "maxLength": 12}}}


def draw():
    kw = {"model": MODEL, "input": rng.choice(PROMPTS), "max_output_tokens": rng.choice([1, 4, 12, 40]),
          "temperature": rng.choice([0, 0.7, 1.2]), "extra_body": {"seed": rng.randrange(1 << 31)}}
    if rng.random() < 0.3:
        kw["instructions"] = "Be brief."
    shape = rng.choice(["plain", "tools", "tools", "json_object", "json_schema"])
    if shape == "tools":
        kw["tools"] = rng.sample(TOOLS, rng.randint(1, 2))
        kw["tool_choice"] = rng.choice(["auto", "required", "none",
                                        {"type": "function", "name": kw["tools"][0]["name"]}])
        p = rng.choice([True, False, None])
        if p is not None:
            kw["parallel_tool_calls"] = p
    elif shape == "json_object":
        kw["text"] = {"format": {"type": "json_object"}}
    elif shape == "json_schema":
        kw["text"] = {"format": {"type": "json_schema", "name": "thing", "schema": SCHEMA, "strict": True}}
    if think:
        budget = rng.choice([None, 0, 3, 10, "effort"])
        if budget == "effort":
            kw["reasoning"] = {"effort": rng.choice(["none", "low"])}
        elif budget is not None:
            kw["extra_body"]["reasoning_budget"] = budget
    return kw


def norm(r):
    d = r.model_dump(exclude_none=True)
    for k in ("id", "created_at", "completed_at"):
        d.pop(k, None)
    # The second of the two requests finds the prompt cached (it never changes an answer).
    d.get("usage", {}).get("input_tokens_details", {}).pop("cached_tokens", None)
    for o in d["output"]:
        o.pop("id", None)
        o.pop("call_id", None)
        # The SDK's stream helper parses a strict tool's arguments on the client side.
        o.pop("parsed_arguments", None)
        for p in o.get("content", []):
            p.pop("parsed", None)
    return d


reasoned = 0
for i in range(cases):
    kw = draw()
    whole = c.responses.create(**kw)
    with c.responses.stream(**kw) as s:
        events = list(s)
        final = s.get_final_response() if events[-1].type == "response.completed" else events[-1].response
    assert [e.sequence_number for e in events] == list(range(len(events))), f"case {i} (EQUIV_SEED={master})"
    a, b = norm(whole), norm(final)
    assert a == b, f"case {i} (EQUIV_SEED={master}) {kw}:\nwhole  {a}\nstream {b}"
    kinds = [o["type"] for o in a["output"]]
    assert "reasoning" not in kinds[1:], f"case {i} (EQUIV_SEED={master}): {kinds}"
    reasoned += kinds[:1] == ["reasoning"]
if think:
    assert reasoned > 0, f"no case thought (EQUIV_SEED={master})"
done(f"responses equivalence ({cases} cases)")
