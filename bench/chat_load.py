"""Multi-turn chat load and tool-calling load against any OpenAI-compatible server (nucleus serve,
llama-server), with the official `openai` client. Used by bench/side_by_side.sh; prints one JSON
object.

Chat load: USERS users talk at once, TURNS turns each; every request resends a long shared system
prompt and the user's growing history, streams exactly MAX_TOKENS tokens (ignore_eos) with a seed
per (user, turn), and the answer joins the history. Reported: wall time, requests/s, output
tokens/s, time to first token (p50/p90) per turn, errors, and the answers (so two runs can be
compared for determinism).

Tool load (TOOL_REQUESTS > 0): requests with two function tools and tool_choice "required",
USERS at a time; reported: requests/s, errors, and how many answers held a call whose arguments
parse as JSON with the required keys.

Environment: BASE_URL (http://127.0.0.1:8080/v1), MODEL, USERS (4), TURNS (4), MAX_TOKENS (48),
TOOL_REQUESTS (0), TEMPERATURE (0.8), CACHE_PROMPT (1; 0 sends cache_prompt false).
"""

import json
import os
import statistics
import sys
import threading
import time

from openai import OpenAI

BASE = os.environ.get("BASE_URL", "http://127.0.0.1:8080/v1")
MODEL = os.environ.get("MODEL", "smollm2")
USERS = int(os.environ.get("USERS", "4"))
TURNS = int(os.environ.get("TURNS", "4"))
MAX_TOKENS = int(os.environ.get("MAX_TOKENS", "48"))
TOOL_REQUESTS = int(os.environ.get("TOOL_REQUESTS", "0"))
TEMPERATURE = float(os.environ.get("TEMPERATURE", "0.8"))
CACHE_PROMPT = os.environ.get("CACHE_PROMPT", "1") != "0"
# Seconds a user reads an answer before sending the next turn (0: at once, the server's worst case).
THINK = float(os.environ.get("THINK", "0"))

SYSTEM = (
    "You are the front-desk assistant of the Riverside public library. You help visitors find "
    "books, explain how borrowing works, and describe the events of the week. Borrowing: adults "
    "may take twelve items for three weeks and renew twice online or at the desk; children take "
    "eight items. Late fees were abolished last year, but lost items must be replaced. Events: "
    "Monday is the knitting circle, Tuesday the chess club for all ages, Wednesday a local "
    "history talk, Thursday the teen coding club, Friday a film night, and Saturday morning "
    "story time for small children. The library opens at nine and closes at eight, except on "
    "Sundays when it opens at noon and closes at five. Keep answers short, friendly and exact; "
    "if you do not know something, say so and suggest asking a librarian in person."
)
QUESTIONS = [
    "How many books can I borrow?", "What happens if I return a book late?",
    "Is there anything for kids on Saturday?", "When do you close on Sunday?",
    "Can I renew a book online?", "What is on Thursday?", "Do you have a chess club?",
    "What if I lose a book?", "Are you open on Monday evening?", "What is film night?",
]
TOOLS = [
    {"type": "function", "function": {
        "name": "search_catalog", "description": "Search the library catalog.",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string", "maxLength": 40},
            "kind": {"type": "string", "enum": ["book", "film", "music"]}},
            "required": ["query", "kind"], "additionalProperties": False}}},
    {"type": "function", "function": {
        "name": "event_info", "description": "Details of a library event.",
        "parameters": {"type": "object", "properties": {"day": {"type": "string", "enum": [
            "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]}},
            "required": ["day"], "additionalProperties": False}}},
]


def client():
    return OpenAI(base_url=BASE, api_key=os.environ.get("API_KEY", "none"), max_retries=0, timeout=600)


def pct(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))], 3)


