"""The prompt cache never changes an answer (run on a fresh server with 2 slots): a seeded request
with log-probabilities is answered identically cold, warm after a different request sharing its
system prompt, warm from its own prompt, with cache_prompt false, on a conversation's next turns
(which start from the previous answer's generated tokens), beside concurrent load, and back from
the memory cache; the cached token counts show the cache was used, at any length of prefix."""

import re
import threading
import urllib.request

from common import BASE, MODEL, client, done

c = client()
SYS = ("You are a careful assistant for a small library. Answer in one short paragraph, name your "
       "sources when you can, and say so plainly when you do not know something. Prefer simple words. "
       "The library opens at nine and closes at eight, except on Sundays, when it opens at noon and "
       "closes at five. Adults may borrow twelve items for three weeks and renew them twice; children "
       "may borrow eight. There are no late fees, but lost items must be replaced. Events: a knitting "
       "circle on Mondays, chess on Tuesdays, local history talks on Wednesdays, a coding club on "
       "Thursdays, film night on Fridays and story time on Saturday mornings. ")


def ask(question, **kw):
    kw.setdefault("seed", 42)
    kw.setdefault("temperature", 0.9)
    return c.chat.completions.create(
        model=MODEL, max_tokens=24, logprobs=True, top_logprobs=3,
        messages=[{"role": "system", "content": SYS}, {"role": "user", "content": question}], **kw)


def answer(r):
    """Everything that must not change: text, tokens, logprobs and alternatives."""
    ch = r.choices[0]
    return (ch.message.content, ch.finish_reason,
            [(e.token, e.logprob, [(t.token, t.logprob) for t in e.top_logprobs]) for e in ch.logprobs.content])


def cached(r):
    return r.usage.prompt_tokens_details.cached_tokens


def metric(name):
    text = urllib.request.urlopen(BASE.removesuffix("/v1") + "/metrics", timeout=30).read().decode()
    return int(float(re.search(rf"^{name} (\S+)$", text, re.M).group(1)))


A, B = "Tell me about cats.", "Tell me about the history of dogs and wolves."
cold = ask(A)
assert cached(cold) == 0, cold.usage
assert metric("nucleus_prompt_cached_tokens_total") == 0

other = ask(B)  # shares the system prompt with A: starts from A's slot, up to where they differ
assert 128 <= cached(other) < other.usage.prompt_tokens - 1, other.usage

warm_other = ask(A)  # the slot holds B now; A (prompt and answer) went to memory when B took it
assert 128 <= cached(warm_other) < cold.usage.prompt_tokens, warm_other.usage
assert answer(warm_other) == answer(cold), (answer(warm_other), answer(cold))

warm_self = ask(A)  # the slot holds A's own prompt (and answer)
assert cached(warm_self) == cold.usage.prompt_tokens - 1, warm_self.usage
assert answer(warm_self) == answer(cold)

off = ask(A, extra_body={"cache_prompt": False})
assert cached(off) == 0, off.usage
assert answer(off) == answer(cold)
done("cold, warm after another prefix, warm from itself, cache_prompt false: identical")

# A second turn: its prompt extends the first turn's (the answer and a new question follow), so
# it starts after the first turn's prompt and the answer's generated tokens.
first = ask(A, seed=7)
turn2 = [{"role": "system", "content": SYS}, {"role": "user", "content": A},
         {"role": "assistant", "content": first.choices[0].message.content},
         {"role": "user", "content": "And what do they eat?"}]
warm2 = c.chat.completions.create(model=MODEL, max_tokens=24, logprobs=True, top_logprobs=3, seed=42,
                                  temperature=0.9, messages=turn2)
cold2 = c.chat.completions.create(model=MODEL, max_tokens=24, logprobs=True, top_logprobs=3, seed=42,
                                  temperature=0.9, messages=turn2, extra_body={"cache_prompt": False})
