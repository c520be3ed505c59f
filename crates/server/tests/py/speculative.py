"""Speculative decoding never changes an answer, through the real server and the official SDK:
seeded requests of several sampler chains (greedy, llama.cpp's default, mirostat, penalties with
DRY), with and without a constraint (a json_schema response_format, tools), on prompts that
repeat (so drafts are accepted) and prompts that do not, give the same tokens, logprobs (bits:
floats compared exactly) and finish reasons with `speculative: {"type": "ngram"}` and with
`{"type": "none"}` — each alone, then all of them at once (more requests than slots, so drafts
are verified in decode calls shared with other slots' tokens). `usage.speculative` reports the
drafts of speculating requests only; across the run some drafts are accepted and some
rejected. Bad `speculative` fields are 400s naming them."""

import json
import os
import random
from concurrent.futures import ThreadPoolExecutor

from common import MODEL, check_error_body, client, done, raw

c = client()
loose = client(strict=False)  # legacy completions: see completions.py
rng = random.Random(int(os.environ.get("SPEC_SEED", "33")))

CODE = """def area(w, h):
    return w * h

def perimeter(w, h):
    return 2 * (w + h)

def describe(w, h):
    return f"{w}x{h}: area {area(w, h)}, perimeter {perimeter(w, h)}"
"""
DOC = ("Invoice 1042 from Acme Tools, dated 2024-03-05. Bill to: Jane Doe, 12 Elm Street. "
       "Items: 3 hammers at 12.50 each, 2 saws at 30.00 each. Total due: 97.50 EUR. "
       "Invoice 1042 is payable within 30 days to Acme Tools.")
SCHEMA = {"type": "object", "additionalProperties": False, "required": ["invoice", "vendor", "total"],
          "properties": {"invoice": {"type": "integer"}, "vendor": {"type": "string", "maxLength": 24},
                         "total": {"type": "number"}}}
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city.", "strict": True,
    "parameters": {"type": "object", "additionalProperties": False, "required": ["city"],
                   "properties": {"city": {"type": "string", "maxLength": 20}}}}}]

CHAINS = {
    "greedy": {"temperature": 0},
    "default": {"temperature": 0.8},
    "mirostat": {"temperature": 0.9, "extra": {"mirostat": 2, "mirostat_tau": 4.0}},
    "penalties": {"temperature": 0.7, "frequency_penalty": 0.3, "presence_penalty": 0.2,
                  "extra": {"repeat_penalty": 1.1, "dry_multiplier": 0.8, "dry_allowed_length": 2}},
}
PROMPTS = {
    "edit": f"Add a docstring to each function and return the whole file:\n\n{CODE}",
    "quote": f"Copy this text exactly, then say done:\n\n{DOC}",
    "plain": "Tell me a short story about a lighthouse keeper.",
}


def cases():
    out = []
    for chain in CHAINS:
        for prompt in PROMPTS:
            out.append(("chat", chain, prompt, None))
    for chain in ("greedy", "default"):
        out.append(("chat", chain, "quote", "json_schema"))
        out.append(("chat", chain, "quote", "tools"))
        out.append(("completions", chain, "edit", None))
    return out


def request(kind, chain, prompt, constraint, seed):
    ch = CHAINS[chain]
    kw = {"model": MODEL, "seed": seed, "temperature": ch["temperature"], "max_tokens": 48}
    extra = dict(ch.get("extra", {}))
    for k in ("frequency_penalty", "presence_penalty"):
        if k in ch:
            kw[k] = ch[k]
    if kind == "completions":
        kw["prompt"] = PROMPTS[prompt] + "\n\n"
        kw["logprobs"] = 2
    else:
        kw["messages"] = [{"role": "user", "content": PROMPTS[prompt]}]
        kw["logprobs"] = True
        kw["top_logprobs"] = 2
    if constraint == "json_schema":
        kw["response_format"] = {"type": "json_schema",
                                 "json_schema": {"name": "invoice", "schema": SCHEMA, "strict": True}}
    elif constraint == "tools":
        kw["tools"] = TOOLS
        kw["tool_choice"] = "required"
    return kw, extra


def run(case, seed, spec):
    kind = case[0]
    kw, extra = request(*case, seed)
    body = dict(extra) if spec is None else dict(extra, speculative=spec)
    if kind == "completions":
        r = loose.completions.create(**kw, extra_body=body)
        ch = r.choices[0]
        view = {"text": ch.text, "finish": ch.finish_reason, "logprobs": ch.logprobs.model_dump()}
    else:
        r = c.chat.completions.create(**kw, extra_body=body)
        ch = r.choices[0]
        calls = [(t.function.name, t.function.arguments) for t in ch.message.tool_calls or []]
        view = {"content": ch.message.content, "calls": calls, "finish": ch.finish_reason,
                "logprobs": [e.model_dump() for e in ch.logprobs.content]}
    view["completion_tokens"] = r.usage.completion_tokens
    return view, (r.usage.model_extra or {}).get("speculative")


def spec_for(i):
    """The ngram settings of case i: a few draft lengths and match sizes."""
    return {"type": "ngram", "draft_max": [16, 4, 8][i % 3], "ngram_size_n": [3, 2][i % 2]}


NONE = {"type": "none"}

