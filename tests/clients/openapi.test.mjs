// The OpenAPI document (http/openapi.json) against the live server: every operation it lists is
// called, with its success cases and the error cases that are cheap to provoke, and every answer
// (each SSE event of a stream too) must have a documented status and validate against the
// document's schema for it. The document's routes must be the README's route table, its
// response schemas must be strict enough to catch a drifted shape, and GET /openapi.json must
// serve the committed file.
//
//   BITNET_SERVER=build/dev/tools/bitnet-server BITNET_MODEL=models/....gguf \
//     node --test openapi.test.mjs
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { createParser } from 'eventsource-parser';
import { API_KEY, MODEL, call, startServer } from './harness.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DOC_TEXT = readFileSync(`${ROOT}http/openapi.json`, 'utf8');
const DOC = JSON.parse(DOC_TEXT);
const DOC_ID = 'https://bitnet-serve.invalid/openapi.json';

const ADMIN_KEY = 'some-admin-key-123';
const METRICS_KEY = 'some-metrics-key-123';
const ORIGIN = 'https://app.example';
const MAX_BODY = 16384;
const MODEL_FILE = process.env.BITNET_MODEL;
/// A small KV pool per model version: the loads below keep a few versions resident.
const SMALL_KV = ['--kv-budget-bytes', String(32 << 20)];
const METHODS = ['get', 'post', 'put', 'delete', 'patch', 'options', 'head'];

// ---- the document as schemas -----------------------------------------------------------------

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(DOC, DOC_ID);

/// `#/a/b` from path segments, escaped as a JSON pointer and then as a URI fragment.
const pointer = (segments) =>
  `#${segments.map((s) => `/${encodeURIComponent(String(s).replaceAll('~', '~0').replaceAll('/', '~1'))}`).join('')}`;

const validators = new Map();
function validatorAt(segments) {
  const ptr = pointer(segments);
  if (!validators.has(ptr)) validators.set(ptr, ajv.compile({ $ref: `${DOC_ID}${ptr}` }));
  return validators.get(ptr);
}

/// Asserts `value` validates against the schema at `segments`, printing ajv's errors if not.
function assertValid(segments, value, what) {
  const validate = validatorAt(segments);
  if (!validate(value))
    assert.fail(`${what} does not match ${pointer(segments)}:\n${JSON.stringify(validate.errors, null, 2)}\n` +
      `value: ${JSON.stringify(value).slice(0, 2000)}`);
}
const schemaPath = (name) => ['components', 'schemas', name];
const isValid = (name, value) => validatorAt(schemaPath(name))(value);

/// Every (METHOD, path) the document lists, as "POST /v1/chat/completions".
const OPERATIONS = Object.entries(DOC.paths).flatMap(([path, item]) =>
  Object.keys(item).filter((m) => METHODS.includes(m)).map((m) => `${m.toUpperCase()} ${path}`));
const exercised = new Set();

/// The documented response of `op` for `status`, following a $ref into components/responses.
function documentedResponse(op, status) {
  const [method, path] = op.split(' ');
  const operation = DOC.paths[path]?.[method.toLowerCase()];
  assert.ok(operation, `${op} is not in the document`);
  let segments = ['paths', path, method.toLowerCase(), 'responses', String(status)];
  let response = operation.responses[String(status)];
  assert.ok(response, `${op} answered ${status}, which the document does not list (it lists ${Object.keys(operation.responses).join(', ')})`);
  if (response.$ref) {
    segments = response.$ref.slice(2).split('/');
    response = segments.reduce((o, k) => o[k], DOC);
  }
  return { response, segments };
}

/// A body the server accepted must be one the document's request schema accepts (the request
/// schemas are closed: every field a route takes is listed, "Request fields" in README.md).
function assertRequestValid(op, body) {
  const [method, path] = op.split(' ');
  const schema = DOC.paths[path]?.[method.toLowerCase()]?.requestBody?.content?.['application/json']?.schema;
  const closed = ['InferenceRequest', 'CompletionRequest', 'ChatCompletionRequest', 'ResponsesRequest',
                  'MessagesRequest', 'CountTokensRequest'];
  if (!schema || !closed.includes(schema.$ref.split('/').at(-1))) return;
  assertValid(schema.$ref.slice(2).split('/'), body, `the request of ${op}`);
}

// ---- talking to the server -------------------------------------------------------------------

/// Splits an SSE body into [{event, data}] (unnamed events are "message").
function sseEvents(text) {
  const events = [];
  const parser = createParser({ onEvent: (e) => events.push({ event: e.event ?? 'message', data: e.data }) });
  parser.feed(text);
  return events;
}

/// The last event of each kind of stream: what the document says ends it.
const STREAM_ENDS = {
  'POST /v1/inference/stream': ['done'],
  'POST /v1/completions': ['[DONE]'],
  'POST /v1/chat/completions': ['[DONE]'],
  'POST /v1/responses': ['response.completed', 'response.incomplete'],
  'POST /v1/messages': ['message_stop'],
};

/// Sends one case and checks the answer against the document: the status must be documented
/// for the operation, the media type listed, and the body (or every SSE event) valid.
/// Returns { status, headers, body } (body: parsed JSON, SSE events, or text).
async function exchange(server, c) {
  const [opMethod, opPath] = c.op.split(' ');
  const method = c.method ?? opMethod;
  const path = c.path ?? opPath.replace('{alias}', MODEL);
  const headers = {};
  if (c.key !== null) headers.authorization = `Bearer ${c.key ?? API_KEY}`;
  let body;
  if (c.raw !== undefined || c.body !== undefined) {
    body = c.raw ?? JSON.stringify(c.body);
    headers['content-type'] = 'application/json';
  }
  Object.assign(headers, c.headers ?? {});
  const res = await fetch(`${server.origin}${path}`, { method, headers, body });
  const text = await res.text();
  exercised.add(c.op);
  if (res.status < 300 && c.body !== undefined) assertRequestValid(c.op, c.body);
  if (c.status !== undefined)
    assert.equal(res.status, c.status, `${method} ${path}: expected ${c.status}, got ${res.status}: ${text.slice(0, 500)}`);
  const { response, segments } = documentedResponse(c.op, res.status);
  const ctype = (res.headers.get('content-type') ?? '').split(';')[0].trim();
  const mediaKey = Object.keys(response.content ?? {}).find((k) => k.split(';')[0].trim() === ctype);
  assert.ok(mediaKey, `${c.op} ${res.status}: content type '${ctype}' is not documented`);
  const mediaPath = [...segments, 'content', mediaKey];
  const out = { status: res.status, headers: res.headers };
  if (ctype === 'application/json') {
    out.body = JSON.parse(text);
    assertValid([...mediaPath, 'schema'], out.body, `${method} ${path} (${res.status})`);
  } else if (ctype === 'text/event-stream') {
    const events = sseEvents(text);
    assert.ok(events.length > 0, `${method} ${path}: an empty stream`);
    const named = response.content[mediaKey]['x-sse-events'];
    events.forEach(({ event, data }, i) => {
      if (data === '[DONE]') {
        assert.equal(i, events.length - 1, '[DONE] must be the last event');
        return;
      }
      assert.ok(named[event], `${c.op}: the stream sent an undocumented event '${event}'`);
      const payload = JSON.parse(data);
      assertValid([...mediaPath, 'x-sse-events', event], payload, `${method} ${path} event #${i} '${event}'`);
      if ('sequence_number' in payload) assert.equal(payload.sequence_number, i, 'Responses events are numbered from 0');
    });
    const last = events.at(-1);
    const end = last.data === '[DONE]' ? '[DONE]' : last.event;
    assert.ok(STREAM_ENDS[c.op].includes(end), `${c.op}: the stream ended with '${end}'`);
    out.body = events;
  } else {
    out.body = text;
  }
  for (const name of Object.keys(response.headers ?? {}))
    assert.ok(res.headers.get(name), `${c.op} ${res.status}: the documented header ${name} is missing`);
  return out;
}

