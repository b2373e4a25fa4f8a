// The test collector (otlp_collector.mjs) that the trace export tests read: an export encoded by
// OpenTelemetry's own protobuf code comes out as the documented JSON lines, field by field, and
// the collector refuses, fails and ignores what it should. Needs no server.
import test, { after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import otlp from '@opentelemetry/otlp-transformer/build/src/generated/root.js';

const { ExportTraceServiceRequest, ExportTraceServiceResponse } =
  otlp.opentelemetry.proto.collector.trace.v1;
const COLLECTOR = fileURLToPath(new URL('./otlp_collector.mjs', import.meta.url));
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'otlp-collector-test-'));
// A failed assertion skips a test's stop(); a collector left running would hold this process open.
const running = new Set();
after(() => {
  for (const child of running) child.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
});

let started = 0;
/// Starts a collector with `extra` flags; resolves when it listens, to
/// { port, url, portFile, lines(), stop() → exit code }.
async function startCollector(extra = []) {
  const n = ++started;
  const out = path.join(dir, `out-${n}.jsonl`);
  const portFile = path.join(dir, `port-${n}`);
  const child = spawn(process.execPath, [COLLECTOR, '--out', out, '--port-file', portFile, ...extra],
                      { stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  child.stdout.on('data', (c) => { text += c; });
  child.stderr.on('data', (c) => { text += c; });
  running.add(child);
  const exited = once(child, 'exit');
  child.on('exit', () => running.delete(child));
  const deadline = Date.now() + 20_000;
  let port = 0;
  while (!port) {
    const m = /^listening (\d+)$/m.exec(text);
    if (m) port = Number(m[1]);
    else if (child.exitCode !== null || Date.now() > deadline) throw new Error(`collector did not start:\n${text}`);
    else await new Promise((r) => setTimeout(r, 20));
  }
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    portFile,
    lines: () => fs.readFileSync(out, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)),
    async stop(signal = 'SIGTERM') {
      child.kill(signal);
      const [code, sig] = await exited;
      return sig ?? code;
    },
  };
}

const hexBytes = (h) => Buffer.from(h, 'hex');
const TRACE_A = '0af7651916cd43dd8448eb211c80319c';
const TRACE_B = '4bf92f3577b34da6a3ce929d0e0e4736';
const ROOT = 'b7ad6b7169203331';
const CHILD = '00f067aa0ba902b7';
const OTHER = 'e457b5a2e4d86bd1';
// Beyond 2^53, so a collector that went through a JS number would lose the last digits.
const T0 = '1764150000123456789';
const T1 = '1764150000987654321';
const T2 = '1764150001000000001';
const BIG = '9007199254740993'; // 2^53 + 1: no exact double, must stay a string

const str = (s) => ({ stringValue: s });
const kv = (key, value) => ({ key, value });

/// Two resources, three spans: every AnyValue kind, a parent chain, events, links, statuses,
/// flags, and a scope without a version.
function sampleRequest() {
  return {
    resourceSpans: [
      {
        resource: { attributes: [kv('service.name', str('bitnet-server')), kv('host.cores', { intValue: 2 })] },
        scopeSpans: [{
          scope: { name: 'bitnet-serve', version: '1.2.3' },
          spans: [
            {
              traceId: hexBytes(TRACE_A), spanId: hexBytes(ROOT), name: 'POST /v1/chat/completions',
              kind: 2, startTimeUnixNano: T0, endTimeUnixNano: T2, flags: 0x301,
              attributes: [
                kv('http.request.method', str('POST')),
                kv('stream', { boolValue: true }),
                kv('cancelled', { boolValue: false }),
                kv('gen_ai.usage.input_tokens', { intValue: 42 }),
                kv('negative', { intValue: -7 }),
                kv('big', { intValue: BIG }),
                kv('temperature', { doubleValue: 0.5 }),
                kv('whole_double', { doubleValue: 3 }),
                kv('not_a_number', { doubleValue: NaN }),
                kv('minus_infinity', { doubleValue: -Infinity }),
                kv('gen_ai.response.finish_reasons', { arrayValue: { values: [str('stop'), str('length')] } }),
                kv('ints', { arrayValue: { values: [{ intValue: 1 }, { intValue: BIG }] } }),
                kv('empty_list', { arrayValue: { values: [] } }),
                kv('map', { kvlistValue: { values: [kv('a', str('x')), kv('b', { boolValue: true })] } }),
                kv('blob', { bytesValue: Buffer.from([0, 1, 254, 255]) }),
                kv('unset', {}),
              ],
              events: [
                { name: 'first_token', timeUnixNano: T1, attributes: [kv('index', { intValue: 0 })] },
                { name: 'done', timeUnixNano: T2 },
              ],
              status: { code: 1 },
            },
            {
              traceId: hexBytes(TRACE_A), spanId: hexBytes(CHILD), parentSpanId: hexBytes(ROOT),
              traceState: 'vendor=1', name: 'generate', kind: 1, startTimeUnixNano: T1,
              endTimeUnixNano: T2, flags: 1,
              links: [{ traceId: hexBytes(TRACE_B), spanId: hexBytes(OTHER), traceState: 'k=v',
                        attributes: [kv('link.reason', str('batched'))] }],
              status: { code: 2, message: 'cancelled by client' },
            },
          ],
        }],
      },
      {
        resource: { attributes: [kv('service.name', str('second'))] },
        scopeSpans: [{
          scope: { name: 'other-scope' },
          spans: [{ traceId: hexBytes(TRACE_B), spanId: hexBytes(OTHER), name: 'queue', kind: 3,
                    startTimeUnixNano: T0, endTimeUnixNano: T1 }],
        }],
      },
    ],
  };
}

