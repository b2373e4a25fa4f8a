#!/usr/bin/env node
// Load generator for bitnet-server (docs/BENCHMARKING.md, "What to record for the server"): sweeps
// concurrency levels of streaming clients on loopback and reports, per level, aggregate generated
// tokens/s, TTFT p50/p90/p99, inter-token latency p50/p90/p99, end-to-end p50/p90/p99 and errors
// by status. Node's own http module only; nothing leaves 127.0.0.1.
//
//   node bench/loadgen.mjs --port 8080 --concurrency 1,8,32,64,128 --max-tokens 100
//        [--rounds 1] [--prompt-tokens 16] [--route /v1/inference/stream] [--warmup 1]
//        [--json FILE] [--ignore-eos 1] [--temperature 0]
// --ignore-eos 1 sends "ignore_eos": true, so that streams run to max_tokens; the `exact` column
// counts the streams that got exactly max_tokens tokens (all of them, when the server honours it).
//
// Each level starts `concurrency` clients at once; each client sends `rounds` requests one after
// the other (greedy, prompt = token ids so every level does the same work). The level's wall time
// runs from the first request to the last byte; aggregate tokens/s = generated tokens / wall.
// Run it on its own core budget (e.g. `taskset -c 1`) so it does not starve the server.
import fs from 'node:fs';
import { promptFor, streamOne } from './sse_stream.mjs';

function parseArgs(argv) {
    const a = {
        host: '127.0.0.1', port: 8080, concurrency: [1, 8, 32, 64, 128], maxTokens: 100,
        rounds: 1, promptTokens: 16, route: '/v1/inference/stream', warmup: 1, json: '',
        vocab: 500, timeoutMs: 600000, ignoreEos: false, temperature: 0,
    };
    for (let i = 2; i < argv.length; i += 2) {
        const k = argv[i], v = argv[i + 1];
        if (k === '--host') a.host = v;
        else if (k === '--port') a.port = Number(v);
        else if (k === '--concurrency') a.concurrency = v.split(',').map(Number);
        else if (k === '--max-tokens') a.maxTokens = Number(v);
        else if (k === '--rounds') a.rounds = Number(v);
        else if (k === '--prompt-tokens') a.promptTokens = Number(v);
        else if (k === '--route') a.route = v;
        else if (k === '--warmup') a.warmup = Number(v);
        else if (k === '--json') a.json = v;
        else if (k === '--vocab') a.vocab = Number(v);
        else if (k === '--timeout-ms') a.timeoutMs = Number(v);
        else if (k === '--ignore-eos') a.ignoreEos = v === '1' || v === 'true';
        else if (k === '--temperature') a.temperature = Number(v);
        else { console.error(`unknown flag ${k}`); process.exit(2); }
    }
    return a;
}

function pct(sorted, q) {
    if (sorted.length === 0) return NaN;
    const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
    return sorted[i];
}
const fmt = (x) => (Number.isFinite(x) ? x.toFixed(1) : '-');

async function level(a, c) {
    const t0 = performance.now();
    const results = [];
    await Promise.all(Array.from({ length: c }, async (_, i) => {
        for (let r = 0; r < a.rounds; ++r)
            results.push(await streamOne(a, promptFor(i * a.rounds + r, a.promptTokens, a.vocab)));
    }));
    const wall = (performance.now() - t0) / 1000;
    const ok = results.filter((r) => r.status === 200 && !r.error);
    const errors = {};
    for (const r of results) if (!(r.status === 200 && !r.error)) errors[r.status] = (errors[r.status] || 0) + 1;
    const tokens = ok.reduce((s, r) => s + r.tokens, 0);
    const ttft = ok.map((r) => r.ttft).sort((x, y) => x - y);
    const e2e = ok.map((r) => r.e2e).sort((x, y) => x - y);
    const itl = ok.flatMap((r) => r.gaps).sort((x, y) => x - y);
    const finishes = {};
    for (const r of ok) finishes[r.finish] = (finishes[r.finish] || 0) + 1;
    const exact = ok.filter((r) => r.tokens === a.maxTokens).length;
    return {
        concurrency: c, requests: results.length, ok: ok.length, exact, errors, finishes, wall_s: wall,
        tokens, tokens_per_s: tokens / wall,
        ttft_ms: { p50: pct(ttft, 0.5), p90: pct(ttft, 0.9), p99: pct(ttft, 0.99) },
        itl_ms: { p50: pct(itl, 0.5), p90: pct(itl, 0.9), p99: pct(itl, 0.99) },
        e2e_ms: { p50: pct(e2e, 0.5), p90: pct(e2e, 0.9), p99: pct(e2e, 0.99) },
    };
}

const a = parseArgs(process.argv);
for (let w = 0; w < a.warmup; ++w) await level(a, 1); // page the weights in
console.log(`# loadgen: ${a.route} on ${a.host}:${a.port}, ${a.promptTokens}-token prompts, ` +
    `max_tokens ${a.maxTokens}, ${a.rounds} request(s) per client, ` +
    `${a.temperature === 0 ? 'greedy' : `temperature ${a.temperature}`}` +
    `${a.ignoreEos ? ', ignore_eos' : ''}`);
console.log('| clients | ok/requests | exact | tokens | tok/s | TTFT p50/p90/p99 ms | ITL p50/p90/p99 ms | e2e p50/p90/p99 ms | errors | finish |');
console.log('|---|---|---|---|---|---|---|---|---|---|');
const all = [];
for (const c of a.concurrency) {
    const r = await level(a, c);
    all.push(r);
    const t = (o) => `${fmt(o.p50)} / ${fmt(o.p90)} / ${fmt(o.p99)}`;
    console.log(`| ${c} | ${r.ok}/${r.requests} | ${r.exact} | ${r.tokens} | ${r.tokens_per_s.toFixed(1)} | ${t(r.ttft_ms)} | ` +
        `${t(r.itl_ms)} | ${t(r.e2e_ms)} | ${JSON.stringify(r.errors)} | ${JSON.stringify(r.finishes)} |`);
}
if (a.json) fs.writeFileSync(a.json, JSON.stringify(all, null, 2));
