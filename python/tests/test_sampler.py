"""nucleus.Sampler against llama.cpp's recorded token streams, bit for bit, plus the binding's
own contract: parameter errors, buffers read in place, batch sampling with the GIL released."""

import math
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import nucleus
from conftest import input_logits

# The recorded multi-step chains (testdata/vectors, derived_reference.chains) that llama.cpp's
# common_sampler_init builds from these common_params_sampling values. chain_dry is not here:
# its breakers are token ids, which a sampler without a vocabulary cannot express.
CHAIN_PARAMS = {
    "chain_default": dict(seed=1234),
    "chain_penalties": dict(
        seed=1234,
        penalty_repeat=1.1,
        penalty_freq=0.1,
        penalty_present=0.2,
        samplers=["penalties", "top_k", "top_p", "min_p", "temperature"],
    ),
    "chain_dynatemp": dict(
        seed=42, top_k=0, top_p=0.9, min_p=0.02, min_keep=1, temp=1.0, dynatemp_range=0.5, samplers="kpmt"
    ),
    "chain_xtc": dict(seed=42, top_k=40, xtc_probability=0.5, xtc_threshold=0.05, min_keep=1, samplers="top_k;xtc"),
    "chain_topnsigma": dict(seed=7, top_n_sigma=1.0, samplers=["top_n_sigma"]),
    "chain_typical": dict(seed=7, typ_p=0.9, min_keep=1, samplers=["typ_p"]),
    "chain_mirostat1": dict(seed=42, mirostat=1, mirostat_tau=5.0, mirostat_eta=0.1, temp=1.0),
    "chain_mirostat2": dict(seed=42, mirostat=2, mirostat_tau=5.0, mirostat_eta=0.1, temp=0.8),
    "chain_adaptive_p": dict(
        seed=42, min_p=0.05, min_keep=1, adaptive_target=0.3, adaptive_decay=0.9, samplers=["min_p", "adaptive_p"]
    ),
    "chain_adaptive_p_disabled": dict(
        seed=42, min_p=0.05, min_keep=1, adaptive_target=-1.0, adaptive_decay=0.9, samplers=["min_p", "adaptive_p"]
    ),
    "chain_logit_bias": dict(seed=9, top_k=40, logit_bias={5: 3.0, 17: -math.inf, 200: 1.5}, samplers=["top_k"]),
}


def recorded(vectors, cid):
    for ch in vectors["derived_reference"]["chains"]:
        if ch["id"] == cid:
            return ch
    raise KeyError(cid)


@pytest.mark.parametrize("cid", sorted(CHAIN_PARAMS))
def test_recorded_chains_bit_for_bit(vectors, cid):
    ch = recorded(vectors, cid)
    logits = input_logits(vectors, ch["input"])
    s = nucleus.Sampler(len(logits), **CHAIN_PARAMS[cid])
    got = [s.sample(logits) for _ in range(ch["steps"])]
    assert got == ch["selected_tokens"]


@pytest.mark.parametrize("cid", sorted(CHAIN_PARAMS))
def test_recorded_chains_reset_and_clone(vectors, cid):
    ch = recorded(vectors, cid)
    logits = input_logits(vectors, ch["input"])
    want = ch["selected_tokens"]
    half = ch["steps"] // 2
    s = nucleus.Sampler(len(logits), **CHAIN_PARAMS[cid])
    assert [s.sample(logits) for _ in range(half)] == want[:half]
    twin = s.clone()
    rest = [s.sample(logits) for _ in range(ch["steps"] - half)]
    assert rest == want[half:]
    if not cid.startswith("chain_adaptive_p"):  # adaptive-p's clone restarts its stream, as in llama.cpp
        assert [twin.sample(logits) for _ in range(ch["steps"] - half)] == rest
    s.reset()
    assert [s.sample(logits) for _ in range(ch["steps"])] == want


def to_bf16(row):
    """bfloat16 bits of a float32 row (round to nearest even) and their exact float32 widening."""
    u = row.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return bits, (bits.astype(np.uint32) << 16).view(np.float32)


@pytest.mark.parametrize("cid", sorted(CHAIN_PARAMS))
def test_recorded_chains_half_precision_equals_widened(vectors, cid):
    """float16 rows (and bfloat16 bits, dtype="bfloat16") are read through the sampler's own
    half-precision paths: the same tokens as their f32 widening."""
    ch = recorded(vectors, cid)
    row = input_logits(vectors, ch["input"])
    half = row.astype(np.float16)
    bf_bits, bf_widened = to_bf16(row)
    for logits, dtype, widened in [
        (half, None, half.astype(np.float32)),
        (half.view(np.uint16), "float16", half.astype(np.float32)),
        (bf_bits, "bfloat16", bf_widened),
        (bf_bits.view(np.int16), "bfloat16", bf_widened),  # torch: t.view(torch.int16).numpy()
    ]:
        a, b = (nucleus.Sampler(len(row), **CHAIN_PARAMS[cid]) for _ in range(2))
        want = [a.sample(widened) for _ in range(ch["steps"])]
        assert [b.sample(logits, dtype) for _ in range(ch["steps"])] == want, dtype


