"""llama-server and nucleus serve on the same GGUF, threads, slots and context, one after the other,
driven by bench/chat_load.py: the multi-turn chat load twice per server (the second run starts
with warm caches; its answers are compared with the first run's: a deterministic server gives the
same seeded answers) and the tool-calling load once. Prints a JSON summary and a Markdown table.

    python3 bench/side_by_side.py --model SmolLM2-135M-Instruct.Q4_1.gguf \
        --llama-server /path/to/llama-server --nucleus target/release/nucleus

Options: --threads (1), --parallel (2), --ctx (8192), --users (4), --turns (4), --max-tokens (48),
--tool-requests (16), --think (0: seconds a user reads an answer before the next turn), --repeat
(1: rounds, the servers taking turns), --only (llama|nucleus).
"""

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


def wait_health(port, timeout=300):
    t0 = time.time()
    while time.time() - t0 < timeout:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
                if r.status == 200:
                    return
        except Exception:  # noqa: BLE001 - not up yet
            pass
        time.sleep(0.5)
    raise RuntimeError(f"server on port {port} did not become healthy")


def load(port, model, args, tool_requests):
    env = dict(os.environ, BASE_URL=f"http://127.0.0.1:{port}/v1", MODEL=model, USERS=str(args.users),
               TURNS=str(args.turns), MAX_TOKENS=str(args.max_tokens), TOOL_REQUESTS=str(tool_requests), THINK=str(args.think))
    out = subprocess.run([sys.executable, os.path.join(HERE, "chat_load.py")], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout)


def run_server(name, cmd, port, model, args):
    print(f"== {name}: {' '.join(cmd)}", file=sys.stderr)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_health(port)
        first = load(port, model, args, 0)
        second = load(port, model, args, args.tool_requests)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    a, b = first["chat"].pop("answers"), second["chat"].pop("answers")
    same = sum(a.get(k) == v for k, v in b.items())
    return {"first": first, "second": second, "same_answers": f"{same}/{len(b)}"}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--llama-server")
    p.add_argument("--nucleus", default="target/release/nucleus")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--parallel", type=int, default=2)
    p.add_argument("--ctx", type=int, default=8192)
    p.add_argument("--users", type=int, default=4)
    p.add_argument("--turns", type=int, default=4)
    p.add_argument("--max-tokens", type=int, default=48)
    p.add_argument("--tool-requests", type=int, default=16)
    p.add_argument("--think", type=float, default=0.0,
                   help="seconds each user reads an answer before the next turn (0: at once)")
    p.add_argument("--repeat", type=int, default=1, help="rounds, the servers taking turns in each")
    p.add_argument("--only", choices=["llama", "nucleus"])
    args = p.parse_args()
    results = {}
    servers = []
    if args.only != "nucleus" and args.llama_server:
        cmd = [args.llama_server, "-m", args.model, "--port", "8181", "-t", str(args.threads), "-tb",
               str(args.threads), "-np", str(args.parallel), "-c", str(args.ctx), "--jinja", "--alias", "smollm2"]
        servers.append(("llama-server", cmd, 8181))
    if args.only != "llama":
        cmd = [args.nucleus, "serve", "-m", args.model, "--port", "8182", "-t", str(args.threads), "--parallel",
               str(args.parallel), "-c", str(args.ctx), "--alias", "smollm2"]
        servers.append(("nucleus", cmd, 8182))
    # With --repeat, the servers take turns (A B A B ...), so a change in the machine's load
    # during the run falls on both sides.
    for rep in range(args.repeat):
        for name, cmd, port in servers:
            key = name if args.repeat == 1 else f"{name} #{rep + 1}"
            results[key] = run_server(name, cmd, port, "smollm2", args)
    print(json.dumps(results, indent=1))
    print("\n| server | run | wall | req/s | out tok/s | TTFT p50 | TTFT p90 | TTFT p50 turns >= 2 | p50 by turn | errors |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|---:|")
    for name, r in results.items():
        for run in ("first", "second"):
            c = r[run]["chat"]
            turns = " / ".join(f"{v:.2f}" for v in c["ttft_p50_by_turn"].values())
            print(f"| {name} | {run} | {c['wall_s']:.1f} s | {c['requests_per_s']:.2f} | {c['output_tokens_per_s']:.1f} "
                  f"| {c['ttft_p50']:.2f} s | {c['ttft_p90']:.2f} s | {c['ttft_p50_later']:.2f} s | {turns} "
                  f"| {c['errors']} |")
    for name, r in results.items():
        t = r["second"].get("tools", {})
        print(f"{name}: same seeded answers in both runs {r['same_answers']}; tool load: {json.dumps(t)}")


if __name__ == "__main__":
    main()
