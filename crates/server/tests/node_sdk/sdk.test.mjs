// The official Node SDKs (pinned in package.json / package-lock.json) against a real Nucleus
// server: `@anthropic-ai/sdk` on the Messages API and `openai` on the Responses API. Run by
// crates/server/tests/node_sdk.rs with NUCLEUS_ADDR (http://host:port), NUCLEUS_MODEL_ID and
// NUCLEUS_API_KEY_FOR_TEST set; `node --test sdk.test.mjs`.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";

const ADDR = process.env.NUCLEUS_ADDR;
const MODEL = process.env.NUCLEUS_MODEL_ID ?? "smollm2";
const KEY = process.env.NUCLEUS_API_KEY_FOR_TEST;

const anthropic = (apiKey = KEY) => new Anthropic({ baseURL: ADDR, apiKey, maxRetries: 0, timeout: 120_000 });
const openai = (apiKey = KEY) => new OpenAI({ baseURL: `${ADDR}/v1`, apiKey, maxRetries: 0, timeout: 120_000 });

const USER = [{ role: "user", content: "Name three colors." }];
const WEATHER = {
  name: "get_weather",
  description: "Current weather in a city.",
  input_schema: {
    type: "object",
    properties: { city: { type: "string", maxLength: 20 } },
    required: ["city"],
    additionalProperties: false,
  },
};

/** Runs `fn`, which must reject with an instance of `type`; returns the error. */
async function rejectsWith(type, status, fn) {
  try {
    await fn();
  } catch (e) {
    assert.ok(e instanceof type, `expected ${type.name}, got ${e?.constructor?.name}: ${e}`);
    assert.equal(e.status, status);
    return e;
  }
  assert.fail(`expected ${type.name}`);
}

