#!/usr/bin/env node
// The greedy screen end to end (bench/RESULTS.md, issue 28 part 14): two bitnet-server processes
// on the same model file, one with `--greedy-screen 1`, and greedy requests whose replies show no
// logprob sent to them in turn, one at a time (the order swapped every pair, so drift in the
// machine's speed falls on both). Per request: the server's decode tokens/s (its reply's
// timings) and the client's whole-request time; each pair's token ids must be the same on both
// servers (the screen is exact), and the screened server's /v1/stats counts what it screened.
//
//   node bench/greedy_screen_bench.mjs --server build/release/tools/bitnet-server
//        --model 2b4t.gguf [--threads 2] [--pairs 8] [--max-tokens 64] [--prompt-tokens 16]
//        [--vocab 128000] [--speculative off|auto] [--concurrency 1] [--screen-rows 0]
//        [--base-port 18600]
//        [--json FILE]
//
// `--concurrency C` sends C requests at once to each server in its turn (their steps batched:
// a step of more greedy-only rows than the screened server's measured count computes them in
// F16), and reports the median request's decode tokens/s and the turn's wall time.
// `--screen-rows N` pins that count (0, the default: measured at load).
// `--speculative` is sent with every request (absent: the servers' default, auto); verification
// steps compute full rows, so `off` shows the screen on every token. Node's own modules only.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { get, startServer, stopServer, waitFor } from './server_procs.mjs';
import { promptFor } from './sse_stream.mjs';

function parseArgs(argv) {
    const a = {
        server: 'build/release/tools/bitnet-server', model: '', threads: 2, pairs: 8,
        maxTokens: 64, promptTokens: 16, vocab: 128000, speculative: '', basePort: 18600, json: '',
        concurrency: 1, screenRows: 0,
    };
    for (let i = 2; i < argv.length; i += 2) {
        const k = argv[i], v = argv[i + 1];
        if (k === '--server') a.server = v;
        else if (k === '--model') a.model = v;
        else if (k === '--threads') a.threads = Number(v);
        else if (k === '--pairs') a.pairs = Number(v);
        else if (k === '--max-tokens') a.maxTokens = Number(v);
        else if (k === '--prompt-tokens') a.promptTokens = Number(v);
        else if (k === '--vocab') a.vocab = Number(v);
        else if (k === '--speculative') a.speculative = v;
        else if (k === '--base-port') a.basePort = Number(v);
        else if (k === '--json') a.json = v;
        else if (k === '--concurrency') a.concurrency = Number(v);
        else if (k === '--screen-rows') a.screenRows = Number(v);
        else { console.error(`unknown flag ${k}`); process.exit(2); }
    }
    if (!a.model) { console.error('--model FILE is required'); process.exit(2); }
    return a;
}

const median = (xs) => {
    const s = [...xs].sort((x, y) => x - y);
    return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]
                                               : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/// One greedy request on the native route, plain reply without logprobs (so the screened
/// server screens it): {ids, tokens, decodePerS, e2eMs}. The reply carries the token ids (the
/// exactness check: a random-weight model's tokens are often pieces of a character, whose text
/// is held back) and the server's own timings (decode: first token to the end).
function completion(port, a, prompt) {
    const req = { model: 'm', prompt, max_tokens: a.maxTokens, temperature: 0 };
    if (a.speculative) req.speculative = a.speculative;
    const body = JSON.stringify(req);
    return new Promise((resolve, reject) => {
        const t0 = performance.now();
        let text = '';
        const r = http.request({
            host: '127.0.0.1', port, path: '/v1/inference', method: 'POST', agent: false,
            headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
        }, (res) => {
            res.setEncoding('utf8');
            res.on('data', (chunk) => { text += chunk; });
            res.on('end', () => {
                if (res.statusCode !== 200) { reject(new Error(`http ${res.statusCode}: ${text}`)); return; }
                const o = JSON.parse(text);
                if ('logprobs' in o) { reject(new Error('the reply shows logprobs')); return; }
                resolve({ ids: o.tokens, tokens: o.usage.completion_tokens,
                          decodePerS: o.timings.tokens_per_second, e2eMs: performance.now() - t0 });
            });
        });
        r.on('error', reject);
        r.end(body);
    });
}

