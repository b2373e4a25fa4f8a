// The Vercel AI SDK (ai 5) against the real server: multi-step tool loops through the
// OpenAI-compatible provider and the OpenAI provider (Chat and Responses), streamed and not, and
// generateObject on both OpenAI routes.
import test, { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { generateText, streamText, generateObject, streamObject, stepCountIs, tool } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { createOpenAI } from '@ai-sdk/openai';
import { z } from 'zod';
import { startServer, API_KEY, MODEL } from './harness.mjs';
import { WEATHER_PARAMS, PERSON_SCHEMA, assertMatchesSchema, recordingFetch, withExchanges } from './common.mjs';

let server;
let rec;
let compatible; // createOpenAICompatible: /v1/chat/completions
let openai;     // createOpenAI: openai('m') is /v1/responses, openai.chat('m') /v1/chat/completions

before(async () => {
  server = await startServer();
  rec = recordingFetch();
  compatible = createOpenAICompatible({
    name: 'bitnet', baseURL: server.baseURL, apiKey: API_KEY, fetch: rec.fetch, includeUsage: true,
  });
  openai = createOpenAI({ baseURL: server.baseURL, apiKey: API_KEY, fetch: rec.fetch });
});
after(async () => { await server?.stop(); });

/// The weather tool, recording what it was called with.
function weatherTool(calls) {
  return tool({
    description: 'The weather in a city.',
    inputSchema: z.object({ city: z.string().max(12) }),
    execute: async ({ city }) => { calls.push({ city }); return { city, forecast: 'sunny' }; },
  });
}

/// Force the call in the first step, answer with text afterwards (the server's `auto` never calls).
const forceThenAnswer = ({ stepNumber }) =>
  stepNumber === 0 ? { toolChoice: { type: 'tool', toolName: 'get_weather' } } : { toolChoice: 'none' };

const Person = z.object({ name: z.string().max(12), age: z.number().int().min(0).max(120) });

/// The common checks of a two-step run: a tool step, then a text step.
function assertToolThenText(result, calls) {
  assert.equal(result.steps.length, 2, 'a tool step and a text step');
  const [toolStep, textStep] = result.steps;
  assert.equal(toolStep.finishReason, 'tool-calls');
  assert.equal(toolStep.toolCalls.length, 1);
  const [call] = toolStep.toolCalls;
  assert.equal(call.toolName, 'get_weather');
  assert.ok(call.toolCallId);
  assertMatchesSchema(call.input, WEATHER_PARAMS, 'the tool input');
  assert.deepEqual(calls, [call.input], 'execute ran once with the parsed input');
  assert.equal(toolStep.toolResults.length, 1);
  assert.equal(toolStep.toolResults[0].toolCallId, call.toolCallId);
  assert.deepEqual(toolStep.toolResults[0].output, { city: call.input.city, forecast: 'sunny' });
  assert.ok(['stop', 'length'].includes(textStep.finishReason), textStep.finishReason);
  assert.equal(textStep.toolCalls.length, 0);
  assert.equal(typeof textStep.text, 'string');
  assert.equal(result.text, textStep.text);
  assert.deepEqual(result.response.messages.map((m) => m.role), ['assistant', 'tool', 'assistant']);
  for (const step of result.steps) {
    assert.ok(step.usage.inputTokens > 0);
    assert.equal(step.usage.totalTokens, step.usage.inputTokens + step.usage.outputTokens);
  }
  assert.equal(result.totalUsage.inputTokens, toolStep.usage.inputTokens + textStep.usage.inputTokens);
  assert.equal(result.totalUsage.outputTokens, toolStep.usage.outputTokens + textStep.usage.outputTokens);
  assert.ok(textStep.usage.inputTokens > toolStep.usage.inputTokens, 'the second prompt holds the call');
}

test('generateText: a tool loop through createOpenAICompatible (stopWhen: stepCountIs(3))', () => withExchanges(rec, async () => {
  const calls = [];
  const result = await generateText({
    model: compatible(MODEL), prompt: 'Weather in Oslo?', maxOutputTokens: 32, maxRetries: 0,
    tools: { get_weather: weatherTool(calls) }, stopWhen: stepCountIs(3), prepareStep: forceThenAnswer,
  });
  assertToolThenText(result, calls);
  const sent = rec.bodies('/chat/completions').slice(-2);
  assert.deepEqual(sent[0].tool_choice, { type: 'function', function: { name: 'get_weather' } });
  assert.deepEqual(sent[1].messages.map((m) => m.role), ['user', 'assistant', 'tool']);
}));

test('generateText: a tool loop through the Responses provider (createOpenAI)', () => withExchanges(rec, async () => {
  const calls = [];
  const result = await generateText({
    model: openai(MODEL), prompt: 'Weather in Oslo?', maxOutputTokens: 32, maxRetries: 0,
    tools: { get_weather: weatherTool(calls) }, stopWhen: stepCountIs(3), prepareStep: forceThenAnswer,
  });
  assertToolThenText(result, calls);
  assert.match(result.response.id, /^resp_/);
}));

test('generateText: the Responses provider loop with store: false (items sent whole)', () => withExchanges(rec, async () => {
  // The provider's default (store: true) replays earlier output as item_reference ids, which a
  // stateless server cannot resolve (the test above); store: false sends the items themselves.
  const calls = [];
  const result = await generateText({
    model: openai(MODEL), prompt: 'Weather in Oslo?', maxOutputTokens: 32, maxRetries: 0,
    providerOptions: { openai: { store: false } },
    tools: { get_weather: weatherTool(calls) }, stopWhen: stepCountIs(3), prepareStep: forceThenAnswer,
  });
  assertToolThenText(result, calls);
  const sent = rec.bodies('/responses').at(-1);
  assert.deepEqual(sent.input.map((i) => i.type ?? i.role), ['user', 'function_call', 'function_call_output']);
}));

test('streamText: a tool loop through openai.chat, streamed', () => withExchanges(rec, async () => {
  const calls = [];
  const result = streamText({
    model: openai.chat(MODEL), prompt: 'Weather in Oslo?', maxOutputTokens: 32, maxRetries: 0,
    tools: { get_weather: weatherTool(calls) }, stopWhen: stepCountIs(3), prepareStep: forceThenAnswer,
    onError: () => {}, // errors surface below, from the awaited promises
  });
  const types = [];
  let streamedCall = null;
  let inputDeltas = '';
  for await (const part of result.fullStream) {
    types.push(part.type);
    if (part.type === 'tool-call') streamedCall = part;
    if (part.type === 'tool-input-delta') inputDeltas += part.delta;
    if (part.type === 'error') throw part.error;
  }
  assert.equal(types[0], 'start');
  assert.equal(types.at(-1), 'finish');
  assert.equal(types.filter((t) => t === 'start-step').length, 2);
  assert.equal(types.filter((t) => t === 'finish-step').length, 2);
  for (const t of ['tool-input-start', 'tool-input-delta', 'tool-input-end', 'tool-call', 'tool-result']) {
    assert.ok(types.includes(t), `${t} in ${types.join(',')}`);
  }
  assert.ok(types.indexOf('tool-result') < types.lastIndexOf('start-step'), 'the result precedes step 2');
  assert.equal(streamedCall.toolName, 'get_weather');
  assert.deepEqual(JSON.parse(inputDeltas), streamedCall.input);
  const steps = await result.steps;
  // OpenAI opens a streamed call with {role, content: null, tool_calls}; an empty content string
  // before the call becomes an empty text part of the tool step (text-start/text-end above).
  assert.deepEqual(steps[0].content.filter((p) => p.type === 'text'), [], 'no text part in the tool step');
  assertToolThenText({
    steps, text: await result.text, response: await result.response, totalUsage: await result.totalUsage,
  }, calls);
}));

test('streamText: the Responses provider streams a forced call (one step)', () => withExchanges(rec, async () => {
  const calls = [];
  const result = streamText({
    model: openai(MODEL), prompt: 'Weather in Oslo?', maxOutputTokens: 32, maxRetries: 0, onError: () => {},
    tools: { get_weather: weatherTool(calls) }, toolChoice: { type: 'tool', toolName: 'get_weather' },
  });
  const types = [];
  for await (const part of result.fullStream) {
    if (part.type === 'error') throw part.error;
    types.push(part.type);
  }
  for (const t of ['tool-input-start', 'tool-input-delta', 'tool-call', 'tool-result', 'finish']) {
    assert.ok(types.includes(t), `${t} in ${types.join(',')}`);
  }
  assert.ok(!types.includes('text-delta'), 'no text in a forced call');
  assert.equal(await result.finishReason, 'tool-calls');
  const [call] = await result.toolCalls;
  assert.equal(call.toolName, 'get_weather');
  assertMatchesSchema(call.input, WEATHER_PARAMS, 'the tool input');
  assert.deepEqual(calls, [call.input]);
  const usage = await result.usage;
  assert.ok(usage.inputTokens > 0 && usage.outputTokens > 0);
  assert.equal(rec.bodies('/responses').at(-1).stream, true);
}));

test('generateText: toolChoice required among two tools (one step)', () => withExchanges(rec, async () => {
  const calls = [];
  const times = [];
  const result = await generateText({
    // A call among several writes {"name": ..., "arguments": ...}: room for the wrapper too.
    model: compatible(MODEL), prompt: 'Weather in Oslo?', maxOutputTokens: 200, maxRetries: 0,
    toolChoice: 'required',
    tools: {
      get_weather: weatherTool(calls),
      get_time: tool({ description: 'The time in a zone.', inputSchema: z.object({ zone: z.enum(['UTC', 'CET']) }),
                       execute: async ({ zone }) => { times.push(zone); return '12:00'; } }),
    },
  });
  assert.equal(result.steps.length, 1);
  assert.equal(result.finishReason, 'tool-calls');
  assert.ok(result.toolCalls.length >= 1, 'at least one call (parallel calls are allowed)');
  for (const call of result.toolCalls) {
    assert.ok(['get_weather', 'get_time'].includes(call.toolName), call.toolName);
    if (call.toolName === 'get_weather') assertMatchesSchema(call.input, WEATHER_PARAMS, 'the weather input');
    else assert.ok(['UTC', 'CET'].includes(call.input.zone), JSON.stringify(call.input));
  }
  assert.equal(new Set(result.toolCalls.map((c) => c.toolCallId)).size, result.toolCalls.length, 'distinct ids');
  assert.equal(calls.length + times.length, result.toolCalls.length, 'each call executed once');
  assert.deepEqual(result.toolResults.map((r) => r.toolCallId), result.toolCalls.map((c) => c.toolCallId));
  assert.equal(rec.bodies('/chat/completions').at(-1).tool_choice, 'required');
}));

test('generateObject: the Responses provider (text.format json_schema)', () => withExchanges(rec, async () => {
  const { object, finishReason, usage, response } = await generateObject({
    model: openai(MODEL), schema: Person, prompt: 'A person?', maxOutputTokens: 48, maxRetries: 0,
  });
  assertMatchesSchema(object, PERSON_SCHEMA, 'the object');
  assert.ok(Person.safeParse(object).success);
  assert.equal(finishReason, 'stop');
  assert.match(response.id, /^resp_/);
  assert.equal(usage.totalTokens, usage.inputTokens + usage.outputTokens);
  assert.equal(rec.bodies('/responses').at(-1).text.format.type, 'json_schema');
}));

test('generateObject: openai.chat (response_format json_schema)', () => withExchanges(rec, async () => {
  const { object, finishReason, usage } = await generateObject({
    model: openai.chat(MODEL), schema: Person, prompt: 'A person?', maxOutputTokens: 48, maxRetries: 0,
  });
  assertMatchesSchema(object, PERSON_SCHEMA, 'the object');
  assert.equal(finishReason, 'stop');
  assert.equal(usage.totalTokens, usage.inputTokens + usage.outputTokens);
  assert.equal(rec.bodies('/chat/completions').at(-1).response_format.type, 'json_schema');
}));

test('streamObject: the Responses provider streams partial objects', () => withExchanges(rec, async () => {
  const result = streamObject({
    model: openai(MODEL), schema: Person, prompt: 'A person?', maxOutputTokens: 48, maxRetries: 0, onError: () => {},
  });
  const partials = [];
  for await (const partial of result.partialObjectStream) partials.push(partial);
  const object = await result.object;
  assertMatchesSchema(object, PERSON_SCHEMA, 'the object');
  assert.ok(partials.length >= 2, `${partials.length} partial objects`);
  assert.deepEqual(partials.at(-1), object);
  assert.equal(await result.finishReason, 'stop');
}));