// ---- the cases ---------------------------------------------------------------------------------

const prompt = { prompt: 'Hello', max_tokens: 4 };
const chat = { messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 };
const tiny = { type: 'object', properties: { c: { enum: ['x'] } }, required: ['c'], additionalProperties: false };
const chatTools = [
  { type: 'function', function: { name: 'pick', parameters: tiny } },
  { type: 'function', function: { name: 'other', parameters: tiny } },
];
const anthropic = { max_tokens: 4, messages: [{ role: 'user', content: 'One, please.' }] };
const responses = { input: 'One, please.', max_output_tokens: 4 };
// A whole call among several functions is written as {"name":..,"arguments":..} (in an array of
// parallel calls): about 28 tokens of this model, so these cases alone take max_tokens 32.
const none = { type: 'object', maxProperties: 0 };
const among = { max_tokens: 32, temperature: 0 };
const chatAmong = { ...chat, ...among, tools: ['a', 'b'].map((name) => ({ type: 'function', function: { name, parameters: none } })), tool_choice: 'required' };
const responsesAmong = { ...responses, max_output_tokens: 32, temperature: 0, tools: ['a', 'b'].map((name) => ({ type: 'function', name, parameters: none })), tool_choice: 'required' };
const anthropicAmong = { ...anthropic, ...among, tools: ['a', 'b'].map((name) => ({ name, input_schema: none })), tool_choice: { type: 'any' } };
const big = { prompt: 'x'.repeat(MAX_BODY + 1024) };
const noModel = { model: 'no-such-model' };
const xApiKey = { key: null, headers: { 'x-api-key': API_KEY } };

/// The error cases every body route shares: no key, wrong key, another method, another media
/// type, a body past max_body_bytes, a body that is not JSON.
function bodyRouteErrors(op, { mediaType = true, badJson = true } = {}) {
  const other = op.startsWith('POST') ? 'GET' : 'POST';
  return [
    { name: 'no key', op, key: null, body: {}, status: 401 },
    { name: 'wrong key', op, key: 'wrong-key-123', body: {}, status: 401 },
    { name: `${other} is not allowed`, op, method: other, status: 405 },
    ...(mediaType ? [{ name: 'text/plain body', op, raw: '{}', headers: { 'content-type': 'text/plain' }, status: 415 }] : []),
    { name: 'body past max_body_bytes', op, body: big, status: 413 },
    ...(badJson ? [{ name: 'not JSON', op, raw: '{"oops', status: 400 }] : []),
  ];
}