/// The tokens the server's screen chose so far (after a pause: the stats are polled figures).
async function screened(port) {
    await new Promise((r) => setTimeout(r, 1500));
    const s = JSON.parse((await get(port, '/v1/stats')).body);
    return s.models.reduce((n, m) => n + m.greedy_screened_tokens, 0);
}

const a = parseArgs(process.argv);
const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'greedy-screen-bench-'));
const common = ['--model', `m=${a.model}`, '--threads', String(a.threads), '--log-level', 'warn'];
const servers = {
    plain: { port: a.basePort, proc: null },
    screen: { port: a.basePort + 1, proc: null },
};
servers.plain.proc = startServer(a.server, logDir, 'plain', [...common, '--port', String(servers.plain.port)]);
servers.screen.proc = startServer(a.server, logDir, 'screen',
    [...common, '--port', String(servers.screen.port), '--greedy-screen', '1',
        '--greedy-screen-rows', String(a.screenRows)]);
for (const [name, s] of Object.entries(servers))
    await waitFor(`${name} ready`, async () => (await get(s.port, '/health/ready')).status === 200);

// One request each first (page faults, the first step's buffers), not counted.
const warm = promptFor(999, a.promptTokens, a.vocab);
for (const s of Object.values(servers)) await completion(s.port, a, warm);
const screenedBefore = await screened(servers.screen.port);

/// `a.concurrency` requests at once (their steps batched): per request, and the wall time.
async function turn(port, prompts) {
    const t0 = performance.now();
    const replies = await Promise.all(prompts.map((q) => completion(port, a, q)));
    return { replies, wallMs: performance.now() - t0 };
}

const rows = [];
for (let p = 0; p < a.pairs; ++p) {
    const prompts = Array.from({ length: a.concurrency },
        (_, i) => promptFor(p * a.concurrency + i, a.promptTokens, a.vocab));
    const order = p % 2 === 0 ? ['plain', 'screen'] : ['screen', 'plain'];
    const got = {};
    for (const name of order) got[name] = await turn(servers[name].port, prompts);
    const same = got.plain.replies.every((r, i) =>
        JSON.stringify(r.ids) === JSON.stringify(got.screen.replies[i].ids) &&
        r.tokens === got.screen.replies[i].tokens);
    const tokens = got.screen.replies.reduce((n, r) => n + r.tokens, 0);
    const decode = (name) => median(got[name].replies.map((r) => r.decodePerS));
    const row = {
        pair: p, same_tokens: same, tokens,
        plain_decode_per_s: decode('plain'), screen_decode_per_s: decode('screen'),
        decode_ratio: decode('screen') / decode('plain'),
        e2e_ratio: got.plain.wallMs / got.screen.wallMs,
    };
    rows.push(row);
    console.log(`pair ${p}: decode ${row.plain_decode_per_s.toFixed(2)} -> ` +
        `${row.screen_decode_per_s.toFixed(2)} tok/s (${row.decode_ratio.toFixed(3)}x), ` +
        `wall ${row.e2e_ratio.toFixed(3)}x, same tokens: ${same}`);
}
const screenedTokens = (await screened(servers.screen.port)) - screenedBefore;
const generated = rows.reduce((n, r) => n + r.tokens, 0);
const ratios = rows.map((r) => r.decode_ratio).sort((x, y) => x - y);
const result = {
    model: path.basename(a.model), threads: a.threads, pairs: a.pairs, max_tokens: a.maxTokens,
    concurrency: a.concurrency, screen_rows: a.screenRows || 'measured',
    speculative: a.speculative || 'server default',
    decode_ratio_median: median(ratios), decode_ratio_min: ratios[0],
    decode_ratio_max: ratios[ratios.length - 1],
    e2e_ratio_median: median(rows.map((r) => r.e2e_ratio)),
    plain_decode_per_s_median: median(rows.map((r) => r.plain_decode_per_s)),
    screen_decode_per_s_median: median(rows.map((r) => r.screen_decode_per_s)),
    all_same_tokens: rows.every((r) => r.same_tokens),
    screened_tokens: screenedTokens, generated_tokens: generated, rows,
};
console.log(JSON.stringify(result, (k, v) => (typeof v === 'number' ? Number(v.toFixed(3)) : v)));
if (a.json) fs.writeFileSync(a.json, JSON.stringify(result, null, 1));
for (const s of Object.values(servers)) { s.proc.killedOnPurpose = true; await stopServer(s.proc); }
if (!result.all_same_tokens) { console.error('the screened server chose other tokens'); process.exit(1); }
