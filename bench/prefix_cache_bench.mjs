#!/usr/bin/env node
// Automatic prefix caching, end to end against a running bitnet-server (bench/RESULTS.md,
// "Automatic prefix caching"). Streamed greedy requests with token-id prompts (the same work on
// every run); TTFT is measured by the client (first token event). Two workloads:
//
//   --workload shared: a `--system`-token shared system prompt, then `--turns` different user
//     turns of `--user` tokens, one after the other. Reports the first request's TTFT, the median
//     of the later ones and their ratio (target: later <= 0.1 x first).
//   --workload chat: `--clients` clients at once, each `--chat-turns` turns; every turn resends
//     the whole history (a `--chat-system`-token system prompt shared by all clients, then each
//     earlier user turn and the tokens the server generated for it) plus a new user turn.
//     Reports TTFT p50/p90 per turn, the whole run's wall time and generated tokens.
//
//   node bench/prefix_cache_bench.mjs --port 8080 --workload shared [--system 1000] [--turns 32]
//        [--user 24] [--max-tokens 8] [--vocab 128000] [--json FILE]
//   node bench/prefix_cache_bench.mjs --port 8080 --workload chat [--clients 16]
//        [--chat-turns 4] [--chat-system 200] [--user 24] [--max-tokens 16]
//
// Both print the server's /v1/stats prefix_cache figures at the end. Node's http only.
import fs from 'node:fs';
import http from 'node:http';
import { promptFor, streamOne } from './sse_stream.mjs';

function parseArgs(argv) {
    const a = {
        host: '127.0.0.1', port: 8080, workload: 'shared', system: 1000, turns: 32, user: 24,
        maxTokens: 8, clients: 16, chatTurns: 4, chatSystem: 200, vocab: 128000, json: '',
        route: '/v1/inference/stream', timeoutMs: 1800000,
    };
    for (let i = 2; i < argv.length; i += 2) {
        const k = argv[i], v = argv[i + 1];
        if (k === '--host') a.host = v;
        else if (k === '--port') a.port = Number(v);
        else if (k === '--workload') a.workload = v;
        else if (k === '--system') a.system = Number(v);
        else if (k === '--turns') a.turns = Number(v);
        else if (k === '--user') a.user = Number(v);
        else if (k === '--max-tokens') a.maxTokens = Number(v);
        else if (k === '--clients') a.clients = Number(v);
        else if (k === '--chat-turns') a.chatTurns = Number(v);
        else if (k === '--chat-system') a.chatSystem = Number(v);
        else if (k === '--vocab') a.vocab = Number(v);
        else if (k === '--json') a.json = v;
        else { console.error(`unknown flag ${k}`); process.exit(2); }
    }
    return a;
}

function quantile(xs, q) {
    if (xs.length === 0) return NaN;
    const s = [...xs].sort((x, y) => x - y);
    return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
}

function getJson(a, path) {
    return new Promise((resolve) => {
        http.get({ host: a.host, port: a.port, path, agent: false }, (res) => {
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (c) => { body += c; });
            res.on('end', () => { try { resolve(JSON.parse(body)); } catch { resolve({}); } });
        }).on('error', () => resolve({}));
    });
}

async function stream(a, prompt) {
    const trace = { reqId: '', ids: [], times: [] };
    const r = await streamOne(a, prompt, trace);
    if (r.status !== 200) throw new Error(`request failed: ${r.status} ${r.error}`);
    return { ttft: r.ttft, e2e: r.e2e, tokens: r.tokens, ids: trace.ids };
}

async function shared(a) {
    const system = promptFor(100000, a.system, a.vocab);
    const ttfts = [];
    for (let t = 0; t < a.turns; ++t) {
        const r = await stream(a, system.concat(promptFor(t, a.user, a.vocab)));
        ttfts.push(r.ttft);
        console.log(`turn ${t}: ttft ${r.ttft.toFixed(1)} ms`);
    }
    const later = ttfts.slice(1);
    const out = {
        workload: 'shared', system_tokens: a.system, user_tokens: a.user, turns: a.turns,
        first_ttft_ms: ttfts[0], later_ttft_p50_ms: quantile(later, 0.5),
        later_ttft_p90_ms: quantile(later, 0.9), ratio_p50: quantile(later, 0.5) / ttfts[0],
        ttfts_ms: ttfts,
    };
    return out;
}

async function chat(a) {
    const system = promptFor(200000, a.chatSystem, a.vocab);
    const perTurn = Array.from({ length: a.chatTurns }, () => []);
    let generated = 0;
    const t0 = performance.now();
    await Promise.all(Array.from({ length: a.clients }, async (_, c) => {
        let history = system.slice();
        for (let t = 0; t < a.chatTurns; ++t) {
            history = history.concat(promptFor(1000 * (c + 1) + t, a.user, a.vocab));
            const r = await stream(a, history);
            perTurn[t].push(r.ttft);
            generated += r.tokens;
            history = history.concat(r.ids);
        }
    }));
    const wall = performance.now() - t0;
    return {
        workload: 'chat', clients: a.clients, turns: a.chatTurns, system_tokens: a.chatSystem,
        user_tokens: a.user, max_tokens: a.maxTokens, wall_s: wall / 1000, generated,
        ttft_p50_ms_by_turn: perTurn.map((x) => quantile(x, 0.5)),
        ttft_p90_ms_by_turn: perTurn.map((x) => quantile(x, 0.9)),
        ttft_p50_ms_all: quantile(perTurn.flat(), 0.5),
    };
}

const a = parseArgs(process.argv);
const result = a.workload === 'chat' ? await chat(a) : await shared(a);
const stats = await getJson(a, '/v1/stats');
result.prefix_cache = stats.prefix_cache;
console.log(JSON.stringify(result, (k, v) => (typeof v === 'number' ? Number(v.toFixed(3)) : v)));
if (a.json) fs.writeFileSync(a.json, JSON.stringify(result, null, 1));