const CASES = [
  // the web page
  { name: 'the page for a browser', op: 'GET /', key: null, headers: { accept: 'text/html,application/xhtml+xml;q=0.9' }, status: 200,
    check: ({ body, headers }) => {
      assert.match(body, /<nav aria-label="Views">/);
      assert.match(headers.get('content-security-policy') ?? '', /script-src 'self'/);
      assert.match(headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
      assert.equal(headers.get('x-content-type-options'), 'nosniff');
    } },
  { name: 'a line for any other client', op: 'GET /', key: null, status: 200,
    check: ({ body }) => assert.equal(body, 'bitnet-serve is running\n') },
  { name: 'POST is not allowed', op: 'GET /', method: 'POST', key: null, status: 405 },
  { name: 'a file of the page', op: 'GET /ui/{asset}', path: '/ui/app.js', key: null, status: 200 },
  { name: 'the style sheet', op: 'GET /ui/{asset}', path: '/ui/style.css', key: null, status: 200 },
  { name: 'a name the page does not have', op: 'GET /ui/{asset}', path: '/ui/index.html', key: null, status: 404 },
  { name: 'no path outside the table', op: 'GET /ui/{asset}', path: '/ui/..%2fopenapi.json', key: null, status: 404 },

  // health and the document
  { name: 'live', op: 'GET /health/live', key: null, status: 200 },
  { name: 'PUT is not allowed', op: 'GET /health/live', method: 'PUT', key: null, status: 405 },
  { name: 'ready', op: 'GET /health/ready', key: null, status: 200 },
  { name: 'ready for the model', op: 'GET /health/ready', path: `/health/ready?model=${MODEL}`, key: null, status: 200 },
  { name: 'not ready for an unknown model', op: 'GET /health/ready', path: '/health/ready?model=no-such-model', key: null, status: 503 },
  { name: 'health', op: 'GET /health', key: null, status: 200 },
  { name: 'POST is not allowed', op: 'GET /health', method: 'POST', key: null, status: 405 },
  { name: 'metrics without the metrics key', op: 'GET /metrics', key: null, status: 401 },
  { name: 'metrics with the metrics key', op: 'GET /metrics', key: METRICS_KEY, status: 200 },
  { name: 'metrics with an admin key', op: 'GET /metrics', key: ADMIN_KEY, status: 200 },
  { name: 'POST is not allowed', op: 'GET /metrics', method: 'POST', key: null, status: 405 },
  { name: 'the document', op: 'GET /openapi.json', key: null, status: 200 },
  { name: 'POST is not allowed', op: 'GET /openapi.json', method: 'POST', key: null, status: 405 },

  // native
  { name: 'plain', op: 'POST /v1/inference', body: prompt, status: 200 },
  { name: 'x-api-key', op: 'POST /v1/inference', ...xApiKey, body: prompt, status: 200 },
  { name: 'logprobs', op: 'POST /v1/inference', body: { ...prompt, logprobs: 2 }, status: 200,
    check: ({ body }) => {
      assert.equal(body.logprobs.length, body.tokens.length);
      body.logprobs.forEach((lp, i) => {
        assert.equal(lp.token_id, body.tokens[i]);
        assert.equal(lp.top_logprobs.length, 2);
      });
    } },
  { name: 'json_schema', op: 'POST /v1/inference', body: { prompt: 'x', max_tokens: 16, json_schema: { enum: ['yes', 'no'] } }, status: 200 },
  { name: 'sampling fields', op: 'POST /v1/inference', status: 200,
    body: { ...prompt, max_tokens: 6, temperature: 0, presence_penalty: 0.5, frequency_penalty: 0.5, logit_bias: { 13: -100 }, ignore_eos: true, min_tokens: 2 },
    check: ({ body }) => assert.equal(body.tokens.length, 6) },
  { name: 'guided_choice', op: 'POST /v1/inference', body: { prompt: 'x', max_tokens: 8, guided_choice: ['yes', 'no'] }, status: 200,
    check: ({ body }) => assert.ok(['yes', 'no'].includes(body.text)) },
  { name: 'structured_outputs regex', op: 'POST /v1/inference', body: { prompt: 'x', max_tokens: 8, structured_outputs: { regex: '[a-c]{3}' } }, status: 200,
    check: ({ body }) => assert.match(body.text, /^[a-c]{3}$/) },
  { name: 'a logit_bias id outside the vocabulary', op: 'POST /v1/inference', body: { ...prompt, logit_bias: { 99999: 1 } }, status: 400 },
  { name: 'stream true on the plain route', op: 'POST /v1/inference', body: { ...prompt, stream: true }, status: 400 },
  { name: 'no prompt', op: 'POST /v1/inference', body: { max_tokens: 1 }, status: 400 },
  { name: 'n 2', op: 'POST /v1/inference', body: { ...prompt, n: 2 }, status: 400 },
  { name: 'token id outside the vocabulary', op: 'POST /v1/inference', body: { prompt: [99999], max_tokens: 1 }, status: 400 },
  { name: 'unknown model', op: 'POST /v1/inference', body: { ...prompt, ...noModel }, status: 404 },
  ...bodyRouteErrors('POST /v1/inference'),
  { name: 'stream', op: 'POST /v1/inference/stream', body: prompt, status: 200 },
  { name: 'stream with logprobs', op: 'POST /v1/inference/stream', body: { ...prompt, logprobs: 2 }, status: 200 },
  { name: 'stream of an unknown model', op: 'POST /v1/inference/stream', body: { ...prompt, ...noModel }, status: 404 },
  { name: 'temperature out of range', op: 'POST /v1/inference/stream', body: { ...prompt, temperature: 9 }, status: 400 },
  ...bodyRouteErrors('POST /v1/inference/stream'),

  // OpenAI completions
  { name: 'plain with logprobs', op: 'POST /v1/completions', body: { ...prompt, logprobs: 2 }, status: 200 },
  { name: 'guided_regex', op: 'POST /v1/completions', body: { ...prompt, max_tokens: 4, guided_regex: 'ab+', temperature: 0 }, status: 200 },
  { name: 'best_of 2', op: 'POST /v1/completions', body: { ...prompt, best_of: 2 }, status: 400,
    check: ({ body }) => assert.equal(body.error.code, 'unsupported_parameter') },
  { name: 'n 2', op: 'POST /v1/completions', body: { ...prompt, n: 2, seed: 3 }, status: 200 },
  { name: 'echo, max_tokens 0', op: 'POST /v1/completions', body: { prompt: 'Hello', max_tokens: 0, echo: true, logprobs: 1 }, status: 200 },
  { name: 'stream with usage', op: 'POST /v1/completions', body: { ...prompt, stream: true, stream_options: { include_usage: true } }, status: 200 },
  { name: 'stream of an echo with logprobs', op: 'POST /v1/completions', body: { prompt: 'Hello', max_tokens: 2, echo: true, logprobs: 1, stream: true }, status: 200 },
  { name: 'stream, n 2', op: 'POST /v1/completions', body: { ...prompt, n: 2, stream: true }, status: 200 },
  { name: 'n past max_n', op: 'POST /v1/completions', body: { ...prompt, n: 9 }, status: 400 },
  { name: 'two prompts', op: 'POST /v1/completions', body: { prompt: ['a', 'b'], max_tokens: 1 }, status: 400 },
  { name: 'unknown model', op: 'POST /v1/completions', body: { ...prompt, ...noModel }, status: 404 },
  { name: 'stream of an unknown model', op: 'POST /v1/completions', body: { ...prompt, ...noModel, stream: true }, status: 404 },
  ...bodyRouteErrors('POST /v1/completions'),

  // OpenAI chat
  { name: 'plain', op: 'POST /v1/chat/completions', body: chat, status: 200, capture: 'ChatCompletion' },
  { name: 'the sampling fields, tools [] and what is ignored', op: 'POST /v1/chat/completions', status: 200,
    body: { ...chat, presence_penalty: 1, frequency_penalty: 1, logit_bias: { 7: 2 }, min_tokens: 1, tools: [], user: 'u', metadata: { a: 'b' }, service_tier: 'auto', store: false } },
  { name: 'guided_choice', op: 'POST /v1/chat/completions', body: { ...chat, max_tokens: 8, guided_choice: ['yes', 'no'] }, status: 200 },
  { name: 'functions (deprecated)', op: 'POST /v1/chat/completions', body: { ...chat, functions: [{ name: 'f' }] }, status: 400 },
  { name: 'logprobs', op: 'POST /v1/chat/completions', body: { ...chat, logprobs: true, top_logprobs: 2 }, status: 200 },
  { name: 'n 2', op: 'POST /v1/chat/completions', body: { ...chat, n: 2 }, status: 200 },
  { name: 'json_schema', op: 'POST /v1/chat/completions', body: { ...chat, max_tokens: 16, response_format: { type: 'json_schema', json_schema: { name: 't', schema: tiny } } }, status: 200 },
  {
    name: 'forced call', op: 'POST /v1/chat/completions', status: 200,
    body: { ...chat, max_tokens: 16, tools: chatTools, tool_choice: { type: 'function', function: { name: 'pick' } } },
    check: ({ body }) => assert.equal(body.choices[0].finish_reason, 'tool_calls'),
  },
  {
    name: 'a call among several, cut by max_tokens', op: 'POST /v1/chat/completions', status: 200,
    body: { ...chat, max_tokens: 3, tools: chatTools, tool_choice: 'required' },
    check: ({ body }) => assert.equal(body.choices[0].message.content, null),
  },
  { name: 'tool loop turns', op: 'POST /v1/chat/completions', status: 200, body: {
    ...chat, messages: [
      { role: 'system', content: [{ type: 'text', text: 'Be brief.' }] },
      { role: 'user', content: 'Pick.' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'pick', arguments: '{"c":"x"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'picked' },
    ],
  } },
  { name: 'a whole call among several', op: 'POST /v1/chat/completions', body: chatAmong, status: 200,
    check: ({ body }) => assert.equal(body.choices[0].finish_reason, 'tool_calls') },
  { name: 'a whole call among several, not parallel', op: 'POST /v1/chat/completions', body: { ...chatAmong, parallel_tool_calls: false }, status: 200 },
  { name: 'stream of a whole call among several', op: 'POST /v1/chat/completions', body: { ...chatAmong, stream: true }, status: 200 },
  { name: 'stream with usage', op: 'POST /v1/chat/completions', body: { ...chat, stream: true, stream_options: { include_usage: true } }, status: 200 },
  { name: 'stream, n 2, logprobs', op: 'POST /v1/chat/completions', body: { ...chat, max_tokens: 2, n: 2, logprobs: true, top_logprobs: 1, stream: true }, status: 200 },
  { name: 'stream of a forced call', op: 'POST /v1/chat/completions', status: 200,
    body: { ...chat, max_tokens: 16, stream: true, tools: chatTools, tool_choice: { type: 'function', function: { name: 'pick' } } } },
  { name: 'stream of a call among several, cut', op: 'POST /v1/chat/completions', status: 200,
    body: { ...chat, max_tokens: 3, stream: true, tools: chatTools, tool_choice: 'required' } },
  { name: 'no messages', op: 'POST /v1/chat/completions', body: {}, status: 400 },
  { name: 'unknown role', op: 'POST /v1/chat/completions', body: { messages: [{ role: 'wizard', content: 'x' }] }, status: 400 },
  { name: 'echo', op: 'POST /v1/chat/completions', body: { ...chat, echo: true }, status: 400 },
  { name: 'top_logprobs without logprobs', op: 'POST /v1/chat/completions', body: { ...chat, top_logprobs: 2 }, status: 400 },
  { name: 'unknown model', op: 'POST /v1/chat/completions', body: { ...chat, ...noModel }, status: 404 },
  { name: 'stream of an unknown model', op: 'POST /v1/chat/completions', body: { ...chat, ...noModel, stream: true }, status: 404 },
  ...bodyRouteErrors('POST /v1/chat/completions'),

  // OpenAI Responses
  { name: 'plain', op: 'POST /v1/responses', body: { ...responses, instructions: 'You tell fortunes.' }, status: 200, capture: 'Response' },
  { name: 'forced call', op: 'POST /v1/responses', status: 200,
    body: { ...responses, max_output_tokens: 16, tools: [{ type: 'function', name: 'pick', parameters: tiny }], tool_choice: 'required' },
    check: ({ body }) => assert.equal(body.output[0].type, 'function_call') },
  { name: 'input items', op: 'POST /v1/responses', status: 200, body: { ...responses, input: [
    { role: 'user', content: [{ type: 'input_text', text: 'Pick.' }] },
    { type: 'function_call', call_id: 'call_1', name: 'pick', arguments: '{"c":"x"}' },
    { type: 'function_call_output', call_id: 'call_1', output: 'picked' },
  ] } },
  { name: 'stream', op: 'POST /v1/responses', body: { ...responses, stream: true }, status: 200 },
  { name: 'stream of a forced call', op: 'POST /v1/responses', status: 200,
    body: { ...responses, max_output_tokens: 16, stream: true, tools: [{ type: 'function', name: 'pick', parameters: tiny }], tool_choice: { type: 'function', name: 'pick' } } },
  { name: 'stream, json_schema', op: 'POST /v1/responses', status: 200,
    body: { ...responses, max_output_tokens: 16, stream: true, text: { format: { type: 'json_schema', name: 't', schema: tiny } } } },
  { name: 'a whole call among several', op: 'POST /v1/responses', body: responsesAmong, status: 200,
    check: ({ body }) => assert.equal(body.status, 'completed') },
  { name: 'stream of a whole call among several', op: 'POST /v1/responses', body: { ...responsesAmong, stream: true }, status: 200 },
  { name: 'an unknown previous_response_id', op: 'POST /v1/responses', body: { ...responses, previous_response_id: 'resp_1' }, status: 400 },
  { name: 'an unknown item_reference', op: 'POST /v1/responses', body: { ...responses, input: [{ type: 'item_reference', id: 'msg_1' }] }, status: 400 },
  { name: 'no input', op: 'POST /v1/responses', body: { max_output_tokens: 4 }, status: 400 },
  { name: 'a hosted tool', op: 'POST /v1/responses', body: { ...responses, tools: [{ type: 'web_search' }] }, status: 400 },
  { name: 'tools [] and include [] (an agent without tools)', op: 'POST /v1/responses', body: { ...responses, tools: [], include: [] }, status: 200 },
  { name: 'a call cut by max_output_tokens, kept incomplete', op: 'POST /v1/responses', status: 200,
    body: { ...responses, max_output_tokens: 2, temperature: 0, tools: [{ type: 'function', name: 'pick', parameters: { type: 'object', properties: { c: { type: 'string' } }, required: ['c'] } }], tool_choice: 'required' },
    check: ({ body }) => {
      assert.equal(body.status, 'incomplete');
      assert.equal(body.output[0].status, 'incomplete');
    } },
  { name: 'stream of a call cut by max_output_tokens', op: 'POST /v1/responses', status: 200,
    body: { ...responses, max_output_tokens: 2, temperature: 0, stream: true, tools: [{ type: 'function', name: 'pick', parameters: { type: 'object', properties: { c: { type: 'string' } }, required: ['c'] } }], tool_choice: 'required' },
    check: ({ body }) => {
      const types = body.map((e) => e.event);
      for (const t of ['response.function_call_arguments.done', 'response.output_item.done']) assert.ok(types.includes(t), t);
    } },
  { name: 'conversation', op: 'POST /v1/responses', body: { ...responses, conversation: 'conv_1' }, status: 400,
    check: ({ body }) => assert.equal(body.error.param, 'conversation') },
  { name: 'an unknown field', op: 'POST /v1/responses', body: { ...responses, mystery: 1 }, status: 400,
    check: ({ body }) => assert.equal(body.error.code, 'unknown_parameter') },
  { name: 'unknown model', op: 'POST /v1/responses', body: { ...responses, ...noModel }, status: 404 },
  { name: 'stream of an unknown model', op: 'POST /v1/responses', body: { ...responses, ...noModel, stream: true }, status: 404 },
  ...bodyRouteErrors('POST /v1/responses'),

  // Anthropic Messages
  { name: 'plain, x-api-key', op: 'POST /v1/messages', ...xApiKey, body: { ...anthropic, system: 'You tell fortunes.' }, status: 200, capture: 'Message' },
  { name: 'stop_sequences', op: 'POST /v1/messages', body: { ...anthropic, max_tokens: 16, stop_sequences: ['e'] }, status: 200 },
  { name: 'forced call (any)', op: 'POST /v1/messages', status: 200,
    body: { ...anthropic, max_tokens: 16, tools: [{ name: 'pick', input_schema: tiny }], tool_choice: { type: 'any' } },
    check: ({ body }) => assert.equal(body.stop_reason, 'tool_use') },
  { name: 'tool turns', op: 'POST /v1/messages', status: 200, body: { ...anthropic, messages: [
    { role: 'user', content: [{ type: 'text', text: 'Pick.' }] },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'pick', input: { c: 'x' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'picked' }] },
  ] } },
  { name: 'stream', op: 'POST /v1/messages', body: { ...anthropic, stream: true }, status: 200 },
  { name: 'stream of a forced call (tool)', op: 'POST /v1/messages', status: 200,
    body: { ...anthropic, max_tokens: 16, stream: true, tools: [{ name: 'pick', input_schema: tiny }], tool_choice: { type: 'tool', name: 'pick' } } },
  { name: 'a whole call among several', op: 'POST /v1/messages', body: anthropicAmong, status: 200,
    check: ({ body }) => assert.equal(body.stop_reason, 'tool_use') },
  { name: 'stream of a whole call among several', op: 'POST /v1/messages', body: { ...anthropicAmong, stream: true }, status: 200 },
  { name: 'no max_tokens', op: 'POST /v1/messages', body: { messages: anthropic.messages }, status: 400 },
  { name: 'output_config.format', op: 'POST /v1/messages', status: 200,
    body: { ...anthropic, max_tokens: 16, temperature: 0, output_config: { format: { type: 'json_schema', schema: tiny } } },
    check: ({ body }) => assert.deepEqual(JSON.parse(body.content[0].text), { c: 'x' }) },
  { name: 'tools [], thinking disabled, top_k and top_p -1', op: 'POST /v1/messages', status: 200,
    body: { ...anthropic, tools: [], thinking: { type: 'disabled' }, top_k: -1, top_p: -1 } },
  { name: 'thinking enabled', op: 'POST /v1/messages', body: { ...anthropic, thinking: { type: 'enabled', budget_tokens: 1024 } }, status: 400 },
  { name: 'an image block', op: 'POST /v1/messages', body: { ...anthropic, messages: [{ role: 'user', content: [{ type: 'image', source: {} }] }] }, status: 400 },
  { name: 'unknown model', op: 'POST /v1/messages', body: { ...anthropic, ...noModel }, status: 404 },
  { name: 'stream of an unknown model', op: 'POST /v1/messages', body: { ...anthropic, ...noModel, stream: true }, status: 404 },
  { name: 'wrong x-api-key', op: 'POST /v1/messages', key: null, headers: { 'x-api-key': 'wrong-key-123' }, body: anthropic, status: 401 },
  ...bodyRouteErrors('POST /v1/messages'),
  { name: 'count', op: 'POST /v1/messages/count_tokens', body: { messages: anthropic.messages, system: 'Be brief.' }, status: 200 },
  { name: 'no messages', op: 'POST /v1/messages/count_tokens', body: { messages: [] }, status: 400 },
  { name: 'unknown model', op: 'POST /v1/messages/count_tokens', body: { messages: anthropic.messages, ...noModel }, status: 404 },
  ...bodyRouteErrors('POST /v1/messages/count_tokens'),

  // text
  { name: 'tokenize', op: 'POST /v1/tokenize', body: { text: 'Hello', add_bos: true }, status: 200 },
  { name: 'text not a string', op: 'POST /v1/tokenize', body: { text: 5 }, status: 400 },
  { name: 'unknown model', op: 'POST /v1/tokenize', body: { text: 'Hello', ...noModel }, status: 404 },
  ...bodyRouteErrors('POST /v1/tokenize'),
  { name: 'detokenize', op: 'POST /v1/detokenize', body: { tokens: [72, 101] }, status: 200 },
  { name: 'tokens not an array', op: 'POST /v1/detokenize', body: { tokens: 'x' }, status: 400 },
  { name: 'id outside the vocabulary', op: 'POST /v1/detokenize', body: { tokens: [999999] }, status: 400 },
  { name: 'unknown model', op: 'POST /v1/detokenize', body: { tokens: [72], ...noModel }, status: 404 },
  ...bodyRouteErrors('POST /v1/detokenize'),
  { name: 'apply-template', op: 'POST /apply-template', body: { messages: [{ role: 'user', content: 'Hi' }] }, status: 200 },
  { name: 'messages missing', op: 'POST /apply-template', body: {}, status: 400 },
  { name: 'unknown model', op: 'POST /apply-template', body: { messages: [{ role: 'user', content: 'Hi' }], ...noModel }, status: 404 },
  ...bodyRouteErrors('POST /apply-template'),

  // operations and models (reads)
  { name: 'a user key\'s own figures', op: 'GET /v1/stats', status: 200, check: ({ body }) => assert.ok(body.key) },
  { name: 'the admin key\'s figures', op: 'GET /v1/stats', key: ADMIN_KEY, status: 200, check: ({ body }) => assert.ok(body.models) },
  { name: 'no key', op: 'GET /v1/stats', key: null, status: 401 },
  { name: 'POST is not allowed', op: 'GET /v1/stats', method: 'POST', status: 405 },
  { name: 'cluster', op: 'GET /v1/cluster', status: 200 },
  { name: 'no key', op: 'GET /v1/cluster', key: null, status: 401 },
  { name: 'DELETE is not allowed', op: 'GET /v1/cluster', method: 'DELETE', status: 405 },
  { name: 'list', op: 'GET /v1/models', status: 200 },
  { name: 'list for the admin key', op: 'GET /v1/models', key: ADMIN_KEY, status: 200 },
  { name: 'wrong key', op: 'GET /v1/models', key: 'wrong-key-123', status: 401 },
  { name: 'DELETE is not allowed', op: 'GET /v1/models', method: 'DELETE', status: 405 },
  { name: 'one model', op: 'GET /v1/models/{alias}', status: 200, check: ({ body }) => assert.equal(body.path, null) },
  { name: 'one model for the admin key', op: 'GET /v1/models/{alias}', key: ADMIN_KEY, status: 200 },
  { name: 'unknown alias', op: 'GET /v1/models/{alias}', path: '/v1/models/no-such-model', status: 404 },
  { name: 'no key', op: 'GET /v1/models/{alias}', key: null, status: 401 },
  { name: 'POST is not allowed', op: 'GET /v1/models/{alias}', method: 'POST', status: 405 },

  // model management: refusals (the operations that succeed run in their own test below)
  { name: 'a user key', op: 'POST /v1/models/load', body: { alias: 'spare', path: MODEL_FILE }, status: 403 },
  { name: 'no key', op: 'POST /v1/models/load', key: null, body: { alias: 'spare', path: MODEL_FILE }, status: 401 },
  { name: 'a bad alias', op: 'POST /v1/models/load', key: ADMIN_KEY, body: { alias: 'a b', path: MODEL_FILE }, status: 400 },
  { name: 'not JSON', op: 'POST /v1/models/load', key: ADMIN_KEY, raw: '{"oops', status: 400 },
  { name: 'a bad device', op: 'POST /v1/models/load', key: ADMIN_KEY, body: { alias: 'spare', path: MODEL_FILE, device: 'gpu' }, status: 400 },
  { name: 'nodes without a cluster', op: 'POST /v1/models/load', key: ADMIN_KEY, body: { alias: 'spare', path: MODEL_FILE, nodes: ['n1'] }, status: 400 },
  { name: 'GET is not allowed', op: 'POST /v1/models/load', method: 'GET', key: ADMIN_KEY, status: 405 },
  { name: 'body past max_body_bytes', op: 'POST /v1/models/load', key: ADMIN_KEY, body: big, status: 413 },
  { name: 'nothing to roll back to', op: 'POST /v1/models/{alias}/rollback', key: ADMIN_KEY, status: 400 },
  { name: 'not JSON', op: 'POST /v1/models/{alias}/rollback', key: ADMIN_KEY, raw: '{"oops', status: 400 },
  { name: 'unknown alias', op: 'POST /v1/models/{alias}/rollback', path: '/v1/models/no-such-model/rollback', key: ADMIN_KEY, status: 404 },
  { name: 'a user key', op: 'POST /v1/models/{alias}/rollback', status: 403 },
  { name: 'no key', op: 'POST /v1/models/{alias}/rollback', key: null, status: 401 },
  { name: 'GET is not allowed', op: 'POST /v1/models/{alias}/rollback', method: 'GET', key: ADMIN_KEY, status: 405 },
  { name: 'body past max_body_bytes', op: 'POST /v1/models/{alias}/rollback', key: ADMIN_KEY, body: big, status: 413 },
  { name: 'unknown alias', op: 'DELETE /v1/models/{alias}', path: '/v1/models/no-such-model', key: ADMIN_KEY, status: 404 },
  { name: 'nodes without a cluster', op: 'DELETE /v1/models/{alias}', key: ADMIN_KEY, body: { nodes: ['n1'] }, status: 400 },
  { name: 'a user key', op: 'DELETE /v1/models/{alias}', status: 403 },
  { name: 'no key', op: 'DELETE /v1/models/{alias}', key: null, status: 401 },
  { name: 'PUT is not allowed', op: 'DELETE /v1/models/{alias}', method: 'PUT', status: 405 },
  { name: 'body past max_body_bytes', op: 'DELETE /v1/models/{alias}', key: ADMIN_KEY, body: big, status: 413 },
];

