// The official OpenAI SDK (openai 6) against the real server: Chat Completions (a manual tool
// loop, runTools, streaming with n, logit_bias and vLLM's fields), the Responses API (plain,
// streamed, a function tool, a call cut short, structured output, the request echoed, a stored
// reply read, listed and deleted) and the message forms newer clients send.
import test, { before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { zodResponseFormat, zodTextFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { startServer, API_KEY, MODEL } from './harness.mjs';
import { WEATHER_PARAMS, PERSON_SCHEMA, assertMatchesSchema, assertChatUsage, recordingFetch,
         withExchanges } from './common.mjs';

let server;
let rec;
let client;

before(async () => {
  server = await startServer();
  rec = recordingFetch();
  client = new OpenAI({ baseURL: server.baseURL, apiKey: API_KEY, fetch: rec.fetch, maxRetries: 0 });
});
after(async () => { await server?.stop(); });

const weatherTool = {
  type: 'function',
  function: { name: 'get_weather', description: 'The weather in a city.', parameters: WEATHER_PARAMS },
};
const getWeather = ({ city }) => ({ city, forecast: 'sunny', celsius: 21 });

test('chat: a manual tool loop (named tool, tool result, text answer)', () => withExchanges(rec, async () => {
  const messages = [{ role: 'user', content: 'Weather in Oslo?' }];
  const first = await client.chat.completions.create({
    model: MODEL, messages, tools: [weatherTool], max_tokens: 32,
    tool_choice: { type: 'function', function: { name: 'get_weather' } },
  });
  assert.match(first.id, /^chatcmpl-/);
  assert.equal(first.object, 'chat.completion');
  assert.equal(first.choices.length, 1);
  const [choice] = first.choices;
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.role, 'assistant');
  assert.equal(choice.message.content, null);
  assert.equal(choice.message.tool_calls.length, 1);
  const [call] = choice.message.tool_calls;
  assert.equal(typeof call.id, 'string');
  assert.ok(call.id.length > 0);
  assert.equal(call.type, 'function');
  assert.equal(call.function.name, 'get_weather');
  const args = JSON.parse(call.function.arguments);
  assertMatchesSchema(args, WEATHER_PARAMS, 'the arguments');
  assertChatUsage(first.usage, 32);

  // Run the function here and send the whole turn back, as the SDK's docs show.
  messages.push(choice.message);
  messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify(getWeather(args)) });
  const second = await client.chat.completions.create({
    model: MODEL, messages, tools: [weatherTool], tool_choice: 'auto', max_tokens: 8,
  });
  assert.notEqual(second.id, first.id);
  const answer = second.choices[0];
  assert.ok(['stop', 'length'].includes(answer.finish_reason), answer.finish_reason);
  assert.equal(answer.message.role, 'assistant');
  assert.equal(typeof answer.message.content, 'string');
  assert.ok(!answer.message.tool_calls?.length, 'no tool call in the answer');
  assertChatUsage(second.usage, 8);
  // The second prompt holds the first turn, the call and its result.
  assert.ok(second.usage.prompt_tokens > first.usage.prompt_tokens,
            `${second.usage.prompt_tokens} > ${first.usage.prompt_tokens}`);
  // What the SDK sent back: the assistant's tool_calls and the tool message answering it.
  const sent = rec.bodies('/chat/completions').at(-1).messages;
  assert.deepEqual(sent.map((m) => m.role), ['user', 'assistant', 'tool']);
  assert.equal(sent[1].tool_calls[0].id, call.id);
  assert.equal(sent[2].tool_call_id, call.id);
}));

