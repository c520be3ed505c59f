"""A ``Vocab`` from a Hugging Face ``tokenizer.json``: each token's bytes as the model emits
them, so grammar masks see the same text llama.cpp's vocabulary gives.

Two encodings cover the common tokenizers:

* byte-level BPE (GPT-2, Llama 3, Qwen, SmolLM2): token strings are bytes mapped to printable
  characters (GPT-2's ``bytes_to_unicode``); the mapping is inverted.
* SentencePiece-style (Llama 2, Mistral, Gemma): ``▁`` stands for a space and ``<0xNN>`` tokens
  are single bytes (byte fallback).

Special added tokens (``"special": true``) have no text: grammars never allow them by text,
as with llama.cpp's control tokens. End-of-generation tokens are given by content or id
(default: the special tokens among the usual end markers).
"""

import json

from ._nucleus import Vocab

# End-of-generation markers of common chat models (used when ``eog`` is not given).
_EOG_MARKERS = {"</s>", "<|endoftext|>", "<|im_end|>", "<|eot_id|>", "<|end_of_text|>", "<end_of_turn>", "<eos>", "<|end|>"}


def _byte_decoder():
    """The inverse of GPT-2's ``bytes_to_unicode``: printable character -> byte."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    chars = list(printable)
    n = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(printable, chars)}


def _is_byte_level(tok):
    def has(node, kind):
        if not isinstance(node, dict):
            return False
        if node.get("type") == kind:
            return True
        return any(has(x, kind) for x in node.get("decoders", []) + node.get("pretokenizers", []))

    return has(tok.get("decoder"), "ByteLevel") or has(tok.get("pre_tokenizer"), "ByteLevel")


def vocab_from_tokenizer_json(path, eog=None):
    """Reads ``tokenizer.json`` at ``path``; ``eog`` lists end-of-generation tokens by content
    (str) or id (int)."""
    with open(path, encoding="utf-8") as f:
        tok = json.load(f)
    ids = dict(tok["model"]["vocab"])
    added = {a["content"]: a for a in tok.get("added_tokens", [])}
    for content, a in added.items():
        ids[content] = a["id"]
    n = max(ids.values()) + 1
    byte_level = _is_byte_level(tok)
    decoder = _byte_decoder() if byte_level else None
    pieces = [b""] * n
    for text, i in ids.items():
        a = added.get(text)
        if a is not None and a.get("special", False):
            continue  # control token: no text
        if a is not None:
            pieces[i] = text.encode("utf-8")  # added plain text is stored as written
        elif byte_level:
            try:
                pieces[i] = bytes(decoder[c] for c in text)
            except KeyError:
                pieces[i] = text.encode("utf-8")
        elif len(text) == 6 and text.startswith("<0x") and text.endswith(">"):
            pieces[i] = bytes([int(text[3:5], 16)])
        else:
            pieces[i] = text.replace("\u2581", " ").encode("utf-8")
    if eog is None:
        eog_ids = [a["id"] for c, a in added.items() if a.get("special", False) and c in _EOG_MARKERS]
    else:
        eog_ids = [e if isinstance(e, int) else ids[e] for e in eog]
    return Vocab(pieces, eog_ids)