// What the schemas cannot say: values that must agree with the request or with each other (the
// ones the server once got wrong).
CASES.push(
  { name: 'message_start counts the whole prompt', op: 'POST /v1/messages', body: { ...anthropic, stream: true }, status: 200,
    check: ({ body }) => {
      const data = (name) => JSON.parse(body.find((e) => e.event === name).data);
      const end = data('message_delta').usage;
      assert.equal(data('message_start').message.usage.input_tokens, end.input_tokens + end.cache_read_input_tokens,
        'message_start counts the whole prompt; message_delta splits it into uncached and cache reads');
    } },
  { name: 'an incomplete response\'s message is incomplete', op: 'POST /v1/responses', body: { ...responses, temperature: 0 }, status: 200,
    check: ({ body }) => {
      assert.equal(body.status, 'incomplete');
      assert.equal(body.output[0].status, 'incomplete');
    } },
  { name: 'stop_sequence names the sequence that stopped it', op: 'POST /v1/messages', status: 200,
    body: { ...anthropic, max_tokens: 16, temperature: 0, stop_sequences: ['e'] },
    check: ({ body }) => {
      assert.equal(body.stop_reason, 'stop_sequence');
      assert.equal(body.stop_sequence, 'e');
    } },
  { name: 'an unknown model\'s 404 names the model field', op: 'POST /v1/chat/completions', body: { ...chat, ...noModel }, status: 404,
    check: ({ body }) => assert.ok(['model', null].includes(body.error.param), `param is ${body.error.param}`) },
  { name: 'a user key on an admin route is a permission error', op: 'POST /v1/models/load', body: { alias: 'spare', path: MODEL_FILE }, status: 403,
    check: ({ body }) => assert.equal(body.error.type, 'permission_error') },
);


