// Months compressed into minutes: one bitnet-server under a mix of every kind of traffic that
// keeps state somewhere (plain and streamed completions, structured output with a distinct large
// schema each time, tool loops, stored Responses chains, n > 1, streams cancelled mid-way), a
// hot-swap of the model every 30 s and a crash restart every 90 s (test hooks: a dev or asan
// build), for `--minutes`. The server's RSS is sampled every second; the result is its peak, the
// least-squares slope over the last two thirds (KiB/min), and the budgets it ran under. Node's
// own modules only.
//
//   node bench/soak.mjs --server build/dev/tools/bitnet-server --model models/X.gguf
//        [--minutes 3] [--port 18480] [--workers 6] [--schema-kb 200] [--log-dir DIR]
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { startServer, stopServer, waitFor, get, sleep } from './server_procs.mjs';

const a = { server: '', model: '', minutes: 3, port: 18480, workers: 6, schemaKb: 200,
            logDir: fs.mkdtempSync(path.join(os.tmpdir(), 'soak-')) };
for (let i = 2; i < process.argv.length; i += 2) {
    const k = process.argv[i], v = process.argv[i + 1];
    if (k === '--server') a.server = v;
    else if (k === '--model') a.model = v;
    else if (k === '--minutes') a.minutes = Number(v);
    else if (k === '--port') a.port = Number(v);
    else if (k === '--workers') a.workers = Number(v);
    else if (k === '--schema-kb') a.schemaKb = Number(v);
    else if (k === '--log-dir') a.logDir = v;
    else { console.error(`unknown flag ${k}`); process.exit(2); }
}
if (!a.server || !a.model) { console.error('--server and --model are required'); process.exit(2); }

// The budgets the server runs under: the peak must stay below their sum, the model and a constant.
const budgets = { mask_cache_bytes: 64 << 20, schema_cache_bytes: 64 << 20,
                  responses_store_total_bytes: 32 << 20, responses_store_bytes: 8 << 20 };
const args = ['--model', `soak=${a.model}`, '--port', String(a.port), '--threads', '2',
    '--test-hooks', '1', '--admin-open', '1', '--probation-s', '5', '--log-level', 'warn'];
for (const [k, v] of Object.entries(budgets)) args.push(`--${k.replaceAll('_', '-')}`, String(v));

function request(method, p, obj, { stream = false, cancelAfterBytes = 0 } = {}) {
    return new Promise((resolve) => {
        const body = obj === undefined ? '' : JSON.stringify(obj);
        const req = http.request({ host: '127.0.0.1', port: a.port, path: p, method, agent: false,
            headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } },
        (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (c) => {
                text += c;
                if (cancelAfterBytes && text.length >= cancelAfterBytes) req.destroy();
            });
            res.on('end', () => resolve({ status: res.statusCode, text }));
            res.on('close', () => resolve({ status: res.statusCode, text }));
        });
        req.setTimeout(120000, () => req.destroy(new Error('timeout')));
        req.on('error', () => resolve({ status: 0, text: '' }));
        req.end(body);
    });
}

let serial = 0;
const distinctEnum = () => {
    const n = Math.max(1, Math.floor((a.schemaKb * 1024) / 14));
    const tag = (serial++).toString(36);
    return { enum: Array.from({ length: n }, (_, i) => `${tag}-${i}-value`) };
};
const tools = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object',
    properties: { q: { type: 'string', maxLength: 12 } }, required: ['q'], additionalProperties: false } } }];

