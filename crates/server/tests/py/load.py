"""A bounded load run: LOAD_REQUESTS streaming requests over LOAD_CONNECTIONS connections, zero
errors allowed; prints requests/s, tokens/s and time-to-first-token percentiles as JSON."""

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor

from common import MODEL, client

N = int(os.environ.get("LOAD_REQUESTS", "32"))
C = int(os.environ.get("LOAD_CONNECTIONS", "8"))
MAX_TOKENS = int(os.environ.get("LOAD_MAX_TOKENS", "8"))
clients = [client() for _ in range(C)]


def one(i):
    c = clients[i % C]
    t0 = time.perf_counter()
    ttft = None
    usage = None
    s = c.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": f"Say something about {i}."}],
                                  max_tokens=MAX_TOKENS, seed=i, stream=True, stream_options={"include_usage": True})
    for k in s:
        if ttft is None and k.choices and k.choices[0].delta.content:
            ttft = time.perf_counter() - t0
        if k.usage is not None:
            usage = k.usage
    return ttft if ttft is not None else time.perf_counter() - t0, usage.completion_tokens


t0 = time.perf_counter()
with ThreadPoolExecutor(C) as pool:
    results = list(pool.map(one, range(N)))
wall = time.perf_counter() - t0
ttfts = sorted(r[0] for r in results)
tokens = sum(r[1] for r in results)


def pct(p):
    return ttfts[min(len(ttfts) - 1, int(round(p / 100 * (len(ttfts) - 1))))]


print(json.dumps({"requests": N, "connections": C, "max_tokens": MAX_TOKENS, "errors": 0,
                  "seconds": round(wall, 2), "requests_per_s": round(N / wall, 2),
                  "completion_tokens": tokens, "tokens_per_s": round(tokens / wall, 1),
                  "ttft_p50_s": round(pct(50), 3), "ttft_p99_s": round(pct(99), 3)}))