test('chat: runTools calls the named tool with parsed arguments, a second run answers', () => withExchanges(rec, async () => {
  const calls = [];
  const tools = [{
    type: 'function',
    function: {
      name: 'get_weather', description: 'The weather in a city.', parameters: WEATHER_PARAMS,
      parse: JSON.parse,
      function: (args) => { calls.push(args); return getWeather(args); },
    },
  }];
  // With a named tool_choice the runner stops once that function has run (openai's design).
  const runner = client.chat.completions.runTools({
    model: MODEL, max_tokens: 32, seed: 1, tools, // a seed whose answer below ends by itself
    messages: [{ role: 'user', content: 'Weather in Oslo?' }],
    tool_choice: { type: 'function', function: { name: 'get_weather' } },
  });
  const call = await runner.finalFunctionToolCall();
  assert.equal(call.name, 'get_weather');
  assert.equal(calls.length, 1);
  assertMatchesSchema(calls[0], WEATHER_PARAMS, 'the parsed arguments');
  assert.deepEqual(calls[0], JSON.parse(call.arguments));
  assert.deepEqual(JSON.parse(await runner.finalFunctionToolCallResult()), getWeather(calls[0]));
  assert.deepEqual(runner.messages.map((m) => m.role), ['user', 'assistant', 'tool']);

  // Second turn: the same tools, the model left to answer (auto), the runner's messages. The
  // runner refuses a reply cut by max_tokens (LengthFinishReasonError), so greedy with room to end.
  const answer = client.chat.completions.runTools({
    model: MODEL, max_tokens: 32, temperature: 0, tools, tool_choice: 'auto', messages: runner.messages,
  });
  const content = await answer.finalContent();
  assert.equal(typeof content, 'string');
  assert.equal(calls.length, 1, 'the function ran once');
  const completions = answer.allChatCompletions();
  assert.equal(completions.length, 1);
  assert.equal(completions[0].choices[0].finish_reason, 'stop');
  assert.equal(completions[0].choices[0].message.content, content);
  assertChatUsage(await answer.totalUsage(), 32);
}));

test('chat: a streamed runTools accumulates the streamed call', () => withExchanges(rec, async () => {
  const calls = [];
  const runner = client.chat.completions.runTools({
    model: MODEL, max_tokens: 32, stream: true,
    messages: [{ role: 'user', content: 'Weather in Paris?' }],
    tool_choice: { type: 'function', function: { name: 'get_weather' } },
    tools: [{
      type: 'function',
      function: { name: 'get_weather', parameters: WEATHER_PARAMS, parse: JSON.parse,
                  function: (args) => { calls.push(args); return getWeather(args); } },
    }],
  });
  const call = await runner.finalFunctionToolCall();
  assert.equal(call.name, 'get_weather');
  assert.equal(calls.length, 1);
  assertMatchesSchema(calls[0], WEATHER_PARAMS, 'the parsed arguments');
  const [completion] = runner.allChatCompletions();
  assert.equal(completion.choices[0].finish_reason, 'tool_calls');
  assert.equal(completion.choices[0].message.tool_calls[0].function.arguments, call.arguments);
}));

test('chat: required among two tools, parallel_tool_calls true and false', () => withExchanges(rec, async () => {
  const timeTool = { type: 'function', function: { name: 'get_time', parameters: {
    type: 'object', properties: { zone: { type: 'string', enum: ['UTC', 'CET'] } }, required: ['zone'],
    additionalProperties: false } } };
  const schemas = { get_weather: WEATHER_PARAMS, get_time: timeTool.function.parameters };
  for (const parallel of [true, false]) {
    const r = await client.chat.completions.create({
      model: MODEL, max_tokens: 200, tools: [weatherTool, timeTool], tool_choice: 'required',
      parallel_tool_calls: parallel, messages: [{ role: 'user', content: 'Weather in Oslo?' }],
    });
    const [choice] = r.choices;
    assert.equal(choice.finish_reason, 'tool_calls', `parallel ${parallel}`);
    const calls = choice.message.tool_calls;
    if (!parallel) assert.equal(calls.length, 1, 'parallel_tool_calls false: one call');
    assert.ok(calls.length >= 1);
    assert.equal(new Set(calls.map((c) => c.id)).size, calls.length, 'distinct call ids');
    for (const c of calls) {
      assert.ok(c.function.name in schemas, c.function.name);
      assertMatchesSchema(JSON.parse(c.function.arguments), schemas[c.function.name], c.function.name);
    }
  }
}));