describe("Messages (@anthropic-ai/sdk)", () => {
  const c = anthropic();

  test("plain", async () => {
    const m = await c.messages.create({ model: MODEL, max_tokens: 12, messages: USER, system: "Answer briefly.", seed: 7 });
    assert.equal(m.type, "message");
    assert.equal(m.role, "assistant");
    assert.match(m.id, /^msg_/);
    assert.equal(m.model, MODEL);
    assert.ok(["end_turn", "max_tokens"].includes(m.stop_reason), m.stop_reason);
    assert.equal(m.content.length, 1);
    assert.equal(m.content[0].type, "text");
    assert.ok(m.content[0].text.length > 0);
    assert.ok(m.usage.output_tokens > 0 && m.usage.output_tokens <= 12, JSON.stringify(m.usage));
    assert.ok(m.usage.input_tokens + m.usage.cache_read_input_tokens > 0);
  });

  test("streamed: the SDK's final message equals the whole one", async () => {
    const body = { model: MODEL, max_tokens: 16, messages: USER, seed: 11, temperature: 0.9, top_k: 40 };
    const whole = await c.messages.create(body);
    const stream = c.messages.stream(body);
    const texts = [];
    const types = [];
    stream.on("text", (t) => texts.push(t));
    stream.on("streamEvent", (e) => types.push(e.type));
    const final = await stream.finalMessage();
    assert.deepEqual(final.content, whole.content);
    assert.equal(final.stop_reason, whole.stop_reason);
    assert.equal(final.usage.output_tokens, whole.usage.output_tokens);
    assert.equal(texts.join(""), whole.content[0]?.text ?? "");
    assert.equal(types[0], "message_start");
    assert.deepEqual(types.slice(-2), ["message_delta", "message_stop"]);
  });

  test("tools with a tool_result turn", async () => {
    const ask = [{ role: "user", content: "What is the weather in Paris right now?" }];
    const call = await c.messages.create({
      model: MODEL, max_tokens: 80, messages: ask, tools: [WEATHER],
      tool_choice: { type: "tool", name: "get_weather" }, seed: 3,
    });
    assert.equal(call.stop_reason, "tool_use");
    const uses = call.content.filter((b) => b.type === "tool_use");
    assert.equal(uses.length, 1);
    const use = uses[0];
    assert.match(use.id, /^toolu_/);
    assert.equal(use.name, "get_weather");
    assert.deepEqual(Object.keys(use.input), ["city"]);
    assert.equal(typeof use.input.city, "string");
    const answer = await c.messages.create({
      model: MODEL, max_tokens: 16, tools: [WEATHER], tool_choice: { type: "none" },
      messages: [
        ...ask,
        { role: "assistant", content: call.content },
        { role: "user", content: [
          { type: "tool_result", tool_use_id: use.id, content: "18 C, sunny" },
          { type: "text", text: "Summarize." },
        ] },
      ],
    });
    assert.ok(["end_turn", "max_tokens"].includes(answer.stop_reason), answer.stop_reason);
    assert.equal(answer.content[0].type, "text");
  });

  test("count_tokens is the prompt /v1/messages runs", async () => {
    const n = await c.messages.countTokens({ model: MODEL, messages: USER, system: "Answer briefly." });
    const m = await c.messages.create({ model: MODEL, max_tokens: 1, messages: USER, system: "Answer briefly." });
    assert.ok(n.input_tokens > 0);
    assert.equal(n.input_tokens, m.usage.input_tokens + m.usage.cache_read_input_tokens);
    const withTools = await c.messages.countTokens({ model: MODEL, messages: USER, tools: [WEATHER] });
    assert.ok(withTools.input_tokens > (await c.messages.countTokens({ model: MODEL, messages: USER })).input_tokens);
  });

  test("typed errors", async () => {
    const bad = await rejectsWith(Anthropic.BadRequestError, 400, () =>
      c.messages.create({ model: MODEL, max_tokens: 4, messages: USER, temperature: 7 }));
    assert.equal(bad.error.type, "error");
    assert.equal(bad.error.error.type, "invalid_request_error");
    assert.match(bad.error.error.message, /temperature/);
    const image = await rejectsWith(Anthropic.BadRequestError, 400, () =>
      c.messages.create({ model: MODEL, max_tokens: 4, messages: [{ role: "user", content: [
        { type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } }] }] }));
    assert.match(image.error.error.message, /messages\[0\]\.content\[0\]\.type/);
    await rejectsWith(Anthropic.NotFoundError, 404, () =>
      c.messages.create({ model: "claude-opus-4-1", max_tokens: 4, messages: USER }));
    const auth = await rejectsWith(Anthropic.AuthenticationError, 401, () =>
      anthropic("wrong-key").messages.create({ model: MODEL, max_tokens: 4, messages: USER }));
    assert.equal(auth.error.error.type, "authentication_error");
  });
});

