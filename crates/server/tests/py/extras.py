"""llama.cpp's and vLLM's extra sampling fields on the OpenAI routes (through extra_body)."""

import math
from concurrent.futures import ThreadPoolExecutor

from common import MODEL, chat, client, done

c = client()
Q = "Write one sentence about the sea."

def text(**kw):
    kw.setdefault("max_tokens", 10)
    return chat(c, Q, **kw).choices[0].message.content

greedy = text(temperature=0)
# Each of these must give the greedy text: top_k 1 and min_p 1 leave only the most likely token
# whatever the seed; a chain of top_k alone (names or codes) and a text response_format change
# nothing (an empty tools list is a 400 since tool calling: see tools.py). (Sent four at a time.)
same_as_greedy = [
    dict(seed=5, temperature=1.0, extra_body={"top_k": 1}),
    dict(seed=6, temperature=1.0, extra_body={"min_p": 1.0}),
    dict(seed=9, extra_body={"top_k": 1, "samplers": ["top_k"]}),
    dict(seed=9, extra_body={"top_k": 1, "samplers": "k"}),
    dict(temperature=0, response_format={"type": "text"}),
]
with ThreadPoolExecutor(4) as pool:
    for kw, got in zip(same_as_greedy, pool.map(lambda kw: text(**kw), same_as_greedy)):
        assert got == greedy, (kw, got, greedy)
# Every other field changes the seeded answer (so a server that dropped it fails here) and is
# reproducible. That the answer is exactly the runtime's for the same parameters is proven in
# tests/sampling_fields.rs; this checks the fields survive the SDK's extra_body.
fields = [
    {"top_k": 2},
    {"min_p": 0.5},
    {"typical_p": 0.1},
    {"repeat_penalty": 2.0, "repeat_last_n": 128},
    {"frequency_penalty": 2.0, "presence_penalty": 2.0},
    {"repetition_penalty": 2.0},
    {"dry_multiplier": 3.0, "dry_base": 2.0, "dry_allowed_length": 1, "dry_penalty_last_n": 128,
     "dry_sequence_breakers": ["\n"]},
    {"xtc_probability": 1.0, "xtc_threshold": 0.05},
    {"mirostat": 2, "mirostat_tau": 1.0, "mirostat_eta": 0.2},
    {"mirostat": 1},
    {"top_n_sigma": 0.3},
    {"dynatemp_range": 0.9, "dynatemp_exponent": 0.5},
    {"samplers": ["penalties", "top_k", "temperature"], "min_keep": 2},
    {"adaptive_target": 0.3, "adaptive_decay": 0.9, "samplers": ["top_k", "adaptive_p"]},
]
# A message that repeats itself, so that the penalties and DRY have repeats to act on.
R = "Repeat after me: red green blue red green blue red green blue"
# (sent four at a time: they share decode steps, and a seeded answer must not care)
with ThreadPoolExecutor(4) as pool:
    runs = list(pool.map(lambda f: chat(c, R, seed=11, temperature=0.9, max_tokens=6, extra_body=f)
                         .choices[0].message.content, [{}] + fields + fields))
plain, runs = runs[0], runs[1:]
for f, a, b in zip(fields, runs[: len(fields)], runs[len(fields):]):
    assert a == b and a, (f, a, b)
    assert a != plain, ("changes nothing", f, a)

# ignore_eos: runs to max_tokens
r = chat(c, "Say hi.", max_tokens=12, temperature=0, extra_body={"ignore_eos": True})
assert r.usage.completion_tokens == 12 and r.choices[0].finish_reason == "length"
# min_tokens: no end of generation before it
short = chat(c, "Is the sky blue? Answer yes or no.", max_tokens=12, temperature=0)
assert short.choices[0].finish_reason == "stop", short
n = short.usage.completion_tokens
r = chat(c, "Is the sky blue? Answer yes or no.", max_tokens=12, temperature=0, extra_body={"min_tokens": n + 2})
assert r.usage.completion_tokens >= n + 2, (n, r.usage)
# stop_token_ids: the greedy 3rd token stops the generation there, without its text
lp = chat(c, "Say hi.", max_tokens=5, temperature=0, logprobs=True).choices[0].logprobs.content
r = chat(c, "Say hi.", max_tokens=5, temperature=0, extra_body={"stop_token_ids": [lp[2].id]})
assert r.choices[0].finish_reason == "stop" and r.usage.completion_tokens == 3
assert r.choices[0].message.content == "".join(e.token for e in lp[:2])
# n_probs alone turns logprobs on (llama.cpp)
r = chat(c, Q, max_tokens=3, temperature=0, extra_body={"n_probs": 2})
assert all(len(e.top_logprobs) == 2 for e in r.choices[0].logprobs.content)
# post_sampling_probs: probabilities of the distribution sampled from (after top_k 3)
r = chat(c, Q, max_tokens=4, seed=2, logprobs=True, top_logprobs=5,
         extra_body={"post_sampling_probs": True, "top_k": 3})
for e in r.choices[0].logprobs.content:
    tops = e.top_logprobs
    assert 1 <= len(tops) <= 3, tops
    ps = [t.prob for t in tops]
    assert all(0 < p <= 1 for p in ps) and abs(sum(ps) - 1) < 1e-4, ps
    assert abs(math.exp(e.logprob) - e.prob) < 1e-5
# llama.cpp's logit_bias forms: [[id, false]] bans; a text key biases its tokens
lp = chat(c, Q, max_tokens=1, temperature=0, logprobs=True).choices[0].logprobs.content[0]
r = chat(c, Q, max_tokens=1, temperature=0, logprobs=True, extra_body={"logit_bias": [[lp.id, False]]})
assert r.choices[0].logprobs.content[0].id != lp.id
r = chat(c, Q, max_tokens=1, temperature=0, logprobs=True, logit_bias={lp.token: -100})
assert r.choices[0].logprobs.content[0].id != lp.id
done("extras")