test('chat: stream() with n = 3 gives every choice a role and a finish reason', () => withExchanges(rec, async () => {
  const stream = client.chat.completions.stream({
    model: MODEL, n: 3, max_tokens: 8, temperature: 0.9, seed: 5,
    messages: [{ role: 'user', content: 'Hi' }],
    stream_options: { include_usage: true },
  });
  const roles = new Map();
  const finishes = new Map();
  let usage = null;
  const ids = new Set();
  stream.on('chunk', (chunk) => {
    ids.add(chunk.id);
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta?.role) roles.set(c.index, (roles.get(c.index) ?? 0) + 1);
      if (c.finish_reason) finishes.set(c.index, [...(finishes.get(c.index) ?? []), c.finish_reason]);
    }
  });
  const final = await stream.finalChatCompletion();
  assert.equal(ids.size, 1, 'one id for every chunk');
  assert.deepEqual([...roles.keys()].sort(), [0, 1, 2]);
  for (const i of [0, 1, 2]) {
    assert.equal(roles.get(i), 1, `choice ${i}: one role delta`);
    assert.equal(finishes.get(i)?.length, 1, `choice ${i}: one finish reason`);
    assert.ok(['stop', 'length'].includes(finishes.get(i)[0]));
  }
  assert.equal(final.choices.length, 3);
  assert.deepEqual(final.choices.map((c) => c.index), [0, 1, 2]);
  for (const c of final.choices) {
    assert.equal(c.message.role, 'assistant');
    assert.equal(typeof c.message.content, 'string');
    assert.equal(c.finish_reason, finishes.get(c.index)[0]);
  }
  assertChatUsage(usage, 3 * 8);
}));

test('chat: developer role and text-part arrays are accepted', () => withExchanges(rec, async () => {
  const messages = [
    { role: 'developer', content: [{ type: 'text', text: 'You tell fortunes.' }] },
    { role: 'user', content: [{ type: 'text', text: 'One,' }, { type: 'text', text: 'please.' }] },
  ];
  const r = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 8 });
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assertChatUsage(r.usage, 8);
  // The same conversation as system + strings: the same prompt (parts are joined with a newline).
  const plain = await client.chat.completions.create({
    model: MODEL, max_tokens: 8,
    messages: [{ role: 'system', content: 'You tell fortunes.' }, { role: 'user', content: 'One,\nplease.' }],
  });
  assert.equal(plain.usage.prompt_tokens, r.usage.prompt_tokens);
}));

test('chat: parse() with zodResponseFormat (response_format json_schema)', () => withExchanges(rec, async () => {
  const Person = z.object({ name: z.string().max(12), age: z.number().int().min(0).max(120) });
  const r = await client.chat.completions.parse({
    model: MODEL, messages: [{ role: 'user', content: 'A person?' }], max_tokens: 48,
    response_format: zodResponseFormat(Person, 'person'),
  });
  const [choice] = r.choices;
  assert.equal(choice.finish_reason, 'stop');
  assertMatchesSchema(choice.message.parsed, PERSON_SCHEMA, 'the parsed message');
  assert.deepEqual(choice.message.parsed, JSON.parse(choice.message.content));
}));

test('responses: create, plain', () => withExchanges(rec, async () => {
  const r = await client.responses.create({
    model: MODEL, instructions: 'You tell fortunes.', input: 'One, please.',
    max_output_tokens: 48, temperature: 0,
  });
  assert.match(r.id, /^resp_/);
  assert.equal(r.object, 'response');
  assert.equal(r.status, 'completed');
  assert.equal(r.incomplete_details, null);
  assert.equal(r.output.length, 1);
  const [item] = r.output;
  assert.equal(item.type, 'message');
  assert.equal(item.role, 'assistant');
  assert.equal(item.content[0].type, 'output_text');
  assert.equal(r.output_text, item.content[0].text); // the SDK's convenience field
  assert.ok(r.usage.input_tokens > 0);
  assert.ok(r.usage.output_tokens > 0 && r.usage.output_tokens <= 48);
  assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
  assert.equal(typeof r.usage.input_tokens_details.cached_tokens, 'number');
}));