/// What the collector must write for sampleRequest(), written out by hand from the README's format.
const EXPECTED_SPANS = [
  {
    type: 'span',
    resource: { 'service.name': 'bitnet-server', 'host.cores': 2 },
    scope: { name: 'bitnet-serve', version: '1.2.3' },
    traceId: TRACE_A, spanId: ROOT, parentSpanId: '', traceState: '',
    name: 'POST /v1/chat/completions', kind: 2, start: T0, end: T2,
    attributes: {
      'http.request.method': 'POST', stream: true, cancelled: false,
      'gen_ai.usage.input_tokens': 42, negative: -7, big: BIG, temperature: 0.5, whole_double: 3,
      not_a_number: 'NaN', minus_infinity: '-Infinity',
      'gen_ai.response.finish_reasons': ['stop', 'length'], ints: [1, BIG], empty_list: [],
      map: { a: 'x', b: true }, blob: { bytes: 'AAH+/w==' }, unset: null,
    },
    attributeTypes: {
      'http.request.method': 'string', stream: 'bool', cancelled: 'bool',
      'gen_ai.usage.input_tokens': 'int', negative: 'int', big: 'int', temperature: 'double',
      whole_double: 'double', not_a_number: 'double', minus_infinity: 'double',
      'gen_ai.response.finish_reasons': 'array', ints: 'array', empty_list: 'array', map: 'kvlist',
      blob: 'bytes', unset: 'empty',
    },
    events: [
      { name: 'first_token', time: T1, attributes: { index: 0 } },
      { name: 'done', time: T2, attributes: {} },
    ],
    links: [],
    status: { code: 1, message: '' },
    flags: 0x301,
  },
  {
    type: 'span',
    resource: { 'service.name': 'bitnet-server', 'host.cores': 2 },
    scope: { name: 'bitnet-serve', version: '1.2.3' },
    traceId: TRACE_A, spanId: CHILD, parentSpanId: ROOT, traceState: 'vendor=1',
    name: 'generate', kind: 1, start: T1, end: T2, attributes: {}, attributeTypes: {}, events: [],
    links: [{ traceId: TRACE_B, spanId: OTHER, traceState: 'k=v', attributes: { 'link.reason': 'batched' } }],
    status: { code: 2, message: 'cancelled by client' },
    flags: 1,
  },
  {
    type: 'span',
    resource: { 'service.name': 'second' },
    scope: { name: 'other-scope', version: '' },
    traceId: TRACE_B, spanId: OTHER, parentSpanId: '', traceState: '', name: 'queue', kind: 3,
    start: T0, end: T1, attributes: {}, attributeTypes: {}, events: [], links: [],
    status: { code: 0, message: '' }, flags: 0,
  },
];

/// sampleRequest() in the OTLP JSON mapping: hex ids, int64 as strings, enums as numbers, bytes
/// as base64, NaN and infinities by name.
function sampleJson() {
  const toJson = (v) => {
    if (Buffer.isBuffer(v)) return v.toString('hex');
    if (typeof v === 'number' && !Number.isFinite(v)) return String(v);
    if (Array.isArray(v)) return v.map(toJson);
    if (v && typeof v === 'object') {
      return Object.fromEntries(Object.entries(v).map(([k, x]) =>
        [k, k === 'bytesValue' ? x.toString('base64') : k === 'intValue' ? String(x) : toJson(x)]));
    }
    return v;
  };
  return toJson(sampleRequest());
}

const encode = (obj) =>
  ExportTraceServiceRequest.encode(ExportTraceServiceRequest.fromObject(obj)).finish();

const TIMEOUT = { timeout: 30_000 };

const post = (c, body, contentType = 'application/x-protobuf', extra = {}, where = '/v1/traces') =>
  fetch(`${c.url}${where}`, { method: 'POST', headers: { 'content-type': contentType, ...extra }, body });

