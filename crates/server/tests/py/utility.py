"""llama-server's utility routes on the real model: /tokenize (ids, pieces as strings or byte
lists, add_special, parse_special, mixed content), /detokenize (the round trip), /apply-template
(the very prompt the chat endpoint runs: its token count is the chat answer's prompt_tokens,
with and without tools), /props (the server's defaults and sizes), their 400s, and the 404's
list of routes."""

import json
import os

from common import MODEL, check_error_body, client, done, raw


def post(path, body):
    status, _, data = raw("POST", path, body)
    assert status == 200, (path, body, status, data)
    return json.loads(data)


def bad(path, body, param, code=None):
    status, _, data = raw("POST", path, body)
    assert status == 400, (path, body, status, data)
    return check_error_body(data, 400, param, code)


def tokenize(content, **kw):
    return post("/tokenize", {"content": content, **kw})["tokens"]


def piece_bytes(p):
    return p.encode() if isinstance(p, str) else bytes(p)


def test_tokenize_round_trip():
    text = "Hello world, this is Nucleus."
    ids = tokenize(text)
    assert ids and all(isinstance(t, int) for t in ids), ids
    assert post("/detokenize", {"tokens": ids}) == {"content": text}
    pieces = tokenize(text, with_pieces=True)
    assert [p["id"] for p in pieces] == ids, pieces
    assert all(set(p) == {"id", "piece"} for p in pieces), pieces
    assert "".join(p["piece"] for p in pieces) == text, pieces
    # The defaults are llama-server's: add_special false, parse_special true.
    assert tokenize(text, add_special=False, parse_special=True) == ids
    with_special = tokenize(text, add_special=True)
    assert with_special[-len(ids):] == ids and len(with_special) - len(ids) in (0, 1), with_special
    # Special-token text is the special token, or (parse_special false) plain text.
    special = tokenize("<|im_start|>")
    assert len(special) == 1, special
    assert len(tokenize("<|im_start|>", parse_special=False)) > 1
    assert post("/detokenize", {"tokens": special}) == {"content": "<|im_start|>"}
    assert post("/detokenize", {"tokens": []}) == {"content": ""}
    assert tokenize("") == []
    # A mixed list: strings tokenized, ids kept.
    head = tokenize("Hello")
    assert tokenize([head[0], " world"]) == [head[0]] + tokenize(" world")
    done("tokenize/detokenize round trip")


def test_pieces_that_are_not_utf8():
    """A character the vocabulary does not hold whole is split into byte tokens: their pieces
    are byte lists, and the bytes of all pieces are the text's."""
    found = 0
    for text in ["\U0001F980 crab", "\U00013000", "\ua66e", "\u0f00\u0f01", "\U0001D518"]:
        pieces = tokenize(text, with_pieces=True)
        assert b"".join(piece_bytes(p["piece"]) for p in pieces) == text.encode(), (text, pieces)
        lists = [p for p in pieces if isinstance(p["piece"], list)]
        for p in lists:
            assert all(isinstance(b, int) and 0 <= b < 256 for b in p["piece"]), p
            try:
                bytes(p["piece"]).decode()
                raise AssertionError(f"{p} is valid UTF-8 but was sent as bytes")
            except UnicodeDecodeError:
                pass
        found += len(lists)
        ids = [p["id"] for p in pieces]
        assert post("/detokenize", {"tokens": ids}) == {"content": text}
    assert found > 0, "no text gave a piece that is not valid UTF-8"
    done(f"pieces as byte lists ({found})")


def test_token_errors():
    status, _, data = raw("GET", "/v1/models")
    n_vocab = json.loads(data)["data"][0]["meta"]["n_vocab"]
    bad("/detokenize", {"tokens": [-1]}, "tokens[0]", "integer_below_min_value")
    bad("/detokenize", {"tokens": [1, n_vocab]}, "tokens[1]", "integer_above_max_value")
    bad("/detokenize", {"tokens": [1, 2.5]}, "tokens[1]", "invalid_type")
    bad("/detokenize", {"tokens": "1 2"}, "tokens", "invalid_type")
    bad("/detokenize", {"tokens": [1, "2"]}, "tokens", "invalid_type")
    bad("/detokenize", {}, "tokens", "missing_required_parameter")
    bad("/tokenize", {}, "content", "missing_required_parameter")
    bad("/tokenize", {"content": True}, "content", "invalid_type")
    bad("/tokenize", {"content": [None]}, "content", "invalid_type")
    bad("/tokenize", {"content": ["a", n_vocab + 5]}, "content[1]", "integer_above_max_value")
    bad("/tokenize", {"content": "x", "with_pieces": "yes"}, "with_pieces", "invalid_type")
    bad("/tokenize", {"content": "x", "add_special": 1}, "add_special", "invalid_type")
    bad("/tokenize", {"content": "x", "parse_special": []}, "parse_special", "invalid_type")
    for path in ["/tokenize", "/detokenize", "/apply-template"]:
        status, _, data = raw("POST", path, "[1, 2]")
        assert status == 400, (path, status, data)
        check_error_body(data, 400, code="invalid_json")
        status, _, data = raw("POST", path, "{not json")
        assert status == 400, (path, status, data)
    done("token and field errors")


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def prompt_tokens_of(body):
    """The chat answer's prompt_tokens for `body`, and the token count of /apply-template's
    prompt for the same body (tokenized as the chat route does: automatic tokens, special
    tokens parsed)."""
    c = client()
    r = c.chat.completions.create(model=MODEL, max_tokens=1, temperature=0, **body)
    prompt = post("/apply-template", body)["prompt"]
    assert isinstance(prompt, str) and prompt, prompt
    return r.usage.prompt_tokens, len(tokenize(prompt, add_special=True)), prompt


