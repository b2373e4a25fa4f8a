#!/usr/bin/env node
// A stand-in OpenTelemetry collector for the tests of the server's trace export: it takes OTLP/HTTP
// exports on POST /v1/traces, decodes them with OpenTelemetry's own protobuf code (not ours: the
// server's encoder is hand-written, so decoding with it would prove nothing) and appends what it
// got to a file as JSON lines that a test, C++ or JavaScript, polls and reads.
//
//   node otlp_collector.mjs --out FILE [--port-file FILE] [--fail-first N] [--status CODE]
//
// The line format is in README.md beside this file.
import http from 'node:http';
import fs from 'node:fs';
import zlib from 'node:zlib';
import { parseArgs } from 'node:util';
// The protobufjs static code that OpenTelemetry JS generates from the official opentelemetry-proto
// files (with encode, decode, fromObject and toObject for every message). The package has no
// "exports" map, so its build files can be imported by path. 0.216.0 is the last version whose
// generated code has the trace messages: 0.217.0 encodes traces by hand (no decoder), 0.218.0
// drops protobufjs altogether, and 0.300 needs Node.js 22.
import otlp from '@opentelemetry/otlp-transformer/build/src/generated/root.js';

const { ExportTraceServiceRequest, ExportTraceServiceResponse } =
  otlp.opentelemetry.proto.collector.trace.v1;

const { values: opts } = parseArgs({
  options: {
    out: { type: 'string' },
    'port-file': { type: 'string' },
    'fail-first': { type: 'string', default: '0' },
    status: { type: 'string', default: '503' },
  },
  strict: true,
});
if (!opts.out) {
  console.error('usage: node otlp_collector.mjs --out FILE [--port-file FILE] ' +
                '[--fail-first N] [--status CODE]');
  process.exit(2);
}
let failLeft = Number(opts['fail-first']);
const failStatus = Number(opts.status);
if (!Number.isInteger(failLeft) || failLeft < 0 || !Number.isInteger(failStatus) ||
    failStatus < 100 || failStatus > 599) {
  console.error('--fail-first takes a count and --status an HTTP status code');
  process.exit(2);
}
const MAX_BODY = 64 << 20;

// One appendFileSync per line (each a single write(2) of a whole line), so a reader polling the
// file never sees half a line, and the lines are there before the exporter gets its answer.
const record = (obj) => fs.appendFileSync(opts.out, JSON.stringify(obj) + '\n');
fs.writeFileSync(opts.out, '');

const hex = (bytes) => Buffer.from(bytes ?? []).toString('hex');

/// An AnyValue (from toObject with oneofs: the set field is named by `value`) as plain JSON.
function plain(v) {
  switch (v?.value) {
    case 'stringValue': return v.stringValue;
    case 'boolValue': return v.boolValue;
    case 'intValue': {
      // int64 arrives as a decimal string (toObject's longs: String): a number only where exact.
      const n = Number(v.intValue);
      return Number.isSafeInteger(n) ? n : v.intValue;
    }
    // JSON has no NaN or infinities; their names keep them distinguishable from null.
    case 'doubleValue': return Number.isFinite(v.doubleValue) ? v.doubleValue : String(v.doubleValue);
    case 'arrayValue': return (v.arrayValue.values ?? []).map(plain);
    case 'kvlistValue': return attributes(v.kvlistValue.values);
    case 'bytesValue': return { bytes: Buffer.from(v.bytesValue).toString('base64') };
    default: return null; // an AnyValue with nothing set
  }
}

/// The protobuf type each attribute had, which plain JSON loses (an int 1 and a double 1.0 print
/// the same), so a test can tell that the server sent a count as an int.
const TYPES = { stringValue: 'string', boolValue: 'bool', intValue: 'int', doubleValue: 'double',
                arrayValue: 'array', kvlistValue: 'kvlist', bytesValue: 'bytes' };
const attributeTypes = (kvs) =>
  Object.fromEntries((kvs ?? []).map((kv) => [kv.key, TYPES[kv.value?.value] ?? 'empty']));

const attributes = (kvs) => Object.fromEntries((kvs ?? []).map((kv) => [kv.key, plain(kv.value)]));