test('responses: max_output_tokens reached is incomplete, streamed as response.incomplete', () => withExchanges(rec, async () => {
  const params = { model: MODEL, input: 'Hi', max_output_tokens: 3, temperature: 0 };
  const r = await client.responses.create(params);
  assert.equal(r.status, 'incomplete');
  assert.deepEqual(r.incomplete_details, { reason: 'max_output_tokens' });
  assert.equal(r.usage.output_tokens, 3);
  const events = [];
  for await (const e of await client.responses.create({ ...params, stream: true })) events.push(e);
  assert.equal(events.at(-1).type, 'response.incomplete');
  assert.equal(events.at(-1).response.output[0].content[0].text, r.output[0].content[0].text);
  assert.equal(events.at(-1).response.usage.output_tokens, 3);
}));

test('responses: create, streamed (events in order, completed last with usage)', () => withExchanges(rec, async () => {
  const stream = await client.responses.create({
    model: MODEL, input: [{ role: 'user', content: [{ type: 'input_text', text: 'Hi' }] }],
    max_output_tokens: 48, temperature: 0, stream: true,
  });
  const events = [];
  for await (const e of stream) events.push(e);
  const types = events.map((e) => e.type);
  assert.equal(types[0], 'response.created');
  assert.equal(types[1], 'response.in_progress');
  assert.equal(types.at(-1), 'response.completed');
  for (const t of ['response.output_item.added', 'response.content_part.added', 'response.output_text.delta',
                   'response.output_text.done', 'response.content_part.done', 'response.output_item.done']) {
    assert.ok(types.includes(t), `${t} in ${types.join(',')}`);
  }
  assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i));
  const text = events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('');
  assert.equal(events.find((e) => e.type === 'response.output_text.done').text, text);
  const done = events.at(-1).response;
  assert.equal(done.status, 'completed');
  assert.equal(done.id, events[0].response.id);
  assert.equal(done.output[0].content[0].text, text);
  assert.ok(done.usage.output_tokens > 0 && done.usage.output_tokens <= 48);
  assert.equal(done.usage.total_tokens, done.usage.input_tokens + done.usage.output_tokens);
}));

test('responses: a forced function tool, then its output answered with text', () => withExchanges(rec, async () => {
  const tools = [{ type: 'function', name: 'get_weather', description: 'The weather in a city.',
                   parameters: WEATHER_PARAMS, strict: true }];
  const input = [{ role: 'user', content: 'Weather in Oslo?' }];
  const first = await client.responses.create({
    model: MODEL, input, tools, tool_choice: { type: 'function', name: 'get_weather' }, max_output_tokens: 32,
  });
  assert.equal(first.status, 'completed');
  assert.equal(first.output.length, 1);
  const [call] = first.output;
  assert.equal(call.type, 'function_call');
  assert.equal(call.name, 'get_weather');
  assert.equal(typeof call.call_id, 'string');
  const args = JSON.parse(call.arguments);
  assertMatchesSchema(args, WEATHER_PARAMS, 'the arguments');
  assert.equal(first.output_text, '');

  const second = await client.responses.create({
    model: MODEL, tools, max_output_tokens: 8,
    input: [...input, call, { type: 'function_call_output', call_id: call.call_id,
                              output: JSON.stringify(getWeather(args)) }],
  });
  assert.notEqual(second.id, first.id);
  assert.equal(second.output[0].type, 'message');
  assert.equal(typeof second.output_text, 'string');
  assert.ok(second.usage.input_tokens > first.usage.input_tokens);
}));

