"""Speculative decoding side by side (issue 33): nucleus plain, nucleus with n-gram speculation,
and llama-server with its n-gram modes, on the same GGUF, threads, slots and context, one
server after the other, on three workloads:

  edit     return a ~1,500-token source file whole with one change (testdata/speculative/inventory.py)
  extract  fields of a ~1,000-token document as JSON under a schema (testdata/speculative/tenancy.*)
  chat     the multi-turn chat load of bench/chat_load.py (little to copy)

For each (server, workload): output tokens/s (completion tokens over wall time), decode tokens/s
(the tokens after each answer's first over the time after its first content), TTFT p50
(first streamed content), and the acceptance the server reports (nucleus: usage.speculative;
llama-server: timings.draft_n / draft_n_accepted when it sends them). Seeded answers of nucleus
plain and speculative are compared (they must be identical). A benchmark, not a test: numbers
measured on a loaded machine say nothing about speed.

    python3 bench/speculative.py --model ~/.cache/nucleus/models/SmolLM2-135M-Instruct.Q4_1.gguf \\
        --nucleus target/release/nucleus [--llama-server /path/to/llama-server] [--threads 1] [--repeat 1]

Options: --threads (1), --parallel (1), --ctx (8192), --requests (2 per document workload),
--chat-users (2), --chat-turns (3), --llama-modes (ngram-simple,ngram-map-k,ngram-mod),
--draft-max (16, nucleus's; llama-server's n-gram modes keep their own defaults: b11434 removed
its --draft-max, and each mode has its own sizes), --only (plain,ngram,llama), --quick (one request each, short chat).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request

from openai import OpenAI

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "testdata", "speculative")


def read(name):
    with open(os.path.join(DATA, name), encoding="utf-8") as f:
        return f.read()


def wait_health(port, proc, timeout=300):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"the server on port {port} exited ({proc.returncode})")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
                if r.status == 200:
                    return
        except Exception:  # noqa: BLE001 - not up yet
            pass
        time.sleep(0.5)
    raise RuntimeError(f"server on port {port} did not become healthy")


def edit_request(i):
    src = read("inventory.py")
    return {"messages": [
        {"role": "system", "content": "You edit code. Answer with the complete file and nothing else."},
        {"role": "user", "content": "Rename the method total_price to order_total everywhere in this file "
                                    f"and return the whole file:\n\n```python\n{src}```"}],
        "max_tokens": 1800, "temperature": 0, "seed": 100 + i}


def extract_request(i):
    doc = read("tenancy.txt")
    schema = json.loads(read("tenancy.schema.json"))
    return {"messages": [
        {"role": "user", "content": f"Extract the agreement's fields as JSON.\n\n{doc}"}],
        "max_tokens": 300, "temperature": 0, "seed": 200 + i,
        "response_format": {"type": "json_schema", "json_schema": {"name": "tenancy", "schema": schema, "strict": True}}}


def stream_one(client, body, extra):
    """(answer text, completion tokens, seconds to first content, seconds, acceptance dict)."""
    body = dict(body)
    t0 = time.time()
    ttft, parts, usage, timings = None, [], None, None
    stream = client.chat.completions.create(model="smollm2", stream=True, stream_options={"include_usage": True},
                                            extra_body=extra, **body)
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            if ttft is None:
                ttft = time.time() - t0
            parts.append(chunk.choices[0].delta.content)
        if chunk.usage is not None:
            usage = chunk.usage
        timings = (chunk.model_extra or {}).get("timings") or timings
    wall = time.time() - t0
    spec = None
    if usage is not None and (usage.model_extra or {}).get("speculative"):
        s = usage.model_extra["speculative"]
        spec = {"drafted": s["drafted"], "accepted": s["accepted"]}
    elif timings and timings.get("draft_n"):
        spec = {"drafted": timings["draft_n"], "accepted": timings.get("draft_n_accepted", 0)}
    tokens = usage.completion_tokens if usage is not None else 0
    return "".join(parts), tokens, ttft or wall, wall, spec


def document_workload(port, make, requests, extra):
    client = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x", max_retries=0, timeout=3600)
    answers, tokens, ttfts, wall, drafted, accepted = [], 0, [], 0.0, 0, 0
    for i in range(requests):
        text, n, ttft, w, spec = stream_one(client, make(i), extra)
        answers.append(text)
        tokens += n
        ttfts.append(ttft)
        wall += w
        if spec:
            drafted += spec["drafted"]
            accepted += spec["accepted"]
    decode = wall - sum(ttfts)
    return {"output_tokens_per_s": tokens / wall if wall else 0.0, "ttft_p50": statistics.median(ttfts),
            "decode_tokens_per_s": (tokens - requests) / decode if decode > 0 else 0.0,
            "tokens": tokens, "wall_s": wall, "acceptance": accepted / drafted if drafted else None,
            "answers": answers}


def chat_workload(port, args):
    env = dict(os.environ, BASE_URL=f"http://127.0.0.1:{port}/v1", MODEL="smollm2", USERS=str(args.chat_users),
               TURNS=str(args.chat_turns), MAX_TOKENS="48", TOOL_REQUESTS="0")
    out = subprocess.run([sys.executable, os.path.join(HERE, "chat_load.py")], env=env, capture_output=True,
                         text=True, check=True)
    c = json.loads(out.stdout)["chat"]
    return {"output_tokens_per_s": c["output_tokens_per_s"], "ttft_p50": c["ttft_p50"], "acceptance": None,
            "decode_tokens_per_s": None,
            "answers": c.get("answers")}


def run_server(name, cmd, port, args, extra):
    print(f"== {name}: {' '.join(cmd)}", file=sys.stderr, flush=True)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_health(port, proc)
        return {
            "edit": document_workload(port, edit_request, args.requests, extra),
            "extract": document_workload(port, extract_request, args.requests, extra),
            "chat": chat_workload(port, args),
        }
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--nucleus", default="target/release/nucleus")
    p.add_argument("--llama-server")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--parallel", type=int, default=1)
    p.add_argument("--ctx", type=int, default=8192)
    p.add_argument("--requests", type=int, default=2)
    p.add_argument("--chat-users", type=int, default=2)
    p.add_argument("--chat-turns", type=int, default=3)
    p.add_argument("--draft-max", type=int, default=16)
    p.add_argument("--ngram-size-n", type=int, default=6, help="nucleus's --spec-ngram-size-n")
    p.add_argument("--llama-modes", default="ngram-simple,ngram-map-k,ngram-mod")
    p.add_argument("--only", default="plain,ngram,llama")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--quick", action="store_true", help="one request per document workload, a short chat")
    args = p.parse_args()
    if args.quick:
        args.requests, args.chat_users, args.chat_turns = 1, 1, 2
    only = set(args.only.split(","))
    common = ["-m", args.model, "-t", str(args.threads), "-c", str(args.ctx), "--alias", "smollm2"]
    servers = []
    if "plain" in only:
        servers.append(("nucleus plain", [args.nucleus, "serve", *common, "--port", "8182", "--parallel",
                                          str(args.parallel), "--spec-type", "none"], 8182, None))
    if "ngram" in only:
        servers.append(("nucleus ngram", [args.nucleus, "serve", *common, "--port", "8183", "--parallel",
                                          str(args.parallel), "--spec-type", "ngram", "--draft-max",
                                          str(args.draft_max), "--spec-ngram-size-n", str(args.ngram_size_n)],
                        8183, None))
    if "llama" in only and args.llama_server:
        for mode in args.llama_modes.split(","):
            servers.append((f"llama-server {mode}", [args.llama_server, *common, "--port", "8181", "-tb",
                                                     str(args.threads), "-np", str(args.parallel), "--jinja",
                                                     "--spec-type", mode],
                            8181, None))
    results = {}
    for rep in range(args.repeat):
        for name, cmd, port, extra in servers:
            key = name if args.repeat == 1 else f"{name} #{rep + 1}"
            results[key] = run_server(name, cmd, port, args, extra)
    same = {}
    if "nucleus plain" in results and "nucleus ngram" in results:
        for w in ("edit", "extract", "chat"):
            same[w] = results["nucleus plain"][w]["answers"] == results["nucleus ngram"][w]["answers"]
    for r in results.values():
        for w in r.values():
            w.pop("answers", None)
    print(json.dumps({"results": results, "nucleus_same_answers": same}, indent=1))
    print(f"\n-t {args.threads}, {args.parallel} slot(s), draft-max {args.draft_max}\n")
    print("| server | workload | out tok/s | decode tok/s | TTFT p50 | acceptance |")
    print("|---|---|---:|---:|---:|---:|")
    for name, r in results.items():
        for w, m in r.items():
            acc = "" if m["acceptance"] is None else f"{100 * m['acceptance']:.0f}%"
            dec = "" if m["decode_tokens_per_s"] is None else f"{m['decode_tokens_per_s']:.1f}"
            print(f"| {name} | {w} | {m['output_tokens_per_s']:.1f} | {dec} | {m['ttft_p50']:.2f} s | {acc} |")
    print(f"\nnucleus plain == nucleus ngram (seeded answers): {same}")
    if same and not all(same.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
