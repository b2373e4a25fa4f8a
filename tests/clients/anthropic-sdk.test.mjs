// Anthropic's SDK (@anthropic-ai/sdk) against the real server's Messages API: plain and streamed
// messages, a tool round trip both ways, stop reasons and usage, structured output through
// messages.parse (output_config.format), tools: [], thinking refused by name, and the default
// beta toolRunner over a message thread (`thread` create, then continues). The SDK (1.x) sends
// the key as Authorization: Bearer; x-api-key, what 0.x sent, is served too.
import test, { before, after } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { zodOutputFormat } from '@anthropic-ai/sdk/helpers/zod';
import { jsonSchemaOutputFormat } from '@anthropic-ai/sdk/helpers/json-schema';
import { betaTool } from '@anthropic-ai/sdk/helpers/beta/json-schema';
import * as z4 from 'zod/v4';
import { startServer, API_KEY, MODEL } from './harness.mjs';
import { WEATHER_PARAMS, PERSON_SCHEMA, assertMatchesSchema, recordingFetch, withExchanges } from './common.mjs';

let server;
let rec;
let client;

before(async () => {
  server = await startServer();
  rec = recordingFetch();
  client = new Anthropic({ baseURL: server.origin, apiKey: API_KEY, fetch: rec.fetch, maxRetries: 0 });
});
after(async () => { await server?.stop(); });

const tools = [{ name: 'get_weather', description: 'The weather in a city.', input_schema: WEATHER_PARAMS }];
const question = { role: 'user', content: 'Weather in Oslo?' };

function assertUsage(usage, maxOutput) {
  assert.ok(Number.isInteger(usage.input_tokens) && usage.input_tokens >= 0);
  assert.ok(Number.isInteger(usage.cache_read_input_tokens));
  assert.ok(usage.input_tokens + usage.cache_read_input_tokens > 0, 'the prompt is counted');
  assert.ok(usage.output_tokens > 0 && usage.output_tokens <= maxOutput, `output_tokens ${usage.output_tokens}`);
}

/// The second turn: the assistant's tool_use block back, and a user turn with the tool_result.
function followUp(toolUse) {
  return [question, { role: 'assistant', content: [toolUse] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id,
                                      content: JSON.stringify({ city: toolUse.input.city, forecast: 'sunny' }) }] }];
}

test('messages.create: text, stop_reason, usage; count_tokens agrees', () => withExchanges(rec, async () => {
  const params = { model: MODEL, max_tokens: 16, system: 'You tell fortunes.',
                   messages: [{ role: 'user', content: 'One, please.' }] };
  const m = await client.messages.create(params);
  assert.match(m.id, /^msg_/);
  assert.equal(m.type, 'message');
  assert.equal(m.role, 'assistant');
  assert.equal(m.model, MODEL);
  assert.equal(m.content.length, 1);
  assert.equal(m.content[0].type, 'text');
  assert.equal(typeof m.content[0].text, 'string');
  assert.ok(['end_turn', 'max_tokens'].includes(m.stop_reason), m.stop_reason);
  assert.equal(m.stop_sequence, null);
  assertUsage(m.usage, 16);
  assert.equal(rec.exchanges.at(-1).requestHeaders.authorization, '(redacted)', 'the key went as a Bearer credential');
  // The key in x-api-key, as the SDK's 0.x releases sent it (and a caller's defaultHeaders may).
  const byHeader = new Anthropic({ baseURL: server.origin, apiKey: null, defaultHeaders: { 'x-api-key': API_KEY },
                                   fetch: rec.fetch, maxRetries: 0 });
  const again = await byHeader.messages.create({ ...params, max_tokens: 2 });
  assert.equal(again.type, 'message');
  assert.equal(rec.exchanges.at(-1).requestHeaders['x-api-key'], '(redacted)', 'the key went as x-api-key');
  assert.equal(rec.exchanges.at(-1).requestHeaders.authorization, undefined);

  const { input_tokens } = await client.messages.countTokens({ model: MODEL, system: params.system,
                                                               messages: params.messages });
  assert.equal(input_tokens, m.usage.input_tokens + m.usage.cache_read_input_tokens);
}));

