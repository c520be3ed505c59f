"""The token_trie extension: answers are leaves of the descriptor path (greedy, sampled with
seeds, streamed); errors are 400s naming token_trie."""

import json
import os

import openai

from common import MODEL, client, done, expect_api_error

c = client()
DESC = json.loads(os.environ["TRIE_DESCRIPTOR"])
LEAVES = json.loads(os.environ["TRIE_LEAVES"])
MSG = [{"role": "user", "content": "Name a city."}]


def ask(mode="greedy", path="city", desc=None, **kw):
    kw.setdefault("max_tokens", 16)
    return c.chat.completions.create(model=MODEL, messages=MSG, **kw, extra_body={
        "token_trie": {"descriptor": desc or DESC, "path": path, "mode": mode}})


r = ask()
assert r.choices[0].message.content in LEAVES and r.choices[0].finish_reason == "stop", r
seen = set()
for seed in range(1, 7):
    r = ask("sampled", seed=seed, temperature=1.5)
    assert r.choices[0].message.content in LEAVES, r
    seen.add(r.choices[0].message.content)
print("sampled leaves:", sorted(seen))
text = "".join(k.choices[0].delta.content or "" for k in ask("sampled", seed=3, temperature=1.5, stream=True)
               if k.choices)
assert text in LEAVES, text
# A leaf of many tokens fits a small max_tokens budget only if it is complete; the forced
# tail is taken without sampling, so the answer is the same at any temperature.
long = [leaf for leaf in LEAVES if "Bridge" in leaf][0]
only_long = {"modelId": DESC["modelId"], "descriptors": [
    {"path": "city", "leaves": [x for x in DESC["descriptors"][0]["leaves"] if "Bridge" in x["name"]]}]}
for seed in (1, 2):
    r = ask("sampled", desc=only_long, seed=seed, temperature=2.0)
    assert r.choices[0].message.content == long, r
done("token_trie: greedy, sampled, streamed, forced tail")

expect_api_error(openai.BadRequestError, 400, lambda: ask(path="country"), param="token_trie")
expect_api_error(openai.BadRequestError, 400, lambda: ask(desc={"modelId": "other", "descriptors": []}),
                 param="token_trie")
expect_api_error(openai.BadRequestError, 400, lambda: ask(mode="fast"), param="token_trie.mode")
expect_api_error(openai.BadRequestError, 400, lambda: c.chat.completions.create(
    model=MODEL, messages=MSG, response_format={"type": "json_object"},
    extra_body={"token_trie": {"descriptor": DESC, "path": "city"}}), param="token_trie")
done("token_trie: errors")
