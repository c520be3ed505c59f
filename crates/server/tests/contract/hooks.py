"""Schemathesis hooks for the contract run (crates/server/tests/contract.rs, docs/server.md, "The API contract").

A generated `model` string is dropped (the server then uses the one model it serves; any other
id is a 404, which would end most examples before the body is read).

Generated requests stay short: a generation body gets `max_tokens` of at most 4 (whatever length
field it had, or none), so every example finishes in milliseconds on a small model; the values
schemathesis chose for everything else are kept, invalid ones included.
"""

import schemathesis

LIMIT = 4
LENGTH_FIELDS = ("max_tokens", "max_completion_tokens", "n_predict", "max_output_tokens")


@schemathesis.hook
def before_call(context, case, kwargs):
    body = case.body
    if not isinstance(body, dict):
        return
    if isinstance(body.get("model"), str):
        del body["model"]
    if not any(isinstance(body.get(k), int) and not isinstance(body.get(k), bool) for k in LENGTH_FIELDS):
        # No usable length: ask for a short answer (a wrongly typed length stays, so the 400
        # for it is still tested).
        if all(body.get(k) is None for k in LENGTH_FIELDS):
            # /v1/responses names it max_output_tokens (and refuses max_tokens).
            body["max_output_tokens" if case.path.endswith("/responses") else "max_tokens"] = LIMIT
        return
    for k in LENGTH_FIELDS:
        v = body.get(k)
        if isinstance(v, int) and not isinstance(v, bool):
            if v > LIMIT or (k == "n_predict" and v < 0):  # n_predict -1: no limit
                body[k] = LIMIT


@schemathesis.hook
def after_call(context, case, response):
    """With NUCLEUS_CONTRACT_LOG set, appends each answer's status and error `param`/`code`."""
    import json
    import os

    path = os.environ.get("NUCLEUS_CONTRACT_LOG")
    if not path:
        return
    try:
        err = response.json().get("error") or {}
    except Exception:
        err = {}
    elapsed = getattr(response, "elapsed", 0.0)
    row = [case.method, case.path, response.status_code, err.get("param"), err.get("code"), (err.get("message") or "")[:200], round(elapsed, 3)]
    if elapsed > 2.0:
        row.append(case.body)  # slow: keep the body to reproduce it
    with open(path, "a") as f:
        f.write(json.dumps(row, default=str) + "\n")


_VALIDATORS = {}


@schemathesis.check
def stream_chunks_conform(ctx, response, case):
    """Each `data:` event of a streamed answer is `[DONE]` or JSON matching the chunk schema the
    document gives (`contentSchema` of the event's data, which JSON Schema itself only annotates)."""
    import json

    import jsonschema_rs

    ctype = response.headers.get("content-type") or response.headers.get("Content-Type") or ""
    if isinstance(ctype, list):
        ctype = ctype[0] if ctype else ""
    if response.status_code != 200 or not ctype.startswith("text/event-stream"):
        return None
    cut_short = getattr(response, "stream_cut_short", False)  # schemathesis stopped reading
    doc = case.operation.schema.raw_schema
    op = doc["paths"][case.path][case.method.lower()]
    event = op["responses"]["200"]["content"]["text/event-stream"]["schema"]
    ref = next(s["contentSchema"]["$ref"] for s in event["properties"]["data"]["anyOf"] if "contentSchema" in s)
    validator = _VALIDATORS.get(ref)
    if validator is None:
        validator = jsonschema_rs.validator_for({"$ref": ref, "components": doc["components"]})
        _VALIDATORS[ref] = validator
    lines = [l[len("data: "):] for l in response.text.splitlines() if l.startswith("data: ")]
    # Chat streams end with [DONE] (the document lists it); Responses streams end with their
    # terminal event instead.
    ends_done = any(s.get("const") == "[DONE]" for s in event["properties"]["data"]["anyOf"])
    if not cut_short and ends_done:
        assert lines and lines[-1] == "[DONE]", f"the stream does not end with data: [DONE]: {lines[-1:]}"
    for i, data in enumerate(lines):
        if data == "[DONE]":
            continue
        chunk = json.loads(data)
        if "error" in chunk:
            continue  # an error event (e.g. shutdown mid-stream) is OpenAI's error object
        errors = [e.message for e in validator.iter_errors(chunk)]
        assert not errors, f"stream chunk #{i} does not match {ref}: {errors[:3]}\n{data[:500]}"
    return True