test('messages.create: a forced tool_use, then a tool_result answered with text', () => withExchanges(rec, async () => {
  const first = await client.messages.create({
    model: MODEL, max_tokens: 32, tools, tool_choice: { type: 'tool', name: 'get_weather' }, messages: [question],
  });
  assert.equal(first.stop_reason, 'tool_use');
  assert.equal(first.content.length, 1);
  const [toolUse] = first.content;
  assert.equal(toolUse.type, 'tool_use');
  assert.equal(toolUse.name, 'get_weather');
  assert.match(toolUse.id, /^toolu_/);
  assertMatchesSchema(toolUse.input, WEATHER_PARAMS, 'the tool input');
  assertUsage(first.usage, 32);

  const second = await client.messages.create({ model: MODEL, max_tokens: 16, tools, messages: followUp(toolUse) });
  assert.notEqual(second.id, first.id);
  assert.ok(['end_turn', 'max_tokens'].includes(second.stop_reason), second.stop_reason);
  assert.ok(second.content.length >= 1);
  for (const block of second.content) assert.equal(block.type, 'text');
  assertUsage(second.usage, 16);
  assert.ok(second.usage.input_tokens + second.usage.cache_read_input_tokens >
            first.usage.input_tokens + first.usage.cache_read_input_tokens, 'the second prompt holds the call');
}));

test('messages.stream: a forced tool_use streamed, then the answer streamed', () => withExchanges(rec, async () => {
  const events = [];
  let partialJson = '';
  const stream = client.messages.stream({
    model: MODEL, max_tokens: 32, tools, tool_choice: { type: 'tool', name: 'get_weather' }, messages: [question],
  });
  stream.on('streamEvent', (e) => events.push(e.type));
  stream.on('inputJson', (delta) => { partialJson += delta; });
  const first = await stream.finalMessage();
  assert.equal(events[0], 'message_start');
  assert.equal(events.at(-1), 'message_stop');
  for (const t of ['content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta']) {
    assert.ok(events.includes(t), `${t} in ${events.join(',')}`);
  }
  assert.equal(first.stop_reason, 'tool_use');
  const [toolUse] = first.content;
  assert.equal(toolUse.type, 'tool_use');
  assert.equal(toolUse.name, 'get_weather');
  assertMatchesSchema(toolUse.input, WEATHER_PARAMS, 'the tool input');
  assert.deepEqual(JSON.parse(partialJson), toolUse.input);
  assertUsage(first.usage, 32);

  let text = '';
  const answer = client.messages.stream({ model: MODEL, max_tokens: 16, tools, messages: followUp(toolUse) });
  answer.on('text', (delta) => { text += delta; });
  const second = await answer.finalMessage();
  assert.ok(['end_turn', 'max_tokens'].includes(second.stop_reason), second.stop_reason);
  assert.equal(second.content[0].type, 'text');
  assert.equal(second.content[0].text, text);
  assertUsage(second.usage, 16);
}));

test('messages.stream: message_start carries the prompt usage', () => withExchanges(rec, async () => {
  // Anthropic reports input_tokens in message_start (clients such as LangChain's ChatAnthropic
  // read the prompt usage there, and the output tokens from message_delta).
  let start = null;
  const stream = client.messages.stream({ model: MODEL, max_tokens: 8, messages: [{ role: 'user', content: 'Hi' }] });
  stream.on('streamEvent', (e) => {
    if (e.type === 'message_start') start = { ...e.message.usage }; // a copy: the SDK updates it later
  });
  const final = await stream.finalMessage();
  assert.equal(start.input_tokens + (start.cache_read_input_tokens ?? 0),
               final.usage.input_tokens + final.usage.cache_read_input_tokens,
               `message_start usage ${JSON.stringify(start)} vs final ${JSON.stringify(final.usage)}`);
}));

test('messages.create: stop_sequences ends with stop_reason stop_sequence and names it', () => withExchanges(rec, async () => {
  // Greedy: the reply to "Hi" is ` "I'm not ...`, so "not" is generated.
  const m = await client.messages.create({
    model: MODEL, max_tokens: 32, temperature: 0, stop_sequences: ['not'], messages: [{ role: 'user', content: 'Hi' }],
  });
  assert.equal(m.stop_reason, 'stop_sequence');
  assert.ok(!m.content[0].text.includes('not'), 'the stop sequence is not in the text');
  assert.equal(m.stop_sequence, 'not', 'Anthropic names the matched stop sequence');
}));