const captured = {};

// ---- the tests ---------------------------------------------------------------------------------

test('the document is OpenAPI 3.1 and its schemas compile', () => {
  assert.equal(DOC.openapi, '3.1.0');
  for (const name of Object.keys(DOC.components.schemas)) validatorAt(schemaPath(name));
  assert.equal(DOC_TEXT, `${JSON.stringify(DOC, null, 2)}\n`, 'http/openapi.json is 2-space indented JSON');
});

test('the live server answers every operation as documented', async (t) => {
  const server = await startServer(['--admin-api-keys', ADMIN_KEY, '--metrics-api-key', METRICS_KEY,
    '--cors-allowed-origins', ORIGIN, '--max-body-bytes', String(MAX_BODY), ...SMALL_KV]);
  try {
    for (const c of CASES) {
      const label = `${c.op}: ${c.name}`;
      await t.test(label, async () => {
        const out = await exchange(server, c);
        if (c.check) c.check(out);
        if (c.capture) captured[c.capture] = out.body;
      });
    }

    await t.test('model management: load, conflict, rollback, unload', async () => {
      const admin = { key: ADMIN_KEY };
      const load = (version) => ({ ...admin, op: 'POST /v1/models/load', body: { alias: 'spare', path: MODEL_FILE, version, warmup: false } });
      const waitIdle = async () => {
        for (let i = 0; i < 200; i++) {
          const { body } = await exchange(server, { ...admin, op: 'GET /v1/models/{alias}', path: '/v1/models/spare', status: 200 });
          if (body.operations.every((o) => ['ready', 'unloaded', 'failed'].includes(o.state))) return body;
          await new Promise((r) => setTimeout(r, 50));
        }
        assert.fail('the operations on spare never ended');
      };
      const first = await exchange(server, { ...load('v1'), status: 202 });
      assert.equal(first.body.alias, 'spare');
      await waitIdle();
      // Two loads at once: the second meets the first still running (409 with its id).
      let conflict;
      for (let attempt = 0; attempt < 5 && !conflict; attempt++) {
        const both = await Promise.all([exchange(server, load(`v${2 * attempt + 2}`)), exchange(server, load(`v${2 * attempt + 3}`))]);
        conflict = both.find((r) => r.status === 409);
        await waitIdle();
      }
      assert.ok(conflict, 'no 409 in five tries of two loads at once');
      assert.match(conflict.body.operation_id, /^op-[0-9]+$/);
      const detail = await waitIdle();
      assert.equal(detail.state, 'ready');
      await exchange(server, { ...admin, op: 'POST /v1/models/{alias}/rollback', path: '/v1/models/spare/rollback', status: 202 });
      await waitIdle();
      await exchange(server, { ...admin, op: 'DELETE /v1/models/{alias}', path: '/v1/models/spare', status: 202 });
      await waitIdle();
    });

    await t.test('Responses: a stored reply continued by previous_response_id and item_reference', async () => {
      const op = 'POST /v1/responses';
      const first = await exchange(server, { op, body: { ...responses, store: true }, status: 200 });
      assert.equal(first.body.store, true);
      const next = await exchange(server, { op, body: { ...responses, previous_response_id: first.body.id }, status: 200 });
      assert.ok(next.body.usage.input_tokens > first.body.usage.input_tokens, 'the stored conversation came first');
      await exchange(server, { op, status: 200, body: { ...responses, input: [{ type: 'item_reference', id: first.body.output[0].id }, { role: 'user', content: 'More.' }] } });
      await exchange(server, { op, status: 200, body: { ...responses, previous_response_id: first.body.id, stream: true } });
      const unstored = await exchange(server, { op, body: { ...responses, store: false }, status: 200 });
      assert.equal(unstored.body.store, false);
      await exchange(server, { op, body: { ...responses, previous_response_id: unstored.body.id }, status: 400 });
      await exchange(server, { op, body: { ...responses, previous_response_id: first.body.id }, key: ADMIN_KEY, status: 400 });
    });

    await t.test('Messages: a thread created, continued once, another key\'s not found', async () => {
      const op = 'POST /v1/messages';
      const first = await exchange(server, { op, body: { ...anthropic, system: 'Be brief.', thread: { type: 'create' } }, status: 200 });
      const cont = { type: 'continue', previous_message_id: first.body.id };
      const next = await exchange(server, { op, body: { ...anthropic, thread: cont }, status: 200 });
      assert.ok(next.body.usage.input_tokens + next.body.usage.cache_read_input_tokens >
                first.body.usage.input_tokens + first.body.usage.cache_read_input_tokens, 'the thread came first');
      const twice = await exchange(server, { op, body: { ...anthropic, thread: cont }, status: 409 });
      assert.equal(twice.body.error.details.error_code, 'thread_already_continued');
      const stranger = await exchange(server, { op, key: ADMIN_KEY, status: 404,
        body: { ...anthropic, thread: { type: 'continue', previous_message_id: next.body.id } } });
      assert.equal(stranger.body.error.details.error_code, 'thread_not_found');
      await exchange(server, { op, status: 200,
        body: { ...anthropic, stream: true, thread: { type: 'continue', previous_message_id: next.body.id } } });
      await exchange(server, { op, body: { ...anthropic, system: 'x', thread: { type: 'continue', previous_message_id: 'msg_1' } }, status: 400 });
    });

    await t.test('Responses: a stored reply read, its input items listed, deleted; another key sees none', async () => {
      const op = 'POST /v1/responses';
      const made = await exchange(server, { op, body: { ...responses, instructions: 'Be brief.', parallel_tool_calls: false }, status: 200 });
      assert.equal(made.body.parallel_tool_calls, false);
      assert.equal(made.body.instructions, 'Be brief.');
      const path = `/v1/responses/${made.body.id}`;
      const read = await exchange(server, { op: 'GET /v1/responses/{response_id}', path, status: 200 });
      assert.deepEqual(read.body, made.body);
      const items = await exchange(server, { op: 'GET /v1/responses/{response_id}/input_items', path: `${path}/input_items?order=asc&limit=5`, status: 200 });
      assert.equal(items.body.data[0].role, 'user');
      await exchange(server, { op: 'GET /v1/responses/{response_id}/input_items', path: `${path}/input_items?limit=0`, status: 400 });
      await exchange(server, { op: 'GET /v1/responses/{response_id}', path, key: ADMIN_KEY, status: 404 });
      await exchange(server, { op: 'DELETE /v1/responses/{response_id}', path, key: ADMIN_KEY, status: 404 });
      await exchange(server, { op: 'GET /v1/responses/{response_id}', path, key: null, status: 401 });
      await exchange(server, { op: 'GET /v1/responses/{response_id}', path, method: 'POST', status: 405 });
      const gone = await exchange(server, { op: 'DELETE /v1/responses/{response_id}', path, status: 200 });
      assert.deepEqual(gone.body, { id: made.body.id, object: 'response', deleted: true });
      await exchange(server, { op: 'GET /v1/responses/{response_id}', path, status: 404 });
      await exchange(server, { op: 'GET /v1/responses/{response_id}/input_items', path: `${path}/input_items`, status: 404 });
      await exchange(server, { op: 'DELETE /v1/responses/{response_id}', path, status: 404 });
    });

    await t.test('CORS: a preflight, a refused origin, and the header on an answer', async () => {
      const preflight = await fetch(`${server.origin}/v1/chat/completions`, {
        method: 'OPTIONS', headers: { origin: ORIGIN, 'access-control-request-method': 'POST' },
      });
      assert.equal(preflight.status, 204);
      assert.equal(preflight.headers.get('access-control-allow-origin'), ORIGIN);
      const refused = await fetch(`${server.origin}/v1/chat/completions`, {
        method: 'OPTIONS', headers: { origin: 'https://elsewhere.example', 'access-control-request-method': 'POST' },
      });
      assert.equal(refused.status, 403);
      assertValid(schemaPath('ErrorResponse'), await refused.json(), 'the refused preflight');
      const answer = await exchange(server, { op: 'GET /v1/models', headers: { origin: ORIGIN }, status: 200 });
      assert.equal(answer.headers.get('access-control-allow-origin'), ORIGIN);
    });

    await t.test('GET /openapi.json serves the committed document', async () => {
      const res = await call(server, 'GET', '/openapi.json');
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
      assert.deepEqual(await res.json(), DOC);
    });
  } finally {
    await server.stop();
  }
});

