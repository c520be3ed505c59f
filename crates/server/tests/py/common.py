"""Shared helpers for the server tests: an official `openai` client in strict mode (every
response is validated against the SDK's types; nothing is retried), raw HTTP for what the
SDK cannot send, and error-shape checks."""

import http.client
import json
import os
import sys
import urllib.parse

import openai
from openai import OpenAI

BASE = os.environ["NUCLEUS_BASE_URL"]  # e.g. http://127.0.0.1:1234/v1
MODEL = os.environ.get("NUCLEUS_MODEL_ID", "smollm2")
KEY = os.environ.get("NUCLEUS_API_KEY_FOR_TEST", "not-needed")


def client(api_key=None, strict=True, **kw):
    return OpenAI(base_url=BASE, api_key=api_key or KEY, max_retries=0, timeout=120,
                  _strict_response_validation=strict, **kw)


def chat(c, content, **kw):
    kw.setdefault("model", MODEL)
    kw.setdefault("max_tokens", 8)
    return c.chat.completions.create(messages=[{"role": "user", "content": content}], **kw)


def raw(method, path, body=None, headers=None):
    """(status, headers, bytes) of a raw request to the server (path without /v1 prefix rules)."""
    u = urllib.parse.urlparse(BASE)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
    elif isinstance(body, str):
        body = body.encode()
    conn.request(method, path, body=body, headers=h)
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, dict(r.getheaders()), data


def check_error_body(data, status, param=None, code=None):
    body = json.loads(data)
    assert set(body) == {"error"}, body
    e = body["error"]
    assert set(e) == {"message", "type", "param", "code"}, e
    assert isinstance(e["message"], str) and e["message"], e
    assert isinstance(e["type"], str), e
    if param is not None:
        assert e["param"] == param, (param, e)
    if code is not None:
        assert e["code"] == code, (code, e)
    return e


def expect_api_error(exc_type, status, fn, param=None, code=None):
    """Runs fn, which must raise the SDK's exc_type with an OpenAI-shaped body."""
    try:
        fn()
    except exc_type as e:
        assert e.status_code == status, (e.status_code, status, e)
        body = e.response.json()
        return check_error_body(json.dumps(body), status, param, code)
    raise AssertionError(f"expected {exc_type.__name__} ({status})")


def done(name):
    print(f"{name}: ok")
    sys.stdout.flush()