test('errors: Anthropic-shaped, with the request id the SDK reads (request-id)', () => withExchanges(rec, async () => {
  const err = await client.messages.create({
    model: MODEL, max_tokens: 4,
    messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }] }],
  }).then(() => null, (e) => e);
  assert.ok(err instanceof Anthropic.BadRequestError, String(err));
  assert.equal(err.status, 400);
  assert.equal(err.error.type, 'error');
  assert.equal(err.error.error.type, 'invalid_request_error');
  assert.match(err.error.error.message, /image/);
  const stranger = new Anthropic({ baseURL: server.origin, apiKey: 'not-the-key-at-all', maxRetries: 0 });
  const denied = await stranger.messages.create({ model: MODEL, max_tokens: 4, messages: [question] })
    .then(() => null, (e) => e);
  assert.ok(denied instanceof Anthropic.AuthenticationError, String(denied));
  assert.equal(denied.error.error.type, 'authentication_error');
  // Anthropic's API and SDK carry the id in a `request-id` header (err.requestID, message._request_id).
  assert.equal(err.requestID, err.error.request_id, 'err.requestID (from the request-id header)');
}));

// The SDK's helpers move every bound they think Anthropic's API lacks (string lengths, enums,
// numeric ranges) into the description unless told not to, so the zod schema here holds only
// values that end by themselves (integers, booleans); the JSON Schema one keeps its bounds.
const Fortune = z4.object({ lucky: z4.number().int(), soon: z4.boolean(), stars: z4.number().int() });

test('messages.parse: output_config.format from zod, the reply parsed and valid', () => withExchanges(rec, async () => {
  const m = await client.messages.parse({
    model: MODEL, max_tokens: 64, temperature: 0, messages: [{ role: 'user', content: 'A fortune?' }],
    output_config: { format: zodOutputFormat(Fortune) },
  });
  assert.equal(m.stop_reason, 'end_turn');
  assert.ok(m.parsed_output, 'parsed_output');
  assert.deepEqual(Object.keys(m.parsed_output).sort(), ['lucky', 'soon', 'stars']);
  assert.ok(Number.isInteger(m.parsed_output.lucky) && Number.isInteger(m.parsed_output.stars));
  assert.equal(typeof m.parsed_output.soon, 'boolean');
  assert.ok(rec.bodies('/messages').at(-1).output_config.format.schema, 'the SDK sent the schema');
}));

test('messages.stream with output_config.format (a JSON Schema kept whole): the final message is parsed', () => withExchanges(rec, async () => {
  const stream = client.messages.stream({
    model: MODEL, max_tokens: 64, temperature: 0, messages: [{ role: 'user', content: 'A person?' }],
    output_config: { format: jsonSchemaOutputFormat(PERSON_SCHEMA, { transform: false }) },
  });
  const m = await stream.finalMessage();
  assert.equal(m.stop_reason, 'end_turn');
  assertMatchesSchema(m.parsed_output, PERSON_SCHEMA, 'the parsed output');
}));

test('tools: [] is no tools: a plain text reply', () => withExchanges(rec, async () => {
  const m = await client.messages.create({ model: MODEL, max_tokens: 8, tools: [], messages: [question] });
  assert.equal(m.content[0].type, 'text');
  assert.ok(['end_turn', 'max_tokens'].includes(m.stop_reason));
}));

test('thinking enabled is refused, naming it; thinking disabled is served', () => withExchanges(rec, async () => {
  await assert.rejects(
    client.messages.create({ model: MODEL, max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 1024 },
                             messages: [question] }),
    (e) => {
      assert.ok(e instanceof Anthropic.BadRequestError, e.constructor.name);
      assert.equal(e.error.error.type, 'invalid_request_error');
      assert.match(e.error.error.message, /thinking/);
      return true;
    });
  const m = await client.messages.create({ model: MODEL, max_tokens: 4, thinking: { type: 'disabled' }, messages: [question] });
  assert.equal(m.type, 'message');
}));

