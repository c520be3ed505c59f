"""Cost of the `trace_steps` extension (the playground's per-token step reports) on a running
`nucleus serve`: the same seeded completion (MAX_TOKENS tokens, ignore_eos) with and without
`trace_steps`, alternated RUNS times so a busy machine slows both alike. Prints one JSON object:
tokens/s of each, their ratio, and the bytes per token the steps add to a whole response.
Standard library only.

Environment: BASE_URL (http://127.0.0.1:8080/v1), MAX_TOKENS (128), RUNS (3), TRACE (10).
"""

import json
import os
import time
import urllib.request

BASE = os.environ.get("BASE_URL", "http://127.0.0.1:8080/v1")
MAX_TOKENS = int(os.environ.get("MAX_TOKENS", "128"))
RUNS = int(os.environ.get("RUNS", "3"))
TRACE = int(os.environ.get("TRACE", "10"))


def complete(trace):
    body = {"prompt": "Once upon a time", "max_tokens": MAX_TOKENS, "seed": 42, "ignore_eos": True}
    if trace:
        body["trace_steps"] = trace
    req = urllib.request.Request(BASE + "/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req) as r:
        raw = r.read()
    secs = time.perf_counter() - t0
    out = json.loads(raw)
    return secs, len(raw), out["choices"][0]["text"], out["usage"]["completion_tokens"]


complete(0)  # warm-up
times = {0: [], TRACE: []}
sizes, texts = {}, {}
for _ in range(RUNS):
    for trace in (0, TRACE):
        secs, size, text, n = complete(trace)
        times[trace].append(secs)
        sizes[trace], texts[trace] = size, text
assert texts[0] == texts[TRACE], "trace_steps changed the tokens"
best = {k: min(v) for k, v in times.items()}
print(json.dumps({
    "max_tokens": MAX_TOKENS,
    "trace_steps": TRACE,
    "tokens_per_s_plain": round(MAX_TOKENS / best[0], 1),
    "tokens_per_s_traced": round(MAX_TOKENS / best[TRACE], 1),
    "traced_over_plain_time": round(best[TRACE] / best[0], 3),
    "step_bytes_per_token": round((sizes[TRACE] - sizes[0]) / MAX_TOKENS),
    "same_tokens": True,
}))
