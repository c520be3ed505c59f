"""Validates a server's /openapi.json (URL as the first argument) against the official OpenAPI
3.1 schema (as schemathesis ships it) and every component schema against the JSON Schema
2020-12 meta-schema (jsonschema-rs, a schemathesis dependency). Prints the operations and schema
count; exits non-zero with the errors otherwise. Run by crates/server/tests/contract.rs."""

import json
import sys
import urllib.request

import jsonschema_rs
from schemathesis.specs.openapi.definitions import OPENAPI_31_VALIDATOR

with urllib.request.urlopen(sys.argv[1]) as r:
    doc = json.load(r)

errors = [f"{'/'.join(map(str, e.instance_path))}: {e.message}" for e in OPENAPI_31_VALIDATOR.iter_errors(doc)]
schemas = doc["components"]["schemas"]
for name, schema in schemas.items():
    try:
        jsonschema_rs.meta.validate({"$schema": "https://json-schema.org/draft/2020-12/schema", **schema})
    except jsonschema_rs.ValidationError as e:
        errors.append(f"components/schemas/{name}: {e.message}")
if errors:
    print("\n".join(errors[:50]))
    sys.exit(1)
ops = sum(len(item) for item in doc["paths"].values())
print(f"valid OpenAPI {doc['openapi']}: {ops} operations, {len(schemas)} schemas")
