"""nucleus.Grammar / TokenTrie: llama.cpp's grammar vectors through the packed bitmask, the
bitmask against the grammar's own token check, rollback, termination, the NumPy adapter."""

import json

import numpy as np
import pytest

import nucleus
from conftest import REPO

GRAMMAR_VECTORS = json.loads((REPO / "testdata" / "vectors" / "llama-grammar.json").read_text())

# A byte-level vocabulary: token i < 256 is byte i, token 256 ends generation.
EOG = 256
BYTE_VOCAB = nucleus.Vocab([bytes([i]) for i in range(256)] + [b""], [EOG])


def allowed_set(g, vocab):
    bm = nucleus.allocate_token_bitmask(1, vocab.n_vocab)
    g.fill_next_token_bitmask(bm)
    bits = np.unpackbits(bm[0].view(np.uint8), bitorder="little")[: vocab.n_vocab]
    return set(np.flatnonzero(bits).tolist())


def matches_through_masks(g, text):
    """Feeds `text` byte by byte, each byte only if the mask allows it; then end of generation."""
    g.reset()
    for b in text.encode("utf-8"):
        if b not in allowed_set(g, BYTE_VOCAB):
            assert not g.accept_token(b), "the mask refused a byte the grammar accepts"
            return False
        assert g.accept_token(b)
    if EOG not in allowed_set(g, BYTE_VOCAB):
        return False
    assert g.accept_token(EOG) and g.is_terminated()
    assert allowed_set(g, BYTE_VOCAB) == set()
    return True


def plain_text_cases(section):
    for case in GRAMMAR_VECTORS[section]:
        items = case["passing"] + case["failing"]
        if all(isinstance(x, str) for x in items):
            yield case


GBNF_CASES = list(plain_text_cases("grammar_integration"))


@pytest.mark.parametrize("case", GBNF_CASES, ids=[c["name"] for c in GBNF_CASES])
def test_llama_cpp_grammar_vectors_through_the_bitmask(case):
    g = nucleus.Grammar(BYTE_VOCAB, case["grammar"])
    for s in case["passing"]:
        assert matches_through_masks(g, s), f"should pass: {s!r}"
    for s in case["failing"]:
        assert not matches_through_masks(g, s), f"should fail: {s!r}"


def test_enough_llama_cpp_vectors():
    assert len(GBNF_CASES) >= 10  # 11 of 13 upstream cases are plain text (2 mix in token ids)


SCHEMA_CASES = list(plain_text_cases("schema_integration"))


def test_llama_cpp_schema_vectors_through_the_bitmask():
    # llama.cpp's converter (llama_cpp_compat=True) on llama.cpp's expectations, every case.
    assert len(SCHEMA_CASES) >= 30
    for case in SCHEMA_CASES:
        g = nucleus.Grammar(BYTE_VOCAB, json_schema=case["schema"], llama_cpp_compat=True)
        for s in case["passing"]:
            assert matches_through_masks(g, s), f"{case['name']}: should pass: {s!r}"
        for s in case["failing"]:
            assert not matches_through_masks(g, s), f"{case['name']}: should fail: {s!r}"


def test_strict_schemas_refuse_or_agree():
    # The strict converter (the default) either refuses a schema, naming keyword and pointer,
    # or agrees with llama.cpp except where llama.cpp contradicts JSON Schema (open objects,
    # -0 is 0, {} is any value).
    compiled = 0
    for case in SCHEMA_CASES:
        try:
            g = nucleus.Grammar(BYTE_VOCAB, json_schema=json.dumps(case["schema"]))
        except ValueError as e:
            assert " at #" in str(e), str(e)
            continue
        compiled += 1
        for s in case["passing"]:
            assert matches_through_masks(g, s), f"{case['name']}: should pass: {s!r}"
    assert compiled >= len(SCHEMA_CASES) // 2, (compiled, len(SCHEMA_CASES))


def multi_byte_vocab():
    """Bytes plus multi-byte pieces as BPE vocabularies have them (JSON punctuation runs,
    words with a leading space, digits), an empty-text control token and two EOG tokens."""
    pieces = [bytes([i]) for i in range(256)]
    words = ['{"', '":', '",', '"}', ' "', "name", "age", "true", "false", "null", " true", "12", "345", "0.", "e+",
             '": "', '": ', "tags", '["', '"]', "],", "Al", "ice", " Bob", "\\n", "\\u00", "é", "\xa0"]
    pieces += [w.encode("utf-8") for w in words]
    pieces += [b"\xc3", b"\xa9x"]  # partial UTF-8 pieces
    pieces += [b"", b"</s>", b"<eot>"]
    n = len(pieces)
    return pieces, nucleus.Vocab(pieces, [n - 2, n - 1])


SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}


def tokenize_longest(pieces, text):
    data = text.encode("utf-8")
    out = []
    i = 0
    while i < len(data):
        best = max(
            (t for t, p in enumerate(pieces) if p and data.startswith(p, i) and t < len(pieces) - 2), key=lambda t: len(pieces[t])
        )
        out.append(best)
        i += len(pieces[best])
    return out


def test_bitmask_equals_the_rust_mask_and_token_checks():
    pieces, vocab = multi_byte_vocab()
    g = nucleus.Grammar(vocab, json_schema=SCHEMA)
    doc = '{"name":"Alice é","age":12345,"tags":["a\\n","Bob"]}'
    tokens = tokenize_longest(pieces, doc)
    assert len(tokens) < len(doc.encode())  # multi-byte tokens are used
    bm = nucleus.allocate_token_bitmask(3, vocab.n_vocab)
    for t in tokens + [vocab.n_vocab - 1]:
        g.fill_next_token_bitmask(bm, 2)
        bits = np.unpackbits(bm[2].view(np.uint8), bitorder="little")
        assert not bits[vocab.n_vocab :].any()  # padding bits stay clear
        got = set(np.flatnonzero(bits[: vocab.n_vocab]).tolist())
        assert got == set(g.allowed_tokens())
        assert got == {x for x in range(vocab.n_vocab) if g.is_allowed(x)}
        assert t in got
        assert g.accept_token(t)
    assert g.is_terminated()
    assert not bm[:2].any()  # other rows untouched


def test_rollback_restores_masks_and_termination():
    pieces, vocab = multi_byte_vocab()
    g = nucleus.Grammar(vocab, json_schema=SCHEMA)
    tokens = tokenize_longest(pieces, '{"name":"Al","age":0}')
    masks = []
    for t in tokens:
        masks.append(g.allowed_tokens())
        assert g.accept_token(t)
    assert g.can_end() and g.accept_token(vocab.n_vocab - 2) and g.is_terminated()
    assert not g.accept_token(tokens[0])
    assert g.num_accepted == len(tokens) + 1
    g.rollback(1)
    assert not g.is_terminated() and g.can_end()
    g.rollback(4)
    assert g.allowed_tokens() == masks[len(tokens) - 4]
    with pytest.raises(ValueError, match="roll back"):
        g.rollback(100)
    twin = g.clone()
    g.rollback(g.num_accepted)
    assert g.allowed_tokens() == masks[0]
    assert twin.num_accepted == len(tokens) - 4
    g.accept_token(tokens[0])
    g.reset()
    assert g.num_accepted == 0 and g.allowed_tokens() == masks[0]
    assert not g.accept_token(ord("x"))  # refused: nothing changes
    assert g.num_accepted == 0


def test_errors():
    with pytest.raises(ValueError, match="line 1, column 12"):
        nucleus.Grammar(BYTE_VOCAB, 'root ::= "a')
    with pytest.raises(ValueError, match="start rule"):
        nucleus.Grammar(BYTE_VOCAB, 'rot ::= "a"')
    with pytest.raises(ValueError, match="if at #/properties/x"):
        nucleus.Grammar(BYTE_VOCAB, json_schema={"type": "object", "properties": {"x": {"if": {"type": "string"}}}})
    with pytest.raises(ValueError, match="exactly one"):
        nucleus.Grammar(BYTE_VOCAB)
    with pytest.raises(ValueError, match="words"):
        nucleus.Grammar(BYTE_VOCAB, 'root ::= "a"').fill_next_token_bitmask(np.zeros(8, dtype=np.int32))
    with pytest.raises(ValueError, match="read-only"):
        ro = np.zeros(9, dtype=np.int32)
        ro.flags.writeable = False
        nucleus.Grammar(BYTE_VOCAB, 'root ::= "a"').fill_next_token_bitmask(ro)
    with pytest.raises(BufferError):
        nucleus.Grammar(BYTE_VOCAB, 'root ::= "a"').fill_next_token_bitmask(np.zeros(9, dtype=np.int64))
    with pytest.raises(ValueError, match="outside"):
        nucleus.Vocab([b"a"], [3])


