// OpenAI's Agents SDK (@openai/agents) running an agent with a tool through one whole tool loop,
// with the SDK's default tool_choice (it sends none: "auto"), over Chat Completions. The model is
// a tiny test model the model tool makes: Qwen2.5's chat template (Hermes <tool_call> calls) and
// <tool_call> as one token of its vocabulary. Its weights are random, so the test's fetch steers
// it with logit_bias, a field of the API: the opener's token raised while the chat does not end
// with a tool result, lowered after one. The server does the rest: free text until the opener,
// the call grammar from there, the call parsed into tool_calls, the tool's result rendered back.
import test, { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { Agent, run, tool, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled } from '@openai/agents';
import { z } from 'zod';
import { startServer, call, API_KEY, MODEL } from './harness.mjs';

let server;
let dir;
let openerId;
const sent = []; // the chat requests, as the SDK wrote them (before the steering)

before(async () => {
  const toolPath = process.env.BITNET_MODEL_TOOL;
  const data = process.env.BITNET_TEST_DATA;
  if (!toolPath || !data) throw new Error('set BITNET_MODEL_TOOL and BITNET_TEST_DATA (CTest does)');
  dir = mkdtempSync(join(tmpdir(), 'bitnet-agents-tools-'));
  const model = join(dir, 'hermes.gguf');
  const made = spawnSync(toolPath, ['make', '--shape', 'tiny', '--seed', '3',
    '--user-token', '<tool_call>', '--user-token', '</tool_call>',
    '--chat-template', join(data, 'chat_templates', 'qwen2.5-instruct.jinja'), '-o', model],
  { encoding: 'utf8' });
  assert.equal(made.status, 0, made.stderr);
  server = await startServer([], { model });
  const r = await call(server, 'POST', '/v1/tokenize',
    { model: MODEL, add_bos: false, parse_special: true, text: '<tool_call>' });
  const { tokens } = await r.json();
  assert.equal(tokens.length, 1, 'the opener is one token of the test model');
  openerId = String(tokens[0]);

  const steering = async (url, init) => {
    if (String(url).endsWith('/chat/completions') && init?.body) {
      const body = JSON.parse(init.body);
      sent.push(structuredClone(body));
      const toolResult = body.messages.at(-1)?.role === 'tool';
      body.logit_bias = { [openerId]: toolResult ? -100 : 100 };
      init = { ...init, body: JSON.stringify(body) };
    }
    return fetch(url, init);
  };
  setTracingDisabled(true);
  setOpenAIAPI('chat_completions');
  setDefaultOpenAIClient(new OpenAI({ baseURL: server.baseURL, apiKey: API_KEY, fetch: steering, maxRetries: 0 }));
});
after(async () => {
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('an agent calls its tool on its own (default tool_choice), gets the result back and answers', async () => {
  const calls = [];
  const getWeather = tool({
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: z.object({ city: z.enum(['Paris', 'Oslo']) }),
    execute: async ({ city }) => { calls.push(city); return `Sunny in ${city}`; },
  });
  const agent = new Agent({
    name: 'Weather', instructions: 'You answer weather questions.', model: MODEL,
    tools: [getWeather], modelSettings: { maxTokens: 120, temperature: 0 },
  });
  const result = await run(agent, 'Weather in Oslo?');

  assert.equal(sent.length, 2, 'two model turns: the call, then the answer');
  assert.equal(sent[0].tool_choice, undefined, 'the SDK left tool_choice to the server: auto');
  assert.equal(sent[0].tools[0].function.name, 'get_weather');
  assert.equal(calls.length, 1, 'the tool ran once');
  assert.ok(['Paris', 'Oslo'].includes(calls[0]), 'with arguments its schema allows');
  const back = sent[1].messages;
  assert.equal(back.at(-2).role, 'assistant');
  assert.equal(back.at(-2).tool_calls[0].function.name, 'get_weather');
  assert.equal(back.at(-1).role, 'tool');
  assert.equal(back.at(-1).content, `Sunny in ${calls[0]}`);
  assert.equal(back.at(-1).tool_call_id, back.at(-2).tool_calls[0].id);
  assert.equal(typeof result.finalOutput, 'string');
  assert.ok(result.finalOutput.length > 0, 'the second turn answered with text');
});