const kinds = {
    plain: () => request('POST', '/v1/completions', { model: 'soak', prompt: 'Once upon', max_tokens: 16 }),
    streamed: () => request('POST', '/v1/completions', { model: 'soak', prompt: 'A fortune:', max_tokens: 24, stream: true }, { stream: true }),
    cancelled: () => request('POST', '/v1/completions', { model: 'soak', prompt: 'Tell me', max_tokens: 400, stream: true },
        { stream: true, cancelAfterBytes: 300 }),
    n4: () => request('POST', '/v1/completions', { model: 'soak', prompt: 'Luck', max_tokens: 12, n: 4 }),
    structured: () => request('POST', '/v1/completions', { model: 'soak', prompt: 'Pick:', max_tokens: 8,
        response_format: { type: 'json_schema', json_schema: { name: 's', schema: distinctEnum() } } }),
    toolLoop: async () => {
        const messages = [{ role: 'user', content: 'look it up' }];
        const first = await request('POST', '/v1/chat/completions', { model: 'soak', messages, tools,
            tool_choice: 'required', max_tokens: 40 });
        let call;
        try { call = JSON.parse(first.text).choices[0].message.tool_calls[0]; } catch { return first; }
        messages.push({ role: 'assistant', content: null, tool_calls: [call] });
        messages.push({ role: 'tool', tool_call_id: call.id, content: 'found it' });
        return request('POST', '/v1/chat/completions', { model: 'soak', messages, max_tokens: 12 });
    },
    responsesChain: async () => {
        const r1 = await request('POST', '/v1/responses', { model: 'soak', input: 'x'.repeat(2000), max_output_tokens: 8 });
        let id;
        try { id = JSON.parse(r1.text).id; } catch { return r1; }
        return request('POST', '/v1/responses', { model: 'soak', input: 'and then?', previous_response_id: id, max_output_tokens: 8 });
    },
};
const names = Object.keys(kinds);
const counts = {};

function rssKiB(pid) {
    try {
        const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
        return m ? Number(m[1]) : NaN;
    } catch { return NaN; }
}

const s = startServer(a.server, a.logDir, 'soak', args);
await waitFor('ready', async () => (await get(a.port, '/health/ready')).status === 200, 120000);
const t0 = Date.now(), end = t0 + a.minutes * 60000;
const samples = []; // [minutes since start, KiB]
const sampler = setInterval(() => samples.push([(Date.now() - t0) / 60000, rssKiB(s.pid)]), 1000);
let swaps = 0, crashes = 0;
const ops = (async () => {
    for (let k = 1; Date.now() < end; ++k) {
        await sleep(30000);
        if (Date.now() >= end) break;
        if (k % 3 === 0) {
            const r = await request('POST', '/v1/models/soak/crash');
            if (r.status >= 200 && r.status < 300) ++crashes;
        } else {
            const r = await request('POST', '/v1/models/load', { alias: 'soak', path: a.model });
            if (r.status === 202) ++swaps;
        }
    }
})();
const workers = Array.from({ length: a.workers }, async (_, w) => {
    for (let i = w; Date.now() < end; ++i) {
        const kind = names[i % names.length];
        const r = await kinds[kind]();
        const key = `${kind} ${r.status}`;
        counts[key] = (counts[key] || 0) + 1;
    }
});
await Promise.all([...workers, ops]);
clearInterval(sampler);
const last = await get(a.port, '/v1/stats');
await stopServer(s);

const valid = samples.filter(([, v]) => Number.isFinite(v));
const tail = valid.filter(([t]) => t >= a.minutes / 3);
const mean = (xs) => xs.reduce((x, y) => x + y, 0) / xs.length;
const mt = mean(tail.map(([t]) => t)), mv = mean(tail.map(([, v]) => v));
const slope = tail.reduce((acc, [t, v]) => acc + (t - mt) * (v - mv), 0) /
              tail.reduce((acc, [t]) => acc + (t - mt) ** 2, 0);
const peak = Math.max(...valid.map(([, v]) => v));
const sum = Object.values(budgets).reduce((x, y) => x + y, 0) - budgets.responses_store_bytes;
const modelBytes = fs.statSync(a.model).size;
console.log(`# soak: ${a.minutes} min, ${a.workers} workers, schemas of ${a.schemaKb} KB, ` +
            `${swaps} hot-swaps, ${crashes} crash restarts`);
console.log(`requests: ${Object.entries(counts).sort().map(([k, v]) => `${k}: ${v}`).join(', ')}`);
console.log(`RSS: start ${valid[0][1]} KiB, peak ${peak} KiB, end ${valid[valid.length - 1][1]} KiB; ` +
            `slope over the last two thirds ${slope.toFixed(0)} KiB/min`);
console.log(`budgets (mask + schema + responses total) ${(sum / 1048576).toFixed(0)} MiB, model ` +
            `${(modelBytes / 1048576).toFixed(1)} MiB; peak - budgets - model = ` +
            `${((peak * 1024 - sum - modelBytes) / 1048576).toFixed(0)} MiB`);
try {
    const m = JSON.parse(last.body).memory;
    console.log(`tables at the end: ${JSON.stringify(m.tables)}; live objects ${JSON.stringify(m.live_objects)}`);
} catch { /* the stats were not readable */ }
fs.writeFileSync(path.join(a.logDir, 'rss.json'), JSON.stringify(samples));
