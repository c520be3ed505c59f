"""Chat completions through the official client: shapes, streaming grammar, usage chunk,
logprobs (whole and streamed), n=2, stop strings, seeds, logit_bias."""

from common import MODEL, chat, client, done

c = client()

# --- whole response shape
r = chat(c, "Name three colors.", max_tokens=12, seed=42)
assert r.id.startswith("chatcmpl-"), r.id
assert r.object == "chat.completion" and isinstance(r.created, int) and r.model == MODEL
assert isinstance(r.system_fingerprint, str) and r.system_fingerprint
assert len(r.choices) == 1 and r.choices[0].index == 0
ch = r.choices[0]
assert ch.message.role == "assistant" and isinstance(ch.message.content, str) and ch.message.content
assert ch.finish_reason in ("stop", "length") and ch.logprobs is None
u = r.usage
assert u.prompt_tokens > 0 and 0 < u.completion_tokens <= 12 and u.total_tokens == u.prompt_tokens + u.completion_tokens
if ch.finish_reason == "length":
    assert u.completion_tokens == 12

# --- same seed, same text; streamed text equals the whole one
r2 = chat(c, "Name three colors.", max_tokens=12, seed=42)
assert r2.choices[0].message.content == ch.message.content
chunks = list(chat(c, "Name three colors.", max_tokens=12, seed=42, stream=True))
assert chunks[0].choices[0].delta.role == "assistant" and chunks[0].choices[0].delta.content == ""
assert all(k.id == chunks[0].id and k.created == chunks[0].created for k in chunks)
assert all(k.object == "chat.completion.chunk" for k in chunks)
assert all(len(k.choices) == 1 for k in chunks), "no usage chunk unless asked"
assert all(k.choices[0].finish_reason is None for k in chunks[:-1])
assert chunks[-1].choices[0].finish_reason == ch.finish_reason
assert "".join(k.choices[0].delta.content or "" for k in chunks) == ch.message.content
assert all(k.usage is None for k in chunks)

# --- include_usage: the last chunk has no choices and the usage; the others usage null
chunks = list(chat(c, "Name three colors.", max_tokens=12, seed=42, stream=True,
                   stream_options={"include_usage": True}))
assert chunks[-1].choices == [] and chunks[-1].usage is not None
assert chunks[-1].usage.completion_tokens == u.completion_tokens
assert chunks[-1].usage.prompt_tokens == u.prompt_tokens
assert all(k.usage is None and len(k.choices) == 1 for k in chunks[:-1])
assert chunks[-2].choices[0].finish_reason is not None

# --- the SDK's stream helper accumulates the same message
import openai
with c.chat.completions.stream(model=MODEL, messages=[{"role": "user", "content": "Name three colors."}],
                               max_tokens=12, seed=42) as s:
    try:
        final = s.get_final_completion()
    except openai.LengthFinishReasonError as e:  # the helper refuses to "parse" a cut-off reply
        final = e.completion
assert final.choices[0].message.content == ch.message.content

# --- logprobs: entries per token, concatenation is the text, top_logprobs sorted
r = chat(c, "Count: 1, 2, 3,", max_tokens=10, seed=7, logprobs=True, top_logprobs=3, temperature=0)
ch = r.choices[0]
content = ch.logprobs.content
assert len(content) == r.usage.completion_tokens - (1 if ch.finish_reason == "stop" else 0), (len(content), r.usage)
if ch.finish_reason == "length":
    assert "".join(e.token for e in content) == ch.message.content
for e in content:
    assert e.logprob <= 0 and len(e.top_logprobs) == 3
    assert bytes(e.bytes).decode("utf-8", "replace") == e.token
    lps = [t.logprob for t in e.top_logprobs]
    assert lps == sorted(lps, reverse=True)
    # greedy: the chosen token is the most likely one
    assert e.top_logprobs[0].token == e.token and abs(e.top_logprobs[0].logprob - e.logprob) < 1e-6
# logprobs without top_logprobs: empty alternatives
r0 = chat(c, "Count: 1, 2, 3,", max_tokens=4, seed=7, logprobs=True, temperature=0)
assert all(e.top_logprobs == [] for e in r0.choices[0].logprobs.content)
# streamed logprobs, chunk by chunk, add up to the same entries
chunks = list(chat(c, "Count: 1, 2, 3,", max_tokens=10, seed=7, logprobs=True, top_logprobs=3,
                   temperature=0, stream=True))
streamed = [e for k in chunks for e in ((k.choices[0].logprobs.content or []) if k.choices[0].logprobs else [])]
assert [(e.token, e.logprob) for e in streamed] == [(e.token, e.logprob) for e in content]
for k in chunks[1:-1]:
    lp = k.choices[0].logprobs
    assert lp is not None and "".join(e.token for e in lp.content) == (k.choices[0].delta.content or "") \
        or ch.finish_reason == "stop"

# --- n=2: two choices; choice 0 equals the n=1 request with the same seed
r = chat(c, "Tell me a story.", max_tokens=10, seed=123, n=2, temperature=1.0)
assert [x.index for x in r.choices] == [0, 1]
one = chat(c, "Tell me a story.", max_tokens=10, seed=123, temperature=1.0)
assert r.choices[0].message.content == one.choices[0].message.content
assert r.usage.prompt_tokens == one.usage.prompt_tokens
chunks = list(chat(c, "Tell me a story.", max_tokens=10, seed=123, n=2, temperature=1.0, stream=True))
for i in (0, 1):
    mine = [k for k in chunks if k.choices and k.choices[0].index == i]
    assert mine[0].choices[0].delta.role == "assistant"
    assert mine[-1].choices[0].finish_reason is not None
    assert "".join(k.choices[0].delta.content or "" for k in mine) == r.choices[i].message.content

# --- stop strings: cut before the stop, finish_reason stop
base = chat(c, "Count: 1, 2, 3,", max_tokens=12, temperature=0).choices[0].message.content
words = [w for w in base.split(" ") if w.strip()]
assert len(words) >= 3, base
stop = words[2]
r = chat(c, "Count: 1, 2, 3,", max_tokens=12, temperature=0, stop=[stop, "zzzz"])
assert r.choices[0].finish_reason == "stop", r
assert stop not in r.choices[0].message.content and base.startswith(r.choices[0].message.content)
chunks = list(chat(c, "Count: 1, 2, 3,", max_tokens=12, temperature=0, stop=stop, stream=True))
assert "".join(k.choices[0].delta.content or "" for k in chunks) == r.choices[0].message.content
assert chunks[-1].choices[0].finish_reason == "stop"

# --- seeds: a different seed changes a sampled answer (temperature 1)
outs = {chat(c, "Write a word.", max_tokens=8, seed=s, temperature=1.0).choices[0].message.content for s in (1, 2, 3)}
assert len(outs) > 1, outs

# --- logit_bias: banning the greedy first token changes the first token
r = chat(c, "Say hello.", max_tokens=3, temperature=0, logprobs=True)
first = r.choices[0].logprobs.content[0]
r2 = chat(c, "Say hello.", max_tokens=3, temperature=0, logprobs=True, logit_bias={str(first.id): -100})
assert r2.choices[0].logprobs.content[0].token != first.token, (first, r2.choices[0].logprobs.content[0])
done("chat")
