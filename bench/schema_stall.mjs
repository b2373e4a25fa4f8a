// Structured output's worst schemas against an ordinary stream: the inter-token gaps and the total
// time of one plain greedy stream alone, then while requests with a pathological schema (the
// abuse table's hang and stall rows; an anyOf of 32 long strings, whose every token was a new
// matcher state, 8 requests at once and one with n: 8) run beside it, in interleaved rounds;
// medians of p50/p99/max gaps, of the totals, and their ratios. The schemas that are refused
// (400) are sent too, to show they cost nothing. Loopback only.
//
//   node bench/schema_stall.mjs --port 8080 [--host 127.0.0.1] [--rounds 3] [--max-tokens 48]
//        [--vocab 4096] [--only NAME]
import http from 'node:http';
import { streamOne, promptFor } from './sse_stream.mjs';

const a = { host: '127.0.0.1', port: 8080, rounds: 3, maxTokens: 48, vocab: 4096, only: '',
            route: '/v1/inference/stream', timeoutMs: 300000 };
for (let i = 2; i < process.argv.length; i += 2) {
    const k = process.argv[i], v = process.argv[i + 1];
    if (k === '--host') a.host = v;
    else if (k === '--port') a.port = Number(v);
    else if (k === '--rounds') a.rounds = Number(v);
    else if (k === '--max-tokens') a.maxTokens = Number(v);
    else if (k === '--vocab') a.vocab = Number(v);
    else if (k === '--only') a.only = v;
    else { console.error(`unknown flag ${k}`); process.exit(2); }
}

function post(path, obj) {
    return new Promise((resolve) => {
        const body = JSON.stringify(obj);
        const t0 = performance.now();
        const req = http.request({ host: a.host, port: a.port, path, method: 'POST', agent: false,
            headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } },
        (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (c) => { text += c; });
            res.on('end', () => resolve({ status: res.statusCode, ms: performance.now() - t0, text }));
        });
        req.setTimeout(a.timeoutMs, () => req.destroy(new Error('timeout')));
        req.on('error', (e) => resolve({ status: 'error', ms: performance.now() - t0, text: String(e) }));
        req.end(body);
    });
}

function utf8Class() {
    let s = '';
    for (let cp = 0x100, k = 0; k < 140000; ++k, cp += 2) {
        if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xE000;
        s += String.fromCodePoint(cp);
    }
    return s;
}

function cases() {
    let defs = {};
    for (let i = 0; i < 25; ++i)
        defs[`d${i}`] = { anyOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
    defs.d25 = { type: 'array', items: { $ref: '#/$defs/d0' }, maxItems: 3 };
    const twin = { type: 'object', properties: { c: { $ref: '#' } }, additionalProperties: false };
    const members = Array.from({ length: 14000 }, (_, i) => `value-${i}`);
    const tools = Array.from({ length: 1000 }, (_, i) => ({ type: 'function', function: {
        name: `tool_${i}`, parameters: { type: 'object', properties: { x: { type: 'integer' } },
            required: ['x'], additionalProperties: false } } }));
    const rf = (schema, extra = {}) => ({ prompt: 'x', max_tokens: a.maxTokens, temperature: 1, seed: 1,
        response_format: { type: 'json_schema', json_schema: { name: 't', schema } }, ...extra });
    const strings32 = { anyOf: Array.from({ length: 32 }, (_, i) => ({ type: 'string', maxLength: 100000 + i })) };
    return [
        ['anyOf of 32 long strings x8', '/v1/completions', rf(strings32), 8],
        // The control: the same eight requests without a schema (what batching alone costs).
        ['unconstrained x8 (control)', '/v1/completions',
            { prompt: 'x', max_tokens: a.maxTokens, temperature: 1, seed: 1 }, 8],
        ['anyOf of 32 long strings, n: 8', '/v1/completions', rf(strings32, { n: 8 })],
        ['plain object schema', '/v1/completions', rf({ type: 'object', properties: { a: { type: 'string' } } })],
        ['left recursion (400)', '/v1/completions', rf({ anyOf: [{ $ref: '#' }, { $ref: '#' }, { $ref: '#' }] })],
        ['12,000 nested groups (400)', '/v1/completions', rf({ type: 'string', pattern: '('.repeat(12000) + 'a' + ')'.repeat(12000) })],
        ['anyOf x2 over 25 levels', '/v1/completions', rf({ $defs: defs, $ref: '#/$defs/d0' })],
        ['two identical recursive alternatives', '/v1/completions', rf({ anyOf: [twin, twin] })],
        ['class of 140k ranges', '/v1/completions', rf({ type: 'string', pattern: `^[^${utf8Class()}]*$` })],
        ['enum of 14,000 strings', '/v1/completions', rf({ enum: members })],
        ['1,000 tools', '/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }],
            max_tokens: a.maxTokens, tools, tool_choice: 'required' }],
    ];
}

const pct = (xs, p) => {
    if (xs.length === 0) return NaN;
    const s = [...xs].sort((x, y) => x - y);
    return s[Math.min(s.length - 1, Math.floor(p * (s.length - 1) + 0.5))];
};
const median = (xs) => pct(xs, 0.5);
const f = (x) => (Number.isFinite(x) ? x.toFixed(2) : '-');

const ordinary = () => streamOne(a, promptFor(0, 16, a.vocab));

console.log(`# schema_stall: ${a.host}:${a.port}, ordinary stream ${a.maxTokens} tokens greedy, ` +
            `${a.rounds} interleaved rounds (alone, beside) per schema; gaps in ms`);
console.log('| schema | abusive request: status, ms (median) | alone p50 / p99 / max | beside p50 / p99 / max | ratio p50 / p99 | total alone / beside, ratio |');
console.log('|---|---|---|---|---|---|');
await ordinary(); // warm-up
for (const [name, path, body, copies = 1] of cases()) {
    if (a.only && !name.includes(a.only)) continue;
    const alone = { p50: [], p99: [], max: [], e2e: [] }, beside = { p50: [], p99: [], max: [], e2e: [] };
    const abuse = [];
    let status = '';
    for (let r = 0; r < a.rounds; ++r) {
        const solo = await ordinary();
        alone.p50.push(pct(solo.gaps, 0.5)); alone.p99.push(pct(solo.gaps, 0.99)); alone.max.push(Math.max(...solo.gaps));
        alone.e2e.push(solo.e2e);
        // The abusive requests first, the ordinary stream right after them, all in flight at once.
        const bad = Array.from({ length: copies }, () => post(path, body));
        await new Promise((res) => setTimeout(res, 20));
        const both = await ordinary();
        const bs = await Promise.all(bad);
        status = [...new Set(bs.map((b) => String(b.status)))].join('/');
        abuse.push(Math.max(...bs.map((b) => b.ms)));
        beside.p50.push(pct(both.gaps, 0.5)); beside.p99.push(pct(both.gaps, 0.99)); beside.max.push(Math.max(...both.gaps));
        beside.e2e.push(both.e2e);
    }
    const A = [median(alone.p50), median(alone.p99), median(alone.max)];
    const B = [median(beside.p50), median(beside.p99), median(beside.max)];
    const [ea, eb] = [median(alone.e2e), median(beside.e2e)];
    console.log(`| ${name} | ${status}, ${f(median(abuse))} | ${A.map(f).join(' / ')} | ${B.map(f).join(' / ')} | ` +
                `${f(B[0] / A[0])} / ${f(B[1] / A[1])} | ${f(ea)} / ${f(eb)}, ${f(eb / ea)} |`);
}