describe("Responses (openai)", () => {
  const c = openai();
  const TOOLS = [{
    type: "function", name: "get_weather", description: "Current weather in a city.", strict: true,
    parameters: { type: "object", additionalProperties: false, required: ["city"],
      properties: { city: { type: "string", maxLength: 20 } } },
  }];

  test("responses.create", async () => {
    const r = await c.responses.create({ model: MODEL, input: "Say hello.", max_output_tokens: 12, temperature: 0 });
    assert.match(r.id, /^resp_/);
    assert.equal(r.object, "response");
    assert.ok(["completed", "incomplete"].includes(r.status), r.status);
    assert.equal(r.output[0].type, "message");
    assert.equal(r.output[0].content[0].type, "output_text");
    assert.ok(r.output_text.length > 0);
    assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
    const cut = await c.responses.create({ model: MODEL, input: "Write a long story.", max_output_tokens: 3 });
    assert.equal(cut.status, "incomplete");
    assert.equal(cut.incomplete_details.reason, "max_output_tokens");
  });

  test("responses.stream: typed events, numbered, assembled to the whole answer", async () => {
    const body = { model: MODEL, input: "Tell me about cats.", max_output_tokens: 16, temperature: 0.8, seed: 5 };
    const stream = c.responses.stream(body);
    const events = [];
    for await (const e of stream) events.push(e);
    const types = events.map((e) => e.type);
    assert.deepEqual(types.slice(0, 2), ["response.created", "response.in_progress"]);
    assert.ok(["response.completed", "response.incomplete"].includes(types.at(-1)), types.at(-1));
    assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i));
    const deltas = events.filter((e) => e.type === "response.output_text.delta").map((e) => e.delta).join("");
    const whole = await c.responses.create(body);
    assert.equal(deltas, whole.output_text);
    if (types.at(-1) === "response.completed") {
      const final = await stream.finalResponse();
      assert.equal(final.output_text, whole.output_text);
    }
  });

  test("function tools with a function_call_output turn", async () => {
    const input = [{ role: "user", content: "What's the weather in Paris?" }];
    const r = await c.responses.create({
      model: MODEL, input, tools: TOOLS, tool_choice: "required", max_output_tokens: 60, temperature: 0,
    });
    const calls = r.output.filter((o) => o.type === "function_call");
    assert.equal(r.status, "completed");
    assert.ok(calls.length >= 1);
    const call = calls[0];
    assert.equal(call.name, "get_weather");
    assert.match(call.id, /^fc_/);
    const args = JSON.parse(call.arguments);
    assert.deepEqual(Object.keys(args), ["city"]);
    const r2 = await c.responses.create({
      model: MODEL, tools: TOOLS, max_output_tokens: 20, temperature: 0,
      input: [
        ...input,
        { type: "function_call", call_id: call.call_id, name: call.name, arguments: call.arguments },
        { type: "function_call_output", call_id: call.call_id, output: "sunny, 21 C" },
      ],
    });
    assert.ok(["completed", "incomplete"].includes(r2.status), r2.status);
    assert.ok(r2.output.length > 0);
  });

  test("text.format json_schema", async () => {
    const schema = { type: "object", additionalProperties: false, required: ["name", "age"],
      properties: { name: { type: "string", maxLength: 12 }, age: { type: "integer" } } };
    const r = await c.responses.create({
      model: MODEL, input: "Invent a person.", max_output_tokens: 60, temperature: 0,
      text: { format: { type: "json_schema", name: "person", schema, strict: true } },
    });
    const obj = JSON.parse(r.output_text);
    assert.deepEqual(Object.keys(obj).sort(), ["age", "name"]);
    assert.ok(Number.isInteger(obj.age));
    assert.equal(r.text.format.type, "json_schema");
  });

  test("previous_response_id chains, and an unknown one is a NotFoundError", async () => {
    const r1 = await c.responses.create({
      model: MODEL, instructions: "Be brief.", input: "My name is Bob.", max_output_tokens: 8, temperature: 0,
    });
    const r2 = await c.responses.create({
      model: MODEL, instructions: "Be brief.", previous_response_id: r1.id, input: "What is my name?",
      max_output_tokens: 8, temperature: 0,
    });
    assert.equal(r2.previous_response_id, r1.id);
    assert.ok(r2.usage.input_tokens_details.cached_tokens > 0, JSON.stringify(r2.usage));
    const got = await c.responses.retrieve(r1.id);
    assert.equal(got.id, r1.id);
    assert.deepEqual(got.output, r1.output);
    const e = await rejectsWith(OpenAI.NotFoundError, 404, () =>
      c.responses.create({ model: MODEL, input: "hi", previous_response_id: "resp_unknown" }));
    assert.equal(e.param, "previous_response_id");
    const bad = await rejectsWith(OpenAI.BadRequestError, 400, () =>
      c.responses.create({ model: MODEL, input: "x", tools: [{ type: "local_shell" }] }));
    assert.equal(bad.param, "tools[0].type");
    await rejectsWith(OpenAI.AuthenticationError, 401, () =>
      openai("wrong-key").responses.create({ model: MODEL, input: "hi", max_output_tokens: 2 }));
  });
});