test('a key past its quota gets 429 before any stream starts', async (t) => {
  const server = await startServer(['--admin-api-keys', ADMIN_KEY, '--quota-requests-per-minute', '1', '--quota-burst', '1', ...SMALL_KV]);
  try {
    // Each key has its own bucket of one request: the user key's and the admin key's first
    // requests pass, every later one is refused.
    const cases = [
      { name: 'the first request passes', op: 'POST /v1/chat/completions', body: { ...chat, max_tokens: 1 }, status: 200 },
      { name: 'the second is refused', op: 'POST /v1/chat/completions', body: { ...chat, max_tokens: 1 }, status: 429 },
      { name: 'a stream is refused', op: 'POST /v1/chat/completions', body: { ...chat, stream: true }, status: 429 },
      { name: 'native stream', op: 'POST /v1/inference/stream', body: prompt, status: 429 },
      { name: 'native', op: 'POST /v1/inference', body: prompt, status: 429 },
      { name: 'completions', op: 'POST /v1/completions', body: prompt, status: 429 },
      { name: 'Responses stream', op: 'POST /v1/responses', body: { ...responses, stream: true }, status: 429 },
      { name: 'the admin key\'s first request passes', op: 'POST /v1/messages', key: ADMIN_KEY, body: { ...anthropic, max_tokens: 1 }, status: 200 },
      { name: 'Messages stream, Anthropic\'s shape', op: 'POST /v1/messages', key: ADMIN_KEY, body: { ...anthropic, stream: true }, status: 429 },
    ];
    for (const c of cases)
      await t.test(`${c.op}: ${c.name}`, async () => {
        const out = await exchange(server, c);
        if (out.status === 429) assert.match(out.headers.get('retry-after') ?? '', /^[0-9]+$/);
      });
  } finally {
    await server.stop();
  }
});

