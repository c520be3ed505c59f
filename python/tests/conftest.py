"""Shared fixtures: the repository's llama.cpp sampling vectors (testdata/vectors)."""

import json
import pathlib

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
VECTORS = REPO / "testdata" / "vectors" / "llama-test-sampling.json"


def _num(x):
    """A number of the vectors file, where "-inf" / "inf" stand for the infinities."""
    return float(x)


@pytest.fixture(scope="session")
def vectors():
    return json.loads(VECTORS.read_text())


def generated_logits(seed, n):
    """derived_reference.inputs.generator: a 32-bit LCG, logits in [-10, 10) in 0.001 steps."""
    out = np.empty(n, dtype=np.float32)
    x = seed
    for i in range(n):
        x = (x * 1103515245 + 12345) & 0xFFFFFFFF
        out[i] = np.float32((x >> 8) % 20000) / np.float32(1000.0) - np.float32(10.0)
    return out


def input_logits(v, name):
    if name == "logits_4096_seed11":
        return generated_logits(11, 4096)
    return np.array([_num(x) for x in v["derived_reference"]["inputs"][name]["values"]], dtype=np.float32)
