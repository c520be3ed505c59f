"""Nucleus: LLM token sampling with llama.cpp's exact semantics, from Rust.

``Sampler(n_vocab, **params)`` is llama.cpp's common sampler chain (same parameter names,
defaults and seeded random stream); ``sample_batch`` samples a ``[B, V]`` matrix across
threads with the GIL released.
"""

from ._nucleus import Sampler, sample_batch

__all__ = ["Sampler", "sample_batch"]