def test_dtype(vectors):
    row = input_logits(vectors, "logits_4096_seed11")
    bits, widened = to_bf16(row)
    a, b = (nucleus.Sampler(len(row), seed=3, track_perplexity=True) for _ in range(2))
    for _ in range(4):
        assert b.sample(bits, dtype="bfloat16") == a.sample(widened)
    assert b.last_probs(5) == a.last_probs(5)
    assert (b.entropy(), b.surprisal(), b.perplexity()) == (a.entropy(), a.surprisal(), a.perplexity())
    assert b.apply(bits, "bfloat16") == a.apply(widened)
    single = [nucleus.Sampler(len(row), seed=20 + i) for i in range(3)]
    batch = [nucleus.Sampler(len(row), seed=20 + i) for i in range(3)]
    assert nucleus.sample_batch(batch, np.stack([bits] * 3), dtype="bfloat16") == [s.sample(widened) for s in single]
    s = nucleus.Sampler(len(row), seed=1)
    with pytest.raises(ValueError, match="dtype must be"):
        s.sample(bits, "float64")
    with pytest.raises(ValueError, match="does not match"):
        s.sample(widened, "bfloat16")
    with pytest.raises(ValueError, match="bfloat16"):
        s.sample(bits)  # 16-bit words need a dtype


def test_dist_streams(vectors):
    streams = vectors["derived_reference"]["dist_streams"]
    assert len(streams) == 10
    for st in streams:
        logits = input_logits(vectors, st["input"])
        s = nucleus.Sampler(len(logits), seed=st["seed"], samplers=[])
        assert [s.sample(logits) for _ in range(st["steps"])] == st["selected_tokens"], st["seed"]


def test_accept_feeds_penalties(vectors):
    ch = recorded(vectors, "chain_penalties")
    logits = input_logits(vectors, ch["input"])
    want = ch["selected_tokens"]
    # apply() selects without accepting; accept() commits: the same stream as sample().
    s = nucleus.Sampler(len(logits), **CHAIN_PARAMS["chain_penalties"])
    got = []
    for _ in range(ch["steps"]):
        t = s.apply(logits)
        s.accept(t)
        got.append(t)
    assert got == want


def test_defaults_are_llama_cpp():
    s = nucleus.Sampler(10)
    assert repr(s) == (
        "Sampler(n_vocab=10, chain=[?penalties, ?dry, ?top-n-sigma, top-k, ?typical, top-p, min-p, ?xtc, "
        "temp-ext, dist])"
    )


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(top_p=1.5), "top_p"),
        (dict(min_p=-0.1), "min_p"),
        (dict(temp=math.nan), "temp"),
        (dict(top_k="40"), "top_k"),
        (dict(penalty_repeat=0.0), "penalty_repeat"),
        (dict(penalty_last_n=-1), "penalty_last_n"),
        (dict(mirostat=3), "mirostat"),
        (dict(seed=2**40), "seed"),
        (dict(samplers=["top_k", "nope"]), "samplers"),
        (dict(logit_bias={99: 1.0}), "logit_bias"),
        (dict(logit_bias={1: math.inf}), "logit_bias"),
        (dict(dry_multiplier=0.8), "dry_sequence_breakers"),
        (dict(adaptive_decay=1.0), "adaptive_decay"),
        (dict(ignore_eos=True), "ignore_eos"),
    ],
)
def test_bad_values_raise_value_error_naming_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        nucleus.Sampler(10, **kwargs)


def test_unknown_parameter_is_a_type_error():
    with pytest.raises(TypeError, match="topk"):
        nucleus.Sampler(10, topk=3)


def test_bad_logits_raise():
    s = nucleus.Sampler(4, seed=1)
    with pytest.raises(ValueError, match="n_vocab"):
        s.sample(np.zeros(5, dtype=np.float32))
    with pytest.raises(ValueError, match="NaN"):
        s.sample(np.array([0, np.nan, 0, 0], dtype=np.float32))
    with pytest.raises(ValueError, match="float32 or float16"):
        s.sample(np.zeros(4, dtype=np.float64))
    with pytest.raises(ValueError, match="contiguous"):
        s.sample(np.zeros(8, dtype=np.float32)[::2])
    with pytest.raises(ValueError):
        s.sample(np.full(4, -np.inf, dtype=np.float32))
    with pytest.raises(ValueError):
        s.accept(4)
    with pytest.raises(ValueError, match="no token"):
        s.last_probs(2)


def test_float16_and_plain_buffers(vectors):
    logits = input_logits(vectors, "logits_256")
    half = logits.astype(np.float16)
    a, b, c = (nucleus.Sampler(256, seed=5) for _ in range(3))
    widened = half.astype(np.float32)
    want = [a.sample(widened) for _ in range(16)]
    assert [b.sample(half) for _ in range(16)] == want
    import array

    buf = array.array("f", widened.tolist())
    assert [c.sample(memoryview(buf)) for _ in range(16)] == want