test('the schemas are strict: an unknown property or a missing required one fails', () => {
  const mutations = {
    ChatCompletion: (b) => [b, b.choices[0].message, b.usage],
    Response: (b) => [b, b.output[0], b.usage],
    Message: (b) => [b, b.content[0], b.usage],
  };
  for (const [name, parts] of Object.entries(mutations)) {
    const real = captured[name];
    assert.ok(real, `no ${name} was captured (its case failed?)`);
    assert.ok(isValid(name, real), `the captured ${name} is valid`);
    parts(structuredClone(real)).forEach((_, i) => {
      const extra = structuredClone(real);
      parts(extra)[i].unexpected_field = 1;
      assert.equal(isValid(name, extra), false, `${name}: an extra property at part ${i} must fail`);
      const missing = structuredClone(real);
      const target = parts(missing)[i];
      const key = Object.keys(target)[0];
      delete target[key];
      assert.equal(isValid(name, missing), false, `${name}: without '${key}' at part ${i} it must fail`);
    });
    const wrongEnum = structuredClone(real);
    if (name === 'ChatCompletion') wrongEnum.choices[0].finish_reason = 'eos';
    if (name === 'Response') wrongEnum.status = 'done';
    if (name === 'Message') wrongEnum.stop_reason = 'length';
    assert.equal(isValid(name, wrongEnum), false, `${name}: a value outside its enum must fail`);
  }
});

