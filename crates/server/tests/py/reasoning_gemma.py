"""Reasoning on Gemma 3 270M (a 262k SentencePiece vocabulary: `</think>` and `{` are other
tokens than SmolLM2's) under the thinking template: the budget forces the end of the block,
the thinking is in reasoning_content, and json_schema gives valid JSON in content."""

import json

from common import MODEL, client, done

c = client()
SCHEMA = {"type": "object", "additionalProperties": False, "required": ["name", "n"],
          "properties": {"name": {"type": "string", "maxLength": 12}, "n": {"type": "integer"}}}

r = c.chat.completions.create(
    model=MODEL, messages=[{"role": "user", "content": "Give me a name and a number."}], max_tokens=100, seed=2,
    temperature=0.8, response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": SCHEMA, "strict": True}},
    extra_body={"reasoning_budget": 12})
m, u = r.choices[0].message, r.usage
thought = (m.model_extra or {}).get("reasoning_content")
assert thought and "</think>" not in thought, m
assert u.completion_tokens_details.reasoning_tokens >= 12, u
assert r.choices[0].finish_reason == "stop", r
v = json.loads(m.content)
assert set(v) == {"name", "n"} and isinstance(v["n"], int), v
done(f"gemma3: {u.completion_tokens_details.reasoning_tokens} thinking tokens, then {m.content}")
