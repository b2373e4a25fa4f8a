// LangChain.js (@langchain/openai 0.6, @langchain/anthropic 0.3) against the real server: a
// bindTools + ToolMessage loop, streaming, and withStructuredOutput by JSON Schema and by
// function calling; ChatAnthropic's withStructuredOutput over the Messages API (a forced tool
// call, sent with LangChain's defaults top_k -1 and top_p -1 and thinking disabled).
import test, { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ChatOpenAI } from '@langchain/openai';
import { ChatAnthropic } from '@langchain/anthropic';
import { HumanMessage, SystemMessage, ToolMessage, AIMessageChunk } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { z } from 'zod';
import { startServer, API_KEY, MODEL } from './harness.mjs';
import { WEATHER_PARAMS, PERSON_SCHEMA, assertMatchesSchema, recordingFetch, withExchanges } from './common.mjs';

let server;
let rec;
let model;
let claude;

before(async () => {
  server = await startServer();
  rec = recordingFetch();
  model = new ChatOpenAI({
    model: MODEL, apiKey: API_KEY, maxTokens: 32, maxRetries: 0,
    configuration: { baseURL: server.baseURL, fetch: rec.fetch },
  });
  claude = new ChatAnthropic({
    model: MODEL, apiKey: API_KEY, anthropicApiUrl: server.origin, maxTokens: 32, maxRetries: 0,
    clientOptions: { fetch: rec.fetch },
  });
});
after(async () => { await server?.stop(); });

const calls = [];
const getWeather = tool(async ({ city }) => { calls.push({ city }); return JSON.stringify({ city, forecast: 'sunny' }); }, {
  name: 'get_weather',
  description: 'The weather in a city.',
  schema: z.object({ city: z.string().max(12) }),
});

const Person = z.object({ name: z.string().max(12), age: z.number().int().min(0).max(120) });

function assertUsage(message) {
  const u = message.usage_metadata;
  assert.ok(u, 'usage_metadata');
  assert.ok(u.input_tokens > 0);
  assert.equal(u.total_tokens, u.input_tokens + u.output_tokens);
}

/// The loop a LangChain agent runs: a forced call, the tool run, the result sent back for an answer.
async function toolLoop(chat, route) {
  calls.length = 0;
  const messages = [new SystemMessage('You answer weather questions.'), new HumanMessage('Weather in Oslo?')];
  const ai = await chat.bindTools([getWeather], { tool_choice: 'get_weather' }).invoke(messages);
  assert.equal(ai.tool_calls.length, 1);
  const [call] = ai.tool_calls;
  assert.equal(call.name, 'get_weather');
  assert.equal(call.type, 'tool_call');
  assert.ok(call.id);
  assertMatchesSchema(call.args, WEATHER_PARAMS, 'the tool args');
  assert.equal(ai.invalid_tool_calls?.length ?? 0, 0);
  assertUsage(ai);

  // Invoking a tool with the ToolCall gives the ToolMessage that answers it.
  const toolMessage = await getWeather.invoke(call);
  assert.ok(toolMessage instanceof ToolMessage);
  assert.equal(toolMessage.tool_call_id, call.id);
  assert.deepEqual(calls, [call.args]);

  const answer = await chat.bindTools([getWeather]).invoke([...messages, ai, toolMessage]);
  assert.deepEqual(answer.tool_calls, []);
  assert.equal(typeof answer.text, 'string');
  assertUsage(answer);
  assert.ok(answer.usage_metadata.input_tokens > ai.usage_metadata.input_tokens);
  const [first, second] = rec.bodies(route).slice(-2);
  return { ai, call, answer, first, second };
}

test('bindTools + ToolMessage (Chat Completions): a forced call, the tool run, a text answer', () => withExchanges(rec, async () => {
  const { ai, call, answer, first, second } = await toolLoop(model, '/chat/completions');
  assert.equal(ai.response_metadata.finish_reason, 'tool_calls');
  assert.deepEqual(first.tool_choice, { type: 'function', function: { name: 'get_weather' } });
  assert.equal(typeof answer.content, 'string');
  assert.ok(['stop', 'length'].includes(answer.response_metadata.finish_reason));
  assert.deepEqual(second.messages.map((m) => m.role), ['system', 'user', 'assistant', 'tool']);
  assert.equal(second.messages[2].tool_calls[0].id, call.id);
  assert.equal(second.messages[3].tool_call_id, call.id);
}));