assert cached(warm2) > first.usage.prompt_tokens and cached(cold2) == 0, (warm2.usage, first.usage, cold2.usage)
assert answer(warm2) == answer(cold2), (answer(warm2), answer(cold2))
done("second turn of a conversation: starts inside the first answer, identical")

# Beside concurrent load: streams with the same system prompt (and unrelated ones) queue for
# the two slots while A runs again.
results, errors = {}, []


def load(i):
    try:
        q = [B, "What is a library card?", "Name three poets.", A][i % 4]
        s = c.chat.completions.create(model=MODEL, max_tokens=20, seed=i, temperature=1.0, stream=True,
                                      messages=[{"role": "system", "content": SYS}, {"role": "user", "content": q}])
        results[i] = "".join(k.choices[0].delta.content or "" for k in s if k.choices)
    except Exception as e:  # noqa: BLE001
        errors.append(e)


threads = [threading.Thread(target=load, args=(i,)) for i in range(5)]
for t in threads:
    t.start()
busy = ask(A)
for t in threads:
    t.join()
assert not errors, errors
assert answer(busy) == answer(cold), (answer(busy), answer(cold))
assert metric("nucleus_prompt_cached_tokens_total") > 0
done("beside concurrent load: identical")

# More conversations than slots: a conversation whose slot went to another one comes back from
# the prompt cache's memory (--cache-ram), bit for bit. Four unrelated system prompts on two
# slots, asked in turn, so each one's slot is taken by another before it comes back.
TOPICS = ["a bakery that sells bread, cakes and pastries", "a bicycle repair shop near the station",
          "a museum of old maps and globes", "a garden centre with trees, seeds and tools"]


def conversation(topic, question, **kw):
    system = (f"You answer questions for {topic}. " + SYS.replace("library", "shop")) * 2
    kw.setdefault("seed", 5)
    return c.chat.completions.create(
        model=MODEL, max_tokens=16, logprobs=True, top_logprobs=3, temperature=0.9,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": question}], **kw)


restores = metric("nucleus_prompt_cache_restores_total")
for topic in TOPICS:
    conversation(topic, "When do you open?")
back = [conversation(topic, "When do you open?") for topic in TOPICS]
assert metric("nucleus_prompt_cache_restores_total") > restores, "no prompt came back from memory"
assert metric("nucleus_prompt_cache_memory_entries") >= 2
for topic, warm in zip(TOPICS, back):
    assert cached(warm) >= 256, warm.usage
    cold = conversation(topic, "When do you open?", extra_body={"cache_prompt": False})
    assert cached(cold) == 0
    assert answer(warm) == answer(cold), (topic, answer(warm), answer(cold))
done("more conversations than slots: back from memory, identical")

# A longer conversation: each turn resends the whole history; every turn starts from the
# previous turn's prompt and generated answer (64 tokens, ignore_eos), and answers as a cold start.
convo = [{"role": "system", "content": SYS}, {"role": "user", "content": "Which events are on Tuesdays?"}]
previous = 0
for question in ["And on Fridays?", "When does the library open on Sundays?", "Thank you!"]:
    kw = dict(model=MODEL, max_tokens=64, logprobs=True, top_logprobs=3, seed=9, temperature=0.9,
              messages=convo)
    warm = c.chat.completions.create(**kw, extra_body={"ignore_eos": True})
    cold = c.chat.completions.create(**kw, extra_body={"ignore_eos": True, "cache_prompt": False})
    assert cached(cold) == 0, cold.usage
    assert answer(warm) == answer(cold), (question, answer(warm), answer(cold))
    if previous:
        assert cached(warm) > previous, (question, cached(warm), previous)
    previous = warm.usage.prompt_tokens + 32  # at least half of the answer is reused next turn
    convo = convo + [{"role": "assistant", "content": warm.choices[0].message.content},
                     {"role": "user", "content": question}]
done("a conversation's turns start inside the previous answers, identical")
