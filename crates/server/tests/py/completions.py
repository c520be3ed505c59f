"""Legacy completions: shapes, streaming, several prompts, token-id prompts, echo, and the
legacy integer logprobs with echo (the prompt scored token by token, as lm-eval uses it)."""

from common import MODEL, client, done

c = client()
# The SDK types a completion choice's finish_reason as non-null, yet OpenAI (and we) send null in
# every stream chunk but the last, and it types token_logprobs as floats, yet echo scores the
# first prompt token as null (as OpenAI does). Strict validation would reject OpenAI's own
# replies there, so streamed and echo+logprobs completions use the default validation.
loose = client(strict=False)
P = "The capital of France is"

r = c.completions.create(model=MODEL, prompt=P, max_tokens=6, seed=3)
assert r.id.startswith("cmpl-") and r.object == "text_completion" and r.model == MODEL
assert len(r.choices) == 1 and r.choices[0].index == 0 and r.choices[0].logprobs is None
assert r.choices[0].finish_reason in ("stop", "length")
assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
text = r.choices[0].text

# default max_tokens is 16
r16 = c.completions.create(model=MODEL, prompt=P, seed=3, extra_body={"ignore_eos": True})
assert r16.usage.completion_tokens == 16 and r16.choices[0].finish_reason == "length"

# streamed: same text, same id in every chunk, finish in the last choice chunk, usage chunk
chunks = list(loose.completions.create(model=MODEL, prompt=P, max_tokens=6, seed=3, stream=True,
                                   stream_options={"include_usage": True}))
assert all(k.id == chunks[0].id for k in chunks)
assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == r.usage.completion_tokens
body = chunks[:-1]
assert "".join(k.choices[0].text for k in body) == text
assert body[-1].choices[0].finish_reason == r.choices[0].finish_reason
assert all(k.choices[0].finish_reason is None for k in body[:-1])

# several prompts: choice index = prompt index * n + j
r = c.completions.create(model=MODEL, prompt=[P, "1, 2, 3,"], max_tokens=4, seed=3, n=2)
assert [x.index for x in r.choices] == [0, 1, 2, 3]
assert r.choices[0].text == text[: len(r.choices[0].text)]

# token ids as the prompt give the same tokens as the text
lp = loose.completions.create(model=MODEL, prompt=P, max_tokens=0, echo=True, logprobs=0)
ids_text = lp.choices[0].logprobs.tokens
assert "".join(ids_text) == P or "".join(ids_text).endswith(P), ids_text

r = c.completions.create(model=MODEL, prompt=[504, 3575, 282], max_tokens=3, temperature=0, echo=True)
assert r.usage.prompt_tokens == 3 and r.choices[0].text.startswith("The capital of")
r = c.completions.create(model=MODEL, prompt=[[504, 3575], [33, 30]], max_tokens=2, temperature=0)
assert [x.index for x in r.choices] == [0, 1] and r.usage.prompt_tokens == 4

# echo: the prompt comes first
r = c.completions.create(model=MODEL, prompt=P, max_tokens=6, seed=3, echo=True)
assert r.choices[0].text == P + text

# echo + logprobs: every prompt token scored (the first has none), then the completion
r = loose.completions.create(model=MODEL, prompt=P, max_tokens=4, seed=3, echo=True, logprobs=2, temperature=0)
l = r.choices[0].logprobs
n_prompt = r.usage.prompt_tokens
assert len(l.tokens) == len(l.token_logprobs) == len(l.top_logprobs) == len(l.text_offset)
assert len(l.tokens) == n_prompt + r.usage.completion_tokens - (1 if r.choices[0].finish_reason == "stop" else 0)
assert l.token_logprobs[0] is None and l.top_logprobs[0] is None
assert all(x is not None and x <= 0 for x in l.token_logprobs[1:])
assert all(1 <= len(d) <= 3 for d in l.top_logprobs[1:])
assert l.text_offset == sorted(l.text_offset) and l.text_offset[0] == 0
assert r.choices[0].text.startswith(P)
# greedy: each generated token is its position's best alternative
for tok, lpv, top in zip(l.tokens[n_prompt:], l.token_logprobs[n_prompt:], l.top_logprobs[n_prompt:]):
    assert abs(max(top.values()) - lpv) < 1e-6 and top[tok] == lpv
# scoring only: max_tokens 0 with echo
r0 = loose.completions.create(model=MODEL, prompt=P, max_tokens=0, echo=True, logprobs=1)
assert r0.usage.completion_tokens == 0 and r0.choices[0].text == P
assert r0.choices[0].logprobs.token_logprobs[1:] == l.token_logprobs[1:n_prompt]

# streamed echo + logprobs: the prompt arrives first, with its scores
chunks = list(loose.completions.create(model=MODEL, prompt=P, max_tokens=4, seed=3, echo=True, logprobs=2,
                                   temperature=0, stream=True))
assert chunks[0].choices[0].text == P
toks = [t for k in chunks if k.choices[0].logprobs for t in k.choices[0].logprobs.tokens]
assert toks == l.tokens
assert "".join(k.choices[0].text for k in chunks) == r.choices[0].text
done("completions")