test('a protobuf export comes out as the documented lines, then a clean exit on SIGTERM', TIMEOUT, async () => {
  const c = await startCollector();
  assert.equal(fs.readFileSync(c.portFile, 'utf8'), `${c.port}\n`, 'the port file holds the port');
  const r = await post(c, encode(sampleRequest()), 'application/x-protobuf',
                       { 'X-Test-Header': 'Value-Kept', traceparent: 'none' });
  assert.equal(r.status, 200, await r.clone().text());
  assert.equal(r.headers.get('content-type'), 'application/x-protobuf');
  const reply = new Uint8Array(await r.arrayBuffer());
  assert.equal(reply.length, 0, 'an empty ExportTraceServiceResponse encodes to no bytes');
  assert.deepEqual(ExportTraceServiceResponse.toObject(ExportTraceServiceResponse.decode(reply)), {});

  // The lines are on disk before the answer: read at once, no polling.
  const [request, ...spans] = c.lines();
  assert.equal(request.type, 'request');
  assert.equal(request.content_type, 'application/x-protobuf');
  assert.equal(request.spans, 3);
  assert.equal(request.headers['x-test-header'], 'Value-Kept', 'header names lower-cased, values kept');
  assert.equal(request.headers['content-type'], 'application/x-protobuf');
  assert.deepEqual(spans, EXPECTED_SPANS);

  assert.equal(await c.stop('SIGTERM'), 0);
});

test('the OTLP JSON mapping decodes to the same lines', TIMEOUT, async () => {
  const c = await startCollector();
  const r = await post(c, JSON.stringify(sampleJson()), 'application/json; charset=utf-8');
  assert.equal(r.status, 200, await r.clone().text());
  assert.deepEqual(await r.json(), {});
  const [request, ...spans] = c.lines();
  assert.equal(request.content_type, 'application/json; charset=utf-8');
  assert.equal(request.spans, 3);
  assert.deepEqual(spans, EXPECTED_SPANS);
  assert.equal(await c.stop('SIGINT'), 0);
});

test('--fail-first: refused answers first, unrecorded; then recorded', TIMEOUT, async () => {
  const c = await startCollector(['--fail-first', '2']);
  const span = { traceId: hexBytes(TRACE_A), spanId: hexBytes(ROOT), name: 'only',
                 startTimeUnixNano: T0, endTimeUnixNano: T1 };
  const one = { resourceSpans: [{ scopeSpans: [{ spans: [span] }] }] };
  for (let i = 0; i < 2; i++) {
    const r = await post(c, encode(one));
    assert.equal(r.status, 503, `attempt ${i + 1}`);
    await r.arrayBuffer();
    assert.deepEqual(c.lines(), [], `attempt ${i + 1} left no line`);
  }
  const r = await post(c, encode(one));
  assert.equal(r.status, 200);
  const lines = c.lines();
  assert.deepEqual(lines.map((l) => l.type), ['request', 'span']);
  assert.equal(lines[1].name, 'only');
  assert.equal(lines[1].start, T0);
  await c.stop();

  // --status picks the refusal's code.
  const t = await startCollector(['--fail-first', '1', '--status', '429']);
  assert.equal((await post(t, encode(one))).status, 429);
  assert.equal((await post(t, encode(one))).status, 200);
  assert.deepEqual(t.lines().map((l) => l.type), ['request', 'span']);
  await t.stop();
});

test('other paths are 404, other methods 405, undecodable bodies 400 with an error line', TIMEOUT, async () => {
  const c = await startCollector();
  const body = encode(sampleRequest());
  for (const where of ['/v1/metrics', '/v1/logs', '/', '/v1/traces/extra']) {
    const r = await post(c, body, 'application/x-protobuf', {}, where);
    assert.equal(r.status, 404, where);
    await r.arrayBuffer();
  }
  const g = await fetch(`${c.url}/v1/traces`);
  assert.equal(g.status, 405);
  await g.arrayBuffer();
  assert.deepEqual(c.lines(), [], 'nothing recorded for them');

  // 'n' is field 13 with wire type 6, which protobuf does not have; the second claims a
  // length-delimited field 1 of 2^32-1 bytes.
  const garbage = [Buffer.from('not protobuf'), Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f])];
  for (const g of garbage) {
    const r = await post(c, g);
    assert.equal(r.status, 400, `body ${g.toString('hex')}`);
    await r.arrayBuffer();
  }
  const bad = await post(c, '{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "xyz"}]}]}]}',
                         'application/json');
  assert.equal(bad.status, 400);
  await bad.arrayBuffer();
  const lines = c.lines();
  assert.deepEqual(lines.map((l) => [l.type, l.status, l.bytes]),
                   [['error', 400, 12], ['error', 400, 6], ['error', 400, 70]]);
  assert.match(lines[0].message, /wire type/);
  assert.match(lines[2].message, /traceId "xyz" is not hex/);

  const wrongType = await post(c, body, 'text/plain');
  assert.equal(wrongType.status, 415);
  await wrongType.arrayBuffer();
  assert.equal(c.lines().at(-1).status, 415);
  assert.equal(c.lines().filter((l) => l.type === 'request').length, 0);
  await c.stop();
});
