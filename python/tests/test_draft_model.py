"""Speculative decoding with a draft model: `Model(..., draft_model=...)` and
`generate(speculative={"type": "draft", ...})`. No larger model of SmolLM2's vocabulary ships on
the registries, so SmolLM2 is its own draft: the tokens are those of plain decoding (greedy and a
seeded sampled chain) and, greedy, every draft token is accepted, which proves the bookkeeping.
The errors: a missing file (FileNotFoundError), an unknown name and another vocabulary
(ValueError), `type: "draft"` without a draft model (ValueError naming the field)."""

import re

import pytest

import nucleus

from conftest import REPO

PROMPT = "Here is a list of fruits: apple, banana, cherry, date. Write it again, then add two more:"


@pytest.fixture(scope="module")
def drafted():
    return nucleus.Model("smollm2", draft_model="smollm2")


def run(model, **kw):
    g = model.generate(PROMPT, max_tokens=32, **kw)
    return list(g), g


@pytest.mark.parametrize("params", [{"temp": 0.0}, {"seed": 42, "temp": 0.9}])
def test_own_draft_gives_the_plain_tokens(drafted, params):
    assert drafted.has_draft_model
    want, plain = run(drafted, **params)
    assert plain.speculative is None
    for spec in ({"type": "draft", "draft_max": 8}, {}, {"type": "draft", "draft_min": 2}):
        got, g = run(drafted, speculative=spec, **params)
        assert got == want, spec
        assert g.stop_reason == plain.stop_reason
        s = g.speculative
        assert s["drafted"] > 0 and s["passes_saved"] == s["accepted"] <= s["drafted"], (spec, s)
        if params["temp"] == 0.0:
            # The draft model is the model: its greedy proposals are the greedy tokens.
            assert s["accepted"] == s["drafted"] and s["acceptance_rate"] == 1.0, (spec, s)
            assert s["verify_passes"] < len(want) // 2, (spec, s)
    # n-gram drafts still work beside a draft model.
    got, g = run(drafted, speculative={"type": "ngram"}, **params)
    assert got == want and g.speculative is not None


def test_draft_without_a_draft_model_is_refused():
    model = nucleus.Model("smollm2")
    assert not model.has_draft_model
    with pytest.raises(ValueError, match=re.escape("Invalid 'speculative.type': 'draft' needs a draft model")):
        model.generate(PROMPT, speculative={"type": "draft"})


def test_bad_draft_models():
    with pytest.raises(FileNotFoundError, match="draft_model: model file .* does not exist"):
        nucleus.Model("smollm2", draft_model=str(REPO / "no-such-draft.gguf"))
    with pytest.raises(ValueError, match="draft_model: unknown model"):
        nucleus.Model("smollm2", draft_model="no-such-model-name")
    with pytest.raises(TypeError):
        nucleus.Model("smollm2", draft_model=3)


def test_a_draft_model_of_another_vocabulary_is_refused():
    try:
        nucleus.Model("smollm2", draft_model="gemma3")
    except ValueError as e:
        assert "vocabulary has 262144 tokens and the model's 49152" in str(e), e
    except RuntimeError as e:
        if "not downloaded" in str(e):
            pytest.skip("gemma3 is not pulled (nucleus pull gemma3)")
        raise
    else:
        pytest.fail("gemma3 was accepted as a draft model for smollm2")
