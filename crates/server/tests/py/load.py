"""A bounded load run, checked rather than timed: LOAD_REQUESTS streaming chat requests over
LOAD_CONNECTIONS connections. Every request must end well (no exception, finish_reason "stop" or
"length", text, a usage chunk whose token count matches the chunks), the server's counters must
move by exactly what the clients saw, and every slot must be free afterwards. Failures are
counted and reported, then the run fails if there were any. Throughput is measured by
crates/server/benches/load.py, not here."""

import json
import os
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

from common import MODEL, client, done, raw

N = int(os.environ.get("LOAD_REQUESTS", "32"))
C = int(os.environ.get("LOAD_CONNECTIONS", "8"))
MAX_TOKENS = int(os.environ.get("LOAD_MAX_TOKENS", "8"))
clients = [client() for _ in range(C)]


def metrics():
    status, _, data = raw("GET", "/metrics")
    assert status == 200, status
    values = {}
    for line in data.decode().splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values


def one(i):
    """(None, completion tokens) when request i ended well, else (what went wrong, 0)."""
    try:
        return check(i)
    except Exception:  # counted, not raised: the run reports every failure
        return f"request {i}: {traceback.format_exc(limit=2)}", 0


def check(i):
    s = clients[i % C].chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": f"Say something about {i}."}],
        max_tokens=MAX_TOKENS, seed=i, stream=True, stream_options={"include_usage": True})
    text, finish, usage, pieces = "", None, None, 0
    for k in s:
        if k.choices:
            text += k.choices[0].delta.content or ""
            pieces += 1 if k.choices[0].delta.content else 0
            finish = k.choices[0].finish_reason or finish
        if k.usage is not None:
            usage = k.usage
    if usage is None:
        return f"request {i}: no usage chunk", 0
    if finish not in ("stop", "length"):
        return f"request {i}: finish_reason {finish!r}", 0
    if not 1 <= usage.completion_tokens <= MAX_TOKENS or pieces > usage.completion_tokens:
        return f"request {i}: {usage.completion_tokens} completion tokens for {pieces} text chunks", 0
    if finish == "length" and usage.completion_tokens != MAX_TOKENS:
        return f"request {i}: 'length' after {usage.completion_tokens} of {MAX_TOKENS} tokens", 0
    if not text:
        return f"request {i}: no text", 0
    return None, usage.completion_tokens


def settled():
    """The counters once no slot is busy and nothing queues (the engine frees a slot just after
    it sends the last event, and notices departed clients between steps), or None after 30 s."""
    deadline = time.monotonic() + 30
    while True:
        values = metrics()
        if values["nucleus_slots_busy"] == 0 and values["nucleus_queue_depth"] == 0:
            return values
        if time.monotonic() > deadline:
            return None
        time.sleep(0.02)


def ok_route(values):
    return values.get('nucleus_requests_total{route="/v1/chat/completions",status="200"}', 0)


before = settled()
assert before is not None, "the server was busy before the run"
with ThreadPoolExecutor(C) as pool:
    results = list(pool.map(one, range(N)))
failures = [err for err, _ in results if err is not None]
tokens = sum(n for _, n in results)

after = settled()
if after is None:
    after = metrics()
    failures.append(f"slots busy {after['nucleus_slots_busy']:.0f}, queue {after['nucleus_queue_depth']:.0f} "
                    "30 s after the last answer")
served = ok_route(after) - ok_route(before)
if served != N:
    failures.append(f"the server counted {served:.0f} successful chat requests, the clients sent {N}")
made = after["nucleus_completion_tokens_total"] - before["nucleus_completion_tokens_total"]
if made != tokens:
    failures.append(f"the server counted {made:.0f} completion tokens, the clients' usage says {tokens}")
cancelled = after["nucleus_sequences_cancelled_total"] - before["nucleus_sequences_cancelled_total"]
if cancelled != 0:
    failures.append(f"{cancelled:.0f} sequences were cancelled")

print(json.dumps({"requests": N, "connections": C, "max_tokens": MAX_TOKENS, "errors": len(failures),
                  "completion_tokens": tokens, "slots_busy_after": after["nucleus_slots_busy"]}))
assert not failures, "\n".join(failures)
done("load")
