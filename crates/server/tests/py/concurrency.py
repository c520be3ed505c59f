"""Seeded requests give the same output alone and in a crowd: 16 streaming requests (4 chat, 12
completions; different prompts and seeds) are first run one at a time, then all at once (with
4 slots, so most of them also queue) next to a client that leaves mid-stream."""

import threading
from concurrent.futures import ThreadPoolExecutor

from common import MODEL, client, done, raw

c = client()
loose = client(strict=False)  # streamed legacy completions: see completions.py


def run(i):
    kw = dict(model=MODEL, max_tokens=8, seed=1000 + i, temperature=0.9, stream=True)
    if i % 4 == 0:
        chunks = c.chat.completions.create(messages=[{"role": "user", "content": f"Tell me about the number {i}."}], **kw)
        return "".join(k.choices[0].delta.content or "" for k in chunks if k.choices)
    chunks = loose.completions.create(prompt=f"Fact {i}: the", **kw)
    return "".join(k.choices[0].text for k in chunks if k.choices)


alone = [run(i) for i in range(16)]
assert len(set(alone)) > 8, alone

start = threading.Barrier(17)


def crowd(i):
    start.wait()
    return run(i)


def leaver():
    start.wait()
    s = c.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Write an essay."}],
                                  max_tokens=300, stream=True, extra_body={"ignore_eos": True})
    it = iter(s)
    for _ in range(3):
        next(it)
    s.close()


with ThreadPoolExecutor(17) as pool:
    gone = pool.submit(leaver)
    together = list(pool.map(crowd, range(16)))
    gone.result()
for i, (x, y) in enumerate(zip(alone, together)):
    assert x == y, (i, x, y)
done("concurrency")