def test_apply_token_bitmask_inplace():
    g = nucleus.Grammar(BYTE_VOCAB, 'root ::= [a-c] "x"')
    bm = nucleus.allocate_token_bitmask(2, BYTE_VOCAB.n_vocab)
    g.fill_next_token_bitmask(bm, 0)
    g.accept_token(ord("b"))
    g.fill_next_token_bitmask(bm, 1)
    logits = np.zeros((2, BYTE_VOCAB.n_vocab), dtype=np.float32)
    nucleus.apply_token_bitmask_inplace(logits, bm)
    assert np.flatnonzero(np.isfinite(logits[0])).tolist() == [ord("a"), ord("b"), ord("c")]
    assert np.flatnonzero(np.isfinite(logits[1])).tolist() == [ord("x")]
    # A sampler over masked logits can only pick allowed tokens.
    s = nucleus.Sampler(BYTE_VOCAB.n_vocab, seed=1, temp=1.0, top_k=0, top_p=1.0, min_p=0.0)
    assert all(s.sample(logits[0]) in (97, 98, 99) for _ in range(20))


DESCRIPTOR = {
    "modelId": "toy",
    "descriptors": [
        {
            "path": "action",
            "leaves": [
                {"name": "THINK", "tokens": [100, 101]},
                {"name": "TALK", "tokens": [100, 102, 103, 104]},
                {"name": "STOP", "tokens": [7]},
            ],
        }
    ],
}


def test_token_trie():
    t = nucleus.TokenTrie(DESCRIPTOR, n_vocab=200)
    assert sorted(t.allowed()) == [7, 100]
    assert t.forced() == [] and t.complete() is None and not t.is_finished()
    t.advance(100)
    assert sorted(t.allowed()) == [101, 102]
    t.advance(102)
    assert t.forced() == [103, 104]
    with pytest.raises(ValueError, match="does not continue"):
        t.advance([103, 5])
    assert t.forced() == [103, 104]  # a refused advance changes nothing
    t.advance(t.forced())
    assert t.complete() == "TALK" and t.is_finished()
    bm = nucleus.allocate_token_bitmask(1, 200)
    t.fill_next_token_bitmask(bm)
    assert bm[0].tolist() == [-1] * 6 + [0xFF]  # finished: everything allowed, padding bits clear
    t.reset()
    t.fill_next_token_bitmask(bm)
    bits = np.unpackbits(bm[0].view(np.uint8), bitorder="little")[:200]
    assert np.flatnonzero(bits).tolist() == [7, 100]
    sampled = nucleus.TokenTrie(json.dumps(DESCRIPTOR), "sampled", path="action", n_vocab=200)
    assert sorted(sampled.allowed()) == [7, 100] and sampled.mode == "sampled"
    with pytest.raises(ValueError, match="modelId"):
        nucleus.TokenTrie(DESCRIPTOR, model_id="other")
    with pytest.raises(ValueError, match="outside the vocabulary"):
        nucleus.TokenTrie(DESCRIPTOR, n_vocab=50)
    with pytest.raises(ValueError, match="no descriptor"):
        nucleus.TokenTrie(DESCRIPTOR, path="nope")
    with pytest.raises(ValueError, match="mode"):
        nucleus.TokenTrie(DESCRIPTOR, "fast")


def test_token_trie_signature():
    """`TokenTrie(descriptor, mode)`: the only path, n_vocab from the largest id, greedy by default."""
    t = nucleus.TokenTrie(DESCRIPTOR)
    assert (t.path, t.mode, t.n_vocab) == ("action", "greedy", 105)
    assert sorted(t.allowed()) == [7, 100]
    assert nucleus.TokenTrie(DESCRIPTOR, "sampled").mode == "sampled"
    two = {**DESCRIPTOR, "descriptors": DESCRIPTOR["descriptors"] + [{"path": "target", "leaves": [
        {"name": "ME", "tokens": [9]}]}]}
    with pytest.raises(ValueError, match=r"2 paths \(action, target\).*path"):
        nucleus.TokenTrie(two)
    assert nucleus.TokenTrie(two, path="target").allowed() == [9]
    with pytest.raises(TypeError):
        nucleus.TokenTrie(DESCRIPTOR, "greedy", "action")  # path and n_vocab are keywords
