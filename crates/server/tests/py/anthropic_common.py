"""Shared helpers of the Messages tests: the official `anthropic` client in strict mode (every
response validated against the SDK's types; nothing retried) pointed at the server."""

import os

import anthropic

BASE = os.environ["NUCLEUS_BASE_URL"].removesuffix("/v1")  # the SDK adds /v1/messages
MODEL = os.environ.get("NUCLEUS_MODEL_ID", "smollm2")
KEY = os.environ.get("NUCLEUS_API_KEY_FOR_TEST", "not-needed")

WEATHER = {
    "name": "get_weather",
    "description": "Current weather in a city.",
    "input_schema": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 1, "maxLength": 20},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["city", "unit"],
        "additionalProperties": False,
    },
}
TIME = {
    "name": "get_time",
    "description": "The time now in a time zone.",
    "input_schema": {
        "type": "object",
        "properties": {"zone": {"type": "string", "maxLength": 16}},
        "required": ["zone"],
        "additionalProperties": False,
    },
}
TOOLS = [WEATHER, TIME]


def client(api_key=None):
    return anthropic.Anthropic(base_url=BASE, api_key=api_key or KEY, max_retries=0, timeout=120,
                               _strict_response_validation=True)


def view(m):
    """A message as compared across the two paths: ids aside, the input and cached counts
    together (the prompt cache moves tokens between them from one run to the next)."""
    blocks = []
    for b in m.content:
        if b.type == "text":
            blocks.append(("text", b.text))
        elif b.type == "thinking":
            blocks.append(("thinking", b.thinking))
        else:
            assert b.type == "tool_use" and b.id.startswith("toolu_"), b
            # A call cut by max_tokens or a stop sequence: the SDK parses its partial input, the
            # server gives {}.
            cut = m.stop_reason in ("max_tokens", "stop_sequence")
            blocks.append(("tool_use", b.name, None if cut else b.input))
    u = m.usage
    return {"type": m.type, "role": m.role, "model": m.model, "content": blocks, "stop_reason": m.stop_reason,
            "stop_sequence": m.stop_sequence,
            "usage": (u.input_tokens + (u.cache_read_input_tokens or 0), u.output_tokens,
                      u.cache_creation_input_tokens)}
