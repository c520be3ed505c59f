"""Constrained decoding through the official client: response_format json_schema and
json_object, llama.cpp's grammar and json_schema fields (also streamed); the output parses
and validates. Bad grammars and schemas are 400s naming the field, line/column or keyword and
pointer."""

import json

import openai

from common import MODEL, chat, client, done, expect_api_error

c = client()

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 12},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}


def check_person(text):
    v = json.loads(text)
    assert set(v) == {"name", "age"}, text
    assert isinstance(v["name"], str) and 1 <= len(v["name"]) <= 12, text
    assert isinstance(v["age"], int) and 0 <= v["age"] <= 120, text


for seed, temp in [(1, 0.0), (2, 1.3)]:
    r = chat(c, "Describe a person as JSON.", max_tokens=64, seed=seed, temperature=temp,
             response_format={"type": "json_schema",
                              "json_schema": {"name": "person", "strict": True, "schema": PERSON}})
    assert r.choices[0].finish_reason == "stop", r
    check_person(r.choices[0].message.content)
done("response_format json_schema")

r = chat(c, "What is the capital of France? Answer as JSON like {\"capital\": \"...\"}.", max_tokens=64,
         temperature=0, response_format={"type": "json_object"})
assert isinstance(json.loads(r.choices[0].message.content), dict), r
done("response_format json_object")

r = chat(c, "Is the sky green?", max_tokens=8, temperature=1.5, seed=5, n=2,
         extra_body={"grammar": 'root ::= ("yes" | "no")'})
for ch in r.choices:
    assert ch.message.content in ("yes", "no") and ch.finish_reason == "stop", r
done("grammar, n=2")

stream = chat(c, "Describe a person as JSON.", max_tokens=64, temperature=0.8, seed=9, stream=True,
              extra_body={"json_schema": PERSON})
check_person("".join(ch.choices[0].delta.content or "" for ch in stream if ch.choices))
done("json_schema, streamed")

r = c.completions.create(model=MODEL, prompt="Answer yes or no: is water wet?", max_tokens=8,
                         extra_body={"grammar": 'root ::= "yes" | "no"'})
assert r.choices[0].text in ("yes", "no"), r
done("completions with grammar")

e = expect_api_error(openai.BadRequestError, 400, lambda: chat(c, "x", extra_body={"grammar": 'root ::= "a"\nb ::= [x'}),
                     "grammar", "invalid_value")
assert "line 2, column 9" in e["message"], e
e = expect_api_error(openai.BadRequestError, 400,
                     lambda: chat(c, "x", response_format={"type": "json_schema", "json_schema": {
                         "name": "p", "schema": {"type": "object", "properties": {"a": {"not": {"type": "null"}}}}}}),
                     "response_format", "invalid_value")
assert "not" in e["message"] and "/properties/a" in e["message"], e
done("bad grammar and schema")
