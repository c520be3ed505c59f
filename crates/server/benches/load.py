"""Server throughput benchmark (not a test): LOAD_REQUESTS streaming chat requests over
LOAD_CONNECTIONS connections against a running server; prints requests/s, completion tokens/s
and time-to-first-token percentiles as JSON. Requests that fail are counted, not timed.

    nucleus serve --threads 1 --parallel 2 --port 8080 &
    NUCLEUS_BASE_URL=http://127.0.0.1:8080/v1 LOAD_REQUESTS=200 LOAD_CONNECTIONS=8 LOAD_MAX_TOKENS=16 \\
      python3 crates/server/benches/load.py

The test suite's load run (crates/server/tests/py/load.py) checks correctness under load and
times nothing; figures from this script go to docs/PERFORMANCE.md."""

import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

# The tests' client helpers (strict official `openai` client, no retries).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "py"))
from common import MODEL, client  # noqa: E402

N = int(os.environ.get("LOAD_REQUESTS", "32"))
C = int(os.environ.get("LOAD_CONNECTIONS", "8"))
MAX_TOKENS = int(os.environ.get("LOAD_MAX_TOKENS", "8"))
clients = [client() for _ in range(C)]


def one(i):
    """(time to first token, completion tokens), or None if the request failed."""
    t0 = time.perf_counter()
    ttft, usage = None, None
    try:
        s = clients[i % C].chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": f"Say something about {i}."}],
            max_tokens=MAX_TOKENS, seed=i, stream=True, stream_options={"include_usage": True})
        for k in s:
            if ttft is None and k.choices and k.choices[0].delta.content:
                ttft = time.perf_counter() - t0
            if k.usage is not None:
                usage = k.usage
    except Exception as e:  # a benchmark reports failures instead of stopping at the first
        print(f"request {i} failed: {e}", file=sys.stderr)
        return None
    if usage is None:
        print(f"request {i}: no usage chunk", file=sys.stderr)
        return None
    return (ttft if ttft is not None else time.perf_counter() - t0), usage.completion_tokens


t0 = time.perf_counter()
with ThreadPoolExecutor(C) as pool:
    results = list(pool.map(one, range(N)))
wall = time.perf_counter() - t0
ok = [r for r in results if r is not None]
ttfts = sorted(r[0] for r in ok) or [float("nan")]
tokens = sum(r[1] for r in ok)


def pct(p):
    return ttfts[min(len(ttfts) - 1, int(round(p / 100 * (len(ttfts) - 1))))]


print(json.dumps({"requests": N, "connections": C, "max_tokens": MAX_TOKENS, "errors": N - len(ok),
                  "seconds": round(wall, 2), "requests_per_s": round(len(ok) / wall, 2),
                  "completion_tokens": tokens, "tokens_per_s": round(tokens / wall, 1),
                  "ttft_p50_s": round(pct(50), 3), "ttft_p99_s": round(pct(99), 3)}))
sys.exit(1 if len(ok) < N else 0)
