"""Nucleus: LLM token sampling with llama.cpp's exact semantics, from Rust.

* ``Sampler(n_vocab, **params)``: llama.cpp's common sampler chain (same parameter names,
  defaults and seeded random stream); ``sample_batch`` samples a ``[B, V]`` matrix across
  threads with the GIL released.
* ``Vocab`` / ``Grammar`` / ``TokenTrie``: constrained decoding; masks are written into packed
  int32 bitmasks of ``ceil(V / 32)`` words per row (the layout vLLM's structured-output
  backends, llguidance and XGrammar use). ``allocate_token_bitmask`` and
  ``apply_token_bitmask_inplace`` connect them to NumPy logits; ``vocab_from_tokenizer_json``
  reads a Hugging Face ``tokenizer.json``.
* ``Model(name or path)``: local generation (``generate`` streams ``(token, text)``), optionally
  constrained to the leaves of a ``TokenTrie`` (``set_token_trie`` / ``clear_token_trie``, or
  ``generate(..., token_trie=...)``).
"""

from ._nucleus import Generation, Grammar, Model, Sampler, TokenTrie, Vocab, sample_batch
from ._tokenizer import vocab_from_tokenizer_json

__all__ = [
    "Generation",
    "Grammar",
    "Model",
    "Sampler",
    "TokenTrie",
    "Vocab",
    "allocate_token_bitmask",
    "apply_token_bitmask_inplace",
    "sample_batch",
    "vocab_from_tokenizer_json",
]


def allocate_token_bitmask(batch_size, vocab_size):
    """A zeroed int32 array of shape ``(batch_size, ceil(vocab_size / 32))``."""
    import numpy as np

    return np.zeros((batch_size, (vocab_size + 31) // 32), dtype=np.int32)


def apply_token_bitmask_inplace(logits, bitmask):
    """Sets the logits of disallowed tokens to ``-inf``, in place.

    ``logits`` is ``[V]`` or ``[B, V]`` (NumPy, any float dtype); ``bitmask`` is the matching
    int32 row or rows filled by ``fill_next_token_bitmask``. Usable from a
    ``transformers``-style logits processor.
    """
    import numpy as np

    v = logits.shape[-1]
    bits = np.unpackbits(np.ascontiguousarray(bitmask).view(np.uint8), axis=-1, bitorder="little")
    allowed = bits[..., :v].astype(bool)
    logits[~allowed] = -np.inf
    return logits