/// The request's spans, one flat object each, with their resource and scope copied in, so a test
/// finds a span by name without walking the OTLP tree.
function flatten(request) {
  const spans = [];
  for (const rs of request.resourceSpans ?? []) {
    const resource = attributes(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      const scope = { name: ss.scope?.name ?? '', version: ss.scope?.version ?? '' };
      for (const s of ss.spans ?? []) {
        spans.push({
          type: 'span',
          resource,
          scope,
          traceId: hex(s.traceId),
          spanId: hex(s.spanId),
          parentSpanId: hex(s.parentSpanId),
          traceState: s.traceState,
          name: s.name,
          kind: s.kind,
          start: s.startTimeUnixNano,
          end: s.endTimeUnixNano,
          attributes: attributes(s.attributes),
          attributeTypes: attributeTypes(s.attributes),
          events: (s.events ?? []).map((e) => ({
            name: e.name, time: e.timeUnixNano, attributes: attributes(e.attributes),
          })),
          links: (s.links ?? []).map((l) => ({
            traceId: hex(l.traceId), spanId: hex(l.spanId), traceState: l.traceState,
            attributes: attributes(l.attributes),
          })),
          status: { code: s.status?.code ?? 0, message: s.status?.message ?? '' },
          flags: s.flags,
        });
      }
    }
  }
  return spans;
}

/// The OTLP JSON mapping writes trace and span ids as hex where protobuf's JSON would use base64;
/// turns them into bytes so that fromObject reads the rest by the ordinary mapping.
function idsToBytes(node) {
  if (Array.isArray(node)) { node.forEach(idsToBytes); return; }
  if (!node || typeof node !== 'object') return;
  for (const [key, value] of Object.entries(node)) {
    if ((key === 'traceId' || key === 'spanId' || key === 'parentSpanId') && typeof value === 'string') {
      if (!/^([0-9a-fA-F]{2})*$/.test(value)) throw new Error(`${key} ${JSON.stringify(value)} is not hex`);
      node[key] = Buffer.from(value, 'hex');
    } else {
      idsToBytes(value);
    }
  }
}

/// The decoded request as a plain object: longs as decimal strings, enums as numbers, absent
/// scalars as their defaults.
function decode(body, json) {
  let message;
  if (json) {
    const parsed = JSON.parse(body.toString('utf8'));
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not a JSON object');
    idsToBytes(parsed);
    message = ExportTraceServiceRequest.fromObject(parsed);
  } else {
    message = ExportTraceServiceRequest.decode(body);
  }
  return ExportTraceServiceRequest.toObject(message,
    { longs: String, enums: Number, defaults: true, oneofs: true, arrays: true });
}

function answer(res, status, contentType, body) {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function exportTraces(req, res, body) {
  const contentType = req.headers['content-type'] ?? '';
  const mediaType = contentType.split(';')[0].trim().toLowerCase();
  const json = mediaType === 'application/json';
  const fail = (status, message) => {
    record({ type: 'error', status, message, content_type: contentType, bytes: body.length });
    answer(res, status, 'text/plain', message + '\n');
  };
  if (!json && mediaType !== 'application/x-protobuf') {
    return fail(415, `unsupported content type ${JSON.stringify(contentType)}`);
  }
  if (failLeft > 0) {
    failLeft -= 1;
    return answer(res, failStatus, 'text/plain', 'refused (--fail-first)\n');
  }
  let request;
  try {
    const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
    if (encoding === 'gzip') body = zlib.gunzipSync(body);
    else if (encoding !== 'identity') return fail(415, `unsupported content encoding ${encoding}`);
    request = decode(body, json);
  } catch (e) {
    return fail(400, `the body does not decode as an ExportTraceServiceRequest: ${e.message}`);
  }
  const spans = flatten(request);
  record({ type: 'request', headers: req.headers, content_type: contentType, spans: spans.length });
  for (const span of spans) record(span);
  // An empty ExportTraceServiceResponse: full success, no partial_success.
  if (json) answer(res, 200, 'application/json', '{}');
  else answer(res, 200, 'application/x-protobuf', ExportTraceServiceResponse.encode({}).finish());
}

const server = http.createServer((req, res) => {
  const path = new URL(req.url, 'http://collector').pathname;
  const chunks = [];
  let size = 0;
  req.on('data', (chunk) => {
    size += chunk.length;
    if (size <= MAX_BODY) chunks.push(chunk);
  });
  req.on('end', () => {
    if (path !== '/v1/traces') return answer(res, 404, 'text/plain', 'not found\n');
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST');
      return answer(res, 405, 'text/plain', 'method not allowed\n');
    }
    if (size > MAX_BODY) return answer(res, 413, 'text/plain', 'body too large\n');
    exportTraces(req, res, Buffer.concat(chunks));
  });
});

server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  if (opts['port-file']) {
    // Written aside and renamed into place, so a reader never sees an empty or partial file.
    const tmp = `${opts['port-file']}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, `${port}\n`);
    fs.renameSync(tmp, opts['port-file']);
  }
  console.log(`listening ${port}`);
});

function stop() {
  // Keep-alive connections from an exporter would hold close() open; they are test traffic only.
  server.close(() => process.exit(0));
  server.closeAllConnections();
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
