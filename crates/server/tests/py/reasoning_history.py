"""Thinking from earlier assistant turns reaches the chat template, from each API: chat
`reasoning_content` (and vLLM's `reasoning`, and a <think> block left in the content), the
Messages API's `thinking` blocks, the Responses API's `reasoning` items. Measured by the
prompt's token count. With HISTORY_RENDERS=1 the server runs a Qwen3-style template that writes
the thinking of the turn still working through tool calls (and drops it from turns before the
last user message); with 0, a DeepSeek-R1-style one that drops all earlier thinking."""

import os

import anthropic

from anthropic_common import client as anthropic_client
from common import MODEL, client

renders = os.environ["HISTORY_RENDERS"] == "1"
c, a = client(), anthropic_client()
THOUGHT = "The user wants the weather, so I call get_weather for Oslo."
PARAMS = {"type": "object", "additionalProperties": False, "required": ["city"],
          "properties": {"city": {"type": "string"}}}
CALL = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}


def chat_tokens(assistant, tools=True, before=None):
    msgs = (before or []) + [{"role": "user", "content": "Weather in Oslo?"}, dict(role="assistant", **assistant)]
    if "tool_calls" in assistant:
        msgs.append({"role": "tool", "tool_call_id": "call_1", "content": "sunny"})
    else:
        msgs.append({"role": "user", "content": "Thanks. And tomorrow?"})
    kw = {"tools": [{"type": "function", "function": {"name": "get_weather", "parameters": PARAMS}}]} if tools else {}
    r = c.chat.completions.create(model=MODEL, messages=msgs, max_tokens=1, **kw)
    return r.usage.prompt_tokens


# Chat: the thinking of the turn with the call, under each name, or left in the content.
plain = chat_tokens({"content": "", "tool_calls": [CALL]})
named = chat_tokens({"content": "", "tool_calls": [CALL], "reasoning_content": THOUGHT})
vllm = chat_tokens({"content": "", "tool_calls": [CALL], "reasoning": THOUGHT})
inline = chat_tokens({"content": f"<think>\n{THOUGHT}\n</think>\n\n", "tool_calls": [CALL]})
assert named == vllm, (named, vllm)
if renders:
    assert named > plain + 10 and inline == named, (plain, named, inline)
else:
    assert named == plain, (plain, named)
chat_delta = named - plain
# A turn before the last user message: both templates drop its thinking.
earlier = chat_tokens({"content": "Sunny.", "reasoning_content": THOUGHT}, tools=False)
assert earlier == chat_tokens({"content": "Sunny."}, tools=False), earlier
print(f"chat: {plain} tokens without the thinking, {named} with it")

# Messages API: thinking blocks in the assistant turn.
TOOL = {"name": "get_weather", "input_schema": PARAMS}


def messages_tokens(with_thinking):
    blocks = [{"type": "thinking", "thinking": THOUGHT, "signature": "sig"}] if with_thinking else []
    blocks.append({"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Oslo"}})
    msgs = [{"role": "user", "content": "Weather in Oslo?"}, {"role": "assistant", "content": blocks},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "sunny"}]}]
    return a.messages.count_tokens(model=MODEL, messages=msgs, tools=[TOOL]).input_tokens


m_plain, m_named = messages_tokens(False), messages_tokens(True)
assert m_named - m_plain == chat_delta, (m_plain, m_named, chat_delta)

# Responses API: a reasoning item before the call.
TOOLS = [{"type": "function", "name": "get_weather", "parameters": PARAMS, "strict": False}]


def responses_tokens(with_thinking):
    items = [{"role": "user", "content": "Weather in Oslo?"}]
    if with_thinking:
        items.append({"type": "reasoning", "id": "rs_1", "summary": [],
                      "content": [{"type": "reasoning_text", "text": THOUGHT}]})
    items += [{"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city": "Oslo"}'},
              {"type": "function_call_output", "call_id": "call_1", "output": "sunny"}]
    return c.responses.create(model=MODEL, input=items, tools=TOOLS, max_output_tokens=1).usage.input_tokens


r_plain, r_named = responses_tokens(False), responses_tokens(True)
assert r_named - r_plain == chat_delta, (r_plain, r_named, chat_delta)
print(f"earlier thinking {'written' if renders else 'dropped'}: +{chat_delta} prompt tokens in every API: ok")
