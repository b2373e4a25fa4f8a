// OpenAI's Agents SDK (@openai/agents) against the real server's Responses API, as its own
// quick start runs it: an agent without tools (the SDK sends `tools: []` and `include: []`),
// plain and streamed, and a second turn that continues the first through the stored reply
// (previousResponseId). Tracing is off: it would export to OpenAI's servers.
import test, { before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { Agent, run, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled } from '@openai/agents';
import { startServer, API_KEY, MODEL } from './harness.mjs';
import { recordingFetch, withExchanges } from './common.mjs';

let server;
let rec;

before(async () => {
  server = await startServer();
  rec = recordingFetch();
  setTracingDisabled(true);
  setOpenAIAPI('responses');
  setDefaultOpenAIClient(new OpenAI({ baseURL: server.baseURL, apiKey: API_KEY, fetch: rec.fetch, maxRetries: 0 }));
});
after(async () => { await server?.stop(); });

const fortuneTeller = (maxTokens = 16) => new Agent({
  name: 'Fortune teller', instructions: 'You tell fortunes.', model: MODEL,
  modelSettings: { maxTokens, temperature: 0 },
});

test('an agent without tools answers with text (the SDK sends tools: [])', () => withExchanges(rec, async () => {
  const result = await run(fortuneTeller(), 'One, please.');
  assert.equal(typeof result.finalOutput, 'string');
  assert.ok(result.finalOutput.length > 0, 'some text came back');
  const [sent] = rec.bodies('/responses').slice(-1);
  assert.deepEqual(sent.tools, [], 'the flow this test is about: an empty tools list');
  assert.equal(sent.instructions, 'You tell fortunes.');
  assert.match(result.lastResponseId, /^resp_/);
  const { usage } = result.rawResponses.at(-1);
  assert.ok(usage.inputTokens > 0 && usage.outputTokens > 0 && usage.outputTokens <= 16);
}));

test('the same agent streamed: text deltas, then the final output', () => withExchanges(rec, async () => {
  // This SDK takes a stream's result from response.completed only (not response.incomplete):
  // room enough for the model to end the reply itself.
  const stream = await run(fortuneTeller(128), 'One, please.', { stream: true });
  let deltas = '';
  for await (const ev of stream) {
    if (ev.type === 'raw_model_stream_event' && ev.data.type === 'output_text_delta') deltas += ev.data.delta;
  }
  await stream.completed;
  assert.equal(typeof stream.finalOutput, 'string');
  assert.equal(deltas, stream.finalOutput, 'the deltas add up to the final output');
}));

test('a second turn continues the first through the stored reply (previousResponseId)', () => withExchanges(rec, async () => {
  const first = await run(fortuneTeller(), 'One, please.');
  const second = await run(fortuneTeller(), 'Another one.', { previousResponseId: first.lastResponseId });
  assert.equal(typeof second.finalOutput, 'string');
  const [sent] = rec.bodies('/responses').slice(-1);
  assert.equal(sent.previous_response_id, first.lastResponseId);
  // The stored conversation came first: the second prompt is longer than the first.
  assert.ok(second.rawResponses.at(-1).usage.inputTokens > first.rawResponses.at(-1).usage.inputTokens);
}));