test('bindTools + ToolMessage (useResponsesApi): the same loop over /v1/responses', () => withExchanges(rec, async () => {
  const responsesModel = new ChatOpenAI({
    model: MODEL, apiKey: API_KEY, maxTokens: 32, maxRetries: 0, useResponsesApi: true,
    configuration: { baseURL: server.baseURL, fetch: rec.fetch },
  });
  const { call, first, second } = await toolLoop(responsesModel, '/responses');
  assert.deepEqual(first.tool_choice, { type: 'function', name: 'get_weather' });
  const items = second.input.map((i) => i.type === 'message' ? i.role : i.type);
  assert.deepEqual(items.slice(-3), ['user', 'function_call', 'function_call_output']);
  assert.equal(second.input.at(-1).call_id, call.id);
}));

test('stream: chunks concatenate to the message, usage on the last', () => withExchanges(rec, async () => {
  let full = null;
  let n = 0;
  for await (const chunk of await model.stream([new HumanMessage('Hi')])) {
    assert.ok(chunk instanceof AIMessageChunk);
    full = full ? full.concat(chunk) : chunk;
    n += 1;
  }
  assert.ok(n >= 2, `${n} chunks`);
  assert.equal(typeof full.content, 'string');
  assertUsage(full);
  assert.ok(full.usage_metadata.output_tokens <= 32);
  assert.equal(rec.bodies('/chat/completions').at(-1).stream, true);
  assert.ok(['stop', 'length'].includes(full.response_metadata.finish_reason));
}));

test('stream with bound tools: tool_call_chunks merge into one tool call', () => withExchanges(rec, async () => {
  let full = null;
  for await (const chunk of await model.bindTools([getWeather], { tool_choice: 'get_weather' })
    .stream([new HumanMessage('Weather in Paris?')])) {
    full = full ? full.concat(chunk) : chunk;
  }
  assert.equal(full.tool_calls.length, 1);
  assert.equal(full.tool_calls[0].name, 'get_weather');
  assert.ok(full.tool_calls[0].id);
  assertMatchesSchema(full.tool_calls[0].args, WEATHER_PARAMS, 'the streamed args');
  assert.equal(full.response_metadata.finish_reason, 'tool_calls');
  assert.equal(full.content, '', 'no text with a forced call');
  assertUsage(full);
}));

test('withStructuredOutput (zod, default jsonSchema method)', () => withExchanges(rec, async () => {
  const structured = model.withStructuredOutput(Person, { name: 'person' });
  const person = await structured.invoke('A person?');
  assertMatchesSchema(person, PERSON_SCHEMA, 'the object');
  assert.ok(Person.safeParse(person).success);
  assert.equal(rec.bodies('/chat/completions').at(-1).response_format.type, 'json_schema');
}));

test('withStructuredOutput (zod, functionCalling, includeRaw)', () => withExchanges(rec, async () => {
  const structured = model.withStructuredOutput(Person, { name: 'person', method: 'functionCalling', includeRaw: true });
  const { raw, parsed } = await structured.invoke('A person?');
  assertMatchesSchema(parsed, PERSON_SCHEMA, 'the object');
  assert.equal(raw.tool_calls[0].name, 'person');
  assert.deepEqual(raw.tool_calls[0].args, parsed);
  assert.deepEqual(rec.bodies('/chat/completions').at(-1).tool_choice,
                   { type: 'function', function: { name: 'person' } });
}));

test('ChatAnthropic: withStructuredOutput (zod) over the Messages API', () => withExchanges(rec, async () => {
  const structured = claude.withStructuredOutput(Person, { name: 'person' });
  const person = await structured.invoke('A person?');
  assertMatchesSchema(person, PERSON_SCHEMA, 'the object');
  assert.ok(Person.safeParse(person).success);
  const sent = rec.bodies('/messages').at(-1);
  assert.deepEqual(sent.tool_choice, { type: 'tool', name: 'person' });
  // LangChain's defaults, which Anthropic's API takes as "not set".
  assert.equal(sent.top_k, -1);
  assert.equal(sent.top_p, -1);
  assert.deepEqual(sent.thinking, { type: 'disabled' });
}));

test('ChatAnthropic: a plain invoke and a stream', () => withExchanges(rec, async () => {
  const reply = await claude.invoke([new HumanMessage('One, please.')]);
  assert.equal(typeof reply.content, 'string');
  assertUsage(reply);
  let full = null;
  for await (const chunk of await claude.stream([new HumanMessage('One, please.')])) full = full ? full.concat(chunk) : chunk;
  assert.ok(full);
  assertUsage(full);
}));
