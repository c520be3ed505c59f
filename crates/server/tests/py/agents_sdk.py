"""The OpenAI Agents SDK (`openai-agents`) against the server: its default Responses model
(`OpenAIResponsesModel` over an `AsyncOpenAI` client set with `set_default_openai_client`),
tracing off, an agent with one function tool run to completion. The tool must be called (the
first turn's `tool_choice` is required), its result goes back as a `function_call_output`
item, and the run ends with the model's answer."""

import asyncio

from agents import (Agent, ModelSettings, OpenAIResponsesModel, Runner, function_tool,
                    set_default_openai_api, set_default_openai_client, set_tracing_disabled)
from openai import AsyncOpenAI

from common import BASE, KEY, MODEL, done

set_tracing_disabled(True)
client = AsyncOpenAI(base_url=BASE, api_key=KEY, max_retries=0, timeout=120)
set_default_openai_client(client, use_for_tracing=False)
set_default_openai_api("responses")

calls = []


@function_tool
def get_weather(city: str) -> str:
    """The current weather in a city."""
    calls.append(city)
    return f"It is sunny and 21 C in {city}."


async def main():
    agent = Agent(
        name="weather",
        instructions="Answer questions about the weather using the get_weather tool.",
        tools=[get_weather],
        model=OpenAIResponsesModel(model=MODEL, openai_client=client),
        # Required on the first turn; the SDK resets it to auto once the tool has run.
        model_settings=ModelSettings(tool_choice="required", max_tokens=48, temperature=0),
    )
    result = await Runner.run(agent, "What is the weather in Paris?", max_turns=6)
    assert calls, "the tool was never called"
    kinds = [item.type for item in result.new_items]
    assert "tool_call_item" in kinds and "tool_call_output_item" in kinds, kinds
    assert kinds[-1] == "message_output_item", kinds
    assert isinstance(result.final_output, str), result.final_output
    print("final output:", repr(result.final_output), "turns:", len(result.raw_responses))
    # Streamed, the same loop (greedy, so the same answer).
    streamed = Runner.run_streamed(agent, "What is the weather in Paris?", max_turns=6)
    async for _ in streamed.stream_events():
        pass
    assert streamed.final_output == result.final_output and len(calls) == 2, (streamed.final_output, calls)


asyncio.run(main())
done("agents sdk")