/// A client whose fetch steers the model, a field of the API at a time: the tiny model cannot
/// choose a tool, so the first `calls` turns force get_weather and the rest forbid tools. `sent`
/// keeps each Messages request as the SDK wrote it, before the steering.
function steeredClient(calls, sent) {
  const steer = async (url, init) => {
    if (new URL(String(url)).pathname === '/v1/messages' && init?.body) {
      const body = JSON.parse(init.body);
      sent.push(structuredClone(body));
      body.tool_choice = sent.length <= calls ? { type: 'tool', name: 'get_weather' } : { type: 'none' };
      init = { ...init, body: JSON.stringify(body) };
    }
    return rec.fetch(url, init);
  };
  return new Anthropic({ baseURL: server.origin, apiKey: API_KEY, fetch: steer, maxRetries: 0 });
}

for (const stream of [false, true]) {
  test(`beta.messages.toolRunner as it comes (over a message thread${stream ? ', streamed' : ''}): two tool calls, each continue sending only the new messages`, () => withExchanges(rec, async () => {
    const sent = [];
    const ran = [];
    const getWeather = betaTool({
      name: 'get_weather', description: 'The weather in a city.', inputSchema: WEATHER_PARAMS,
      run: async ({ city }) => { ran.push(city); return `Sunny in ${city}`; },
    });
    const runner = steeredClient(2, sent).beta.messages.toolRunner({
      model: MODEL, max_tokens: 32, temperature: 0, system: 'You answer weather questions.',
      tools: [getWeather], messages: [question], ...(stream ? { stream: true } : {}),
    });
    const final = await runner.runUntilDone();

    assert.equal(ran.length, 2, 'the tool ran twice');
    for (const city of ran) assertMatchesSchema({ city }, WEATHER_PARAMS, 'the tool input');
    assert.equal(sent.length, 3, 'three turns: two calls, then the answer');
    // The create: the whole request, with the threads beta.
    assert.deepEqual(sent[0].thread, { type: 'create' });
    assert.equal(sent[0].system, 'You answer weather questions.');
    assert.equal(sent[0].tools[0].name, 'get_weather');
    assert.deepEqual(sent[0].messages, [question]);
    const betas = rec.exchanges.filter((e) => new URL(e.url).pathname === '/v1/messages')
      .slice(-3).map((e) => e.requestHeaders['anthropic-beta'] ?? '');
    assert.ok(betas[0].includes('message-threads-'), `the threads beta: ${betas[0]}`);
    // Each continue names the reply before it and sends only the tool result, no system, no tools:
    // the server filled them in from the thread (no thread_* refusal sent it back to a create).
    const replies = rec.exchanges.filter((e) => new URL(e.url).pathname === '/v1/messages').slice(-3);
    for (const e of replies) assert.equal(e.status, 200, e.responseBody);
    for (const i of [1, 2]) {
      const prev = sent[i - 1];
      assert.equal(sent[i].thread?.type, 'continue', `turn ${i} continues the thread`);
      assert.ok(/^msg_[0-9a-f]{32}$/.test(sent[i].thread.previous_message_id), sent[i].thread.previous_message_id);
      assert.equal(sent[i].system, undefined, 'a continue leaves system to the thread');
      assert.equal(sent[i].tools, undefined, 'a continue leaves tools to the thread');
      assert.equal(sent[i].messages.length, 1, 'only the new message');
      const [result] = sent[i].messages[0].content;
      assert.equal(result.type, 'tool_result');
      assert.equal(result.content, `Sunny in ${ran[i - 1]}`);
      assert.notEqual(sent[i].thread.previous_message_id, prev.thread.previous_message_id);
    }
    assert.ok(['end_turn', 'max_tokens'].includes(final.stop_reason), final.stop_reason);
    assert.equal(final.content[0].type, 'text');
    if (!stream) {
      // The last prompt is the whole conversation (the create's, two calls and their results).
      await new Promise((r) => setTimeout(r, 20)); // the recorded clones' text settles
      const promptOf = (m) => m.usage.input_tokens + m.usage.cache_read_input_tokens;
      assert.ok(promptOf(final) > promptOf(JSON.parse(replies[0].responseBody)), 'the continue prompt holds the thread');
    }
  }));
}