def chat_user(u, out, errors):
    c = client()
    history = [{"role": "system", "content": SYSTEM}]
    for t in range(TURNS):
        history.append({"role": "user", "content": QUESTIONS[(u * TURNS + t) % len(QUESTIONS)]})
        t0 = time.time()
        first, text, tokens = None, "", 0
        try:
            stream = c.chat.completions.create(
                model=MODEL, messages=history, max_tokens=MAX_TOKENS, temperature=TEMPERATURE,
                seed=1000 * u + t, stream=True, stream_options={"include_usage": True},
                extra_body={"ignore_eos": True, "cache_prompt": CACHE_PROMPT})
            for chunk in stream:
                if chunk.usage:
                    tokens = chunk.usage.completion_tokens
                for ch in chunk.choices:
                    if ch.delta.content:
                        if first is None:
                            first = time.time() - t0
                        text += ch.delta.content
        except Exception as e:  # noqa: BLE001 - every failure is counted
            errors.append(f"user {u} turn {t}: {e}")
            return
        out.append({"user": u, "turn": t, "ttft": first, "latency": time.time() - t0, "tokens": tokens,
                    "text": text})
        history.append({"role": "assistant", "content": text})
        if THINK > 0 and t + 1 < TURNS:
            time.sleep(THINK)


def chat_load():
    out, errors = [], []
    t0 = time.time()
    threads = [threading.Thread(target=chat_user, args=(u, out, errors)) for u in range(USERS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.time() - t0
    per_turn = {}
    for r in out:
        if r["ttft"] is not None:
            per_turn.setdefault(r["turn"], []).append(r["ttft"])
    ttfts = [r["ttft"] for r in out if r["ttft"] is not None]
    return {
        "requests": len(out), "errors": len(errors), "error_samples": errors[:3], "wall_s": round(wall, 2),
        "requests_per_s": round(len(out) / wall, 3),
        "output_tokens_per_s": round(sum(r["tokens"] for r in out) / wall, 2),
        "ttft_p50": pct(ttfts, 50), "ttft_p90": pct(ttfts, 90),
        # turns 2 and later (the target: at or below llama-server's with its cache on)
        "ttft_p50_later": pct([r["ttft"] for r in out if r["ttft"] is not None and r["turn"] >= 1], 50),
        "ttft_p50_by_turn": {t: pct(v, 50) for t, v in sorted(per_turn.items())},
        "ttft_p90_by_turn": {t: pct(v, 90) for t, v in sorted(per_turn.items())},
        "answers": {f"{r['user']}/{r['turn']}": r["text"] for r in out},
    }


def tool_request(i, out, errors):
    c = client()
    t0 = time.time()
    try:
        r = c.chat.completions.create(
            model=MODEL, max_tokens=64, temperature=TEMPERATURE, seed=i, tools=TOOLS, tool_choice="required",
            messages=[{"role": "system", "content": SYSTEM},
                      {"role": "user", "content": QUESTIONS[i % len(QUESTIONS)] + " Look it up."}])
    except Exception as e:  # noqa: BLE001
        errors.append(f"request {i}: {e}")
        return
    valid = False
    for call in r.choices[0].message.tool_calls or []:
        try:
            args = json.loads(call.function.arguments)
        except ValueError:
            continue
        want = {"search_catalog": {"query", "kind"}, "event_info": {"day"}}.get(call.function.name)
        valid = valid or (want is not None and isinstance(args, dict) and set(args) == want)
    out.append({"latency": time.time() - t0, "valid": valid, "finish": r.choices[0].finish_reason})


def tool_load():
    out, errors = [], []
    t0 = time.time()
    for start in range(0, TOOL_REQUESTS, USERS):
        threads = [threading.Thread(target=tool_request, args=(i, out, errors))
                   for i in range(start, min(start + USERS, TOOL_REQUESTS))]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    wall = time.time() - t0
    return {
        "requests": len(out), "errors": len(errors), "error_samples": errors[:3], "wall_s": round(wall, 2),
        "requests_per_s": round(len(out) / wall, 3) if wall else None,
        "valid_calls": sum(r["valid"] for r in out),
        "finish_tool_calls": sum(r["finish"] == "tool_calls" for r in out),
        "latency_p50": pct([r["latency"] for r in out], 50),
    }


if __name__ == "__main__":
    result = {"base_url": BASE, "users": USERS, "turns": TURNS, "max_tokens": MAX_TOKENS, "chat": chat_load()}
    if TOOL_REQUESTS:
        result["tools"] = tool_load()
    json.dump(result, sys.stdout)
    print()