if os.environ.get("SPEC_CACHE"):
    # A server with --spec-ngram-cache: a request with nothing to copy drafts little, its
    # repeat drafts the first one's answer from the cache; the answers are plain decoding's.
    for chain in ("greedy", "default"):
        case = ("chat", chain, "plain", None)
        plain, _ = run(case, 5, NONE)
        first, u1 = run(case, 5, {"type": "ngram"})
        again, u2 = run(case, 5, {"type": "ngram"})
        assert first == plain and again == plain, (chain, plain, first, again)
        assert u2["accepted"] > u1["accepted"] + 16, (chain, u1, u2)
        print(chain, "first", u1, "repeat", u2, flush=True)
    done("the n-gram cache drafts a repeated answer")
    raise SystemExit(0)

if os.environ.get("SPEC_DEFAULT") == "ngram":
    # A server started with --spec-type ngram: requests speculate unless they say otherwise,
    # with the same answers.
    case = ("chat", "greedy", "quote", None)
    on, u_on = run(case, 7, None)
    off, u_off = run(case, 7, NONE)
    assert on == off, (on, off)
    assert u_off is None and u_on is not None and u_on["accepted"] > 0, (u_on, u_off)
    done("the server's --spec-type is the requests' default")
    raise SystemExit(0)

if os.environ.get("SPEC_DRAFT") == "1":
    # A server with a draft model (the model itself): drafts from it change no answer, and a
    # greedy request accepts every one of them.
    total = 0
    for i, case in enumerate(cases()):
        plain, _ = run(case, 100 + i, NONE)
        drafted_answer, u = run(case, 100 + i, {"type": "draft", "draft_max": 6})
        assert drafted_answer == plain, f"case {case}: the draft model changed the answer"
        assert u is not None, case
        total += u["drafted"]
        if case[1] == "greedy" and case[3] is None:
            # The model's own greedy proposals are its greedy tokens: all accepted.
            assert u["drafted"] > 0 and u["accepted"] == u["drafted"], (case, u)
        print(case, u, flush=True)
    assert total > 0
    done("draft-model speculation gives the plain answers")
    raise SystemExit(0)

CASES = cases()
SEEDS = [rng.randrange(1 << 31) for _ in CASES]

drafted = accepted = 0
alone, alone_usage = {}, {}
for i, case in enumerate(CASES):
    plain, u0 = run(case, SEEDS[i], NONE)
    assert u0 is None, (case, u0)
    spec, u1 = run(case, SEEDS[i], spec_for(i))
    assert spec == plain, f"case {case} seed {SEEDS[i]}: speculation changed the answer\n{json.dumps(plain)}\n{json.dumps(spec)}"
    assert u1 is not None and set(u1) >= {"drafted", "accepted", "acceptance_rate", "passes_saved"}, u1
    assert 0 <= u1["accepted"] <= u1["drafted"] and u1["passes_saved"] == u1["accepted"], u1
    drafted += u1["drafted"]
    accepted += u1["accepted"]
    alone[i] = plain
    alone_usage[i] = u1
    print(case, "drafted", u1["drafted"], "accepted", u1["accepted"], flush=True)
assert accepted > 0, "no draft was accepted: the test does not exercise speculation"
assert drafted > accepted, "no draft was rejected: the test does not exercise the cut"

# All at once: every case with and without speculation, in an order of its own.
jobs = [(i, s) for i in range(len(CASES)) for s in ("none", "ngram")]
rng.shuffle(jobs)
with ThreadPoolExecutor(len(jobs)) as pool:
    got = list(pool.map(lambda j: run(CASES[j[0]], SEEDS[j[0]], NONE if j[1] == "none" else spec_for(j[0])), jobs))
for (i, s), (view, _) in zip(jobs, got):
    assert view == alone[i], f"case {CASES[i]} ({s}) under load differs\n{json.dumps(alone[i])}\n{json.dumps(view)}"

# /metrics counts every finished speculating sequence: the alone runs and the crowd's.
status, _, data = raw("GET", "/metrics")
assert status == 200, status
m = {l.split()[0]: float(l.split()[1]) for l in data.decode().splitlines() if l and not l.startswith("#")}
crowd = [u for (_, s), (_, u) in zip(jobs, got) if s == "ngram"]
assert all(u is not None for u in crowd), crowd
assert m["nucleus_speculative_drafted_tokens_total"] == drafted + sum(u["drafted"] for u in crowd), m
assert m["nucleus_speculative_accepted_tokens_total"] == accepted + sum(u["accepted"] for u in crowd), m
assert m["nucleus_speculative_passes_saved_total"] == m["nucleus_speculative_accepted_tokens_total"], m
assert m["nucleus_speculative_sequences_total"] == 2 * len(CASES), m
assert 0 < m["nucleus_speculative_acceptance_rate"] < 1, m
# A request's drafts do not depend on its neighbours either.
assert [u for (i, s), (_, u) in zip(jobs, got) if s == "ngram"] == [
    alone_usage[i] for (i, s) in jobs if s == "ngram"], "drafts differ under load"

# Bad fields are 400s naming them.
base = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
for field, value, param in [
    ("speculative", {"type": "medusa"}, "speculative.type"),
    ("speculative", {"draft_max": 0}, "speculative.draft_max"),
    ("speculative", {"draft_min": 9, "draft_max": 4}, "speculative.draft_min"),
    ("speculative", {"ngram_size_n": "3"}, "speculative.ngram_size_n"),
    ("speculative", {"type": "draft"}, "speculative.type"),
    ("speculative", 5, "speculative"),
    ("speculative.n_max", 300, "speculative.n_max"),
]:
    status, _, data = raw("POST", "/v1/chat/completions", dict(base, **{field: value}))
    assert status == 400, (field, value, status, data)
    check_error_body(data, 400, param=param)

print(f"{len(CASES)} cases, drafted {drafted}, accepted {accepted} (alone)")
done("speculation gives the plain answers, alone and under load")