test('the document lists exactly the routes of README.md\'s API table', () => {
  const readme = readFileSync(`${ROOT}README.md`, 'utf8');
  const api = readme.slice(readme.indexOf('\n## API\n'));
  const table = api.slice(0, api.indexOf('\n\n', api.indexOf('\n|')));
  const routes = new Set();
  for (const row of table.split('\n').filter((l) => l.startsWith('| `'))) {
    const cell = row.split('|')[1];
    for (const [, method, path] of cell.matchAll(/`(GET|POST|PUT|PATCH|DELETE) ([^`\[]+)(?:\[[^\]]*\])?`/g))
      routes.add(`${method} ${path.trim()}`);
  }
  assert.deepEqual([...routes].sort(), [...OPERATIONS].sort(),
    'README.md\'s route table and http/openapi.json list different routes');
  assert.deepEqual([...new Set([...routes].map((r) => r.split(' ')[1]))].sort(), Object.keys(DOC.paths).sort());
});

test('every operation of the document was exercised', () => {
  const missed = OPERATIONS.filter((op) => !exercised.has(op));
  assert.deepEqual(missed, [], `operations never called: ${missed.join(', ')}`);
});

test('each request schema lists exactly the fields README.md\'s Request fields table gives its family', () => {
  const readme = readFileSync(`${ROOT}README.md`, 'utf8');
  const section = readme.slice(readme.indexOf('\n### Request fields\n'));
  const rows = section.slice(section.indexOf('\n| field |') + 1).split('\n\n')[0].split('\n').slice(2);
  const columns = { InferenceRequest: 1, CompletionRequest: 2, ChatCompletionRequest: 3, ResponsesRequest: 4,
                    MessagesRequest: 5, CountTokensRequest: 5 };
  for (const [schema, col] of Object.entries(columns)) {
    const want = rows.map((r) => r.split('|').map((c) => c.trim().replaceAll('`', '')))
      .filter((cells) => cells[col + 1] !== '–').map((cells) => cells[1]).sort();
    const s = DOC.components.schemas[schema];
    assert.deepEqual(Object.keys(s.properties).sort(), want, `${schema}'s properties`);
    assert.equal(s.additionalProperties, false, `${schema} is closed: an unknown field is a 400`);
  }
});
