"""Speculative decoding through `Model.generate(speculative=...)`: on the real SmolLM2 a greedy and
a seeded sampled generation give the same tokens and text with and without it, greedy drafts on a
repetitive prompt are accepted, and bad values raise naming the field (the server's wording)."""

import re

import pytest

import nucleus

# A prompt the model copies from: its greedy continuation repeats the pattern.
REPETITIVE = ("Monday, Tuesday, Wednesday, Thursday, Friday.\nMonday, Tuesday, Wednesday, Thursday, Friday.\n"
              "Monday, Tuesday, Wednesday, Thursday, Friday.\nMonday,")
STATS = {"drafted", "accepted", "acceptance_rate", "passes_saved", "verify_passes"}


@pytest.fixture(scope="module")
def model():
    return nucleus.Model("smollm2")


@pytest.mark.parametrize("params", [{"temp": 0.0}, {"seed": 42}, {"seed": 7, "temp": 1.0, "top_k": 0, "top_p": 1.0,
                                                                      "min_p": 0.0}])
def test_same_tokens_with_and_without_speculation(model, params):
    plain = model.generate(REPETITIVE, max_tokens=40, **params)
    want = list(plain)
    assert plain.speculative is None
    for spec in ({"type": "ngram", "draft_max": 8}, {}, {"ngram_size_n": 2}):
        g = model.generate(REPETITIVE, max_tokens=40, speculative=spec, **params)
        assert list(g) == want, spec
        assert g.stop_reason == plain.stop_reason
        s = g.speculative
        assert set(s) == STATS
        assert s["passes_saved"] == s["accepted"] <= s["drafted"]
        assert s["acceptance_rate"] == (s["accepted"] / s["drafted"] if s["drafted"] else 0.0)
        if params.get("temp") == 0.0:
            assert s["accepted"] > 0 and s["verify_passes"] > 0, s


def test_off_by_type_or_none(model):
    g = model.generate(REPETITIVE, max_tokens=8, temp=0.0, speculative={"type": "none"})
    list(g)
    assert g.speculative is None
    g = model.generate(REPETITIVE, max_tokens=8, temp=0.0, speculative=None)
    list(g)
    assert g.speculative is None


@pytest.mark.parametrize("spec,field", [
    ({"draft_max": 0}, "speculative.draft_max"),
    ({"draft_max": 257}, "speculative.draft_max"),
    ({"draft_min": -1}, "speculative.draft_min"),
    ({"ngram_size_n": 1.5}, "speculative.ngram_size_n"),
    ({"draft_max": "8"}, "speculative.draft_max"),
    ({"draft_min": 9, "draft_max": 4}, "speculative.draft_min"),
    ({"type": "medusa"}, "speculative.type"),
    ({"type": "draft"}, "speculative.type"),
    ({"draft_mx": 4}, "speculative.draft_mx"),
])
def test_bad_values_name_their_field(model, spec, field):
    with pytest.raises(ValueError, match=re.escape(f"'{field}'")):
        model.generate(REPETITIVE, speculative=spec)


def test_bad_types(model):
    with pytest.raises(ValueError, match=re.escape(
            "Invalid 'speculative.draft_max': integer above maximum value. Expected a value <= 256, but got 300 "
            "instead.")):
        model.generate(REPETITIVE, speculative={"draft_max": 300})
    with pytest.raises(TypeError, match="speculative"):
        model.generate(REPETITIVE, speculative="ngram")
    with pytest.raises(TypeError, match="speculative"):
        model.generate(REPETITIVE, speculative=[1])
