// Fair shares between API keys (README "Security", tenant_share_percent), against a running
// bitnet-server started with `--api-keys A,B --admin-key ADMIN`. Two scenarios, each timing key
// B's 30-token greedy stream while key A's work holds the server:
//   slots: A sends 4 requests with n = 8 and max_tokens 2000 (32 sequences, all of max_batch_seqs);
//   echo:  A sends 8 echo requests of 2047 prompt tokens (prompt logprobs, every position scored).
// Reports B's time to first token, the steps the server ended between B's arrival and its first
// token (from /v1/stats, polled every 10 ms: the step in flight when B arrived counts), and the
// mean step time over B's whole stream. A's requests are abandoned afterwards (their connections
// close, the server cancels them). Run once with the default share and once with
// --tenant-share-percent 100 (first come, first served) to compare.
//
//   node bench/fair_share_bench.mjs --port 8080 --key-a A --key-b B --admin ADMIN
//        [--scenario slots|echo] [--vocab 32000] [--timeout-s 120]
import http from 'node:http';
import { promptFor, streamOne } from './sse_stream.mjs';

const a = { host: '127.0.0.1', port: 8080, keyA: '', keyB: '', admin: '', scenario: 'slots',
            vocab: 32000, timeoutS: 120 };
for (let i = 2; i < process.argv.length; i += 2) {
    const k = process.argv[i], v = process.argv[i + 1];
    if (k === '--host') a.host = v;
    else if (k === '--port') a.port = Number(v);
    else if (k === '--key-a') a.keyA = v;
    else if (k === '--key-b') a.keyB = v;
    else if (k === '--admin') a.admin = v;
    else if (k === '--scenario') a.scenario = v;
    else if (k === '--vocab') a.vocab = Number(v);
    else if (k === '--timeout-s') a.timeoutS = Number(v);
    else { console.error(`unknown flag ${k}`); process.exit(2); }
}

function request(method, path, key, obj) {
    const body = obj ? JSON.stringify(obj) : '';
    let req;
    const done = new Promise((resolve) => {
        req = http.request({ host: a.host, port: a.port, path, method, agent: false,
            headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body),
                       ...(key ? { Authorization: `Bearer ${key}` } : {}) } }, (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (c) => { text += c; });
            res.on('end', () => resolve({ status: res.statusCode, text }));
        });
        req.on('error', (e) => resolve({ status: 'error', text: String(e) }));
        req.end(body);
    });
    return { done, abort: () => req.destroy() };
}

const stats = async () => JSON.parse((await request('GET', '/v1/stats', a.admin).done).text).models[0];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const load = [];
if (a.scenario === 'slots') {
    for (let i = 0; i < 4; ++i)
        load.push(request('POST', '/v1/completions', a.keyA, { prompt: promptFor(i, 16, a.vocab),
            max_tokens: 2000, n: 8, temperature: 0 }));
    for (let i = 0; i < 600 && (await stats()).running < 32; ++i) await sleep(50);
} else {
    for (let i = 0; i < 8; ++i)
        load.push(request('POST', '/v1/completions', a.keyA, { prompt: promptFor(i, 2047, a.vocab),
            max_tokens: 1, echo: true, logprobs: 1, temperature: 0 }));
    for (let i = 0; i < 600 && (await stats()).running < 1; ++i) await sleep(50);
    await sleep(200);
}
const s0 = await stats();
const t0 = performance.now();
// The server's step count every 10 ms while B runs: how many steps ended before B's first token.
const samples = [];
let polling = true;
const poller = (async () => {
    while (polling) { const s = await stats(); samples.push([performance.now() - t0, s.steps]); await sleep(10); }
})();
const b = await streamOne({ host: a.host, port: a.port, route: '/v1/inference/stream', apiKey: a.keyB,
                            maxTokens: 30, timeoutMs: a.timeoutS * 1000 }, promptFor(99, 30, a.vocab));
polling = false;
await poller;
const s1 = await stats();
const wall = performance.now() - t0;
// The first sample taken after the first token arrived (stats lag by at most one poll).
const after = samples.find(([t]) => b.ttft && t >= b.ttft);
const stepsToFirst = after ? after[1] - s0.steps : null;
const steps = s1.steps - s0.steps;
for (const l of load) l.abort();
const out = { scenario: a.scenario, b_status: b.status, b_ttft_ms: b.ttft ?? null,
              b_tokens: b.tokens ?? 0, b_e2e_ms: b.e2e ?? wall, steps_during_b: steps,
              mean_step_ms: steps > 0 ? wall / steps : null,
              b_ttft_in_mean_steps: steps > 0 && b.ttft ? b.ttft / (wall / steps) : null,
              steps_ended_before_first_token: stepsToFirst,
              running_at_b_start: s0.running, preemptions: s1.preemptions - s0.preemptions };
console.log(JSON.stringify(out, null, 1));
process.exit(0);