test('responses: stream() with a forced function call', () => withExchanges(rec, async () => {
  const stream = client.responses.stream({
    model: MODEL, input: 'Weather in Oslo?', max_output_tokens: 32,
    tools: [{ type: 'function', name: 'get_weather', parameters: WEATHER_PARAMS, strict: true }],
    tool_choice: { type: 'function', name: 'get_weather' },
  });
  let deltas = '';
  let added = null;
  stream.on('response.output_item.added', (e) => { added = e.item; });
  stream.on('response.function_call_arguments.delta', (e) => { deltas += e.delta; });
  const done = new Promise((resolve) => stream.on('response.function_call_arguments.done', (e) => resolve(e)));
  const final = await stream.finalResponse();
  assert.equal(added.type, 'function_call');
  assert.equal(added.name, 'get_weather');
  assert.equal(final.status, 'completed');
  const [call] = final.output;
  assert.equal(call.type, 'function_call');
  assert.equal(call.call_id, added.call_id);
  assert.equal(call.arguments, deltas);
  assert.equal((await done).arguments, deltas);
  assertMatchesSchema(JSON.parse(call.arguments), WEATHER_PARAMS, 'the arguments');
}));

test('responses: text.format json_schema, parsed by responses.parse', () => withExchanges(rec, async () => {
  const Person = z.object({ name: z.string().max(12), age: z.number().int().min(0).max(120) });
  const r = await client.responses.parse({
    model: MODEL, input: 'A person?', max_output_tokens: 48,
    text: { format: zodTextFormat(Person, 'person') },
  });
  assert.equal(r.status, 'completed');
  const parsed = JSON.parse(r.output_text);
  assertMatchesSchema(parsed, PERSON_SCHEMA, 'the output');
  assert.deepEqual(r.output_parsed, parsed);
  assert.equal(rec.bodies('/responses').at(-1).text.format.type, 'json_schema');
}));

test('responses: a call cut by max_output_tokens is closed in the stream and kept, incomplete', () => withExchanges(rec, async () => {
  // An unbounded string: the call cannot be whole within 3 tokens.
  const params = {
    model: MODEL, input: 'Weather in Oslo?', max_output_tokens: 3, temperature: 0,
    tools: [{ type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } },
                                                                   required: ['city'], additionalProperties: false } }],
    tool_choice: { type: 'function', name: 'get_weather' },
  };
  const events = [];
  for await (const e of await client.responses.create({ ...params, stream: true })) events.push(e);
  const types = events.map((e) => e.type);
  assert.equal(types.at(-1), 'response.incomplete');
  const deltas = events.filter((e) => e.type === 'response.function_call_arguments.delta').map((e) => e.delta).join('');
  const argsDone = events.find((e) => e.type === 'response.function_call_arguments.done');
  assert.ok(argsDone, `function_call_arguments.done in ${types.join(',')}`);
  assert.equal(argsDone.arguments, deltas);
  const itemDone = events.find((e) => e.type === 'response.output_item.done');
  assert.ok(itemDone, `output_item.done in ${types.join(',')}`);
  assert.equal(itemDone.item.type, 'function_call');
  assert.equal(itemDone.item.status, 'incomplete');
  assert.ok(types.indexOf('response.output_item.done') < types.indexOf('response.incomplete'));
  const final = events.at(-1).response;
  assert.equal(final.output.length, 1, 'the cut call is kept in the final object');
  assert.deepEqual(final.output[0], itemDone.item);
  assert.deepEqual(final.incomplete_details, { reason: 'max_output_tokens' });

  const plain = await client.responses.create(params);
  assert.equal(plain.status, 'incomplete');
  assert.equal(plain.output[0].type, 'function_call');
  assert.equal(plain.output[0].status, 'incomplete');
  assert.equal(plain.output[0].arguments, deltas, 'greedy: the same arguments so far');
}));

test('responses: a stored reply read back, its input items listed, then deleted', () => withExchanges(rec, async () => {
  const created = await client.responses.create({
    model: MODEL, instructions: 'You tell fortunes.', input: [{ role: 'user', content: 'One, please.' }],
    max_output_tokens: 8, temperature: 0,
  });
  assert.equal(created.store, true);
  const read = await client.responses.retrieve(created.id);
  assert.deepEqual(read, created, 'the stored object is the one answered');
  const items = [];
  for await (const item of client.responses.inputItems.list(created.id, { order: 'asc' })) items.push(item);
  assert.equal(items.length, 1);
  assert.equal(items[0].type, 'message');
  assert.equal(items[0].role, 'user');
  assert.equal(typeof items[0].id, 'string');
  await client.responses.delete(created.id);
  await assert.rejects(client.responses.retrieve(created.id), (e) => {
    assert.ok(e instanceof OpenAI.NotFoundError, e.constructor.name);
    return true;
  });
  await assert.rejects(client.responses.create({ model: MODEL, input: 'More.', previous_response_id: created.id }),
                       OpenAI.BadRequestError);
}));

