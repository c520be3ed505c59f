"""vocab_from_tokenizer_json on small tokenizer.json files of both encodings."""

import json

import nucleus


def write(tmp_path, tok):
    p = tmp_path / "tokenizer.json"
    p.write_text(json.dumps(tok, ensure_ascii=False))
    return str(p)


def test_byte_level_bpe(tmp_path):
    # GPT-2 style: "Ġ" is a space, "Ċ" a newline, "Ã©" the two bytes of "é".
    tok = {
        "added_tokens": [{"id": 0, "content": "<|endoftext|>", "special": True}],
        "pre_tokenizer": {"type": "ByteLevel"},
        "decoder": {"type": "ByteLevel"},
        "model": {"type": "BPE", "vocab": {"<|endoftext|>": 0, "{": 1, "Ġhello": 2, "Ċ": 3, "Ã©": 4, '"}': 5}},
    }
    v = nucleus.vocab_from_tokenizer_json(write(tmp_path, tok))
    assert v.n_vocab == 6
    g = nucleus.Grammar(v, 'root ::= " hello" "\\n" "é"')
    assert g.allowed_tokens() == [2]
    assert g.accept_token(2) and g.allowed_tokens() == [3]
    assert g.accept_token(3) and g.allowed_tokens() == [4]
    assert g.accept_token(4) and g.allowed_tokens() == [0]  # <|endoftext|> ends generation


def test_sentencepiece_byte_fallback(tmp_path):
    tok = {
        "added_tokens": [
            {"id": 0, "content": "<unk>", "special": True},
            {"id": 1, "content": "<s>", "special": True},
            {"id": 2, "content": "</s>", "special": True},
        ],
        "decoder": {"type": "Sequence", "decoders": [{"type": "Replace"}, {"type": "ByteFallback"}]},
        "model": {"type": "BPE", "vocab": {"<unk>": 0, "<s>": 1, "</s>": 2, "<0x0A>": 3, "▁hi": 4, "!": 5}},
    }
    v = nucleus.vocab_from_tokenizer_json(write(tmp_path, tok), eog=["</s>"])
    g = nucleus.Grammar(v, 'root ::= " hi" "\\n"? "!"')
    assert g.allowed_tokens() == [4]
    g.accept_token(4)
    assert g.allowed_tokens() == [3, 5]  # <s> and <unk> have no text; "</s>" not yet
    g.accept_token(5)
    assert g.allowed_tokens() == [2]
