"""The stream/whole invariant for the Messages API: for a seeded request of a random shape,
the stream assembled by the official SDK (`messages.stream(...).get_final_message()`) equals
the unstreamed message — content blocks (ids aside), stop reason and sequence, usage. Shapes:
plain text with and without a system prompt, stop sequences, temperature / top_k / top_p and
the min_p extension, tools under auto / any / tool / none with and without
disable_parallel_tool_use, small max_tokens (cut text and cut calls). EQUIV_SEED fixes the
draw, EQUIV_CASES says how many cases."""

import json
import os
import random

from anthropic_common import MODEL, TOOLS, client, view

c = client()
master = int(os.environ.get("EQUIV_SEED") or random.SystemRandom().randrange(1 << 30))
cases = int(os.environ.get("EQUIV_CASES", "24"))
print(f"EQUIV_SEED={master} EQUIV_CASES={cases}", flush=True)
rng = random.Random(master)

PROMPTS = ["What's the weather in Paris and the time in Tokyo?", "Name three colors.",
           "Write a haiku about rain.", "Count from one to ten."]
STOPS = ["\n", ".", ",", " the", "}"]


def draw():
    kw = {"model": MODEL, "messages": [{"role": "user", "content": rng.choice(PROMPTS)}],
          "max_tokens": rng.choice([1, 3, 8, 20, 40]),
          "extra_body": {"seed": rng.randrange(1 << 31), "temperature": rng.choice([0, 0.7, 1.0])}}
    if rng.random() < 0.3:
        kw["system"] = rng.choice(["Be brief.", [{"type": "text", "text": "Be brief."},
                                                 {"type": "text", "text": "Use English."}]])
    if rng.random() < 0.3:
        kw["stop_sequences"] = rng.sample(STOPS, rng.randint(1, 2))
    if rng.random() < 0.3:
        kw["extra_body"]["top_k"] = rng.choice([0, 5, 40])
        kw["extra_body"]["top_p"] = rng.choice([0.5, 0.9, 1.0])
        kw["extra_body"]["min_p"] = rng.choice([0.0, 0.05])
    if rng.random() < 0.5:
        kw["tools"] = TOOLS
        choice = rng.choice(["auto", "any", "tool", "none", None])
        if choice == "tool":
            kw["tool_choice"] = {"type": "tool", "name": rng.choice(["get_weather", "get_time"])}
        elif choice is not None:
            kw["tool_choice"] = {"type": choice}
            if choice != "none" and rng.random() < 0.5:
                kw["tool_choice"]["disable_parallel_tool_use"] = rng.choice([True, False])
        kw["max_tokens"] = rng.choice([5, 12, 30, 60, 90])
    return kw


seen = set()
for case in range(cases):
    kw = draw()
    whole = c.messages.create(**kw)
    with c.messages.stream(**kw) as s:
        streamed = s.get_final_message()
    want, got = view(whole), view(streamed)
    if want != got:
        raise AssertionError(f"case {case} (EQUIV_SEED={master}): the stream assembles to another message\n"
                             f"request: {json.dumps(kw)}\nwhole:    {want}\nstreamed: {got}")
    seen.add((whole.stop_reason, tuple(b.type for b in whole.content)))
print("shapes:", sorted(seen))
print("ok")