test('responses: the object echoes the request as OpenAI does', () => withExchanges(rec, async () => {
  const first = await client.responses.create({ model: MODEL, input: 'One, please.', max_output_tokens: 4 });
  const tools = [{ type: 'function', name: 'get_weather', parameters: WEATHER_PARAMS, strict: true }];
  const r = await client.responses.create({
    model: MODEL, instructions: 'Be brief.', input: 'Weather?', max_output_tokens: 4, temperature: 0.5, top_p: 0.9,
    previous_response_id: first.id, tools, tool_choice: 'auto', parallel_tool_calls: false,
    metadata: { run: 'echo' }, user: 'someone',
  });
  assert.equal(r.instructions, 'Be brief.');
  assert.equal(r.previous_response_id, first.id);
  assert.equal(r.parallel_tool_calls, false);
  assert.equal(r.tool_choice, 'auto');
  assert.deepEqual(r.tools, tools);
  assert.equal(r.temperature, 0.5);
  assert.equal(r.top_p, 0.9);
  assert.equal(r.max_output_tokens, 4);
  assert.deepEqual(r.metadata, { run: 'echo' });
  assert.equal(r.user, 'someone');
  assert.deepEqual(r.text, { format: { type: 'text' } });
}));

test('chat: logit_bias, ignore_eos and min_tokens through the SDK', () => withExchanges(rec, async () => {
  // +100 on the token of "x" under greedy decoding: every generated token is that one, and with
  // ignore_eos there are exactly max_tokens of them.
  const tokenized = await (await fetch(`${server.origin}/v1/tokenize`, {
    method: 'POST', headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ text: 'x' }),
  })).json();
  assert.equal(tokenized.tokens.length, 1);
  const base = { model: MODEL, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 6, temperature: 0 };
  const biased = await client.chat.completions.create({
    ...base, logit_bias: { [String(tokenized.tokens[0])]: 100 }, ignore_eos: true, min_tokens: 2,
  });
  assert.equal(biased.choices[0].message.content, 'xxxxxx');
  assert.equal(biased.usage.completion_tokens, 6);
  assert.equal(biased.choices[0].finish_reason, 'length');
  await assert.rejects(client.chat.completions.create({ ...base, logit_bias: { 999999: 5 } }),
                       (e) => e instanceof OpenAI.BadRequestError && e.param === 'logit_bias');
}));

test('errors: a 400 is a BadRequestError with code, param and request id; a wrong key a 401', () => withExchanges(rec, async () => {
  const err = await client.chat.completions.create({
    model: MODEL, n: 1000, max_tokens: 4, messages: [{ role: 'user', content: 'Hi' }],
  }).then(() => null, (e) => e);
  assert.ok(err instanceof OpenAI.BadRequestError, String(err));
  assert.equal(err.status, 400);
  assert.equal(err.type, 'invalid_request_error');
  assert.equal(err.param, 'n');
  assert.equal(typeof err.code, 'string');
  assert.ok(err.requestID, 'x-request-id read by the SDK');
  assert.equal(err.error.request_id, err.requestID);

  const stranger = new OpenAI({ baseURL: server.baseURL, apiKey: 'not-the-key-at-all', maxRetries: 0 });
  const denied = await stranger.models.list().then(() => null, (e) => e);
  assert.ok(denied instanceof OpenAI.AuthenticationError, String(denied));
}));

test('models.list: the served alias, OpenAI-shaped', () => withExchanges(rec, async () => {
  const ids = [];
  for await (const m of client.models.list()) {
    assert.equal(m.object, 'model');
    ids.push(m.id);
  }
  assert.ok(ids.includes(MODEL), ids.join(','));
  const one = await client.models.retrieve(MODEL);
  assert.equal(one.id, MODEL);
}));
