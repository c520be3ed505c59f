"""The Python side of the per-call overhead figure (docs/PERFORMANCE.md): nucleus.Sampler.sample
at V = 151936 on the same logits and chains as overhead.rs (and the same row in float16). Run after `pip install ./python`:
`python3 python/examples/overhead.py`."""

import sys
import time

import numpy as np

import nucleus

V = int(sys.argv[1]) if len(sys.argv) > 1 else 151936  # a tiny V isolates the per-call cost


def logits(seed, n):
    x = np.empty(n, dtype=np.uint64)
    s = seed
    for i in range(n):
        s = (s * 1103515245 + 12345) & 0xFFFFFFFF
        x[i] = s
    return (((x >> 8) % 20000).astype(np.float32) / np.float32(1000.0) - np.float32(10.0)).astype(np.float32)


f32 = logits(11, V)
f16 = f32.astype(np.float16)  # round to nearest even, as overhead.rs and overhead.cjs do
for name, params, row in [
    ("default chain (top-k 40 ...)", dict(seed=42), f32),
    ("dist only", dict(seed=42, samplers=[]), f32),
    ("greedy (temp 0)", dict(seed=42, temp=0.0), f32),
    ("default chain, float16 row", dict(seed=42), f16),
]:
    s = nucleus.Sampler(V, **params)
    for _ in range(200):
        s.sample(row)
    per_call = []
    for _ in range(7):
        n = 2000
        t = time.perf_counter()
        for _ in range(n):
            s.sample(row)
        per_call.append((time.perf_counter() - t) * 1e6 / n)
    per_call.sort()
    print(f"python V={V:<6} {name:32} median {per_call[3]:7.2f} µs/call  (min {per_call[0]:.2f})")