def test_last_probs_entropy_surprisal_perplexity(vectors):
    logits = input_logits(vectors, "logits_4096_seed11")
    s = nucleus.Sampler(len(logits), seed=3, track_perplexity=True)
    # The same chain without fast paths leaves the complete candidate array every step.
    tokens = [s.sample(logits) for _ in range(5)]
    probs = s.last_probs(5)
    assert len(probs) == 5
    assert all(probs[i][1] >= probs[i + 1][1] for i in range(4))
    assert 0.0 < sum(p for _, p in probs) <= 1.0 + 1e-6
    assert tokens[-1] in [t for t, _ in s.last_probs(40)]
    x = logits.astype(np.float64)
    p = np.exp(x - x.max())
    p /= p.sum()
    assert s.entropy() == pytest.approx(float(-(p * np.log(p)).sum()), rel=1e-9)
    assert s.surprisal() == pytest.approx(float(-np.log2(p[tokens[-1]])), rel=1e-5)
    want_ppl = math.exp(-sum(math.log(p[t]) for t in tokens) / len(tokens))
    assert s.perplexity() == pytest.approx(want_ppl, rel=1e-5)
    with pytest.raises(ValueError, match="track_perplexity"):
        nucleus.Sampler(4).perplexity()


def test_sample_batch_equals_single_rows(vectors):
    base = input_logits(vectors, "logits_4096_seed11")
    b = 6
    matrix = np.stack([np.roll(base, 97 * i) for i in range(b)])
    params = [dict(seed=10 + i, top_k=[40, 0][i % 2]) for i in range(b)]
    single = [nucleus.Sampler(len(base), **p) for p in params]
    batch = [nucleus.Sampler(len(base), **p) for p in params]
    for _ in range(4):
        want = [s.sample(matrix[i]) for i, s in enumerate(single)]
        assert nucleus.sample_batch(batch, matrix) == want
    assert nucleus.sample_batch(batch, matrix.astype(np.float16)) == [
        s.sample(matrix[i].astype(np.float16)) for i, s in enumerate(single)
    ]
    assert batch[1].last_probs(3) == single[1].last_probs(3)
    with pytest.raises(ValueError, match="twice"):
        nucleus.sample_batch([batch[0], batch[0]], matrix[:2])
    with pytest.raises(ValueError, match="n_vocab"):
        nucleus.sample_batch(batch, matrix[:3])
    assert nucleus.sample_batch([], matrix) == []


def test_sample_batch_releases_the_gil():
    # A batch big enough to take a noticeable time; a Python thread counts meanwhile. With the
    # GIL held for the whole call the counter could not move at all.
    b, v = 8, 1 << 19
    rng = np.random.default_rng(1)
    matrix = rng.standard_normal((b, v), dtype=np.float32)
    samplers = [nucleus.Sampler(v, seed=i, top_k=0, top_p=0.5) for i in range(b)]
    nucleus.sample_batch(samplers, matrix)  # warm up the candidate buffers
    counter = [0]
    stop = threading.Event()

    def count():
        while not stop.is_set():
            counter[0] += 1

    t = threading.Thread(target=count)
    t.start()
    try:
        time.sleep(0.05)
        progressed = []
        for _ in range(3):
            before = counter[0]
            t0 = time.perf_counter()
            nucleus.sample_batch(samplers, matrix)
            elapsed = time.perf_counter() - t0
            progressed.append((counter[0] - before, elapsed))
    finally:
        stop.set()
        t.join()
    assert max(n for n, _ in progressed) > 1000, progressed


def test_sample_does_not_copy_the_logits():
    # Measured in a fresh interpreter: after a warm-up call, sampling a 64 MiB float32 row (and
    # a 32 MiB float16 row) must not raise the peak resident size by anything like a row.
    code = r"""
import resource, numpy as np, nucleus
v = 1 << 24
x = np.random.default_rng(0).standard_normal(v, dtype=np.float32)
h = x.astype(np.float16)
s = nucleus.Sampler(v, seed=1)
s.sample(x); s.sample(h)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
for _ in range(5):
    s.sample(x); s.sample(h)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(after - before)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    grown_kib = int(out.stdout.strip())
    assert grown_kib < 8 * 1024, f"peak RSS grew by {grown_kib} KiB while sampling"


def test_sample_releases_the_gil_for_other_threads(vectors):
    # Two threads sampling with their own samplers give each sampler's single-thread stream.
    logits = input_logits(vectors, "logits_4096_seed11")
    want = {}
    for seed in (1, 2):
        s = nucleus.Sampler(len(logits), seed=seed)
        want[seed] = [s.sample(logits) for _ in range(50)]
    got = {}

    def run(seed):
        s = nucleus.Sampler(len(logits), seed=seed)
        got[seed] = [s.sample(logits) for _ in range(50)]

    threads = [threading.Thread(target=run, args=(seed,)) for seed in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == want
