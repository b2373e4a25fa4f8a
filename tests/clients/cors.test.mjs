// CORS for browser pages: a server started with --cors-allowed-origins answers a browser's
// preflight and marks answers to the allowed origin (streams and errors too), never a foreign one.
import test, { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, call, MODEL } from './harness.mjs';

const APP = 'http://app.example';
const FOREIGN = 'http://evil.example';
let server;

before(async () => { server = await startServer(['--cors-allowed-origins', APP]); });
after(async () => { await server?.stop(); });

/// What a browser sends before a POST with an Authorization header and a JSON body.
function preflight(origin, path = '/v1/chat/completions') {
  return fetch(`${server.origin}${path}`, {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization,content-type',
    },
  });
}

const listed = (value) => (value ?? '').split(',').map((s) => s.trim().toLowerCase()).filter(Boolean);

test('preflight from the allowed origin: allowed, without a key', async () => {
  const r = await preflight(APP);
  assert.ok(r.status === 200 || r.status === 204, `status ${r.status}`);
  assert.equal(r.headers.get('access-control-allow-origin'), APP);
  const methods = listed(r.headers.get('access-control-allow-methods'));
  assert.ok(methods.includes('post'), `allow-methods ${methods}`);
  const headers = listed(r.headers.get('access-control-allow-headers'));
  for (const h of ['authorization', 'content-type']) assert.ok(headers.includes(h), `allow-headers ${headers}`);
  assert.notEqual(r.headers.get('access-control-allow-credentials'), 'true');
  // The answer depends on Origin, so caches must keep them apart.
  assert.ok(listed(r.headers.get('vary')).includes('origin'), `vary ${r.headers.get('vary')}`);
  // Other API paths answer preflights too.
  for (const path of ['/v1/responses', '/v1/messages', '/v1/models']) {
    const p = await preflight(APP, path);
    assert.equal(p.headers.get('access-control-allow-origin'), APP, path);
  }
});

test('preflight with the headers the SDKs add in a browser', async () => {
  // openai and @anthropic-ai/sdk send their x-stainless-* telemetry headers; Anthropic's also
  // x-api-key, anthropic-version and anthropic-dangerous-direct-browser-access.
  const wanted = ['authorization', 'content-type', 'x-api-key', 'anthropic-version',
                  'anthropic-dangerous-direct-browser-access', 'x-stainless-lang', 'x-stainless-os',
                  'x-stainless-arch', 'x-stainless-runtime', 'x-stainless-runtime-version',
                  'x-stainless-package-version', 'x-stainless-retry-count', 'x-stainless-timeout'];
  const r = await fetch(`${server.origin}/v1/messages`, {
    method: 'OPTIONS',
    headers: { origin: APP, 'access-control-request-method': 'POST',
               'access-control-request-headers': wanted.join(',') },
  });
  assert.equal(r.headers.get('access-control-allow-origin'), APP);
  const allowed = listed(r.headers.get('access-control-allow-headers'));
  assert.ok(allowed.includes('*') || wanted.every((h) => allowed.includes(h)), `allow-headers ${allowed}`);
});

test('the real POST from the allowed origin carries Access-Control-Allow-Origin', async () => {
  const r = await call(server, 'POST', '/v1/chat/completions',
                       { model: MODEL, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 },
                       { origin: APP });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('access-control-allow-origin'), APP);
  // A page can read the request id only when it is exposed.
  assert.ok(listed(r.headers.get('access-control-expose-headers')).includes('x-request-id'));
  const body = await r.json();
  assert.equal(body.object, 'chat.completion');
});

test('every answer exposes the headers each family\'s SDK reads, plain, streamed and errors', async () => {
  // What the SDKs read: OpenAI's x-request-id, Anthropic's request-id, both SDKs' retry hints and
  // rate-limit headers, and the trace context a page correlates with (traceresponse).
  const wanted = ['x-request-id', 'request-id', 'retry-after', 'retry-after-ms', 'traceresponse',
                  'x-ratelimit-remaining-requests', 'anthropic-ratelimit-requests-remaining'];
  const answers = [
    await call(server, 'POST', '/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 }, { origin: APP }),
    await call(server, 'POST', '/v1/messages', { model: MODEL, max_tokens: 2, messages: [{ role: 'user', content: 'Hi' }] }, { origin: APP }),
    await call(server, 'POST', '/v1/messages', { model: MODEL, max_tokens: 2, stream: true, messages: [{ role: 'user', content: 'Hi' }] }, { origin: APP }),
    await call(server, 'POST', '/v1/responses', { model: MODEL, max_output_tokens: 2, input: 'Hi' }, { origin: APP }),
    await call(server, 'POST', '/v1/messages', { model: MODEL, messages: [] }, { origin: APP }),
    await call(server, 'GET', '/v1/models', undefined, { origin: APP }),
  ];
  for (const r of answers) {
    const exposed = listed(r.headers.get('access-control-expose-headers'));
    for (const h of wanted) assert.ok(exposed.includes(h), `${r.url} ${r.status}: ${h} not exposed (${exposed})`);
    await r.text();
  }
  // Anthropic's routes send the header the page may now read.
  assert.match(answers[1].headers.get('request-id') ?? '', /^req-/);
});

test('a stream and an error to the allowed origin are marked too', async () => {
  const s = await call(server, 'POST', '/v1/chat/completions',
                       { model: MODEL, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4, stream: true },
                       { origin: APP });
  assert.equal(s.status, 200);
  assert.equal(s.headers.get('access-control-allow-origin'), APP);
  assert.match(await s.text(), /data: \[DONE\]/);

  const unauthorized = await fetch(`${server.origin}/v1/chat/completions`, {
    method: 'POST', headers: { origin: APP, 'content-type': 'application/json' }, body: '{}',
  });
  assert.equal(unauthorized.status, 401);
  assert.equal(unauthorized.headers.get('access-control-allow-origin'), APP, 'a page can read the 401');
});

test('a foreign origin gets no CORS headers', async () => {
  const p = await preflight(FOREIGN);
  assert.notEqual(p.status, 204);
  assert.equal(p.headers.get('access-control-allow-origin'), null);
  assert.equal(p.headers.get('access-control-allow-methods'), null);
  const r = await call(server, 'POST', '/v1/chat/completions',
                       { model: MODEL, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 },
                       { origin: FOREIGN });
  assert.equal(r.headers.get('access-control-allow-origin'), null);
  await r.body?.cancel();
});
