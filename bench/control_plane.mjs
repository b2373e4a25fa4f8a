#!/usr/bin/env node
// The control plane under compute load (issue 28's goals: /health/live p99 <= 50 ms with every
// core decoding and one more CPU-bound process on the machine; sequential short requests p99 <=
// 2x their quiet p99 beside that process). Against a running bitnet-server:
//   quiet:  /health/live every 20 ms, then sequential 24-token requests, nothing else running;
//   loaded: /health/live while `--streams` greedy streams decode without pause and a busy-loop
//           child process (the "other tenant") runs; then the sequential requests beside the
//           busy process alone (with the streams they would only queue behind them).
// Prints p50/p99/max of each, and the loaded/quiet ratio of the sequential p99.
//   node bench/control_plane.mjs --port P [--streams 32] [--probes 250] [--sequential 30]
//        [--hog 1] [--vocab 32000]
import { fork } from 'node:child_process';
import http from 'node:http';
import { promptFor, streamOne } from './sse_stream.mjs';

const a = { host: '127.0.0.1', port: 8080, streams: 32, probes: 250, sequential: 30, hog: 1,
            vocab: 32000, maxTokens: 2000, route: '/v1/inference/stream', timeoutMs: 600000 };
if (process.argv[2] === '__hog') { for (;;); } // the CPU-bound child
for (let i = 2; i < process.argv.length; i += 2) {
    const k = process.argv[i].replace(/^--/, ''), v = process.argv[i + 1];
    if (!(k in a)) { console.error(`unknown flag --${k}`); process.exit(2); }
    a[k] = typeof a[k] === 'number' ? Number(v) : v;
}
function get(path) {
    return new Promise((resolve) => {
        const t0 = performance.now();
        http.get({ host: a.host, port: a.port, path, agent: false }, (res) => {
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode, ms: performance.now() - t0 }));
        }).on('error', () => resolve({ status: 0, ms: performance.now() - t0 }));
    });
}
function post(path, body) {
    return new Promise((resolve) => {
        const t0 = performance.now();
        const data = JSON.stringify(body);
        const req = http.request({ host: a.host, port: a.port, path, method: 'POST', agent: false,
            headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data) } },
        (res) => { res.resume(); res.on('end', () => resolve({ status: res.statusCode, ms: performance.now() - t0 })); });
        req.on('error', () => resolve({ status: 0, ms: performance.now() - t0 }));
        req.end(data);
    });
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const stats = (xs) => {
    const s = [...xs].sort((x, y) => x - y);
    const q = (p) => s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)];
    return { p50: q(0.5), p99: q(0.99), max: s[s.length - 1] };
};
const fmt = (o) => `p50 ${o.p50.toFixed(1)} ms, p99 ${o.p99.toFixed(1)} ms, max ${o.max.toFixed(1)} ms`;

async function healthProbes() {
    const health = [];
    for (let i = 0; i < a.probes; ++i) {
        const r = await get('/health/live');
        if (r.status !== 200) throw new Error(`health ${r.status}`);
        health.push(r.ms);
        await sleep(20);
    }
    return stats(health);
}
async function sequential() {
    const seq = [];
    for (let i = 0; i < a.sequential; ++i) {
        const r = await post('/v1/inference', { prompt: promptFor(1000 + i, 8, a.vocab), max_tokens: 24, temperature: 0 });
        if (r.status !== 200) throw new Error(`inference ${r.status}`);
        seq.push(r.ms);
    }
    return stats(seq);
}

await post('/v1/inference', { prompt: promptFor(0, 8, a.vocab), max_tokens: 4, temperature: 0 }); // warm-up
const quiet = { health: await healthProbes(), seq: await sequential() };
console.log(`quiet:  /health/live ${fmt(quiet.health)}; sequential 24-token requests ${fmt(quiet.seq)}`);
const hogs = Array.from({ length: a.hog }, () => fork(new URL(import.meta.url).pathname, ['__hog']));
let stop = false;
const load = Array.from({ length: a.streams }, async (_, i) => {
    while (!stop) await streamOne({ ...a, maxTokens: 128 }, promptFor(i, 16, a.vocab));
});
await sleep(2000); // every stream running
const loadedHealth = await healthProbes();
stop = true;
await Promise.all(load);
const loadedSeq = await sequential();
for (const h of hogs) h.kill('SIGKILL');
console.log(`loaded: /health/live ${fmt(loadedHealth)} (${a.streams} streams + ${a.hog} CPU hog); ` +
    `sequential 24-token requests ${fmt(loadedSeq)} (${a.hog} CPU hog)`);
console.log(`sequential p99 loaded/quiet: ${(loadedSeq.p99 / quiet.seq.p99).toFixed(2)}`);
process.exit(0);
