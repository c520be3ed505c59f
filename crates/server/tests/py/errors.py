"""Errors: every bad request is a 4xx with OpenAI's error shape (message, type, param, code)
naming the field; unknown model 404; 413, 405, unknown route; malformed JSON, NaN, invalid
UTF-8, wrong types, huge values; never a 5xx (the official client retries those)."""

import json

import openai

from common import MODEL, check_error_body, client, done, expect_api_error, raw

c = client()
msgs = [{"role": "user", "content": "hi"}]


def bad(param, code=None, **kw):
    kw.setdefault("model", MODEL)
    kw.setdefault("messages", msgs)
    kw.setdefault("max_tokens", 4)
    return expect_api_error(openai.BadRequestError, 400, lambda: c.chat.completions.create(**kw), param, code)


bad("temperature", "decimal_above_max_value", temperature=3)
bad("temperature", "decimal_below_min_value", temperature=-0.5)
bad("temperature", "invalid_type", extra_body={"temperature": "hot"})
bad("top_p", "decimal_above_max_value", top_p=1.5)
bad("n", "integer_below_min_value", n=0)
bad("n", "integer_above_max_value", n=1000)
bad("n", extra_body={"n": 50})                           # more than --parallel
bad("max_tokens", "integer_above_max_value", max_tokens=10**12)
bad("max_tokens", "context_length_exceeded", max_tokens=100000)
bad("max_tokens", "integer_below_min_value", max_tokens=0)
bad("top_logprobs", None, top_logprobs=2)                # without logprobs
bad("top_logprobs", "integer_above_max_value", logprobs=True, top_logprobs=50)
bad("stop", "array_above_max_length", stop=["a", "b", "c", "d", "e"])
bad("stop", "invalid_value", stop=[""])
bad("logit_bias", "decimal_above_max_value", logit_bias={"5": 500})
bad("logit_bias", "integer_above_max_value", logit_bias={"99999999": 1})
bad("seed", "integer_below_min_value", seed=-2)
bad("seed", "integer_above_max_value", seed=2**40)
bad("presence_penalty", "decimal_above_max_value", presence_penalty=2.5)
bad("stream_options", "invalid_value", stream_options={"include_usage": True})
bad("response_format", "invalid_value",
    response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "string", "not": {}}}})
bad("response_format.json_schema.name", "missing_required_parameter",
    response_format={"type": "json_schema", "json_schema": {"schema": {}}})
bad("response_format.type", "invalid_value", response_format={"type": "xml"})
bad("grammar", "invalid_value", extra_body={"grammar": "root ::= \"a\" @"})
bad("json_schema", "invalid_value", extra_body={"json_schema": {"type": "string", "not": {}}})
bad("tools", "empty_array", tools=[])
bad("messages", "empty_array", messages=[])
bad("messages[0].role", "invalid_value", messages=[{"role": "wizard", "content": "x"}])
bad("messages[0].content", "missing_required_parameter", messages=[{"role": "user"}])
bad("messages[0].content[0].type", "unsupported_parameter",
    messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://x/y.png"}}]}])
bad("top_k", "integer_below_min_value", extra_body={"top_k": -5})
bad("min_p", "decimal_above_max_value", extra_body={"min_p": 2})
bad("repeat_penalty", None, extra_body={"repeat_penalty": 0})
bad("repeat_last_n", "integer_below_min_value", extra_body={"repeat_last_n": -1})
bad("mirostat", "integer_above_max_value", extra_body={"mirostat": 3})
bad("samplers", "invalid_value", extra_body={"samplers": ["top_k", "bogus"]})
bad("samplers", "invalid_value", extra_body={"samplers": "kz"})
bad("dry_sequence_breakers", "invalid_value", extra_body={"dry_sequence_breakers": []})
bad("adaptive_decay", "decimal_above_max_value", extra_body={"adaptive_decay": 1.0})
bad("min_tokens", "invalid_value", extra_body={"min_tokens": 10})
bad("stop_token_ids", "integer_above_max_value", extra_body={"stop_token_ids": [10**7]})
bad("logprobs", "invalid_type", extra_body={"logprobs": 3})
# a prompt longer than the context
e = bad("messages", "context_length_exceeded", messages=[{"role": "user", "content": "word " * 5000}])
assert "context length" in e["message"]
expect_api_error(openai.BadRequestError, 400,
                 lambda: c.completions.create(model=MODEL, prompt="word " * 5000, max_tokens=1),
                 "prompt", "context_length_exceeded")
expect_api_error(openai.BadRequestError, 400,
                 lambda: c.completions.create(model=MODEL, prompt=[1, 2, 10**6]), "prompt")
expect_api_error(openai.BadRequestError, 400,
                 lambda: c.completions.create(model=MODEL, prompt=[]), "prompt", "empty_array")
expect_api_error(openai.BadRequestError, 400,
                 lambda: c.completions.create(model=MODEL, prompt="x", suffix="y"), "suffix")
expect_api_error(openai.BadRequestError, 400,
                 lambda: c.completions.create(model=MODEL, prompt="x", logprobs=30), "logprobs")
# unknown model
expect_api_error(openai.NotFoundError, 404,
                 lambda: c.chat.completions.create(model="gpt-9", messages=msgs), "model", "model_not_found")

# raw HTTP: what the SDK cannot send
for body, what in [
    (b"{not json", "malformed JSON"),
    (b'{"model": "smollm2", "messages": [{"role": "user", "content": "hi"}], "temperature": NaN}', "NaN"),
    (b'{"model": "smollm2", "temperature": 1e999, "messages": []}', "overflowing number"),
    (b'{"model": "smollm2", "messages": [{"role": "user", "content": "\xff\xfe"}]}', "invalid UTF-8"),
    (b"[1, 2, 3]", "not an object"),
    (b"", "empty body"),
    (b'{"model": 5, "messages": []}', "wrong model type"),
    (b'{"messages": "hi"}', "messages not an array"),
]:
    status, _, data = raw("POST", "/v1/chat/completions", body)
    assert status == 400, (what, status, data)
    check_error_body(data, 400)
status, _, data = raw("POST", "/v1/chat/completions", b'{"model": "smollm2", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2, "temperature": 0}')
assert status == 200, data
# 413: a body over the limit (the test server allows 1 MiB)
big = json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "x" * (2 << 20)}]})
status, _, data = raw("POST", "/v1/chat/completions", big)
assert status == 413, status
check_error_body(data, 413, code="request_too_large")
expect_api_error(openai.APIStatusError, 413,
                 lambda: c.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x" * (2 << 20)}]))
# unknown route, wrong method
status, _, data = raw("POST", "/v1/embeddings", {"input": "x"})
assert status == 404
check_error_body(data, 404)
status, _, data = raw("GET", "/v1/chat/completions")
assert status == 405
check_error_body(data, 405)
done("errors")