def test_apply_template_is_the_chat_prompt():
    convo = {"messages": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Name a colour."},
        {"role": "assistant", "content": "Blue."},
        {"role": "user", "content": "Another?"},
    ]}
    used, rendered, prompt = prompt_tokens_of(convo)
    assert used == rendered, (used, rendered, prompt)
    assert "You are terse." in prompt and "Another?" in prompt and "<|im_start|>assistant" in prompt, prompt
    assert prompt.rstrip().endswith("<|im_start|>assistant"), prompt

    with_tools = {**convo, "tools": [WEATHER], "tool_choice": "auto"}
    used, rendered, tool_prompt = prompt_tokens_of(with_tools)
    assert used == rendered, (used, rendered, tool_prompt)
    assert "get_weather" in tool_prompt and tool_prompt != prompt, tool_prompt

    # A tool call and its result in the history render as the chat route renders them.
    history = {"messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    ], "tools": [WEATHER]}
    used, rendered, p = prompt_tokens_of(history)
    assert used == rendered and "sunny" in p, (used, rendered, p)

    # The Messages route counts the same prompt for the same conversation.
    status, _, data = raw("POST", "/v1/messages/count_tokens", {
        "model": MODEL, "system": "You are terse.",
        "messages": [{"role": "user", "content": "Name a colour."}, {"role": "assistant", "content": "Blue."},
                     {"role": "user", "content": "Another?"}]})
    assert status == 200, data
    assert json.loads(data)["input_tokens"] == len(tokenize(prompt, add_special=True)), (data, prompt)

    # Checked as the chat route checks its body.
    bad("/apply-template", {}, "messages", "missing_required_parameter")
    bad("/apply-template", {"messages": []}, "messages", "empty_array")
    bad("/apply-template", {"messages": [{"role": "user", "content": "x"}], "temperature": 9}, "temperature",
        "decimal_above_max_value")
    bad("/apply-template", {"messages": [{"role": "pirate", "content": "x"}]}, "messages[0].role", "invalid_value")
    status, _, data = raw("POST", "/apply-template", {"model": "other", "messages": [{"role": "user", "content": "x"}]})
    assert status == 404, data
    done("apply-template is the chat prompt")


def test_props():
    status, _, data = raw("GET", "/props")
    assert status == 200, data
    p = json.loads(data)
    s = p["default_generation_settings"]
    status, _, data = raw("GET", "/v1/models")
    card = json.loads(data)["data"][0]
    assert s["n_ctx"] == card["max_model_len"] == 1024, (s["n_ctx"], card)
    assert p["total_slots"] == card["meta"]["parallel"] == 2, p["total_slots"]
    assert p["model_alias"] == MODEL
    assert p["model_path"] == os.environ["NUCLEUS_MODEL_PATH"], p["model_path"]
    assert "<|im_start|>" in p["chat_template"], p["chat_template"][:200]
    assert p["build_info"].startswith("nucleus "), p["build_info"]
    assert p["modalities"] == {"vision": False, "audio": False}
    assert p["endpoint_metrics"] is True and p["endpoint_slots"] is False and p["is_sleeping"] is False
    assert isinstance(p["bos_token"], str) and isinstance(p["eos_token"], str) and p["eos_token"], p
    d = s["params"]
    # The server's defaults are llama.cpp's (no sampling flags were given).
    expect = {"seed": 4294967295, "top_k": 40, "repeat_last_n": 64, "mirostat": 0, "dry_allowed_length": 2,
              "max_tokens": -1, "n_predict": -1, "n_probs": 0, "min_keep": 0, "ignore_eos": False,
              "stream": False, "stop": [], "logit_bias": [], "reasoning_format": "auto",
              "samplers": ["penalties", "dry", "top_n_sigma", "top_k", "typ_p", "top_p", "min_p", "xtc",
                           "temperature"]}
    for k, v in expect.items():
        assert d[k] == v, (k, d[k], v)
    close = {"temperature": 0.8, "top_p": 0.95, "min_p": 0.05, "typical_p": 1.0, "repeat_penalty": 1.0,
             "xtc_threshold": 0.1, "dry_base": 1.75, "mirostat_tau": 5.0, "mirostat_eta": 0.1,
             "top_n_sigma": -1.0, "dry_multiplier": 0.0}
    for k, v in close.items():
        assert abs(d[k] - v) < 1e-6, (k, d[k], v)
    assert d["dry_sequence_breakers"] == ["\n", ":", "\"", "*"], d["dry_sequence_breakers"]
    done("props")


def test_unknown_route_lists_the_routes():
    status, _, data = raw("GET", "/no/such/route")
    assert status == 404, data
    e = check_error_body(data, 404, code="unknown_url")
    for route in ["POST /v1/chat/completions", "POST /v1/responses", "POST /v1/messages", "POST /tokenize",
                  "POST /detokenize", "POST /apply-template", "GET /props", "GET /v1/models", "GET /health"]:
        assert route in e["message"], (route, e["message"])
    assert "/chat/completions," not in e["message"].replace("/v1/chat/completions", ""), e["message"]
    done("404 lists the routes")


test_tokenize_round_trip()
test_pieces_that_are_not_utf8()
test_token_errors()
test_apply_template_is_the_chat_prompt()
test_props()
test_unknown_route_lists_the_routes()
