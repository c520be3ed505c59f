"""A server with --api-key, one slot and a queue of one: 401 without the key (except
/health), 429 beyond the queue, and a client that leaves mid-stream frees its slot."""

import os
import threading
import time

import openai

from common import MODEL, chat, check_error_body, client, done, expect_api_error, raw

KEY = os.environ["NUCLEUS_API_KEY_FOR_TEST"]
AUTH = {"Authorization": f"Bearer {KEY}"}

expect_api_error(openai.AuthenticationError, 401, lambda: chat(client(api_key="wrong"), "hi"), code="invalid_api_key")
for path in ["/v1/models", "/metrics"]:
    status, _, data = raw("GET", path)
    assert status == 401, (path, status)
    check_error_body(data, 401)
status, _, _ = raw("GET", "/health")
assert status == 200
c = client(api_key=KEY)
assert [m.id for m in c.models.list().data] == [MODEL]


def metric(name):
    _, _, data = raw("GET", "/metrics", headers=AUTH)
    for line in data.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    raise KeyError(name)


# A takes the only slot. It is in flight once its first chunks arrive, and with 900 tokens to make
# it holds the slot far longer than the steps below take; it ends only when its client leaves.
a = chat(c, "Tell me a long story.", max_tokens=900, stream=True, extra_body={"ignore_eos": True})
it = iter(a)
next(it)
next(it)
# B waits in the queue (polled until the server counts it)
got = {}
tb = threading.Thread(target=lambda: got.setdefault("b", chat(c, "hi", max_tokens=2, temperature=0)))
tb.start()
deadline = time.monotonic() + 30
while metric("nucleus_queue_depth") < 1:
    assert time.monotonic() < deadline, "B never queued"
    time.sleep(0.02)
# C is refused: 429, OpenAI-shaped, with Retry-After
e = expect_api_error(openai.RateLimitError, 429, lambda: chat(c, "hi", max_tokens=2), code="queue_full")
status, headers, data = raw("POST", "/v1/chat/completions",
                            {"model": MODEL, "messages": [{"role": "user", "content": "x"}]}, AUTH)
assert status == 429 and "retry-after" in {k.lower() for k in headers}, (status, headers)
# (the refusals came while A ran and B waited)
assert metric("nucleus_slots_busy") == 1 and metric("nucleus_queue_depth") == 1
assert "b" not in got
# A leaves mid-stream: the server cancels it (it did not run out of tokens), frees its slot and
# runs B. Each step is awaited as an event, with a deadline only against a hang.
cancelled = metric("nucleus_sequences_cancelled_total")
a.close()
tb.join(timeout=120)
assert "b" in got, "B never ran after A left"
assert got["b"].choices[0].message.content is not None
assert metric("nucleus_sequences_cancelled_total") == cancelled + 1
deadline = time.monotonic() + 30
while metric("nucleus_slots_busy") != 0:
    assert time.monotonic() < deadline, "slots stay busy"
    time.sleep(0.02)
done("auth_queue")
