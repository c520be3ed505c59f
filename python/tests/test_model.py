"""nucleus.Model: a real SmolLM2 generation (pulled like `nucleus pull` if missing), token for
token the same as `nucleus generate`, streamed from a thread with the GIL released."""

import json
import os
import pathlib
import subprocess
import sys
import threading

import pytest

import nucleus
from conftest import REPO

PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def model():
    return nucleus.Model("smollm2")


def test_tokenize_detokenize(model):
    assert model.n_vocab == 49152
    ids = model.tokenize("Hello world", add_special=False)
    assert model.detokenize(ids) == "Hello world"
    with pytest.raises(ValueError, match="outside the vocabulary"):
        model.detokenize([-1])


def test_same_tokens_as_nucleus_generate(model):
    got = list(model.generate(PROMPT, max_tokens=16, seed=42))
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    cli = target / "release" / "nucleus"
    # The README's test command runs `cargo test --workspace --release` first, which builds it.
    assert cli.exists(), f"{cli} is missing: run `cargo build --release -p nucleus` first"
    out = subprocess.run(
        [str(cli), "generate", "-p", PROMPT, "-n", "16", "--seed", "42", "-t", "1", "--json"],
        capture_output=True, text=True, check=True,
    )
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    want = [w for w in lines if "done" not in w]  # the last line is the {"done": ...} summary
    assert [t for t, _ in got] == [w["id"] for w in want]
    assert "".join(text for _, text in got) == "".join(w["text"] for w in want)


def test_chat_stop_strings_and_stop_reason(model):
    g = model.generate([{"role": "user", "content": "Name three colors."}], max_tokens=32, seed=42, temp=0.0,
                       stop=["\n"])
    text = "".join(t for _, t in g)
    assert text and "\n" not in text
    assert g.stop_reason == "stop"
    g = model.generate(PROMPT, max_tokens=4, seed=1)
    assert len(list(g)) == 4 and g.stop_reason == "limit"


def test_generation_releases_the_gil_and_closes(model):
    ticks = [0]
    done = threading.Event()

    def tick():
        while not done.is_set():
            ticks[0] += 1

    t = threading.Thread(target=tick)
    t.start()
    try:
        before = ticks[0]
        tokens = list(model.generate(PROMPT, max_tokens=8, seed=3))
        assert len(tokens) == 8
        assert ticks[0] - before > 1000  # the Python thread ran while the model decoded
    finally:
        done.set()
        t.join()
    g = model.generate(PROMPT, max_tokens=200, seed=3)
    next(g)
    g.close()
    rest = list(g)
    assert len(rest) < 199 and g.stop_reason == "cancelled"


def test_bad_arguments(model):
    with pytest.raises(ValueError, match="top_p"):
        model.generate(PROMPT, top_p=2.0)
    with pytest.raises(ValueError, match="prompt"):
        model.generate(42)
    with pytest.raises(RuntimeError):
        nucleus.Model(str(REPO / "no-such-model.gguf"))


def test_leaving_a_generation_early_then_exiting_is_clean():
    # Breaking out of the loop drops the generation, which stops the model thread before the
    # interpreter exits (llama.cpp still decoding at exit can crash the process).
    code = """
import nucleus
m = nucleus.Model("smollm2")
for i, _ in enumerate(m.generate("Once upon a time", max_tokens=500, seed=1)):
    if i == 1:
        break
"""
    for _ in range(3):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-2000:]


LEAVES = [" Paris", " a city in Europe", " the city of lights", " London"]


def trie_descriptor(model, words=LEAVES):
    """A token-trie descriptor for SmolLM2 whose leaves are `words` (no leaf a prefix of another)."""
    leaves = [{"name": w.strip(), "tokens": model.tokenize(w, add_special=False)} for w in words]
    return {"modelId": model.model_id, "descriptors": [{"path": "answer", "leaves": leaves}]}, leaves


def test_token_trie_constrains_generate(model):
    """A token trie set on the model: the generation is exactly one leaf, in greedy and sampled
    mode; cleared, the model generates what it generated before."""
    assert model.model_id == "smollm2"
    free = [t for t, _ in model.generate(PROMPT, max_tokens=8, seed=42)]
    desc, leaves = trie_descriptor(model)
    allowed = [leaf["tokens"] for leaf in leaves]
    model.set_token_trie(nucleus.TokenTrie(desc))
    try:
        g = model.generate(PROMPT, max_tokens=32, seed=42)
        got = [t for t, _ in g]
        assert got in allowed and g.stop_reason == "eog"
        sampled = nucleus.TokenTrie(desc, "sampled")
        for seed in (1, 2, 3):  # per call, in place of the model's trie
            assert [t for t, _ in model.generate(PROMPT, max_tokens=32, seed=seed, temp=1.5, token_trie=sampled)] \
                in allowed
    finally:
        model.clear_token_trie()
    assert [t for t, _ in model.generate(PROMPT, max_tokens=8, seed=42)] == free
    # The multi-token leaf is forced after its first token: its text comes out whole.
    only = nucleus.TokenTrie(trie_descriptor(model, [" the city of lights"])[0])
    assert "".join(text for _, text in model.generate(PROMPT, seed=42, token_trie=only)) == " the city of lights"


def test_token_trie_errors(model):
    desc, _ = trie_descriptor(model)
    with pytest.raises(ValueError, match="modelId"):
        model.set_token_trie(nucleus.TokenTrie({**desc, "modelId": "gemma3"}))
    big = {"modelId": "smollm2", "descriptors": [{"path": "p", "leaves": [{"name": "x", "tokens": [60000]}]}]}
    with pytest.raises(ValueError, match="outside the vocabulary"):
        model.set_token_trie(nucleus.TokenTrie(big))
    with pytest.raises(TypeError):
        model.generate(PROMPT, token_trie="not a trie")
