// Mask work shared between API keys (issue 64), against a running bitnet-server started with
// `--api-keys A,B --admin-key ADMIN` on a model with a large vocabulary (the issue's figures are
// on Llama-3's 128,256 tokens: `bitnet-model make --shape tiny --tokenizer llama3-tokenizer.json`).
// Key B's small structured request (an object of a short string and an integer), timed alone,
// then beside key A's eight requests under the issue's heavy schema: an anyOf of 64 strings whose
// length ranges do not touch (about 3.9 KB), each of whose tokens is a new 64-configuration mask.
// Every request has a schema of its own (a fresh title), so no mask of one is another's cache
// hit. Rounds: B alone, then A's eight sent and B sent once they run, then A's outcome awaited
// (status, time, the error's param); medians of B's times and their ratio. A's requests that
// have not ended after --a-wait-s are abandoned (their connections close, the server cancels
// them), and the next round waits for the server to be idle again.
//
//   node bench/mask_fairness_bench.mjs --port 8080 --key-a A --key-b B --admin ADMIN
//        [--rounds 3] [--heavy 8] [--a-max-tokens 8] [--a-wait-s 120]
import http from 'node:http';

const a = { host: '127.0.0.1', port: 8080, keyA: '', keyB: '', admin: '', rounds: 3, heavy: 8,
            aMaxTokens: 8, aWaitS: 120 };
for (let i = 2; i < process.argv.length; i += 2) {
    const k = process.argv[i], v = process.argv[i + 1];
    if (k === '--host') a.host = v;
    else if (k === '--port') a.port = Number(v);
    else if (k === '--key-a') a.keyA = v;
    else if (k === '--key-b') a.keyB = v;
    else if (k === '--admin') a.admin = v;
    else if (k === '--rounds') a.rounds = Number(v);
    else if (k === '--heavy') a.heavy = Number(v);
    else if (k === '--a-max-tokens') a.aMaxTokens = Number(v);
    else if (k === '--a-wait-s') a.aWaitS = Number(v);
    else { console.error(`unknown flag ${k}`); process.exit(2); }
}

function request(method, path, key, obj) {
    const body = obj ? JSON.stringify(obj) : '';
    let req;
    const t0 = performance.now();
    const done = new Promise((resolve) => {
        req = http.request({ host: a.host, port: a.port, path, method, agent: false,
            headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body),
                       ...(key ? { Authorization: `Bearer ${key}` } : {}) } }, (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (c) => { text += c; });
            res.on('end', () => resolve({ status: res.statusCode, ms: performance.now() - t0, text }));
        });
        req.on('error', (e) => resolve({ status: 'abandoned', ms: performance.now() - t0, text: String(e) }));
        req.end(body);
    });
    return { done, abort: () => req.destroy() };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const stats = async () => JSON.parse((await request('GET', '/v1/stats', a.admin).done).text).models[0];
const median = (xs) => { const s = [...xs].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };

let nonce = 0;
const rf = (schema) => ({ type: 'json_schema', json_schema: { name: 't', schema } });

function heavySchema() {
    const anyOf = [];
    for (let i = 0; i < 64; ++i)
        anyOf.push({ type: 'string', minLength: 2000 * i, maxLength: 2000 * i + 1000 });
    return { title: `heavy ${process.pid} ${++nonce}`, anyOf };
}

function smallSchema() {
    return { title: `small ${process.pid} ${++nonce}`, type: 'object',
             properties: { name: { type: 'string', maxLength: 8 }, n: { type: 'integer' } },
             required: ['name', 'n'], additionalProperties: false };
}

async function b() {
    const r = await request('POST', '/v1/completions', a.keyB, { prompt: 'Item:', max_tokens: 24,
        temperature: 0, timeout_ms: 600000, response_format: rf(smallSchema()) }).done;
    if (r.status !== 200) console.error(`B: ${r.status} ${r.text.slice(0, 300)}`);
    return r;
}

async function idle() {
    for (let i = 0; i < 1200; ++i) {
        const s = await stats();
        if (s.running === 0 && s.waiting.high + s.waiting.normal + s.waiting.low === 0) return;
        await sleep(50);
    }
}

console.error(`heavy schema: ${JSON.stringify(heavySchema()).length} bytes`);
const alone = [], beside = [], owner = [];
for (let round = 0; round < a.rounds; ++round) {
    await idle();
    await sleep(500); // what the last round's cancelled masks left on the worker
    const r0 = await b();
    alone.push(r0.ms);
    const load = [];
    for (let i = 0; i < a.heavy; ++i)
        load.push(request('POST', '/v1/completions', a.keyA, { prompt: 'Name:', max_tokens: a.aMaxTokens,
            temperature: 1, seed: round * 100 + i, timeout_ms: 600000, response_format: rf(heavySchema()) }));
    for (let i = 0; i < 600 && (await stats()).running < a.heavy; ++i) await sleep(20);
    await sleep(300); // A's first masks under way
    const r1 = await b();
    beside.push(r1.ms);
    const timer = setTimeout(() => load.forEach((l) => l.abort()), a.aWaitS * 1000);
    const outs = await Promise.all(load.map((l) => l.done));
    clearTimeout(timer);
    for (const o of outs) {
        let param = '', message = '';
        try {
            const e = JSON.parse(o.text).error;
            param = e?.param ?? '';
            message = e?.message ?? '';
        } catch { /* an abandoned one */ }
        owner.push({ status: o.status, ms: o.ms, param, message });
    }
    console.log(`round ${round + 1}: B alone ${r0.ms.toFixed(1)} ms (${r0.status}), beside ${r1.ms.toFixed(1)} ms (${r1.status}); ` +
                `A: ${outs.map((o) => `${o.status} ${(o.ms / 1000).toFixed(1)} s`).join(', ')}`);
}
const by = {};
for (const o of owner) (by[`${o.status} ${o.param}`.trim()] ??= []).push(o.ms);
console.log(`B alone median ${median(alone).toFixed(1)} ms, beside median ${median(beside).toFixed(1)} ms, ` +
            `ratio ${(median(beside) / median(alone)).toFixed(2)}`);
for (const [k, ms] of Object.entries(by))
    console.log(`A's requests: ${ms.length} × ${k}, median ${(median(ms) / 1000).toFixed(1)} s`);
const refused = owner.find((o) => o.message);
if (refused) console.log(`one of A's errors: ${refused.message}`);
