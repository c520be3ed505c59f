"""Time to first token of an agent session's first and second turn, against `nucleus serve`'s
Messages API: a recorded Claude Code first request (its whole system prompt and tools), then the same conversation with the answer and one more user message, as Claude Code's
second request would be. With the prompt cache the second turn evaluates only its new tokens;
the script prints both TTFTs and what the server's usage said (input_tokens evaluated,
cache_read_input_tokens reused), as one JSON object.

Serve a long-context model in one slot first, e.g.:

    nucleus serve -m gemma3 --parallel 1 -c 32768 --port 8080

Environment: BASE_URL (http://127.0.0.1:8080), MODEL (gemma3), BODY (required: the recorded
request body as JSON. Claude Code's prompt is Anthropic's text under its licence, so the
repository carries none; record one by pointing `claude -p hi` at a listener that saves the
body, e.g. `ANTHROPIC_BASE_URL=http://127.0.0.1:8081 claude -p hi` beside
`nc -l 127.0.0.1 8081 > request.http`, then keep what follows the blank line), MAX_TOKENS (16: the answer's
length does not matter here), TURN2 (the second user message). Standard library only.
"""

import http.client
import json
import os
import sys
import time
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASE = os.environ.get("BASE_URL", "http://127.0.0.1:8080")
MODEL = os.environ.get("MODEL", "gemma3")
BODY = os.environ.get("BODY") or sys.exit("set BODY to a recorded Claude Code request body (see the docstring)")
MAX_TOKENS = int(os.environ.get("MAX_TOKENS", "16"))
TURN2 = os.environ.get("TURN2", "Thanks. Now list the files in the working directory.")


def post(path, body, stream):
    """POSTs `body`; returns (seconds to the first token, the events or the JSON answer)."""
    url = urllib.parse.urlparse(BASE)
    conn = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=3600)
    data = json.dumps(body).encode()
    t0 = time.monotonic()
    conn.request("POST", path, data, {"content-type": "application/json", "x-api-key": "anything",
                                      "anthropic-version": "2023-06-01"})
    resp = conn.getresponse()
    if resp.status != 200:
        sys.exit(f"{path}: HTTP {resp.status}: {resp.read().decode(errors='replace')}")
    if not stream:
        return time.monotonic() - t0, json.loads(resp.read())
    first, events = None, []
    for raw in resp:
        line = raw.decode().rstrip("\n")
        if not line.startswith("data: "):
            continue
        ev = json.loads(line[6:])
        events.append(ev)
        if first is None and ev["type"] in ("content_block_delta", "message_delta"):
            first = time.monotonic() - t0
    conn.close()
    return first, events


def answer(events):
    """The text, the final usage and the stop reason of a streamed answer."""
    text, usage, stop = [], {}, None
    for ev in events:
        if ev["type"] == "message_start":
            usage.update(ev["message"]["usage"])
        elif ev["type"] == "content_block_delta" and ev["delta"]["type"] == "text_delta":
            text.append(ev["delta"]["text"])
        elif ev["type"] == "message_delta":
            usage.update(ev["usage"])
            stop = ev["delta"]["stop_reason"]
    return "".join(text), usage, stop


def turn(body):
    ttft, events = post("/v1/messages?beta=true", body, True)
    text, usage, stop = answer(events)
    return {"ttft_s": round(ttft, 3), "input_tokens": usage.get("input_tokens"),
            "cache_read_input_tokens": usage.get("cache_read_input_tokens"),
            "output_tokens": usage.get("output_tokens"), "stop_reason": stop}, text


def main():
    with open(BODY) as f:
        first = json.load(f)
    first.update(model=MODEL, max_tokens=MAX_TOKENS, stream=True, temperature=0)
    counted = {k: first[k] for k in ("model", "system", "messages", "tools") if k in first}
    _, count = post("/v1/messages/count_tokens?beta=true", counted, False)

    t1, text = turn(first)
    second = dict(first)
    second["messages"] = first["messages"] + [
        {"role": "assistant", "content": [{"type": "text", "text": text or "(no answer)"}]},
        {"role": "user", "content": [{"type": "text", "text": TURN2}]},
    ]
    t2, _ = turn(second)
    out = {"body": os.path.relpath(BODY, ROOT), "model": MODEL, "prompt_tokens": count["input_tokens"],
           "tools": len(first.get("tools", [])), "turn1": t1, "turn2": t2,
           "turn2_over_turn1": round(t2["ttft_s"] / t1["ttft_s"], 4) if t1["ttft_s"] else None}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
